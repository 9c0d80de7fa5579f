//! A description of the machine a benchmark ran on.

use serde::Serialize;

/// CPU and memory of the benchmark machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MachineInfo {
    /// Logical CPUs available to this process.
    pub nproc: usize,
    /// `model name` from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// `MemTotal` from `/proc/meminfo`, bytes.
    pub mem_total_bytes: u64,
}

impl MachineInfo {
    /// Reads the current machine's description; unknown parts are left empty.
    pub fn detect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == "model name").then(|| v.trim().to_string())
            })
            .unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        MachineInfo {
            nproc: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            cpu_model,
            mem_total_bytes: crate::procstat::parse_status_kb(&meminfo, "MemTotal").unwrap_or(0),
        }
    }
}

impl std::fmt::Display for MachineInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} CPUs ({}), {:.1} GiB RAM",
            self.nproc,
            if self.cpu_model.is_empty() {
                "unknown model"
            } else {
                &self.cpu_model
            },
            self.mem_total_bytes as f64 / (1u64 << 30) as f64
        )
    }
}

/// The current process's command line, arguments separated by spaces.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}
