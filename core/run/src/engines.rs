//! The engine registry: the names every front end accepts for `--engine` / `engine=`, the default,
//! and engine factories for the one trainer.
use crate::error::{Result, RunError};
use icl_core::config::Config;
use icl_core::engine::{AttentionKernels, Engine, ScalarEngine, StackKernels};
use icl_core::model::Net;
use icl_core::Scalar;

/// Make the calling thread worker 0 of rayon's global pool (the pool's other threads are spawned
/// as usual; `RAYON_NUM_THREADS` still sets the total). For a process's main thread, called before
/// anything uses rayon: the engines' parallel loops then run on this thread and the pool's other
/// workers instead of handing every step to the pool and sleeping until it is done (a wake-up
/// per step, tens of microseconds on a busy or virtual machine). Returns false, changing nothing,
/// when the global pool already exists. Only for a thread that does not block while other
/// threads use the global pool (a one-thread pool would wait for it): the CLI's main thread.
pub fn adopt_current_thread() -> bool {
    rayon::ThreadPoolBuilder::new()
        .use_current_thread()
        .build_global()
        .is_ok()
}

/// One engine: its name, and a constructor per precision (the engine then hands out each
/// family's kernels, or refuses the family; [`icl_core::engine::Engine`]).
pub struct EngineEntry {
    pub name: &'static str,
    pub f32: fn() -> Result<Box<dyn Engine<f32>>>,
    pub f64: fn() -> Result<Box<dyn Engine<f64>>>,
}

/// The engines built in, fastest first: the one table every front end's `--engine` / `engine=`
/// is looked up in. Vulkan is there when icl-core-run is built with its `vulkan` feature (the
/// default).
pub const ENGINE_TABLE: &[EngineEntry] = &[
    EngineEntry {
        name: "simd",
        f32: || Ok(Box::new(icl_cpu_simd::Simd::default())),
        f64: || Ok(Box::new(icl_cpu_simd::Simd::default())),
    },
    EngineEntry {
        name: "scalar",
        f32: || Ok(Box::new(ScalarEngine)),
        f64: || Ok(Box::new(ScalarEngine)),
    },
    #[cfg(feature = "vulkan")]
    EngineEntry {
        name: "vulkan",
        f32: || Ok(Box::new(vulkan::FromEnv::new()?)),
        f64: || {
            Err(RunError::Refused(
                "the vulkan engine computes in f32: set train.dtype = f32, or use another engine for f64".into(),
            ))
        },
    },
];

#[cfg(feature = "vulkan")]
mod vulkan {
    use super::{Result, RunError};
    use icl_core::engine::{AttentionKernels, Engine, Gpt2Kernels, StackKernels};
    use icl_gpu_vulkan::{Options, VulkanEngine, VulkanGpt2, VulkanStack};
    use std::sync::Mutex;

    /// The Vulkan engine with the device options of the environment (`ICL_VULKAN_*`). The
    /// device is found when the engine is made, so a missing driver is an engine error there;
    /// that first device serves the first kernels handed out.
    pub struct FromEnv {
        opts: Options,
        first: Mutex<Option<VulkanEngine>>,
    }

    impl FromEnv {
        pub fn new() -> Result<Self> {
            let opts = Options::from_env();
            let e = VulkanEngine::new(&opts).map_err(|e| RunError::Engine(e.to_string()))?;
            Ok(FromEnv {
                opts,
                first: Mutex::new(Some(e)),
            })
        }
    }

    impl Engine<f32> for FromEnv {
        fn name(&self) -> &str {
            "vulkan"
        }
        fn attention(&self) -> icl_core::Result<Box<dyn AttentionKernels<f32>>> {
            let first = self.first.lock().ok().and_then(|mut f| f.take());
            Ok(Box::new(match first {
                Some(e) => e,
                None => VulkanEngine::new(&self.opts)?,
            }))
        }
        fn stack(&self) -> icl_core::Result<Box<dyn StackKernels<f32>>> {
            Ok(Box::new(VulkanStack::new(&self.opts)?))
        }
        fn gpt2(&self) -> icl_core::Result<Box<dyn Gpt2Kernels<f32>>> {
            Ok(Box::new(VulkanGpt2::new(&self.opts)?))
        }
    }
}

