//! The region table: what a region id means. The recorder stores calls per region id
//! (`u32`, dense, registration order); this table maps each id to its name, tags and the
//! site that first defined it. One table belongs to one [`Recorder`](crate::Recorder)
//! configuration; the snapshot of that recorder is read against it.
//!
//! Synchronization: a mutex (poison-tolerant). It is taken on region creation, when a
//! source site is recorded and by readers (snapshot conversion, open-region names), never on
//! the enter/exit hot path. Names are found through a hash index of ids (one `u32` per
//! region, the name itself stays only in the table), so creating a region costs the same
//! with 10 or 100,000 regions.
//!
//! Memory per region (programs may have 100,000 dynamic names): an entry is 56 bytes
//! plus its name; source files are interned (one allocation per distinct file, shared by
//! every region defined in it); tags and source text, rare, live in a box of their own.
use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};

use hashbrown::HashTable;

/// Per-region facts that are not per call: name, first creation site, tags.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegionMeta {
    pub name: Box<str>,
    /// File of the first site that defined the region (first writer wins); shared by the
    /// regions of one file.
    pub source_file: Option<Arc<str>>,
    /// 1-based line of that site.
    pub source_line: Option<i64>,
    /// Source text and tags ([`RegionMeta::source_text`], [`RegionMeta::tags`]), None when
    /// the region has neither.
    extra: Option<Box<RegionExtra>>,
}

/// The rarely set facts of a region, boxed.
#[derive(Debug, Clone, Default, PartialEq)]
struct RegionExtra {
    source_text: Option<Box<str>>,
    tags: Box<[String]>,
}

impl RegionMeta {
    /// A region named `name` with no site and no tags.
    pub fn named(name: &str) -> Self {
        RegionMeta { name: name.into(), ..Default::default() }
    }

    /// Source text of the defining line, if recorded.
    pub fn source_text(&self) -> Option<&str> {
        self.extra.as_ref()?.source_text.as_deref()
    }

    /// Tags given at creation (empty: none).
    pub fn tags(&self) -> &[String] {
        self.extra.as_ref().map_or(&[], |e| &e.tags)
    }

    fn extra_mut(&mut self) -> &mut RegionExtra {
        self.extra.get_or_insert_with(Default::default)
    }
}

/// The region table of one recorder: position = region id.
#[derive(Default)]
pub struct RegionTable {
    regions: Mutex<Vec<RegionMeta>>,
    /// Ids by name hash (taken after `regions`, only by `get_or_create`).
    index: Mutex<HashTable<u32>>,
    /// FxHash: region names come from the program, not from an adversary.
    hasher: rustc_hash::FxBuildHasher,
    /// Source file names, interned (taken after `regions`, only by `set_source`).
    files: Mutex<HashSet<Arc<str>, rustc_hash::FxBuildHasher>>,
}

impl std::fmt::Debug for RegionTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionTable").field("regions", &self.regions).finish_non_exhaustive()
    }
}

