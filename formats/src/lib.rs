//! File formats of scope-profiler: HDF5 in the reference's layout and speedscope.
pub mod hdf5_format;
pub mod speedscope;

pub use hdf5_format::{read_h5, write_h5, H5Error};
pub use speedscope::{write_speedscope, write_speedscope_to};
