//! Tenants and their day partitions as held in memory: the live parts of each
//! partition (ordered by push order), its manifest, and the stream index.
//!
//! Opening a partition verifies it and never deletes what it cannot account
//! for ([`Partition::open`]): with a valid manifest, unlisted parts and
//! temporary files are crash leftovers (their rows are in listed parts or in
//! the WAL) and are removed; a part file with no manifest to vouch for it, a
//! corrupt manifest, a listed part that fails to open, or a file the store
//! did not write goes to the [`Quarantine`] instead.

use crate::fsutil::{create_dir_durable, fsync_dir, list_dir, remove_file};
use crate::manifest::Manifest;
use crate::part::{Part, PartInfo};
use crate::quarantine::Quarantine;
use crate::stream_index::StreamIndex;
use crate::{names, StorageError};
use parking_lot::{Mutex, RwLock};
use runakefli_model::TenantId;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// Mutable state of a partition.
pub struct PartitionState {
    /// The manifest as last committed (plus allocated ids).
    pub manifest: Manifest,
    /// Open parts, in manifest order.
    pub parts: Vec<Arc<Part>>,
    /// When a flush last added a part (merge policy waits for quiet partitions).
    pub last_flush: Instant,
}

/// One day of one tenant.
pub struct Partition {
    /// Day number (days since the epoch, UTC).
    pub day: i64,
    /// Its directory.
    pub dir: PathBuf,
    /// Parts and manifest.
    pub state: RwLock<PartitionState>,
    /// Serialises manifest commits (flush and merge).
    pub commit_lock: Mutex<()>,
    /// A merge of this partition is running.
    pub merging: AtomicBool,
    /// Where its parts report blocks found damaged when read.
    quarantine: Arc<Quarantine>,
}

impl Partition {
    fn new(
        day: i64,
        dir: PathBuf,
        manifest: Manifest,
        parts: Vec<Arc<Part>>,
        quarantine: &Arc<Quarantine>,
    ) -> Self {
        for p in &parts {
            p.watch_damage(quarantine);
        }
        Partition {
            day,
            dir,
            state: RwLock::new(PartitionState {
                manifest,
                parts,
                last_flush: Instant::now(),
            }),
            commit_lock: Mutex::new(()),
            merging: AtomicBool::new(false),
            quarantine: quarantine.clone(),
        }
    }

    /// Opens partition `dir`: reads and verifies the manifest, removes crash
    /// leftovers, opens every listed part. What does not verify goes to
    /// `quarantine` (see the module documentation) and the partition opens
    /// with the rest; when a listed part is dropped, the manifest is
    /// rewritten without it.
    pub fn open(
        day: i64,
        dir: &Path,
        quarantine: &Arc<Quarantine>,
    ) -> Result<Partition, StorageError> {
        let manifest_path = dir.join(names::MANIFEST_FILE);
        // `None`: the manifest vouches for the directory; else why it cannot.
        let (mut manifest, distrust) = match Manifest::load(dir) {
            Ok(Some(m)) => (m, None),
            Ok(None) => (
                Manifest::default(),
                Some("part file in a partition without a MANIFEST".to_string()),
            ),
            Err(e @ StorageError::Corrupt { .. }) => {
                quarantine.move_in(&manifest_path, &e.to_string())?;
                (
                    Manifest::default(),
                    Some(format!(
                        "part of a partition whose MANIFEST is corrupt: {e}"
                    )),
                )
            }
            Err(e) => return Err(e),
        };
        let listed: std::collections::HashSet<String> = manifest
            .parts
            .iter()
            .map(|p| names::part_file(p.id))
            .collect();
        let mut removed = false;
        for (name, path) in list_dir(dir)? {
            if name == names::MANIFEST_FILE || listed.contains(&name) {
                continue;
            }
            let is_part = names::parse_part_file(&name).is_some();
            if name.ends_with(names::TMP_SUFFIX) || (is_part && distrust.is_none()) {
                // A part or manifest being written, an output whose commit
                // never happened, or a merge input already replaced.
                tracing::info!(path = %path.display(), "removing crash leftover not in the manifest");
                remove_file(&path)?;
                removed = true;
            } else if let (true, Some(why)) = (is_part, &distrust) {
                quarantine.move_in(&path, why)?;
            } else {
                quarantine.move_in(&path, "unexpected file in a partition directory")?;
            }
        }
        if removed {
            fsync_dir(dir)?;
        }
        let mut parts = Vec::with_capacity(manifest.parts.len());
        let mut dropped = false;
        for info in &manifest.parts {
            let path = dir.join(names::part_file(info.id));
            match Part::open(&path, info.clone()) {
                Ok(p) => parts.push(Arc::new(p)),
                Err(StorageError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    quarantine
                        .note_missing(&path, "listed in the partition MANIFEST but missing")?;
                    dropped = true;
                }
                Err(e @ StorageError::Corrupt { .. }) => {
                    quarantine.move_in(&path, &e.to_string())?;
                    dropped = true;
                }
                Err(e) => return Err(e),
            }
        }
        if dropped {
            manifest.parts = parts.iter().map(|p| p.info().clone()).collect();
            manifest.store(dir)?;
        }
        Ok(Partition::new(
            day,
            dir.to_path_buf(),
            manifest,
            parts,
            quarantine,
        ))
    }

