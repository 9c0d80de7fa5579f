//! The per-tenant file of delete requests, `<tenant>/deletes`, replaced
//! atomically (temp file, fsync, rename, fsync the directory) on every
//! change. Layout (integers little-endian, `string` = uvarint length + UTF-8):
//!
//! ```text
//! 8 bytes  magic "RKFDEL\0\0"
//! u32      version = 1
//! uvarint  n_requests
//! n_requests × {
//!   string id | string query | i64 start | i64 end | i64 created | u8 status (0 received, 1 processed)
//!   uvarint n_matchers × { string name | u8 op (0 =, 1 !=, 2 =~, 3 !~) | string value }
//!   uvarint n_filters  × { u8 negate | uvarint n_alternatives × { u8 kind (0 contains, 1 regexp) | string value } }
//! }
//! u32      crc32 of every byte before it
//! ```
//!
//! The parsed selector and filters are stored beside the query text, so the
//! store rebuilds requests without a LogQL parser.

use super::{DeleteRequest, DeleteStatus, LineFilter, LineTest};
use crate::encoding::{put_bytes, put_i64, put_u32, put_uvarint, Reader};
use crate::fsutil::write_atomic;
use crate::{names, StorageError};
use runakefli_model::{MatchOp, Matcher};
use std::path::Path;

const MAGIC: &[u8; 8] = b"RKFDEL\0\0";
const VERSION: u32 = 1;

/// Serialises `requests`.
pub fn encode(requests: &[DeleteRequest]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(MAGIC);
    put_u32(&mut b, VERSION);
    put_uvarint(&mut b, requests.len() as u64);
    for r in requests {
        put_bytes(&mut b, r.id.as_bytes());
        put_bytes(&mut b, r.query.as_bytes());
        put_i64(&mut b, r.start);
        put_i64(&mut b, r.end);
        put_i64(&mut b, r.created);
        b.push(match r.status {
            DeleteStatus::Received => 0,
            DeleteStatus::Processed => 1,
        });
        put_uvarint(&mut b, r.matchers.len() as u64);
        for m in &r.matchers {
            put_bytes(&mut b, m.name.as_bytes());
            b.push(match m.op {
                MatchOp::Eq => 0,
                MatchOp::Neq => 1,
                MatchOp::Re => 2,
                MatchOp::Nre => 3,
            });
            put_bytes(&mut b, m.value.as_bytes());
        }
        put_uvarint(&mut b, r.filters.len() as u64);
        for f in &r.filters {
            b.push(u8::from(f.negate));
            put_uvarint(&mut b, f.alternatives.len() as u64);
            for t in &f.alternatives {
                match t {
                    LineTest::Contains(s) => {
                        b.push(0);
                        put_bytes(&mut b, s.as_bytes());
                    }
                    LineTest::Regex(re) => {
                        b.push(1);
                        put_bytes(&mut b, re.as_str().as_bytes());
                    }
                }
            }
        }
    }
    let crc = crc32fast::hash(&b);
    put_u32(&mut b, crc);
    b
}

