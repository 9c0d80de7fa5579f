//! The values a plan's streams give the labels it reads, one small table
//! per plan.
//!
//! Every columnar block of a stream needs its stream's value of each label
//! the fields stage reads (a label a line does not carry is the stream's).
//! Looking those up in each stream's [`Labels`](runakefli_model::Labels)
//! walks scattered strings (a binary search of the names, each compare a
//! cache miss): with one block per stream that was 10 % of a grouped count
//! over every stream. The table is made once per plan from the stream
//! index's postings (label name → value → streams), which hold each value
//! once: a cell per (stream, label), each an id into the plan's few
//! distinct values.

use runakefli_model::{Labels, StreamId};
use runakefli_storage::block::hash::FastMap;
use std::collections::HashMap;

/// The cell of a label the stream does not have.
const ABSENT: u32 = u32::MAX;

/// Per stream of a plan, its values of the labels the plan reads.
#[derive(Debug, Default)]
pub(crate) struct StreamLabels {
    /// Labels per stream (the row width of `cells`).
    width: usize,
    /// `cells[stream * width + label]`: an index into `values`, or [`ABSENT`].
    cells: Vec<u32>,
    /// The distinct values.
    values: Vec<Box<str>>,
}

impl StreamLabels {
    /// The table of `names` over `streams` (a plan's streams, in plan order),
    /// from `postings` (the index's values and streams of a label name).
    ///
    /// When the plan reads few streams of the index (`postings` hold far
    /// more streams than the plan), each stream's labels are looked up
    /// instead (`labels_of`), which is cheaper than walking every posting.
    pub fn build<'i>(
        names: &[String],
        streams: &[StreamId],
        index_streams: usize,
        postings: impl Fn(&str) -> Option<&'i HashMap<String, Vec<StreamId>>>,
        labels_of: impl Fn(usize) -> &'i Labels,
    ) -> StreamLabels {
        let width = names.len();
        let mut table = StreamLabels {
            width,
            cells: vec![ABSENT; width * streams.len()],
            values: Vec::new(),
        };
        if width == 0 || streams.is_empty() {
            return table;
        }
        let mut value_ids: FastMap<&str, u32> = FastMap::default();
        let mut intern = |values: &mut Vec<Box<str>>, v: &'i str| -> u32 {
            *value_ids.entry(v).or_insert_with(|| {
                values.push(v.into());
                (values.len() - 1) as u32
            })
        };
        // Walking postings costs the index's streams; looking up costs
        // the plan's streams times a few scattered reads each.
        if streams.len() * 8 < index_streams {
            for i in 0..streams.len() {
                let labels = labels_of(i);
                for (j, n) in names.iter().enumerate() {
                    if let Some(v) = labels.get(n) {
                        table.cells[i * width + j] = intern(&mut table.values, v);
                    }
                }
            }
            return table;
        }
        let position: FastMap<StreamId, u32> = streams
            .iter()
            .enumerate()
            .map(|(i, &s)| (s, i as u32))
            .collect();
        for (j, n) in names.iter().enumerate() {
            let Some(values) = postings(n) else {
                continue;
            };
            for (v, sids) in values {
                let mut id = None;
                for s in sids {
                    if let Some(&i) = position.get(s) {
                        let id = *id.get_or_insert_with(|| intern(&mut table.values, v));
                        table.cells[i as usize * width + j] = id;
                    }
                }
            }
        }
        table
    }

    /// The cell of stream `stream` and label `label`: equal cells of one
    /// label are equal values.
    #[inline]
    pub fn cell(&self, stream: usize, label: usize) -> u32 {
        self.cells[stream * self.width + label]
    }

    /// Stream `stream`'s value of label `label` (an index into the names
    /// the table was built for).
    #[inline]
    pub fn get(&self, stream: usize, label: usize) -> Option<&str> {
        match self.cells[stream * self.width + label] {
            ABSENT => None,
            id => Some(&self.values[id as usize]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ways of building give what each stream's labels say.
    #[test]
    fn postings_and_lookups_agree_with_the_labels() {
        let all: Vec<(StreamId, Labels)> = (0..40u64)
            .map(|i| {
                let app = format!("app-{}", i % 3);
                let mut p = vec![("app", app.as_str()), ("ns", "prod")];
                if i % 4 == 0 {
                    p.push(("level", "info"));
                }
                (i * 7 + 1, Labels::from_strs(&p))
            })
            .collect();
        let mut postings: std::collections::BTreeMap<String, HashMap<String, Vec<StreamId>>> =
            Default::default();
        for (sid, l) in &all {
            for (k, v) in l.pairs() {
                postings
                    .entry(k.clone())
                    .or_default()
                    .entry(v.clone())
                    .or_default()
                    .push(*sid);
            }
        }
        let names: Vec<String> = ["level", "app", "missing"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // A plan over every other stream, in its own order.
        let plan: Vec<usize> = (0..all.len()).rev().step_by(2).collect();
        let sids: Vec<StreamId> = plan.iter().map(|&i| all[i].0).collect();
        for index_streams in [all.len(), all.len() * 1000] {
            let t = StreamLabels::build(
                &names,
                &sids,
                index_streams,
                |n| postings.get(n),
                |i| &all[plan[i]].1,
            );
            for (i, &s) in plan.iter().enumerate() {
                for (j, n) in names.iter().enumerate() {
                    assert_eq!(t.get(i, j), all[s].1.get(n), "stream {i} label {n}");
                }
            }
        }
    }
}
