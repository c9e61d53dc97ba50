//! Batches of embedded sequences, and filling them sequence by sequence.
use crate::{Error, Result, Scalar};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

/// A batch of embedded sequences, token-major: token `l` of sequence `b` is
/// `z[((b * (len + 1)) + l) * e ..][..e]`; the query is token `len`. Targets are `y[b * n_out ..][..n_out]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch<T> {
    /// Number of sequences.
    pub n: usize,
    /// Context length L (the query is one more token).
    pub len: usize,
    /// Covariate dimension.
    pub d: usize,
    /// Outputs per token.
    pub n_out: usize,
    /// Embedded tokens, `n * (len + 1) * (d + n_out)` values.
    pub z: Vec<T>,
    /// Query targets, `n * n_out` values.
    pub y: Vec<T>,
}

impl<T: Scalar> Batch<T> {
    /// A zero batch of the given shape.
    pub fn zeros(n: usize, len: usize, d: usize, n_out: usize) -> Self {
        Batch {
            n,
            len,
            d,
            n_out,
            z: vec![T::zero(); n * (len + 1) * (d + n_out)],
            y: vec![T::zero(); n * n_out],
        }
    }

    /// A zero batch of the given shape, or [`Error::Shape`] naming the memory it would need when the
    /// sizes overflow or the allocation fails (never aborts).
    pub fn try_zeros(n: usize, len: usize, d: usize, n_out: usize) -> Result<Self> {
        let e = d.checked_add(n_out);
        let zn = e
            .and_then(|e| len.checked_add(1).and_then(|t| t.checked_mul(e)))
            .and_then(|x| x.checked_mul(n));
        let yn = n.checked_mul(n_out);
        let (Some(zn), Some(yn)) = (zn, yn) else {
            return Err(Error::Shape(format!(
                "a batch of n={n} sequences of length L={len} overflows"
            )));
        };
        let alloc_err = || {
            Error::Shape(format!(
                "a batch of n={n} sequences of length L={len} needs {} of memory, which is not available",
                // saturating: a batch that cannot be allocated may need more than 2^64 bytes
                crate::config::human_bytes(
                    (zn as u64)
                        .saturating_add(yn as u64)
                        .saturating_mul(core::mem::size_of::<T>() as u64)
                )
            ))
        };
        let mut z = Vec::new();
        z.try_reserve_exact(zn).map_err(|_| alloc_err())?;
        z.resize(zn, T::zero());
        let mut y = Vec::new();
        y.try_reserve_exact(yn).map_err(|_| alloc_err())?;
        y.resize(yn, T::zero());
        Ok(Batch {
            n,
            len,
            d,
            n_out,
            z,
            y,
        })
    }

    /// A batch from caller data, checking sizes and finiteness; the query's y-slots are zeroed
    /// (so they may hold anything, NaN included).
    pub fn from_parts(
        n: usize,
        len: usize,
        d: usize,
        n_out: usize,
        z: Vec<T>,
        y: Vec<T>,
    ) -> Result<Self> {
        if n == 0 || len == 0 || d == 0 || n_out == 0 {
            return Err(Error::Shape(format!(
                "empty batch shape n={n} L={len} d={d} n_out={n_out}"
            )));
        }
        let want = n * (len + 1) * (d + n_out);
        if z.len() != want || y.len() != n * n_out {
            return Err(Error::Shape(format!(
                "batch needs {want} token values and {} targets, got {} and {}",
                n * n_out,
                z.len(),
                y.len()
            )));
        }
        let mut b = Batch {
            n,
            len,
            d,
            n_out,
            z,
            y,
        };
        // the query's y-slots are ignored whatever they hold (NaN included): zeroed before the
        // finiteness check
        for s in 0..n {
            let e = d + n_out;
            let q = b.seq_mut(s);
            for o in 0..n_out {
                q[len * e + d + o] = T::zero();
            }
        }
        crate::scalar::check_finite("z", &b.z)?;
        crate::scalar::check_finite("y", &b.y)?;
        Ok(b)
    }

    /// Embedding width E = d + n_out.
    #[inline]
    pub fn e(&self) -> usize {
        self.d + self.n_out
    }

    /// The same batch in precision `U` (values rounded).
    pub fn cast<U: Scalar>(&self) -> Batch<U> {
        Batch {
            n: self.n,
            len: self.len,
            d: self.d,
            n_out: self.n_out,
            z: self.z.iter().map(|x| U::of(x.to_f64())).collect(),
            y: self.y.iter().map(|x| U::of(x.to_f64())).collect(),
        }
    }

    /// The `(len + 1) * e` token values of sequence `b`.
    #[inline]
    pub fn seq(&self, b: usize) -> &[T] {
        let w = (self.len + 1) * self.e();
        &self.z[b * w..(b + 1) * w]
    }

    /// Mutable tokens of sequence `b`.
    #[inline]
    pub fn seq_mut(&mut self, b: usize) -> &mut [T] {
        let w = (self.len + 1) * self.e();
        &mut self.z[b * w..(b + 1) * w]
    }

    /// The target of sequence `b`.
    #[inline]
    pub fn target(&self, b: usize) -> &[T] {
        &self.y[b * self.n_out..(b + 1) * self.n_out]
    }
}

/// How to write sequence b of a batch: `(b, tokens, targets, scratch)`.
pub type SequenceFill<'a, T> = dyn Fn(usize, &mut [T], &mut [T], &mut Vec<f64>) + Sync + 'a;

/// How to write sequence b's blocks of several buffers: `(b, blocks, scratch)`.
pub type RowsFill<'a, T> = dyn Fn(usize, &mut [&mut [T]], &mut Vec<f64>) + Sync + 'a;

/// Fill `n` sequences' blocks of `bufs` one sequence after another (what an engine's parallel
/// `fill_rows` must equal).
pub fn fill_rows_serial<T: Scalar>(n: usize, bufs: &mut [&mut [T]], fill: &RowsFill<'_, T>) {
    if n == 0 {
        return;
    }
    let widths: Vec<usize> = bufs.iter().map(|v| v.len() / n).collect();
    let mut scratch = Vec::new();
    for b in 0..n {
        let mut rows: Vec<&mut [T]> = bufs
            .iter_mut()
            .zip(&widths)
            .map(|(v, &w)| &mut v[b * w..(b + 1) * w])
            .collect();
        fill(b, &mut rows, &mut scratch);
    }
}

/// Fill every sequence of `batch` one sequence after another.
pub fn fill_serial<T: Scalar>(batch: &mut Batch<T>, fill: &SequenceFill<'_, T>) {
    let n = batch.n;
    fill_rows_serial(
        n,
        &mut [&mut batch.z[..], &mut batch.y[..]],
        &|b, rows, s| {
            if let [z, y] = rows {
                fill(b, z, y, s)
            }
        },
    );
}
