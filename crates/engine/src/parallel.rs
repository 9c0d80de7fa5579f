//! Parallel scans: a query's streams are cut into a fixed number of shards
//! ([`SHARDS`]), each scanned by a task of one process-wide worker pool, and
//! the partial results are merged in shard order.
//!
//! The shard count does not depend on the machine, so an answer (including
//! the order in which equal-timestamp points of different streams reach an
//! aggregation) is the same on every machine; the pool size only decides how
//! many shards run at once. The pool is shared by all queries, so concurrent
//! queries queue for workers instead of multiplying threads.

use rayon::prelude::*;
use runakefli_model::Shard;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Shards per scan.
pub const SHARDS: u32 = 8;

/// Worker threads of the query pool: `RUNAKEFLI_QUERY_THREADS`, else the
/// number of CPUs. Each worker is pinned to a CPU of its own ([`pin`]).
fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::env::var("RUNAKEFLI_QUERY_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
            });
        let cpus = pin::allowed_cpus();
        let pinned = pin::wanted(threads, &cpus);
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("runakefli-query-{i}"))
            .start_handler(move |i| {
                if pinned {
                    pin::to_cpu(cpus[i]);
                }
            })
            .build()
            .unwrap_or_else(|_| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .build()
                    .expect("a one-thread pool")
            })
    })
}

/// Pinning the query pool's workers, one per CPU.
///
/// A query's set-up runs on one worker while another stands by, spinning
/// ([`stand_by`]), and its parallel section then runs on both. Unpinned, the
/// scheduler often woke the standing-by worker on the set-up worker's CPU
/// (a wake-up goes near its waker), where the two took turns while the
/// other CPU idled for milliseconds until the load balancer moved one: on
/// 2 vCPUs, a rare-id search's first run after a restart took 20–30 % longer
/// than with each worker on a CPU of its own (execTime medians 11.3 / 11.0 /
/// 12.8 ms unpinned against 9.2 / 7.7 / 10.1 pinned, eight restarts each).
/// Workers are pinned only when there is one per CPU the process may use
/// (its affinity mask, which a container's cpuset narrows), and not at all
/// with `RUNAKEFLI_QUERY_PIN=0`. Units of work are taken
/// from a shared counter, so a worker whose CPU is busy with other work
/// (ingest, merges) takes fewer of them instead of holding the query up.
mod pin {
    /// The CPUs this process may run on, ascending (empty when unknown).
    pub fn allowed_cpus() -> Vec<usize> {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: `set` is a plain bit set the call fills; its size is passed.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            let size = std::mem::size_of::<libc::cpu_set_t>();
            // SAFETY: pid 0 is this thread; `set` is valid for `size` bytes.
            if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
                return Vec::new();
            }
            (0..libc::CPU_SETSIZE as usize)
                // SAFETY: `cpu` is below CPU_SETSIZE, the set's capacity.
                .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
                .collect()
        }
        #[cfg(not(target_os = "linux"))]
        {
            Vec::new()
        }
    }

    /// Whether `threads` workers are pinned, one to each of `cpus`: only
    /// when there is one worker per CPU (the default pool). Fewer workers
    /// than CPUs are left to run wherever a CPU is free.
    pub fn wanted(threads: usize, cpus: &[usize]) -> bool {
        let off = std::env::var("RUNAKEFLI_QUERY_PIN").is_ok_and(|v| v == "0");
        !off && threads > 1 && threads == cpus.len()
    }

    /// Pins the calling thread to `cpu` (best effort: a refusal leaves it
    /// free to run anywhere).
    pub fn to_cpu(cpu: usize) {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: as in `allowed_cpus`; `cpu` came from the allowed set.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = cpu;
    }
}

/// Starts the query pool now instead of at the first query, and returns
/// once every worker thread is running: a server calls this while it opens,
/// so its first query does not pay for creating threads (nor for reading
/// the cgroup files that tell the CPU count).
pub fn start() -> usize {
    let pool = pool();
    pool.broadcast(|_| warm_heap());
    pool.current_num_threads()
}

/// Heap each worker writes to once when the pool starts ([`warm_heap`]).
const WARM_HEAP_BYTES: usize = 2 << 20;

/// Allocates [`WARM_HEAP_BYTES`] on the calling thread, writes every page
/// and frees them, so the thread's allocator arena holds pages already
/// faulted in when the first query allocates there. glibc keeps an
/// arena's freed top up to its growth pad (the server sets 4 MiB,
/// `serve/malloc.rs`): a first query after a restart then does not fault
/// ~130 fresh heap pages in one at a time (`sum(count_over_time({app=…} |
/// json | level="error" [1m]))` at 2M lines). With the allocator's
/// defaults the block is mapped and unmapped whole: no effect, no harm.
fn warm_heap() {
    let mut heap: Vec<u8> = Vec::with_capacity(WARM_HEAP_BYTES);
    heap.resize(WARM_HEAP_BYTES, 1);
    std::hint::black_box(&heap);
}

