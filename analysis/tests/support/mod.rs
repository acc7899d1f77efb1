//! A one-region run shared by the analysis tests.
use arrow_array::Int64Array;
use scope_profiler_analysis::{MetaValue, RegionCalls, Run};

pub fn run(name: &str, metadata: Vec<(&str, MetaValue)>) -> Run {
    Run {
        region_names: vec![name.into()],
        regions: vec![RegionCalls::new(0, 0, Int64Array::from(vec![0, 10]), Int64Array::from(vec![5, 30]))],
        metadata: metadata.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        num_ranks: 1,
        ..Run::default()
    }
}
