//! Templates: the texts of a block's line shapes (read from the templates
//! frame, or built from shapes kept by id), and which template each row has
//! (unpacked at once, or read row by row from the directory).

use std::sync::Arc;

use super::{bad, BlockReader};
use crate::block::layout::{ColumnKind, TemplateHead, FRAME_TEMPLATES};
use crate::block::shape::{template_slots, SLOT};
use crate::block::template_shapes::{self, TemplateShape};
use crate::block::varint::Cursor;
use crate::StorageError;

/// A template: literal pieces between slots, and the column of each slot.
#[derive(Clone, Debug)]
pub struct Template {
    /// The text and its pieces, shared by every block holding the template
    /// (see [`crate::block::template_shapes`]).
    pub(super) shape: Arc<TemplateShape>,
    pub(super) slots: Vec<u32>,
}

impl Template {
    pub(super) fn new(text: Vec<u8>, slots: Vec<u32>) -> Result<Template, StorageError> {
        // Sized once: a line template has dozens of slots, and growing
        // from one element reallocated it five or six times.
        let mut piece_starts = Vec::with_capacity(slots.len() + 1);
        piece_starts.push(0);
        piece_starts.extend(memchr::memchr_iter(SLOT, &text).map(|i| i + 1));
        if piece_starts.len() != slots.len() + 1 {
            return Err(bad("template slot count mismatch"));
        }
        Ok(Template {
            shape: Arc::new(TemplateShape { text, piece_starts }),
            slots,
        })
    }

    /// A kept shape with a block's slot columns.
    fn with_shape(shape: Arc<TemplateShape>, slots: Vec<u32>) -> Result<Template, StorageError> {
        if shape.piece_starts.len() != slots.len() + 1 {
            return Err(bad("template slot count mismatch"));
        }
        Ok(Template { shape, slots })
    }

    /// The template text, slots as the byte 0x00.
    pub fn text(&self) -> &[u8] {
        &self.shape.text
    }

    /// The `k`-th literal piece (`k` up to the slot count).
    pub fn piece(&self, k: usize) -> &[u8] {
        let starts = &self.shape.piece_starts;
        let start = starts[k];
        let end = starts.get(k + 1).map_or(self.shape.text.len(), |&n| n - 1);
        &self.shape.text[start..end]
    }

    /// Column of each slot, in line order.
    pub fn slots(&self) -> &[u32] {
        &self.slots
    }
}

impl<'a> BlockReader<'a> {
    /// Which of the block's templates some row uses (bit `t` for template
    /// `t`), without unpacking the row templates: known once the block's
    /// directory was checked (when its part opened), for blocks of at most
    /// 64 templates.
    pub fn templates_with_rows(&self) -> Option<u64> {
        let mask = self.log?.templates_with_rows()?;
        let nt = self.header.templates.len().max(1) as u32;
        (nt <= 64 && mask.checked_shr(nt).unwrap_or(0) == 0).then_some(mask)
    }

    /// Whether the row templates were unpacked (or given) already.
    pub fn has_row_templates(&self) -> bool {
        self.row_tpl.get().is_some()
    }

