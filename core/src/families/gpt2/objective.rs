//! The objective of the GPT-2 family: fresh data every step, the loss at every x position
//! (Garg et al. 2022's `train_step`), with their curriculum.
//!
//! **Data of step t.** Sequence b comes from stream (seed, Train, t, b) as every family's
//! ([`Task::sample_sequence`]). Under the curriculum (`task.curriculum`), step t trains at
//! `d_t = min(curriculum_d + curriculum_d_inc * floor(t / curriculum_every), d)` dimensions and
//! `L_t = min(curriculum_L + curriculum_L_inc * floor(t / curriculum_every), L)` context pairs
//! (Garg et al.'s `Curriculum`: `n_dims_truncated` and `n_points = L_t + 1`, updated after every
//! step); the sequence is drawn at d dimensions and length `L_t`, then coordinates `d_t..d` of
//! every x are set to zero and their share `w_i x_i` is taken out of every label, so
//! `y = w[..d_t].x[..d_t] + noise` exactly as their sampler writes it.
use super::kernels::Gpt2Runner;
use super::spec::Gpt2Spec;
use crate::config::{Config, TaskConfig};
use crate::data::task::TaskVector;
use crate::data::{Batch, Task};
use crate::objective::Objective;
use crate::rng::Domain;
use crate::{Result, Scalar};
use alloc::vec;
use alloc::vec::Vec;

/// Garg et al.'s curriculum in icl's units: the dimension and the context length of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Curriculum {
    d: (usize, usize, usize),
    len: (usize, usize, usize),
    every: u64,
}

impl Curriculum {
    /// The curriculum of a task section, `None` when it is off (every step at d and L).
    pub fn of(t: &TaskConfig) -> Option<Self> {
        t.curriculum.then_some(Curriculum {
            d: (t.curriculum_d.min(t.d), t.curriculum_d_inc, t.d),
            len: (t.curriculum_l.min(t.len), t.curriculum_l_inc, t.len),
            every: t.curriculum_every.max(1),
        })
    }

    /// The first step (counted from 0) that trains at the full d and L, `None` when an
    /// increment of 0 leaves one below its end for ever.
    pub fn full_size_step(&self) -> Option<u64> {
        let stage = |(start, inc, end): (usize, usize, usize)| -> Option<u64> {
            if start >= end {
                Some(0)
            } else if inc == 0 {
                None
            } else {
                u64::try_from((end - start).div_ceil(inc)).ok()
            }
        };
        let k = stage(self.d)?.max(stage(self.len)?);
        k.checked_mul(self.every)
    }

    /// The schedule in words: `d 5 -> 20 (+1) and L 10 -> 40 (+2) every 2000 steps`.
    pub fn describe(&self) -> alloc::string::String {
        let part = |name: &str, (start, inc, end): (usize, usize, usize)| {
            if start >= end {
                alloc::format!("{name} {end}")
            } else {
                alloc::format!("{name} {start} -> {end} (+{inc})")
            }
        };
        let (d, l) = (part("d", self.d), part("L", self.len));
        if self.full_size_step() == Some(0) {
            alloc::format!("{d} and {l} from the start")
        } else {
            alloc::format!("{d} and {l} every {} steps", self.every)
        }
    }

    /// (dimension, context length) at step `step` (counted from 0).
    pub fn at(&self, step: u64) -> (usize, usize) {
        let k = usize::try_from(step / self.every).unwrap_or(usize::MAX);
        let grow = |(start, inc, end): (usize, usize, usize)| {
            start.saturating_add(inc.saturating_mul(k)).min(end)
        };
        (grow(self.d), grow(self.len))
    }
}

