//! `run` following processes: the files the script's Python processes wrote into the run's
//! private directory (`<output>.procs-<pid>/`, `scope_profiler._follow`), stacked after the
//! run's own file as rank blocks ([`merge_runs`], as `summary --merge`).
use std::path::{Path, PathBuf};

use scope_profiler_analysis::{merge_runs, MergeOptions, MetaValue, Run, PROCESSES, UNKNOWN};
use scope_profiler_formats::hdf5::working_files::{self, LeftoverKind};
use scope_profiler_formats::hdf5::write::publish_h5;
use scope_profiler_formats::read_h5;

use crate::stream::{pending_sidecar, recover_run};

/// The metadata key a followed process stores its description in (one process, one file).
pub const PROCESS_KEY: &str = "process";

/// One process's recording in the directory: its file, or the sidecar a process recording
/// with `flush_interval` left when it was killed before writing the file.
enum Source {
    File(PathBuf),
    Sidecar(PathBuf),
}

/// The recordings in `dir`, in the order their processes began recording: a followed process names
/// its file `<start time ns, 20 digits>-<pid>.h5`, so the name order is the start order.
fn recordings(dir: &Path) -> Vec<(String, Source)> {
    let mut found: Vec<(String, Source)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with('.') && name.ends_with(".h5") {
                found.push((name, Source::File(e.path())));
            }
        }
    }
    for (_, l) in working_files::list(dir) {
        let target = dir.join(&l.target);
        if l.kind != LeftoverKind::Sidecar || target.exists() || found.iter().any(|(n, _)| *n == l.target) {
            continue;
        }
        // a sidecar whose writer still runs is not taken (its `.started` marker names it)
        if let Some(sidecar) = pending_sidecar(&target) {
            found.push((l.target, Source::Sidecar(sidecar)));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// Whether process `pid` still runs (a zombie - ended, not yet reaped - does not).
fn running(pid: &str) -> bool {
    pid.parse().is_ok_and(working_files::process_alive)
}

/// The processes that announced themselves (`<ns>-<pid>.started`, holding a description)
/// but left no recording: killed before writing, or still running when the script ended.
/// One `warning:` line each.
fn warn_missing(dir: &Path, found: &[(String, Source)]) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut missing: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let recorded = format!("{}.h5", name.strip_suffix(".started")?);
            (!found.iter().any(|(n, _)| *n == recorded)).then_some(recorded)
        })
        .collect();
    missing.sort();
    for recorded in missing {
        let who = announced(dir, &recorded).unwrap_or_else(|| pid_of(&recorded));
        let pid = recorded.trim_end_matches(".h5").rsplit('-').next().unwrap_or_default();
        if running(pid) {
            eprintln!(
                "warning: process {who} was still running when the script ended; it is left out of the result (join or wait for it in the script)"
            );
        } else {
            eprintln!(
                "warning: process {who} ended without writing its profile (killed?); it is left out of the result (with --flush-interval, a killed process keeps its calls up to its last flush)"
            );
        }
    }
}

