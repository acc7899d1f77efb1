//! `runs.parquet`: one row per run of a dataset. Fixed columns first — `run` (the identity,
//! [`super::run_id`]), `path` (the file it was read from, absolute), `label` (metadata
//! `label`, else the file stem), `host` (metadata `hostname`, recorded with
//! `metadata_detail="full"`), `start_time` (metadata `timestamp` as a UTC timestamp), the
//! counts `num_ranks`, `num_calls`, `num_threads`, `num_tasks` — then every recorded metadata
//! attribute as a column of its own, in order of first appearance (`label` aside; a name
//! that is a fixed column's gets `meta_` before it), null for runs that lack it. A column
//! whose values are all integers is int64; integers and floats, float64; text, utf8; string
//! lists, list<utf8>; a mix of kinds, utf8 (JSON text for non-strings).
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, TimestampNanosecondType};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, TimestampNanosecondArray};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use scope_profiler_analysis::MetaValue;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::DatasetError;

/// One run's row. Serializable: a worker process converting a run hands it to the process
/// that writes `runs.parquet` as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub run: String,
    pub path: String,
    pub label: String,
    pub host: Option<String>,
    /// Wall clock at the run's setup, ns since the Unix epoch (UTC).
    pub start_time: Option<i64>,
    pub num_ranks: i64,
    pub num_calls: i64,
    pub num_threads: i64,
    pub num_tasks: i64,
    /// The recorded metadata attributes, in file order, but `label` (in [`RunRow::label`]).
    pub metadata: Vec<(String, Value)>,
}

const FIXED: [&str; 9] =
    ["run", "path", "label", "host", "start_time", "num_ranks", "num_calls", "num_threads", "num_tasks"];

/// A metadata value as JSON (a non-finite float is null).
pub fn meta_json(v: &MetaValue) -> Value {
    match v {
        MetaValue::Int(i) => Value::from(*i),
        MetaValue::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number).unwrap_or(Value::Null),
        MetaValue::Str(s) => Value::from(s.as_str()),
        MetaValue::StrList(l) => Value::from(l.clone()),
    }
}

/// `2026-12-06T07:13:12.335695+00:00` (also `Z`, no offset = UTC, no fraction, a space
/// for `T`) as ns since the Unix epoch; `None` for anything else.
pub fn parse_iso_timestamp(s: &str) -> Option<i64> {
    let s = s.trim();
    let num = |a: usize, b: usize| -> Option<i64> {
        let t = s.get(a..b)?;
        t.bytes().all(|c| c.is_ascii_digit()).then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, mi, sec) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if s.get(4..5)? != "-" || s.get(7..8)? != "-" || !matches!(s.get(10..11)?, "T" | " ") || !(1..=12).contains(&mo) {
        return None;
    }
    let mut rest = &s[19..];
    let mut frac_ns = 0i64;
    if let Some(f) = rest.strip_prefix('.') {
        let digits = f.bytes().take_while(u8::is_ascii_digit).count();
        let mut text: String = f[..digits].chars().take(9).collect();
        while text.len() < 9 {
            text.push('0');
        }
        frac_ns = text.parse().ok()?;
        rest = &f[digits..];
    }
    let offset_s = match rest {
        "" | "Z" => 0,
        o if o.len() == 6 && matches!(&o[..1], "+" | "-") && &o[3..4] == ":" => {
            let v = o[1..3].parse::<i64>().ok()? * 3600 + o[4..6].parse::<i64>().ok()? * 60;
            if o.starts_with('-') {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    // days from civil (Howard Hinnant's algorithm)
    let yy = if mo <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * (if mo > 2 { mo - 3 } else { mo + 9 }) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_s;
    Some(secs * 1_000_000_000 + frac_ns)
}

/// The Arrow column of one metadata key over `rows` (see the module documentation).
fn meta_column(key: &str, rows: &[RunRow]) -> ArrayRef {
    let values: Vec<Option<&Value>> = rows
        .iter()
        .map(|r| r.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v).filter(|v| !v.is_null()))
        .collect();
    let present = || values.iter().flatten();
    if present().all(|v| v.is_i64()) {
        return Arc::new(values.iter().map(|v| v.and_then(Value::as_i64)).collect::<Int64Array>());
    }
    if present().all(|v| v.is_number()) {
        return Arc::new(values.iter().map(|v| v.and_then(Value::as_f64)).collect::<Float64Array>());
    }
    if present().all(|v| v.as_array().is_some_and(|a| a.iter().all(Value::is_string))) {
        let mut b = ListBuilder::new(StringBuilder::new());
        for v in &values {
            match v.and_then(Value::as_array) {
                Some(items) => {
                    items.iter().for_each(|s| b.values().append_option(s.as_str()));
                    b.append(true);
                }
                None => b.append(false),
            }
        }
        return Arc::new(b.finish());
    }
    let text = |v: &Value| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
    Arc::new(values.iter().map(|v| v.map(text)).collect::<StringArray>())
}

/// The runs table of `rows` (in this order).
pub fn runs_batch(rows: &[RunRow]) -> Result<RecordBatch, DatasetError> {
    let strs = |g: fn(&RunRow) -> Option<&str>| -> ArrayRef { Arc::new(rows.iter().map(g).collect::<StringArray>()) };
    let ints = |g: fn(&RunRow) -> i64| -> ArrayRef { Arc::new(rows.iter().map(g).collect::<Int64Array>()) };
    let start: TimestampNanosecondArray = rows.iter().map(|r| r.start_time).collect();
    let mut fields = vec![
        Field::new("run", DataType::Utf8, false),
        Field::new("path", DataType::Utf8, false),
        Field::new("label", DataType::Utf8, false),
        Field::new("host", DataType::Utf8, true),
        Field::new("start_time", DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())), true),
    ];
    fields.extend(FIXED[5..].iter().map(|n| Field::new(*n, DataType::Int64, false)));
    let mut cols: Vec<ArrayRef> = vec![
        strs(|r| Some(&r.run)),
        strs(|r| Some(&r.path)),
        strs(|r| Some(&r.label)),
        strs(|r| r.host.as_deref()),
        Arc::new(start.with_timezone("UTC")),
        ints(|r| r.num_ranks),
        ints(|r| r.num_calls),
        ints(|r| r.num_threads),
        ints(|r| r.num_tasks),
    ];
    let mut keys: Vec<&str> = Vec::new();
    for (k, _) in rows.iter().flat_map(|r| &r.metadata) {
        if !keys.contains(&k.as_str()) {
            keys.push(k);
        }
    }
    for key in keys {
        let col = meta_column(key, rows);
        let name = if FIXED.contains(&key) { format!("meta_{key}") } else { key.to_string() };
        fields.push(Field::new(name, col.data_type().clone(), true));
        cols.push(col);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).map_err(|e| DatasetError::new(format!("arrow: {e}")))
}