/// Sample sequence `b` of step `step` at dimension `dt` (of `task.d`) into `z` ((len + 1) x
/// (d + 1) tokens) and `y`, zeroing coordinates `dt..d` (see the module doc).
#[allow(clippy::too_many_arguments)]
pub fn sample_truncated<T: Scalar>(
    task: &Task,
    seed: u64,
    step: u64,
    b: u64,
    dt: usize,
    len: usize,
    normals: &mut Vec<f64>,
    z: &mut [T],
    y: &mut [T],
) {
    let mut r = task.stream(seed, Domain::Train, step, b);
    let d = task.d;
    if task.func.is_some() {
        task.sample_function(&mut r, len, dt, normals, z, y);
        return;
    }
    if dt >= d {
        task.sample_sequence(&mut r, len, normals, z, y);
        return;
    }
    let mut w = vec![0.0; d];
    task.sample_sequence_as(&mut r, len, normals, z, y, TaskVector::Random, &mut w);
    let e = d + 1;
    for l in 0..=len {
        let tok = &mut z[l * e..(l + 1) * e];
        let mut drop = 0.0;
        for i in dt..d {
            drop += w[i] * tok[i].to_f64();
            tok[i] = T::zero();
        }
        let slot = if l < len { &mut tok[d] } else { &mut y[0] };
        *slot = T::of(slot.to_f64() - drop);
    }
}

/// Fresh data every step for a GPT-2 model.
pub struct Online<T: Scalar> {
    spec: Gpt2Spec,
    task: Task,
    runner: Gpt2Runner<T>,
    seed: u64,
    n: usize,
    curriculum: Option<Curriculum>,
    batch: Batch<T>,
    normals: Vec<f64>,
}

impl<T: Scalar> Online<T> {
    /// The objective of `cfg` for a GPT-2 model of `spec`.
    pub fn new(cfg: &Config, task: &Task, spec: &Gpt2Spec, runner: Gpt2Runner<T>) -> Result<Self> {
        let curriculum = Curriculum::of(&cfg.task);
        let len = curriculum.map_or(cfg.task.len, |c| c.at(0).1);
        Ok(Online {
            spec: spec.clone(),
            task: task.clone(),
            runner,
            seed: cfg.train.seed,
            n: cfg.train.batch,
            curriculum,
            batch: Batch::try_zeros(cfg.train.batch, len, task.d, 1)?,
            normals: Vec::new(),
        })
    }

    /// Fill the batch of `step` (resized when the curriculum changes the context length).
    fn sample(&mut self, step: u64) -> Result<()> {
        let (dt, len) = match self.curriculum {
            Some(c) => c.at(step),
            None => (self.task.d, self.batch.len),
        };
        if len != self.batch.len {
            self.batch = Batch::try_zeros(self.n, len, self.task.d, 1)?;
        }
        let w = (len + 1) * self.batch.e();
        for b in 0..self.n {
            let (z, y) = (
                &mut self.batch.z[b * w..(b + 1) * w],
                &mut self.batch.y[b..b + 1],
            );
            sample_truncated(
                &self.task,
                self.seed,
                step,
                b as u64,
                dt,
                len,
                &mut self.normals,
                z,
                y,
            );
        }
        Ok(())
    }
}

