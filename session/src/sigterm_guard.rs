//! The profiler's Python-level SIGTERM handlers, made as reliable as the default action.
//!
//! `run`, and every process it follows, installs a Python-level SIGTERM handler, so that a
//! terminated program still writes its profile. Without the profiler SIGTERM kills at once;
//! a Python-level handler runs in two steps instead: CPython's C handler only marks the
//! signal tripped, and the main thread runs the Python function when it next checks. Two
//! gaps between those steps lost signals, and a multiprocessing pool then waited forever
//! for a worker it had terminated (about 1 run in 10 under load):
//!
//! * **Right after `fork()`.** A child inherits the handler, and CPython's after-fork
//!   reinitialisation (`_PySignal_AfterFork`) clears every tripped mark: a SIGTERM that
//!   reaches the child in that moment is dropped (193 of 200 children here under `run`;
//!   none without the profiler, where the child inherits the default action and dies).
//!   The guard ends such a child (its pid is not the one that installed the guard) by the
//!   default action, as it would end without the profiler.
//! * **Just before a blocking call.** A signal that arrives after the main thread last
//!   checked, but before it blocks (a pool worker entering `sem_wait` on the pool's lock,
//!   woken by the lock's release and scheduled late under load), interrupts nothing: the
//!   thread blocks with the signal tripped and never runs the handler. The guard therefore
//!   sends the signal again to the main thread every [`REDELIVERY_INTERVAL_NS`] (a POSIX
//!   timer) until the Python handler reports that it runs ([`taken`]); the next one
//!   interrupts the blocking call, which returns `EINTR`, and CPython runs the handler.
//!   A re-sent signal is never a new one: once the handler has run, [`taken`] tells it
//!   apart (`true`) and the guard drops one that comes after.
//!
//! [`install`] puts the guard in front of the C handler now installed (CPython's); whatever
//! installs a handler later (`signal.signal()`, the program's own handler) replaces it.
//! Everything the guard does in the handler is async-signal-safe: `getpid`, `sigaction`,
//! `raise`, `timer_settime` and atomic loads.
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

/// How often the signal is sent again to the main thread until the Python handler runs
/// (ns; [`taken`] stops it).
pub const REDELIVERY_INTERVAL_NS: i64 = 20_000_000;

/// The process that installed the guard (0: none).
static OWNER_PID: AtomicI32 = AtomicI32::new(0);
/// The handler the guard stands in front of (a `sa_handler`/`sa_sigaction` address).
static PREVIOUS: AtomicUsize = AtomicUsize::new(0);
/// Whether [`PREVIOUS`] takes `(signum, info, context)` (`SA_SIGINFO`).
static PREVIOUS_SIGINFO: AtomicUsize = AtomicUsize::new(0);
/// The owner's re-delivery timer (`timer_t`; the first timer of a process is 0).
static TIMER: AtomicUsize = AtomicUsize::new(0);
/// The process [`TIMER`] belongs to (timers are not inherited by a forked child); 0: none.
static TIMER_PID: AtomicI32 = AtomicI32::new(0);
/// Whether the Python handler ran since the last signal that was not a re-sent one.
static TAKEN: AtomicBool = AtomicBool::new(false);
/// Whether a signal (not a re-sent one) reached the owner; a forked child inherits it (see
/// [`received`]).
static RECEIVED: AtomicBool = AtomicBool::new(false);

extern "C" fn guard(signum: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let owner = OWNER_PID.load(Ordering::Relaxed);
    // SAFETY: getpid, sigaction and raise are async-signal-safe; the sigaction struct is
    // zeroed (an empty mask, no flags) before the default action is set in it.
    unsafe {
        if owner != 0 && libc::getpid() != owner {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigemptyset(&mut default.sa_mask);
            libc::sigaction(signum, &default, std::ptr::null_mut());
            // blocked while this handler runs: delivered, with the default action, on return
            libc::raise(signum);
            return;
        }
    }
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler (null checked).
    let resent = !info.is_null() && unsafe { (*info).si_code } == libc::SI_TIMER;
    if resent && TAKEN.load(Ordering::Relaxed) {
        return; // already on its way when taken() stopped the timer
    }
    if !resent {
        TAKEN.store(false, Ordering::Relaxed);
        RECEIVED.store(true, Ordering::Relaxed);
    }
    call_previous(signum, info, context);
    if !resent {
        arm_redelivery(REDELIVERY_INTERVAL_NS);
    }
}

fn call_previous(signum: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let previous = PREVIOUS.load(Ordering::Relaxed);
    if previous == libc::SIG_DFL || previous == libc::SIG_IGN {
        return; // install() never stands in front of these
    }
    // SAFETY: `previous` is the address the kernel held as this signal's handler, with the
    // calling convention its SA_SIGINFO flag says.
    unsafe {
        if PREVIOUS_SIGINFO.load(Ordering::Relaxed) != 0 {
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(previous);
            handler(signum, info, context);
        } else {
            let handler: extern "C" fn(libc::c_int) = std::mem::transmute(previous);
            handler(signum);
        }
    }
}

