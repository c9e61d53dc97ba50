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
use std::any::Any;
use std::cell::Cell;
use std::hint::spin_loop;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// `f(i)` for every `i` in `0 .. n`, on rayon's threads (the one parallel loop of the crate).
///
/// The calling thread takes indices from the front and up to `threads - 1` helpers take them from
/// the back, until the two ends meet. The caller starts at once (no splitting first); on two
/// threads each thread runs the same indices every call when the work is even (0, 1, ... on the
/// caller, n - 1, n - 2, ... on the helper), so a chunk's buffers stay in one core's caches.
///
/// Where there is room for them, the helpers are the calling thread's [`Team`]: rayon
/// jobs that, between loops, spin for up to [`IDLE`] waiting for the caller's next loop instead
/// of returning to rayon, so a step's loops start and end within a fraction of a microsecond on
/// every thread rather than the few microseconds rayon's idle loop takes to notice new or
/// finished work (docs/speed.md, "Two threads on the Intel Xeon"). Otherwise (no room for more
/// helpers: see [`HELPERS`]; or a loop inside a loop's index) the helpers are jobs of a rayon
/// scope.
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
    let helpers = (threads - 1).min(n - 1);
    // (`try_with`: a loop in a thread-local's destructor at the thread's end takes a scope)
    if IN_LOOP.get()
        || !TEAM
            .try_with(|team| team_loop(team, &claims, helpers, threads, f))
            .unwrap_or(false)
    {
        scope_for_each(&claims, helpers, f);
    }
}

