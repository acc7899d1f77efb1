"""Notebook display: small HTML tables for ``_repr_html_``."""

from __future__ import annotations

import html
from typing import Any


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (tuple, list)):
        return html.escape(", ".join(map(str, value)))
    return html.escape("" if value is None else str(value))


def table_html(rows: list[dict], columns: list[str] | None = None) -> str:
    """An HTML table of dict rows (columns: the first row's keys unless given)."""
    if not rows:
        return "<p><i>(no rows)</i></p>"
    columns = list(rows[0]) if columns is None else columns
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(row.get(c))}</td>" for c in columns) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def summary_html(title: str, rows: list[dict], columns: list[str] | None = None) -> str:
    return f"<div><b>{html.escape(title)}</b>{table_html(rows, columns)}</div>"
