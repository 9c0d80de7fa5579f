//! Lines plans read by legs and pages.
//!
//! A lines plan (`limit` rows in Loki's answer order, `sql::lines_query`)
//! over a long range is read in **legs**: slices of whole UTC days (the
//! `logs` table's partitions), newest first reading backward, oldest first
//! reading forward. The answer order is time first, so every row of a
//! later leg comes after every row of an earlier one, and rows that tie —
//! in time, hence also exact duplicates, collapsed in SQL — always share a
//! leg: the answer is the legs' answers one after the other, and reading
//! stops as soon as `limit` rows are held (with a `| json`/`| logfmt`
//! stage: `limit` rows the SQL kept; the undecided rows before them come
//! too, as in one read). Delete requests hide rows by a mask on every read,
//! each request bounded by its own range, so a request spanning legs hides
//! its rows in each. The first leg is one day (the part of the range in
//! it); each later leg is twice as many days as the one before, so a range
//! the limit fills early costs one short read and a sparse one (a rare line
//! filter over weeks) costs a few reads, not one per day.
//!
//! Within a leg rows come in **pages** ([`LinesPaging`]): at most `rows`
//! rows per read, fewer when the rows seen so far average more than
//! `bytes / rows` bytes, each page the rows after the last one's key
//! (`sql::keyset_condition`), so one answer from ClickHouse never holds more
//! than a page and each page's JSON is dropped once its rows are decoded.
//!
//! Legs run one after another. Reading two at a time would overlap a
//! round trip with the next leg's read but, when the newer leg already
//! fills the limit (the common case this is for), reads the older leg for
//! nothing; the test front runs one request at a time, so no gain could be
//! measured here either.

use crate::cancel::check_cancel;
use crate::client::{Client, ReadProgress, Request};
use crate::rows::{entry_of, str_of, u64_of, u64_of_value};
use crate::sql::{self, LinesKey, LinesRead, RowMask};
use crate::stats::Counters;
use crate::Error;
use runakefli_model::plan::{LineRow, PlanOutput, QueryPlan};
use runakefli_model::{Direction, StreamInfo, Timestamp};
use std::sync::atomic::Ordering;

/// A UTC day in nanoseconds: the `logs` table's partition width.
pub const DAY_NS: i64 = 86_400_000_000_000;

/// How large the pages of a lines plan are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinesPaging {
    /// At most this many rows per read (rows tied with the last on the
    /// whole answer key aside).
    pub rows: usize,
    /// Aim for pages of at most about this many bytes of lines and
    /// metadata: after a page, the next holds `bytes / (average row size
    /// so far)` rows at most (at least one).
    pub bytes: usize,
}

impl Default for LinesPaging {
    /// 1,000 rows (Loki's default limit of 100 and logcli's batches of
    /// 1,000 take one read; `max_entries_per_query`'s 5,000 take five) and
    /// 8 MiB (a page of 1,000 rows of up to 8 KiB each).
    fn default() -> Self {
        LinesPaging {
            rows: 1000,
            bytes: 8 << 20,
        }
    }
}

impl LinesPaging {
    /// Rows for the next page after `rows` rows of `bytes` bytes.
    fn next_rows(&self, rows: u64, bytes: u64) -> usize {
        let max = self.rows.max(1);
        if rows == 0 || bytes == 0 {
            return max;
        }
        let fit = (self.bytes as u128 * rows as u128 / bytes as u128).min(max as u128);
        (fit as usize).max(1)
    }
}

/// The legs of `[start, end)` in the order `direction` reads them, chosen
/// one at a time from what the legs before found: whole UTC days clipped to
/// the range; the first is one day, each later one at least twice the days
/// of the one before, and more when the rows held so far say more are
/// needed (1.5 times the days the rows still wanted take at the density
/// read so far; the whole rest when nothing was found yet).
#[derive(Clone, Debug)]
pub struct Legs {
    start: Timestamp,
    end: Timestamp,
    direction: Direction,
    /// The edge of what is read so far (backward: its start; forward: its end).
    edge: Timestamp,
    /// Days of the last leg; 0 before the first.
    days: i64,
}

impl Legs {
    /// The legs of `[start, end)` read in `direction`.
    pub fn new(start: Timestamp, end: Timestamp, direction: Direction) -> Self {
        let edge = match direction {
            Direction::Backward => end,
            Direction::Forward => start,
        };
        Legs {
            start,
            end,
            direction,
            edge,
            days: 0,
        }
    }

