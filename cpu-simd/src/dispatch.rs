//! Which vector width the kernels run at, chosen once at run time: the plain
//! `cargo build --release` targets baseline x86-64 (SSE2), so the hot kernels are also compiled
//! inside `#[target_feature]` entry points for AVX2 and AVX-512 and picked by CPU detection.
//! `ICL_SIMD=base|avx2|avx512` forces a level (never above what the CPU has). Every level gives
//! the same bits: the kernels use no fused multiply-add and the same operation order.
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
    /// `base`, `avx2`, `avx512`.
    pub fn as_str(self) -> &'static str {
        match self {
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
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Level::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Level::Avx2;
        }
    }
    Level::Base
}

/// The level the kernels run at: `ICL_SIMD` if set (capped at [`detected`]), else [`detected`].
pub fn level() -> Level {
    static L: OnceLock<Level> = OnceLock::new();
    *L.get_or_init(|| {
        let best = detected();
        let want = match std::env::var("ICL_SIMD").as_deref() {
            Ok("base") => Level::Base,
            Ok("avx2") => Level::Avx2,
            Ok("avx512") => Level::Avx512,
            _ => best,
        };
        want.min(best)
    })
}
