//! Many runs on one Vulkan device, their training steps packed into one call: what
//! `icl sweep run --engine vulkan` (and `icl repro --engine vulkan`) does with the one-layer runs
//! of a sweep.
//!
//! Each run trains in its own thread through the one trainer and run-folder writer
//! ([`crate::train`]), exactly as alone; only its engine differs: a [`Member`] of a [`Pack`]
//! instead of a device of its own. A member's loss and gradient calls meet in the pack; when
//! every member of the pack has handed in its step (or a short wait has passed), one of them
//! runs the whole set on the device as one packed call per model shape
//! ([`AttentionKernels::loss_grad_packed`]: one submission per chunk for all of them) and
//! hands each its own result. The packed call gives every run, bit for bit, what
//! [`AttentionKernels::loss_grad`] gives it alone, so a run's bytes do not depend on which
//! runs share its calls, on their timing, or on the pack's size: the run folder is the one it
//! gives alone on the Vulkan engine (the timings in `summary.json` aside). A run on a law-2 task
//! the device makes hands in its sampling instead of a batch, and the runs of one task have their
//! batches made on the device in the same call, each from its own key
//! ([`AttentionKernels::sampled_loss_grad_packed`]: a step then uploads nothing but circuits);
//! other runs' batches are sampled on the CPU by each run's thread. Both make the same bits.
use crate::error::{Result, RunError};
use icl_core::config::{Arch, Config, TaskKind};
use icl_core::engine::{AttentionKernels, PackedRun, Sampling};
use icl_core::families::attention::AttentionSpec;
use icl_core::{Batch, Circuits, Task};
use icl_gpu_vulkan::{Options, VulkanEngine};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The longest a member's step waits for the others before the steps handed in so far run
/// without them (a member busy elsewhere: writing its outputs, or between runs). Only the
/// packing depends on it, never a result.
const PATIENCE: Duration = Duration::from_millis(500);

/// Whether runs of `cfg` can share a pack: one-layer attention on fresh data at a fixed
/// length, whose only engine user is the trainer's objective (the `eigs` task's probes run
/// engines of their own; its fixed sets train on sufficient statistics).
pub fn packable(cfg: &Config) -> bool {
    cfg.model.arch == Arch::Attention && cfg.task.kind != TaskKind::Eigs
}

/// One Vulkan device shared by the runs of a pack (cloning shares it).
#[derive(Clone)]
pub struct Pack(Arc<Shared>);

impl std::fmt::Debug for Pack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.0.state();
        write!(f, "Pack({} members, {} calls)", st.members, st.calls)
    }
}

