//! Scoped per-call metadata (`ProfileManager.metadata(**values)`): the reference's rule.
//!
//! A `with metadata(...)` block is recorded once, when it exits, as a [`MetadataScope`]:
//! its entry and exit times and its values (the merged dict of the enclosing blocks and its
//! own, as JSON). Nothing is recorded per call: the recorder's hot path does not know about
//! metadata. At a checkpoint [`apply`] gives every call its values, as scope-profiler 0.7.5
//! does at `finalize()`:
//!
//! * a call gets the values of every scope that wholly contains it in time
//!   (`scope.start_ns <= call.start` and `call.end <= scope.end_ns`), **on any thread or
//!   task**: the rule is time, not the context the call ran in;
//! * scopes are applied widest first (stable: equal widths in the order they exited), each
//!   one's keys updating the values so far (a narrower, usually inner, scope wins; keys keep
//!   the order they were first set, as a Python `dict.update`);
//! * a row (region, rank 0) whose calls got nothing keeps no per-call metadata (the file's
//!   `"[]"`); otherwise it gets one object per call, `{}` for calls outside every scope.
//!
//! Values stay the JSON text Python's `json.dumps` wrote (keys and values are never
//! re-encoded), so the stored list is byte for byte what the reference writes.
use std::sync::Mutex;

use scope_profiler_analysis::{call_metadata, Run};

/// One exited `metadata()` block. Times are absolute ns on the recording clock
/// (`CLOCK_MONOTONIC`, `time.perf_counter_ns`), read on the thread that ran the block.
#[derive(Debug, Clone, PartialEq)]
pub struct MetadataScope {
    pub start_ns: i64,
    pub end_ns: i64,
    /// The block's values: `(key as JSON text, value as JSON text)`, in dict order.
    entries: Vec<(String, String)>,
    /// The decoded keys of `entries`, for comparing keys written with different escapes.
    keys: Vec<String>,
}

/// Why a scope's values were refused.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("metadata values are not a JSON object ({reason}): {text}")]
pub struct BadScopeValues {
    pub reason: String,
    pub text: String,
}

impl MetadataScope {
    /// A scope from `start_ns` to `end_ns` with `values`, one JSON object as Python's
    /// `json.dumps` writes it (`NaN`/`Infinity` allowed, as Python writes them).
    /// Errors: [`BadScopeValues`] when `values` is not one JSON object.
    pub fn new(start_ns: i64, end_ns: i64, values: &str) -> Result<Self, BadScopeValues> {
        let bad = |reason: String| BadScopeValues { reason, text: values.chars().take(200).collect() };
        let entries = call_metadata::object_entries(values).map_err(bad)?;
        // each value readable as stored, so that the file written is readable
        call_metadata::check_object(values).map_err(bad)?;
        // a key holding a lone surrogate (`"\ud800"`, a `str` Python allows) is no Rust
        // string: it is compared by its text
        let keys =
            entries.iter().map(|(k, _)| serde_json::from_str::<String>(k).unwrap_or_else(|_| k.clone())).collect();
        Ok(MetadataScope { start_ns, end_ns, entries, keys })
    }

    /// Whether the scope has no values (it changes no call).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn width(&self) -> i64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    fn contains(&self, start: i64, end: i64) -> bool {
        start >= self.start_ns && end <= self.end_ns
    }
}

/// The exited scopes of one recording, shared by every thread (one lock per exited block;
/// nothing per call). A checkpoint takes them all ([`MetadataScopes::taken`]) and retires
/// the ones it took when it retires its calls ([`MetadataScopes::retire`]).
#[derive(Debug, Default)]
pub struct MetadataScopes {
    scopes: Mutex<Vec<MetadataScope>>,
}

impl MetadataScopes {
    /// Record an exited scope (empty ones are dropped: they change no call).
    pub fn push(&self, scope: MetadataScope) {
        if !scope.is_empty() {
            self.lock().push(scope);
        }
    }

    /// Every scope recorded and not retired, oldest first.
    pub fn taken(&self) -> Vec<MetadataScope> {
        self.lock().clone()
    }

    /// Forget the `n` oldest scopes (the ones a checkpoint took, once its calls are retired).
    pub fn retire(&self, n: usize) {
        let mut scopes = self.lock();
        let n = n.min(scopes.len());
        scopes.drain(..n);
    }

