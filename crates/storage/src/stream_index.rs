//! The per-tenant stream index: label set ↔ stream id, label name → value →
//! streams postings, and the time range each stream covers per day partition.
//!
//! Persistence: label sets are appended to the tenant's `streams.idx` (frames of
//! `len u32 | crc32 u32 | stream_id u64 | label pairs`) and fsynced by the flush
//! that first writes the stream into a part, before that part's manifest
//! commit. Streams that only live in the WAL are re-learnt by WAL replay. Time
//! ranges are not stored here: they are rebuilt from part indexes (block
//! min/max) on open and from the memtable as entries arrive.

use crate::encoding::{put_pairs, put_u32, put_u64, Reader};
use crate::fsutil::{fsync_dir, write_atomic};
use crate::quarantine::Quarantine;
use crate::{names, StorageError};
use runakefli_model::{Labels, MatchOp, Matcher, StreamId};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// One known stream.
#[derive(Debug)]
pub struct StreamEntry {
    /// Its labels.
    pub labels: Arc<Labels>,
    /// Inclusive (min, max) timestamp per day partition with data.
    pub days: BTreeMap<i64, (i64, i64)>,
    /// [`names_signature`] of its labels (where `| json` adds `_extracted`
    /// depends on the label names; kept so plans need not hash them).
    pub names_sig: u64,
    persisted: bool,
}

/// A hash of the names of `labels` (not their values).
pub fn names_signature(labels: &Labels) -> u64 {
    labels.pairs().iter().fold(0x6e61_6d65u64, |h, (k, _)| {
        (h ^ xxhash_rust::xxh3::xxh3_64(k.as_bytes())).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    })
}

/// The index of one tenant.
#[derive(Debug, Default)]
pub struct StreamIndex {
    /// By stream id, with the fast hasher: every query over many streams
    /// looks each up (SipHash cost ~140 instructions a look-up).
    streams: crate::block::hash::FastMap<StreamId, StreamEntry>,
    postings: BTreeMap<String, HashMap<String, Vec<StreamId>>>,
}

impl StreamIndex {
    /// Number of streams.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// True when the tenant has no streams.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// The values of label `name` and the streams that have each.
    pub fn postings_of(&self, name: &str) -> Option<&HashMap<String, Vec<StreamId>>> {
        self.postings.get(name)
    }

    /// The stream `sid`, if known.
    pub fn get(&self, sid: StreamId) -> Option<&StreamEntry> {
        self.streams.get(&sid)
    }

    fn insert(&mut self, sid: StreamId, labels: Arc<Labels>, persisted: bool) {
        for (k, v) in labels.pairs() {
            self.postings
                .entry(k.clone())
                .or_default()
                .entry(v.clone())
                .or_default()
                .push(sid);
        }
        self.streams.insert(
            sid,
            StreamEntry {
                names_sig: names_signature(&labels),
                labels,
                days: BTreeMap::new(),
                persisted,
            },
        );
    }

    /// Returns the id and shared labels of `labels`, adding the stream when new.
    /// Fails when a different label set already owns the id.
    pub fn resolve(
        &mut self,
        tenant: &str,
        labels: &Labels,
    ) -> Result<(StreamId, Arc<Labels>), StorageError> {
        let sid = labels.stream_id();
        if let Some(e) = self.streams.get(&sid) {
            if *e.labels != *labels {
                return Err(StorageError::StreamIdCollision {
                    tenant: tenant.to_string(),
                    id: sid,
                    existing: e.labels.to_string(),
                    incoming: labels.to_string(),
                });
            }
            return Ok((sid, e.labels.clone()));
        }
        let arc = Arc::new(labels.clone());
        self.insert(sid, arc.clone(), false);
        Ok((sid, arc))
    }

    /// Widens the recorded time range of `sid` in `day` to cover `[min, max]`.
    pub fn note_range(&mut self, sid: StreamId, day: i64, min: i64, max: i64) {
        if let Some(e) = self.streams.get_mut(&sid) {
            let r = e.days.entry(day).or_insert((min, max));
            r.0 = r.0.min(min);
            r.1 = r.1.max(max);
        }
    }