impl RegionTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// The table, locked. Index it with a region id.
    pub fn lock(&self) -> MutexGuard<'_, Vec<RegionMeta>> {
        self.regions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The id of the region named `name` and its tags: an existing region keeps its id and
    /// first tags (`tags` is then ignored); a new one gets the next id and `tags`. Atomic, so
    /// two threads creating the same name at once share one id.
    pub fn get_or_create(&self, name: &str, tags: Vec<String>) -> (u32, Vec<String>) {
        let (id, new) = self.intern(name, &tags);
        if new {
            (id, tags)
        } else {
            (id, self.lock()[id as usize].tags().to_vec())
        }
    }

    /// The id of the region named `name`, and whether this call created it (then with
    /// `tags`; an existing region keeps its first tags). Atomic, as [`Self::get_or_create`].
    pub fn intern(&self, name: &str, tags: &[String]) -> (u32, bool) {
        let mut regions = self.lock();
        let mut index = self.index.lock().unwrap_or_else(|e| e.into_inner());
        let hash = self.hasher.hash_one(name);
        if let Some(&id) = index.find(hash, |&i| &*regions[i as usize].name == name) {
            return (id, false);
        }
        let id = regions.len() as u32;
        let mut meta = RegionMeta::named(name);
        if !tags.is_empty() {
            meta.extra_mut().tags = tags.into();
        }
        regions.push(meta);
        index.insert_unique(hash, id, |&i| self.hasher.hash_one(&*regions[i as usize].name));
        (id, true)
    }

    /// The id of the region named `name`, if there is one.
    pub fn find(&self, name: &str) -> Option<u32> {
        let regions = self.lock();
        let index = self.index.lock().unwrap_or_else(|e| e.into_inner());
        index.find(self.hasher.hash_one(name), |&i| &*regions[i as usize].name == name).copied()
    }

    /// Record the defining site of region `id` unless one is recorded already (first writer
    /// wins). An unknown id is ignored.
    pub fn set_source(&self, id: u32, file: String, line: Option<i64>, text: Option<String>) {
        let mut regions = self.lock();
        let Some(m) = regions.get_mut(id as usize) else { return };
        if m.source_file.is_none() {
            let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
            let file = match files.get(file.as_str()) {
                Some(f) => Arc::clone(f),
                None => {
                    let f: Arc<str> = file.into();
                    files.insert(Arc::clone(&f));
                    f
                }
            };
            m.source_file = Some(file);
            m.source_line = line;
            if let Some(text) = text {
                m.extra_mut().source_text = Some(text.into_boxed_str());
            }
        }
    }

    /// Number of regions (ids `0..len`).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_and_first_tags_and_source_win() {
        let t = RegionTable::new();
        assert_eq!(t.get_or_create("a", vec!["x".into()]), (0, vec!["x".to_string()]));
        assert_eq!(t.get_or_create("b", vec![]), (1, vec![]));
        assert_eq!(t.get_or_create("a", vec!["y".into()]), (0, vec!["x".to_string()]));
        assert_eq!(t.len(), 2);
        // many names: each keeps its id (the hash index, not a scan)
        for i in 0..10_000 {
            assert_eq!(t.get_or_create(&format!("n{i}"), vec![]).0, i + 2);
        }
        assert_eq!(t.get_or_create("n9999", vec![]).0, 10_001);
        assert_eq!(t.get_or_create("b", vec![]).0, 1);
        assert_eq!(t.len(), 10_002);
        assert_eq!((t.find("n9999"), t.find("missing")), (Some(10_001), None));
        assert_eq!(t.intern("n5", &[]), (7, false));
        assert_eq!(t.intern("fresh", &["t".into()]), (10_002, true));
        assert_eq!(t.get_or_create("fresh", vec![]).1, vec!["t".to_string()]);
        t.set_source(0, "f.py".into(), Some(3), Some("with a:".into()));
        t.set_source(0, "g.py".into(), Some(9), None);
        t.set_source(7, "h.py".into(), None, None);
        let regions = t.lock();
        assert_eq!(regions[0].source_file.as_deref(), Some("f.py"));
        assert_eq!(regions[0].source_line, Some(3));
        assert_eq!(regions[0].source_text(), Some("with a:"));
        assert_eq!(regions[1].source_file, None);
    }

    // with 100,000 region names, an entry stays small and the
    // regions of one file share its name
    #[test]
    fn entries_are_small_and_share_their_file() {
        assert!(std::mem::size_of::<RegionMeta>() <= 56, "{}", std::mem::size_of::<RegionMeta>());
        let t = RegionTable::new();
        for i in 0..3 {
            let (id, _) = t.get_or_create(&format!("r{i}"), vec![]);
            t.set_source(id, "app.py".into(), Some(i), None);
        }
        let regions = t.lock();
        let (a, b) = (regions[0].source_file.as_ref().unwrap(), regions[2].source_file.as_ref().unwrap());
        assert!(Arc::ptr_eq(a, b) && &**a == "app.py");
        assert_eq!(regions[2].source_line, Some(2));
        assert!(regions[2].extra.is_none() && regions[2].tags().is_empty());
    }
}