/// The names of the engines built in, fastest first.
pub const ENGINES: &[&str] = &[
    "simd",
    "scalar",
    #[cfg(feature = "vulkan")]
    "vulkan",
];

/// The default engine: the fastest one built in.
pub fn default_engine() -> &'static str {
    ENGINES[0]
}

fn unknown(name: &str) -> RunError {
    RunError::UnknownName(format!(
        "unknown engine {name:?}; built-in engines: {}",
        ENGINES.join(", ")
    ))
}

fn entry(name: &str) -> Result<&'static EngineEntry> {
    ENGINE_TABLE
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| unknown(name))
}

/// Check the environment's `ICL_SIMD` (docs/speed.md: `sse2|avx2|avx512` forces a vector level): a
/// value that names no level is refused rather than silently running at the detected level.
pub fn check_simd_env() -> Result<()> {
    icl_cpu_simd::dispatch::requested()
        .map(|_| ())
        .map_err(|v| {
            RunError::Refused(format!(
                "ICL_SIMD={v:?} names no vector level: give sse2, avx2 or avx512, or unset it"
            ))
        })
}

/// Scalars the run layer computes in (f32, f64), each with its engines.
pub trait RunScalar: Scalar + icl_cpu_simd::SimdScalar + Send + Sync {
    /// The named engine in this precision ([`ENGINE_TABLE`]).
    fn engine_named(name: &str) -> Result<Box<dyn Engine<Self>>>;
    /// The named engine's one-layer attention kernels.
    fn engine(name: &str) -> Result<Box<dyn AttentionKernels<Self>>> {
        Ok(Self::engine_named(name)?.attention()?)
    }
    /// One-layer attention kernels in `pack` (f32 only).
    fn packed(pack: &Pack) -> Result<Box<dyn AttentionKernels<Self>>>;
    /// One-layer attention kernels on `pack`'s device that do not join its steps (a finished
    /// run's evaluation; f32 only).
    fn pack_predictor(pack: &Pack) -> Result<Box<dyn AttentionKernels<Self>>>;
    /// The named engine's kernels for multi-layer transformers (a refusal is an input error).
    fn stack_engine(name: &str) -> Result<Box<dyn StackKernels<Self>>> {
        Self::engine_named(name)?.stack().map_err(|e| match e {
            icl_core::Error::Unsupported(m) => RunError::Refused(format!(
                "{m}; use --engine simd or scalar for this multi-layer transformer"
            )),
            e => e.into(),
        })
    }
    /// The named engine's kernels for GPT-2 models (a refusal is an input error).
    fn gpt2_engine(name: &str) -> Result<Box<dyn icl_core::engine::Gpt2Kernels<Self>>> {
        Self::engine_named(name)?.gpt2().map_err(|e| match e {
            icl_core::Error::Unsupported(m) => {
                RunError::Refused(format!("{m}; use --engine simd or scalar for GPT-2 models"))
            }
            e => e.into(),
        })
    }
}

impl RunScalar for f32 {
    fn engine_named(name: &str) -> Result<Box<dyn Engine<f32>>> {
        (entry(name)?.f32)()
    }
    fn packed(pack: &Pack) -> Result<Box<dyn AttentionKernels<f32>>> {
        #[cfg(feature = "vulkan")]
        return Ok(Box::new(pack.member()));
        #[cfg(not(feature = "vulkan"))]
        match *pack {}
    }
    fn pack_predictor(pack: &Pack) -> Result<Box<dyn AttentionKernels<f32>>> {
        #[cfg(feature = "vulkan")]
        return Ok(Box::new(pack.predictor()));
        #[cfg(not(feature = "vulkan"))]
        match *pack {}
    }
}