/// Start (every `interval_ns`) or, with 0, stop the owner's re-delivery timer. Async-signal-safe.
fn arm_redelivery(interval_ns: i64) {
    let timer = TIMER.load(Ordering::Relaxed);
    // SAFETY: getpid is async-signal-safe and cannot fail.
    if TIMER_PID.load(Ordering::Relaxed) != unsafe { libc::getpid() } {
        return;
    }
    let period = libc::timespec {
        tv_sec: (interval_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (interval_ns % 1_000_000_000) as libc::c_long,
    };
    let spec = libc::itimerspec { it_interval: period, it_value: period };
    // SAFETY: `timer` was made by timer_create in this process; timer_settime is
    // async-signal-safe.
    unsafe { libc::timer_settime(timer as libc::timer_t, 0, &spec, std::ptr::null_mut()) };
}

/// A timer of this process that sends `signum` to the calling thread (the main thread:
/// Python handlers run there), disarmed. None when the OS refuses one.
fn create_timer(signum: libc::c_int) -> Option<libc::timer_t> {
    // SAFETY: a zeroed sigevent is valid; the fields set are the ones SIGEV_THREAD_ID reads,
    // and gettid names a thread of this process.
    unsafe {
        let mut event: libc::sigevent = std::mem::zeroed();
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = signum;
        event.sigev_notify_thread_id = libc::gettid();
        let mut timer: libc::timer_t = std::ptr::null_mut();
        (libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut timer) == 0).then_some(timer)
    }
}

/// The guard's address, as `sigaction` holds a handler.
fn guard_address() -> usize {
    guard as *const () as usize
}

fn current(signum: libc::c_int) -> io::Result<libc::sigaction> {
    // SAFETY: a zeroed sigaction is a valid out-parameter; sigaction only reads `signum`.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signum, std::ptr::null(), &mut action) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(action)
    }
}

