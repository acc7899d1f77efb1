//! The run transport (`SPRUN\x04`) and the stacking of runs.
use arrow_array::Int64Array;
use scope_profiler_analysis::{IdColumn, LoopBlockRow, MetaValue, RegionCalls, Run, StoredStats, TaskRow, ThreadRow};
use scope_profiler_finalize::transport::{
    decode_run, decode_run_apart, decode_run_compact, encode_run, encode_run_apart, encode_run_compact, stack,
    StackError, MAGIC,
};

fn col(v: &[i64]) -> Int64Array {
    Int64Array::from(v.to_vec())
}

fn thread(rank: u32, index: i64, name: &str) -> ThreadRow {
    ThreadRow {
        ident: 10 + index,
        native_id: 20 + index,
        daemon: index % 2 == 1,
        start_ns: 3 + index,
        cpu_ns: 5,
        cpu_start_ns: 2,
        ..ThreadRow::new(rank, index, name)
    }
}

fn task(rank: u32, index: i64) -> TaskRow {
    TaskRow::new(rank, index, "task", format!("Task-{index}"), "main").on_thread(0).lifetime(1, -1).timing(2, 3, 4)
}

/// A run with every column, both id representations, every lane table and every metadata type.
fn full_run() -> Run {
    // ids of two rows held as slices of one bit-packed column
    let packed_ids = IdColumn::rows_of(&col(&[0, 1, 2, 3, 4]), &[(0, 3), (3, 2)]);
    let packed_parents = IdColumn::rows_of(&col(&[-1, 0, 0, -1, 3]), &[(0, 3), (3, 2)]);
    assert!(packed_ids.iter().chain(&packed_parents).all(IdColumn::is_packed));
    let mut a = RegionCalls::new(1, 0, col(&[1, 2, -3]), col(&[4, 5, 6]));
    a.gpu_ns = Some(col(&[-1, 7, 8]));
    a.call_ids = Some(packed_ids[0].clone());
    a.parent_ids = Some(packed_parents[0].clone());
    a.thread_ids = Some(col(&[0, 0, 1]));
    a.task_ids = Some(col(&[-1, 0, 0]));
    a.await_ns = Some(col(&[0, 0, 9]));
    a.source_file = Some("x.py".into());
    a.source_line = Some(7);
    a.source_text = Some("with b é:".into());
    a.tags = vec!["t".into(), "u".into()];
    a.event_metadata = Some(r#"[{"k": 1}, {}, {}]"#.into());
    a.exclusive_total_ns = Some(3);
    let mut b = RegionCalls::new(0, 0, col(&[10, 11]), col(&[20, 12]));
    b.call_ids = Some(packed_ids[1].clone());
    b.parent_ids = Some(packed_parents[1].clone());
    b.thread_ids = Some(col(&[1, 1]));
    // rank 1: plain ids, no optional lane column, no source
    let mut c = RegionCalls::new(0, 1, col(&[100]), col(&[200]));
    c.call_ids = Some(col(&[0]).into());
    c.parent_ids = Some(col(&[-1]).into());
    let empty = RegionCalls::new(1, 1, col(&[]), col(&[]));
    Run {
        loop_blocks: Vec::new(),
        region_names: vec!["a".into(), "b é".into()],
        regions: vec![a, b, c, empty],
        threads: vec![thread(0, 0, "MainThread"), thread(0, 1, "w"), thread(1, 0, "")],
        tasks: vec![task(0, 0), task(1, 0)],
        metadata: vec![
            ("i".into(), MetaValue::Int(-3)),
            ("f".into(), MetaValue::Float(0.1)),
            ("nan".into(), MetaValue::Float(f64::NAN)),
            ("s".into(), MetaValue::Str("x é".into())),
            ("l".into(), MetaValue::StrList(vec!["p".into(), "".into()])),
            ("empty".into(), MetaValue::StrList(vec![])),
        ],
        num_ranks: 3,
    }
}

fn values(c: &Option<Int64Array>) -> Option<Vec<i64>> {
    c.as_ref().map(|a| a.values().to_vec())
}

fn ids(c: &Option<IdColumn>) -> Option<Vec<i64>> {
    c.as_ref().map(IdColumn::to_vec)
}

/// Every field of two runs equal (floats bit for bit).
fn assert_same(a: &Run, b: &Run) {
    assert_eq!(a.region_names, b.region_names);
    assert_eq!(a.regions.len(), b.regions.len());
    for (x, y) in a.regions.iter().zip(&b.regions) {
        assert_eq!((x.region, x.rank), (y.region, y.rank));
        assert_eq!(x.start_ns.values().to_vec(), y.start_ns.values().to_vec());
        assert_eq!(x.end_ns.values().to_vec(), y.end_ns.values().to_vec());
        assert_eq!(values(&x.gpu_ns), values(&y.gpu_ns));
        assert_eq!(ids(&x.call_ids), ids(&y.call_ids));
        assert_eq!(ids(&x.parent_ids), ids(&y.parent_ids));
        assert_eq!(values(&x.thread_ids), values(&y.thread_ids));
        assert_eq!(values(&x.task_ids), values(&y.task_ids));
        assert_eq!(values(&x.await_ns), values(&y.await_ns));
        assert_eq!(values(&x.task_step_ns), values(&y.task_step_ns));
        assert_eq!(values(&x.ready_wait_ns), values(&y.ready_wait_ns));
        assert_eq!(x.source_file, y.source_file);
        assert_eq!(x.source_line, y.source_line);
        assert_eq!(x.source_text, y.source_text);
        assert_eq!(x.tags, y.tags);
        assert_eq!(x.event_metadata, y.event_metadata);
        assert_eq!(x.exclusive_total_ns, y.exclusive_total_ns);
    }
    assert_eq!(a.threads, b.threads);
    assert_eq!(a.tasks, b.tasks);
    assert_eq!(a.loop_blocks, b.loop_blocks);
    assert_eq!(a.metadata.len(), b.metadata.len());
    for ((ka, va), (kb, vb)) in a.metadata.iter().zip(&b.metadata) {
        assert_eq!(ka, kb);
        match (va, vb) {
            (MetaValue::Float(x), MetaValue::Float(y)) => assert_eq!(x.to_bits(), y.to_bits()),
            _ => assert_eq!(va, vb),
        }
    }
    assert_eq!(a.num_ranks, b.num_ranks);
}

#[test]
fn round_trip_keeps_every_column_table_and_metadata() {
    let run = full_run();
    let bytes = encode_run(&run);
    assert_eq!(&bytes[..6], b"SPRUN\x04");
    assert_eq!(&bytes[..6], MAGIC);
    let back = decode_run(&bytes).unwrap();
    assert_same(&run, &back);
    // absent columns stay absent (not empty), packed ids arrive decoded as plain values
    assert!(back.regions[1].gpu_ns.is_none() && back.regions[1].task_ids.is_none());
    assert!(back.regions[2].thread_ids.is_none() && back.regions[2].await_ns.is_none());
    assert_eq!(back.regions[0].call_ids.as_ref().unwrap().to_vec(), vec![0, 1, 2]);
    assert_eq!(back.regions[1].parent_ids.as_ref().unwrap().to_vec(), vec![-1, 3]);
    assert_eq!(encode_run(&back), bytes);
}

/// Two ranks of a `track_async` run: per-call await, task-step and ready-wait columns (a
/// ready wait the loop could not tell, -1; a row without the column), thread and task rows
/// with their ready waits (some not known, -1) and loop blocks of both ranks (one of a plain
/// callback, task -1).
fn async_run() -> Run {
    let mut a = RegionCalls::new(0, 0, col(&[100, 250, 400]), col(&[900, 700, 480]));
    a.thread_ids = Some(col(&[0, 0, 1]));
    a.task_ids = Some(col(&[-1, 0, 1]));
    a.await_ns = Some(col(&[0, 410, 55]));
    a.task_step_ns = Some(col(&[620, 0, 0]));
    a.ready_wait_ns = Some(col(&[0, 37, -1]));
    let mut b = RegionCalls::new(1, 1, col(&[1_000, 1_200]), col(&[31_500, 34_900]));
    b.thread_ids = Some(col(&[0, 0]));
    b.task_ids = Some(col(&[2, 3]));
    b.await_ns = Some(col(&[29_000, 33_100]));
    b.task_step_ns = Some(col(&[0, 0]));
    b.ready_wait_ns = Some(col(&[28_950, 30_010]));
    // a row of a part recorded without track_async: no ready-wait column at all
    let mut c = RegionCalls::new(0, 1, col(&[5]), col(&[8]));
    c.thread_ids = Some(col(&[0]));
    let threads = vec![
        ThreadRow { task_step_ns: 612, ready_wait_ns: 91, loop_idle_ns: 4_400, ..thread(0, 0, "MainThread") },
        ThreadRow { end_ns: 7_000, task_step_ns: 0, ..thread(0, 1, "w") },
        ThreadRow { cpu_start_ns: 11, task_step_ns: 30_400, ready_wait_ns: 30_010, ..thread(1, 0, "MainThread") },
    ];
    let tasks = vec![
        task(0, 0).ready_wait(37),
        task(0, 1).lifetime(40, 480).timing(3, 25, 55),
        task(1, 2).ready_wait(28_950),
        task(1, 3).on_thread(0).lifetime(900, 35_000).ready_wait(30_010),
    ];
    let block = |rank, thread, task, start_ns, end_ns, delayed_tasks| LoopBlockRow {
        rank,
        thread,
        task,
        start_ns,
        end_ns,
        delayed_tasks,
    };
    Run {
        region_names: vec!["tick".into(), "blocker".into()],
        regions: vec![a, c, b],
        threads,
        tasks,
        loop_blocks: vec![
            block(0, 0, -1, 150, 1_350, 1),
            block(1, 0, 3, 1_210, 31_230, 2),
            block(1, 0, 2, 32_000, 33_500, 0),
        ],
        metadata: vec![("mpi_size".into(), MetaValue::Int(2))],
        num_ranks: 2,
    }
}

#[test]
fn ready_waits_task_steps_and_loop_blocks_travel_in_every_form() {
    let run = async_run();
    let bytes = encode_run(&run);
    let back = decode_run(&bytes).unwrap();
    assert_same(&run, &back);
    // field by field, against the values set above
    assert_eq!(values(&back.regions[0].ready_wait_ns), Some(vec![0, 37, -1]));
    assert_eq!(values(&back.regions[0].task_step_ns), Some(vec![620, 0, 0]));
    assert_eq!(values(&back.regions[2].ready_wait_ns), Some(vec![28_950, 30_010]));
    assert!(back.regions[1].ready_wait_ns.is_none() && back.regions[1].task_step_ns.is_none());
    let thread_waits: Vec<i64> = back.threads.iter().map(|t| t.ready_wait_ns).collect();
    assert_eq!(thread_waits, vec![91, -1, 30_010]);
    let thread_idles: Vec<i64> = back.threads.iter().map(|t| t.loop_idle_ns).collect();
    assert_eq!(thread_idles, vec![4_400, -1, -1]);
    assert_eq!((back.threads[1].end_ns, back.threads[2].cpu_start_ns), (7_000, 11));
    let task_waits: Vec<i64> = back.tasks.iter().map(|t| t.ready_wait_ns).collect();
    assert_eq!(task_waits, vec![37, -1, 28_950, 30_010]);
    assert_eq!((back.tasks[1].done_ns, back.tasks[1].suspended_ns), (480, 55));
    assert_eq!(back.loop_blocks.len(), 3);
    let b = back.loop_blocks[1];
    assert_eq!((b.rank, b.thread, b.task, b.start_ns, b.end_ns, b.delayed_tasks), (1, 0, 3, 1_210, 31_230, 2));
    assert_eq!(back.loop_blocks[0].task, -1);
    assert_eq!(encode_run(&back), bytes);
    // the forms with columns apart (pickling) and compact (sidecar frames) carry them too
    let (apart, columns) = encode_run_apart(&run);
    assert_same(&run, &decode_run_apart(&apart, columns).unwrap());
    assert_same(&run, &decode_run_compact(&encode_run_compact(&run)).unwrap());
    for cut in 0..bytes.len() {
        assert!(decode_run(&bytes[..cut]).is_err(), "cut {cut}");
    }
}

#[test]
fn an_encoding_of_another_version_or_with_unknown_row_flags_is_an_error() {
    let bytes = encode_run(&async_run());
    for version in [2u8, 3] {
        let mut old = bytes.clone();
        old[5] = version;
        assert_eq!(decode_run(&old).unwrap_err().0, "not a scope-profiler run encoding");
    }
    let mut compact = encode_run_compact(&async_run());
    compact[5] = 2;
    assert_eq!(decode_run_compact(&compact).unwrap_err().0, "not a compact scope-profiler run encoding");
    // the first row's flags follow its call count
    let mut flagged = bytes.clone();
    let at = first_row_len_offset(&async_run()) + 8;
    flagged[at + 1] |= 0x10; // bit 12: no column
    assert_eq!(decode_run(&flagged).unwrap_err().0, "unknown row flags 0x1000");
}

#[test]
fn round_trip_keeps_everything() {
    let mut row = RegionCalls::new(1, 0, col(&[1, 2, -3]), col(&[4, 5, 6]));
    row.call_ids = Some(col(&[0, 1, 2]).into());
    row.parent_ids = Some(col(&[-1, 0, 0]).into());
    row.thread_ids = Some(col(&[0, 0, 1]));
    row.await_ns = Some(col(&[0, 0, 9]));
    row.source_file = Some("x.py".into());
    row.source_line = Some(7);
    row.tags = vec!["t".into()];
    row.exclusive_total_ns = Some(3);
    let run = Run {
        loop_blocks: Vec::new(),
        region_names: vec!["a".into(), "b é".into()],
        regions: vec![row],
        threads: vec![ThreadRow { daemon: true, name: "M".into(), ..thread(0, 0, "M") }],
        tasks: vec![task(0, 0)],
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

#[test]
fn every_truncation_and_an_extra_byte_are_errors() {
    let bytes = encode_run(&full_run());
    for cut in 0..bytes.len() {
        let err = decode_run(&bytes[..cut]).unwrap_err();
        assert!(err.0.contains("truncated") || err.0.contains("not a scope-profiler"), "cut {cut}: {err}");
    }
    let mut extra = bytes.clone();
    extra.push(0);
    assert_eq!(decode_run(&extra).unwrap_err().0, "trailing bytes after the run encoding");
}

#[test]
fn bad_magic_is_an_error() {
    let mut bytes = encode_run(&full_run());
    bytes[5] = 5; // a future version
    assert_eq!(decode_run(&bytes).unwrap_err().0, "not a scope-profiler run encoding");
    assert!(decode_run(b"PK\x03\x04 not a run").is_err());
}

#[test]
fn a_row_naming_an_unknown_region_id_is_an_error() {
    let mut run = full_run();
    run.regions[2].region = 2; // two names only
    let err = decode_run(&encode_run(&run)).unwrap_err();
    assert_eq!(err.0, "row refers to region id 2 of 2 names");
}

/// Offset of the first row's call count: magic, name count, names, row count, region, rank.
fn first_row_len_offset(run: &Run) -> usize {
    let names: usize = run.region_names.iter().map(|n| 8 + n.len()).sum();
    6 + 8 + names + 8 + 4 + 4
}

#[test]
fn absurd_lengths_are_errors_without_allocating() {
    let run = full_run();
    let bytes = encode_run(&run);
    let patch = |at: usize, v: u64| {
        let mut b = bytes.clone();
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        b
    };
    // region-name count, first name's length, first row's call count: each huge
    let at_row_len = first_row_len_offset(&run);
    for (at, v) in
        [(6, u64::MAX), (6, 1 << 40), (14, u64::MAX), (14, 1 << 40), (at_row_len, u64::MAX), (at_row_len, 1 << 59)]
    {
        // reading on from a wrong length may also hit invalid UTF-8 first: any error will do
        assert!(decode_run(&patch(at, v)).is_err(), "offset {at} = {v}");
    }
}

#[test]
fn unknown_metadata_tag_and_bad_utf8_are_errors() {
    let run = Run { metadata: vec![("k".into(), MetaValue::Int(1))], ..Default::default() };
    let bytes = encode_run(&run);
    // ... names(0) rows(0) threads(0) tasks(0) metadata(1) "k" tag value num_ranks
    let tag_at = bytes.len() - 4 - 8 - 1;
    let mut b = bytes.clone();
    b[tag_at] = 9;
    assert_eq!(decode_run(&b).unwrap_err().0, "unknown metadata tag 9");
    let mut b = bytes.clone();
    b[tag_at - 1] = 0xFF; // the key "k"
    assert_eq!(decode_run(&b).unwrap_err().0, "invalid UTF-8 in run encoding");
}

#[test]
fn any_damaged_byte_gives_a_result_never_a_panic() {
    let bytes = encode_run(&full_run());
    for at in 0..bytes.len() {
        for v in [0x00, 0x01, 0x7F, 0xFF] {
            let mut b = bytes.clone();
            b[at] = v;
            let _ = decode_run(&b);
        }
    }
}

fn one_rank(rank_names: &[&str], meta: i64) -> Run {
    let mut row = RegionCalls::new(0, 0, col(&[1, 2]), col(&[5, 3]));
    row.call_ids = Some(col(&[0, 1]).into());
    row.parent_ids = Some(col(&[-1, 0]).into());
    Run {
        loop_blocks: Vec::new(),
        region_names: rank_names.iter().map(|s| s.to_string()).collect(),
        regions: vec![row],
        threads: vec![thread(0, 0, "MainThread")],
        tasks: vec![],
        metadata: vec![("mpi_size".into(), MetaValue::Int(meta))],
        num_ranks: 1,
    }
}

#[test]
fn stack_places_encoded_ranks_and_writes_the_file() {
    let parts = vec![
        (1, decode_run(&encode_run(&one_rank(&["b"], 2))).unwrap()),
        (0, decode_run(&encode_run(&one_rank(&["a"], 2))).unwrap()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stacked.h5");
    let meta = vec![("mpi_size".to_string(), MetaValue::Int(2)), ("x".into(), MetaValue::Str("y".into()))];
    let run = stack(parts, Some(meta.clone()), None, Some(&path)).unwrap();
    assert_eq!(run.region_names, vec!["a", "b"]);
    assert_eq!(run.regions.iter().map(|r| (r.region, r.rank)).collect::<Vec<_>>(), vec![(0, 0), (1, 1)]);
    assert_eq!(run.threads.iter().map(|t| t.rank).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(run.num_ranks, 2);
    assert_eq!(run.metadata, meta);
    let back = scope_profiler_formats::read_h5(&path).unwrap();
    assert_eq!(back.region_names, run.region_names);
    assert_eq!(back.num_ranks, 2);
    // without metadata the first part's is kept; num_ranks can be forced
    let run = stack(vec![(0, one_rank(&["a"], 1))], None, Some(4), None).unwrap();
    assert_eq!(run.metadata, vec![("mpi_size".to_string(), MetaValue::Int(4))]);
    assert_eq!(run.num_ranks, 4);
}

#[test]
fn overlapping_rank_blocks_are_refused() {
    let mut two = one_rank(&["a"], 2);
    two.regions.push(RegionCalls { rank: 1, ..two.regions[0].clone() });
    two.num_ranks = 2;
    let err = stack(vec![(0, two), (1, one_rank(&["b"], 1))], None, None, None).unwrap_err();
    match err {
        StackError::Stack(e) => assert!(e.to_string().contains("rank 1 is claimed by two parts"), "{e}"),
        other => panic!("expected a stacking error, got {other:?}"),
    }
    let err = stack(vec![(0, one_rank(&["a"], 1)), (0, one_rank(&["b"], 1))], None, None, None).unwrap_err();
    assert!(matches!(err, StackError::Stack(_)));
}

/// `full_run` plus a row read without its events (its statistics stored).
fn run_with_a_summary_row() -> Run {
    let mut run = full_run();
    let mut summary = RegionCalls::new(0, 2, col(&[]), col(&[]));
    summary.stored = Some(StoredStats {
        count: 4,
        total: 40,
        minimum: 5,
        maximum: 15,
        first: 5,
        last: 15,
        start_minimum: 100,
        end_maximum: 300,
        gpu_count: 1,
        gpu_total: 7,
        mean: 10.0,
        m2: 0.1,
    });
    summary.exclusive_total_ns = Some(30);
    run.regions.push(summary);
    run
}

#[test]
fn columns_apart_travel_as_they_are_with_every_row_statistic() {
    let run = run_with_a_summary_row();
    let (bytes, columns) = encode_run_apart(&run);
    assert_eq!(&bytes[..6], b"SPRUNC");
    // starts and ends of 5 rows, and the optional columns of rows a, b, c
    assert_eq!(columns.len(), 5 * 2 + 6 + 3 + 2);
    assert!(columns[0].values().inner().ptr_eq(run.regions[0].start_ns.values().inner()), "shared, not copied");
    let back = decode_run_apart(&bytes, columns.clone()).unwrap();
    assert_same(&run, &back);
    assert_eq!(back.regions[4].stored, run.regions[4].stored);
    assert!(back.regions[0].stored.is_none());
    // the inline transport does not carry statistics
    assert!(decode_run(&encode_run(&run)).unwrap().regions[4].stored.is_none());
    let mut fewer = columns.clone();
    fewer.pop();
    assert!(decode_run_apart(&bytes, fewer).unwrap_err().0.contains("fewer columns"));
    let mut more = columns.clone();
    more.push(col(&[1]));
    assert!(decode_run_apart(&bytes, more).unwrap_err().0.contains("more columns"));
    let mut wrong = columns;
    wrong[0] = col(&[1]);
    assert!(decode_run_apart(&bytes, wrong).unwrap_err().0.contains("where the row has 3 calls"));
    assert!(decode_run_apart(&encode_run(&run), vec![]).is_err());
}

#[test]
fn the_compact_form_round_trips_in_about_a_byte_per_call() {
    let run = run_with_a_summary_row();
    let bytes = encode_run_compact(&run);
    let back = decode_run_compact(&bytes).unwrap();
    assert_same(&run, &back);
    assert_eq!(back.regions[4].stored, run.regions[4].stored);
    for cut in 0..bytes.len() {
        assert!(decode_run_compact(&bytes[..cut]).is_err(), "cut {cut}");
    }
    for at in 0..bytes.len() {
        let mut b = bytes.clone();
        b[at] ^= 0xA5;
        let _ = decode_run_compact(&b); // a result, never a panic
    }
    // a million calls on two threads, 1-2 us apart, of 0.5-1.5 us
    let n = 1_000_000i64;
    let starts: Vec<i64> = (0..n).map(|i| 5_000_000_000 + i * 1500 + (i * 7919) % 500).collect();
    let ends: Vec<i64> = starts.iter().enumerate().map(|(i, s)| s + 500 + (i as i64 * 104_729) % 1000).collect();
    let mut row = RegionCalls::new(0, 0, col(&starts), col(&ends));
    row.thread_ids = Some(Int64Array::from((0..n).map(|i| i * 2 / n).collect::<Vec<i64>>()));
    let big = Run { region_names: vec!["r".into()], regions: vec![row], num_ranks: 1, ..Run::default() };
    let compact = encode_run_compact(&big);
    assert!(compact.len() < 3 * n as usize, "{} bytes for {n} calls", compact.len());
    assert!(encode_run(&big).len() > 24 * n as usize, "the inline form: 8 bytes per value");
    assert_same(&big, &decode_run_compact(&compact).unwrap());
}
