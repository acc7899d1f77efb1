//! The Python manager's state decisions, without Python: its lifecycle (INACTIVE → ACTIVE
//! → FINALIZED), when `setup()` is refused, which regions record given the opt-in tags,
//! the run's enabled tags and `setup(region_tags=...)`, and the texts of its refusals and
//! warnings (the reference's).
use std::collections::BTreeSet;

/// The name of a session's root region (`ProfileManager.session()`): open around the body,
/// it does not stop `pause()`, nor count as a call left open at a checkpoint.
pub const SESSION_ROOT_REGION: &str = "scope_profiler.session";

/// The `RuntimeError` message of a `setup()` while a run is active (without `replace=True`).
pub const ALREADY_CONFIGURED: &str = "profiling is already configured; finalize it first or pass replace=True";

/// `ProfilingRun.finalize()` after another `setup()` replaced that run: the `RuntimeError`.
pub const RUN_REPLACED: &str = "this profiling run has been replaced";

/// `flush_interval` on an MPI rank: the `RuntimeWarning` (that rank streams nothing).
pub const NO_STREAMING_UNDER_MPI: &str = "flush_interval is not supported under MPI yet; this rank does not stream";

/// `pause()` or `resume()` (`action`) before `setup()`: the `RuntimeError`.
pub fn not_set_up(action: &str) -> String {
    format!("ProfileManager.setup() must be called before {action}()")
}

/// A region name used again with other tags than its first creation's: the `ValueError`
/// (`name`, `have` and `wanted` as Python's `repr()` shows them).
pub fn tags_conflict(name: &str, have: &str, wanted: &str) -> String {
    format!("region {name} already has tags {have}; cannot reuse it with {wanted}")
}

/// `define_region()` of a name defined before with other functions or tags: the
/// `ValueError` (`name` as `repr()` shows it).
pub fn defined_differently(name: &str) -> String {
    format!("region {name} was already defined differently")
}

/// A checkpoint whose calls do not nest (`error` says where): the `RuntimeWarning`; the run
/// is kept without its call graph.
pub fn call_graph_not_recorded(error: &str) -> String {
    format!("call graph not recorded: {error}")
}

/// The line said at the interpreter's exit when `calls` calls were made after the exit-time
/// finalize (`setup(auto_finalize=True)`) ended the recording: by `atexit` handlers registered
/// before `setup()` (they run after it) or by daemon threads. That finalize is the last, so
/// they are in no file; `written` is the file it wrote (None: it wrote none). None for none.
pub fn calls_after_the_exit_finalize(calls: u64, written: Option<&str>) -> Option<String> {
    (calls > 0).then(|| {
        let whereto = written.map_or_else(|| "the run".to_string(), |f| format!("{f}, which it wrote"));
        format!(
            "scope-profiler: {calls} call(s) made after the exit-time finalize are not in {whereto} (atexit handlers \
             registered before setup() run after it; daemon threads may still run): that finalize ends the recording"
        )
    })
}

/// `run_script()` of a path that is not a file (`path` as `repr()` shows it): the
/// `FileNotFoundError`.
pub fn no_script(path: &str) -> String {
    format!("no script at {path}")
}

/// Where a manager is in its run: INACTIVE (no `setup()`, after `reset()`, or set up with
/// `deactivate_profiling`), ACTIVE (set up), FINALIZED (a checkpoint was taken; recording
/// goes on until the next `setup()` or `reset()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Lifecycle {
    #[default]
    Inactive,
    Active,
    Finalized,
}

impl Lifecycle {
    /// The state a `setup()` leaves: INACTIVE with `deactivate_profiling`, else ACTIVE.
    pub fn after_setup(deactivate_profiling: bool) -> Self {
        if deactivate_profiling {
            Lifecycle::Inactive
        } else {
            Lifecycle::Active
        }
    }

    /// `is_active()`: the manager records (`recording`: configured, profiling not
    /// deactivated) and was set up (ACTIVE or FINALIZED).
    pub fn is_active(self, recording: bool) -> bool {
        recording && self != Lifecycle::Inactive
    }

