//! Runs in and out of a process: files read and written, exports, runs as bytes.
//!
//! * [`h5reader`]: `read_h5`, `read_h5_summary` (`h5reader.py`);
//! * [`profile_io`]: a profile path's format and its reader or writer (`profile_io.py`);
//! * [`native_trace`]: the C and Fortran region traces (`native_trace.py`);
//! * [`exports`]: the `export_<format>` functions (`exports.py`, `speedscope_export.py`,
//!   `prof_export.py`, `chrome_trace_export.py`), made by [`export_call`]'s macro;
//! * [`export_call`]: one `export_*` call: Python arguments, the plan, the writers;
//! * [`prof_export`]: the pstats tables of `to_pstats` (`prof_export.py`);
//! * [`json_export`]: the JSON profile (`json_export.py`);
//! * [`dataset`]: many runs as one Parquet dataset (`dataset.py`);
//! * [`ranks`]: a run as bytes and runs stacked as blocks of ranks (`_mpi.py`).
use pyo3::prelude::*;

pub mod dataset;
pub mod export_call;
pub mod exports;
pub mod h5reader;
pub mod json_export;
pub mod native_trace;
pub mod prof_export;
pub mod profile_io;
pub mod ranks;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    h5reader::register(m)?;
    json_export::register(m)?;
    native_trace::register(m)?;
    profile_io::register(m)?;
    ranks::register(m)?;
    prof_export::register(m)?;
    exports::register(m)?;
    dataset::register(m)?;
    Ok(())
}
