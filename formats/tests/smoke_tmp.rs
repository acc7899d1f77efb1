#[test]
fn smoke() {
    match scope_profiler_formats::read_h5(std::path::Path::new("/tmp/fmtcheck/gz.h5")) { Ok(r) => println!("OK rows {}", r.regions.len()), Err(e) => println!("ERR {e}") }
}