    /// The next leg, with `held` rows found by the legs so far and `wanted`
    /// more wanted; `None` once the range is read.
    pub fn next_leg(&mut self, held: usize, wanted: usize) -> Option<(Timestamp, Timestamp)> {
        let floor = |t: Timestamp| t - t.rem_euclid(DAY_NS);
        let (start, end) = (self.start, self.end);
        if start >= end {
            return None;
        }
        let read = match self.direction {
            Direction::Backward => end - self.edge,
            Direction::Forward => self.edge - start,
        };
        if self.days > 0 && read >= end - start {
            return None;
        }
        let days = if self.days == 0 {
            1
        } else if held == 0 {
            i64::MAX / DAY_NS
        } else {
            // Days the wanted rows take at the density read so far, × 1.5.
            let need = 1.5 * wanted as f64 * read as f64 / held as f64 / DAY_NS as f64;
            self.days
                .saturating_mul(2)
                .max(need.ceil().min((i64::MAX / DAY_NS) as f64) as i64)
        };
        let span = days.saturating_mul(DAY_NS);
        let leg = match self.direction {
            Direction::Backward => {
                let lo = if self.days == 0 {
                    floor(end - 1)
                } else {
                    self.edge.saturating_sub(span)
                }
                .max(start);
                (lo, self.edge)
            }
            Direction::Forward => {
                let hi = if self.days == 0 {
                    floor(start).saturating_add(DAY_NS)
                } else {
                    self.edge.saturating_add(span)
                }
                .min(end);
                (self.edge, hi)
            }
        };
        self.days = days;
        self.edge = match self.direction {
            Direction::Backward => leg.0,
            Direction::Forward => leg.1,
        };
        Some(leg)
    }
}

/// Reads lines plans: ClickHouse through `client`, pages as `paging`
/// says, legs and pages counted in `counters`.
pub(crate) struct LinesReader<'a> {
    /// Where the rows are read.
    pub client: &'a Client,
    /// Where legs, pages and rows are counted.
    pub counters: &'a Counters,
    /// How the legs are paged.
    pub paging: LinesPaging,
}

