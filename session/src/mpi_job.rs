//! The decisions of a collective `finalize()` under MPI that need no MPI: how a rank's
//! encoded run is cut into messages to rank 0, and the texts of its refusals and failures.
//! The MPI calls themselves (`allgather`, `Send`, `Recv`, `bcast`) are mpi4py's, made by
//! the bindings (`py/src/package/mpi.rs`).

/// Tag of the messages carrying a rank's run to rank 0.
pub const RUN_TAG: i32 = 0x5C0F;

/// Largest single message, in bytes (MPI counts are C ints): 1 GiB.
pub const CHUNK: usize = 1 << 30;

/// `output_mode="parallel"` with `track_threads`: the reference's `RuntimeError` text.
pub const PARALLEL_WITH_THREADS: &str = "output_mode='parallel' cannot be combined with track_threads: the collective \
     writer does not carry the per-call thread and task columns. Use output_mode='direct'.";

/// The messages a payload of `len` bytes is sent as: `(start, end)` byte ranges of at most
/// `chunk` bytes, in order; none for an empty payload.
pub fn message_ranges(len: usize, chunk: usize) -> Vec<(usize, usize)> {
    (0..len).step_by(chunk.max(1)).map(|start| (start, (start + chunk.max(1)).min(len))).collect()
}

/// Whether a collective finalize has anything to do: a file to write or results to return.
pub fn has_work(write_file: bool, return_results: bool, verbose: bool) -> bool {
    write_file || return_results || verbose
}

/// Whether the collective finalize is refused before any buffer is touched (the reference:
/// `parallel` output cannot carry the thread columns).
pub fn refused(write_file: bool, output_mode: &str, track_threads: bool) -> Option<&'static str> {
    (write_file && output_mode == "parallel" && track_threads).then_some(PARALLEL_WITH_THREADS)
}

/// The warning of a rank whose calls did not nest (its call graph is not recorded).
pub fn nesting_warning(rank: i64, error: &str) -> String {
    format!("call graph not recorded on rank {rank}: {error}")
}

/// What rank 0 broadcasts about its write: `"{Type}: {message}"` of the exception.
pub fn failure_broadcast(type_name: &str, message: &str) -> String {
    format!("{type_name}: {message}")
}

/// The error of a rank other than 0 when rank 0 could not write the job's file.
pub fn rank0_failure(message: &str) -> String {
    format!("rank 0 could not write profiling data: {message}")
}

/// The `RuntimeWarning` of a process that looks like an MPI rank (a launcher's environment,
/// or `SCOPE_PROFILER_MPI=1`) but cannot import mpi4py (`reason`: the `ImportError`'s text):
/// without it every rank records as a serial run and writes the same file.
pub fn without_mpi4py(reason: &str) -> String {
    format!(
        "this process looks like an MPI rank (an MPI launcher's environment variable, or \
         SCOPE_PROFILER_MPI=1) but mpi4py cannot be imported ({reason}): it records as a serial \
         run, and every rank writes the same output file, the last one replacing the others; \
         install mpi4py, or set SCOPE_PROFILER_MPI=0 if this is not an MPI job"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_is_cut_into_messages_of_at_most_a_chunk() {
        assert_eq!(message_ranges(0, 4), vec![]);
        assert_eq!(message_ranges(3, 4), vec![(0, 3)]);
        assert_eq!(message_ranges(8, 4), vec![(0, 4), (4, 8)]);
        assert_eq!(message_ranges(9, 4), vec![(0, 4), (4, 8), (8, 9)]);
        assert_eq!(message_ranges(5, CHUNK), vec![(0, 5)]);
    }

    #[test]
    fn parallel_output_with_threads_is_refused_only_when_writing() {
        assert_eq!(refused(true, "parallel", true), Some(PARALLEL_WITH_THREADS));
        assert_eq!(refused(false, "parallel", true), None);
        assert_eq!(refused(true, "direct", true), None);
        assert_eq!(refused(true, "parallel", false), None);
        assert_eq!(
            PARALLEL_WITH_THREADS,
            "output_mode='parallel' cannot be combined with track_threads: the collective writer does not carry \
             the per-call thread and task columns. Use output_mode='direct'."
        );
    }

    #[test]
    fn nothing_to_do_without_file_or_results() {
        assert!(!has_work(false, false, false));
        assert!(has_work(true, false, false));
        assert!(has_work(false, false, true));
    }

    #[test]
    fn texts_name_the_rank_and_the_failure() {
        assert_eq!(nesting_warning(2, "bad"), "call graph not recorded on rank 2: bad");
        assert_eq!(failure_broadcast("OSError", "disk full"), "OSError: disk full");
        assert_eq!(rank0_failure("OSError: disk full"), "rank 0 could not write profiling data: OSError: disk full");
    }

    // Under `mpirun` without mpi4py the ranks would silently overwrite one file.
    #[test]
    fn a_rank_without_mpi4py_is_told_what_happens_and_what_to_do() {
        let text = without_mpi4py("No module named 'mpi4py'");
        assert!(text.starts_with("this process looks like an MPI rank"));
        assert!(text.contains("(No module named 'mpi4py')"));
        assert!(text.contains("every rank writes the same output file"));
        assert!(text.ends_with("set SCOPE_PROFILER_MPI=0 if this is not an MPI job"));
    }
}