impl RunScalar for f64 {
    fn engine_named(name: &str) -> Result<Box<dyn Engine<f64>>> {
        (entry(name)?.f64)()
    }
    fn packed(_pack: &Pack) -> Result<Box<dyn AttentionKernels<f64>>> {
        Err(RunError::Refused(
            "the vulkan engine computes in f32: set train.dtype = f32, or use another engine for f64".into(),
        ))
    }
    fn pack_predictor(pack: &Pack) -> Result<Box<dyn AttentionKernels<f64>>> {
        Self::packed(pack)
    }
}

/// The vector instruction level (`sse2`, `avx2`, `avx512`) the `simd` engine runs `net` at in
/// `T`; `scalar` where it runs the scalar reference instead (multi-layer blocks whose token width
/// its kernels do not take, [`simd_fallback_widths`]), `<level>+scalar` where one block of the IV
/// model does; `None` for the other engines.
pub fn simd_level<T: RunScalar>(engine: &str, net: &Net) -> Option<String> {
    (engine == "simd").then(|| {
        let (level, blocks) = match net {
            Net::Attention(_) => (icl_cpu_simd::SimdEngine::<T>::new().level(), 1),
            Net::Stack(_) => (icl_cpu_simd::MlSimd::<T>::new().level(), 1),
            Net::Iv(_) => (icl_cpu_simd::MlSimd::<T>::new().level(), 2),
            Net::Gpt2(_) => (icl_cpu_simd::SimdEngine::<T>::new().level(), 1),
        };
        match simd_fallback_widths(net).len() {
            0 => level.as_str().to_string(),
            n if n == blocks => "scalar".to_string(),
            _ => format!("{}+scalar", level.as_str()),
        }
    })
}

/// The token widths of `net`'s multi-layer blocks that the `simd` engine runs on the scalar
/// reference, on one thread: those above [`icl_cpu_simd::multilayer::ML_MAX_E`] (d > 23 for
/// regression). Empty for one-layer attention, which every width vectorises.
pub fn simd_fallback_widths(net: &Net) -> Vec<usize> {
    let widths = match net {
        Net::Attention(_) | Net::Gpt2(_) => Vec::new(),
        Net::Stack(s) => vec![s.e],
        Net::Iv(iv) => vec![iv.st1.e, iv.st2.e],
    };
    widths
        .into_iter()
        .filter(|&e| !icl_cpu_simd::multilayer::vectorised(e))
        .collect()
}

/// A one-line note for a run of `cfg` on `engine` (default: the default engine) when the `simd`
/// engine would run part of it on the scalar reference ([`simd_fallback_widths`]); `None`
/// otherwise (or when `cfg` does not describe a model).
pub fn simd_fallback_note(cfg: &Config, engine: Option<&str>) -> Option<String> {
    if engine.unwrap_or(default_engine()) != "simd" {
        return None;
    }
    let spec = icl_core::model::ModelSpec::from_config(cfg).ok()?;
    let slow = simd_fallback_widths(&spec.net);
    if slow.is_empty() {
        return None;
    }
    let list: Vec<String> = slow.iter().map(|e| e.to_string()).collect();
    let flops = spec.step_flops(cfg.task.len, cfg.train.batch);
    let (lo, hi) = SCALAR_GFLOPS;
    Some(format!(
        "the simd engine's multi-layer kernels take token widths up to {}; this model's E = {} \
         runs on the scalar reference, on one thread (much slower): a training step is about {} \
         of arithmetic, at the {lo}-{hi} GFLOP/s of the reference about {}-{} a step",
        icl_cpu_simd::multilayer::ML_MAX_E,
        list.join(" and "),
        flop_text(flops),
        duration_text(flops / (hi * 1e9)),
        duration_text(flops / (lo * 1e9)),
    ))
}