    /// Replaces the recorded range of `sid` in `day` (`None`: no data that day).
    pub fn set_range(&mut self, sid: StreamId, day: i64, range: Option<(i64, i64)>) {
        if let Some(e) = self.streams.get_mut(&sid) {
            match range {
                Some(r) => {
                    e.days.insert(day, r);
                }
                None => {
                    e.days.remove(&day);
                }
            }
        }
    }

    /// Forgets streams left without data on any day (retention and deletes
    /// removed it all); returns how many of them were in the streams file.
    pub fn remove_unused(&mut self) -> usize {
        let gone: Vec<StreamId> = self
            .streams
            .iter()
            .filter(|(_, e)| e.days.is_empty())
            .map(|(s, _)| *s)
            .collect();
        let mut persisted = 0;
        for sid in gone {
            let Some(e) = self.streams.remove(&sid) else {
                continue;
            };
            persisted += usize::from(e.persisted);
            for (k, v) in e.labels.pairs() {
                if let Some(vals) = self.postings.get_mut(k) {
                    if let Some(ids) = vals.get_mut(v) {
                        ids.retain(|x| *x != sid);
                        if ids.is_empty() {
                            vals.remove(v);
                        }
                    }
                    if vals.is_empty() {
                        self.postings.remove(k);
                    }
                }
            }
        }
        persisted
    }

    /// Every stream already in the streams file.
    pub fn persisted(&self) -> Vec<(StreamId, Arc<Labels>)> {
        let mut out: Vec<_> = self
            .streams
            .iter()
            .filter(|(_, e)| e.persisted)
            .map(|(s, e)| (*s, e.labels.clone()))
            .collect();
        out.sort_by_key(|(s, _)| *s);
        out
    }

    /// Whether `sid` may have entries in the inclusive range `[lo, hi]`.
    pub fn overlaps(&self, sid: StreamId, lo: i64, hi: i64) -> bool {
        let Some(e) = self.streams.get(&sid) else {
            return false;
        };
        Self::entry_overlaps(e, lo, hi)
    }

    fn entry_overlaps(e: &StreamEntry, lo: i64, hi: i64) -> bool {
        if e.days.len() == 1 {
            let (_, &(min, max)) = e.days.iter().next().expect("one day");
            return min <= hi && max >= lo;
        }
        e.days
            .range(crate::names::day_of(lo)..=crate::names::day_of(hi))
            .any(|(_, &(min, max))| min <= hi && max >= lo)
    }

    /// Streams whose labels satisfy every matcher and that may have data in
    /// `[lo, hi]`, sorted by labels.
    pub fn matching(&self, matchers: &[Matcher], lo: i64, hi: i64) -> Vec<(StreamId, Arc<Labels>)> {
        let mut out: Vec<(StreamId, Arc<Labels>)> = self
            .matching_unsorted(matchers, lo, hi)
            .into_iter()
            .map(|(s, l, _)| (s, l))
            .collect();
        out.sort_by(|a, b| a.1.cmp(&b.1));
        out
    }