/// [`for_each`] with `helpers` helper jobs of a rayon scope.
fn scope_for_each(claims: &Claims, helpers: usize, f: &(dyn Fn(usize) + Sync)) {
    let (started, done) = (AtomicUsize::new(0), AtomicUsize::new(0));
    rayon::in_place_scope(|s| {
        for _ in 0..helpers {
            s.spawn(|_| {
                started.fetch_add(1, Ordering::AcqRel);
                // counted as done on the way out, also when `f` panics (the scope then passes
                // the panic on)
                let _done = Done(&done);
                claims.run(true, f);
            });
        }
        claims.run(false, f);
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

/// How long a team's helper waits for the next loop before it returns to rayon: longer than the
/// serial part between two loops of a training step (the optimiser, the loss), short enough that
/// a helper of a finished run does not keep a core busy.
const IDLE: Duration = Duration::from_micros(200);

/// How long a team's caller sleeps between looks at a helper whose index is taking long (past
/// [`SPINS`] polls).
const NAP: Duration = Duration::from_micros(50);

/// The machine's cores (the threads the OS runs at once).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The helpers alive in every team of the process: a team makes new ones only while they and
/// its caller fit on the cores, and on the threads of the caller's pool, so that spinning helpers
/// never take a core from a thread with work (several trainers in one process, each on its own
/// thread, share the cores) and never hold every thread of a pool (a loop that takes the scope
/// path waits for its jobs to run on one).
static HELPERS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's helpers (made on its first loop).
    static TEAM: Arc<Team> = Arc::new(Team::default());
    /// This thread is inside a loop (as its caller or running one of its indices).
    static IN_LOOP: Cell<bool> = const { Cell::new(false) };
}

/// One loop as a team's helpers see it.
struct Task<'a> {
    f: &'a (dyn Fn(usize) + Sync),
    claims: &'a Claims,
    /// The first panic of a helper's index, for the caller to pass on.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

/// The helpers of one calling thread: rayon jobs that run the caller's loops one after the other
/// (see [`for_each`]).
///
/// Aligned to its own cache lines (128 bytes: two lines, which some CPUs fetch in pairs): the
/// helpers poll `state`, and the `Arc`'s counts or the caller's other data beside it would move
/// the line between the cores at every write.
#[derive(Default)]
#[repr(align(128))]
struct Team {
    /// The loop now running: its number (bits 33 and up), whether helpers may still join it (bit
    /// 32, [`OPEN`]) and how many are inside it (bits 0-31). Only the caller opens and closes a
    /// loop; a helper joins by adding one while the loop is open, and leaves by taking one away.
    state: AtomicU64,
    /// The loop's task, set by the caller while no helper is inside and the loop is closed.
    task: AtomicPtr<Task<'static>>,
    /// How many helper jobs are alive (working or waiting for a loop).
    alive: AtomicUsize,
}

const OPEN: u64 = 1 << 32;
const NUMBER: u64 = 1 << 33;
const INSIDE: u64 = OPEN - 1;

/// [`for_each`] with the calling thread's [`Team`] of `helpers` helpers in a pool of `threads`
/// threads, or `false` (nothing run) when the team has none and there is no room for them (see
/// [`HELPERS`]).
fn team_loop(
    team: &Arc<Team>,
    claims: &Claims,
    helpers: usize,
    threads: usize,
    f: &(dyn Fn(usize) + Sync),
) -> bool {
    // helpers that waited too long have returned to rayon: new ones replace them where the
    // cores have room (the caller needs one too)
    let alive = team.alive.load(Ordering::Acquire);
    if alive < helpers {
        let more = helpers - alive;
        if HELPERS.fetch_add(more, Ordering::AcqRel) + more < cores().min(threads) {
            team.alive.fetch_add(more, Ordering::AcqRel);
            for _ in 0..more {
                let t = Arc::clone(team);
                rayon::spawn(move || t.help());
            }
        } else {
            HELPERS.fetch_sub(more, Ordering::AcqRel);
            if alive == 0 {
                return false;
            }
        }
    }
    let task = Task {
        f,
        claims,
        panic: Mutex::new(None),
    };
    // SAFETY (of the helpers' use of the pointer): the loop is closed and no helper is inside, so
    // none reads `task` now; a helper reads it only after joining the loop opened below, and this
    // function waits for every helper that joined to leave before `task` goes out of scope.
    team.task.store(
        &task as *const Task as *mut Task<'static>,
        Ordering::Release,
    );
    let s = team.state.load(Ordering::Acquire);
    team.state.store(
        (s & !(OPEN | INSIDE)).wrapping_add(NUMBER) | OPEN,
        Ordering::Release,
    );
    let was = IN_LOOP.replace(true);
    let mine = catch_unwind(AssertUnwindSafe(|| claims.run(false, f)));
    // every index is taken: close the loop and wait for the helpers inside it to finish theirs
    team.state.fetch_and(!OPEN, Ordering::AcqRel);
    // (spinning first; a long index, such as a GPT-2 prompt's baseline fit, is waited out in
    // short sleeps, so that this thread does not keep its core busy meanwhile)
    let mut spins = 0;
    while team.state.load(Ordering::Acquire) & INSIDE != 0 {
        if spins < SPINS {
            spin_loop();
            spins += 1;
        } else {
            std::thread::sleep(NAP);
        }
    }
    IN_LOOP.set(was);
    if let Err(p) = mine {
        resume_unwind(p);
    }
    let theirs = lock(&task.panic).take();
    if let Some(p) = theirs {
        resume_unwind(p);
    }
    true
}

impl Team {
    /// A helper: joins each loop the caller opens, takes indices from the back, and returns to
    /// rayon after waiting [`IDLE`] for a loop.
    fn help(self: &Arc<Self>) {
        // a job the caller's own thread picked up (waiting in a scope of a loop inside a loop)
        // would only delay it
        if TEAM.try_with(|t| Arc::ptr_eq(t, self)).unwrap_or(false) {
            self.leave();
            return;
        }
        let mut last = None;
        let mut since = Instant::now();
        let mut polls = 0u32;
        loop {
            let s = self.state.load(Ordering::Acquire);
            if s & OPEN != 0 && last != Some(s >> 33) {
                if self
                    .state
                    .compare_exchange_weak(s, s + 1, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    last = Some(s >> 33);
                    // SAFETY: this helper is inside the open loop, whose caller keeps the task
                    // alive until every helper inside has left (`team_loop`)
                    let task = unsafe { &*self.task.load(Ordering::Acquire) };
                    let was = IN_LOOP.replace(true);
                    if let Err(p) = catch_unwind(AssertUnwindSafe(|| task.claims.run(true, task.f)))
                    {
                        lock(&task.panic).get_or_insert(p);
                    }
                    IN_LOOP.set(was);
                    self.state.fetch_sub(1, Ordering::Release);
                    since = Instant::now();
                }
                continue;
            }
            spin_loop();
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(64) && since.elapsed() > IDLE {
                self.leave();
                return;
            }
        }
    }

    /// A helper returns to rayon.
    fn leave(&self) {
        self.alive.fetch_sub(1, Ordering::AcqRel);
        HELPERS.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The indices not yet taken, `front .. back`, in one word (front in the low 32 bits).
///
/// On cache lines of its own (see [`Team`]): every thread writes it at every index.
#[repr(align(128))]
struct Claims(AtomicU64);

impl Claims {
    /// `0 .. n`, or `None` when `n` does not fit in 32 bits.
    fn new(n: usize) -> Option<Self> {
        let n = u32::try_from(n).ok()?;
        Some(Claims(AtomicU64::new(u64::from(n) << 32)))
    }

    /// `f(i)` for each index this thread takes (`from_back`: from the back), until none is left.
    fn run(&self, from_back: bool, f: &(dyn Fn(usize) + Sync)) {
        while let Some(i) = self.take(from_back) {
            f(i);
        }
    }

    /// The first index left (`from_back`: the last), or `None` when none is.
    fn take(&self, from_back: bool) -> Option<usize> {
        // Acquire: a caller that finds none left has seen every take before, and so the
        // `started` count of each helper that made one (`scope_for_each` waits for those)
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
    let items = Items(items.as_mut_ptr(), items.len());
    // SAFETY: `for_each` calls the closure once for each index below the length (and never
    // after it returns), so no item is borrowed twice, and `items` stays borrowed meanwhile
    for_each(items.1, &|i| f(i, unsafe { &mut *items.at(i) }));
}

/// A slice's items, to hand out one by one to the threads of a loop.
struct Items<E>(*mut E, usize);

// SAFETY: the threads get disjoint items (see `each_mut`), which may be sent between threads
unsafe impl<E: Send> Sync for Items<E> {}

impl<E> Items<E> {
    fn at(&self, i: usize) -> *mut E {
        debug_assert!(i < self.1);
        self.0.wrapping_add(i)
    }
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

    /// One loop through the calling thread's team with one helper (`true`), or through a scope
    /// where the cores have no room for the helper now (other tests run at the same time).
    fn by_team(n: usize, f: &(dyn Fn(usize) + Sync)) -> bool {
        let claims = Claims::new(n).unwrap();
        if TEAM.with(|t| team_loop(t, &claims, 1, 2, f)) {
            return true;
        }
        scope_for_each(&claims, 1, f);
        false
    }

    #[test]
    fn a_team_runs_loop_after_loop_and_replaces_helpers_that_left() {
        pool(2).install(|| {
            let me = std::thread::current().id();
            let t0 = Instant::now();
            let (mut round, mut helped) = (0, 0);
            // until a team's helper has run indices (on one core there is never room for one;
            // on a loaded machine it may take a while)
            while round < 300 || (helped == 0 && cores() > 1 && t0.elapsed().as_secs() < 20) {
                let n = round % 9 + 2;
                let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
                let theirs = AtomicUsize::new(0);
                let team = by_team(n, &|i| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                    if std::thread::current().id() != me {
                        theirs.fetch_add(1, Ordering::Relaxed);
                    }
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_micros(20) {
                        spin_loop();
                    }
                });
                assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
                if team {
                    helped += theirs.load(Ordering::Relaxed);
                }
                if round % 100 == 0 {
                    // the helper returns to rayon; a later loop makes a new one
                    let t = Instant::now();
                    while TEAM.with(|t| t.alive.load(Ordering::Acquire)) > 0 {
                        assert!(t.elapsed().as_secs() < 20, "a helper did not return");
                        std::thread::sleep(IDLE);
                    }
                }
                round += 1;
            }
            assert!(helped > 0 || cores() == 1);
            // a panic on either thread reaches the caller; loops inside a team's indices
            for bad in [0, 63] {
                let r = std::panic::catch_unwind(|| {
                    by_team(64, &|i| {
                        if i == bad {
                            panic!("index {i}");
                        }
                    })
                });
                assert!(r.is_err());
            }
            let sums: Vec<AtomicUsize> = (0..6).map(|_| AtomicUsize::new(0)).collect();
            by_team(6, &|i| {
                let inner = map(i + 3, |j| i * j).iter().sum::<usize>();
                sums[i].store(inner, Ordering::Relaxed);
            });
            let got: Vec<usize> = sums.iter().map(|s| s.load(Ordering::Relaxed)).collect();
            let want: Vec<usize> = (0..6).map(|i| (0..i + 3).map(|j| i * j).sum()).collect();
            assert_eq!(got, want);
        });
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
