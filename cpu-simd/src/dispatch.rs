//! Which vector width the kernels run at, chosen once at run time: the plain
//! `cargo build --release` targets baseline x86-64 (SSE2), so the hot kernels are also compiled
//! inside `#[target_feature]` entry points for AVX2 and AVX-512 and picked by CPU detection.
//! `ICL_SIMD=sse2|avx2|avx512` forces a level (never above what the CPU has; `base` is another
//! name for `sse2`). Every level gives the same bits: the kernels' only fused multiply-adds are
//! explicit ones (rounded once at every level; a C library call at SSE2), the
//! same lane counts and operation order, and the crate's own `exp`/`ln`/`sin`/`cos`.
use std::sync::OnceLock;

/// A vector instruction level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// The build's baseline (SSE2 on x86-64).
    Base,
    /// AVX2 (256-bit).
    Avx2,
    /// AVX-512F (512-bit).
    Avx512,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 3] = [Level::Base, Level::Avx2, Level::Avx512];

    /// `sse2` (`base` off x86-64), `avx2`, `avx512`.
    pub fn as_str(self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            Level::Base => "sse2",
            #[cfg(not(target_arch = "x86_64"))]
            Level::Base => "base",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }
}

/// The best level this CPU supports.
pub fn detected() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("fma")
        {
            return Level::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Level::Avx2;
        }
    }
    Level::Base
}

/// Whether this CPU runs `level` (an engine asked for a level above [`detected`] runs at
/// [`detected`] instead).
pub fn has(level: Level) -> bool {
    level <= detected_cached()
}

/// The levels a test of every level ran, reported so that a machine without a level says so
/// (on a CPU without AVX-512, an engine asked for AVX-512 runs AVX2 and would pass silently).
/// A test loops over [`LevelsRun::levels`] (those of its levels this CPU has), records with
/// [`LevelsRun::ran`] the level each engine says it runs at, and ends with
/// [`LevelsRun::finish`], which prints one line, `simd levels run by TEST: sse2 avx2` with
/// `; skipped: avx512 (CPU lacks it)` where the CPU lacks one, and panics when the CPU has a
/// level the test did not run. The line goes to stderr past the test harness's capture, so CI
/// logs show it for passing tests too.
#[derive(Debug)]
pub struct LevelsRun {
    test: &'static str,
    wanted: Vec<Level>,
    ran: Vec<Level>,
}

impl LevelsRun {
    /// A test of every level.
    pub fn new(test: &'static str) -> Self {
        Self::of(test, &Level::ALL)
    }

    /// A test of the levels `wanted` only.
    pub fn of(test: &'static str, wanted: &[Level]) -> Self {
        LevelsRun {
            test,
            wanted: wanted.to_vec(),
            ran: Vec::new(),
        }
    }

    /// The test's levels this CPU has, lowest first.
    pub fn levels(&self) -> Vec<Level> {
        self.wanted.iter().copied().filter(|&l| has(l)).collect()
    }

    /// An engine ran at `level` (the level it reports, not the one it was asked for).
    pub fn ran(&mut self, level: Level) {
        if !self.ran.contains(&level) {
            self.ran.push(level);
        }
    }

    /// Print which levels ran and which were skipped; panic when the CPU has one of the test's
    /// levels that did not run.
    pub fn finish(mut self) {
        use std::io::Write;
        self.ran.sort();
        let names = |ls: &[Level]| {
            if ls.is_empty() {
                "none".to_string()
            } else {
                ls.iter().map(|l| l.as_str()).collect::<Vec<_>>().join(" ")
            }
        };
        let lacking: Vec<Level> = self.wanted.iter().copied().filter(|&l| !has(l)).collect();
        let mut line = format!("simd levels run by {}: {}", self.test, names(&self.ran));
        if !lacking.is_empty() {
            line += &format!("; skipped: {} (CPU lacks it)", names(&lacking));
        }
        // past the harness's capture of print!/eprint!
        let _ = writeln!(std::io::stderr(), "{line}");
        let missed: Vec<Level> = self
            .levels()
            .into_iter()
            .filter(|l| !self.ran.contains(l))
            .collect();
        assert!(
            missed.is_empty(),
            "{}: the CPU has {} but the test did not run it",
            self.test,
            names(&missed)
        );
    }
}

