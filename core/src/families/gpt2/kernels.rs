//! The engine seam of the GPT-2 family: the batched loss with its gradient, and batched
//! predictions. Callers go through a [`Gpt2Runner`], which checks every input once; engines
//! ([`Gpt2Reference`] here) may assume valid inputs.
//!
//! A [`Batch`] is a set of prompts: sequence b has K = len + 1 pairs; for l < len token l of
//! `batch.seq(b)` (width d + 1) is `[x_l; y_l]`, the query's x is token len's first d values and
//! its y is `batch.target(b)[0]` ([`prompt_of_batch`]).
use super::model::{self, Workspace};
use super::spec::Gpt2Spec;
use crate::data::Batch;
use crate::scalar::check_finite;
use crate::{Error, Result, Scalar};
use alloc::boxed::Box;
use alloc::format;
use alloc::vec::Vec;

/// A way of running GPT-2 in-context learners over batches of prompts.
pub trait Gpt2Kernels<T: Scalar>: Send {
    /// Short name (`scalar`, ...).
    fn name(&self) -> &'static str;
    /// Mean squared error over the batch's n sequences and K = len + 1 positions,
    /// `sum_b sum_i (pred_bi - y_bi)^2 / (n K)`, and its gradient with respect to the flat
    /// parameters (overwrites `grad`).
    fn loss_grad(
        &mut self,
        spec: &Gpt2Spec,
        params: &[T],
        batch: &Batch<T>,
        grad: &mut [T],
    ) -> Result<T>;
    /// Predictions at every position of n prompts of k pairs: `xs: [n, k, d]`, `ys: [n, k]`,
    /// `out: [n, k]` (`out[b k + i]` reads pairs 0..i-1 of prompt b and x_i).
    #[allow(clippy::too_many_arguments)]
    fn predict(
        &mut self,
        spec: &Gpt2Spec,
        params: &[T],
        xs: &[T],
        ys: &[T],
        n: usize,
        k: usize,
        out: &mut [T],
    ) -> Result<()>;
    /// `[f(0), ..., f(n - 1)]`, on the engine's threads where it has them: the classical
    /// estimators' fits beside an evaluation, one independent computation per prompt (a Lasso,
    /// a tree, a network trained by gradient descent), so the values and their order do not
    /// depend on the threads. The first error, by index, is returned. Sequential here.
    fn map_prompts(&self, n: usize, f: &(dyn Fn(usize) -> Result<f64> + Sync)) -> Result<Vec<f64>> {
        (0..n).map(f).collect()
    }
}

/// Sequence `b` of `batch` as a prompt of K = len + 1 pairs: `xs: [K, d]`, `ys: [K]`.
pub fn prompt_of_batch<T: Scalar>(batch: &Batch<T>, b: usize, xs: &mut [T], ys: &mut [T]) {
    let (d, e, len) = (batch.d, batch.e(), batch.len);
    let z = batch.seq(b);
    for l in 0..=len {
        xs[l * d..][..d].copy_from_slice(&z[l * e..][..d]);
        ys[l] = if l < len {
            z[l * e + d]
        } else {
            batch.target(b)[0]
        };
    }
}

/// The scalar reference: one sequence after another, through [`model::loss_grad`] and
/// [`model::forward`].
#[derive(Debug, Default)]
pub struct Gpt2Reference<T> {
    ws: Workspace<T>,
    xs: Vec<T>,
    ys: Vec<T>,
}

impl<T: Scalar> Gpt2Reference<T> {
    pub fn new() -> Self {
        Gpt2Reference {
            ws: Workspace::new(),
            xs: Vec::new(),
            ys: Vec::new(),
        }
    }
}

