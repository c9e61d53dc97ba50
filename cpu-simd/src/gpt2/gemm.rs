//! The matrix products of the GPT-2 engine, through the `matrixmultiply` crate (`sgemm` /
//! `dgemm`: packed panels, a micro-kernel picked at run time from the CPU's features, AVX-512,
//! FMA + AVX2, AVX or SSE2; its own threading is off, the engine parallelises over chunks).
//!
//! A matrix is a slice with a row stride and a column stride ([`Mat`]), so a transpose is a view
//! (`x.t()`), never a copy.

/// A read-only strided matrix `[rows, cols]`: element (i, j) at `data[i rs + j cs]`.
#[derive(Clone, Copy)]
pub struct Mat<'a, T> {
    pub data: &'a [T],
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
}

impl<'a, T> Mat<'a, T> {
    /// A row-major `[rows, cols]` matrix: `data[i cols + j]`.
    #[inline(always)]
    pub fn rows(data: &'a [T], rows: usize, cols: usize) -> Self {
        Mat {
            data,
            rows,
            cols,
            rs: cols,
            cs: 1,
        }
    }
    /// Columns `j0..j0 + cols` of a row-major matrix whose rows are `stride` apart (one head's
    /// columns of q | k | v): element (i, j) at `data[i stride + j0 + j]`.
    #[inline(always)]
    pub fn cols_of(data: &'a [T], rows: usize, stride: usize, j0: usize, cols: usize) -> Self {
        Mat {
            data: &data[j0.min(data.len())..],
            rows,
            cols,
            rs: stride,
            cs: 1,
        }
    }
    /// The transpose, as a view.
    #[inline(always)]
    pub fn t(self) -> Self {
        Mat {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
        }
    }
}

/// The largest index a strided `[rows, cols]` matrix touches, plus one (0 when empty).
#[inline(always)]
fn span(rows: usize, cols: usize, rs: usize, cs: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * rs + (cols - 1) * cs + 1
    }
}

/// The scalars `matrixmultiply` multiplies.
pub trait GemmScalar: Copy + Send + Sync + 'static {
    /// `C <- alpha A B + beta C` (`beta = 0`: C is not read).
    ///
    /// # Safety
    /// As `matrixmultiply::sgemm`: every index the strides reach is inside its buffer, and `c`
    /// does not alias `a` or `b`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_raw(
        m: usize,
        k: usize,
        n: usize,
        alpha: Self,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        beta: Self,
        c: *mut Self,
        rsc: isize,
        csc: isize,
    );
    const ZERO_G: Self;
    const ONE_G: Self;
}

impl GemmScalar for f32 {
    #[inline(always)]
    unsafe fn gemm_raw(
        m: usize,
        k: usize,
        n: usize,
        alpha: f32,
        a: *const f32,
        rsa: isize,
        csa: isize,
        b: *const f32,
        rsb: isize,
        csb: isize,
        beta: f32,
        c: *mut f32,
        rsc: isize,
        csc: isize,
    ) {
        // SAFETY: forwarded from the caller's contract.
        unsafe {
            matrixmultiply::sgemm(m, k, n, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc)
        }
    }
    const ZERO_G: f32 = 0.0;
    const ONE_G: f32 = 1.0;
}

impl GemmScalar for f64 {
    #[inline(always)]
    unsafe fn gemm_raw(
        m: usize,
        k: usize,
        n: usize,
        alpha: f64,
        a: *const f64,
        rsa: isize,
        csa: isize,
        b: *const f64,
        rsb: isize,
        csb: isize,
        beta: f64,
        c: *mut f64,
        rsc: isize,
        csc: isize,
    ) {
        // SAFETY: forwarded from the caller's contract.
        unsafe {
            matrixmultiply::dgemm(m, k, n, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc)
        }
    }
    const ZERO_G: f64 = 0.0;
    const ONE_G: f64 = 1.0;
}

/// `c <- a b` (`acc = false`) or `c <- c + a b` (`acc = true`), with `c` row-major
/// `[a.rows, b.cols]`. Panics when a shape or a buffer does not match (a bug of the caller).
#[inline]
pub fn gemm<T: GemmScalar>(a: Mat<'_, T>, b: Mat<'_, T>, c: &mut [T], acc: bool) {
    let n = b.cols;
    gemm_strided(a, b, c, n, acc);
}

/// As [`gemm`], with the rows of `c` `rsc` apart (`c[i rsc + j]`: one head's columns of a wider
/// matrix).
#[inline]
pub fn gemm_strided<T: GemmScalar>(
    a: Mat<'_, T>,
    b: Mat<'_, T>,
    c: &mut [T],
    rsc: usize,
    acc: bool,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert_eq!(b.rows, k, "gemm: inner sizes differ");
    assert!(span(m, n, rsc, 1) <= c.len(), "gemm: output too short");
    assert!(span(m, k, a.rs, a.cs) <= a.data.len(), "gemm: A too short");
    assert!(span(k, n, b.rs, b.cs) <= b.data.len(), "gemm: B too short");
    if m == 0 || n == 0 {
        return;
    }
    let beta = if acc { T::ONE_G } else { T::ZERO_G };
    // SAFETY: the asserts above keep every index inside its slice; `c` is a `&mut` borrow, so
    // it aliases neither input.
    unsafe {
        T::gemm_raw(
            m,
            k,
            n,
            T::ONE_G,
            a.data.as_ptr(),
            a.rs as isize,
            a.cs as isize,
            b.data.as_ptr(),
            b.rs as isize,
            b.cs as isize,
            beta,
            c.as_mut_ptr(),
            rsc as isize,
            1,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemm_matches_plain_loops_with_transposed_views() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f64> = (0..m * k).map(|i| (i as f64 * 0.37).sin()).collect();
        let b: Vec<f64> = (0..n * k).map(|i| (i as f64 * 0.11).cos()).collect();
        // c = a [m, k] . b^T, with b stored [n, k]
        let mut c = vec![1.0; m * n];
        gemm(Mat::rows(&a, m, k), Mat::rows(&b, n, k).t(), &mut c, true);
        for i in 0..m {
            for j in 0..n {
                let want: f64 = 1.0 + (0..k).map(|p| a[i * k + p] * b[j * k + p]).sum::<f64>();
                assert!((c[i * n + j] - want).abs() < 1e-12);
            }
        }
        let mut c0 = vec![f64::NAN; m * n];
        gemm(Mat::rows(&a, m, k), Mat::rows(&b, n, k).t(), &mut c0, false);
        for (x, y) in c0.iter().zip(&c) {
            assert!((x + 1.0 - y).abs() < 1e-12);
        }
    }
}