    /// [`StreamIndex::matching`] in no particular order, each stream with
    /// its [`names_signature`].
    pub fn matching_unsorted(
        &self,
        matchers: &[Matcher],
        lo: i64,
        hi: i64,
    ) -> Vec<(StreamId, Arc<Labels>, u64)> {
        // Narrow with the most selective equality matcher on a non-empty value.
        let mut candidates: Option<&Vec<StreamId>> = None;
        let mut by_eq: Option<usize> = None;
        for (i, m) in matchers.iter().enumerate() {
            if m.op == MatchOp::Eq && !m.value.is_empty() {
                let ids = self
                    .postings
                    .get(&m.name)
                    .and_then(|vals| vals.get(&m.value));
                match ids {
                    None => return Vec::new(),
                    Some(ids) if candidates.is_none_or(|c| ids.len() < c.len()) => {
                        candidates = Some(ids);
                        by_eq = Some(i);
                    }
                    Some(_) => {}
                }
            }
        }
        // Without one, a matcher the empty value fails (`=~".+"`) is decided
        // once per value of its label, and gives the candidates.
        let mut owned: Vec<StreamId> = Vec::new();
        let mut decided: Option<usize> = by_eq;
        if candidates.is_none() {
            if let Some((i, m)) = matchers
                .iter()
                .enumerate()
                .find(|(_, m)| m.op != MatchOp::Eq && !m.matches(""))
            {
                if let Some(vals) = self.postings.get(&m.name) {
                    for (v, ids) in vals {
                        if m.matches(v) {
                            owned.extend_from_slice(ids);
                        }
                    }
                } else {
                    return Vec::new();
                }
                decided = Some(i);
            }
        }
        // Each other matcher decides once per distinct value (many streams
        // share a namespace or app).
        let mut memo: Vec<crate::block::hash::FastMap<&str, bool>> =
            vec![Default::default(); matchers.len()];
        let mut check = |sid: &StreamId| -> Option<(StreamId, Arc<Labels>, u64)> {
            let e = self.streams.get(sid)?;
            for (i, (m, memo)) in matchers.iter().zip(memo.iter_mut()).enumerate() {
                if decided == Some(i) {
                    continue;
                }
                let v = e.labels.get(&m.name).unwrap_or("");
                let ok = match memo.get(v) {
                    Some(&ok) => ok,
                    None => {
                        let ok = m.matches(v);
                        memo.insert(v, ok);
                        ok
                    }
                };
                if !ok {
                    return None;
                }
            }
            Self::entry_overlaps(e, lo, hi).then(|| (*sid, e.labels.clone(), e.names_sig))
        };
        if decided.is_some() && candidates.is_none() {
            return owned.iter().filter_map(&mut check).collect();
        }
        match candidates {
            Some(ids) => ids.iter().filter_map(&mut check).collect(),
            None => self.streams.keys().filter_map(&mut check).collect(),
        }
    }

    /// Label names over streams with data in `[lo, hi]`, sorted.
    pub fn label_names(&self, lo: i64, hi: i64) -> Vec<String> {
        let mut names = BTreeSet::new();
        for (sid, e) in &self.streams {
            if self.overlaps(*sid, lo, hi) {
                names.extend(e.labels.pairs().iter().map(|(k, _)| k.clone()));
            }
        }
        names.into_iter().collect()
    }

    /// Streams not yet written to the streams file.
    pub fn unpersisted(&self) -> Vec<(StreamId, Arc<Labels>)> {
        let mut v: Vec<_> = self
            .streams
            .iter()
            .filter(|(_, e)| !e.persisted)
            .map(|(s, e)| (*s, e.labels.clone()))
            .collect();
        v.sort_by_key(|(s, _)| *s);
        v
    }

    /// Records that `sids` are now in the streams file.
    pub fn mark_persisted(&mut self, sids: &[StreamId]) {
        for s in sids {
            if let Some(e) = self.streams.get_mut(s) {
                e.persisted = true;
            }
        }
    }