/// Runs `f` on the query pool (its parallel iterators use the pool's
/// workers), the other workers standing by ([`stand_by`]).
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let pool = pool();
    stand_by(pool);
    pool.install(f)
}

/// Runs `f` once per shard on the query pool; the results in shard order.
pub fn map_shards<R: Send>(f: impl Fn(Shard) -> R + Sync + Send) -> Vec<R> {
    let pool = pool();
    stand_by(pool);
    pool.install(|| {
        (0..SHARDS)
            .into_par_iter()
            .map(|index| {
                f(Shard {
                    index,
                    count: SHARDS,
                })
            })
            .collect()
    })
}

/// How long a worker stands by for a query's parallel work at most.
pub const STANDBY: Duration = Duration::from_millis(3);

/// Wakes the pool's workers before a query enters it. A query's set-up
/// (planning, matching streams, listing and ordering a plan's units) runs
/// on one worker while the others sleep, and its parallel section then
/// hands work to a sleeping worker. On a VM whose idle vCPUs halt, that
/// worker's wake-up took 0.6–4 ms (timed per worker: q4's first run after
/// a restart, 4–6 ms of parallel work), and on warm queries it often did
/// not wake before the first worker had done everything alone. Each
/// other worker is handed a job that stands by, spinning, until it finds
/// pool work to run (the query's, or any) or [`STANDBY`] has passed: its
/// wake-up overlaps the set-up, and the query's parallel work finds it
/// awake. At most that much spinning per query, on workers that had
/// nothing else to do (a busy worker takes the job later and returns as
/// soon as it finds work). Not done from inside the pool (nested calls:
/// the workers are already in use).
fn stand_by(pool: &rayon::ThreadPool) {
    if rayon::current_thread_index().is_some() {
        return;
    }
    for _ in 1..pool.current_num_threads() {
        pool.spawn(|| {
            let until = Instant::now() + STANDBY;
            while Instant::now() < until {
                if let Some(rayon::Yield::Executed) = rayon::yield_now() {
                    return;
                }
                for _ in 0..64 {
                    std::hint::spin_loop();
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_runs_every_worker_and_is_idempotent() {
        let n = start();
        assert!(n >= 1);
        assert_eq!(start(), n);
        let names = pool().broadcast(|_| std::thread::current().name().map(str::to_string));
        assert_eq!(names.len(), n);
        if std::env::var_os("RUNAKEFLI_QUERY_THREADS").is_none() {
            assert!(names.iter().all(|x| x
                .as_deref()
                .is_some_and(|x| x.starts_with("runakefli-query-"))));
        }
    }

    #[test]
    fn workers_are_pinned_one_per_allowed_cpu_only_when_they_fit() {
        let cpus = pin::allowed_cpus();
        assert!(
            !cpus.is_empty(),
            "the affinity mask lists this process's CPUs"
        );
        assert!(pin::wanted(cpus.len(), &cpus) || cpus.len() == 1);
        assert!(!pin::wanted(cpus.len() + 1, &cpus));
        assert!(!pin::wanted(1, &cpus));
        assert!(
            !pin::wanted(2, &[0, 1, 2, 3]),
            "fewer workers than CPUs float"
        );
        // The pool's workers each run on exactly their own CPU when pinned.
        start();
        let n = pool().current_num_threads();
        if pin::wanted(n, &cpus) {
            let masks = pool().broadcast(|_| pin::allowed_cpus());
            for (i, m) in masks.iter().enumerate() {
                assert_eq!(m, &vec![cpus[i]], "worker {i}");
            }
        }
    }

    #[test]
    fn workers_standing_by_take_the_work_they_find_and_end_by_themselves() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        stand_by(&pool);
        // The query's parallel work runs on both workers (the first half
        // long enough for the other to be taken, even on a loaded machine).
        let (a, b) = pool.install(|| {
            rayon::join(
                || {
                    std::thread::sleep(Duration::from_millis(250));
                    rayon::current_thread_index()
                },
                rayon::current_thread_index,
            )
        });
        assert_ne!(a, b);
        // With no work to find, a worker stands by for a bounded time:
        // every worker is free again for work of its own.
        stand_by(&pool);
        let t = Instant::now();
        let seen = pool.broadcast(|c| c.index());
        assert_eq!(seen, vec![0, 1]);
        assert!(t.elapsed() < Duration::from_secs(2));
        // Called from inside the pool, it hands out nothing.
        pool.install(|| stand_by(&pool));
    }

    #[test]
    fn every_stream_in_exactly_one_shard_and_results_in_order() {
        let got = map_shards(|s| s.index);
        assert_eq!(got, (0..SHARDS).collect::<Vec<_>>());
        for id in [0u64, 1, 7, 8, 12345, u64::MAX] {
            let n = map_shards(|s| s.holds(id)).iter().filter(|&&b| b).count();
            assert_eq!(n, 1);
        }
    }
}
