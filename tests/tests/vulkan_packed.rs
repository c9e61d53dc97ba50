//! Packed training steps on the Vulkan engine (`AttentionKernels::loss_grad_packed`): K runs of
//! one model, each with its own circuits and its own batch, computed as one batch of K n
//! sequences (one submission per chunk), give every run's loss and circuit gradient bit for bit
//! as `loss_grad` on that run alone, on Mesa's lavapipe under the validation layer: 3 and 5 runs,
//! batch sizes that are not multiples of the 64-sequence reduction blocks, softmax, linear and
//! two-output models, both workgroup sizes, f32 and f16 tokens, and chunks small enough that
//! submissions straddle runs.
//!
//! And the same at the run level ([`sweeps`]): sweeps on the Vulkan engine pack their one-layer
//! runs onto one device, and every run folder is the one the run gives alone.
mod vulkan_common;

use icl_core::engine::PackedRun;
use icl_core::rng::Domain;
use icl_core::{AttentionKernels, Batch, Circuits, Config, Model, Task};
use icl_gpu_vulkan::VulkanEngine;
use vulkan_common::{assert_no_validation_errors, engine_wg};

/// Chunks of at most 40 kB of tokens: about 40 sequences of the he2025 shapes a submission, so a
/// pack spans many submissions and most of them hold the end of one run and the start of the
/// next.
const SMALL_CHUNK: u64 = 40_000;

/// The he2025 preset with Gaussian initial circuits (so runs of different seeds differ in every
/// entry) and `sets` applied.
fn config(sets: &[(&str, &str)]) -> Config {
    let mut cfg = icl_core::presets::preset("he2025").unwrap();
    cfg.set("model.init", "gaussian").unwrap();
    cfg.set("model.init_scale", "0.3").unwrap();
    for (k, v) in sets {
        cfg.set(k, v).unwrap();
    }
    cfg
}

/// The model kinds: (name, config overrides).
fn kinds() -> Vec<(&'static str, Config)> {
    vec![
        ("softmax exp, 2 heads, n_out 1", config(&[])),
        (
            "linear attention, 1 head",
            config(&[("model.attention", "linear"), ("model.heads", "1")]),
        ),
        (
            "softmax tanh, 3 heads, two tasks (n_out 2)",
            config(&[
                ("task.kind", "multitask"),
                ("task.d", "6"),
                ("task.supports", "1,2,3,4;3,4,5,6"),
                ("model.heads", "3"),
                ("model.activation", "tanh"),
            ]),
        ),
    ]
}

/// `runs` runs of `cfg`'s model: circuits initialised from seeds 100 + r, batches of `n`
/// sequences drawn at (seed 50 + r, Train, step r).
fn runs_of(cfg: &Config, runs: usize, n: usize) -> (Vec<Circuits<f32>>, Vec<Batch<f32>>) {
    let task = Task::new(cfg).unwrap();
    let circs = (0..runs)
        .map(|r| {
            let mut c = cfg.clone();
            c.set("train.seed", &(100 + r).to_string()).unwrap();
            Model::<f32>::init(&c).unwrap().circuits().unwrap()
        })
        .collect();
    let batches = (0..runs)
        .map(|r| task.sample_batch::<f32>(50 + r as u64, Domain::Train, r as u64, n, cfg.task.len))
        .collect();
    (circs, batches)
}

fn bits(c: &Circuits<f32>) -> Vec<u32> {
    c.kq.iter().chain(&c.ov).map(|x| x.to_bits()).collect()
}

