//! Damage found when a part's block is read.
//!
//! Opening a part verifies its header, footer and index; a block's own bytes
//! are verified only when it is read (the part index's crc32 for raw blocks,
//! the block's frame checksums for columnar ones). When that fails, the part
//! reports it once per block: a `warn` line naming the file, the block's
//! offset and the reason, the `damaged_blocks` counter, and, the first time
//! for that part, a hard-linked copy in the [`Quarantine`] with a `.reason`
//! file. The read then goes on without that block, so everything else is
//! served; a merge of the part leaves the block out while the quarantined copy
//! keeps its bytes. A part not attached to a quarantine (tools, tests that
//! open parts directly) returns the error instead: nothing is skipped unless
//! it was reported first.

use crate::quarantine::Quarantine;
use crate::StorageError;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// What a part knows about its damaged blocks.
#[derive(Debug, Default)]
pub(crate) struct DamageLog {
    /// Per block: found damaged and reported.
    blocks: Vec<AtomicBool>,
    /// A copy of the part is in the quarantine.
    quarantined: AtomicBool,
    /// Where reports go; set by the partition that serves the part.
    quarantine: OnceLock<Arc<Quarantine>>,
}

impl DamageLog {
    /// A log for a part of `blocks` blocks.
    pub fn new(blocks: usize) -> Self {
        DamageLog {
            blocks: (0..blocks).map(|_| AtomicBool::new(false)).collect(),
            ..Default::default()
        }
    }

    /// Sends later reports to `quarantine` (the first call wins).
    pub fn attach(&self, quarantine: &Arc<Quarantine>) {
        let _ = self.quarantine.set(quarantine.clone());
    }

    /// Whether block `index` was already found damaged.
    pub fn is_damaged(&self, index: u32) -> bool {
        self.blocks
            .get(index as usize)
            .is_some_and(|b| b.load(Ordering::Relaxed))
    }

    /// Reports that reading block `index` (at `offset` of `part`) failed with
    /// `err`. `Ok` when the block may be skipped: it is reported (now or
    /// earlier) and the part's bytes are kept in the quarantine. The error
    /// itself when it is not damage, or no quarantine is attached; the
    /// quarantine's error when keeping the copy failed.
    pub fn report(
        &self,
        part: &Path,
        index: u32,
        offset: u64,
        err: StorageError,
    ) -> Result<(), StorageError> {
        if !matches!(err, StorageError::Corrupt { .. }) {
            return Err(err);
        }
        let Some(q) = self.quarantine.get() else {
            return Err(err);
        };
        let Some(flag) = self.blocks.get(index as usize) else {
            return Err(err);
        };
        if flag.load(Ordering::Relaxed) {
            return Ok(());
        }
        let reason = format!(
            "block at {offset} damaged, found when read (the part's other blocks are still served): {err}"
        );
        if !self.quarantined.load(Ordering::Relaxed) {
            q.link_in(part, &reason)?;
            self.quarantined.store(true, Ordering::Relaxed);
        }
        if !flag.swap(true, Ordering::Relaxed) {
            q.note_damaged_block();
            tracing::warn!(
                file = %part.display(),
                offset,
                reason = %err,
                "damaged block skipped: its rows are left out of reads and merges; the part is kept in quarantine"
            );
        }
        Ok(())
    }
}
