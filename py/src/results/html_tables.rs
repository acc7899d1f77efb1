//! Notebook display: small HTML tables for `_repr_html_`. Durations are written in the unit
//! that shows them and other floats rounded ([`scope_profiler_analysis::figures`]); a
//! table shows at most [`NOTEBOOK_ROWS`] rows, in the summaries' order
//! ([`scope_profiler_analysis::summary_order`]), and counts the rest.
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyTuple};
use scope_profiler_analysis::figures::{duration_text, float_repr};
use scope_profiler_analysis::summary_order::{order_of, split_at_limit, OrderKeys, NOTEBOOK_ROWS};
use scope_profiler_analysis::SortKey;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#x27;")
}

/// Whether column `name` holds a duration in s (`total_duration`, `wall_time`, ...).
fn is_duration(name: &str) -> bool {
    name.ends_with("_duration") || name.ends_with("_time") || name.ends_with("_total")
}

fn cell(column: &str, value: Option<Bound<'_, PyAny>>) -> PyResult<String> {
    let Some(v) = value.filter(|v| !v.is_none()) else {
        return Ok(String::new());
    };
    if let Ok(f) = v.cast::<PyFloat>() {
        let f = f.value();
        return Ok(escape(&if is_duration(column) { duration_text(f) } else { float_repr(f) }));
    }
    if v.is_instance_of::<PyTuple>() || v.is_instance_of::<PyList>() {
        let parts: Vec<String> =
            v.try_iter()?.map(|x| x.and_then(|x| Ok(x.str()?.to_string()))).collect::<PyResult<_>>()?;
        return Ok(escape(&parts.join(", ")));
    }
    Ok(escape(&v.str()?.to_string()))
}

/// `<div><b>title</b><table>...</table></div>` of dict rows (columns: the first row's keys
/// unless given; `(no rows)` when empty). `more`: a line under the table saying what it
/// leaves out.
pub fn summary_html(
    _py: Python<'_>,
    title: &str,
    rows: &[Bound<'_, PyDict>],
    columns: Option<&[&str]>,
    more: Option<String>,
) -> PyResult<String> {
    let mut table = String::new();
    if rows.is_empty() {
        table.push_str("<p><i>(no rows)</i></p>");
    } else {
        let cols: Vec<String> = match columns {
            Some(c) => c.iter().map(|s| s.to_string()).collect(),
            None => rows[0].keys().iter().map(|k| k.str().map(|s| s.to_string())).collect::<PyResult<_>>()?,
        };
        table.push_str("<table><thead><tr>");
        for c in &cols {
            table.push_str(&format!("<th>{}</th>", escape(c)));
        }
        table.push_str("</tr></thead><tbody>");
        for row in rows {
            table.push_str("<tr>");
            for c in &cols {
                table.push_str(&format!("<td>{}</td>", cell(c, row.get_item(c)?)?));
            }
            table.push_str("</tr>");
        }
        table.push_str("</tbody></table>");
    }
    if let Some(more) = more {
        table.push_str(&format!("<p><i>{}</i></p>", escape(&more)));
    }
    Ok(format!("<div><b>{}</b>{table}</div>", escape(title)))
}

/// The first [`NOTEBOOK_ROWS`] of region summary dict `rows` by inclusive time, and how
/// many more there are.
pub fn top_region_rows<'py>(rows: Vec<Bound<'py, PyDict>>) -> PyResult<(Vec<Bound<'py, PyDict>>, usize)> {
    let float = |d: &Bound<'py, PyDict>, k: &str| -> PyResult<Option<f64>> {
        d.get_item(k)?.filter(|v| !v.is_none()).map(|v| v.extract::<f64>()).transpose()
    };
    let mut keys = Vec::with_capacity(rows.len());
    let mut names = Vec::with_capacity(rows.len());
    for d in &rows {
        names.push(d.get_item("name")?.map(|v| v.str().map(|s| s.to_string())).transpose()?.unwrap_or_default());
        let calls: usize = d.get_item("num_calls")?.map(|v| v.extract()).transpose()?.unwrap_or(0);
        keys.push((
            calls,
            float(d, "total_duration")?.unwrap_or(0.0),
            float(d, "exclusive_duration")?,
            float(d, "average_duration")?.unwrap_or(0.0),
        ));
    }
    let order_keys: Vec<OrderKeys<'_>> = keys
        .iter()
        .zip(&names)
        .map(|(&(calls, total, exclusive, mean), name)| OrderKeys {
            name,
            calls,
            total_ns: total,
            exclusive_ns: exclusive,
            mean_ns: mean,
        })
        .collect();
    let (shown, rest) = split_at_limit(order_of(&order_keys, SortKey::Total), Some(NOTEBOOK_ROWS));
    Ok((shown.into_iter().map(|k| rows[k].clone()).collect(), rest.len()))
}
