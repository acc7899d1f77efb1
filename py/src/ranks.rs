//! Runs that cross process boundaries: a compact binary encoding of a [`Run`] (what an MPI
//! rank sends to rank 0 at `finalize()`, as one pickle-free byte buffer) and
//! [`scope_profiler_analysis::merge_runs`] seen from Python (the ranks of a job into one
//! run; per-process files analysed together).
//!
//! Encoding (little-endian): magic `b"SPRUN\x01"`, then the region names, the rows (every
//! column as raw `i64`s, optional columns flagged), the thread and task tables, the
//! metadata and `num_ranks`. It is a transport between processes of one job running the
//! same package build, not a file format.
use std::path::PathBuf;

use arrow_array::Int64Array;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use scope_profiler_analysis::{merge_runs, MergeOptions, MetaValue, RegionCalls, Run, TaskRow, ThreadRow};

use crate::errors::h5_err;
use crate::convert::meta_from_py;
use crate::run::NativeRun;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_run_to_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(_run_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(_stack_runs, m)?)?;
    Ok(())
}

const MAGIC: &[u8; 6] = b"SPRUN\x01";

struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt_str(&mut self, s: &Option<String>) {
        match s {
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
            None => self.u8(0),
        }
    }
    fn opt_i64(&mut self, v: Option<i64>) {
        match v {
            Some(v) => {
                self.u8(1);
                self.i64(v);
            }
            None => self.u8(0),
        }
    }
    fn col(&mut self, a: &Int64Array) {
        self.0.reserve(a.len() * 8);
        for v in a.values().iter() {
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }
}

struct Dec<'a> {
    b: &'a [u8],
    pos: usize,
}

type D<T> = Result<T, String>;

