//! The one function ([`build`]) that picks a configuration's objective and probes: each model
//! family writes its own ([`crate::families`]); this is where the trainer asks for them.
//!
//! * one-layer attention: fresh data every step ([`attention::objective::Online`]), per-head
//!   omega and mu;
//! * Zhang et al. (2025), the `eigs` task: full-batch descent on a fixed set
//!   ([`linear_attention::objective::FixedSet`]) or fresh data (fixed length or next-token
//!   prediction), with the paper's probes;
//! * transformers and the IV model: fresh data every step, the learned pattern;
//! * GPT-2: fresh data every step (Garg et al.'s curriculum), no probes.
use crate::config::{AttentionKind, Config, Param, TaskKind};
use crate::data::fixed_set::{generate, SetKind};
use crate::data::Task;
use crate::engine::{Engine, Runner};
use crate::families::gpt2::Gpt2Runner;
use crate::families::linear_attention::objective::{FixedSet, SetLoss};
use crate::families::stack::StackRunner;
use crate::families::{attention, gpt2, iv, linear_attention, stack};
use crate::model::{Model, Net};
use crate::objective::{Objective, Options, Probe};
use crate::{Result, Scalar};
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// Whether the training loss of `cfg` is computed from the fixed set's exact sufficient
/// statistics (the objective's engine reads `moments`) instead of by an engine: linear
/// attention on a fixed set of the `eigs` task (Zhang et al. 2025, `task.P > 0`), under the
/// default [`Options`]. The decision [`build`] makes, for front ends that must know it before
/// the set is generated (an `--engine` given for such a run would otherwise be ignored).
pub fn by_moments(cfg: &Config) -> bool {
    cfg.model.arch == crate::config::Arch::Attention
        && cfg.task.kind == TaskKind::Eigs
        && cfg.task.p > 0
        && cfg.model.attention == AttentionKind::Linear
}

/// Whether `cfg` trains full batch on a fixed set (one-layer attention on the `eigs` task with
/// `task.P > 0`; its rows log the loss of the whole set) rather than on fresh data every step:
/// the decision [`build`] makes, for front ends that describe a run's loss before or after it.
pub fn full_batch(cfg: &Config) -> bool {
    cfg.model.arch == crate::config::Arch::Attention
        && cfg.task.kind == TaskKind::Eigs
        && cfg.task.p > 0
}

/// The objective and probes of a configuration: the one place that decides the protocol.
#[allow(clippy::type_complexity)]
pub fn build<T: Scalar>(
    cfg: &Config,
    task: &Task,
    model: &Model<T>,
    engines: &dyn Engine<T>,
    opts: &Options,
) -> Result<(Box<dyn Objective<T>>, Vec<Box<dyn Probe<T>>>)> {
    let pattern = || -> Box<dyn Probe<T>> { Box::new(stack::probe::Pattern::new(&model.spec)) };
    let spec = match &model.spec.net {
        Net::Stack(sp) => {
            let obj =
                stack::objective::Online::new(cfg, task, sp, StackRunner::new(engines.stack()?))?;
            return Ok((Box::new(obj), vec![pattern()]));
        }
        Net::Iv(sp) => {
            let obj = iv::objective::Online::new(cfg, sp, StackRunner::new(engines.stack()?))?;
            return Ok((Box::new(obj), vec![pattern()]));
        }
        Net::Gpt2(sp) => {
            let obj =
                gpt2::objective::Online::new(cfg, task, sp, Gpt2Runner::new(engines.gpt2()?))?;
            return Ok((Box::new(obj), Vec::new()));
        }
        Net::Attention(spec) => spec,
    };
    let t = &cfg.task;
    let attention_runner = || -> Result<Runner<T>> { Ok(Runner::new(engines.attention()?)) };
    if t.kind != TaskKind::Eigs {
        let obj = attention::objective::Online::new(cfg, task, spec, attention_runner()?, None);
        return Ok((
            Box::new(obj),
            vec![Box::new(attention::probe::Circuits::new(spec))],
        ));
    }
    // Zhang et al. (2025): the eigs task, on a fixed set (P > 0) or fresh data, fixed length or NTP
    let seed = cfg.train.seed;
    let obj: Box<dyn Objective<T>> = if t.p > 0 {
        let set = generate(cfg, task, seed, SetKind::Train, t.p, t.len)?;
        Box::new(FixedSet::new(
            spec,
            SetLoss::build(cfg, spec, set, attention_runner, opts)?,
        ))
    } else {
        let ntp = t.ntp.then_some(cfg.model.lin_norm);
        Box::new(attention::objective::Online::new(
            cfg,
            task,
            spec,
            attention_runner()?,
            ntp,
        ))
    };
    let mut tests = Vec::new();
    if t.icl_fraction < 1.0 && opts.test_size > 0 {
        for (name, kind) in [
            ("icl_test", SetKind::IclTest),
            ("iwl_test", SetKind::IwlTest),
        ] {
            let set = generate(cfg, task, seed, kind, opts.test_size, t.len)?;
            tests.push((
                String::from(name),
                SetLoss::build(cfg, spec, set, attention_runner, opts)?,
            ));
        }
    }
    let mut probes: Vec<Box<dyn Probe<T>>> = vec![Box::new(linear_attention::probe::Linattn::new(
        cfg, task, model, tests,
    )?)];
    if spec.param == Param::MergedReduced && t.p > 0 && !t.ntp {
        let set = generate(cfg, task, seed, SetKind::Train, t.p, t.len)?;
        probes.push(Box::new(linear_attention::probe::CubicTwin::new(
            cfg, model, &set,
        )?));
    }
    Ok((obj, probes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ScalarEngine;
    use crate::train::Trainer;

    /// [`by_moments`] is the decision [`build`] makes: the trainer's engine reads "moments"
    /// exactly when it says so (fixed sets kept small, lengths short).
    #[test]
    fn by_moments_is_what_build_decides() {
        for (name, _, _) in crate::presets::PRESETS {
            let mut cfg = crate::presets::preset(name).unwrap();
            if cfg.task.p > 0 {
                cfg.set("task.P", "16").unwrap();
            }
            if cfg.model.arch != crate::config::Arch::Attention {
                continue; // transformers: never moments (checked below for one)
            }
            cfg.set("train.batch", "2").unwrap();
            let tr = Trainer::<f64>::new(&cfg, &ScalarEngine).unwrap();
            assert_eq!(by_moments(&cfg), tr.engine_name() == "moments", "{name}");
            assert_eq!(full_batch(&cfg), tr.full_batch(), "{name}");
        }
        let mut ml = crate::presets::preset("multilayer-t2").unwrap();
        ml.set("task.L", "8").unwrap();
        assert!(!by_moments(&ml));
        let mut online = crate::presets::preset("zhang2025-fig3").unwrap();
        online.set("task.P", "0").unwrap();
        assert!(!by_moments(&online));
        assert!(by_moments(
            &crate::presets::preset("zhang2025-fig3").unwrap()
        ));
    }
}
