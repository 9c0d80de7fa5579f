//! The remote-write queue's log on disk: every recorded sample is appended
//! and fsynced before it is queued, so samples evaluated but not yet sent
//! survive a restart (or a crash) and are sent after it.
//!
//! One file, `samples.log`, of records `[u32 length][u32 CRC-32][JSON
//! sample]` (little-endian). It holds at least the samples not yet sent:
//! the sender empties it when its queue runs dry, and rewrites it from what
//! is still queued once it passes its size bound (the queue dropping its
//! oldest samples meanwhile). Delivery is at least once: a sample sent just
//! before a crash is sent again after it (Prometheus takes an identical
//! sample again without complaint). A torn or damaged tail (a crash
//! mid-append) ends the replay and is cut off.

use crate::sample::RecordedSample;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Header bytes of a record.
const HEADER: usize = 8;
/// Largest record accepted on replay.
const MAX_RECORD: usize = 1 << 20;

/// The log file.
pub struct SampleLog {
    path: PathBuf,
    file: File,
    len: u64,
}

fn encode(samples: &[RecordedSample], out: &mut Vec<u8>) {
    for s in samples {
        let payload = serde_json::to_vec(s).unwrap_or_default();
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        out.extend_from_slice(&payload);
    }
}

/// The samples of `bytes` up to the first torn or damaged record, and the
/// length of that valid prefix.
fn decode(bytes: &[u8]) -> (Vec<RecordedSample>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    while bytes.len() - at >= HEADER {
        let mut word = [0u8; 4];
        word.copy_from_slice(&bytes[at..at + 4]);
        let len = u32::from_le_bytes(word) as usize;
        word.copy_from_slice(&bytes[at + 4..at + 8]);
        let crc = u32::from_le_bytes(word);
        let end = at + HEADER + len;
        if len > MAX_RECORD || end > bytes.len() {
            break;
        }
        let payload = &bytes[at + HEADER..end];
        if crc32fast::hash(payload) != crc {
            break;
        }
        match serde_json::from_slice(payload) {
            Ok(s) => out.push(s),
            Err(_) => break,
        }
        at = end;
    }
    (out, at)
}

impl SampleLog {
    /// Opens (or creates) the log in `dir`, returning it and the samples it
    /// holds, oldest first.
    pub fn open(dir: &Path) -> std::io::Result<(SampleLog, Vec<RecordedSample>)> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("samples.log");
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let (samples, valid) = decode(&bytes);
        if valid < bytes.len() {
            tracing::warn!(
                path = %path.display(),
                cut = bytes.len() - valid,
                "remote-write log: a damaged tail is cut off"
            );
            file.set_len(valid as u64)?;
            file.sync_all()?;
        }
        Ok((
            SampleLog {
                path,
                file,
                len: valid as u64,
            },
            samples,
        ))
    }

    /// Appends samples and fsyncs.
    pub fn append(&mut self, samples: &[RecordedSample]) -> std::io::Result<()> {
        let mut buf = Vec::new();
        encode(samples, &mut buf);
        self.file.write_all(&buf)?;
        self.file.sync_data()?;
        self.len += buf.len() as u64;
        Ok(())
    }

    /// Bytes in the file.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empties the file (everything in it was sent).
    pub fn clear(&mut self) -> std::io::Result<()> {
        if self.len > 0 {
            self.file.set_len(0)?;
            self.file.sync_all()?;
            self.len = 0;
        }
        Ok(())
    }

    /// Replaces the file by one holding just `samples` (temporary file,
    /// fsync, rename, fsync of the directory).
    pub fn rewrite(&mut self, samples: &[RecordedSample]) -> std::io::Result<()> {
        let tmp = self.path.with_extension("log.tmp");
        let mut buf = Vec::new();
        encode(samples, &mut buf);
        {
            let mut f = File::create(&tmp)?;
            f.write_all(&buf)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &self.path)?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)?.sync_all()?;
        }
        self.file = OpenOptions::new().append(true).open(&self.path)?;
        self.len = buf.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(v: f64) -> RecordedSample {
        RecordedSample {
            tenant: "fake".into(),
            labels: vec![("__name__".into(), "x".into())],
            t_ms: 1000,
            value: v,
        }
    }

    #[test]
    fn samples_survive_a_reopen_and_a_torn_tail_is_cut() {
        let tmp = tempfile::tempdir().expect("tempdir");
        {
            let (mut log, old) = SampleLog::open(tmp.path()).expect("opens");
            assert!(old.is_empty());
            log.append(&[sample(1.0), sample(2.0)]).expect("appends");
        }
        // A crash mid-append leaves half a record.
        let path = tmp.path().join("samples.log");
        let mut f = OpenOptions::new().append(true).open(&path).expect("open");
        f.write_all(&[9, 0, 0, 0, 1, 2]).expect("write");
        drop(f);
        let (mut log, old) = SampleLog::open(tmp.path()).expect("reopens");
        assert_eq!(old, [sample(1.0), sample(2.0)]);
        log.rewrite(&[sample(2.0)]).expect("rewrites");
        log.append(&[sample(3.0)]).expect("appends");
        drop(log);
        let (mut log, old) = SampleLog::open(tmp.path()).expect("reopens");
        assert_eq!(old, [sample(2.0), sample(3.0)]);
        log.clear().expect("clears");
        drop(log);
        let (_, old) = SampleLog::open(tmp.path()).expect("reopens");
        assert!(old.is_empty());
    }
}