    /// The templates (version 2: read and checked on first use).
    pub fn templates(&self) -> Result<&[Template], StorageError> {
        if let Some(t) = self.templates.get() {
            return Ok(t);
        }
        let heads = &self.header.templates;
        // Every template read before (by any block): no frame read.
        let kept = (self.header.version >= 2 && !heads.is_empty())
            .then(|| template_shapes::all_of(heads.iter().map(|h| h.id)))
            .flatten();
        if let Some(shapes) = kept {
            let out = shapes
                .into_iter()
                .zip(heads)
                .map(|(shape, head)| Template::with_shape(shape, head.slots.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            let _ = self.templates.set(out);
            return Ok(self.templates.get().expect("just set"));
        }
        let out = self.read_templates()?;
        template_shapes::keep(heads.iter().zip(&out).map(|(h, t)| (h.id, t.shape.clone())));
        let _ = self.templates.set(out);
        Ok(self.templates.get().expect("just set"))
    }

    /// The templates read from the block's templates frame, each text
    /// checked against its id.
    fn read_templates(&self) -> Result<Vec<Template>, StorageError> {
        let heads = &self.header.templates;
        let frame = self.frame(FRAME_TEMPLATES)?;
        let mut c = Cursor::new(&frame, "templates");
        let mut out = Vec::with_capacity(heads.len());
        for head in heads {
            let text = c.bytes()?.to_vec();
            if xxhash_rust::xxh3::xxh3_128(&text) != head.id {
                return Err(bad("template id mismatch"));
            }
            out.push(Template::new(text, head.slots.clone())?);
        }
        if !c.is_empty() {
            return Err(c.err("trailing bytes"));
        }
        Ok(out)
    }

    /// Reads and checks the templates frame (version 2) even when
    /// [`Self::templates`] would build the templates from texts kept by id
    /// without reading it: a whole decode verifies every frame.
    pub fn check_templates_frame(&self) -> Result<(), StorageError> {
        if self.header.version >= 2 {
            self.read_templates()?;
        }
        Ok(())
    }

    /// Version 2: the templates' ids and slot columns, from the header
    /// alone (empty for version 1).
    pub fn template_heads(&self) -> &[TemplateHead] {
        &self.header.templates
    }

    /// Number of templates (distinct line shapes) of the block.
    pub fn template_count(&self) -> usize {
        match self.templates.get() {
            Some(t) => t.len(),
            None => self.header.templates.len(),
        }
    }

    /// The first byte of template `t`'s text (`None` when empty, out of
    /// range or unreadable).
    pub fn template_starts_with(&self, t: usize) -> Option<u8> {
        self.templates().ok()?.get(t)?.text().first().copied()
    }

    /// The template of each row, an index below [`Self::template_count`].
    pub fn row_templates(&self) -> &[u32] {
        self.row_templates_shared()
    }

    /// [`Self::row_templates`], shared (for keeping them past this reader).
    pub fn row_templates_shared(&self) -> &Arc<[u32]> {
        self.row_tpl.get_or_init(|| match &self.tpl_layout {
            Some((frame, l)) => l.all_shared(frame, self.rows(), |t| t as u32),
            None => std::iter::repeat_n(0, self.rows()).collect(),
        })
    }

    /// The template of row `r` (below [`Self::rows`]), read alone when the
    /// row templates have not been unpacked: a log query past its cutoff
    /// looks at the last few rows of most blocks it opens.
    pub fn row_template(&self, r: usize) -> u32 {
        match (self.row_tpl.get(), &self.tpl_layout) {
            (Some(all), _) => all[r],
            (None, Some((frame, l))) => {
                assert!(r < self.rows(), "row {r} out of range");
                l.get(frame, r) as u32
            }
            // One template or none: every row's is template 0.
            (None, None) => {
                assert!(r < self.rows(), "row {r} out of range");
                0
            }
        }
    }

    /// Whether [`Self::row_template`] reads rows without unpacking all.
    pub fn reads_templates_by_row(&self) -> bool {
        self.row_tpl.get().is_none() && self.tpl_layout.is_some()
    }

    /// The slots of template `t` in line order: column id, dotted field name
    /// (raw key text) and whether the value is a JSON string. `None` when the
    /// template is a whole-line template or `t` is out of range.
    pub fn template_fields(&self, t: usize) -> Option<Vec<(usize, Vec<u8>, bool)>> {
        let tpl = self.templates().ok()?.get(t)?;
        if tpl
            .slots
            .iter()
            .any(|&c| self.dir(c as usize).kind != ColumnKind::Field)
        {
            return None;
        }
        let slots = template_slots(tpl.text())?;
        if slots.len() != tpl.slots.len() {
            return None;
        }
        Some(
            tpl.slots
                .iter()
                .zip(slots)
                .map(|(&c, (name, quoted))| (c as usize, name, quoted))
                .collect(),
        )
    }

    /// The slot columns of each template (from the header in version 2).
    pub(super) fn slot_columns(&self) -> Vec<&[u32]> {
        if self.header.version >= 2 {
            return self
                .header
                .templates
                .iter()
                .map(|t| t.slots.as_slice())
                .collect();
        }
        self.templates
            .get()
            .map(|ts| ts.iter().map(|t| t.slots.as_slice()).collect())
            .unwrap_or_default()
    }
}