    /// Number of scopes held.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<MetadataScope>> {
        self.scopes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Give the calls of every row of `run` that has events the values of the scopes
/// containing them (the rule of the module doc). A row's existing per-call metadata (the
/// `open_at_finalize` flags) is kept, the scopes' values added after it. Rows whose calls
/// no scope contains are left as they are.
pub fn apply(run: &mut Run, scopes: &[MetadataScope]) {
    if scopes.is_empty() {
        return;
    }
    // widest first, stable: the order the reference's `sorted(..., reverse=True)` gives
    let mut order: Vec<usize> = (0..scopes.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(scopes[i].width()));
    let mut rank = vec![0usize; scopes.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r;
    }
    let mut hits_per_row = containing(run, scopes);
    for (row, hits) in run.regions.iter_mut().zip(hits_per_row.iter_mut()) {
        for found in hits.iter_mut() {
            found.sort_by_key(|&i| rank[i as usize]);
        }
        if hits.iter().all(Vec::is_empty) {
            continue;
        }
        let existing = row.event_metadata.as_deref().and_then(|t| call_metadata::array_items(t).ok());
        let items: Vec<String> = hits
            .iter()
            .enumerate()
            .map(|(k, found)| {
                let base = existing.as_ref().and_then(|v| v.get(k)).map(String::as_str).unwrap_or("{}");
                merged(base, found.iter().map(|&i| &scopes[i as usize]))
            })
            .collect();
        // the reference keeps a row's list only when some call got a value
        if existing.is_none() && items.iter().all(|d| d == "{}") {
            continue;
        }
        row.event_metadata = Some(format!("[{}]", items.join(", ")));
    }
}

/// `base` (a JSON object's text) updated with each scope's values in turn, as JSON text in
/// Python's `json.dumps` form (`{"k": v, ...}`).
fn merged<'a>(base: &str, scopes: impl Iterator<Item = &'a MetadataScope>) -> String {
    let mut out: Vec<(String, String, String)> = call_metadata::object_entries(base)
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (serde_json::from_str::<String>(&k).unwrap_or_else(|_| k.clone()), k, v))
        .collect();
    for scope in scopes {
        for ((raw_key, value), key) in scope.entries.iter().zip(&scope.keys) {
            match out.iter_mut().find(|(k, _, _)| k == key) {
                Some(slot) => slot.2 = value.clone(),
                None => out.push((key.clone(), raw_key.clone(), value.clone())),
            }
        }
    }
    let parts: Vec<String> = out.iter().map(|(_, k, v)| format!("{k}: {v}")).collect();
    format!("{{{}}}", parts.join(", "))
}

