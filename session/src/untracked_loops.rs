//! What `track_async` says, once per process, about tasks it cannot give lanes: those of an
//! asyncio-compatible event loop found running uninstrumented (uvloop without
//! `instrument_loop`; it is instrumented from then on), and trio's, which have no task
//! factory to instrument.

/// The `RuntimeWarning` for the running event loop of type `kind` (`module.qualname`),
/// found uninstrumented while one of its tasks ran: what its earlier tasks' calls look like
/// and how to instrument the loop before its tasks start.
pub fn loop_warning(kind: &str) -> String {
    format!(
        "track_async: tasks of the running {kind} event loop were not tracked: the loop was not \
         instrumented when they were created, so their calls have no task lane (task id -1, \
         await time 0) and calls of concurrent tasks nest on the thread's lane, with durations \
         that include the other tasks' time. The loop is instrumented from now on. To track \
         every task, instrument the loop before its tasks start: \
         ProfileManager.get_config().tracker.instrument_loop(loop), for example as the first \
         line of the main coroutine with asyncio.get_running_loop() (uvloop.run() and \
         asyncio.run(..., loop_factory=...) create the loop themselves)."
    )
}

/// The `RuntimeWarning` of a region opened in a task of a trio run that was not started
/// through the patched `trio.run` / `trio.lowlevel.start_guest_run` (e.g. `from trio import
/// run` before `setup()`): what its calls look like and what to do instead.
pub const TRIO_WARNING: &str = "track_async: tasks of the running trio run were not tracked: the run was not started \
     through trio.run or trio.lowlevel.start_guest_run while a tracker was installed (for \
     example `from trio import run` before setup()), so calls of the tasks it spawned so far \
     have no task lane (task id -1, await time 0) and calls of concurrent tasks nest on the \
     thread's lane, with durations that include the other tasks' time. The tasks it spawns \
     from now on are lanes. To track every task, start the run as trio.run(...) after \
     setup(), or call setup() inside the run before spawning tasks.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_warning_names_the_loop_and_how_to_instrument_it() {
        let text = loop_warning("uvloop.Loop");
        assert!(text.starts_with("track_async: tasks of the running uvloop.Loop event loop were not tracked: "));
        assert_eq!(text.matches("uvloop.Loop").count(), 1);
        assert!(text.contains("ProfileManager.get_config().tracker.instrument_loop(loop)"));
        assert!(text.ends_with("create the loop themselves)."));
        // one sentence flows into the next: the continuation lines leave no doubled or missing blank
        assert!(!text.contains("  ") && !text.contains("\n"));
    }

    #[test]
    fn trio_warning_says_what_the_calls_are_and_what_to_do() {
        assert!(TRIO_WARNING.starts_with("track_async: tasks of the running trio run were not tracked: "));
        assert!(TRIO_WARNING.contains("(task id -1, await time 0)"));
        assert!(TRIO_WARNING.ends_with("or call setup() inside the run before spawning tasks."));
        assert!(!TRIO_WARNING.contains("  ") && !TRIO_WARNING.contains('\n'));
    }
}