impl<'a> Dec<'a> {
    fn take(&mut self, n: usize) -> D<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or("truncated run encoding")?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> D<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> D<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> D<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn len(&mut self) -> D<usize> {
        usize::try_from(self.u64()?).map_err(|_| "length out of range".to_string())
    }
    fn i64(&mut self) -> D<i64> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn f64(&mut self) -> D<f64> {
        Ok(f64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn str(&mut self) -> D<String> {
        let n = self.len()?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| "invalid UTF-8 in run encoding".to_string())
    }
    fn opt_str(&mut self) -> D<Option<String>> {
        Ok(if self.u8()? != 0 { Some(self.str()?) } else { None })
    }
    fn opt_i64(&mut self) -> D<Option<i64>> {
        Ok(if self.u8()? != 0 { Some(self.i64()?) } else { None })
    }
    fn col(&mut self, n: usize) -> D<Int64Array> {
        let bytes = self.take(n.checked_mul(8).ok_or("length out of range")?)?;
        Ok(Int64Array::from(
            bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect::<Vec<i64>>(),
        ))
    }
}

/// The run as bytes (see the module docs).
pub fn encode_run(run: &Run) -> Vec<u8> {
    let events: usize = run.regions.iter().map(|r| r.len()).sum();
    let mut e = Enc(Vec::with_capacity(64 + events * 8 * 6));
    e.0.extend_from_slice(MAGIC);
    e.u64(run.region_names.len() as u64);
    for n in &run.region_names {
        e.str(n);
    }
    e.u64(run.regions.len() as u64);
    for r in &run.regions {
        e.u32(r.region);
        e.u32(r.rank);
        e.u64(r.len() as u64);
        let (call_ids, parent_ids) =
            (r.call_ids.as_ref().map(|c| c.to_array()), r.parent_ids.as_ref().map(|c| c.to_array()));
        let opt = [&r.gpu_ns, &call_ids, &parent_ids, &r.thread_ids, &r.task_ids, &r.await_ns];
        let mut flags = 0u8;
        for (bit, c) in opt.iter().enumerate() {
            if c.is_some() {
                flags |= 1 << bit;
            }
        }
        e.u8(flags);
        e.col(&r.start_ns);
        e.col(&r.end_ns);
        for c in opt.into_iter().flatten() {
            e.col(c);
        }
        e.opt_str(&r.source_file);
        e.opt_i64(r.source_line);
        e.opt_str(&r.source_text);
        e.u64(r.tags.len() as u64);
        for t in &r.tags {
            e.str(t);
        }
        e.opt_str(&r.event_metadata);
        e.opt_i64(r.exclusive_total_ns);
    }
    e.u64(run.threads.len() as u64);
    for t in &run.threads {
        e.u32(t.rank);
        for v in [t.index, t.ident, t.native_id, t.start_ns, t.end_ns, t.cpu_ns] {
            e.i64(v);
        }
        e.u8(t.daemon as u8);
        e.str(&t.name);
    }
    e.u64(run.tasks.len() as u64);
    for t in &run.tasks {
        e.u32(t.rank);
        for v in [t.index, t.thread_index, t.created_ns, t.done_ns, t.steps, t.running_ns, t.suspended_ns] {
            e.i64(v);
        }
        e.str(&t.kind);
        e.str(&t.name);
        e.str(&t.coro_name);
    }
    e.u64(run.metadata.len() as u64);
    for (k, v) in &run.metadata {
        e.str(k);
        match v {
            MetaValue::Int(i) => {
                e.u8(0);
                e.i64(*i);
            }
            MetaValue::Float(f) => {
                e.u8(1);
                e.f64(*f);
            }
            MetaValue::Str(s) => {
                e.u8(2);
                e.str(s);
            }
            MetaValue::StrList(l) => {
                e.u8(3);
                e.u64(l.len() as u64);
                for s in l {
                    e.str(s);
                }
            }
        }
    }
    e.u32(run.num_ranks);
    e.0
}

/// Inverse of [`encode_run`]. Errors on anything but a complete, well-formed encoding.
pub fn decode_run(bytes: &[u8]) -> Result<Run, String> {
    let mut d = Dec { b: bytes, pos: 0 };
    if d.take(MAGIC.len())? != MAGIC {
        return Err("not a scope-profiler run encoding".into());
    }
    let mut run = Run::default();
    for _ in 0..d.len()? {
        run.region_names.push(d.str()?);
    }
    for _ in 0..d.len()? {
        let region = d.u32()?;
        let rank = d.u32()?;
        let n = d.len()?;
        let flags = d.u8()?;
        let start_ns = d.col(n)?;
        let end_ns = d.col(n)?;
        let mut opt: [Option<Int64Array>; 6] = Default::default();
        for (bit, slot) in opt.iter_mut().enumerate() {
            if flags & (1 << bit) != 0 {
                *slot = Some(d.col(n)?);
            }
        }
        let [gpu_ns, call_ids, parent_ids, thread_ids, task_ids, await_ns] = opt;
        let source_file = d.opt_str()?;
        let source_line = d.opt_i64()?;
        let source_text = d.opt_str()?;
        let mut tags = Vec::new();
        for _ in 0..d.len()? {
            tags.push(d.str()?);
        }
        let event_metadata = d.opt_str()?;
        let exclusive_total_ns = d.opt_i64()?;
        if region as usize >= run.region_names.len() {
            return Err(format!("row refers to region id {region} of {} names", run.region_names.len()));
        }
        run.regions.push(RegionCalls {
            region,
            rank,
            start_ns,
            end_ns,
            gpu_ns,
            call_ids: call_ids.map(Into::into),
            parent_ids: parent_ids.map(Into::into),
            thread_ids,
            task_ids,
            await_ns,
            source_file,
            source_line,
            source_text,
            tags,
            event_metadata,
            exclusive_total_ns,
            stored: None,
        });
    }
    for _ in 0..d.len()? {
        let rank = d.u32()?;
        let (index, ident, native_id, start_ns, end_ns, cpu_ns) =
            (d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?);
        let daemon = d.u8()? != 0;
        let name = d.str()?;
        run.threads.push(ThreadRow { rank, index, ident, native_id, daemon, start_ns, end_ns, cpu_ns, name });
    }
    for _ in 0..d.len()? {
        let rank = d.u32()?;
        let (index, thread_index, created_ns, done_ns, steps, running_ns, suspended_ns) =
            (d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?);
        let (kind, name, coro_name) = (d.str()?, d.str()?, d.str()?);
        run.tasks.push(TaskRow {
            rank,
            index,
            thread_index,
            created_ns,
            done_ns,
            steps,
            running_ns,
            suspended_ns,
            kind,
            name,
            coro_name,
        });
    }
    for _ in 0..d.len()? {
        let key = d.str()?;
        let value = match d.u8()? {
            0 => MetaValue::Int(d.i64()?),
            1 => MetaValue::Float(d.f64()?),
            2 => MetaValue::Str(d.str()?),
            3 => {
                let mut l = Vec::new();
                for _ in 0..d.len()? {
                    l.push(d.str()?);
                }
                MetaValue::StrList(l)
            }
            t => return Err(format!("unknown metadata tag {t}")),
        };
        run.metadata.push((key, value));
    }
    run.num_ranks = d.u32()?;
    if d.pos != bytes.len() {
        return Err("trailing bytes after the run encoding".into());
    }
    Ok(run)
}

/// A run given as a `NativeRun` or as the bytes of [`encode_run`] (any buffer).
fn run_of(obj: &Bound<'_, PyAny>) -> PyResult<Run> {
    if let Ok(native) = obj.cast::<NativeRun>() {
        return Ok((*native.get().run).clone());
    }
    let buf = PyBuffer::<u8>::get(obj)?;
    if !buf.is_c_contiguous() {
        return Err(PyValueError::new_err("run bytes must be a contiguous buffer"));
    }
    // SAFETY: a C-contiguous u8 buffer of `len_bytes()` bytes, alive while `buf` is held
    // (and the GIL: nothing else mutates it meanwhile).
    let bytes = unsafe { std::slice::from_raw_parts(buf.buf_ptr() as *const u8, buf.len_bytes()) };
    decode_run(bytes).map_err(|e| PyValueError::new_err(format!("cannot decode a run: {e}")))
}

/// `NativeRun` -> bytes (pickle-free transport between processes of one job).
#[pyfunction]
fn _run_to_bytes<'py>(py: Python<'py>, native: &Bound<'py, NativeRun>) -> Bound<'py, PyBytes> {
    let bytes = encode_run(&native.get().run);
    PyBytes::new(py, &bytes)
}

/// Bytes (any buffer) -> `NativeRun`.
#[pyfunction]
#[pyo3(signature = (data, file_path=String::new()))]
fn _run_from_bytes(data: &Bound<'_, PyAny>, file_path: String) -> PyResult<NativeRun> {
    Ok(NativeRun::new(run_of(data)?, file_path))
}

/// Stack runs as blocks of ranks ([`merge_runs`], no union): `parts` is a list of `(rank_offset,
/// run)` with `run` a `NativeRun` or encoded bytes. `metadata` (a dict) replaces the
/// first part's; `num_ranks` overrides the computed count. With `write_file` the result is
/// written to `file_path` (schema 3, atomically) before it is returned.
#[pyfunction]
#[pyo3(signature = (parts, metadata=None, num_ranks=None, file_path=String::new(), write_file=false))]
fn _stack_runs(
    py: Python<'_>,
    parts: Vec<(u32, Bound<'_, PyAny>)>,
    metadata: Option<&Bound<'_, PyDict>>,
    num_ranks: Option<u32>,
    file_path: String,
    write_file: bool,
) -> PyResult<NativeRun> {
    let mut runs = Vec::with_capacity(parts.len());
    for (offset, obj) in &parts {
        runs.push((*offset, run_of(obj)?));
    }
    drop(parts);
    let options = MergeOptions { num_ranks, ..Default::default() };
    let mut run = py.detach(|| merge_runs(runs, &options)).map_err(|e| PyValueError::new_err(e.to_string()))?;
    if let Some(meta) = metadata {
        let mut values = Vec::with_capacity(meta.len());
        for (k, v) in meta.iter() {
            values.push((k.str()?.to_string(), meta_from_py(&v)?));
        }
        run.metadata = values;
    }
    if write_file {
        let path = PathBuf::from(&file_path);
        let r = &run;
        py.detach(|| scope_profiler_formats::write_h5(r, &path)).map_err(h5_err)?;
    }
    Ok(NativeRun::new(run, file_path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_everything() {
        let run = Run {
            region_names: vec!["a".into(), "b é".into()],
            regions: vec![RegionCalls {
                region: 1,
                rank: 0,
                start_ns: Int64Array::from(vec![1, 2, -3]),
                end_ns: Int64Array::from(vec![4, 5, 6]),
                gpu_ns: None,
                call_ids: Some(Int64Array::from(vec![0, 1, 2]).into()),
                parent_ids: Some(Int64Array::from(vec![-1, 0, 0]).into()),
                thread_ids: Some(Int64Array::from(vec![0, 0, 1])),
                task_ids: None,
                await_ns: Some(Int64Array::from(vec![0, 0, 9])),
                source_file: Some("x.py".into()),
                source_line: Some(7),
                source_text: None,
                tags: vec!["t".into()],
                event_metadata: None,
                exclusive_total_ns: Some(3),
                stored: None,
            }],
            threads: vec![ThreadRow {
                rank: 0,
                index: 0,
                ident: 1,
                native_id: 2,
                daemon: true,
                start_ns: 3,
                end_ns: -1,
                cpu_ns: 5,
                name: "M".into(),
            }],
            tasks: vec![TaskRow {
                rank: 0,
                index: 0,
                thread_index: 0,
                created_ns: 1,
                done_ns: -1,
                steps: 2,
                running_ns: 3,
                suspended_ns: 4,
                kind: "task".into(),
                name: "Task-1".into(),
                coro_name: "main".into(),
            }],
            metadata: vec![
                ("i".into(), MetaValue::Int(3)),
                ("f".into(), MetaValue::Float(0.5)),
                ("s".into(), MetaValue::Str("x".into())),
                ("l".into(), MetaValue::StrList(vec!["p".into(), "q".into()])),
            ],
            num_ranks: 1,
        };
        let bytes = encode_run(&run);
        let back = decode_run(&bytes).unwrap();
        assert_eq!(encode_run(&back), bytes);
        assert_eq!(back.regions[0].thread_ids.as_ref().unwrap().values().to_vec(), vec![0, 0, 1]);
        assert!(back.regions[0].task_ids.is_none());
        assert_eq!(back.threads, run.threads);
        assert_eq!(back.tasks, run.tasks);
        assert_eq!(back.metadata, run.metadata);
        for cut in [0, 5, bytes.len() / 2, bytes.len() - 1] {
            assert!(decode_run(&bytes[..cut]).is_err());
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(decode_run(&extra).is_err());
    }
}