    /// The name the reference's enum showed (`INACTIVE`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Lifecycle::Inactive => "INACTIVE",
            Lifecycle::Active => "ACTIVE",
            Lifecycle::Finalized => "FINALIZED",
        }
    }
}

/// Why `setup()` is refused, or `None`: a run is configured and ACTIVE, the caller did not
/// pass `replace=True`, the call is not a hosted script's (`hosted`: it joins the command
/// line's run) and the run is not one a forked child inherited (`inherited`).
pub fn setup_refusal(
    hosted: bool,
    configured: bool,
    lifecycle: Lifecycle,
    replace: bool,
    inherited: bool,
) -> Option<&'static str> {
    let refused = !hosted && configured && lifecycle == Lifecycle::Active && !replace && !inherited;
    refused.then_some(ALREADY_CONFIGURED)
}

/// The tags a run enables: its `enable_tags`, those of `SCOPE_PROFILER_ENABLE_TAGS`
/// (`env`) and the `setup(region_tags=...)` filter (`filter`). `"*"` among them enables all.
pub fn enabled_tags(config: &[String], env: &[String], filter: Option<&BTreeSet<String>>) -> BTreeSet<String> {
    let mut tags: BTreeSet<String> = config.iter().chain(env).cloned().collect();
    tags.extend(filter.into_iter().flatten().cloned());
    tags
}

/// Whether `tags` carry no opt-in tag (of `opt_in`), or one of `enabled` (or `enabled`
/// holds `"*"`).
pub fn opt_in_enabled(opt_in: &BTreeSet<String>, enabled: &BTreeSet<String>, tags: &[String]) -> bool {
    let mut carried = tags.iter().filter(|t| opt_in.contains(*t)).peekable();
    carried.peek().is_none() || enabled.contains("*") || carried.any(|t| enabled.contains(t))
}

/// Whether a region with `tags` records in a run: it carries one of the `filter` tags
/// (when `setup(region_tags=...)` gave one) and no opt-in tag the run leaves off.
pub fn tags_record(
    filter: Option<&BTreeSet<String>>,
    opt_in: &BTreeSet<String>,
    enabled: &BTreeSet<String>,
    tags: &[String],
) -> bool {
    if filter.is_some_and(|f| !tags.iter().any(|t| f.contains(t))) {
        return false;
    }
    opt_in_enabled(opt_in, enabled, tags)
}

/// `register_opt_in_tag(*tags)`: adds `tags` to `opt_in` and returns those that were not
/// opt-in yet (the regions and decorators carrying one must be made again).
pub fn register_opt_in(opt_in: &mut BTreeSet<String>, tags: &[String]) -> BTreeSet<String> {
    tags.iter().filter(|t| opt_in.insert((*t).clone())).cloned().collect()
}