impl LinesReader<'_> {
    /// A lines plan's rows, read leg by leg and page by page until `limit`
    /// rows (kept rows, with a fields stage) are held, and how many of them
    /// the SQL kept (the others are undecided); `stream` gives a row's
    /// stream, `progress` counts what ClickHouse read.
    pub(crate) fn read(
        &self,
        plan: &QueryPlan,
        mask: &RowMask,
        stream: &dyn Fn(u64) -> Result<StreamInfo, Error>,
        progress: &ReadProgress,
    ) -> Result<(Vec<LineRow>, u64), Error> {
        let PlanOutput::Lines { limit, direction } = plan.output else {
            return Err(Error::Unsupported("not a lines plan".into()));
        };
        let fields = plan.fields.is_some();
        let paging = self.paging;
        let c = self.counters;
        let mut out: Vec<LineRow> = Vec::new();
        let (mut kept, mut seen_rows, mut seen_bytes) = (0usize, 0u64, 0u64);
        if limit == 0 {
            return Ok((out, 0));
        }
        let mut legs = Legs::new(plan.start, plan.end, direction);
        while let Some((start, end)) = legs.next_leg(kept, limit - kept) {
            c.lines_legs.fetch_add(1, Ordering::Relaxed);
            let mut after: Option<LinesKey> = None;
            loop {
                check_cancel(plan)?;
                let wanted = limit - kept;
                let page = paging.next_rows(seen_rows, seen_bytes);
                // Fewer rows than asked: the leg has no more.
                let asked = if fields { page } else { page.min(wanted) };
                let read = LinesRead {
                    start,
                    end,
                    after: after.as_ref(),
                    wanted,
                    page: Some(page),
                };
                let rows = self.client.rows(
                    &sql::lines_read_query(plan, mask, &read)?,
                    &Request {
                        deadline: plan.deadline,
                        progress: Some(progress),
                        ..Request::default()
                    },
                )?;
                c.lines_pages.fetch_add(1, Ordering::Relaxed);
                let mut undecided = 0u64;
                for r in &rows {
                    let res = r.get("res").and_then(u64_of_value) == Some(1);
                    let entry = entry_of(r)?;
                    seen_bytes += entry.line.len() as u64
                        + entry
                            .metadata
                            .iter()
                            .map(|(k, v)| (k.len() + v.len()) as u64)
                            .sum::<u64>();
                    if res {
                        undecided += 1;
                    } else {
                        kept += 1;
                    }
                    out.push(LineRow {
                        stream: stream(u64_of(r, "stream_id")?)?,
                        entry,
                    });
                }
                seen_rows += rows.len() as u64;
                c.plan_rows
                    .fetch_add(rows.len() as u64 - undecided, Ordering::Relaxed);
                c.residual_rows.fetch_add(undecided, Ordering::Relaxed);
                if kept >= limit {
                    if !fields {
                        // Rows tied with the last on the whole key beyond the
                        // limit: one read's `LIMIT` would drop them too.
                        out.truncate(limit);
                        kept = limit;
                    }
                    return Ok((out, kept as u64));
                }
                let Some(last) = rows.last() else { break };
                if rows.len() < asked {
                    break;
                }
                after = Some(LinesKey {
                    ts: out.last().map_or(0, |r| r.entry.ts),
                    labels_text: str_of(last, "labels_text")?.to_string(),
                    seq: u64_of(last, "seq")?,
                });
            }
        }
        Ok((out, kept as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: i64 = DAY_NS;

    /// Every leg of `[s, e)` read in `dir`, `found(leg)` rows found in each
    /// (none wanted after `limit` are held).
    fn walk(
        s: i64,
        e: i64,
        dir: Direction,
        limit: usize,
        found: impl Fn((i64, i64)) -> usize,
    ) -> Vec<(i64, i64)> {
        let (mut legs, mut out, mut held) = (Legs::new(s, e, dir), Vec::new(), 0);
        while held < limit {
            let Some(l) = legs.next_leg(held, limit - held) else {
                break;
            };
            held += found(l);
            out.push(l);
        }
        out
    }

    #[test]
    fn legs_are_whole_days_doubling_from_the_end_read_first() {
        // 7 days and a bit, a row a day, 6 wanted. Backward: today's 5 ns
        // (1 row: the density asks nothing more), 2 days (3 rows in 2 days
        // and 5 ns: 3 more take 3 days, ×1.5 → 4.5; twice 2 is 4), 4 days.
        let (s, e) = (D / 2, 7 * D + 5);
        let one_a_day = |(a, b): (i64, i64)| ((b - a + D - 1) / D) as usize;
        assert_eq!(
            walk(s, e, Direction::Backward, 6, one_a_day),
            [(7 * D, e), (5 * D, 7 * D), (D, 5 * D)]
        );
        // Forward: half a day with a row (5 more at 2 a day, ×1.5 → 4
        // days), then the rest.
        assert_eq!(
            walk(s, e, Direction::Forward, 6, one_a_day),
            [(s, D), (D, 5 * D), (5 * D, e)]
        );
        // A row per leg whatever its length: the density asks for more
        // than double (3 more at 1 a day → 5 days; 2 at 1 in 3 → 9, twice 5
        // is 10; 1 at 1 in 5⅓ → 8, twice 10 is 20).
        let sparse = |(a, b): (i64, i64)| usize::from(b - a >= D / 2);
        assert_eq!(
            walk(0, 40 * D, Direction::Backward, 4, sparse),
            [
                (39 * D, 40 * D),
                (34 * D, 39 * D),
                (24 * D, 34 * D),
                (4 * D, 24 * D)
            ]
        );
        // Nothing found in the first leg: the rest at once.
        assert_eq!(
            walk(s, e, Direction::Backward, 5, |_| 0),
            [(7 * D, e), (s, 7 * D)]
        );
        // Within a day: one leg, the whole range.
        assert_eq!(
            walk(D + 1, 2 * D, Direction::Backward, 5, |_| 0),
            [(D + 1, 2 * D)]
        );
        assert_eq!(walk(D, 2 * D, Direction::Forward, 5, |_| 0), [(D, 2 * D)]);
        // Exactly at a day's start: the day before is not read.
        assert_eq!(
            walk(D, 3 * D, Direction::Backward, 5, one_a_day),
            [(2 * D, 3 * D), (D, 2 * D)]
        );
        // Before the epoch, days are still UTC days.
        assert_eq!(
            walk(-D - 1, 1, Direction::Backward, 5, one_a_day),
            [(0, 1), (-D - 1, 0)]
        );
        assert!(walk(5, 5, Direction::Forward, 5, one_a_day).is_empty());
        // Legs cover the range once, in order, whatever the span and density.
        for (s, e) in [(3, 40 * D + 7), (-3 * D, 100 * D), (0, D)] {
            for dir in [Direction::Backward, Direction::Forward] {
                for per_leg in [0, 1, 3] {
                    let mut l = walk(s, e, dir, usize::MAX, |_| per_leg);
                    if dir == Direction::Backward {
                        l.reverse();
                    }
                    assert_eq!(l.first().unwrap().0, s);
                    assert_eq!(l.last().unwrap().1, e);
                    assert!(l.windows(2).all(|w| w[0].1 == w[1].0));
                    assert!(l.iter().all(|&(a, b)| a < b));
                    assert!(l.iter().all(|&(a, _)| a == s || a.rem_euclid(D) == 0));
                    assert!(l.iter().all(|&(_, b)| b == e || b.rem_euclid(D) == 0));
                }
            }
        }
    }

    #[test]
    fn pages_shrink_to_the_byte_budget() {
        let p = LinesPaging {
            rows: 1000,
            bytes: 1 << 20,
        };
        assert_eq!(p.next_rows(0, 0), 1000);
        // 100-byte rows: 10,485 fit, the row bound holds.
        assert_eq!(p.next_rows(50, 5_000), 1000);
        // 64 KiB rows: 16 fit.
        assert_eq!(p.next_rows(10, 10 << 16), 16);
        // Rows larger than the budget: one at a time.
        assert_eq!(p.next_rows(1, 4 << 20), 1);
    }
}
