//! A child forked after the parent used the analysis pool gets a pool of its own (alone in
//! its test binary: forking a multi-threaded test harness could copy a held lock).
#![cfg(unix)]
use rayon::prelude::*;
use scope_profiler_analysis::pool::install;

#[test]
fn a_forked_child_gets_its_own_pool() {
    // the parent's pool exists (and has threads) before the fork
    let _: u64 = install(|| (0..100_000u64).into_par_iter().sum());
    // SAFETY: the child only runs Rust code of this test and leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let ok = std::panic::catch_unwind(|| install(|| (0..100_000u64).into_par_iter().sum::<u64>()))
            .map(|s| s == (0..100_000u64).sum::<u64>())
            .unwrap_or(false);
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    assert!(pid > 0);
    let mut status = 0;
    let mut waited = 0;
    loop {
        // SAFETY: plain waitpid on our child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        waited += 1;
        if waited > 3000 {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("forked child hung on the inherited pool");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
}