impl<T: Scalar> Objective<T> for Online<T> {
    fn protocol(&self) -> &'static str {
        if self.curriculum.is_some() {
            "fresh data every step, Garg et al.'s curriculum"
        } else {
            "fresh data every step"
        }
    }
    fn engine(&self) -> &str {
        self.runner.name()
    }
    fn full_batch(&self) -> bool {
        false
    }
    fn loss_grad(&mut self, step: u64, params: &[T], grad: &mut [T]) -> Result<f64> {
        self.sample(step)?;
        let l = self
            .runner
            .loss_grad(&self.spec, params, &self.batch, grad)?;
        Ok(l.to_f64())
    }
    fn loss(&mut self, _params: &[T]) -> Result<Option<f64>> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curriculum_grows_as_garg_et_al_update_it() {
        let mut cfg = crate::presets::preset("garg-linear").unwrap();
        let c = Curriculum::of(&cfg.task).unwrap();
        // Curriculum.update() after every step: +1 dim and +2 points at step counts 2000, 4000, ...
        assert_eq!(c.at(0), (5, 10));
        assert_eq!(c.at(1999), (5, 10));
        assert_eq!(c.at(2000), (6, 12));
        assert_eq!(c.at(29_999), (19, 38));
        assert_eq!(c.at(30_000), (20, 40));
        assert_eq!(c.at(10_000_000), (20, 40));
        cfg.set("task.d", "3").unwrap();
        cfg.set("task.L", "8").unwrap();
        cfg.set("model.positions", "9").unwrap();
        let c = Curriculum::of(&cfg.task).unwrap();
        assert_eq!(c.at(0), (3, 8));
        assert_eq!(c.at(1 << 40), (3, 8));
    }

    #[test]
    fn the_full_size_step_is_where_the_curriculum_ends() {
        let mut cfg = crate::presets::preset("garg-linear").unwrap();
        let c = Curriculum::of(&cfg.task).unwrap();
        // d: 15 increments of 1, L: 15 of 2, every 2000 steps: the full size from step 30,000
        assert_eq!(c.full_size_step(), Some(30_000));
        assert_eq!(c.at(29_999), (19, 38));
        assert_eq!(
            c.describe(),
            "d 5 -> 20 (+1) and L 10 -> 40 (+2) every 2000 steps"
        );
        // L ends later than d: d 5 -> 8 in 3 stages, L 10 -> 40 in ceil(30 / 4) = 8
        cfg.set("task.d", "8").unwrap();
        cfg.set("task.curriculum_L_inc", "4").unwrap();
        let c = Curriculum::of(&cfg.task).unwrap();
        assert_eq!(c.full_size_step(), Some(16_000));
        assert_eq!(c.at(15_999), (8, 38));
        assert_eq!(c.at(16_000), (8, 40));
        assert_eq!(
            c.describe(),
            "d 5 -> 8 (+1) and L 10 -> 40 (+4) every 2000 steps"
        );
        // an increment of 0 never reaches the end
        cfg.set("task.curriculum_d_inc", "0").unwrap();
        let c = Curriculum::of(&cfg.task).unwrap();
        assert_eq!(c.full_size_step(), None);
        // already at full size
        cfg.set("task.d", "5").unwrap();
        cfg.set("task.L", "10").unwrap();
        let c = Curriculum::of(&cfg.task).unwrap();
        assert_eq!(c.full_size_step(), Some(0));
        assert_eq!(c.describe(), "d 5 and L 10 from the start");
    }

    /// Truncation keeps the noise and the first coordinates' share of every label: with
    /// sigma2 = 0 the labels are w[..dt].x[..dt] for the w of the sequence's stream.
    #[test]
    fn truncated_sequences_are_the_first_coordinates_regression() {
        let mut cfg = crate::presets::preset("garg-linear").unwrap();
        cfg.set("task.d", "6").unwrap();
        cfg.set("task.L", "5").unwrap();
        let task = Task::new(&cfg).unwrap();
        let (d, len, dt) = (6, 5, 2);
        let mut z = vec![0.0f64; (len + 1) * (d + 1)];
        let mut y = [0.0f64];
        sample_truncated(&task, 7, 3, 1, dt, len, &mut Vec::new(), &mut z, &mut y);
        // the same stream at full size gives w and x
        let mut full = vec![0.0f64; (len + 1) * (d + 1)];
        let mut yf = [0.0f64];
        let mut w = vec![0.0; d];
        let mut r = task.stream(7, Domain::Train, 3, 1);
        task.sample_sequence_as(
            &mut r,
            len,
            &mut Vec::new(),
            &mut full,
            &mut yf,
            TaskVector::Random,
            &mut w,
        );
        for l in 0..=len {
            let x = &full[l * (d + 1)..l * (d + 1) + d];
            let want: f64 = (0..dt).map(|i| w[i] * x[i]).sum();
            let got = if l < len { z[l * (d + 1) + d] } else { y[0] };
            assert!((got - want).abs() < 1e-12, "pair {l}: {got} vs {want}");
            for i in 0..d {
                let zi = z[l * (d + 1) + i];
                assert_eq!(zi, if i < dt { x[i] } else { 0.0 });
            }
        }
    }
}
