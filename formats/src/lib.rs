//! File formats of scope-profiler: HDF5 in the reference's layout and speedscope.
pub mod export_error;
pub mod hdf5;
pub mod selection;
pub mod speedscope;
pub mod pstats;
pub mod chrome_trace;
pub mod perfetto;
pub mod pprof;
mod export_common;
pub mod folded;
pub mod flamegraph;
pub mod timeline;
pub mod parquet_export;

pub use self::hdf5::{read_h5, write_h5, H5Error};
pub use self::hdf5::{read_h5_summary, RunSummary, SummaryRow};
pub use speedscope::{write_speedscope, write_speedscope_to};
pub use export_error::ExportError;
pub use selection::Selection;