/// The level `ICL_SIMD` asks for: `Ok(None)` when it is unset (or empty), `Err(value)` when it
/// names no level (front ends report that instead of running at the detected level).
pub fn requested() -> Result<Option<Level>, String> {
    match std::env::var("ICL_SIMD") {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => Err(v.to_string_lossy().into_owned()),
        Ok(v) => match v.trim() {
            "" => Ok(None),
            "base" | "sse2" => Ok(Some(Level::Base)),
            "avx2" => Ok(Some(Level::Avx2)),
            "avx512" => Ok(Some(Level::Avx512)),
            _ => Err(v),
        },
    }
}

/// The level the kernels run at: `ICL_SIMD` if set (capped at [`detected`]), else [`detected`]
/// (also when `ICL_SIMD` names no level: [`requested`] tells front ends so).
pub fn level() -> Level {
    static L: OnceLock<Level> = OnceLock::new();
    *L.get_or_init(|| {
        let best = detected();
        requested().ok().flatten().unwrap_or(best).min(best)
    })
}

/// A kernel to run at a level: `run` must be `#[inline(always)]` (with everything it calls that
/// is meant to vectorise), so that it is compiled into each level's entry point.
pub trait Kernel {
    type Out;
    fn run(self) -> Self::Out;
    /// `run` at the baseline level (SSE2 on x86-64). A kernel may override it with a version that
    /// compiles to less code and gives the same bits: the baseline runs only on CPUs without
    /// AVX2 and under `ICL_SIMD=sse2`, and a kernel dispatched by [`run_avx512()`] never runs there.
    #[inline(always)]
    fn run_base(self) -> Self::Out
    where
        Self: Sized,
    {
        self.run()
    }
}

// Each level's entry point in a module of its own: rustc compiles a generic function's instances
// in the code-generation unit of the function's module, so that each level's kernels (the
// one-layer model, the data, GPT-2) form a unit of their own, compiled beside the other's.
macro_rules! entry {
    ($module:ident, $feat:literal) => {
        #[cfg(target_arch = "x86_64")]
        mod $module {
            use super::Kernel;
            #[target_feature(enable = $feat)]
            pub(super) fn run<K: Kernel>(k: K) -> K::Out {
                k.run()
            }
        }
    };
}
entry!(run_avx2, "avx2,fma");
entry!(run_avx512, "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma");

/// Run `k` compiled for `level`, which must be at most [`detected`] (the engines cap it so).
#[inline(always)]
pub fn run<K: Kernel>(level: Level, k: K) -> K::Out {
    if level.min(detected_cached()) == Level::Avx512 {
        run_avx512(level, k)
    } else {
        run_below_avx512(level, k)
    }
}

/// [`run`] for a kernel that runs at AVX-512 only (compiled at that level and the baseline, which
/// `k` runs at where `level` is below AVX-512).
#[inline(always)]
pub fn run_avx512<K: Kernel>(level: Level, k: K) -> K::Out {
    match level.min(detected_cached()) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the level is capped at what the CPU has, so it has these features.
        Level::Avx512 => unsafe { run_avx512::run(k) },
        _ => k.run_base(),
    }
}

/// [`run`] for a kernel that runs below AVX-512 only (compiled at AVX2 and the baseline; at
/// AVX-512 it runs at AVX2).
#[inline(always)]
pub fn run_below_avx512<K: Kernel>(level: Level, k: K) -> K::Out {
    match level.min(detected_cached()) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the level is capped at what the CPU has, and AVX-512 CPUs have AVX2.
        Level::Avx2 | Level::Avx512 => unsafe { run_avx2::run(k) },
        _ => k.run_base(),
    }
}

/// [`detected`], computed once.
pub fn detected_cached() -> Level {
    static L: OnceLock<Level> = OnceLock::new();
    *L.get_or_init(detected)
}
