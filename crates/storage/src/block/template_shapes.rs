//! Template texts kept process-wide by template id, so that a block whose
//! templates were all read before (by any block of any part: an app's lines
//! share a few templates across its streams) builds its [`Template`]s
//! without reading, decompressing and hashing its templates frame.
//!
//! A template's id is the xxh3-128 of its text (checked when the text is
//! read from a frame), so a text kept under an id is that template's text;
//! a block's slot columns come from its own header. Rebuilding the newest
//! 100 lines of a search after a restart read the templates frame of each
//! of ~100 blocks for ~4 M of its ~61 M instructions.
//!
//! [`Template`]: super::reader::Template

use super::hash::FastMap;
use std::sync::{Arc, Mutex};

/// A template's text and where its literal pieces start.
#[derive(Debug)]
pub struct TemplateShape {
    /// The text, slots as the byte 0x00.
    pub text: Vec<u8>,
    /// Start of each piece in `text` (pieces are separated by one slot byte).
    pub piece_starts: Vec<usize>,
}

impl TemplateShape {
    /// Bytes the shape holds.
    fn bytes(&self) -> usize {
        self.text.len() + 8 * self.piece_starts.len()
    }
}

/// Most bytes of text and piece starts kept; past it the shapes are
/// forgotten all at once and kept again as blocks read them.
const BUDGET_BYTES: usize = 8 << 20;

#[derive(Default)]
struct Shapes {
    by_id: FastMap<u128, Arc<TemplateShape>>,
    bytes: usize,
}

static SHAPES: Mutex<Option<Shapes>> = Mutex::new(None);

fn lock() -> std::sync::MutexGuard<'static, Option<Shapes>> {
    SHAPES.lock().unwrap_or_else(|e| e.into_inner())
}

/// The shapes of all of `ids`, in order, when every one is kept.
pub fn all_of(ids: impl ExactSizeIterator<Item = u128>) -> Option<Vec<Arc<TemplateShape>>> {
    let guard = lock();
    let shapes = guard.as_ref()?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        out.push(shapes.by_id.get(&id)?.clone());
    }
    Some(out)
}

/// Keeps `shapes` (read from a frame, each under the hash of its text).
pub fn keep(shapes: impl Iterator<Item = (u128, Arc<TemplateShape>)>) {
    let mut guard = lock();
    let kept = guard.get_or_insert_with(Shapes::default);
    for (id, shape) in shapes {
        let bytes = shape.bytes();
        if bytes > BUDGET_BYTES / 64 {
            continue;
        }
        if kept.bytes + bytes > BUDGET_BYTES {
            kept.by_id.clear();
            kept.bytes = 0;
        }
        if kept.by_id.insert(id, shape).is_none() {
            kept.bytes += bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &[u8]) -> Arc<TemplateShape> {
        Arc::new(TemplateShape {
            text: text.to_vec(),
            piece_starts: vec![0],
        })
    }

    /// The map is process-wide: these steps run as one test, on ids no
    /// block uses.
    #[test]
    fn kept_shapes_are_found_together_and_forgotten_past_the_budget() {
        let base = 0xfeed_0000_0000_0000_0000_0000_0000_0000u128;
        assert!(all_of([base + 1].into_iter()).is_none());
        keep([(base + 1, shape(b"a")), (base + 2, shape(b"b"))].into_iter());
        let got = all_of([base + 2, base + 1].into_iter()).expect("both kept");
        assert_eq!((&got[0].text[..], &got[1].text[..]), (&b"b"[..], &b"a"[..]));
        assert!(
            all_of([base + 1, base + 3].into_iter()).is_none(),
            "one unknown"
        );
        // A shape over a 64th of the budget is not kept.
        keep([(base + 4, shape(&vec![b'x'; BUDGET_BYTES / 64 + 1]))].into_iter());
        assert!(all_of([base + 4].into_iter()).is_none());
        // Filling the budget forgets what was kept before.
        // (64 such shapes fill the budget: text plus one piece start.)
        let big = vec![b'y'; BUDGET_BYTES / 64 - 8];
        for i in 0..80u128 {
            keep([(base + 100 + i, shape(&big))].into_iter());
        }
        assert!(all_of([base + 1].into_iter()).is_none());
        assert!(all_of([base + 179].into_iter()).is_some());
        assert!(lock().as_ref().unwrap().bytes <= BUDGET_BYTES);
    }
}