    /// Loads the streams file of `tenant_dir`. A torn tail (an append cut
    /// short by a crash) is cut off. Any other record that fails its checksum
    /// or whose labels do not hash to its id is damage: reading resumes at
    /// the next record that verifies, the original file is kept in
    /// `quarantine` and replaced by its valid records.
    pub fn load(tenant_dir: &Path, quarantine: &Quarantine) -> Result<StreamIndex, StorageError> {
        let path = tenant_dir.join(names::STREAMS_FILE);
        let mut idx = StreamIndex::default();
        let buf = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(idx),
            Err(e) => return Err(StorageError::io(&path, e)),
        };
        let verified = |b: &[u8]| match decode_frame(b) {
            Ok((sid, labels, used)) if labels.stream_id() == sid => Some((sid, labels, used)),
            _ => None,
        };
        let mut valid: Vec<(usize, usize)> = Vec::new();
        let mut damage: Vec<String> = Vec::new();
        let mut torn_tail = false;
        let mut off = 0;
        while off < buf.len() {
            if let Some((sid, labels, used)) = verified(&buf[off..]) {
                if !idx.streams.contains_key(&sid) {
                    idx.insert(sid, Arc::new(labels), true);
                }
                valid.push((off, used));
                off += used;
                continue;
            }
            let why = match decode_frame(&buf[off..]) {
                Ok(_) => "labels do not hash to the record's stream id".to_string(),
                Err(e) => e.to_string(),
            };
            let next = (off + 1..buf.len()).find(|&p| {
                frame_len(&buf[p..]).is_some_and(|n| n <= RESYNC_MAX_RECORD)
                    && verified(&buf[p..]).is_some()
            });
            torn_tail =
                next.is_none() && frame_len(&buf[off..]).is_none_or(|n| off + n > buf.len());
            let end = next.unwrap_or(buf.len());
            damage.push(format!("bytes {off}..{end}: {why}"));
            off = end;
        }
        if damage.is_empty() {
            return Ok(idx);
        }
        if torn_tail && damage.len() == 1 {
            let cut = valid.last().map_or(0, |&(o, n)| o + n);
            tracing::warn!(path = %path.display(), offset = cut, "cutting the torn tail of the streams file");
            let f = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| StorageError::io(&path, e))?;
            f.set_len(cut as u64)
                .and_then(|_| f.sync_all())
                .map_err(|e| StorageError::io(&path, e))?;
            return Ok(idx);
        }
        quarantine.link_in(
            &path,
            &format!(
                "damaged streams file ({}); {} valid records kept",
                damage.join("; "),
                valid.len()
            ),
        )?;
        let mut repaired = Vec::with_capacity(buf.len());
        for &(o, n) in &valid {
            repaired.extend_from_slice(&buf[o..o + n]);
        }
        let mut tmp = path.clone().into_os_string();
        tmp.push(names::TMP_SUFFIX);
        write_atomic(&path, Path::new(&tmp), &repaired)?;
        Ok(idx)
    }
}

/// Largest record the search for the next valid record after damage
/// considers (a label set within Loki's default limits is a few KiB); it keeps
/// the search linear in the file size.
const RESYNC_MAX_RECORD: usize = 64 << 10;

/// Total length of the record starting at `buf[0]` by its length field, if
/// the field is there.
fn frame_len(buf: &[u8]) -> Option<usize> {
    let len = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?) as usize;
    Some(8 + len)
}

fn decode_frame(buf: &[u8]) -> Result<(StreamId, Labels, usize), StorageError> {
    let mut r = Reader::new(buf, "streams file");
    let len = r.u32()? as usize;
    let crc = r.u32()?;
    let payload = r.take(len)?;
    if crc32fast::hash(payload) != crc {
        return Err(StorageError::corrupt("streams file", "checksum mismatch"));
    }
    let mut p = Reader::new(payload, "streams file");
    let sid = p.u64()?;
    let labels = Labels::new(p.pairs()?);
    Ok((sid, labels, 8 + len))
}

/// Replaces the streams file of `tenant_dir` by one holding exactly
/// `streams` (temp file, fsync, rename), after retention or deletes forgot
/// streams.
pub fn rewrite(tenant_dir: &Path, streams: &[(StreamId, Arc<Labels>)]) -> Result<(), StorageError> {
    let path = tenant_dir.join(names::STREAMS_FILE);
    let mut tmp = path.clone().into_os_string();
    tmp.push(names::TMP_SUFFIX);
    write_atomic(&path, Path::new(&tmp), &encode_frames(streams))
}

fn encode_frames(streams: &[(StreamId, Arc<Labels>)]) -> Vec<u8> {
    let mut buf = Vec::new();
    for (sid, labels) in streams {
        let mut payload = Vec::new();
        put_u64(&mut payload, *sid);
        put_pairs(&mut payload, labels.pairs());
        put_u32(&mut buf, payload.len() as u32);
        put_u32(&mut buf, crc32fast::hash(&payload));
        buf.extend_from_slice(&payload);
    }
    buf
}

