//! The manifest of a day partition: which parts are live, how far the WAL is
//! covered by them, and the next part id. Replaced atomically on every change.
//!
//! Text format, one item per line, ending with a CRC-32 of everything before it:
//! ```text
//! runakefli-manifest 1
//! flushed_wal <segment>
//! next_part <id>
//! part <id:016x> <order> <level> <rows> <bytes>
//! crc32 <8 hex digits>
//! ```

use crate::fsutil::write_atomic;
use crate::part::PartInfo;
use crate::{names, StorageError};
use std::path::Path;

const HEADER: &str = "runakefli-manifest 1";

/// Contents of a partition manifest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Every WAL record of this partition in a segment numbered below this is in
    /// the listed parts; replay skips them.
    pub flushed_wal: u64,
    /// Next unused part id.
    pub next_part: u64,
    /// Live parts, in push order (ascending `order`).
    pub parts: Vec<PartInfo>,
}

impl Manifest {
    /// Serialises the manifest.
    pub fn encode(&self) -> String {
        let mut s = format!(
            "{HEADER}\nflushed_wal {}\nnext_part {}\n",
            self.flushed_wal, self.next_part
        );
        for p in &self.parts {
            s.push_str(&format!(
                "part {:016x} {} {} {} {}\n",
                p.id, p.order, p.level, p.rows, p.bytes
            ));
        }
        let crc = crc32fast::hash(s.as_bytes());
        s.push_str(&format!("crc32 {crc:08x}\n"));
        s
    }

    /// Parses and verifies a manifest.
    pub fn decode(text: &[u8], what: &str) -> Result<Manifest, StorageError> {
        let bad = |d: &str| StorageError::corrupt(what, d);
        let text = std::str::from_utf8(text).map_err(|_| bad("not utf-8"))?;
        let text = text
            .strip_suffix('\n')
            .ok_or_else(|| bad("missing final newline"))?;
        let body_end = text
            .rfind('\n')
            .map(|i| i + 1)
            .ok_or_else(|| bad("too short"))?;
        let (body, last) = text.split_at(body_end);
        let crc = last
            .strip_prefix("crc32 ")
            .filter(|h| h.len() == 8 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| bad("missing checksum"))?;
        if crc32fast::hash(body.as_bytes()) != crc {
            return Err(bad("checksum mismatch"));
        }
        let mut lines = body.lines();
        if lines.next() != Some(HEADER) {
            return Err(bad("unknown header or version"));
        }
        let mut m = Manifest::default();
        for line in lines {
            let f: Vec<&str> = line.split(' ').collect();
            let num = |i: usize| {
                f.get(i)
                    .and_then(|s| s.parse::<u64>().ok())
                    .ok_or_else(|| bad(line))
            };
            match f[0] {
                "flushed_wal" => m.flushed_wal = num(1)?,
                "next_part" => m.next_part = num(1)?,
                "part" if f.len() == 6 => m.parts.push(PartInfo {
                    id: u64::from_str_radix(f[1], 16).map_err(|_| bad(line))?,
                    order: num(2)?,
                    level: u32::try_from(num(3)?).map_err(|_| bad(line))?,
                    rows: num(4)?,
                    bytes: num(5)?,
                }),
                _ => return Err(bad(line)),
            }
        }
        Ok(m)
    }

    /// Reads the manifest of partition `dir`, `None` when there is none.
    pub fn load(dir: &Path) -> Result<Option<Manifest>, StorageError> {
        let path = dir.join(names::MANIFEST_FILE);
        match std::fs::read(&path) {
            Ok(b) => Manifest::decode(&b, &path.display().to_string()).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StorageError::io(&path, e)),
        }
    }

    /// Atomically replaces the manifest of partition `dir`.
    pub fn store(&self, dir: &Path) -> Result<(), StorageError> {
        write_atomic(
            &dir.join(names::MANIFEST_FILE),
            &dir.join(names::MANIFEST_TMP_FILE),
            self.encode().as_bytes(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let m = Manifest {
            flushed_wal: 12,
            next_part: 5,
            parts: vec![PartInfo {
                id: 3,
                order: 1,
                level: 1,
                rows: 100,
                bytes: 4096,
            }],
        };
        let d = tempfile::tempdir().unwrap();
        m.store(d.path()).unwrap();
        assert_eq!(Manifest::load(d.path()).unwrap(), Some(m.clone()));
        let text = m.encode().into_bytes();
        for i in 0..text.len() {
            let mut t = text.clone();
            t[i] = t[i].wrapping_add(1);
            assert!(Manifest::decode(&t, "m").is_err(), "byte {i}");
        }
        assert!(Manifest::load(&d.path().join("none")).unwrap().is_none());
    }
}
