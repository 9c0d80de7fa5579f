//! Time zones for the template function `toDateInZone`: UTC, or an IANA
//! zone read from the system's zoneinfo files (TZif), as Go's
//! `time.LoadLocation` finds them.
//!
//! Offsets come from the file's transitions (version 2 and later: 64-bit
//! times). Past the last transition the last offset stays; the file's
//! footer rule (which the "slim" zoneinfo format relies on for future
//! daylight saving time) is not read. `Local` is taken as UTC, the zone the
//! server runs in.

/// Directories Go's `LoadLocation` searches on Unix, in its order.
const ZONEINFO_DIRS: &[&str] = &[
    "/usr/share/zoneinfo/",
    "/usr/share/lib/zoneinfo/",
    "/usr/lib/locale/TZ/",
    "/etc/zoneinfo/",
];

/// One kind of local time of a zone.
#[derive(Clone, Debug, PartialEq, Eq)]
struct LocalKind {
    /// Seconds east of UTC.
    offset: i32,
    /// Daylight saving time.
    dst: bool,
    /// Abbreviation (`CET`).
    abbrev: String,
}

/// A time zone: its kinds of local time and when each starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zone {
    kinds: Vec<LocalKind>,
    /// `(UTC second, kind)`, in time order.
    transitions: Vec<(i64, usize)>,
}

impl Zone {
    /// Coordinated Universal Time.
    pub fn utc() -> Zone {
        Zone {
            kinds: vec![LocalKind {
                offset: 0,
                dst: false,
                abbrev: "UTC".into(),
            }],
            transitions: Vec::new(),
        }
    }

    /// The zone named `name` as Go's `time.LoadLocation` loads it (`""` and
    /// `UTC` are UTC, `Local` the server's zone, taken as UTC); `None` when
    /// the name is not a zone (Loki's `toDateInZone` then uses UTC).
    pub fn load(name: &str) -> Option<Zone> {
        if name.is_empty() || name == "UTC" || name == "Local" {
            return Some(Zone::utc());
        }
        if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
            return None;
        }
        ZONEINFO_DIRS
            .iter()
            .filter_map(|dir| std::fs::read(format!("{dir}{name}")).ok())
            .find_map(|bytes| Zone::from_tzif(&bytes))
    }

    /// Reads a TZif file (the 64-bit data of version 2 and later, else the
    /// 32-bit data of version 1).
    fn from_tzif(b: &[u8]) -> Option<Zone> {
        if b.get(..4)? != b"TZif" {
            return None;
        }
        let version = *b.get(4)?;
        let (v1_counts, v1_len) = tzif_counts(b, 0, 4)?;
        if version >= b'2' {
            let at = 44 + v1_len;
            let (counts, _) = tzif_counts(b, at, 8)?;
            return tzif_data(b, at + 44, counts, 8);
        }
        tzif_data(b, 44, v1_counts, 4)
    }

    /// The kind of local time in effect at UTC second `t`, and the UTC
    /// seconds `[start, end)` it lasts.
    fn lookup(&self, t: i64) -> (&LocalKind, i64, i64) {
        let first = || self.kinds.iter().position(|k| !k.dst).unwrap_or_default();
        let i = self.transitions.partition_point(|&(at, _)| at <= t);
        let kind = match i {
            0 => first(),
            i => self.transitions[i - 1].1,
        };
        let start = match i {
            0 => i64::MIN,
            i => self.transitions[i - 1].0,
        };
        let end = self.transitions.get(i).map_or(i64::MAX, |&(at, _)| at);
        let k = self.kinds.get(kind).or(self.kinds.first());
        static UTC: LocalKind = LocalKind {
            offset: 0,
            dst: false,
            abbrev: String::new(),
        };
        (k.unwrap_or(&UTC), start, end)
    }

    /// The offset (seconds east of UTC) of the wall clock `wall` (seconds
    /// since the epoch as if it were UTC) in this zone, chosen as Go's
    /// `time.Date` does around a change of offset.
    pub fn offset_of_wall(&self, wall: i64) -> i64 {
        let (kind, start, end) = self.lookup(wall);
        let mut offset = i64::from(kind.offset);
        if offset != 0 {
            let utc = wall - offset;
            if utc < start || utc >= end {
                offset = i64::from(self.lookup(utc).0.offset);
            }
        }
        offset
    }

    /// The offset of abbreviation `abbrev` (`CEST`) for the wall clock
    /// `wall`: the kind in effect then when it has that name, else any kind
    /// of the zone with it.
    pub fn offset_of_abbrev(&self, abbrev: &str, wall: i64) -> Option<i64> {
        let named = || self.kinds.iter().filter(|k| k.abbrev == abbrev);
        named()
            .find(|k| self.lookup(wall - i64::from(k.offset)).0.abbrev == abbrev)
            .or_else(|| named().next())
            .map(|k| i64::from(k.offset))
    }
}

