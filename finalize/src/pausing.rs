//! `pause()` of the Python manager: when a pause is refused, and the message saying why.

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
}