/// The description a process announced in `<ns>-<pid>.started` beside recording `name`
/// (`pid N (child of M): multiprocessing SpawnProcess-1`), if it left one.
fn announced(dir: &Path, name: &str) -> Option<String> {
    let stem = name.trim_end_matches(".h5");
    let text = std::fs::read_to_string(dir.join(format!("{stem}.started"))).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// `pid N` from a recording's name `<ns>-<pid>.h5` (the description of a process whose file
/// does not carry one).
fn pid_of(name: &str) -> String {
    let pid = name.trim_end_matches(".h5").trim_end_matches(".started").rsplit('-').next().unwrap_or(name);
    format!("pid {pid}")
}

/// Stack the run in `h5` (this process: rank 0, described as `label`) and every recording in
/// `dir` (rank blocks after it, in start order), write the result over `h5` (atomically) and
/// return it, with metadata `processes` (each block's description, from the process's
/// `process` metadata). `None` when `dir` holds no recording: `h5` stands as written.
///
/// A recording that cannot be read (a process killed while writing, a damaged file) is left
/// out with a `warning:` line on stderr naming it; a process killed before it wrote its file
/// while streaming (`--flush-interval`) is recovered from its sidecar, with a `note:` line.
/// Errors (the run's own file unreadable, the merged file not written) name the file.
pub fn merge_processes(h5: &Path, dir: &Path, label: &str) -> Result<Option<Run>, String> {
    let found = recordings(dir);
    warn_missing(dir, &found);
    if found.is_empty() {
        return Ok(None);
    }
    let own = read_h5(h5).map_err(|e| e.to_string())?;
    let origin = own.meta_int("start_time_ns");
    let mut offset = own.num_ranks.max(1);
    let mut parts = vec![(0u32, own)];
    let mut labels = vec![label.to_string()];
    for (name, source) in found {
        let read = match &source {
            Source::File(path) => read_h5(path).map_err(|e| {
                format!("{e}; that process is left out of the result (was it killed while writing its profile?)")
            }),
            Source::Sidecar(path) => match recover_run(path) {
                Ok(r) => {
                    // the directory is removed once merged: name the process, not its sidecar
                    let who = announced(dir, &name).unwrap_or_else(|| pid_of(&name));
                    eprintln!(
                        "note: a process was killed before it wrote its profile: {} call(s) recovered from the --flush-interval sidecar of {who}",
                        r.calls,
                    );
                    Ok(r.run)
                }
                Err(e) => Err(format!("{e}; that process is left out of the result")),
            },
        };
        let mut run = match read {
            Ok(run) => run,
            Err(e) => {
                eprintln!("warning: {e}");
                continue;
            }
        };
        // a recovered run has no `process` metadata: its `.started` announcement describes it
        // (rather than only `pid N`)
        let description = match run.meta(PROCESS_KEY) {
            Some(MetaValue::Str(s)) => s.clone(),
            _ => announced(dir, &name).unwrap_or_else(|| pid_of(&name)),
        };
        run.metadata.retain(|(k, _)| k != PROCESS_KEY);
        if let Some(origin) = origin {
            on_the_scripts_origin(&mut run, origin);
        }
        let span = run.num_ranks.max(1);
        parts.push((offset, run));
        labels.push(description);
        offset += span;
    }
    if parts.len() == 1 {
        return Ok(None); // every recording was left out: the run's own file stands
    }
    let options = MergeOptions { num_ranks: Some(offset), ..Default::default() };
    let mut run = merge_runs(parts, &options).map_err(|e| format!("cannot merge the processes' profiles: {e}"))?;
    run.metadata.retain(|(k, _)| k != PROCESSES);
    run.metadata.push((PROCESSES.into(), MetaValue::StrList(labels)));
    publish_h5(&run, h5).map_err(|e| e.error.to_string())?;
    Ok(Some(run))
}

/// After `recover FILE` turned the sidecar of process `pid` into `written`: when `pid` was
/// a `run` that followed processes (`FILE.procs-<pid>/`, left behind when the run was
/// killed), their recordings - files, and the sidecars of those killed too - are stacked
/// after the recovered run in `written` ([`merge_processes`]) and the directory is
/// removed (the workers' streamed calls are not left in a directory nothing cleans up).
/// Returns the line to print; a merge that fails is a `warning:` on stderr, and the
/// directory stays.
pub fn recover_followed(file: &Path, pid: u32, written: &Path) -> Option<String> {
    let dir = PathBuf::from(format!("{}.procs-{pid}", file.display()));
    if !dir.is_dir() || working_files::process_alive(pid) {
        return None;
    }
    let merged = match merge_processes(written, &dir, &format!("pid {pid}")) {
        Ok(merged) => merged,
        Err(e) => {
            eprintln!("warning: {e}; the followed processes' recordings stay in {}", dir.display());
            return None;
        }
    };
    let removed = std::fs::remove_dir_all(&dir);
    let note = merged.map(|run| {
        format!(
            "{}: ranks 1 to {} are the processes the run followed (from {})",
            written.display(),
            run.num_ranks.saturating_sub(1),
            dir.display(),
        )
    });
    if let Err(e) = removed {
        eprintln!("warning: could not remove {}: {e}", dir.display());
    }
    note
}

/// A followed process's lane tables on the script's origin (`origin`: rank 0's
/// `start_time_ns`, the same `CLOCK_MONOTONIC` as the process's): its thread and task times
/// are relative to its own start, so they are shifted by the difference, and the threads
/// still alive when it wrote its file end at its `finalize_time_ns` - the process ended
/// there (else a worker's MainThread would start at 0 and, alive, run to the script's end,
/// its wall time the whole run's). A run without its own `start_time_ns` (recovered from a
/// sidecar) is left as it is.
fn on_the_scripts_origin(run: &mut Run, origin: i64) {
    let Some(start) = run.meta_int("start_time_ns") else { return };
    let shift = start - origin;
    let ended = run.meta_int("finalize_time_ns").filter(|&f| f >= start).map(|f| f - origin);
    let moved = |t: i64| if t == UNKNOWN { t } else { t + shift };
    for t in &mut run.threads {
        t.start_ns = moved(t.start_ns);
        t.end_ns = match (t.end_ns, ended) {
            (UNKNOWN, Some(end)) => end,
            (e, _) => moved(e),
        };
    }
    for t in &mut run.tasks {
        t.created_ns = moved(t.created_ns);
        t.done_ns = moved(t.done_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A followed worker's tables move to the script's origin and its live threads end where
    /// the worker wrote its file (not at 0 and the script's end).
    #[test]
    fn a_followed_process_s_tables_are_on_the_script_s_origin() {
        use scope_profiler_analysis::{TaskRow, ThreadRow};
        let thread = |index, start_ns, end_ns| ThreadRow {
            ready_wait_ns: -1,
            rank: 0,
            index,
            ident: 1,
            native_id: 1,
            daemon: false,
            start_ns,
            end_ns,
            cpu_ns: 5,
            cpu_start_ns: UNKNOWN,
            name: "t".into(),
        };
        let mut run = Run {
            threads: vec![thread(0, 0, UNKNOWN), thread(1, 10, 40), thread(2, UNKNOWN, UNKNOWN)],
            tasks: vec![TaskRow::new(0, 0, "asyncio", "Task-1", "c")
                .on_thread(0)
                .lifetime(20, UNKNOWN)
                .timing(1, 1, 0)],
            metadata: vec![
                ("start_time_ns".into(), MetaValue::Int(1_150)),
                ("finalize_time_ns".into(), MetaValue::Int(1_210)),
            ],
            ..Run::default()
        };
        on_the_scripts_origin(&mut run, 1_000);
        let spans: Vec<(i64, i64)> = run.threads.iter().map(|t| (t.start_ns, t.end_ns)).collect();
        assert_eq!(spans, [(150, 210), (160, 190), (UNKNOWN, 210)]);
        assert_eq!((run.tasks[0].created_ns, run.tasks[0].done_ns), (170, UNKNOWN));
        // a recovered run without its origin stays as it is
        let mut recovered = Run { threads: vec![thread(0, 0, UNKNOWN)], ..Run::default() };
        on_the_scripts_origin(&mut recovered, 1_000);
        assert_eq!((recovered.threads[0].start_ns, recovered.threads[0].end_ns), (0, UNKNOWN));
    }

    #[test]
    fn recordings_are_in_start_order_and_pid_comes_from_the_name() {
        let dir = std::env::temp_dir().join(format!("sp-procs-order-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["00000000000000000300-17.h5", "00000000000000000100-99.h5", ".hidden.h5", "notes.txt"] {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
        let names: Vec<String> = recordings(&dir).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["00000000000000000100-99.h5", "00000000000000000300-17.h5"]);
        assert_eq!(pid_of("00000000000000000100-99.h5"), "pid 99");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_empty_directory_merges_nothing_and_does_not_read_the_run() {
        let dir = std::env::temp_dir().join(format!("sp-procs-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.h5");
        assert_eq!(merge_processes(&missing, &dir, "pid 1").map(|r| r.is_none()), Ok(true));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