    /// Allocates a new part id.
    pub fn alloc_part_id(&self) -> u64 {
        let mut st = self.state.write();
        st.manifest.next_part = st.manifest.next_part.max(1);
        let id = st.manifest.next_part;
        st.manifest.next_part += 1;
        id
    }

    /// Commits a change: replaces the parts with ids in `remove` by `add` (placed
    /// where the first removed part was, or at the end), optionally raising
    /// `flushed_wal`; writes the manifest atomically, then installs the new part
    /// list. Removed parts are marked obsolete (deleted when unused).
    pub fn commit(
        &self,
        remove: &[u64],
        add: Option<PartInfo>,
        flushed_wal: Option<u64>,
    ) -> Result<(), StorageError> {
        let _c = self.commit_lock.lock();
        let new_part = match &add {
            Some(info) => {
                let p = Part::open(&self.dir.join(names::part_file(info.id)), info.clone())?;
                p.watch_damage(&self.quarantine);
                Some(Arc::new(p))
            }
            None => None,
        };
        let (mut manifest, mut parts) = {
            let st = self.state.read();
            (st.manifest.clone(), st.parts.clone())
        };
        let pos = parts
            .iter()
            .position(|p| remove.contains(&p.info().id))
            .unwrap_or(parts.len());
        let removed: Vec<Arc<Part>> = parts
            .iter()
            .filter(|p| remove.contains(&p.info().id))
            .cloned()
            .collect();
        parts.retain(|p| !remove.contains(&p.info().id));
        if let Some(p) = new_part {
            parts.insert(pos.min(parts.len()), p);
        }
        manifest.parts = parts.iter().map(|p| p.info().clone()).collect();
        if let Some(w) = flushed_wal {
            manifest.flushed_wal = manifest.flushed_wal.max(w);
        }
        {
            // next_part may have advanced since the snapshot (allocations).
            let st = self.state.read();
            manifest.next_part = manifest.next_part.max(st.manifest.next_part);
        }
        manifest.store(&self.dir)?;
        let mut st = self.state.write();
        manifest.next_part = manifest.next_part.max(st.manifest.next_part);
        st.manifest = manifest;
        st.parts = parts;
        if flushed_wal.is_some() {
            st.last_flush = Instant::now();
        }
        drop(st);
        for p in removed {
            p.mark_obsolete();
        }
        Ok(())
    }
}

/// One tenant: its directory, stream index and partitions.
pub struct Tenant {
    /// The tenant.
    pub id: TenantId,
    /// Its directory.
    pub dir: PathBuf,
    /// Label index.
    pub index: RwLock<StreamIndex>,
    /// Day partitions by day number.
    pub partitions: RwLock<BTreeMap<i64, Arc<Partition>>>,
    /// Serialises appends to the streams file.
    pub streams_lock: Mutex<()>,
    /// Delete requests (received and processed), as in the `deletes` file;
    /// the lock also serialises rewrites of that file.
    pub deletes: RwLock<Vec<Arc<crate::deletes::DeleteRequest>>>,
    /// The store's quarantine, handed to new partitions.
    quarantine: Arc<Quarantine>,
}