impl<T: Scalar> Gpt2Kernels<T> for Gpt2Reference<T> {
    fn name(&self) -> &'static str {
        "scalar"
    }

    fn loss_grad(
        &mut self,
        spec: &Gpt2Spec,
        params: &[T],
        batch: &Batch<T>,
        grad: &mut [T],
    ) -> Result<T> {
        let k = batch.len + 1;
        grad.iter_mut().for_each(|g| *g = T::zero());
        self.xs.resize(k * spec.d, T::zero());
        self.ys.resize(k, T::zero());
        let w = T::one() / T::of((batch.n * k) as f64);
        let mut loss = T::zero();
        for b in 0..batch.n {
            prompt_of_batch(batch, b, &mut self.xs, &mut self.ys);
            loss += model::loss_grad(spec, params, &self.xs, &self.ys, k, w, &mut self.ws, grad)?;
        }
        Ok(loss)
    }

    fn predict(
        &mut self,
        spec: &Gpt2Spec,
        params: &[T],
        xs: &[T],
        ys: &[T],
        n: usize,
        k: usize,
        out: &mut [T],
    ) -> Result<()> {
        let d = spec.d;
        for b in 0..n {
            model::forward(
                spec,
                params,
                &xs[b * k * d..][..k * d],
                &ys[b * k..][..k],
                k,
                &mut self.ws,
                &mut out[b * k..][..k],
            )?;
        }
        Ok(())
    }
}

/// An engine behind its checks.
pub struct Gpt2Runner<T: Scalar> {
    engine: Box<dyn Gpt2Kernels<T>>,
}

impl<T: Scalar> core::fmt::Debug for Gpt2Runner<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Gpt2Runner({})", self.engine.name())
    }
}

/// The spec, and the parameters: their count and finiteness.
fn check_params<T: Scalar>(spec: &Gpt2Spec, params: &[T]) -> Result<()> {
    spec.validate()?;
    if params.len() != spec.n_params() {
        return Err(Error::Shape(format!(
            "gpt2: {} parameters given, the model has {}",
            params.len(),
            spec.n_params()
        )));
    }
    check_finite("gpt2 parameters", params)
}

