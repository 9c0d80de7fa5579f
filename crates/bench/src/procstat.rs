//! Resource usage of a server process from `/proc` (Linux): CPU time, peak RSS,
//! bytes written to storage; and disk usage of a directory like `du`.

use std::collections::HashSet;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::Serialize;

/// One reading of a process's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ProcSample {
    /// User plus system CPU time, seconds.
    pub cpu_seconds: f64,
    /// Peak resident set size (`VmHWM`), bytes.
    pub peak_rss_bytes: Option<u64>,
    /// Current resident set size (`VmRSS`), bytes.
    pub rss_bytes: Option<u64>,
    /// Bytes the process caused to be sent to storage (`write_bytes` of `/proc/PID/io`).
    pub write_bytes: Option<u64>,
}

/// Clock ticks per second used by `/proc/PID/stat`.
pub fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// Parses utime + stime (in ticks) from the text of `/proc/PID/stat`.
pub fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    // The command name is in parentheses and may contain spaces; fields follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3 of the full line, utime 14 and stime 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// The value of a `Key:   123 kB` line of `/proc/PID/status`, in bytes.
pub fn parse_status_kb(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let v = l.strip_prefix(key)?.strip_prefix(':')?;
        let kb: u64 = v.split_whitespace().next()?.parse().ok()?;
        Some(kb * 1024)
    })
}

/// The value of a `key: 123` line of `/proc/PID/io`.
pub fn parse_io_field(io: &str, key: &str) -> Option<u64> {
    io.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':')?.trim().parse().ok())
}

/// Reads the counters of process `pid`. CPU time is required; the others are
/// `None` when unreadable (e.g. `/proc/PID/io` of another user's process).
pub fn sample(pid: u32) -> io::Result<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let ticks = parse_stat_cpu_ticks(&stat)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unparsable /proc/PID/stat"))?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let io_text = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    Ok(ProcSample {
        cpu_seconds: ticks as f64 / clock_ticks_per_second(),
        peak_rss_bytes: parse_status_kb(&status, "VmHWM"),
        rss_bytes: parse_status_kb(&status, "VmRSS"),
        write_bytes: parse_io_field(&io_text, "write_bytes"),
    })
}

/// Samples a process's anonymous resident memory (`RssAnon`: heap, stacks,
/// not the file pages of memory-mapped files) on a thread every `every`,
/// keeping the highest reading, until [`AnonPeakSampler::stop`].
pub struct AnonPeakSampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Option<u64>>,
}

impl AnonPeakSampler {
    /// Starts sampling process `pid`.
    pub fn start(pid: u32, every: std::time::Duration) -> AnonPeakSampler {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peak: Option<u64> = None;
            let path = format!("/proc/{pid}/status");
            loop {
                if let Some(b) = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|s| parse_status_kb(&s, "RssAnon"))
                {
                    peak = Some(peak.map_or(b, |p| p.max(b)));
                }
                if flag.load(Ordering::Relaxed) {
                    return peak;
                }
                std::thread::sleep(every);
            }
        });
        AnonPeakSampler { stop, thread }
    }

    /// Stops sampling; the highest `RssAnon` seen, bytes (`None`: unreadable).
    pub fn stop(self) -> Option<u64> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or(None)
    }
}

/// Allocated size of everything under `path` (sum of `st_blocks * 512`, each inode
/// counted once), like `du -s`. A missing path counts as 0.
pub fn disk_usage(path: &Path) -> io::Result<u64> {
    let mut seen = HashSet::new();
    let mut total = 0u64;
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if seen.insert((meta.dev(), meta.ino())) {
            total += meta.blocks() * 512;
        }
        if meta.is_dir() {
            match std::fs::read_dir(&p) {
                Ok(rd) => {
                    for e in rd {
                        stack.push(e?.path());
                    }
                }
                // Files may vanish while merges run.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_spaces_in_the_name() {
        let stat = "1234 (my server) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 75 0 0 20 0 4 0 100 1000 200";
        assert_eq!(parse_stat_cpu_ticks(stat), Some(325));
        assert_eq!(parse_stat_cpu_ticks("garbage"), None);
    }

    #[test]
    fn parses_status_and_io() {
        let status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t 1024 kB\n";
        assert_eq!(parse_status_kb(status, "VmHWM"), Some(2048 * 1024));
        assert_eq!(parse_status_kb(status, "VmRSS"), Some(1024 * 1024));
        assert_eq!(parse_status_kb(status, "VmSwap"), None);
        let io =
            "rchar: 10\nwchar: 20\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io_field(io, "write_bytes"), Some(8192));
    }

    #[test]
    fn samples_this_process() {
        let s = sample(std::process::id()).unwrap();
        assert!(s.cpu_seconds >= 0.0);
        assert!(s.peak_rss_bytes.unwrap() > 0);
        let sampler =
            AnonPeakSampler::start(std::process::id(), std::time::Duration::from_millis(1));
        let held = vec![1u8; 8 << 20];
        std::thread::sleep(std::time::Duration::from_millis(20));
        let peak = sampler.stop().expect("RssAnon readable");
        assert!(peak >= 8 << 20, "peak {peak} while holding 8 MiB");
        drop(held);
    }

    #[test]
    fn disk_usage_counts_allocated_blocks() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(disk_usage(&dir.path().join("missing")).unwrap(), 0);
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a"), vec![7u8; 100_000]).unwrap();
        let du = disk_usage(dir.path()).unwrap();
        assert!(du >= 100_000, "{du}");
    }
}