/// Packs are equal when they are the same device.
impl PartialEq for Pack {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

struct Shared {
    engine: Mutex<VulkanEngine>,
    state: Mutex<State>,
    cv: Condvar,
}

/// A member's result under the id of its step: its loss and circuit gradient, or `None` for a
/// sampling the device does not make (the member then samples on the CPU).
type Done = (u64, Option<icl_core::Result<(f32, Circuits<f32>)>>);

#[derive(Default)]
struct State {
    /// Members alive (each a run's objective).
    members: usize,
    next_id: u64,
    pending: Vec<Request>,
    done: Vec<Done>,
    /// A member is running the pending steps on the device.
    busy: bool,
    /// Packed calls made (for tests and the benchmark).
    calls: u64,
}

/// One member's step: its circuits and its batch or sampling, copied (the caller waits for the
/// result).
struct Request {
    id: u64,
    spec: AttentionSpec,
    circ: Circuits<f32>,
    work: Work,
}

/// What a step computes on: a batch, or a law-2 task's training batch the device makes.
enum Work {
    Batch(Batch<f32>),
    Sampled(Box<Task>, Sampling),
}

impl Request {
    /// Whether `self` and `r` can share a packed call: one spec, and one batch shape, or one
    /// task (as the device sampler sees it) at one n and len.
    fn packs_with(&self, r: &Request) -> bool {
        self.spec == r.spec
            && match (&self.work, &r.work) {
                (Work::Batch(a), Work::Batch(b)) => {
                    (a.n, a.len, a.d, a.n_out) == (b.n, b.len, b.d, b.n_out)
                }
                (Work::Sampled(ta, a), Work::Sampled(tb, b)) => {
                    (a.n, a.len) == (b.n, b.len)
                        && ta.plain_gaussian().is_some()
                        && ta.plain_gaussian() == tb.plain_gaussian()
                }
                _ => false,
            }
    }
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Pack {
    /// A pack on the device the environment's options choose (`ICL_VULKAN_*`).
    pub fn from_env() -> Result<Pack> {
        let e =
            VulkanEngine::new(&Options::from_env()).map_err(|e| RunError::Engine(e.to_string()))?;
        Ok(Pack(Arc::new(Shared {
            engine: Mutex::new(e),
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
        })))
    }

    /// A new member: the kernels one run's trainer computes with.
    pub fn member(&self) -> Member {
        self.0.state().members += 1;
        Member {
            pack: self.clone(),
            joined: true,
            device_data: true,
        }
    }

    /// Kernels on the pack's device that do not join its steps: a finished run's final
    /// evaluation (predictions), so that the runs of a pack share one device to the end and the
    /// others' steps do not wait for it.
    pub fn predictor(&self) -> Member {
        Member {
            pack: self.clone(),
            joined: false,
            device_data: false,
        }
    }

    /// Packed calls made so far (each runs every step handed in at that moment).
    pub fn calls(&self) -> u64 {
        self.0.state().calls
    }

    /// Hand in one step and wait for its result: lead the call when every member has handed
    /// in (or the oldest step waited [`PATIENCE`]) and nobody else is running one.
    fn step(
        &self,
        spec: &AttentionSpec,
        circ: &Circuits<f32>,
        work: Work,
    ) -> Option<icl_core::Result<(f32, Circuits<f32>)>> {
        let sh = &self.0;
        let mut st = sh.state();
        let id = st.next_id;
        st.next_id += 1;
        st.pending.push(Request {
            id,
            spec: spec.clone(),
            circ: circ.clone(),
            work,
        });
        let since = Instant::now();
        loop {
            if let Some(i) = st.done.iter().position(|(d, _)| *d == id) {
                return st.done.swap_remove(i).1;
            }
            let waited = since.elapsed();
            let mine = st.pending.iter().any(|r| r.id == id);
            if mine && !st.busy && (st.pending.len() >= st.members || waited >= PATIENCE) {
                let reqs = std::mem::take(&mut st.pending);
                st.busy = true;
                drop(st);
                let results = self.run(reqs);
                st = sh.state();
                st.done.extend(results);
                st.busy = false;
                sh.cv.notify_all();
                continue;
            }
            st = if st.busy {
                // the leader wakes everyone when its results are in
                sh.cv.wait(st).unwrap_or_else(|e| e.into_inner())
            } else {
                let wait = PATIENCE
                    .saturating_sub(waited)
                    .max(Duration::from_millis(1));
                sh.cv
                    .wait_timeout(st, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            };
        }
    }

    /// Run handed-in steps on the device: one packed call per model shape and kind of work.
    fn run(&self, reqs: Vec<Request>) -> Vec<Done> {
        let mut engine = self.0.engine.lock().unwrap_or_else(|e| e.into_inner());
        let mut groups: Vec<Vec<Request>> = Vec::new();
        for r in reqs {
            match groups.iter_mut().find(|g| g[0].packs_with(&r)) {
                Some(g) => g.push(r),
                None => groups.push(vec![r]),
            }
        }
        let mut out = Vec::new();
        for g in groups {
            let spec = g[0].spec.clone();
            let mut grads: Vec<Circuits<f32>> = g.iter().map(|_| Circuits::zeros(&spec)).collect();
            let losses: Vec<Option<icl_core::Result<f32>>> = match &g[0].work {
                Work::Sampled(task, _) => {
                    let circs: Vec<&Circuits<f32>> = g.iter().map(|r| &r.circ).collect();
                    let runs: Vec<Sampling> = g
                        .iter()
                        .filter_map(|r| match &r.work {
                            Work::Sampled(_, s) => Some(*s),
                            Work::Batch(_) => None,
                        })
                        .collect();
                    match engine.sampled_loss_grad_packed(&spec, &circs, task, &runs, &mut grads) {
                        Some(Ok(l)) => l.into_iter().map(|l| Some(Ok(l))).collect(),
                        Some(Err(e)) => vec![Some(Err(e)); g.len()],
                        None => vec![None; g.len()],
                    }
                }
                Work::Batch(_) => {
                    let runs: Vec<PackedRun<'_, f32>> = g
                        .iter()
                        .filter_map(|r| match &r.work {
                            Work::Batch(batch) => Some(PackedRun {
                                circ: &r.circ,
                                batch,
                            }),
                            Work::Sampled(..) => None,
                        })
                        .collect();
                    match engine.loss_grad_packed(&spec, &runs, &mut grads) {
                        Some(Ok(l)) => l.into_iter().map(|l| Some(Ok(l))).collect(),
                        Some(Err(e)) => vec![Some(Err(e)); g.len()],
                        None => runs
                            .iter()
                            .zip(grads.iter_mut())
                            .map(|(r, gr)| Some(engine.loss_grad(&spec, r.circ, r.batch, gr)))
                            .collect(),
                    }
                }
            };
            self.0.state().calls += 1;
            for ((r, l), gr) in g.iter().zip(losses).zip(grads) {
                out.push((r.id, l.map(|l| l.map(|l| (l, gr)))));
            }
        }
        out
    }
}

/// One run's kernels in a [`Pack`] (its one-layer loss and gradient go through the pack;
/// predictions run on the pack's device directly). A member leaves the pack when dropped.
pub struct Member {
    pack: Pack,
    /// Counted among the members whose steps a packed call waits for.
    joined: bool,
    /// Whether to hand in law-2 samplings for the device to make (until it declines one).
    device_data: bool,
}

impl Drop for Member {
    fn drop(&mut self) {
        if !self.joined {
            return;
        }
        let sh = &self.pack.0;
        let mut st = sh.state();
        st.members = st.members.saturating_sub(1);
        sh.cv.notify_all();
    }
}

impl AttentionKernels<f32> for Member {
    fn name(&self) -> &'static str {
        "vulkan"
    }

    fn loss_grad(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<f32>,
        batch: &Batch<f32>,
        grad: &mut Circuits<f32>,
    ) -> icl_core::Result<f32> {
        let (loss, g) = self
            .pack
            .step(spec, circ, Work::Batch(batch.clone()))
            .unwrap_or_else(|| {
                Err(icl_core::Error::Unsupported(
                    "internal: a packed batch step without a result".into(),
                ))
            })?;
        grad.kq.copy_from_slice(&g.kq);
        grad.ov.copy_from_slice(&g.ov);
        Ok(loss)
    }

    fn predict(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<f32>,
        batch: &Batch<f32>,
        out: &mut [f32],
    ) -> icl_core::Result<()> {
        let mut e = self.pack.0.engine.lock().unwrap_or_else(|e| e.into_inner());
        e.predict(spec, circ, batch, out)
    }

    /// A law-2 task the device makes: the sampling goes to the pack, whose call makes the batches
    /// of every run of the task on the device. Other tasks, and every step after the device
    /// declined one, are made on the member's own thread (the Runner's CPU sampler, `None`):
    /// the same bits either way.
    fn sampled_loss_grad(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<f32>,
        task: &Task,
        s: Sampling,
        grad: &mut Circuits<f32>,
    ) -> Option<icl_core::Result<f32>> {
        if !self.device_data || task.plain_gaussian().is_none() {
            return None;
        }
        match self
            .pack
            .step(spec, circ, Work::Sampled(Box::new(task.clone()), s))
        {
            None => {
                self.device_data = false;
                None
            }
            Some(r) => Some(r.map(|(loss, g)| {
                grad.kq.copy_from_slice(&g.kq);
                grad.ov.copy_from_slice(&g.ov);
                loss
            })),
        }
    }
}