/// The six counts of the TZif header at `at` (`isutcnt`, `isstdcnt`,
/// `leapcnt`, `timecnt`, `typecnt`, `charcnt`) and the length of the data
/// block that follows, with `time_size`-byte times.
fn tzif_counts(b: &[u8], at: usize, time_size: usize) -> Option<([usize; 6], usize)> {
    let mut c = [0usize; 6];
    for (i, slot) in c.iter_mut().enumerate() {
        let p = at + 20 + 4 * i;
        *slot = u32::from_be_bytes(b.get(p..p + 4)?.try_into().ok()?) as usize;
    }
    let [isut, isstd, leap, time, typ, chars] = c;
    let len = time * time_size + time + typ * 6 + chars + leap * (time_size + 4) + isstd + isut;
    Some((c, len))
}

/// The transitions and kinds of a TZif data block at `at`.
fn tzif_data(b: &[u8], at: usize, counts: [usize; 6], time_size: usize) -> Option<Zone> {
    let [_, _, _, timecnt, typecnt, charcnt] = counts;
    let times_at = at;
    let idx_at = times_at + timecnt * time_size;
    let types_at = idx_at + timecnt;
    let chars_at = types_at + typecnt * 6;
    let chars = b.get(chars_at..chars_at + charcnt)?;
    let mut kinds = Vec::with_capacity(typecnt);
    for i in 0..typecnt {
        let p = types_at + 6 * i;
        let offset = i32::from_be_bytes(b.get(p..p + 4)?.try_into().ok()?);
        let dst = *b.get(p + 4)? != 0;
        let from = *b.get(p + 5)? as usize;
        let name = chars.get(from..)?;
        let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
        kinds.push(LocalKind {
            offset,
            dst,
            abbrev: String::from_utf8_lossy(&name[..end]).into_owned(),
        });
    }
    let mut transitions = Vec::with_capacity(timecnt);
    for i in 0..timecnt {
        let p = times_at + i * time_size;
        let t = if time_size == 8 {
            i64::from_be_bytes(b.get(p..p + 8)?.try_into().ok()?)
        } else {
            i64::from(i32::from_be_bytes(b.get(p..p + 4)?.try_into().ok()?))
        };
        let kind = *b.get(idx_at + i)? as usize;
        if kind >= typecnt {
            return None;
        }
        transitions.push((t, kind));
    }
    if kinds.is_empty() {
        return None;
    }
    Some(Zone { kinds, transitions })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_and_bad_names() {
        assert_eq!(Zone::load("UTC"), Some(Zone::utc()));
        assert_eq!(Zone::load(""), Some(Zone::utc()));
        assert_eq!(Zone::load("../etc/passwd"), None);
        assert_eq!(Zone::load("/etc/passwd"), None);
        assert_eq!(Zone::load("No/Such_Zone"), None);
        assert_eq!(Zone::utc().offset_of_wall(1_700_000_000), 0);
    }

    /// Berlin in winter and summer, where the machine has zoneinfo.
    #[test]
    fn an_iana_zone_where_installed() {
        let Some(z) = Zone::load("Europe/Berlin") else {
            return;
        };
        // 2024-01-15 12:00 and 2024-07-15 12:00 as wall clocks.
        assert_eq!(z.offset_of_wall(1_705_320_000), 3600);
        assert_eq!(z.offset_of_wall(1_721_044_800), 7200);
        assert_eq!(z.offset_of_abbrev("CEST", 1_721_044_800), Some(7200));
        assert_eq!(z.offset_of_abbrev("XYZ", 1_721_044_800), None);
    }
}