/// The packed call on `runs` runs of `n` sequences against `runs` calls of `loss_grad`, bit for
/// bit; returns the values compared.
fn packed_is_alone(eng: &mut VulkanEngine, cfg: &Config, runs: usize, n: usize) -> usize {
    let spec = Model::<f32>::init(cfg)
        .unwrap()
        .attention()
        .unwrap()
        .clone();
    let (circs, batches) = runs_of(cfg, runs, n);
    assert!(
        circs.windows(2).all(|w| w[0] != w[1]),
        "the runs' circuits must differ"
    );
    let items: Vec<PackedRun<'_, f32>> = circs
        .iter()
        .zip(&batches)
        .map(|(circ, batch)| PackedRun { circ, batch })
        .collect();
    let mut grads = vec![Circuits::<f32>::zeros(&spec); runs];
    let losses = eng
        .loss_grad_packed(&spec, &items, &mut grads)
        .expect("the Vulkan engine packs")
        .unwrap();
    assert_eq!(losses.len(), runs);
    let mut values = 0;
    for (r, (circ, batch)) in circs.iter().zip(&batches).enumerate() {
        let mut alone = Circuits::<f32>::zeros(&spec);
        let loss = eng.loss_grad(&spec, circ, batch, &mut alone).unwrap();
        assert_eq!(
            losses[r].to_bits(),
            loss.to_bits(),
            "run {r} of {runs}: packed loss {} alone {loss}",
            losses[r]
        );
        let (p, a) = (bits(&grads[r]), bits(&alone));
        if let Some(i) = p.iter().zip(&a).position(|(x, y)| x != y) {
            panic!(
                "run {r} of {runs}, n = {n}: gradient entry {i} differs: packed {} alone {}",
                f32::from_bits(p[i]),
                f32::from_bits(a[i])
            );
        }
        values += 1 + p.len();
    }
    values
}

/// Every kind, 3 and 5 runs of 70 and 130 sequences, at workgroup size `wg`, in small chunks
/// and in one.
fn every_case(wg: u32) {
    for chunk in [Some(SMALL_CHUNK), None] {
        let mut eng = engine_wg(false, chunk, Some(wg));
        for (name, cfg) in kinds() {
            for (runs, n) in [(3, 70), (5, 130)] {
                let values = packed_is_alone(&mut eng, &cfg, runs, n);
                println!(
                    "wg {wg}, chunk {chunk:?}, {name}: {runs} runs of {n}, {values} values equal"
                );
            }
        }
        assert_no_validation_errors(&eng);
    }
}

#[test]
fn packed_runs_are_each_run_alone_bit_for_bit_wg16() {
    every_case(16);
}

#[test]
fn packed_runs_are_each_run_alone_bit_for_bit_wg64() {
    every_case(64);
}

#[test]
fn packed_runs_of_f16_tokens_are_each_run_alone() {
    let mut eng = engine_wg(true, Some(SMALL_CHUNK), Some(16));
    for (name, cfg) in kinds() {
        let values = packed_is_alone(&mut eng, &cfg, 3, 70);
        println!("f16, {name}: {values} values equal");
    }
    assert_no_validation_errors(&eng);
}

