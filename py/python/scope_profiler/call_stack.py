"""Call-stack reconstruction (spec-callstack): regions store ``(start_ns, end_ns)`` per call;
nesting is recovered from containment per lane (a thread, or a task / greenlet on one), in
Rust: one sort by ``(start, -end, input position)`` and one stack walk per lane."""

from __future__ import annotations

from ._native import (
    CallArrays,
    LaneSplit,
    NestingError,
    build_call_arrays,
    build_call_stack,
    call_stack_children,
    call_stack_roots,
    lane_groups,
    split_by_lane,
)

__all__ = [
    "CallArrays",
    "LaneSplit",
    "NestingError",
    "build_call_arrays",
    "build_call_stack",
    "call_stack_children",
    "call_stack_roots",
    "lane_groups",
    "split_by_lane",
]
