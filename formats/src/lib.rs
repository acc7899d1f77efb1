//! File formats of scope-profiler: HDF5 in the reference's layout and every export format
//! ([`registry`] lists them).
mod call_columns;
pub mod chrome_trace;
pub mod dataset;
pub mod diff_flamegraph;
pub mod diff_html;
pub mod export_error;
mod export_lanes;
mod export_output;
pub mod export_plan;
pub mod flamegraph;
pub mod folded;
pub mod hdf5;
pub mod html_report;
pub mod json_profile;
mod lane_rows;
pub mod native_trace;
pub mod parquet_export;
pub mod perfetto;
pub mod pprof;
pub mod profile_format;
pub mod pstats;
pub mod registry;
pub mod run_group;
pub mod selection;
pub mod speedscope;
pub mod text_summary;
pub mod timeline;

pub use self::hdf5::{read_h5, read_h5_noting, write_h5, H5Error, NOT_A_PROFILE as NOT_A_PROFILE_H5};
pub use self::hdf5::{read_h5_summary, RunSummary, SummaryFilter, SummaryRow};
pub use export_error::ExportError;
pub use registry::Format;
pub use selection::Selection;
pub use speedscope::{write_speedscope, write_speedscope_to};
