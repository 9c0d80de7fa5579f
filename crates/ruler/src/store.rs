//! Rule files on disk: `<dir>/<tenant>/<namespace>.yaml` (or `.yml`), one
//! namespace per file. The API writes a namespace's file whole: a temporary
//! file, fsync, rename over the old one, fsync of the directory.

use crate::rules::{RuleFile, RuleGroup};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not a valid rule file.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A tenant or namespace name that cannot be a file name.
    #[error("invalid {what} name {name:?}")]
    BadName {
        /// `tenant` or `namespace`.
        what: &'static str,
        /// The name.
        name: String,
    },
}

/// The groups of every namespace of every tenant, as read.
pub type Tenants = BTreeMap<String, BTreeMap<String, Vec<RuleGroup>>>;

/// The rules directory.
#[derive(Debug, Clone)]
pub struct RuleStore {
    dir: PathBuf,
}

/// A name usable as a directory or file name: not empty, no `/`, NUL or
/// leading dot, at most 200 bytes.
fn check_name(what: &'static str, name: &str) -> Result<(), StoreError> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0']);
    if ok {
        Ok(())
    } else {
        Err(StoreError::BadName {
            what,
            name: name.to_string(),
        })
    }
}

/// Reads one rule file.
pub fn read_file(path: &Path) -> Result<RuleFile, StoreError> {
    let text = std::fs::read_to_string(path).map_err(|source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_yaml::from_str(&text).map_err(|e| StoreError::Invalid {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

impl RuleStore {
    /// The store under `dir` (created on first write).
    pub fn new(dir: PathBuf) -> RuleStore {
        RuleStore { dir }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The files the directory holds, as `(tenant, namespace, path)`.
    pub fn files(&self) -> Vec<(String, String, PathBuf)> {
        let mut out = Vec::new();
        let Ok(tenants) = std::fs::read_dir(&self.dir) else {
            return out;
        };
        for t in tenants.flatten() {
            let tenant = t.file_name().to_string_lossy().into_owned();
            if tenant.starts_with('.') || !t.path().is_dir() {
                continue;
            }
            let Ok(files) = std::fs::read_dir(t.path()) else {
                continue;
            };
            for f in files.flatten() {
                let path = f.path();
                let name = f.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') {
                    continue;
                }
                let ns = name
                    .strip_suffix(".yaml")
                    .or_else(|| name.strip_suffix(".yml"));
                if let Some(ns) = ns {
                    out.push((tenant.clone(), ns.to_string(), path));
                }
            }
        }
        out.sort();
        out
    }

    /// A fingerprint of the directory's files (names, sizes, times): it
    /// changes when a file is added, removed or rewritten.
    pub fn fingerprint(&self) -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
        self.files()
            .into_iter()
            .map(|(_, _, p)| {
                let meta = std::fs::metadata(&p).ok();
                let len = meta.as_ref().map_or(0, |m| m.len());
                let mtime = meta.and_then(|m| m.modified().ok());
                (p, len, mtime)
            })
            .collect()
    }

    fn path(&self, tenant: &str, namespace: &str) -> Result<PathBuf, StoreError> {
        check_name("tenant", tenant)?;
        check_name("namespace", namespace)?;
        let dir = self.dir.join(tenant);
        let yml = dir.join(format!("{namespace}.yml"));
        if yml.exists() {
            return Ok(yml);
        }
        Ok(dir.join(format!("{namespace}.yaml")))
    }

    /// The groups of one namespace (empty when it has no file).
    pub fn namespace(&self, tenant: &str, namespace: &str) -> Result<Vec<RuleGroup>, StoreError> {
        let path = self.path(tenant, namespace)?;
        if !path.exists() {
            return Ok(Vec::new());
        }
        Ok(read_file(&path)?.groups)
    }

    /// Writes a namespace's groups durably; no groups removes its file.
    pub fn write_namespace(
        &self,
        tenant: &str,
        namespace: &str,
        groups: &[RuleGroup],
    ) -> Result<(), StoreError> {
        let path = self.path(tenant, namespace)?;
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let dir = path.parent().unwrap_or(&self.dir).to_path_buf();
        if groups.is_empty() {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(io(e)),
            }
            return sync_dir(&dir).map_err(io);
        }
        std::fs::create_dir_all(&dir).map_err(io)?;
        let text = serde_yaml::to_string(&RuleFile {
            groups: groups.to_vec(),
        })
        .map_err(|e| StoreError::Invalid {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let tmp = dir.join(format!(".{namespace}.yaml.tmp"));
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(text.as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)?;
        drop(f);
        std::fs::rename(&tmp, &path).map_err(io)?;
        sync_dir(&dir).map_err(io)
    }
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_written_read_and_removed() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = RuleStore::new(tmp.path().join("rules"));
        let g = RuleGroup {
            name: "g".into(),
            ..Default::default()
        };
        store
            .write_namespace("t1", "ns", std::slice::from_ref(&g))
            .expect("writes");
        assert_eq!(store.namespace("t1", "ns").expect("reads"), [g]);
        assert_eq!(store.files().len(), 1);
        assert_eq!(store.files()[0].1, "ns");
        store.write_namespace("t1", "ns", &[]).expect("removes");
        assert!(store.files().is_empty());
        assert!(store.namespace("t1", "../x").is_err());
        assert!(store.namespace(".hidden", "x").is_err());
    }
}