/// Parses and verifies a deletes file.
pub fn decode(buf: &[u8], what: &str) -> Result<Vec<DeleteRequest>, StorageError> {
    let bad = |d: &str| StorageError::corrupt(what, d);
    if buf.len() < MAGIC.len() + 8 || &buf[..8] != MAGIC {
        return Err(bad("bad magic"));
    }
    let (body, tail) = buf.split_at(buf.len() - 4);
    if crc32fast::hash(body) != u32::from_le_bytes(tail.try_into().expect("4 bytes")) {
        return Err(bad("checksum mismatch"));
    }
    let mut r = Reader::new(&body[8..], what);
    let version = r.u32()?;
    if version != VERSION {
        return Err(bad(&format!("unknown version {version}")));
    }
    let n = r.count(8)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.string()?;
        let query = r.string()?;
        let start = r.i64()?;
        let end = r.i64()?;
        let created = r.i64()?;
        let status = match r.take(1)?[0] {
            0 => DeleteStatus::Received,
            1 => DeleteStatus::Processed,
            s => return Err(bad(&format!("unknown status {s}"))),
        };
        let nm = r.count(3)?;
        let mut matchers = Vec::with_capacity(nm);
        for _ in 0..nm {
            let name = r.string()?;
            let op = match r.take(1)?[0] {
                0 => MatchOp::Eq,
                1 => MatchOp::Neq,
                2 => MatchOp::Re,
                3 => MatchOp::Nre,
                o => return Err(bad(&format!("unknown matcher op {o}"))),
            };
            let value = r.string()?;
            matchers.push(Matcher::new(name, op, value).map_err(|e| bad(&e.0))?);
        }
        let nf = r.count(2)?;
        let mut filters = Vec::with_capacity(nf);
        for _ in 0..nf {
            let negate = r.take(1)?[0] != 0;
            let na = r.count(2)?;
            let mut alternatives = Vec::with_capacity(na);
            for _ in 0..na {
                let kind = r.take(1)?[0];
                let v = r.string()?;
                alternatives.push(match kind {
                    0 => LineTest::Contains(v),
                    1 => LineTest::Regex(regex::Regex::new(&v).map_err(|e| bad(&e.to_string()))?),
                    k => return Err(bad(&format!("unknown line test {k}"))),
                });
            }
            filters.push(LineFilter {
                negate,
                alternatives,
            });
        }
        out.push(DeleteRequest {
            id,
            query,
            matchers,
            filters,
            start,
            end,
            created,
            status,
        });
    }
    Ok(out)
}

/// Loads the deletes file of `tenant_dir` (none: no requests).
pub fn load(tenant_dir: &Path) -> Result<Vec<DeleteRequest>, StorageError> {
    let path = tenant_dir.join(names::DELETES_FILE);
    match std::fs::read(&path) {
        Ok(b) => decode(&b, &path.display().to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(StorageError::io(&path, e)),
    }
}

/// Replaces the deletes file of `tenant_dir` by `requests`.
pub fn store(tenant_dir: &Path, requests: &[DeleteRequest]) -> Result<(), StorageError> {
    let path = tenant_dir.join(names::DELETES_FILE);
    let tmp = tenant_dir.join(format!("{}{}", names::DELETES_FILE, names::TMP_SUFFIX));
    write_atomic(&path, &tmp, &encode(requests))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<DeleteRequest> {
        vec![
            DeleteRequest {
                id: "0a1b2c3d".into(),
                query: r#"{app="api"} |= "secret" !~ "x.+""#.into(),
                matchers: vec![
                    Matcher::new("app", MatchOp::Eq, "api").unwrap(),
                    Matcher::new("env", MatchOp::Re, "prod|dev").unwrap(),
                ],
                filters: vec![
                    LineFilter {
                        negate: false,
                        alternatives: vec![LineTest::Contains("secret".into())],
                    },
                    LineFilter {
                        negate: true,
                        alternatives: vec![LineTest::Regex(regex::Regex::new("x.+").unwrap())],
                    },
                ],
                start: -5,
                end: i64::MAX,
                created: 1_795_910_400_000_000_000,
                status: DeleteStatus::Processed,
            },
            DeleteRequest {
                id: "ffff0000".into(),
                query: r#"{a!="b"}"#.into(),
                matchers: vec![Matcher::new("a", MatchOp::Neq, "b").unwrap()],
                filters: vec![],
                start: 0,
                end: 1,
                created: 2,
                status: DeleteStatus::Received,
            },
        ]
    }

    fn summary(r: &[DeleteRequest]) -> Vec<String> {
        r.iter().map(|r| format!("{r:?}")).collect()
    }

    #[test]
    fn round_trip_and_damage_is_refused() {
        let reqs = sample();
        let bytes = encode(&reqs);
        assert_eq!(summary(&decode(&bytes, "t").unwrap()), summary(&reqs));
        assert!(decode(&encode(&[]), "t").unwrap().is_empty());
        for i in [0, 9, 20, bytes.len() - 1] {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(
                matches!(decode(&b, "t"), Err(StorageError::Corrupt { .. })),
                "flip at {i}"
            );
        }
        assert!(decode(&bytes[..bytes.len() - 3], "t").is_err());
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_empty());
        store(dir.path(), &reqs).unwrap();
        assert_eq!(summary(&load(dir.path()).unwrap()), summary(&reqs));
    }
}
