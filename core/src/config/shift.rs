//! The `shift.*` option types (temperature paper §1.3): test-time covariances and means of the
//! inputs x and of the task vector w, and the label noise; how they are sampled is
//! [`crate::data::shift`].
//!
//! * A covariance is `c` (c > 0: c times the training covariance), `[a_1, ..., a_d]` (the diagonal
//!   covariance diag(a), a_i > 0, replacing the training one) or `[d*d numbers]` (a full SPD
//!   covariance, row-major, replacing the training one).
//! * A mean is `[m_1, ..., m_d]` or `"Ce<k>"`, C times the k-th basis vector (1-based; the paper's
//!   mu_x = 2e_1 is `2e1`). A bare number is refused: `2e1` would read as 20.
//! * The noise is the standard deviation sigma of the test labels (the query target included).
use super::{read_f64, type_err, Field, Range};
use crate::{Error, Result};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use toml::Value;

/// A test-time covariance of x or of w.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum CovShift {
    /// The training covariance.
    #[default]
    Train,
    /// c times the training covariance (c > 0).
    Scale(f64),
    /// d positive numbers (a diagonal) or d*d numbers (a full SPD matrix, row-major); which one is
    /// decided by the length once d is known.
    Matrix(Vec<f64>),
}

/// A test-time mean of x or of w.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum MeanShift {
    /// The training mean, 0.
    #[default]
    Zero,
    /// C times the k-th basis vector (k 0-based in memory, written 1-based: `2e1`).
    Basis { c: f64, k: usize },
    /// An explicit vector of d numbers.
    Vector(Vec<f64>),
}

fn is_none(v: &Value) -> bool {
    matches!(v, Value::String(s) if matches!(s.trim(), "none" | "train"))
}

impl Field for CovShift {
    fn read(key: &str, v: &Value, range: &Range) -> Result<Self> {
        if is_none(v) {
            return Ok(CovShift::Train);
        }
        match v {
            Value::Array(a) => {
                let m = a
                    .iter()
                    .map(|x| read_f64(key, x, &Range::Any))
                    .collect::<Result<Vec<f64>>>()?;
                if m.is_empty() {
                    return Err(Error::InvalidConfig(format!("{key} = [] is empty")));
                }
                Ok(CovShift::Matrix(m))
            }
            _ => read_f64(key, v, range).map(CovShift::Scale),
        }
    }
    fn value(&self) -> Value {
        match self {
            CovShift::Train => Value::String("none".into()),
            CovShift::Scale(c) => Value::Float(*c),
            CovShift::Matrix(m) => Value::Array(m.iter().map(|x| Value::Float(*x)).collect()),
        }
    }
    fn accepts() -> String {
        "none | c | [d diagonal entries] | [d*d SPD entries]".into()
    }
}

/// `Ce<k>` (`2e1`, `-0.5e3`, `e2`) as (C, k 0-based).
fn parse_basis(s: &str) -> Option<(f64, usize)> {
    let (c, k) = s.trim().rsplit_once(['e', 'E'])?;
    let k: usize = k.parse().ok()?;
    let c = match c.trim() {
        "" | "+" => 1.0,
        "-" => -1.0,
        t => t.parse::<f64>().ok()?,
    };
    (k >= 1 && c.is_finite()).then_some((c, k - 1))
}

impl Field for MeanShift {
    fn read(key: &str, v: &Value, range: &Range) -> Result<Self> {
        if is_none(v) {
            return Ok(MeanShift::Zero);
        }
        match v {
            Value::Array(a) => {
                let m = a
                    .iter()
                    .map(|x| read_f64(key, x, range))
                    .collect::<Result<Vec<f64>>>()?;
                if m.is_empty() {
                    return Err(Error::InvalidConfig(format!("{key} = [] is empty")));
                }
                Ok(MeanShift::Vector(m))
            }
            Value::String(s) => parse_basis(s)
                .map(|(c, k)| MeanShift::Basis { c, k })
                .ok_or_else(|| {
                    type_err(key, v, "a mean: [d numbers] or \"Ce<k>\" (C times e_k, e.g. 2e1)")
                }),
            _ => Err(type_err(
                key,
                v,
                "a mean: [d numbers] or \"Ce<k>\" (C times e_k, e.g. 2e1); a bare number is ambiguous",
            )),
        }
    }
    fn value(&self) -> Value {
        match self {
            MeanShift::Zero => Value::String("none".into()),
            MeanShift::Basis { c, k } => Value::String(format!("{c}e{}", k + 1)),
            MeanShift::Vector(m) => Value::Array(m.iter().map(|x| Value::Float(*x)).collect()),
        }
    }
    fn accepts() -> String {
        "none | [d numbers] | Ce<k>".into()
    }
}

/// The shift keys that are set, as `key=value` text (for reports), in declaration order.
pub fn describe(cfg: &super::ShiftConfig) -> Vec<(String, String)> {
    let def = super::ShiftConfig::default();
    cfg.entries()
        .into_iter()
        .zip(def.entries())
        .filter(|(a, b)| a != b)
        .map(|((k, v), _)| (k.to_string(), v))
        .collect()
}
