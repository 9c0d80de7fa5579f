//! The streams a query reads rows of, read from `streams` before the rows.
//!
//! A push stores its `streams` rows before its `logs` rows
//! ([`crate::ClickHouseBackend`]'s insert order), and a rows query
//! selects `stream_id IN (SELECT … FROM streams …)`, so every row it answers
//! has its stream in `streams` when the rows are read. But a push can land
//! between the catalog's read and the rows' read: a row may then name a
//! stream the catalog has not seen. Such an id makes the catalog read
//! `streams` again (after the rows, so it sees every stream they name); an
//! id still unknown then is corrupt data.

use crate::client::{Client, Request};
use crate::rows::{str_of, u64_of};
use crate::selector::Split;
use crate::sql::{self, StreamSelect};
use crate::Error;
use runakefli_model::{Labels, StreamId, StreamInfo};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The selected streams by id, read again when a row names one not seen.
pub struct StreamCatalog<'a> {
    client: &'a Client,
    sel: StreamSelect<'a>,
    split: Split,
    /// Every stream the SQL half of the selector selects, with its info when
    /// the residual half keeps it too (`None`: left out by the residual).
    known: Mutex<HashMap<StreamId, Option<StreamInfo>>>,
}

impl<'a> StreamCatalog<'a> {
    /// Reads the streams `sel` selects; matchers SQL cannot evaluate exactly
    /// are checked on the labels ([`Split`]).
    pub fn read(client: &'a Client, sel: StreamSelect<'a>) -> Result<Self, Error> {
        let catalog = StreamCatalog {
            client,
            sel,
            split: Split::of(sel.selector),
            known: Mutex::new(HashMap::new()),
        };
        let streams = catalog.select()?;
        *catalog.lock() = streams;
        Ok(catalog)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<StreamId, Option<StreamInfo>>> {
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn select(&self) -> Result<HashMap<StreamId, Option<StreamInfo>>, Error> {
        let sql_sel = StreamSelect {
            selector: &self.split.sql,
            ..self.sel
        };
        let rows = self
            .client
            .rows(&sql::streams_query(&sql_sel)?, &Request::default())?;
        let mut out = HashMap::with_capacity(rows.len());
        for r in rows {
            let id = u64_of(&r, "stream_id")?;
            out.insert(id, kept_stream(&r, &self.split)?);
        }
        Ok(out)
    }

    /// The stream of a row's `stream_id`: `Some` when the whole selector
    /// keeps it, `None` when the residual matchers leave it out. An id not
    /// seen yet reads `streams` again first; still unknown, it is
    /// [`Error::Decode`].
    pub fn get(&self, id: StreamId) -> Result<Option<StreamInfo>, Error> {
        if let Some(s) = self.lock().get(&id) {
            return Ok(s.clone());
        }
        let streams = self.select()?;
        let mut known = self.lock();
        // Streams are only ever added: keep what another thread read too.
        known.extend(streams);
        match known.get(&id) {
            Some(s) => Ok(s.clone()),
            None => Err(Error::Decode(format!("row of unknown stream {id}"))),
        }
    }

    /// [`Self::get`] for a row of a query whose selector SQL evaluates
    /// whole: a stream left out is corrupt data too.
    pub fn kept(&self, id: StreamId) -> Result<StreamInfo, Error> {
        self.get(id)?.ok_or_else(|| {
            Error::Decode(format!("row of stream {id}, which the selector leaves out"))
        })
    }

    /// The streams the whole selector keeps, as read so far.
    pub fn into_kept(self) -> HashMap<StreamId, StreamInfo> {
        self.known
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .into_iter()
            .filter_map(|(id, s)| s.map(|s| (id, s)))
            .collect()
    }
}

/// The stream of a result row (`stream_id`, `labels_text`), unless matchers
/// SQL could not evaluate exactly reject its labels.
pub(crate) fn kept_stream(r: &Value, split: &Split) -> Result<Option<StreamInfo>, Error> {
    let id = u64_of(r, "stream_id")?;
    let labels = Labels::parse(str_of(r, "labels_text")?)
        .map_err(|e| Error::Decode(format!("stream {id} labels: {e}")))?;
    Ok(split.keeps(&labels).then(|| StreamInfo {
        id,
        labels: Arc::new(labels),
    }))
}
