//! The budget every size in icl is checked against, before the work starts: the working memory a
//! computation may ask for ([`MEMORY_BUDGET`], the limit of [`Config::memory_estimate`] too) and
//! the steps an integration or a recorded trajectory may take ([`MAX_STEPS`], the adaptive
//! integrator's limit too). A request over budget is [`Error::TooLarge`], whose message names the
//! parameters that drive it; front ends map it like any size error (`ICL_ERR_SIZE` in C, exit 2 in
//! the CLI).
//!
//! Within the budget, the memory is still only asked for, never assumed: [`reserve`] reserves a
//! computation's estimate and releases it at once (address space only, nothing is touched), and
//! [`try_vec`] allocates fallibly, so a process under a memory limit below the budget (`ulimit -v`,
//! a cgroup, a small machine) gets the same error instead of an abort ("memory allocation of N
//! bytes failed" ends a process, a Python interpreter or a C program with SIGABRT).
//!
//! [`Config::memory_estimate`]: crate::config::Config::memory_estimate
use crate::{Error, Result};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Working memory a computation may ask for, in bytes: 16 GiB.
pub const MEMORY_BUDGET: u64 = 16 << 30;

/// Most steps of an integration (fixed-step or adaptive) and most rows of a recorded trajectory.
pub const MAX_STEPS: u64 = 10_000_000;

/// Most Monte Carlo samples (sequences, prompts) of one estimate: the theory registry's `--n`,
/// `icl eval --samples` (per test length), `--tau-holdout`, `--alignment` and `icl train
/// --eval-samples`. A standard error falls like 1/sqrt(samples), so 10^8 samples already put it
/// at 10^-4 of the spread of what is estimated; more is a typo or hours to years of work.
pub const MAX_SAMPLES: u64 = 100_000_000;

/// Refuse a computation whose working memory `bytes` (`None`: the sizes overflow) is above
/// [`MEMORY_BUDGET`], then make sure the process can have that much now: it is reserved and
/// released at once. `what` describes the computation and names the parameters that drive its
/// size (`"bayes-risk-mc (--L x --d)"`).
pub fn reserve(bytes: Option<u64>, what: impl FnOnce() -> String) -> Result<()> {
    let Some(bytes) = bytes else {
        return Err(Error::TooLarge(format!(
            "{}: the sizes overflow (more than the {} memory limit)",
            what(),
            human_bytes(MEMORY_BUDGET)
        )));
    };
    if bytes > MEMORY_BUDGET {
        return Err(Error::TooLarge(format!(
            "{} needs about {} of memory, more than the {} limit",
            what(),
            human_bytes(bytes),
            human_bytes(MEMORY_BUDGET)
        )));
    }
    let mut probe: Vec<u8> = Vec::new();
    usize::try_from(bytes)
        .ok()
        .and_then(|n| probe.try_reserve_exact(n).ok())
        .ok_or_else(|| {
            Error::TooLarge(format!(
                "{} needs about {} of memory, which is not available",
                what(),
                human_bytes(bytes)
            ))
        })
}

/// `n` copies of `v`, allocated fallibly: [`Error::TooLarge`] naming `what` when the memory is not
/// available (or `n` values overflow the address space).
pub fn try_vec<T: Clone>(n: usize, v: T, what: &str) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(n).map_err(|_| {
        let bytes = (n as u64).saturating_mul(core::mem::size_of::<T>() as u64);
        Error::TooLarge(format!(
            "{what}: {n} values ({}) do not fit in the memory available",
            human_bytes(bytes)
        ))
    })?;
    out.resize(n, v);
    Ok(out)
}

/// The values of `xs` mapped by `f` into a vector allocated fallibly ([`try_vec`]'s error).
pub fn try_map<A, T>(xs: &[A], what: &str, f: impl FnMut(&A) -> T) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(xs.len()).map_err(|_| {
        let bytes = (xs.len() as u64).saturating_mul(core::mem::size_of::<T>() as u64);
        Error::TooLarge(format!(
            "{what}: {} values ({}) do not fit in the memory available",
            xs.len(),
            human_bytes(bytes)
        ))
    })?;
    out.extend(xs.iter().map(f));
    Ok(out)
}

/// Refuse more than [`MAX_STEPS`] steps: `n` is the count a computation would take (a ratio such
/// as `t_end / dt`, so possibly huge or not finite); `what` names the parameters
/// (`"--t-end / --dt"`). Returns the count.
pub fn steps(n: f64, what: impl FnOnce() -> String) -> Result<u64> {
    if n.is_nan() || n > MAX_STEPS as f64 {
        return Err(Error::TooLarge(format!(
            "{} = {n:.3e}, more than the {MAX_STEPS} steps or rows an integration or a trajectory may take",
            what()
        )));
    }
    Ok(libm::ceil(n.max(0.0)) as u64)
}

/// Refuse more than [`MAX_SAMPLES`] Monte Carlo samples; `what` names the option (`"--samples"`).
pub fn samples(n: u64, what: &str) -> Result<()> {
    if n > MAX_SAMPLES {
        return Err(Error::TooLarge(format!(
            "{what} = {n}: more than the {MAX_SAMPLES} Monte Carlo samples an estimate may take (its standard error falls like 1/sqrt(samples): 10^8 already gives 10^-4 of the spread)"
        )));
    }
    Ok(())
}

/// `a * b * ...` in `u64`, `None` when it overflows: the sizes of a memory estimate.
pub fn product(xs: &[u64]) -> Option<u64> {
    xs.iter().try_fold(1u64, |a, &b| a.checked_mul(b))
}

/// `12.0 GiB`, `512 MiB`, `3 KiB`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = b as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{x:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_budget_is_too_large_and_names_the_computation() {
        let e = reserve(Some(MEMORY_BUDGET + 1), || "x (--n)".into()).unwrap_err();
        assert!(
            matches!(&e, Error::TooLarge(m) if m.contains("x (--n)") && m.contains("16.0 GiB")),
            "{e}"
        );
        let e = reserve(None, || "y".into()).unwrap_err();
        assert!(
            matches!(&e, Error::TooLarge(m) if m.contains("overflow")),
            "{e}"
        );
        reserve(Some(1 << 20), || "z".into()).unwrap();
        let e = try_vec(usize::MAX / 2, 0u64, "v").unwrap_err();
        assert!(
            matches!(&e, Error::TooLarge(m) if m.starts_with("v:")),
            "{e}"
        );
        assert_eq!(try_vec(3, 1u8, "w").unwrap(), [1, 1, 1]);
        assert_eq!(try_map(&[1, 2], "m", |x| x * 2).unwrap(), [2, 4]);
    }

    #[test]
    fn steps_beyond_the_limit_are_refused() {
        assert_eq!(steps(10.0, || "a".into()).unwrap(), 10);
        assert_eq!(steps(MAX_STEPS as f64, || "a".into()).unwrap(), MAX_STEPS);
        for n in [MAX_STEPS as f64 + 1.0, f64::INFINITY, f64::NAN, 1e308] {
            let e = steps(n, || "--t-end / --dt".into()).unwrap_err();
            assert!(
                matches!(&e, Error::TooLarge(m) if m.contains("--t-end / --dt")),
                "{e}"
            );
        }
        assert_eq!(product(&[2, 3, 4]), Some(24));
        samples(MAX_SAMPLES, "--samples").unwrap();
        let e = samples(MAX_SAMPLES + 1, "--samples").unwrap_err();
        assert!(
            matches!(&e, Error::TooLarge(m) if m.starts_with("--samples")),
            "{e}"
        );
        assert_eq!(product(&[u64::MAX, 2]), None);
    }
}
