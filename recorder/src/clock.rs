//! Clocks of the recorder.
//!
//! Every timestamp is `CLOCK_MONOTONIC` in integer nanoseconds, the clock behind
//! Python's `time.perf_counter_ns()` on Linux, so a value read here and one read by
//! Python code are directly comparable. CPU time is `CLOCK_THREAD_CPUTIME_ID`, the clock
//! of `time.thread_time_ns()`: readable only for the calling thread.

#[inline(always)]
#[allow(clippy::unnecessary_cast)] // time_t / c_long are not i64 on every target
fn read(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer; both clocks exist on every Linux/macOS we build for.
    unsafe {
        libc::clock_gettime(clock, &mut ts);
    }
    ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64
}

/// Monotonic time in ns (`CLOCK_MONOTONIC`, same values as `time.perf_counter_ns()`).
#[inline(always)]
pub fn now_ns() -> i64 {
    read(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed so far by the calling OS thread, in ns (`CLOCK_THREAD_CPUTIME_ID`).
#[inline]
pub fn thread_cpu_ns() -> i64 {
    read(libc::CLOCK_THREAD_CPUTIME_ID)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_and_cpu_advance() {
        let a = now_ns();
        let c0 = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        let b = now_ns();
        assert!(b > a);
        assert!(thread_cpu_ns() > c0);
    }
}
