//! Every on-disk name of the store: directories, file names and how day
//! partitions are spelled. Nothing else in the crate builds a path by hand.

use runakefli_model::civil::{civil_from_days, days_from_civil};
use std::path::{Path, PathBuf};

/// Lock file held (flock) by the process that has the store open.
pub const LOCK_FILE: &str = "LOCK";
/// Directory of WAL segments, under the data directory.
pub const WAL_DIR: &str = "wal";
/// Extension of a WAL segment file (`<seq:020>.wal`).
pub const WAL_EXT: &str = "wal";
/// Directory holding one directory per tenant, under the data directory.
pub const TENANTS_DIR: &str = "tenants";
/// The stream index log of a tenant, in the tenant directory.
pub const STREAMS_FILE: &str = "streams.idx";
/// Per-tenant file of delete requests.
pub const DELETES_FILE: &str = "deletes";
/// The live manifest of a partition.
pub const MANIFEST_FILE: &str = "MANIFEST";
/// A manifest being written; renamed over [`MANIFEST_FILE`] when complete.
pub const MANIFEST_TMP_FILE: &str = "MANIFEST.tmp";
/// Extension of a part file (`<id:016x>.part`).
pub const PART_EXT: &str = "part";
/// Suffix of a part still being written (`<id:016x>.part.tmp`), and of a WAL
/// segment being rewritten without its damaged records (`<seq:020>.wal.tmp`).
pub const TMP_SUFFIX: &str = ".tmp";
/// Directory of files that failed verification, under the data directory
/// (see [`crate::quarantine`]).
pub const QUARANTINE_DIR: &str = "quarantine";
/// Suffix of the file beside each quarantined file that says why.
pub const REASON_SUFFIX: &str = ".reason";
/// The WAL high-water mark: the highest segment number ever started, kept
/// outside `wal/` so that an emptied `wal/` cannot restart the numbering.
pub const WAL_HIGH_WATER_FILE: &str = "WAL_HIGH_WATER";
/// The high-water mark being replaced.
pub const WAL_HIGH_WATER_TMP_FILE: &str = "WAL_HIGH_WATER.tmp";

/// Path of WAL segment `seq`.
pub fn wal_segment(data: &Path, seq: u64) -> PathBuf {
    data.join(WAL_DIR).join(format!("{seq:020}.{WAL_EXT}"))
}

/// Path of the temporary file a WAL segment `seq` is rewritten into.
pub fn wal_segment_tmp(data: &Path, seq: u64) -> PathBuf {
    data.join(WAL_DIR)
        .join(format!("{seq:020}.{WAL_EXT}{TMP_SUFFIX}"))
}

/// Parses a WAL segment file name back into its sequence number.
pub fn parse_wal_segment(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(&format!(".{WAL_EXT}"))?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// Directory of a tenant.
pub fn tenant_dir(data: &Path, tenant: &str) -> PathBuf {
    data.join(TENANTS_DIR).join(tenant)
}

/// Directory of a tenant's day partition.
pub fn partition_dir(tenant_dir: &Path, day: i64) -> PathBuf {
    tenant_dir.join(day_name(day))
}

/// File name of part `id`.
pub fn part_file(id: u64) -> String {
    format!("{id:016x}.{PART_EXT}")
}

/// Parses a part file name back into its id.
pub fn parse_part_file(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(&format!(".{PART_EXT}"))?;
    if stem.len() != 16 {
        return None;
    }
    u64::from_str_radix(stem, 16).ok()
}

/// `YYYYMMDD` of a day number (days since 1970-01-01, UTC). Years outside
/// 0..=9999 are written with a sign and more digits, which still parse back.
pub fn day_name(day: i64) -> String {
    let (y, m, d) = civil_from_days(day);
    if (0..=9999).contains(&y) {
        format!("{y:04}{m:02}{d:02}")
    } else {
        format!("{y:+}{m:02}{d:02}")
    }
}

/// Parses a partition directory name back into its day number.
pub fn parse_day_name(name: &str) -> Option<i64> {
    if name.len() < 8 || !name.is_ascii() {
        return None;
    }
    let (ys, rest) = name.split_at(name.len() - 4);
    let y: i64 = ys.parse().ok()?;
    let m: u32 = rest[..2].parse().ok()?;
    let d: u32 = rest[2..].parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let day = days_from_civil(y, m, d);
    (day_name(day) == name).then_some(day)
}

/// Day number of a timestamp in nanoseconds (UTC).
pub fn day_of(ts: i64) -> i64 {
    ts.div_euclid(runakefli_model::NANOS_PER_DAY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_names_round_trip() {
        assert_eq!(day_name(0), "19700101");
        assert_eq!(day_name(-1), "19691231");
        assert_eq!(day_name(19_723), "20240101");
        for day in [-800_000, -1, 0, 1, 11_016, 19_723, 20_000, 106_751] {
            assert_eq!(parse_day_name(&day_name(day)), Some(day), "{day}");
        }
        assert_eq!(parse_day_name("20241301"), None);
        assert_eq!(parse_day_name("2024023x"), None);
        assert_eq!(day_of(-1), -1);
        assert_eq!(day_of(runakefli_model::NANOS_PER_DAY), 1);
    }

    #[test]
    fn file_names_round_trip() {
        assert_eq!(parse_part_file(&part_file(0xabc)), Some(0xabc));
        assert_eq!(parse_part_file("x.part"), None);
        let p = wal_segment(Path::new("/d"), 42);
        let name = p.file_name().unwrap().to_str().unwrap();
        assert_eq!(parse_wal_segment(name), Some(42));
        assert_eq!(parse_wal_segment("42.wal"), None);
    }
}
