//! The `scope-profiler` command line (clap): `summary`, `threads`, `export`, and `run`
//! (which needs Python and is carried out by the Python package's console script).
