//! Which `sys.monitoring` tool id function-level tracing takes (3.12+), and what it says
//! when it cannot take a free one. CPython names four of its six ids after the tools that
//! claim them (`DEBUGGER_ID` 0, `COVERAGE_ID` 1, `PROFILER_ID` 2 — cProfile's —,
//! `OPTIMIZER_ID` 5); the tracer takes an unnamed one (3, then 4) so that those tools start
//! beside it, and only when both are held another free id, with a warning.

/// The ids tried first: the two CPython leaves unnamed.
pub const UNNAMED: [u8; 2] = [3, 4];

/// The named ids tried after them, in this order (the least likely to be claimed later
/// first), with their `sys.monitoring` names.
pub const NAMED: [(u8, &str); 4] = [(5, "OPTIMIZER_ID"), (2, "PROFILER_ID"), (1, "COVERAGE_ID"), (0, "DEBUGGER_ID")];

/// The tool id to take, given which ids are in use (`in_use(id)`: `sys.monitoring.get_tool(id)`
/// is not None): `Ok((id, None))` for an unnamed id, `Ok((id, Some(warning)))` for a named
/// one, `Err(message)` when all six are held (`holders`: the name of the tool at each id,
/// for the message).
pub fn choose(in_use: impl Fn(u8) -> bool, holders: impl Fn(u8) -> String) -> Result<(u8, Option<String>), String> {
    if let Some(id) = UNNAMED.into_iter().find(|&id| !in_use(id)) {
        return Ok((id, None));
    }
    if let Some((id, name)) = NAMED.into_iter().find(|&(id, _)| !in_use(id)) {
        return Ok((id, Some(named_warning(id, name, &holders))));
    }
    let held: Vec<String> = (0..6).map(|id| format!("{id}: {}", holders(id))).collect();
    Err(format!(
        "function-level tracing needs a free sys.monitoring tool id, and all six are in use ({}); \
         stop one of those tools, or run without recursive profiling",
        held.join(", ")
    ))
}

fn named_warning(id: u8, name: &str, holders: &impl Fn(u8) -> String) -> String {
    format!(
        "function-level tracing took sys.monitoring tool id {id} ({name}): the unnamed ids 3 and 4 are \
         held ({}, {}); a tool that asks for sys.monitoring.{name} while this recording traces will \
         fail with ValueError",
        holders(3),
        holders(4)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(ids: &'static [u8]) -> impl Fn(u8) -> bool {
        move |id| ids.contains(&id)
    }

    fn names(id: u8) -> String {
        format!("'tool{id}'")
    }

    #[test]
    fn an_unnamed_id_first_so_cprofile_and_coverage_start_beside_it() {
        assert_eq!(choose(held(&[]), names), Ok((3, None)));
        assert_eq!(choose(held(&[1, 2]), names), Ok((3, None)));
        assert_eq!(choose(held(&[0, 1, 2, 3, 5]), names), Ok((4, None)));
    }

    #[test]
    fn a_named_id_only_when_both_unnamed_ones_are_held_with_a_warning() {
        let (id, warning) = choose(held(&[3, 4]), names).unwrap();
        assert_eq!(id, 5);
        assert_eq!(
            warning.unwrap(),
            "function-level tracing took sys.monitoring tool id 5 (OPTIMIZER_ID): the unnamed ids 3 and 4 \
             are held ('tool3', 'tool4'); a tool that asks for sys.monitoring.OPTIMIZER_ID while this \
             recording traces will fail with ValueError"
        );
        assert_eq!(choose(held(&[3, 4, 5]), names).unwrap().0, 2);
        assert_eq!(choose(held(&[2, 3, 4, 5]), names).unwrap().0, 1);
        assert_eq!(choose(held(&[1, 2, 3, 4, 5]), names).unwrap().0, 0);
    }

    #[test]
    fn all_six_held_is_an_error_naming_each_holder() {
        let err = choose(held(&[0, 1, 2, 3, 4, 5]), names).unwrap_err();
        assert!(err.starts_with("function-level tracing needs a free sys.monitoring tool id"), "{err}");
        assert!(err.contains("(0: 'tool0', 1: 'tool1', 2: 'tool2', 3: 'tool3', 4: 'tool4', 5: 'tool5')"), "{err}");
    }
}
