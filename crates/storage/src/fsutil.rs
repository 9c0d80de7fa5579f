//! Small file-system helpers with the durability steps spelled out: directory
//! fsync, atomic replace (temp, fsync, rename, fsync dir), directory listing.

use crate::StorageError;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// fsyncs a directory so that entries created, renamed or removed in it persist.
pub fn fsync_dir(dir: &Path) -> Result<(), StorageError> {
    // The parent of a relative one-component path (`data`) is the empty path.
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| StorageError::io(dir, e))
}

/// Creates `dir` (and parents) and fsyncs it and its parent so the new entry persists.
pub fn create_dir_durable(dir: &Path) -> Result<(), StorageError> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
    fsync_dir(dir)?;
    if let Some(parent) = dir.parent() {
        fsync_dir(parent)?;
        if let Some(grand) = parent.parent() {
            fsync_dir(grand)?;
        }
    }
    Ok(())
}

/// Replaces `path` with `bytes` atomically: writes `tmp`, fsyncs it, renames it
/// over `path` and fsyncs the directory.
pub fn write_atomic(path: &Path, tmp: &Path, bytes: &[u8]) -> Result<(), StorageError> {
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(tmp)
        .map_err(|e| StorageError::io(tmp, e))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| StorageError::io(tmp, e))?;
    drop(f);
    fs::rename(tmp, path).map_err(|e| StorageError::io(path, e))?;
    fsync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Names and paths of the entries of `dir` (empty when it does not exist).
pub fn list_dir(dir: &Path) -> Result<Vec<(String, PathBuf)>, StorageError> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StorageError::io(dir, e)),
    };
    let mut out = Vec::new();
    for ent in rd {
        let ent = ent.map_err(|e| StorageError::io(dir, e))?;
        if let Some(name) = ent.file_name().to_str() {
            out.push((name.to_string(), ent.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Removes a file, ignoring "not found".
pub fn remove_file(path: &Path) -> Result<(), StorageError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StorageError::io(path, e)),
    }
}

/// Total size of the regular files under `dir`, recursively (0 when missing;
/// files vanishing while walked are skipped).
pub fn tree_bytes(dir: &Path) -> u64 {
    let Ok(rd) = fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in rd.flatten() {
        match e.file_type() {
            Ok(t) if t.is_dir() => n += tree_bytes(&e.path()),
            Ok(t) if t.is_file() => n += e.metadata().map_or(0, |m| m.len()),
            _ => {}
        }
    }
    n
}

/// Bytes an unprivileged process may still write on the file system holding
/// `path` (`statvfs`: available blocks times the fragment size).
pub fn free_bytes(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` a writable statvfs.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // Both are u64 on 64-bit Linux, narrower elsewhere.
    Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// Raises this process's soft limit of open files to its hard limit (as the
/// Go runtime does for Loki and VictoriaLogs): every open part keeps its file
/// open for reading compressed frames, besides its mapping, and the default
/// soft limit of many systems (1,024) would cap the number of parts and
/// connections together. Failing to raise it is not an error.
pub fn raise_open_files_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                tracing::debug!("could not raise the open files limit");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_parent_of_a_relative_directory_is_the_current_one() {
        // Regression: `--data-dir data` failed with "i/o error on : No such
        // file or directory": the grandparent of `data/tenants` is "".
        assert_eq!(Path::new("data").parent(), Some(Path::new("")));
        fsync_dir(Path::new("")).unwrap();
    }

    #[test]
    fn the_open_files_limit_is_raised_to_the_hard_limit() {
        let get = || {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: a valid pointer to a local struct.
            assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
            lim
        };
        let before = get();
        // Lower the soft limit by one (allowed; by little, as other tests
        // run beside this one), then raise it.
        let lowered = libc::rlimit {
            rlim_cur: before.rlim_max.min(before.rlim_cur).saturating_sub(1),
            rlim_max: before.rlim_max,
        };
        // SAFETY: a valid pointer to a local struct.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) }, 0);
        raise_open_files_limit();
        let after = get();
        assert_eq!(after.rlim_cur, before.rlim_max);
        assert_eq!(after.rlim_max, before.rlim_max);
    }

    #[test]
    fn free_bytes_of_a_directory_and_of_a_missing_path() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).unwrap() > 0);
        assert!(free_bytes(&dir.path().join("missing")).is_err());
    }
}