/// Put the guard in front of the C handler of `signum` now installed, owned by this process
/// (`getpid()`); call it on the main thread (where Python handlers run; the re-delivery
/// timer targets the calling thread). Returns `false` (nothing changed) when the current
/// action is `SIG_DFL` or `SIG_IGN`, which need no guard; `true` when the guard is in place
/// (installing it again only takes the new owner, and a forked child gets its own timer).
///
/// # Errors
/// The OS error of `sigaction` (an invalid or uncatchable signal number).
pub fn install(signum: libc::c_int) -> io::Result<bool> {
    let action = current(signum)?;
    let handler = action.sa_sigaction;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        return Ok(false);
    }
    // SAFETY: getpid cannot fail.
    let pid = unsafe { libc::getpid() };
    if TIMER_PID.load(Ordering::Relaxed) != pid {
        if let Some(timer) = create_timer(signum) {
            TIMER.store(timer as usize, Ordering::Relaxed);
            TIMER_PID.store(pid, Ordering::Relaxed);
        }
    }
    OWNER_PID.store(pid, Ordering::Relaxed);
    if handler == guard_address() {
        return Ok(true);
    }
    PREVIOUS_SIGINFO.store(usize::from(action.sa_flags & libc::SA_SIGINFO != 0), Ordering::Relaxed);
    PREVIOUS.store(handler, Ordering::Relaxed);
    let mut ours = action; // the same mask and flags (SA_RESTART, SA_ONSTACK, ...)
    ours.sa_sigaction = guard_address();
    ours.sa_flags |= libc::SA_SIGINFO;
    // SAFETY: `ours` is a complete sigaction copied from the kernel's, with our handler.
    if unsafe { libc::sigaction(signum, &ours, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(true)
}

/// The Python handler of `signum` runs: stop sending it again (see the module). Call it
/// first in every handler the guard stands in front of. Returns `true` when this run of the
/// handler is owed to a re-sent signal only (the handler already ran for the last signal
/// sent from outside, and the guard is still in place): the handler should then do nothing.
pub fn taken(signum: libc::c_int) -> bool {
    arm_redelivery(0);
    let ran_before = TAKEN.swap(true, Ordering::Relaxed);
    ran_before && installed(signum).unwrap_or(false)
}

/// Whether the signal reached the process that installed the guard, at the moment it came
/// (before any Python handler ran); in a child forked from it, whether it had reached the
/// parent before the fork. A process the signal is ending (`run` writing its profile) forks
/// no child that outlives it: such a child checks this first (`_cli`'s after-fork hook).
pub fn received() -> bool {
    RECEIVED.load(Ordering::Relaxed)
}

/// Whether the guard is the C handler of `signum` now.
///
/// # Errors
/// As [`install`].
pub fn installed(signum: libc::c_int) -> io::Result<bool> {
    Ok(current(signum)?.sa_sigaction == guard_address())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;
    use std::time::{Duration, Instant};

    static CALLS: AtomicU32 = AtomicU32::new(0);

    extern "C" fn counting(_signum: libc::c_int) {
        CALLS.fetch_add(1, Ordering::SeqCst);
    }

    fn set_plain(signum: libc::c_int, handler: usize) {
        // SAFETY: a complete sigaction with an empty mask.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler;
            libc::sigemptyset(&mut action.sa_mask);
            assert_eq!(libc::sigaction(signum, &action, std::ptr::null_mut()), 0);
        }
    }

    fn wait_status(child: libc::pid_t) -> libc::c_int {
        let mut status = 0;
        // SAFETY: `child` is a child of this process.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        status
    }

    /// One test for the whole module: signal dispositions are process-wide and cargo runs
    /// tests on several threads. SIGUSR2 stands for SIGTERM (the test binary keeps its own).
    #[test]
    fn the_owner_keeps_its_handler_and_a_forked_child_dies_by_the_default_action() {
        let signum = libc::SIGUSR2;
        set_plain(signum, libc::SIG_DFL);
        assert!(!install(signum).unwrap(), "nothing to stand in front of");
        assert!(!installed(signum).unwrap());

        set_plain(signum, counting as *const () as usize);
        assert!(install(signum).unwrap());
        assert!(installed(signum).unwrap());
        assert!(install(signum).unwrap(), "twice: still one guard");

        // the owner: the previous handler runs for each signal; the re-delivery timer then
        // sends it again (at least twice in 200 ms, at 20 ms) until taken() stops it
        assert!(!received(), "no signal yet");
        let before = CALLS.load(Ordering::SeqCst);
        // SAFETY: raise on this thread; the handler only counts.
        unsafe { libc::raise(signum) };
        assert!(CALLS.load(Ordering::SeqCst) > before);
        assert!(received(), "known at once, before any handler of the program ran");
        std::thread::sleep(Duration::from_millis(200));
        let redelivered = CALLS.load(Ordering::SeqCst) - before - 1;
        assert!(redelivered >= 2, "sent again {redelivered} times");
        assert!(!taken(signum), "the first run of the handler is owed to a signal");
        assert!(taken(signum), "a second one, with no new signal, to a re-sent one");
        std::thread::sleep(Duration::from_millis(30)); // a signal already on its way
        let settled = CALLS.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(CALLS.load(Ordering::SeqCst), settled, "taken() stops the re-delivery");

        // a forked child that still has the guard: killed by the signal, not counting it
        // SAFETY: the child only calls async-signal-safe functions before _exit.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            unsafe {
                libc::raise(signum);
                libc::_exit(7); // reached only if the signal did not end the child
            }
        }
        let status = wait_status(child);
        assert!(libc::WIFSIGNALED(status), "child exited with {status:#x}");
        assert_eq!(libc::WTERMSIG(status), signum);

        // a child forked after the signal reached its parent knows it
        // SAFETY: the child only reads an atomic before _exit.
        let child = unsafe { libc::fork() };
        if child == 0 {
            unsafe { libc::_exit(if received() { 0 } else { 4 }) };
        }
        let status = wait_status(child);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{status:#x}");

        // a child that installs a handler of its own replaces the guard: it counts, exits 0
        // SAFETY: as above.
        let child = unsafe { libc::fork() };
        if child == 0 {
            set_plain(signum, counting as *const () as usize);
            let before = CALLS.load(Ordering::SeqCst);
            unsafe { libc::raise(signum) };
            let code = if CALLS.load(Ordering::SeqCst) == before + 1 { 0 } else { 3 };
            unsafe { libc::_exit(code) };
        }
        let status = wait_status(child);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{status:#x}");

        // a blocked read on the owner's main thread: a signal handled while the thread was
        // not yet blocked would leave it blocked; the re-delivery interrupts the read
        let mut fds = [0; 2];
        // SAFETY: a pipe for this test; nothing is ever written to it.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let started = Instant::now();
        unsafe { libc::raise(signum) }; // handled now, before the read blocks
        let mut byte = 0u8;
        let got = unsafe { libc::read(fds[0], (&mut byte as *mut u8).cast(), 1) };
        let errno = io::Error::last_os_error().raw_os_error();
        assert!(!taken(signum), "a new signal: the handler's run is owed to it");
        assert_eq!(got, -1);
        assert_eq!(errno, Some(libc::EINTR), "the read was interrupted");
        assert!(started.elapsed() < Duration::from_secs(5));
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }

        set_plain(signum, libc::SIG_DFL);
        assert!(!installed(signum).unwrap());
        assert!(install(-1).is_err(), "an invalid signal number is an error");
    }
}