/// Runs whose batches the device makes (data law 2), each from its own seed and step, in one
/// call: every run's loss and gradient bit for bit `sampled_loss_grad` alone, and that the
/// loss and gradient on the CPU's batch (so the device drew each run's own batch), at both
/// workgroup sizes, in chunks straddling runs and in one; a device-sampled call of a task the
/// device does not make is `None`.
#[test]
fn sampled_packs_are_each_run_alone() {
    use icl_core::engine::Sampling;
    let cfg = config(&[("task.data_law", "2")]);
    let spec = Model::<f32>::init(&cfg)
        .unwrap()
        .attention()
        .unwrap()
        .clone();
    let task = Task::new(&cfg).unwrap();
    let (runs, n) = (5, 70);
    let (circs, _) = runs_of(&cfg, runs, n);
    let samplings: Vec<Sampling> = (0..runs)
        .map(|r| Sampling {
            seed: 50 + r as u64,
            step: 3 * r as u64,
            n,
            len: cfg.task.len,
        })
        .collect();
    let refs: Vec<&Circuits<f32>> = circs.iter().collect();
    for wg in [16, 64] {
        for chunk in [Some(SMALL_CHUNK), None] {
            let mut eng = engine_wg(false, chunk, Some(wg));
            let mut grads = vec![Circuits::<f32>::zeros(&spec); runs];
            let losses = eng
                .sampled_loss_grad_packed(&spec, &refs, &task, &samplings, &mut grads)
                .expect("the device makes law-2 batches")
                .unwrap();
            for (r, s) in samplings.iter().enumerate() {
                let mut alone = Circuits::<f32>::zeros(&spec);
                let loss = eng
                    .sampled_loss_grad(&spec, &circs[r], &task, *s, &mut alone)
                    .unwrap()
                    .unwrap();
                let batch = task.sample_batch::<f32>(s.seed, Domain::Train, s.step, n, s.len);
                let mut cpu = Circuits::<f32>::zeros(&spec);
                let cpu_loss = eng.loss_grad(&spec, &circs[r], &batch, &mut cpu).unwrap();
                assert_eq!(
                    losses[r].to_bits(),
                    loss.to_bits(),
                    "wg {wg} {chunk:?} run {r}"
                );
                assert_eq!(
                    loss.to_bits(),
                    cpu_loss.to_bits(),
                    "wg {wg} {chunk:?} run {r}"
                );
                assert!(bits(&grads[r]) == bits(&alone), "wg {wg} {chunk:?} run {r}");
                assert!(bits(&alone) == bits(&cpu), "wg {wg} {chunk:?} run {r}");
            }
            assert_no_validation_errors(&eng);
        }
    }
    // law 1: the CPU samples
    let cfg1 = config(&[]);
    let mut eng = engine_wg(false, None, None);
    let mut grads = vec![Circuits::<f32>::zeros(&spec); runs];
    assert!(eng
        .sampled_loss_grad_packed(
            &spec,
            &refs,
            &Task::new(&cfg1).unwrap(),
            &samplings,
            &mut grads
        )
        .is_none());
}

#[test]
fn a_pack_of_one_is_loss_grad() {
    let mut eng = engine_wg(false, Some(SMALL_CHUNK), None);
    for (_, cfg) in kinds() {
        packed_is_alone(&mut eng, &cfg, 1, 130);
    }
    assert_no_validation_errors(&eng);
}

#[test]
fn an_empty_pack_is_empty_and_mismatched_batches_are_refused() {
    let cfg = config(&[]);
    let spec = Model::<f32>::init(&cfg)
        .unwrap()
        .attention()
        .unwrap()
        .clone();
    let mut eng = engine_wg(false, None, None);
    let none = eng.loss_grad_packed(&spec, &[], &mut []).expect("packs");
    assert!(none.unwrap().is_empty());
    let (circs, mut batches) = runs_of(&cfg, 2, 70);
    let task = Task::new(&cfg).unwrap();
    batches[1] = task.sample_batch::<f32>(1, Domain::Train, 0, 71, cfg.task.len);
    let items: Vec<PackedRun<'_, f32>> = circs
        .iter()
        .zip(&batches)
        .map(|(circ, batch)| PackedRun { circ, batch })
        .collect();
    let mut grads = vec![Circuits::<f32>::zeros(&spec); 2];
    let err = eng
        .loss_grad_packed(&spec, &items, &mut grads)
        .expect("packs")
        .unwrap_err();
    assert!(
        matches!(err, icl_core::Error::Shape(_)),
        "a batch of another size: {err}"
    );
    assert_no_validation_errors(&eng);
}

