//! A scan's rows, streamed from ClickHouse grouped by stream, handed to the
//! engine's visitor in per-stream batches of at most [`SCAN_BATCH`]
//! entries, with the visitor's [`ScanControl`] obeyed.

use crate::rows::{entry_of, u64_of};
use crate::stream_catalog::StreamCatalog;
use crate::Error;
use runakefli_model::{Entry, EntryBatch, ScanControl, StreamId, StreamInfo};
use serde_json::Value;

/// The most entries a scan hands to its visitor at once.
const SCAN_BATCH: usize = 1024;

/// Groups a scan's streamed rows into per-stream batches for its visitor.
pub(crate) struct ScanBatcher<'s, 'v> {
    streams: &'s StreamCatalog<'s>,
    visit: &'v mut dyn FnMut(&StreamInfo, EntryBatch) -> ScanControl,
    /// The stream of the rows being read (`None` before the first), and
    /// its info (`None`: left out by the selector's residual matchers).
    current: Option<(StreamId, Option<StreamInfo>)>,
    entries: Vec<Entry>,
    /// The visitor asked for the next stream: the current one's rows are
    /// read past.
    skipping: bool,
}

impl<'s, 'v> ScanBatcher<'s, 'v> {
    /// A batcher handing the rows of `streams` to `visit`.
    pub(crate) fn new(
        streams: &'s StreamCatalog<'s>,
        visit: &'v mut dyn FnMut(&StreamInfo, EntryBatch) -> ScanControl,
    ) -> Self {
        ScanBatcher {
            streams,
            visit,
            current: None,
            entries: Vec::new(),
            skipping: false,
        }
    }

    /// Takes one row; `false` once the visitor has stopped the scan.
    pub(crate) fn row(&mut self, row: &Value) -> Result<bool, Error> {
        let id = u64_of(row, "stream_id")?;
        if self.current.as_ref().map(|(c, _)| *c) != Some(id) {
            if !self.flush()? {
                return Ok(false);
            }
            self.current = Some((id, self.streams.get(id)?));
            self.skipping = false;
        }
        let kept = matches!(&self.current, Some((_, Some(_))));
        if self.skipping || !kept {
            return Ok(true);
        }
        self.entries.push(entry_of(row)?);
        if self.entries.len() >= SCAN_BATCH {
            return self.flush();
        }
        Ok(true)
    }

    /// Hands the entries held to the visitor; `false` when it stops the scan.
    fn flush(&mut self) -> Result<bool, Error> {
        let Some((_, Some(info))) = &self.current else {
            return Ok(true);
        };
        if self.entries.is_empty() {
            return Ok(true);
        }
        let entries = std::mem::take(&mut self.entries);
        match (self.visit)(info, EntryBatch { entries }) {
            ScanControl::Continue => Ok(true),
            ScanControl::NextStream => {
                self.skipping = true;
                Ok(true)
            }
            ScanControl::Stop => Ok(false),
        }
    }

    /// Hands on the last rows once the answer has ended.
    pub(crate) fn finish(mut self) -> Result<(), Error> {
        self.flush().map(|_| ())
    }
}