impl<T: Scalar> Gpt2Runner<T> {
    pub fn new(engine: Box<dyn Gpt2Kernels<T>>) -> Self {
        Gpt2Runner { engine }
    }
    /// The scalar reference.
    pub fn scalar() -> Self {
        Self::new(Box::new(Gpt2Reference::new()))
    }
    pub fn name(&self) -> &'static str {
        self.engine.name()
    }

    /// Mean squared error over every position of `batch` and its gradient (overwrites `grad`).
    pub fn loss_grad(
        &mut self,
        spec: &Gpt2Spec,
        params: &[T],
        batch: &Batch<T>,
        grad: &mut [T],
    ) -> Result<T> {
        check_params(spec, params)?;
        if grad.len() != params.len() {
            return Err(Error::Shape(format!(
                "gpt2: the gradient buffer has {} values, {} needed",
                grad.len(),
                params.len()
            )));
        }
        if batch.d != spec.d || batch.n_out != 1 {
            return Err(Error::Shape(format!(
                "gpt2: the batch has d = {} and {} outputs, the model reads d = {} and 1 output",
                batch.d, batch.n_out, spec.d
            )));
        }
        if batch.n == 0 {
            return Err(Error::Shape("gpt2: empty batch".into()));
        }
        let k = batch.len.saturating_add(1);
        spec.check_pairs(k)?;
        let want = batch
            .n
            .checked_mul(k)
            .and_then(|x| x.checked_mul(batch.e()));
        if want != Some(batch.z.len()) || batch.y.len() != batch.n {
            return Err(Error::Shape(
                "gpt2: the batch's buffers do not match its shape".into(),
            ));
        }
        check_finite("z", &batch.z)?;
        check_finite("y", &batch.y)?;
        self.engine.loss_grad(spec, params, batch, grad)
    }

    /// [`Gpt2Kernels::map_prompts`] of the engine.
    pub fn map_prompts(
        &self,
        n: usize,
        f: &(dyn Fn(usize) -> Result<f64> + Sync),
    ) -> Result<Vec<f64>> {
        self.engine.map_prompts(n, f)
    }

    /// Predictions at every position of `n` prompts of `k` pairs (`xs: [n, k, d]`, `ys: [n, k]`,
    /// `out: [n, k]`).
    #[allow(clippy::too_many_arguments)]
    pub fn predict(
        &mut self,
        spec: &Gpt2Spec,
        params: &[T],
        xs: &[T],
        ys: &[T],
        n: usize,
        k: usize,
        out: &mut [T],
    ) -> Result<()> {
        check_params(spec, params)?;
        spec.check_pairs(k)?;
        let nk = n.checked_mul(k);
        let nkd = nk.and_then(|x| x.checked_mul(spec.d));
        if n == 0 || nkd != Some(xs.len()) || nk != Some(ys.len()) || nk != Some(out.len()) {
            return Err(Error::Shape(format!(
                "gpt2: n = {n} prompts of k = {k} pairs at d = {} need xs [n, k, d], ys and out [n, k]; got {}, {} and {} values",
                spec.d,
                xs.len(),
                ys.len(),
                out.len()
            )));
        }
        check_finite("xs", xs)?;
        check_finite("ys", ys)?;
        self.engine.predict(spec, params, xs, ys, n, k, out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::init::init_params;
    use super::super::model::tests::{prompt, random_params, small};
    use super::*;
    use alloc::vec;

    /// A batch of n prompts of K = len + 1 pairs, with the pairs of `prompt(.., seed + b)`.
    fn batch(spec: &Gpt2Spec, n: usize, len: usize) -> Batch<f64> {
        let (d, e) = (spec.d, spec.d + 1);
        let mut z = vec![0.0; n * (len + 1) * e];
        let mut y = vec![0.0; n];
        for b in 0..n {
            let (xs, ys) = prompt(spec, len + 1, 20 + b as u64);
            for l in 0..=len {
                let t = &mut z[(b * (len + 1) + l) * e..][..e];
                t[..d].copy_from_slice(&xs[l * d..][..d]);
                t[d] = if l < len { ys[l] } else { 0.0 };
            }
            y[b] = ys[len];
        }
        Batch::from_parts(n, len, d, 1, z, y).unwrap()
    }

    #[test]
    fn gpt2_runner_loss_is_the_mean_over_sequences_and_positions() {
        let spec = small();
        let params = random_params(&spec, 11);
        let (n, len) = (3, 2);
        let bt = batch(&spec, n, len);
        let mut run = Gpt2Runner::scalar();
        let mut grad = vec![f64::NAN; spec.n_params()];
        let loss = run.loss_grad(&spec, &params, &bt, &mut grad).unwrap();
        // the same prompts through predict
        let k = len + 1;
        let (mut xs, mut ys) = (vec![0.0; n * k * spec.d], vec![0.0; n * k]);
        for b in 0..n {
            let (x, y) = prompt(&spec, k, 20 + b as u64);
            xs[b * k * spec.d..][..k * spec.d].copy_from_slice(&x);
            ys[b * k..][..k].copy_from_slice(&y);
        }
        let mut out = vec![0.0; n * k];
        run.predict(&spec, &params, &xs, &ys, n, k, &mut out)
            .unwrap();
        let mse: f64 = out
            .iter()
            .zip(&ys)
            .map(|(p, y)| (p - y) * (p - y))
            .sum::<f64>()
            / (n * k) as f64;
        assert!((loss - mse).abs() < 1e-13, "{loss} vs {mse}");
        // the gradient is overwritten (no NaN left) and is the mean of the sequences' gradients
        let mut want = vec![0.0; spec.n_params()];
        let mut ws = Workspace::new();
        for b in 0..n {
            let w = 1.0 / (n * k) as f64;
            let x = &xs[b * k * spec.d..][..k * spec.d];
            model::loss_grad(
                &spec,
                &params,
                x,
                &ys[b * k..][..k],
                k,
                w,
                &mut ws,
                &mut want,
            )
            .unwrap();
        }
        for (a, b) in grad.iter().zip(&want) {
            assert!((a - b).abs() < 1e-14, "{a} vs {b}");
        }
    }

    #[test]
    fn gpt2_runner_rejects_bad_input() {
        let spec = small();
        let params: Vec<f64> = init_params(&spec, 1);
        let bt = batch(&spec, 2, 2);
        let mut run = Gpt2Runner::scalar();
        let mut grad = vec![0.0; spec.n_params()];
        assert!(run.loss_grad(&spec, &params, &bt, &mut grad).is_ok());
        // wrong parameter count, gradient length
        assert!(matches!(
            run.loss_grad(&spec, &params[1..], &bt, &mut grad[1..]),
            Err(Error::Shape(_))
        ));
        assert!(matches!(
            run.loss_grad(&spec, &params, &bt, &mut grad[1..]),
            Err(Error::Shape(_))
        ));
        // NaN in the parameters, in the batch
        let mut bad = params.clone();
        bad[7] = f64::NAN;
        assert!(matches!(
            run.loss_grad(&spec, &bad, &bt, &mut grad),
            Err(Error::NonFinite(_))
        ));
        let mut bn = bt.clone();
        bn.z[1] = f64::INFINITY;
        assert!(matches!(
            run.loss_grad(&spec, &params, &bn, &mut grad),
            Err(Error::NonFinite(_))
        ));
        // K = len + 1 > P
        let long = batch(&spec, 1, 4);
        assert!(matches!(
            run.loss_grad(&spec, &params, &long, &mut grad),
            Err(Error::Shape(_))
        ));
        // d and n_out must match
        let other = Gpt2Spec { d: 2, ..small() };
        let p2: Vec<f64> = init_params(&other, 1);
        let mut g2 = vec![0.0; other.n_params()];
        assert!(matches!(
            run.loss_grad(&other, &p2, &bt, &mut g2),
            Err(Error::Shape(_))
        ));
        let two = Batch::<f64>::zeros(1, 2, 3, 2);
        assert!(run.loss_grad(&spec, &params, &two, &mut grad).is_err());
        // a batch whose buffers lie about its shape
        let mut short = bt.clone();
        short.z.pop();
        assert!(run.loss_grad(&spec, &params, &short, &mut grad).is_err());
        // embd not a multiple of heads
        let odd = Gpt2Spec {
            heads: 3,
            ..small()
        };
        assert!(matches!(
            run.loss_grad(&odd, &params, &bt, &mut grad),
            Err(Error::InvalidConfig(_))
        ));
        // predict: k > P, NaN input, wrong buffer sizes
        let (xs, ys) = prompt(&spec, 3, 1);
        let mut out = vec![0.0; 3];
        assert!(run
            .predict(&spec, &params, &xs, &ys, 1, 3, &mut out)
            .is_ok());
        let (x5, y5) = prompt(&spec, 5, 1);
        let mut o5 = vec![0.0; 5];
        assert!(run
            .predict(&spec, &params, &x5, &y5, 1, 5, &mut o5)
            .is_err());
        let mut xn = xs.clone();
        xn[0] = f64::NAN;
        assert!(matches!(
            run.predict(&spec, &params, &xn, &ys, 1, 3, &mut out),
            Err(Error::NonFinite(_))
        ));
        assert!(run
            .predict(&spec, &params, &xs, &ys, 1, 3, &mut out[1..])
            .is_err());
        assert!(run
            .predict(&spec, &params, &xs, &ys, 0, 3, &mut out[..0])
            .is_err());
        assert!(run
            .predict(&spec, &params, &xs, &ys, usize::MAX, 3, &mut out)
            .is_err());
    }
}
