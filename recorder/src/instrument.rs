//! `ProfileManager.instrument(module, include=, exclude=, prefix=)`: which of a module's
//! functions are decorated, and under which region name (the reference's rules).

use crate::trace_select::fnmatch;

/// The functions of `names` (a module's own functions, in its order) that `instrument`
/// decorates, with their region names: a name matching a glob of `include` (Python's
/// `fnmatch.fnmatchcase`; none given: none) and none of `exclude`, named
/// `"{prefix}.{name}"`, or `"{module}.{name}"` without a prefix (or an empty one).
pub fn instrumented(
    names: &[String],
    include: &[String],
    exclude: &[String],
    prefix: Option<&str>,
    module: &str,
) -> Vec<(String, String)> {
    let owner = prefix.filter(|p| !p.is_empty()).unwrap_or(module);
    names
        .iter()
        .filter(|n| include.iter().any(|p| fnmatch(n, p)) && !exclude.iter().any(|p| fnmatch(n, p)))
        .map(|n| (n.clone(), format!("{owner}.{n}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn include_then_exclude_then_names() {
        let names = strings(&["alpha", "beta", "_private", "gamma"]);
        let got = instrumented(&names, &strings(&["a*", "b*", "_*"]), &strings(&["_*"]), Some("pre"), "mymod");
        assert_eq!(got, [("alpha".into(), "pre.alpha".into()), ("beta".into(), "pre.beta".into())]);
        let got = instrumented(&names, &strings(&["*"]), &[], Some(""), "mymod");
        assert_eq!(got.len(), 4);
        assert_eq!(got[3].1, "mymod.gamma");
        assert!(instrumented(&names, &[], &[], None, "m").is_empty(), "no include glob: nothing");
    }
}