/// Value `i` of a metadata column as JSON (`None` when null or of an unknown type).
fn column_value(col: &dyn Array, i: usize) -> Option<Value> {
    if col.is_null(i) {
        return None;
    }
    Some(match col.data_type() {
        DataType::Int64 => Value::from(col.as_primitive::<Int64Type>().value(i)),
        DataType::Float64 => serde_json::Number::from_f64(col.as_primitive::<Float64Type>().value(i))
            .map(Value::Number)
            .unwrap_or(Value::Null),
        DataType::Utf8 => Value::from(col.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => Value::from(col.as_string::<i64>().value(i)),
        DataType::List(_) => {
            let items = col.as_list::<i32>().value(i);
            let items = items.as_string_opt::<i32>()?;
            Value::from(items.iter().map(|s| s.unwrap_or("").to_string()).collect::<Vec<_>>())
        }
        _ => return None,
    })
}

/// The rows of one batch of a runs table.
fn rows_of(batch: &RecordBatch, path: &Path) -> Result<Vec<RunRow>, DatasetError> {
    let bad = || DatasetError::new(format!("{} is not a runs table of a dataset", path.display()));
    let col = |n: &str| batch.column_by_name(n).ok_or_else(bad);
    let text =
        |n: &str| -> Result<StringArray, DatasetError> { col(n)?.as_string_opt::<i32>().cloned().ok_or_else(bad) };
    let int = |n: &str| -> Result<Int64Array, DatasetError> {
        col(n)?.as_primitive_opt::<Int64Type>().cloned().ok_or_else(bad)
    };
    let (run, file, label, host) = (text("run")?, text("path")?, text("label")?, text("host")?);
    let start = col("start_time")?.as_primitive_opt::<TimestampNanosecondType>().cloned().ok_or_else(bad)?;
    let counts = [int("num_ranks")?, int("num_calls")?, int("num_threads")?, int("num_tasks")?];
    let schema = batch.schema();
    let meta_cols: Vec<(String, &ArrayRef)> = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .filter(|(f, _)| !FIXED.contains(&f.name().as_str()))
        .map(|(f, c)| (f.name().clone(), c))
        .collect();
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let metadata: Vec<(String, Value)> =
            meta_cols.iter().filter_map(|(n, c)| column_value(c.as_ref(), i).map(|v| (n.clone(), v))).collect();
        out.push(RunRow {
            run: run.value(i).to_string(),
            path: file.value(i).to_string(),
            label: label.value(i).to_string(),
            host: host.is_valid(i).then(|| host.value(i).to_string()),
            start_time: start.is_valid(i).then(|| start.value(i)),
            num_ranks: counts[0].value(i),
            num_calls: counts[1].value(i),
            num_threads: counts[2].value(i),
            num_tasks: counts[3].value(i),
            metadata,
        });
    }
    Ok(out)
}

/// The rows of the runs table at `path`.
pub fn read_runs(path: &Path) -> Result<Vec<RunRow>, DatasetError> {
    let err = |e: &dyn std::fmt::Display| DatasetError::new(format!("could not read {}: {e}", path.display()));
    let file = File::open(path).map_err(|e| err(&e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| err(&e))?.build().map_err(|e| err(&e))?;
    let mut rows = Vec::new();
    for batch in reader {
        rows.extend(rows_of(&batch.map_err(|e| err(&e))?, path)?);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_timestamps() {
        assert_eq!(parse_iso_timestamp("1970-01-01T00:00:00+00:00"), Some(0));
        assert_eq!(parse_iso_timestamp("1970-01-02T00:00:01.5Z"), Some(86_401_500_000_000));
        // 2026-12-06T07:13:12.335695 UTC: 20,793 days after the epoch
        assert_eq!(
            parse_iso_timestamp("2026-12-06T07:13:12.335695+00:00"),
            Some((20_793 * 86_400 + 7 * 3600 + 13 * 60 + 12) * 1_000_000_000 + 335_695_000)
        );
        assert_eq!(parse_iso_timestamp("2000-03-01 01:00:00+01:00"), Some(951_868_800 * 1_000_000_000));
        for bad in ["", "yesterday", "2026-13-01T00:00:00", "2026-12-06T07:13:12+0000", "2026-12-06"] {
            assert_eq!(parse_iso_timestamp(bad), None, "{bad}");
        }
    }
}