/// Sweeps on the Vulkan engine pack their one-layer runs onto one device, their steps in one
/// call ([`icl_core_run::pack`]): every run folder is the one the run gives alone on the Vulkan
/// engine (`icl train --engine vulkan`), bit for bit, the timings in `summary.json` aside; and
/// the pack does run its members' steps together.
///
/// Runs on Mesa's lavapipe (CI installs it with .ci/vulkan-setup.sh; `ICL_VULKAN_VALIDATION=1`
/// turns the validation layer on, as CI does).
mod sweeps {
    use icl_core::data::Batch;
    use icl_core::engine::Runner;
    use icl_core::families::attention::Circuits;
    use icl_core::rng::Domain;
    use icl_core::Task;
    use icl_core_run::pack::Pack;
    use icl_core_run::sweep::{run_specs, RunSpec, RunStatus};
    use icl_core_run::train::{train, Outcome, TrainOptions};
    use std::path::{Path, PathBuf};

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("icl-vksweep-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn spec(name: &str, sets: &[(&str, &str)]) -> RunSpec {
        RunSpec {
            name: name.into(),
            preset: Some("quick".into()),
            config: None,
            set: sets
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .chain([
                    ("train.steps".to_string(), "60".to_string()),
                    ("train.log_every".to_string(), "10".to_string()),
                    ("train.batch".to_string(), "70".to_string()),
                ])
                .collect(),
        }
    }

    fn opts() -> TrainOptions {
        TrainOptions {
            engine: Some("vulkan".into()),
            eval_samples: 200,
            ..TrainOptions::default()
        }
    }

    /// The bytes of a run folder that depend on the config only, and its summary without the
    /// timings (and without the step a resumed run was resumed from).
    fn bytes(dir: &Path) -> (Vec<u8>, Vec<u8>, Vec<u8>, serde_json::Value) {
        let r = |f: &str| std::fs::read(dir.join(f)).unwrap();
        let mut summary: serde_json::Value = serde_json::from_slice(&r("summary.json")).unwrap();
        let m = summary.as_object_mut().unwrap();
        for k in [
            "seconds",
            "setup_seconds",
            "steps_per_second",
            "total_seconds",
            "resumed_from",
        ] {
            m.remove(k);
        }
        (
            r("model.safetensors"),
            r("metrics.csv"),
            r("config.toml"),
            summary,
        )
    }