/// Whether a region or decorator with `tags` is affected by the newly opt-in tags `new`.
pub fn carries_any(new: &BTreeSet<String>, tags: &[String]) -> bool {
    tags.iter().any(|t| new.contains(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_after_the_exit_finalize_are_named_with_the_file_once_there_are_some() {
        assert_eq!(calls_after_the_exit_finalize(0, Some("x.h5")), None);
        let line = calls_after_the_exit_finalize(470, Some("x.h5")).unwrap();
        assert!(line.starts_with("scope-profiler: 470 call(s) made after the exit-time finalize are not in x.h5,"));
        assert!(line.contains("registered before setup()") && !line.contains('\n'), "{line}");
        let line = calls_after_the_exit_finalize(1, None).unwrap();
        assert!(line.contains("1 call(s) made after the exit-time finalize are not in the run ("), "{line}");
    }

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn tags(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn lifecycle_after_setup_and_is_active() {
        assert_eq!(Lifecycle::after_setup(false), Lifecycle::Active);
        assert_eq!(Lifecycle::after_setup(true), Lifecycle::Inactive);
        assert!(Lifecycle::Active.is_active(true));
        assert!(Lifecycle::Finalized.is_active(true));
        assert!(!Lifecycle::Inactive.is_active(true));
        assert!(!Lifecycle::Active.is_active(false));
        assert_eq!(Lifecycle::default().name(), "INACTIVE");
        assert_eq!(Lifecycle::Finalized.name(), "FINALIZED");
    }

    #[test]
    fn setup_is_refused_only_over_an_active_run() {
        let refused = setup_refusal(false, true, Lifecycle::Active, false, false);
        assert_eq!(refused, Some("profiling is already configured; finalize it first or pass replace=True"));
        assert_eq!(setup_refusal(false, true, Lifecycle::Finalized, false, false), None);
        assert_eq!(setup_refusal(false, true, Lifecycle::Active, true, false), None);
        assert_eq!(setup_refusal(true, true, Lifecycle::Active, false, false), None);
        assert_eq!(setup_refusal(false, true, Lifecycle::Active, false, true), None);
        assert_eq!(setup_refusal(false, false, Lifecycle::Active, false, false), None);
        assert_eq!(setup_refusal(false, true, Lifecycle::Inactive, false, false), None);
    }

    #[test]
    fn enabled_tags_unite_config_env_and_filter() {
        let filter = set(&["io"]);
        assert_eq!(enabled_tags(&tags(&["a"]), &tags(&["b", "a"]), Some(&filter)), set(&["a", "b", "io"]));
        assert_eq!(enabled_tags(&[], &[], None), set(&[]));
    }

    #[test]
    fn opt_in_tags_are_off_unless_enabled() {
        let opt_in = set(&["slow", "debug"]);
        assert!(opt_in_enabled(&opt_in, &set(&[]), &tags(&["plain"])));
        assert!(opt_in_enabled(&opt_in, &set(&[]), &[]));
        assert!(!opt_in_enabled(&opt_in, &set(&[]), &tags(&["slow"])));
        assert!(opt_in_enabled(&opt_in, &set(&["slow"]), &tags(&["slow", "debug"])));
        assert!(opt_in_enabled(&opt_in, &set(&["*"]), &tags(&["debug"])));
        assert!(!opt_in_enabled(&opt_in, &set(&["other"]), &tags(&["debug", "x"])));
    }

    #[test]
    fn region_tags_filter_disables_untagged_regions() {
        let filter = set(&["io"]);
        let none = set(&[]);
        assert!(tags_record(Some(&filter), &none, &filter, &tags(&["io", "x"])));
        assert!(!tags_record(Some(&filter), &none, &filter, &[]));
        assert!(!tags_record(Some(&filter), &none, &filter, &tags(&["cpu"])));
        assert!(tags_record(None, &none, &none, &[]));
        // the filter's tags are enabled: an opt-in tag it names records
        let opt_in = set(&["io"]);
        assert!(tags_record(Some(&filter), &opt_in, &filter, &tags(&["io"])));
    }

    #[test]
    fn refusal_texts_are_the_references() {
        assert_eq!(not_set_up("pause"), "ProfileManager.setup() must be called before pause()");
        assert_eq!(
            tags_conflict("'r'", "('a',)", "('b',)"),
            "region 'r' already has tags ('a',); cannot reuse it with ('b',)"
        );
        assert_eq!(defined_differently("'h'"), "region 'h' was already defined differently");
        assert_eq!(call_graph_not_recorded("x overlaps y"), "call graph not recorded: x overlaps y");
        assert_eq!(no_script("'/tmp/a.py'"), "no script at '/tmp/a.py'");
    }

    #[test]
    fn registering_returns_only_new_opt_in_tags() {
        let mut opt_in = set(&["a"]);
        assert_eq!(register_opt_in(&mut opt_in, &tags(&["a", "b", "b"])), set(&["b"]));
        assert_eq!(opt_in, set(&["a", "b"]));
        assert!(register_opt_in(&mut opt_in, &tags(&["b"])).is_empty());
        assert!(carries_any(&set(&["b"]), &tags(&["x", "b"])));
        assert!(!carries_any(&set(&["b"]), &tags(&["x"])));
    }
}
