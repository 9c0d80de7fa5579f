//! How the C allocator grows the server's heaps.
//!
//! glibc gives each thread that allocates an arena, and grows an arena's
//! heap by exactly what an allocation lacks: one `mprotect` each time the
//! heap passes its largest size so far. The first query after a restart
//! grows its workers' fresh arenas that way hundreds of times (measured:
//! 1,252 `mprotect` calls over the first two runs of `sum(count_over_time(
//! {app=…} | json | level="error" [1m]))` at 2M lines after a restart),
//! and each call on a multi-threaded process interrupts the other cores to
//! flush their TLBs. A pad of a few MiB per growth makes that a handful of
//! calls (6 over the same runs), and first runs of that query 0.6–0.8 ms
//! (~10 %) faster.
//!
//! Setting the pad turns glibc's sliding mmap threshold off (it would
//! start at 128 KiB and follow the largest block freed, up to 32 MiB), so
//! the threshold is set as well: blocks of [`MMAP_THRESHOLD_BYTES`] and
//! more are mapped on their own and returned whole when freed.

/// Extra bytes an arena grows (and keeps when trimmed) past what an
/// allocation needs.
pub const TOP_PAD_BYTES: i32 = 4 << 20;

/// Allocations of at least this many bytes get their own mapping.
pub const MMAP_THRESHOLD_BYTES: i32 = 4 << 20;

// glibc refuses thresholds past 32 MiB (its sliding maximum on 64 bits).
const _: () = assert!(MMAP_THRESHOLD_BYTES <= 32 << 20);

/// Applies [`TOP_PAD_BYTES`] and [`MMAP_THRESHOLD_BYTES`]; `true` when the
/// allocator took both (glibc), `false` elsewhere (its defaults stay).
/// Call before threads start.
pub fn tune() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes allocator parameters; it is called
    // before the server starts its threads.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, TOP_PAD_BYTES) == 1
            && libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

#[cfg(test)]
mod tests {
    /// glibc accepts both settings (one it rejected would leave its
    /// default in place).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn glibc_takes_the_pad_and_the_threshold() {
        assert!(super::tune());
    }
}
