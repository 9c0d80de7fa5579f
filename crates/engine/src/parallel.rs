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

/// Shards per scan.
pub const SHARDS: u32 = 8;

/// Worker threads of the query pool: `RUNAKEFLI_QUERY_THREADS`, else the
/// number of CPUs.
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
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("runakefli-query-{i}"))
            .build()
            .unwrap_or_else(|_| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .build()
                    .expect("a one-thread pool")
            })
    })
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

/// Runs `f` on the query pool (its parallel iterators use the pool's workers).
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    pool().install(f)
}

/// Runs `f` once per shard on the query pool; the results in shard order.
pub fn map_shards<R: Send>(f: impl Fn(Shard) -> R + Sync + Send) -> Vec<R> {
    pool().install(|| {
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
    fn every_stream_in_exactly_one_shard_and_results_in_order() {
        let got = map_shards(|s| s.index);
        assert_eq!(got, (0..SHARDS).collect::<Vec<_>>());
        for id in [0u64, 1, 7, 8, 12345, u64::MAX] {
            let n = map_shards(|s| s.holds(id)).iter().filter(|&&b| b).count();
            assert_eq!(n, 1);
        }
    }
}