/// The arithmetic rate of the scalar reference on one core, in GFLOP/s (low, high), for the
/// estimate in [`simd_fallback_note`]: measured on a 2.6 GHz AMD EPYC (Zen 4) with `icl bench`
/// at the multilayer paper's sizes, 1.3 (`--engine scalar`, multilayer-t2) and 2.5 (the simd
/// engine's fallback at d = 24).
pub const SCALAR_GFLOPS: (f64, f64) = (1.0, 3.0);

/// `x` floating-point operations with an SI prefix (`"3.2 GFLOP"`).
fn flop_text(x: f64) -> String {
    let units = [
        (1e15, "PFLOP"),
        (1e12, "TFLOP"),
        (1e9, "GFLOP"),
        (1e6, "MFLOP"),
    ];
    match units.iter().find(|(s, _)| x >= *s) {
        Some((s, u)) => format!("{:.1} {u}", x / s),
        None => format!("{x:.0} FLOP"),
    }
}

/// `s` seconds in the largest unit that keeps a number >= 1 (`"2.4 h"`).
fn duration_text(s: f64) -> String {
    let units = [
        (86400.0 * 365.0, "years"),
        (86400.0, "days"),
        (3600.0, "h"),
        (60.0, "min"),
        (1.0, "s"),
        (1e-3, "ms"),
    ];
    match units.iter().find(|(u, _)| s >= *u) {
        Some((u, name)) => format!("{:.1} {name}", s / u),
        None => format!("{:.1} us", s * 1e6),
    }
}

/// Check that an engine name exists and can run in `dtype` (without starting it).
pub fn check(name: &str, dtype: icl_core::config::Dtype) -> Result<()> {
    let e = entry(name)?;
    if name == "vulkan" && dtype == icl_core::config::Dtype::F64 {
        return (e.f64)().map(|_| ());
    }
    Ok(())
}

/// A shared Vulkan device whose runs' steps are packed into one call ([`crate::pack`]).
#[cfg(feature = "vulkan")]
pub use crate::pack::Pack;

/// A shared device whose runs' steps are packed into one call: none without Vulkan.
#[cfg(not(feature = "vulkan"))]
#[derive(Debug, Clone, PartialEq)]
pub enum Pack {}

/// The engines of one name, as the trainer's factory; with a [`Pack`], one-layer attention
/// runs in the pack (the name is then `vulkan`).
#[derive(Debug, Clone, PartialEq)]
pub struct Engines(pub String, pub Option<Pack>);

impl Engines {
    /// The named engines, or the default.
    pub fn named(name: Option<&str>) -> Self {
        Engines(name.unwrap_or(default_engine()).to_string(), None)
    }
}

impl<T: RunScalar> Engine<T> for Engines {
    fn name(&self) -> &str {
        &self.0
    }
    fn attention(&self) -> icl_core::Result<Box<dyn AttentionKernels<T>>> {
        match &self.1 {
            Some(p) => T::packed(p).map_err(into_core),
            None => T::engine(&self.0).map_err(into_core),
        }
    }
    fn stack(&self) -> icl_core::Result<Box<dyn StackKernels<T>>> {
        T::stack_engine(&self.0).map_err(into_core)
    }
    fn gpt2(&self) -> icl_core::Result<Box<dyn icl_core::engine::Gpt2Kernels<T>>> {
        T::gpt2_engine(&self.0).map_err(into_core)
    }
}