/// Appends `streams` to the streams file of `tenant_dir` and fsyncs it.
pub fn persist(tenant_dir: &Path, streams: &[(StreamId, Arc<Labels>)]) -> Result<(), StorageError> {
    if streams.is_empty() {
        return Ok(());
    }
    let path = tenant_dir.join(names::STREAMS_FILE);
    let buf = encode_frames(streams);
    let existed = path.exists();
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| StorageError::io(&path, e))?;
    f.write_all(&buf)
        .and_then(|_| f.sync_all())
        .map_err(|e| StorageError::io(&path, e))?;
    if !existed {
        fsync_dir(tenant_dir)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_ranges_and_names() {
        let mut idx = StreamIndex::default();
        let (a, _) = idx
            .resolve("t", &Labels::from_strs(&[("app", "api"), ("env", "prod")]))
            .unwrap();
        let (b, _) = idx
            .resolve("t", &Labels::from_strs(&[("app", "web")]))
            .unwrap();
        idx.note_range(a, 0, 10, 20);
        idx.note_range(b, 0, 30, 40);
        let m = |n: &str, op, v: &str| Matcher::new(n, op, v).unwrap();
        let ids = |v: Vec<(StreamId, Arc<Labels>)>| v.into_iter().map(|x| x.0).collect::<Vec<_>>();
        assert_eq!(
            ids(idx.matching(&[m("app", MatchOp::Eq, "api")], 0, 100)),
            vec![a]
        );
        assert_eq!(
            ids(idx.matching(&[m("app", MatchOp::Re, ".+")], 0, 100)),
            vec![a, b]
        );
        assert_eq!(
            ids(idx.matching(&[m("env", MatchOp::Eq, "")], 0, 100)),
            vec![b]
        );
        assert_eq!(
            ids(idx.matching(&[m("app", MatchOp::Re, ".+")], 21, 29)),
            Vec::<u64>::new()
        );
        assert_eq!(
            ids(idx.matching(&[m("app", MatchOp::Eq, "nope")], 0, 100)),
            Vec::<u64>::new()
        );
        assert_eq!(idx.label_names(0, 25), vec!["app", "env"]);
        assert_eq!(idx.label_names(25, 100), vec!["app"]);
    }

    #[test]
    fn id_collisions_are_detected() {
        let mut idx = StreamIndex::default();
        let a = Labels::from_strs(&[("app", "a")]);
        let b = Labels::from_strs(&[("app", "b")]);
        // Pretend `b` hashed to `a`'s id.
        idx.insert(a.stream_id(), Arc::new(b.clone()), true);
        let err = idx.resolve("t", &a).unwrap_err();
        assert!(
            matches!(err, StorageError::StreamIdCollision { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("collision"));
    }

    #[test]
    fn persist_load_and_torn_tail() {
        let d = tempfile::tempdir().unwrap();
        let mut idx = StreamIndex::default();
        idx.resolve("t", &Labels::from_strs(&[("a", "1")])).unwrap();
        idx.resolve("t", &Labels::from_strs(&[("a", "2")])).unwrap();
        let un = idx.unpersisted();
        persist(d.path(), &un).unwrap();
        let path = d.path().join(names::STREAMS_FILE);
        let len = std::fs::metadata(&path).unwrap().len();
        let q = Quarantine::new(d.path());
        let loaded = StreamIndex::load(d.path(), &q).unwrap();
        assert_eq!(loaded.len(), 2);
        assert!(loaded.unpersisted().is_empty());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len - 2)
            .unwrap();
        assert_eq!(StreamIndex::load(d.path(), &q).unwrap().len(), 1);
        assert_eq!(q.count(), 0, "a torn tail is not quarantined");
    }

    #[test]
    fn damage_in_the_middle_keeps_later_streams_and_the_original() {
        let d = tempfile::tempdir().unwrap();
        let mut idx = StreamIndex::default();
        for i in 0..5 {
            idx.resolve("t", &Labels::from_strs(&[("a", &i.to_string())]))
                .unwrap();
        }
        persist(d.path(), &idx.unpersisted()).unwrap();
        let path = d.path().join(names::STREAMS_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        let rec = bytes.len() / 5;
        bytes[rec + 10] ^= 0x55; // inside the second record
        std::fs::write(&path, &bytes).unwrap();
        let q = Quarantine::new(d.path());
        assert_eq!(StreamIndex::load(d.path(), &q).unwrap().len(), 4);
        assert_eq!(q.count(), 1);
        let kept = d.path().join("quarantine").join(names::STREAMS_FILE);
        assert_eq!(std::fs::read(kept).unwrap(), bytes);
        // Repaired in place: the next load is clean.
        let q = Quarantine::new(d.path());
        assert_eq!(StreamIndex::load(d.path(), &q).unwrap().len(), 4);
        assert_eq!(q.count(), 0);
    }
}