    /// Four seeds of one shape share a pack (two of them on a law-2 task, which alone the device
    /// samples for), a run of another shape (one head) gets its own. The sweep is interrupted at
    /// step 25 (every run of the pack checkpoints, the other never starts) and run again (the pack
    /// resumes); each folder equals the run trained alone on the Vulkan engine, uninterrupted.
    #[test]
    fn a_packed_sweep_gives_every_run_its_folder_alone() {
        let specs = vec![
            spec("seed=1", &[("train.seed", "1")]),
            spec("seed=2", &[("train.seed", "2")]),
            spec("seed=3", &[("train.seed", "3"), ("task.data_law", "2")]),
            spec("seed=4", &[("train.seed", "4"), ("task.data_law", "2")]),
            spec("heads=1", &[("model.heads", "1"), ("train.seed", "1")]),
        ];
        let dir = tmp("packed");
        let stopped = run_specs(&dir, &specs, 1, &opts(), &|_, step, _, _| step < 25).unwrap();
        for r in &stopped[..4] {
            assert!(matches!(r.status, RunStatus::Interrupted { .. }), "{r:?}");
        }
        assert!(
            matches!(stopped[4].status, RunStatus::NotStarted),
            "{:?}",
            stopped[4]
        );
        let res = run_specs(&dir, &specs, 1, &opts(), &|_, _, _, _| true).unwrap();
        let alone = tmp("alone");
        for (i, (s, r)) in specs.iter().zip(&res).enumerate() {
            if i < 4 {
                assert!(matches!(r.status, RunStatus::Resumed), "{r:?}");
            } else {
                assert!(matches!(r.status, RunStatus::Trained), "{r:?}");
            }
            let out = alone.join(&s.name);
            let o = TrainOptions {
                preset: s.preset.clone(),
                ..opts()
            };
            let done = train(&s.build().unwrap(), &out, &o, &mut |_, _, _| true).unwrap();
            assert!(matches!(done, Outcome::Finished { .. }));
            let (a, b) = (bytes(&r.dir), bytes(&out));
            assert_eq!(a.3["engine"], "vulkan");
            assert!(a.0 == b.0, "{}: model.safetensors differs", s.name);
            assert!(a.1 == b.1, "{}: metrics.csv differs", s.name);
            assert!(a.2 == b.2, "{}: config.toml differs", s.name);
            assert_eq!(a.3, b.3, "{}: summary.json differs", s.name);
        }
        // the seeds differ
        assert!(bytes(&res[0].dir).0 != bytes(&res[1].dir).0);
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&alone);
    }

    /// A Slurm array task of several runs (`icl sweep run-one --index I --runs-per-task K`) packs
    /// them: task 0 at two a task, stopped at step 25, leaves both its runs interrupted (one at a
    /// time, the second would not have started) and run 2 untouched; task 1 trains run 2 alone.
    #[test]
    fn an_array_task_packs_its_runs() {
        let dir = tmp("task");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("sweep.toml");
        std::fs::write(
            &file,
            "preset = \"quick\"\nseeds = [1, 2, 3]\n[set]\n\"train.steps\" = 60\n\"train.batch\" = 70\n",
        )
        .unwrap();
        let sw = dir.join("sw");
        icl_core_run::sweep::plan(&file, &sw).unwrap();
        let task = |i, stop: u64| {
            icl_core_run::sweep::run_task(&sw, i, 2, &opts(), &|_, step, _, _| step < stop).unwrap()
        };
        let r = task(0, 25);
        assert_eq!(r.len(), 2);
        for x in &r {
            assert!(matches!(x.status, RunStatus::Interrupted { .. }), "{x:?}");
        }
        let r = task(1, u64::MAX);
        assert_eq!(r.len(), 1);
        assert!(matches!(r[0].status, RunStatus::Trained), "{:?}", r[0]);
        let r = task(0, u64::MAX);
        assert!(
            r.iter().all(|x| matches!(x.status, RunStatus::Resumed)),
            "{r:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The one-layer spec of `cfg`'s model.
    fn spec_of(cfg: &icl_core::Config) -> icl_core::families::attention::AttentionSpec {
        icl_core::model::ModelSpec::from_config(cfg)
            .unwrap()
            .as_attention()
            .unwrap()
            .clone()
    }

    /// Circuits whose entry i is ((i a + r b) mod m - m / 2) scale: run r's own.
    fn patterned(
        spec: &icl_core::families::attention::AttentionSpec,
        r: usize,
        (a, b, m, scale): (usize, usize, usize, f32),
    ) -> Circuits<f32> {
        let mut c = Circuits::<f32>::zeros(spec);
        for (i, x) in c.kq.iter_mut().chain(c.ov.iter_mut()).enumerate() {
            *x = (((i * a + r * b) % m) as f32 - (m / 2) as f32) * scale;
        }
        c
    }

    /// A loss and gradient as bits.
    fn bits_of(loss: f32, g: &Circuits<f32>) -> Bits {
        (
            loss.to_bits(),
            g.kq.iter().chain(&g.ov).map(|x| x.to_bits()).collect(),
        )
    }

    /// One step's loss and gradient as bits.
    type Bits = (u32, Vec<u32>);

    /// Member r's state on a thread of its own taking `steps` steps `step(state, r, t)`: every
    /// member's results in order.
    fn on_threads<S: Send>(
        states: Vec<S>,
        steps: u64,
        step: &(dyn Fn(&mut S, usize, u64) -> Bits + Sync),
    ) -> Vec<Vec<Bits>> {
        std::thread::scope(|s| {
            let hs: Vec<_> = states
                .into_iter()
                .enumerate()
                .map(|(r, mut st)| {
                    s.spawn(move || (0..steps).map(|t| step(&mut st, r, t)).collect())
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    /// Members stepping in threads meet in the pack: fewer calls than steps handed in, and each
    /// member's loss and gradient are its engine's alone, bit for bit.
    #[test]
    fn members_step_together_and_get_their_own_results() {
        let cfg = icl_core::presets::preset("quick").unwrap();
        let spec = spec_of(&cfg);
        let task = Task::new(&cfg).unwrap();
        let pack = Pack::from_env().unwrap();
        let (k, steps) = (3usize, 4u64);
        let circ = |r: usize| patterned(&spec, r, (7, 13, 11, 0.05));
        let batch = |r: usize, t: u64| -> Batch<f32> {
            task.sample_batch(r as u64, Domain::Train, t, 70, 20)
        };
        let runners: Vec<Runner<f32>> = (0..k)
            .map(|_| Runner::new(Box::new(pack.member())))
            .collect();
        let got = on_threads(runners, steps, &|runner, r, t| {
            let mut g = Circuits::zeros(&spec);
            let l = runner.loss_grad(&spec, &circ(r), &batch(r, t), &mut g);
            bits_of(l.unwrap(), &g)
        });
        let calls = pack.calls();
        assert!(calls >= steps && calls < k as u64 * steps, "{calls} calls");
        let mut alone = Runner::new(Box::new(icl_gpu_vulkan::VulkanEngine::from_env().unwrap()));
        for (r, rows) in got.iter().enumerate() {
            for (t, (l, g)) in rows.iter().enumerate() {
                let mut ga = Circuits::zeros(&spec);
                let la = alone
                    .loss_grad(&spec, &circ(r), &batch(r, t as u64), &mut ga)
                    .unwrap();
                let (la, bits) = bits_of(la, &ga);
                assert_eq!((la, &bits), (*l, g), "run {r} step {t}");
            }
        }
    }

    /// Members on a law-2 task hand in their samplings: the pack's calls make every member's
    /// batch on the device from its own seed and step (fewer calls than steps), and each result is
    /// bit for bit the engine's `sampled_loss_grad` alone; a law-1 task is declined at once (the
    /// member's thread samples).
    #[test]
    fn members_on_law2_tasks_have_their_batches_made_in_the_pack() {
        use icl_core::engine::{AttentionKernels, Sampling};
        let mut cfg = icl_core::presets::preset("quick").unwrap();
        cfg.set("task.data_law", "2").unwrap();
        let spec = spec_of(&cfg);
        let task = Task::new(&cfg).unwrap();
        let pack = Pack::from_env().unwrap();
        let (k, steps) = (3usize, 4u64);
        let circ = |r: usize| patterned(&spec, r, (5, 3, 13, 0.04));
        let sampling = |r: usize, t: u64| Sampling {
            seed: 10 + r as u64,
            step: t,
            n: 70,
            len: 20,
        };
        let members: Vec<_> = (0..k).map(|_| pack.member()).collect();
        let got = on_threads(members, steps, &|m, r, t| {
            let mut g = Circuits::zeros(&spec);
            let l = m
                .sampled_loss_grad(&spec, &circ(r), &task, sampling(r, t), &mut g)
                .expect("the pack makes law-2 batches")
                .unwrap();
            bits_of(l, &g)
        });
        let calls = pack.calls();
        assert!(calls >= steps && calls < k as u64 * steps, "{calls} calls");
        let mut alone = icl_gpu_vulkan::VulkanEngine::from_env().unwrap();
        for (r, rows) in got.iter().enumerate() {
            for (t, (l, g)) in rows.iter().enumerate() {
                let mut ga = Circuits::zeros(&spec);
                let la = alone
                    .sampled_loss_grad(&spec, &circ(r), &task, sampling(r, t as u64), &mut ga)
                    .unwrap()
                    .unwrap();
                let (la, bits) = bits_of(la, &ga);
                assert_eq!((la, &bits), (*l, g), "run {r} step {t}");
            }
        }
        // law 1: declined without a call
        let law1 = Task::new(&icl_core::presets::preset("quick").unwrap()).unwrap();
        let mut m = pack.member();
        let mut g = Circuits::zeros(&spec);
        assert!(m
            .sampled_loss_grad(&spec, &circ(0), &law1, sampling(0, 0), &mut g)
            .is_none());
        assert_eq!(pack.calls(), calls);
    }
}