impl Tenant {
    /// A tenant with no data yet (its directory is created durably).
    pub fn create(
        id: TenantId,
        dir: PathBuf,
        quarantine: &Arc<Quarantine>,
    ) -> Result<Tenant, StorageError> {
        create_dir_durable(&dir)?;
        Ok(Tenant {
            id,
            dir,
            index: RwLock::new(StreamIndex::default()),
            partitions: RwLock::new(BTreeMap::new()),
            streams_lock: Mutex::new(()),
            deletes: RwLock::new(Vec::new()),
            quarantine: quarantine.clone(),
        })
    }

    /// Loads a tenant directory: stream index and every partition; stream time
    /// ranges are rebuilt from the part indexes. Damaged files go to `quarantine`.
    pub fn open(
        id: TenantId,
        dir: PathBuf,
        quarantine: &Arc<Quarantine>,
    ) -> Result<Tenant, StorageError> {
        let mut index = StreamIndex::load(&dir, quarantine)?;
        // A deletes file that does not verify stops the open: serving without
        // it would show rows that were deleted.
        let deletes = crate::deletes::file::load(&dir)?
            .into_iter()
            .map(Arc::new)
            .collect();
        let mut partitions = BTreeMap::new();
        for (name, path) in list_dir(&dir)? {
            let Some(day) = names::parse_day_name(&name) else {
                continue;
            };
            if !path.is_dir() {
                continue;
            }
            let p = Partition::open(day, &path, quarantine)?;
            for part in &p.state.read().parts {
                for &sid in part.stream_ids() {
                    let blocks = part.stream_blocks(sid);
                    let min = blocks.iter().map(|b| b.meta.min_ts).min().unwrap_or(0);
                    let max = blocks.iter().map(|b| b.meta.max_ts).max().unwrap_or(0);
                    index.note_range(sid, day, min, max);
                }
            }
            partitions.insert(day, Arc::new(p));
        }
        Ok(Tenant {
            id,
            dir,
            index: RwLock::new(index),
            partitions: RwLock::new(partitions),
            streams_lock: Mutex::new(()),
            deletes: RwLock::new(deletes),
            quarantine: quarantine.clone(),
        })
    }

    /// Parts, rows and bytes on disk (every file under its directory) of
    /// this tenant.
    pub fn stats(&self) -> crate::stats::TenantStats {
        let mut s = crate::stats::TenantStats {
            tenant: self.id.as_str().to_string(),
            streams: self.index.read().len() as u64,
            ..Default::default()
        };
        for p in self.partitions.read().values() {
            s.partitions += 1;
            for part in &p.state.read().parts {
                s.parts += 1;
                s.part_rows += part.info().rows;
            }
        }
        s.disk_bytes = crate::fsutil::tree_bytes(&self.dir);
        s
    }

    /// The partition of `day`, created (directory included) when missing.
    pub fn partition(&self, day: i64) -> Result<Arc<Partition>, StorageError> {
        if let Some(p) = self.partitions.read().get(&day) {
            return Ok(p.clone());
        }
        let mut ps = self.partitions.write();
        if let Some(p) = ps.get(&day) {
            return Ok(p.clone());
        }
        let dir = names::partition_dir(&self.dir, day);
        create_dir_durable(&dir)?;
        let p = Arc::new(Partition::new(
            day,
            dir,
            Manifest::default(),
            Vec::new(),
            &self.quarantine,
        ));
        ps.insert(day, p.clone());
        Ok(p)
    }

    /// `flushed_wal` of the partition of `day` (0 when it does not exist).
    pub fn flushed_wal(&self, day: i64) -> u64 {
        self.partitions
            .read()
            .get(&day)
            .map_or(0, |p| p.state.read().manifest.flushed_wal)
    }

    /// Writes streams not yet in the streams file, durably.
    pub fn persist_streams(&self) -> Result<(), StorageError> {
        let _l = self.streams_lock.lock();
        let todo = self.index.read().unpersisted();
        crate::stream_index::persist(&self.dir, &todo)?;
        let sids: Vec<_> = todo.iter().map(|(s, _)| *s).collect();
        self.index.write().mark_persisted(&sids);
        Ok(())
    }
}