/// Per row of `run`, per call, the indices of the scopes containing the call (in no order;
/// rows without events get no entries). One sweep over the calls by start: a scope joins
/// the open set when a call starts after it, and leaves it once a call starts after its
/// end, so each call looks only at the scopes open at its start (the nesting depth, times
/// the threads inside blocks), however many scopes the recording has.
fn containing(run: &Run, scopes: &[MetadataScope]) -> Vec<Vec<Vec<u32>>> {
    let mut hits: Vec<Vec<Vec<u32>>> =
        run.regions.iter().map(|r| if r.stored.is_some() { Vec::new() } else { vec![Vec::new(); r.len()] }).collect();
    let mut calls: Vec<(i64, i64, u32, u32)> = Vec::new();
    for (k, r) in run.regions.iter().enumerate() {
        if r.stored.is_none() {
            let ends = r.end_ns.values();
            calls.extend(
                r.start_ns.values().iter().zip(ends).enumerate().map(|(i, (&s, &e))| (s, e, k as u32, i as u32)),
            );
        }
    }
    calls.sort_unstable_by_key(|c| c.0);
    let mut by_start: Vec<u32> = (0..scopes.len() as u32).collect();
    by_start.sort_by_key(|&i| scopes[i as usize].start_ns);
    let mut next = 0;
    let mut open: Vec<u32> = Vec::new();
    for (start, end, row, call) in calls {
        while next < by_start.len() && scopes[by_start[next] as usize].start_ns <= start {
            open.push(by_start[next]);
            next += 1;
        }
        open.retain(|&i| scopes[i as usize].end_ns >= start);
        let found = &mut hits[row as usize][call as usize];
        found.extend(open.iter().copied().filter(|&i| scopes[i as usize].contains(start, end)));
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use scope_profiler_analysis::RegionCalls;

    fn scope(start: i64, end: i64, values: &str) -> MetadataScope {
        MetadataScope::new(start, end, values).unwrap()
    }

    fn run_of(rows: &[&[(i64, i64)]]) -> Run {
        let mut run = Run { num_ranks: 1, ..Run::default() };
        for (i, calls) in rows.iter().enumerate() {
            run.region_names.push(format!("r{i}"));
            let s: Vec<i64> = calls.iter().map(|c| c.0).collect();
            let e: Vec<i64> = calls.iter().map(|c| c.1).collect();
            run.regions.push(RegionCalls::new(i as u32, 0, Int64Array::from(s), Int64Array::from(e)));
        }
        run
    }

    /// A scope as the reference keeps it: `(start, end, values)`.
    type RefScope<'a> = (i64, i64, Vec<(&'a str, i64)>);

    /// The reference's `_snapshot_event_metadata`, written out: for each call, every scope
    /// sorted by width (descending, stable) that contains it updates a dict.
    fn reference_rule(calls: &[(i64, i64)], scopes: &[RefScope<'_>]) -> Vec<Vec<(String, i64)>> {
        let mut sorted: Vec<&RefScope<'_>> = scopes.iter().collect();
        sorted.sort_by_key(|s| std::cmp::Reverse(s.1 - s.0));
        calls
            .iter()
            .map(|&(s, e)| {
                let mut d: Vec<(String, i64)> = Vec::new();
                for sc in sorted.iter().filter(|sc| s >= sc.0 && e <= sc.1) {
                    for (k, v) in &sc.2 {
                        match d.iter_mut().find(|(dk, _)| dk == k) {
                            Some(slot) => slot.1 = *v,
                            None => d.push((k.to_string(), *v)),
                        }
                    }
                }
                d
            })
            .collect()
    }

    fn text_of(d: &[(String, i64)]) -> String {
        let parts: Vec<String> = d.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
        format!("{{{}}}", parts.join(", "))
    }

    #[test]
    fn calls_wholly_inside_get_the_values_narrowest_last() {
        let mut run = run_of(&[&[(10, 20), (12, 18), (5, 15), (30, 40)], &[(50, 60)]]);
        let scopes =
            [scope(11, 19, r#"{"a": 5, "b": 2}"#), scope(10, 25, r#"{"a": 1, "s": "x"}"#), scope(0, 100, "{}")];
        apply(&mut run, &scopes);
        assert_eq!(
            run.regions[0].event_metadata.as_deref(),
            Some(r#"[{"a": 1, "s": "x"}, {"a": 5, "s": "x", "b": 2}, {}, {}]"#)
        );
        assert_eq!(run.regions[1].event_metadata, None, "no call of this row is in a scope");
    }

    #[test]
    fn matches_the_reference_rule_on_overlapping_scopes() {
        // scopes of several threads overlap arbitrarily; equal widths keep exit order
        let defs: Vec<RefScope<'_>> = vec![
            (0, 100, vec![("a", 1), ("b", 1)]),
            (20, 60, vec![("b", 2), ("c", 2)]),
            (40, 80, vec![("c", 3), ("a", 3)]),
            (45, 85, vec![("d", 4)]),
            (50, 55, vec![("a", 5)]),
            (10, 50, vec![("e", 6)]),
        ];
        let mut calls = Vec::new();
        for s in (0..100).step_by(5) {
            for len in [0, 3, 7, 20, 45] {
                calls.push((s, s + len));
            }
        }
        let mut run = run_of(&[&calls]);
        let scopes: Vec<MetadataScope> = defs
            .iter()
            .map(|(s, e, kv)| scope(*s, *e, &text_of(&kv.iter().map(|(k, v)| (k.to_string(), *v)).collect::<Vec<_>>())))
            .collect();
        apply(&mut run, &scopes);
        let expected: Vec<String> = reference_rule(&calls, &defs).iter().map(|d| text_of(d)).collect();
        assert_eq!(run.regions[0].event_metadata.as_deref(), Some(format!("[{}]", expected.join(", ")).as_str()));
    }

    #[test]
    fn keys_are_compared_decoded_and_written_as_given() {
        let mut run = run_of(&[&[(1, 2)]]);
        apply(&mut run, &[scope(0, 10, r#"{"\u00e9": 1, "k": [1, 2]}"#), scope(1, 2, r#"{"é": NaN}"#)]);
        assert_eq!(run.regions[0].event_metadata.as_deref(), Some(r#"[{"\u00e9": NaN, "k": [1, 2]}]"#));
    }

    #[test]
    fn existing_flags_are_kept() {
        let mut run = run_of(&[&[(1, 2), (3, 9)]]);
        run.regions[0].event_metadata = Some(r#"[{}, {"open_at_finalize": true}]"#.into());
        apply(&mut run, &[scope(0, 10, r#"{"a": 1}"#)]);
        assert_eq!(run.regions[0].event_metadata.as_deref(), Some(r#"[{"a": 1}, {"open_at_finalize": true, "a": 1}]"#));
    }

    #[test]
    fn one_scope_per_call_inside_a_wide_one_is_not_quadratic() {
        // `@profile(metadata=...)` on a hot function inside a run-wide block: 200k scopes
        let n = 200_000i64;
        let calls: Vec<(i64, i64)> = (0..n).map(|i| (10 * i + 2, 10 * i + 8)).collect();
        let mut run = run_of(&[&calls]);
        let mut scopes: Vec<MetadataScope> = (0..n).map(|i| scope(10 * i + 1, 10 * i + 9, r#"{"i": 0}"#)).collect();
        scopes.push(scope(0, 10 * n, r#"{"run": 1}"#));
        let t = std::time::Instant::now();
        apply(&mut run, &scopes);
        assert!(t.elapsed().as_secs_f64() < 5.0, "{:?}", t.elapsed());
        let text = run.regions[0].event_metadata.as_deref().unwrap();
        assert!(text.starts_with(r#"[{"run": 1, "i": 0}, {"run": 1, "i": 0}"#));
        assert_eq!(text.matches(r#"{"run": 1, "i": 0}"#).count(), n as usize);
    }

    #[test]
    fn store_retires_the_oldest_and_drops_empty_scopes() {
        let store = MetadataScopes::default();
        store.push(scope(0, 1, "{}"));
        store.push(scope(0, 1, r#"{"a": 1}"#));
        store.push(scope(2, 3, r#"{"b": 1}"#));
        assert_eq!(store.len(), 2);
        let taken = store.taken();
        store.push(scope(4, 5, r#"{"c": 1}"#));
        store.retire(taken.len());
        assert_eq!(store.taken(), vec![scope(4, 5, r#"{"c": 1}"#)]);
        store.retire(10);
        assert!(store.is_empty());
    }

    #[test]
    fn bad_values_are_an_error_naming_them() {
        let err = MetadataScope::new(0, 1, "[1, 2]").unwrap_err();
        assert_eq!(err.to_string(), "metadata values are not a JSON object (expected '{' at byte 0): [1, 2]");
    }

    #[test]
    fn non_finite_floats_and_lone_surrogates_are_stored_as_python_wrote_them() {
        // `json.dumps({"v": nan, "w": inf, "x": -inf, "\ud800": "\udc00"})`
        let values = r#"{"v": NaN, "w": Infinity, "x": -Infinity, "\ud800": "\udc00"}"#;
        let mut run = run_of(&[&[(10, 20)]]);
        apply(&mut run, &[scope(0, 100, values), scope(5, 50, r#"{"\ud800": 1}"#)]);
        let stored = run.regions[0].event_metadata.clone().unwrap();
        assert_eq!(stored, r#"[{"v": NaN, "w": Infinity, "x": -Infinity, "\ud800": 1}]"#);
        assert_eq!(call_metadata::calls(&stored).unwrap().len(), 1, "read back as one object per call");
        // what a reader could not take back is refused when the block ends
        assert!(MetadataScope::new(0, 1, r#"{"v": Nan}"#).is_err());
    }
}
