//! The engines' parallel loops, all through one non-generic loop over indices.
//!
//! Rayon compiles its job machinery (the splitting, `join`, the stack jobs) once per iterator and
//! closure type. The engines' loops sit inside kernels generic over the scalar type and, for the
//! multi-layer model, over 14 token widths, so each loop written with rayon's iterators was
//! compiled about a hundred times: `cargo llvm-lines` counted 198,597 of the crate's 566,978 lines
//! of LLVM IR (35 %) in rayon's code. Here every loop is [`for_each`] over `0..n` with a `&dyn
//! Fn(usize)`, compiled once; the generic helpers around it only hand out the items.
//!
//! Every helper calls its closure once per index, and results are kept in index order, so what a
//! loop computes does not depend on the thread count or on which thread ran which index.

use rayon::prelude::*;
use std::hint::spin_loop;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f(i)` for every `i` in `0 .. n`, on rayon's threads (the one parallel loop of the crate).
///
/// The calling thread takes indices from the front and up to `threads - 1` helper jobs take them
/// from the back, until the two ends meet. The caller starts at once (no splitting first); on
/// two threads each thread runs the same indices every call when the work is even (0, 1, ... on
/// the caller, n - 1, n - 2, ... on the helper), so a chunk's buffers stay in one core's caches.
/// When the caller has run out of indices it spins (for up to [`SPINS`] polls) until every helper
/// that started has finished its index, instead of waiting in rayon's idle loop, which polls
/// between `sched_yield` calls: on a 2-core VM that loop noticed the end of the other thread's
/// share microseconds late, every step (docs/speed.md, "Two threads on the Intel Xeon"). A helper
/// that no thread picked up before the indices ran out finds none and returns.
pub fn for_each(n: usize, f: &(dyn Fn(usize) + Sync)) {
    let threads = rayon::current_num_threads();
    if n <= 1 || threads == 1 {
        (0..n).for_each(f);
        return;
    }
    let Some(claims) = Claims::new(n) else {
        (0..n).into_par_iter().for_each(f);
        return;
    };
    let (started, done) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let work = |from_back: bool| {
        while let Some(i) = claims.take(from_back) {
            f(i);
        }
    };
    rayon::in_place_scope(|s| {
        for _ in 0..(threads - 1).min(n - 1) {
            s.spawn(|_| {
                started.fetch_add(1, Ordering::AcqRel);
                // counted as done on the way out, also when `f` panics (the scope then passes
                // the panic on)
                let _done = Done(&done);
                work(true);
            });
        }
        work(false);
        // spin for a while (a he2025 chunk takes 10-20 us); past that, rayon's scope waits for
        // the rest, stealing other work and sleeping as rayon does, so that a long index (a GPT-2
        // prompt's baseline fit) does not keep this core busy
        let mut spins = 0;
        while done.load(Ordering::Acquire) < started.load(Ordering::Acquire) && spins < SPINS {
            spin_loop();
            spins += 1;
        }
    });
}

/// How many times the caller polls the helpers before it leaves the wait to rayon: tens of
/// microseconds (a spin-loop hint is ~10-140 cycles, by CPU).
const SPINS: u32 = 1 << 11;

/// The indices not yet taken, `front .. back`, in one word (front in the low 32 bits).
struct Claims(AtomicU64);

impl Claims {
    /// `0 .. n`, or `None` when `n` does not fit in 32 bits.
    fn new(n: usize) -> Option<Self> {
        let n = u32::try_from(n).ok()?;
        Some(Claims(AtomicU64::new(u64::from(n) << 32)))
    }

    /// The first index left (`from_back`: the last), or `None` when none is.
    fn take(&self, from_back: bool) -> Option<usize> {
        // Acquire: a caller that finds none left has seen every take before, and so the
        // `started` count of each helper that made one (`for_each` waits for those)
        let mut cur = self.0.load(Ordering::Acquire);
        loop {
            let (front, back) = (cur as u32, (cur >> 32) as u32);
            if front >= back {
                return None;
            }
            let (next, i) = if from_back {
                (u64::from(front) | (u64::from(back - 1) << 32), back - 1)
            } else {
                (u64::from(front + 1) | (u64::from(back) << 32), front)
            };
            match self
                .0
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(i as usize),
                Err(now) => cur = now,
            }
        }
    }
}

/// Adds one to its counter when dropped.
struct Done<'a>(&'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

/// A lock that a panic on another thread did not leave unusable (the panic itself reaches the
/// caller through rayon).
fn lock<V>(m: &Mutex<V>) -> std::sync::MutexGuard<'_, V> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `f(i, &mut items[i])` for every item, in parallel.
pub fn each_mut<E: Send>(items: &mut [E], f: impl Fn(usize, &mut E) + Sync) {
    // one uncontended lock per item (the items are chunks of sequences, a few dozen a call)
    let cells: Vec<Mutex<&mut E>> = items.iter_mut().map(Mutex::new).collect();
    for_each(cells.len(), &|i| f(i, &mut lock(&cells[i])));
}

/// `f(i, &mut items[i])` for every item, in parallel; the results in index order.
pub fn map_mut<E: Send, R: Send>(items: &mut [E], f: impl Fn(usize, &mut E) -> R + Sync) -> Vec<R> {
    let mut jobs: Vec<(&mut E, Option<R>)> = items.iter_mut().map(|e| (e, None)).collect();
    each_mut(&mut jobs, |i, (e, r)| *r = Some(f(i, e)));
    jobs.into_iter().filter_map(|(_, r)| r).collect()
}

/// `f(i)` for every `i` in `0 .. n`, in parallel; the results in index order.
pub fn map<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let mut out: Vec<Option<R>> = (0..n).map(|_| None).collect();
    each_mut(&mut out, |i, o| *o = Some(f(i)));
    out.into_iter().flatten().collect()
}

/// Scratch values for a loop: one per index running at a time, made by `S::default()` and reused
/// by later indices (rayon's `map_init`, whose scratch a split of the work keeps). The loop's
/// results must not depend on what a scratch value held before.
struct Scratch<S>(Mutex<Vec<S>>);

impl<S: Default> Scratch<S> {
    fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    fn with<R>(&self, f: impl FnOnce(&mut S) -> R) -> R {
        let mut s = lock(&self.0).pop().unwrap_or_default();
        let r = f(&mut s);
        lock(&self.0).push(s);
        r
    }
}

/// [`each_mut`] with a scratch value (see [`Scratch`]).
pub fn each_mut_with<E: Send, S: Default + Send>(
    items: &mut [E],
    f: impl Fn(&mut S, usize, &mut E) + Sync,
) {
    let scratch = Scratch::<S>::new();
    each_mut(items, |i, e| scratch.with(|s| f(s, i, e)));
}

/// [`map`] with a scratch value (see [`Scratch`]).
pub fn map_with<S: Default + Send, R: Send>(
    n: usize,
    f: impl Fn(&mut S, usize) -> R + Sync,
) -> Vec<R> {
    let scratch = Scratch::<S>::new();
    map(n, |i| scratch.with(|s| f(s, i)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    #[test]
    fn every_index_once_and_results_in_order() {
        for threads in [1, 2, 5] {
            pool(threads).install(|| {
                for n in [0, 1, 2, 7, 100] {
                    let got = map(n, |i| i * i);
                    assert_eq!(got, (0..n).map(|i| i * i).collect::<Vec<_>>());
                    let mut v = vec![0usize; n];
                    each_mut(&mut v, |i, x| *x += i + 1);
                    assert_eq!(v, (1..=n).collect::<Vec<_>>());
                }
            });
        }
    }

    #[test]
    fn a_panic_reaches_the_caller_and_nested_loops_finish() {
        for threads in [2, 3] {
            pool(threads).install(|| {
                // a panicking index (on whichever thread) ends the loop with the panic, no hang
                for bad in [0, 5, 63] {
                    let r = std::panic::catch_unwind(|| {
                        for_each(64, &|i| {
                            if i == bad {
                                panic!("index {i}");
                            }
                        })
                    });
                    assert!(r.is_err());
                }
                // loops inside the items of a loop, every index once
                let got = map(6, |i| map(i + 3, |j| i * j).iter().sum::<usize>());
                let want: Vec<usize> = (0..6).map(|i| (0..i + 3).map(|j| i * j).sum()).collect();
                assert_eq!(got, want);
            });
        }
    }

    #[test]
    fn scratch_is_reused_and_never_shared() {
        pool(3).install(|| {
            // each scratch counts the indices it served: together they served every index once
            let seen = Mutex::new(Vec::new());
            let got = map_with(64, |s: &mut Vec<usize>, i| {
                s.push(i);
                lock(&seen).push(s.len());
                i
            });
            assert_eq!(got, (0..64).collect::<Vec<_>>());
            let seen = seen.into_inner().unwrap();
            assert_eq!(seen.len(), 64);
            // at most 3 scratch values ran at a time, so some were reused
            assert!(seen.iter().any(|&k| k > 1));
            // a scratch value is made only when none is free: one first use per value made
            assert!(seen.iter().filter(|&&k| k == 1).count() <= 3);
            let mut v = vec![0usize; 9];
            each_mut_with(&mut v, |s: &mut usize, i, x| {
                *s += 1;
                *x = i;
            });
            assert_eq!(v, (0..9).collect::<Vec<_>>());
        });
    }
}
