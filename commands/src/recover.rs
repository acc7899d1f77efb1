//! `scope-profiler recover`: the file a killed `run --flush-interval` did not write, from
//! its sidecar ([`scope_profiler_finalize::stream::recover`]), with the recordings of the
//! processes it followed; for a run that wrote JSON or HTML, that output rendered from it.
use std::path::Path;

use scope_profiler_finalize::followed;
use scope_profiler_finalize::stream::{describe, pending_sidecar, recover, RecoverError};
use scope_profiler_formats::read_h5;
use scope_profiler_session::end_of_run;
use scope_profiler_session::settings::recording_path;

use crate::failure::check_recover_output;

/// `scope-profiler recover FILE [-o OUTPUT] [--from SIDECAR]`: recover, print what was
/// recovered. The exit code: 0, 1 when nothing could be recovered or written, 2 for an
/// output of the wrong kind.
pub fn execute(file: &Path, output: Option<&Path>, from: Option<&Path>) -> i32 {
    if let Some(Err(f)) = output.map(check_recover_output) {
        eprintln!("error: {}", f.message);
        return f.code();
    }
    match recover(file, from, output) {
        Ok((recovery, written)) => {
            outln!("{}", describe(&recovery, &written));
            if let Some(pid) = recovery.pid {
                if let Some(note) = followed::recover_followed(file, pid, &written) {
                    outln!("{note}");
                }
            }
            0
        }
        // no sidecar, but the followed processes' recordings a run left behind
        Err(RecoverError::Nothing(_)) if from.is_none() && output.is_none() && merges_leftovers(file) => {
            match followed::merge_leftovers(file) {
                Some(Ok(lines)) => {
                    for line in lines {
                        outln!("{line}");
                    }
                    0
                }
                Some(Err(e)) => {
                    eprintln!("error: {e}");
                    1
                }
                None => 0,
            }
        }
        Err(RecoverError::Nothing(why)) if recording_path(file) != file && from.is_none() => {
            // `run -o k.json` records into `k.json.scope-profiler.h5`: that recording is
            // recovered, and `k.json` rendered from it as the run would have
            let h5 = recording_path(file);
            if pending_sidecar(&h5).is_none() {
                return match merges_leftovers(&h5).then(|| render_leftovers(&h5, file)) {
                    Some(Ok(())) => 0,
                    Some(Err(e)) => {
                        eprintln!("error: {e}");
                        1
                    }
                    None => {
                        eprintln!("error: {why}");
                        1
                    }
                };
            }
            match recover_rendered(&h5, file, output) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("error: {e}");
                    1
                }
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// Whether `recover FILE`, with no sidecar to recover, merges the followed processes'
/// recordings a `run` writing FILE left behind (`FILE.procs-<pid>/`, its process gone).
fn merges_leftovers(file: &Path) -> bool {
    !followed::leftover_directories(file).is_empty()
}

/// `recover FILE` of a run that wrote another format than HDF5 (`run -o k.json`) and left
/// no sidecar, only its followed processes' recordings: they are merged into its recording
/// `h5` ([`followed::merge_leftovers`]), and `file` is rendered from it.
fn render_leftovers(h5: &Path, file: &Path) -> Result<(), String> {
    for line in followed::merge_leftovers(h5).unwrap_or_else(|| Ok(Vec::new()))? {
        outln!("{line}");
    }
    let run = read_h5(h5).map_err(|e| e.to_string())?;
    end_of_run::render_output(&run, h5, file)?;
    outln!("wrote {}", file.display());
    Ok(())
}

/// `recover FILE` of a run that wrote another format than HDF5 (`run -o k.json`): recover
/// its recording `h5` (`k.json.scope-profiler.h5`, [`recording_path`]), with the processes
/// it followed, then render `file` from it ([`end_of_run::render_output`], which removes `h5`), as the
/// run would have. With `output` (an `.h5` name) the recovered run is written there and
/// nothing is rendered. Errors: the recovery's, or the rendering's (naming `file` and
/// saying that `h5` is kept).
fn recover_rendered(h5: &Path, file: &Path, output: Option<&Path>) -> Result<(), String> {
    let (recovery, written) = recover(h5, None, output).map_err(|e| e.to_string())?;
    outln!("{}", describe(&recovery, &written));
    if let Some(pid) = recovery.pid {
        if let Some(note) = followed::recover_followed(h5, pid, &written) {
            outln!("{note}");
        }
    }
    if output.is_some() {
        return Ok(());
    }
    let run = read_h5(&written).map_err(|e| e.to_string())?;
    end_of_run::render_output(&run, &written, file)?;
    outln!("wrote {}", file.display());
    Ok(())
}
