//! Sweeps on the Vulkan engine pack their one-layer runs onto one device, their steps in one
//! call ([`icl_core_run::pack`]): every run folder is the one the run gives alone on the Vulkan
//! engine (`icl train --engine vulkan`), bit for bit, the timings in `summary.json` aside; and
//! the pack does run its members' steps together.
//!
//! Runs on Mesa's lavapipe (CI installs it with .ci/vulkan-setup.sh; `ICL_VULKAN_VALIDATION=1`
//! turns the validation layer on, as CI does).
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

/// Members stepping in threads meet in the pack: fewer calls than steps handed in, and each
/// member's loss and gradient are its engine's alone, bit for bit.
#[test]
fn members_step_together_and_get_their_own_results() {
    let cfg = icl_core::presets::preset("quick").unwrap();
    let spec = icl_core::model::ModelSpec::from_config(&cfg)
        .unwrap()
        .as_attention()
        .unwrap()
        .clone();
    let task = Task::new(&cfg).unwrap();
    let pack = Pack::from_env().unwrap();
    let (k, steps) = (3usize, 4u64);
    let circ = |r: usize| {
        let mut c = Circuits::<f32>::zeros(&spec);
        for (i, x) in c.kq.iter_mut().chain(c.ov.iter_mut()).enumerate() {
            *x = (((i * 7 + r * 13) % 11) as f32 - 5.0) * 0.05;
        }
        c
    };
    let batch =
        |r: usize, t: u64| -> Batch<f32> { task.sample_batch(r as u64, Domain::Train, t, 70, 20) };
    let members: Vec<_> = (0..k).map(|_| pack.member()).collect();
    let got: Vec<Vec<(u32, Vec<u32>)>> = std::thread::scope(|s| {
        let hs: Vec<_> = members
            .into_iter()
            .enumerate()
            .map(|(r, m)| {
                let (spec, circ, batch) = (&spec, &circ, &batch);
                s.spawn(move || {
                    let mut runner = Runner::new(Box::new(m));
                    (0..steps)
                        .map(|t| {
                            let mut g = Circuits::zeros(spec);
                            let l = runner.loss_grad(spec, &circ(r), &batch(r, t), &mut g);
                            let bits = g.kq.iter().chain(&g.ov).map(|x| x.to_bits()).collect();
                            (l.unwrap().to_bits(), bits)
                        })
                        .collect()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
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
            let bits: Vec<u32> = ga.kq.iter().chain(&ga.ov).map(|x| x.to_bits()).collect();
            assert_eq!((la.to_bits(), &bits), (*l, g), "run {r} step {t}");
        }
    }
}