/// A run-layer error as the core's (the trainer speaks the core's errors).
fn into_core(e: RunError) -> icl_core::Error {
    match e {
        RunError::Core(c) => c,
        other => icl_core::Error::Unsupported(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(kv: &[(&str, &str)]) -> Config {
        let mut c = Config::default();
        for (k, v) in kv {
            c.set(k, v).expect("key");
        }
        c
    }

    fn net(c: &Config) -> Net {
        icl_core::model::ModelSpec::from_config(c)
            .expect("spec")
            .net
    }

    #[test]
    fn estimates_read_in_units() {
        assert_eq!(flop_text(3.2e9), "3.2 GFLOP");
        assert_eq!(flop_text(5.1e12), "5.1 TFLOP");
        assert_eq!(flop_text(2.0e6), "2.0 MFLOP");
        assert_eq!(flop_text(512.0), "512 FLOP");
        assert_eq!(duration_text(0.25), "250.0 ms");
        assert_eq!(duration_text(90.0), "1.5 min");
        assert_eq!(duration_text(5400.0), "1.5 h");
        assert_eq!(duration_text(3.0 * 86400.0), "3.0 days");
        assert_eq!(duration_text(2e-6), "2.0 us");
    }

    #[test]
    fn the_scalar_fallback_is_named() {
        let tf = |d: &str| {
            cfg(&[
                ("task.kind", "varying"),
                ("model.arch", "transformer"),
                ("task.d", d),
            ])
        };
        let level = icl_cpu_simd::MlSimd::<f32>::new()
            .level()
            .as_str()
            .to_string();
        // d = 23: E = 24, the widest vectorised token
        assert_eq!(
            simd_level::<f32>("simd", &net(&tf("23"))),
            Some(level.clone())
        );
        assert_eq!(simd_fallback_note(&tf("23"), None), None);
        // d = 24: E = 25 runs the scalar reference
        assert_eq!(
            simd_level::<f32>("simd", &net(&tf("24"))).as_deref(),
            Some("scalar")
        );
        assert_eq!(simd_fallback_widths(&net(&tf("24"))), vec![25]);
        let note = simd_fallback_note(&tf("24"), None).expect("note");
        assert!(
            note.contains("E = 25") && note.contains("up to 24"),
            "{note}"
        );
        // with the step's arithmetic (stack_flops of the default transformer at d = 24) and time
        let flops = icl_core::model::ModelSpec::from_config(&tf("24"))
            .expect("spec")
            .step_flops(tf("24").task.len, tf("24").train.batch);
        assert!(flops > 0.0, "{flops}");
        assert!(note.contains(&flop_text(flops)), "{note}");
        assert!(
            note.contains(&format!(
                "{}-{} a step",
                duration_text(flops / 3e9),
                duration_text(flops / 1e9)
            )),
            "{note}"
        );
        assert_eq!(simd_fallback_note(&tf("24"), Some("scalar")), None);
        assert_eq!(simd_level::<f32>("scalar", &net(&tf("24"))), None);
        // the IV model: stage 1 has E = q + p, stage 2 E = p + 1
        let iv = |p: &str, q: &str| {
            cfg(&[
                ("task.kind", "iv"),
                ("model.arch", "iv2stage"),
                ("task.d", p),
                ("task.iv_q", q),
            ])
        };
        let level64 = icl_cpu_simd::MlSimd::<f64>::new()
            .level()
            .as_str()
            .to_string();
        assert_eq!(
            simd_level::<f64>("simd", &net(&iv("5", "6"))),
            Some(level64)
        );
        let mixed = simd_level::<f64>("simd", &net(&iv("10", "20"))).expect("simd");
        assert!(mixed.ends_with("+scalar") && mixed != "scalar", "{mixed}");
        assert_eq!(simd_fallback_widths(&net(&iv("10", "20"))), vec![30]);
        assert_eq!(
            simd_level::<f64>("simd", &net(&iv("30", "2"))).as_deref(),
            Some("scalar")
        );
        let note = simd_fallback_note(&iv("30", "2"), Some("simd")).expect("note");
        assert!(note.contains("E = 32 and 31"), "{note}");
        // one-layer attention vectorises every width
        assert_eq!(
            simd_fallback_widths(&net(&cfg(&[("task.d", "64")]))),
            Vec::<usize>::new()
        );
    }
}
