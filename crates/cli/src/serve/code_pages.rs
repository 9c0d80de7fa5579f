//! The server's own code and read-only data, read in when it starts.
//!
//! After the page cache has been emptied (a reboot, memory pressure, the
//! benchmark's cold runs), a first query's code paths — the LogQL parser,
//! the engine, the store's readers — come from disk a page fault at a
//! time. On the 2M varied data, a rare-id search's first run after a
//! restart with the page cache dropped took 7.15 / 6.77 ms (execTime,
//! medians of eight restarts), and 5.46 / 4.92 ms when the executable had
//! been read back into the cache before it. Advising the kernel that the
//! executable's mappings will be needed (`madvise(MADV_WILLNEED)`) starts
//! that read while the server opens its store; the pages go to the page
//! cache only, so the process's resident set does not grow until the code
//! runs.

/// Advises the kernel to read in every mapping of this process's
/// executable; the bytes advised (0 when the mappings cannot be listed).
pub fn prefetch() -> usize {
    #[cfg(target_os = "linux")]
    {
        let Ok(exe) = std::fs::read_link("/proc/self/exe") else {
            return 0;
        };
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return 0;
        };
        let mut advised = 0;
        for (start, end) in executable_mappings(&maps, &exe.to_string_lossy()) {
            let len = end - start;
            // SAFETY: the range is a whole mapping of this process, listed by
            // the kernel just now; WILLNEED only starts reading it in.
            let ok = unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_WILLNEED) };
            if ok == 0 {
                advised += len;
            }
        }
        advised
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// The (start, end) of each mapping of `exe` in a `/proc/PID/maps` text.
fn executable_mappings(maps: &str, exe: &str) -> Vec<(usize, usize)> {
    maps.lines()
        .filter_map(|line| {
            // start-end perms offset dev inode path
            let mut fields = line.split_whitespace();
            let range = fields.next()?;
            let path = fields.nth(4)?;
            if path != exe {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let start = usize::from_str_radix(start, 16).ok()?;
            let end = usize::from_str_radix(end, 16).ok()?;
            (end > start).then_some((start, end))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_executables_mappings_are_found_and_only_they() {
        let maps = "\
55d0c5a00000-55d0c5d93000 r--p 00000000 fe:00 10010756                   /opt/runakefli
55d0c5d93000-55d0c68dc000 r-xp 00393000 fe:00 10010756                   /opt/runakefli
55d0c68dc000-55d0c695a000 r--p 00edb000 fe:00 10010756                   /opt/runakefli
7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0 
7f1c2b000000-7f1c2b028000 r--p 00000000 fe:00 1234                       /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2c000000-7f1c2c100000 r--s 00000000 fe:00 99                         /opt/runakefli-data/part (deleted)
";
        let found = executable_mappings(maps, "/opt/runakefli");
        assert_eq!(
            found,
            vec![
                (0x55d0c5a00000, 0x55d0c5d93000),
                (0x55d0c5d93000, 0x55d0c68dc000),
                (0x55d0c68dc000, 0x55d0c695a000),
            ]
        );
    }

    #[test]
    fn this_process_has_its_code_advised() {
        // The test binary is this process's executable: its code is mapped.
        assert!(prefetch() > 0);
    }
}
