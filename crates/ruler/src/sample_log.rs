//! The remote-write queue's log on disk: every recorded sample is appended
//! and fsynced before it is queued, so samples evaluated but not yet sent
//! survive a restart (or a crash) and are sent after it.
//!
//! One file, `samples.log`, of records `[u32 length][u32 CRC-32][JSON]`
//! (little-endian). A record is a sample with its sequence number (its
//! place in the order samples were logged and queued; the value kept as
//! its IEEE-754 bits, so NaN and ±Inf survive) or an acknowledgement
//! `{"acked": n}`: every sample up to number `n` was delivered (or given
//! up on), so a restart does not send it again. It holds at least the
//! samples not yet acknowledged: the sender empties it when its queue runs
//! dry, and rewrites it from what is still queued once it passes its size
//! bound (the queue dropping its oldest samples meanwhile). Delivery is at
//! least once: the batch in flight when the process dies is sent again
//! after it (identical samples, which Prometheus takes again). A torn or
//! damaged tail (a crash mid-append) ends the replay and is cut off.

use crate::sample::RecordedSample;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Header bytes of a record.
const HEADER: usize = 8;
/// Largest record accepted on replay.
const MAX_RECORD: usize = 1 << 20;

/// A sample in the log and its sequence number.
#[derive(Clone, Debug, PartialEq)]
pub struct Logged {
    /// Its place in the order samples were logged (and queued).
    pub seq: u64,
    /// The sample.
    pub sample: RecordedSample,
}

/// One record's JSON.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum Record {
    /// Every sample numbered up to `acked` needs no sending again.
    Ack { acked: u64 },
    /// A sample.
    Sample(SampleRecord),
}

/// A sample as logged. Logs written before sequence numbers and value bits
/// have neither: their samples are numbered in file order, and their value
/// is the JSON number (`null`, which is how a NaN or infinite value was
/// written then, reads as NaN).
#[derive(serde::Serialize, serde::Deserialize)]
struct SampleRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    tenant: String,
    labels: Vec<(String, String)>,
    t_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bits: Option<u64>,
}

/// The log file.
pub struct SampleLog {
    path: PathBuf,
    file: File,
    len: u64,
    next_seq: u64,
}

fn frame(payload: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

fn encode(samples: &[Logged], out: &mut Vec<u8>) {
    for l in samples {
        let s = &l.sample;
        let record = Record::Sample(SampleRecord {
            seq: Some(l.seq),
            tenant: s.tenant.clone(),
            labels: s.labels.clone(),
            t_ms: s.t_ms,
            value: None,
            bits: Some(s.value.to_bits()),
        });
        frame(&serde_json::to_vec(&record).unwrap_or_default(), out);
    }
}

/// What a log's bytes hold: the samples not acknowledged (oldest first),
/// the next sequence number, and the length of the valid prefix (up to the
/// first torn or damaged record).
fn decode(bytes: &[u8]) -> (Vec<Logged>, u64, usize) {
    let mut samples = Vec::new();
    let mut acked: Option<u64> = None;
    let mut next_seq = 0u64;
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
        at = end;
        match serde_json::from_slice::<Record>(payload) {
            Ok(Record::Ack { acked: n }) => acked = Some(acked.map_or(n, |a| a.max(n))),
            Ok(Record::Sample(r)) => {
                let seq = r.seq.unwrap_or(next_seq);
                next_seq = next_seq.max(seq + 1);
                let value = match (r.bits, r.value) {
                    (Some(b), _) => f64::from_bits(b),
                    (None, Some(v)) => v,
                    (None, None) => f64::NAN,
                };
                samples.push(Logged {
                    seq,
                    sample: RecordedSample {
                        tenant: r.tenant,
                        labels: r.labels,
                        t_ms: r.t_ms,
                        value,
                    },
                });
            }
            // Intact (its checksum holds) but not a record of ours: skipped,
            // not a reason to give up on the records after it.
            Err(e) => tracing::warn!(error = %e, "remote-write log: a record is not readable"),
        }
    }
    if let Some(a) = acked {
        samples.retain(|l| l.seq > a);
        next_seq = next_seq.max(a + 1);
    }
    (samples, next_seq, at)
}

