//! `rank_region_index/summary_statistics`: the reference's `_timing_summary` per region row,
//! an 88-byte compound of [`StoredStats`]' fields after `count` (the count is the
//! `event_counts` column), computed by [`StoredStats::of_calls`].
use std::mem::{offset_of, size_of};

use hdf5::types::{CompoundField, CompoundType, TypeDescriptor};
use hdf5::H5Type;
use scope_profiler_analysis::StoredStats;

/// One row of `summary_statistics` in memory: a [`StoredStats`] whose `count` is not part of
/// the compound. Written, the compound is packed in field order (`to_c_repr`: 11 fields of 8
/// bytes, the reference's layout); read, `count` is left as HDF5 leaves it and is set by the
/// caller from `event_counts`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(transparent)]
pub(crate) struct SummaryCompound(pub StoredStats);

// SAFETY: the descriptor names fields of `StoredStats` (`repr(C)`) at their real offsets and
// types, within its size; `SummaryCompound` is `repr(transparent)` over it.
unsafe impl H5Type for SummaryCompound {
    fn type_descriptor() -> TypeDescriptor {
        macro_rules! fields {
            ($($name:ident: $ty:ty),+) => {
                vec![$((stringify!($name), <$ty as H5Type>::type_descriptor(), offset_of!(StoredStats, $name))),+]
            };
        }
        let fields = fields!(
            total: i64,
            minimum: i64,
            maximum: i64,
            first: i64,
            last: i64,
            start_minimum: i64,
            end_maximum: i64,
            gpu_count: u64,
            gpu_total: i64,
            mean: f64,
            m2: f64
        );
        TypeDescriptor::Compound(CompoundType {
            fields: fields
                .into_iter()
                .enumerate()
                .map(|(index, (name, ty, offset))| CompoundField::new(name, ty, offset, index))
                .collect(),
            size: size_of::<StoredStats>(),
        })
    }
}
