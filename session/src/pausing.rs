//! `pause()` of the Python manager: when a pause is refused, and the message saying why;
//! `sample_every()`: which timesteps it records.

/// The `RuntimeError` message of `pause()` while scopes other than `root` (a session's own
/// root region) are open, naming the first three of `open` (the open calls' region names,
/// outermost first), each as `repr` shows it (Python's `repr()` in the binding), and `...`
/// when there are more; `None` when the pause may go ahead.
pub fn pause_refusal(open: &[String], root: &str, repr: impl Fn(&str) -> String) -> Option<String> {
    let active: Vec<&String> = open.iter().filter(|n| *n != root).collect();
    if active.is_empty() {
        return None;
    }
    let names: Vec<String> = active.iter().take(3).map(|n| repr(n)).collect();
    let suffix = if active.len() > 3 { "..." } else { "" };
    Some(format!("cannot pause while profiling scopes are active: {}{suffix}", names.join(", ")))
}

/// Whether `sample_every(every, start)` records `timestep`: `start` and every `every`-th
/// timestep after it. `every` ≥ 1 (checked by the caller); no overflow for any `i64`s.
pub fn step_selected(timestep: i64, every: i64, start: i64) -> bool {
    timestep >= start && (i128::from(timestep) - i128::from(start)) % i128::from(every) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(s: &str) -> String {
        format!("'{s}'")
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pause_goes_ahead_with_only_the_session_root_open() {
        assert_eq!(pause_refusal(&names(&["scope_profiler.session"]), "scope_profiler.session", quoted), None);
        assert_eq!(pause_refusal(&[], "scope_profiler.session", quoted), None);
    }

    #[test]
    fn pause_refusal_names_three_then_dots() {
        let root = "scope_profiler.session";
        assert_eq!(
            pause_refusal(&names(&[root, "a"]), root, quoted).unwrap(),
            "cannot pause while profiling scopes are active: 'a'"
        );
        assert_eq!(
            pause_refusal(&names(&["a", "b", "c", "d"]), root, quoted).unwrap(),
            "cannot pause while profiling scopes are active: 'a', 'b', 'c'..."
        );
    }

    #[test]
    fn steps_from_start_every_nth() {
        let picked: Vec<i64> = (-2..10).filter(|&t| step_selected(t, 3, 1)).collect();
        assert_eq!(picked, [1, 4, 7]);
        assert!(step_selected(i64::MAX, 1, i64::MIN) && !step_selected(i64::MIN, 1, i64::MAX));
    }
}