impl SampleLog {
    /// Opens (or creates) the log in `dir`, returning it and the samples it
    /// holds that were not acknowledged, oldest first.
    pub fn open(dir: &Path) -> std::io::Result<(SampleLog, Vec<Logged>)> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("samples.log");
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let (samples, next_seq, valid) = decode(&bytes);
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
                next_seq,
            },
            samples,
        ))
    }

    /// Numbers `samples`, appends them and fsyncs. The numbered samples are
    /// returned with the outcome: on an error they are still to be queued
    /// (in memory only), and the file is cut back to what it held before.
    pub fn append(&mut self, samples: Vec<RecordedSample>) -> (Vec<Logged>, std::io::Result<()>) {
        let logged: Vec<Logged> = samples
            .into_iter()
            .map(|sample| {
                let seq = self.next_seq;
                self.next_seq += 1;
                Logged { seq, sample }
            })
            .collect();
        let mut buf = Vec::new();
        encode(&logged, &mut buf);
        let result = self
            .file
            .write_all(&buf)
            .and_then(|()| self.file.sync_data());
        match result {
            Ok(()) => self.len += buf.len() as u64,
            // A torn record would end every later replay: cut it off.
            Err(_) => {
                let _ = self.file.set_len(self.len);
            }
        }
        (logged, result)
    }

    /// Records that every sample numbered up to `seq` needs no sending
    /// again. Not fsynced: a crash keeps it (the page cache survives the
    /// process); a power loss may lose it, and then those samples are sent
    /// again, which Prometheus takes.
    pub fn ack(&mut self, seq: u64) -> std::io::Result<()> {
        let mut buf = Vec::new();
        frame(
            &serde_json::to_vec(&Record::Ack { acked: seq }).unwrap_or_default(),
            &mut buf,
        );
        match self.file.write_all(&buf) {
            Ok(()) => {
                self.len += buf.len() as u64;
                Ok(())
            }
            Err(e) => {
                let _ = self.file.set_len(self.len);
                Err(e)
            }
        }
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
    pub fn rewrite(&mut self, samples: &[Logged]) -> std::io::Result<()> {
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

    fn values(logged: &[Logged]) -> Vec<f64> {
        logged.iter().map(|l| l.sample.value).collect()
    }

    #[test]
    fn samples_survive_a_reopen_and_a_torn_tail_is_cut() {
        let tmp = tempfile::tempdir().expect("tempdir");
        {
            let (mut log, old) = SampleLog::open(tmp.path()).expect("opens");
            assert!(old.is_empty());
            let (logged, r) = log.append(vec![sample(1.0), sample(2.0)]);
            r.expect("appends");
            assert_eq!(logged.iter().map(|l| l.seq).collect::<Vec<_>>(), [0, 1]);
        }
        // A crash mid-append leaves half a record.
        let path = tmp.path().join("samples.log");
        let mut f = OpenOptions::new().append(true).open(&path).expect("open");
        f.write_all(&[9, 0, 0, 0, 1, 2]).expect("write");
        drop(f);
        let (mut log, old) = SampleLog::open(tmp.path()).expect("reopens");
        assert_eq!(values(&old), [1.0, 2.0]);
        log.rewrite(&old[1..]).expect("rewrites");
        let (logged, r) = log.append(vec![sample(3.0)]);
        r.expect("appends");
        assert_eq!(logged[0].seq, 2, "numbers go on after a reopen");
        drop(log);
        let (mut log, old) = SampleLog::open(tmp.path()).expect("reopens");
        assert_eq!(values(&old), [2.0, 3.0]);
        log.clear().expect("clears");
        drop(log);
        let (_, old) = SampleLog::open(tmp.path()).expect("reopens");
        assert!(old.is_empty());
    }

    #[test]
    fn acknowledged_samples_are_not_replayed() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (mut log, _) = SampleLog::open(tmp.path()).expect("opens");
        log.append(vec![sample(1.0), sample(2.0), sample(3.0)])
            .1
            .expect("appends");
        log.ack(1).expect("acks");
        log.append(vec![sample(4.0)]).1.expect("appends");
        drop(log);
        let (mut log, old) = SampleLog::open(tmp.path()).expect("reopens");
        assert_eq!(values(&old), [3.0, 4.0]);
        assert_eq!(old.iter().map(|l| l.seq).collect::<Vec<_>>(), [2, 3]);
        log.ack(3).expect("acks");
        let (logged, r) = log.append(vec![sample(5.0)]);
        r.expect("appends");
        assert_eq!(logged[0].seq, 4);
        drop(log);
        let (_, old) = SampleLog::open(tmp.path()).expect("reopens");
        assert_eq!(values(&old), [5.0]);
    }

    #[test]
    fn nan_and_infinite_values_survive_and_end_no_replay() {
        // Before value bits, a NaN was written as JSON null, which did not
        // read back: the replay stopped there and cut every later sample.
        let tmp = tempfile::tempdir().expect("tempdir");
        let (mut log, _) = SampleLog::open(tmp.path()).expect("opens");
        log.append(vec![sample(f64::NAN), sample(f64::INFINITY), sample(-0.5)])
            .1
            .expect("appends");
        drop(log);
        let (_, old) = SampleLog::open(tmp.path()).expect("reopens");
        let v = values(&old);
        assert_eq!(v.len(), 3);
        assert!(v[0].is_nan());
        assert_eq!(v[1..], [f64::INFINITY, -0.5]);
    }

    #[test]
    fn a_log_of_the_first_format_is_read() {
        // Records as the ruler wrote them before sequence numbers: plain
        // sample JSON, a NaN as null.
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut bytes = Vec::new();
        for json in [
            r#"{"tenant":"fake","labels":[["__name__","x"]],"t_ms":1000,"value":1.5}"#,
            r#"{"tenant":"fake","labels":[["__name__","x"]],"t_ms":2000,"value":null}"#,
            r#"{"tenant":"fake","labels":[["__name__","x"]],"t_ms":3000,"value":2.0}"#,
        ] {
            frame(json.as_bytes(), &mut bytes);
        }
        std::fs::write(tmp.path().join("samples.log"), &bytes).expect("write");
        let (_, old) = SampleLog::open(tmp.path()).expect("opens");
        assert_eq!(old.iter().map(|l| l.seq).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(old[0].sample.value, 1.5);
        assert!(old[1].sample.value.is_nan());
        assert_eq!((old[2].sample.t_ms, old[2].sample.value), (3000, 2.0));
    }
}
