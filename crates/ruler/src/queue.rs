//! A bounded queue between the evaluators and a sender thread: pushing
//! never blocks; past its capacity the oldest items are dropped (and
//! counted by the caller), so a dead receiver costs bounded memory.

use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::time::Duration;

/// A bounded, drop-oldest queue.
pub struct Queue<T> {
    items: Mutex<(VecDeque<T>, bool)>,
    ready: Condvar,
    capacity: usize,
}

impl<T> Queue<T> {
    /// A queue of at most `capacity` items (at least one).
    pub fn new(capacity: usize) -> Queue<T> {
        Queue {
            items: Mutex::new((VecDeque::new(), false)),
            ready: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    /// Appends items; returns how many of the oldest were dropped to make room.
    pub fn push_all(&self, new: impl IntoIterator<Item = T>) -> usize {
        let mut g = self.items.lock();
        let mut dropped = 0;
        for item in new {
            if g.0.len() >= self.capacity {
                g.0.pop_front();
                dropped += 1;
            }
            g.0.push_back(item);
        }
        self.ready.notify_one();
        dropped
    }

    /// Takes up to `max` items, waiting up to `wait` for the first; empty
    /// after the wait or once closed and drained.
    pub fn take(&self, max: usize, wait: Duration) -> Vec<T> {
        let mut g = self.items.lock();
        if g.0.is_empty() && !g.1 {
            self.ready.wait_for(&mut g, wait);
        }
        let n = g.0.len().min(max);
        g.0.drain(..n).collect()
    }

    /// Puts items back at the front (a batch that could not be sent),
    /// dropping the oldest past the capacity; returns how many were dropped.
    pub fn requeue(&self, items: Vec<T>) -> usize {
        let mut g = self.items.lock();
        let mut dropped = 0;
        for item in items.into_iter().rev() {
            if g.0.len() >= self.capacity {
                dropped += 1;
                continue;
            }
            g.0.push_front(item);
        }
        dropped
    }

    /// A copy of the items waiting, oldest first.
    pub fn snapshot(&self) -> Vec<T>
    where
        T: Clone,
    {
        self.items.lock().0.iter().cloned().collect()
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.items.lock().0.len()
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Wakes the sender for good: `take` no longer waits.
    pub fn close(&self) {
        self.items.lock().1 = true;
        self.ready.notify_all();
    }

    /// True once closed.
    pub fn is_closed(&self) -> bool {
        self.items.lock().1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_items_are_dropped_past_the_capacity() {
        let q = Queue::new(3);
        assert_eq!(q.push_all([1, 2, 3, 4, 5]), 2);
        assert_eq!(q.take(2, Duration::ZERO), [3, 4]);
        assert_eq!(q.requeue(vec![3, 4]), 0);
        assert_eq!(q.push_all([6]), 1);
        assert_eq!(q.requeue(vec![1]), 1);
        assert_eq!(q.take(10, Duration::ZERO), [4, 5, 6]);
        q.close();
        assert!(q.take(1, Duration::from_secs(10)).is_empty());
    }
}
