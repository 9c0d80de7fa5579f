//! Tenants and their day partitions as held in memory: the live parts of each
//! partition (ordered by push order), its manifest, and the stream index.
//! Opening a partition deletes files its manifest does not list (crash leftovers).

use crate::fsutil::{create_dir_durable, fsync_dir, list_dir, remove_file};
use crate::manifest::Manifest;
use crate::part::{Part, PartInfo};
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
}

impl Partition {
    fn new(day: i64, dir: PathBuf, manifest: Manifest, parts: Vec<Arc<Part>>) -> Self {
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
        }
    }

    /// Opens partition `dir`: reads the manifest, removes unlisted files, opens parts.
    pub fn open(day: i64, dir: &Path) -> Result<Partition, StorageError> {
        let manifest = Manifest::load(dir)?.unwrap_or_default();
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
            tracing::info!(path = %path.display(), "removing file not in manifest");
            remove_file(&path)?;
            removed = true;
        }
        if removed {
            fsync_dir(dir)?;
        }
        let mut parts = Vec::with_capacity(manifest.parts.len());
        for info in &manifest.parts {
            let path = dir.join(names::part_file(info.id));
            parts.push(Arc::new(Part::open(&path, info.clone())?));
        }
        Ok(Partition::new(day, dir.to_path_buf(), manifest, parts))
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
            Some(info) => Some(Arc::new(Part::open(
                &self.dir.join(names::part_file(info.id)),
                info.clone(),
            )?)),
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
}

impl Tenant {
    /// A tenant with no data yet (its directory is created durably).
    pub fn create(id: TenantId, dir: PathBuf) -> Result<Tenant, StorageError> {
        create_dir_durable(&dir)?;
        Ok(Tenant {
            id,
            dir,
            index: RwLock::new(StreamIndex::default()),
            partitions: RwLock::new(BTreeMap::new()),
            streams_lock: Mutex::new(()),
        })
    }

    /// Loads a tenant directory: stream index and every partition; stream time
    /// ranges are rebuilt from the part indexes.
    pub fn open(id: TenantId, dir: PathBuf) -> Result<Tenant, StorageError> {
        let mut index = StreamIndex::load(&dir)?;
        let mut partitions = BTreeMap::new();
        for (name, path) in list_dir(&dir)? {
            let Some(day) = names::parse_day_name(&name) else {
                continue;
            };
            if !path.is_dir() {
                continue;
            }
            let p = Partition::open(day, &path)?;
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
        })
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
        let p = Arc::new(Partition::new(day, dir, Manifest::default(), Vec::new()));
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
