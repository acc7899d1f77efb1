//! Notebook display: small HTML tables for `_repr_html_`.
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyTuple};
use scope_profiler_analysis::py_format_g;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#x27;")
}

fn cell(value: Option<Bound<'_, PyAny>>) -> PyResult<String> {
    let Some(v) = value.filter(|v| !v.is_none()) else {
        return Ok(String::new());
    };
    if let Ok(f) = v.cast::<PyFloat>() {
        return Ok(py_format_g(f.value(), 6));
    }
    if v.is_instance_of::<PyTuple>() || v.is_instance_of::<PyList>() {
        let parts: Vec<String> =
            v.try_iter()?.map(|x| x.and_then(|x| Ok(x.str()?.to_string()))).collect::<PyResult<_>>()?;
        return Ok(escape(&parts.join(", ")));
    }
    Ok(escape(&v.str()?.to_string()))
}

/// `<div><b>title</b><table>...</table></div>` of dict rows (columns: the first row's keys
/// unless given; `(no rows)` when empty).
pub fn summary_html(
    _py: Python<'_>,
    title: &str,
    rows: &[Bound<'_, PyDict>],
    columns: Option<&[&str]>,
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
                table.push_str(&format!("<td>{}</td>", cell(row.get_item(c)?)?));
            }
            table.push_str("</tr>");
        }
        table.push_str("</tbody></table>");
    }
    Ok(format!("<div><b>{}</b>{table}</div>", escape(title)))
}
