//! Test helpers (the `testing` feature): loaders of Loki JSON push bodies
//! into a [`MemBackend`].

pub use crate::mem_backend::MemBackend;
use runakefli_model::{Entry, Labels, PushRequest, PushStream, TenantId};

impl MemBackend {
    /// Parses a Loki JSON push body (`{"streams":[{"stream":{…},"values":[["ns","line",{meta}]]}]}`).
    pub fn parse_push_json(body: &[u8]) -> Result<PushRequest, String> {
        let v: serde_json::Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        let mut req = PushRequest::default();
        for s in v["streams"].as_array().ok_or("missing streams")? {
            let pairs = s["stream"]
                .as_object()
                .ok_or("missing stream labels")?
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect();
            let mut entries = Vec::new();
            for e in s["values"].as_array().ok_or("missing values")? {
                let ts: i64 = e[0]
                    .as_str()
                    .ok_or("bad timestamp")?
                    .parse()
                    .map_err(|_| "bad timestamp")?;
                let line = e[1].as_str().ok_or("bad line")?.to_string();
                let metadata = e
                    .get(2)
                    .and_then(|m| m.as_object())
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                            .collect()
                    })
                    .unwrap_or_default();
                entries.push(Entry { ts, line, metadata });
            }
            req.streams.push(PushStream {
                labels: Labels::new(pairs),
                entries,
            });
        }
        Ok(req)
    }

    /// Loads every `push-*.json` file of a folder, in name order.
    pub fn load_dir(&self, tenant: &TenantId, dir: &std::path::Path) -> Result<(), String> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for f in files {
            let body = std::fs::read(&f).map_err(|e| e.to_string())?;
            self.push(tenant, &Self::parse_push_json(&body)?);
        }
        Ok(())
    }
}
