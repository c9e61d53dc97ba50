//! The JSON contracts as types: `summary.json` of a run folder, `icl analyze --json`,
//! `icl eval --json`. Every front end produces and reads these structs, so the contracts cannot
//! drift apart.
use icl_core::config::Config;
use icl_core::families::attention::analysis::Report;
use serde::{Deserialize, Serialize};

/// The config as a JSON object of dotted key -> typed value.
pub fn config_json(cfg: &Config) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (section, entries) in cfg.to_table() {
        if let toml::Value::Table(entries) = entries {
            for (k, v) in entries {
                m.insert(
                    format!("{section}.{k}"),
                    serde_json::to_value(&v).unwrap_or(serde_json::Value::Null),
                );
            }
        }
    }
    serde_json::Value::Object(m)
}

/// Pretty JSON text of a value.
pub fn pretty<T: Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// Every configuration key, the shift keys of evaluation included, as `icl presets --keys --json`
/// prints them and Python's `icl.Config.keys()` returns them: `[{"key", "aliases", "doc",
/// "accepts"}]`.
pub fn keys_json() -> Vec<serde_json::Value> {
    icl_core::config::keys()
        .chain(icl_core::config::ShiftConfig::KEYS)
        .map(|k| {
            serde_json::json!({
                "key": k.dotted(),
                "aliases": k.aliases.iter().map(|a| format!("{}.{a}", k.section)).collect::<Vec<_>>(),
                "doc": k.doc,
                "accepts": k.describe(),
            })
        })
        .collect()
}

/// Monte Carlo risk at one length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Risk {
    #[serde(rename = "L")]
    pub len: usize,
    pub risk: f64,
    pub stderr: f64,
    pub samples: usize,
}

/// One head in `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadSummary {
    pub omega: f64,
    pub mu: f64,
    pub kind: String,
}

/// One plateau of a Zhang et al. (2025) run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlateauSummary {
    pub loss: f64,
    pub theory: f64,
    pub m: usize,
    pub start_step: f64,
    pub end_step: f64,
    pub at_step: f64,
    pub pcr_distance: f64,
}

/// What a run of the `eigs` task adds to its summary (Zhang et al. 2025).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinattnSummary {
    pub theory_levels: Vec<f64>,
    pub inv_n: f64,
    pub eigenvalues: Vec<f64>,
    pub plateaus: Vec<PlateauSummary>,
    pub drops: usize,
    pub crossings: Vec<Option<f64>>,
    pub final_values: Option<Vec<f64>>,
    /// Heads whose |v| grew to at least a quarter of the largest.
    pub grown_values: Option<usize>,
    pub v_star: Vec<f64>,
    pub final_pcr_distance: Option<f64>,
    pub conservation_drift: Option<f64>,
    pub tests: serde_json::Map<String, serde_json::Value>,
    pub cubic_mlp_max_abs_diff: Option<f64>,
}

/// `summary.json` of a trained run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub preset: Option<String>,
    pub config: serde_json::Value,
    pub engine: String,
    /// The `simd` engine's vector instruction level (`sse2`, `avx2`, `avx512`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simd_level: Option<String>,
    pub dtype: String,
    pub protocol: String,
    pub steps: u64,
    pub seconds: f64,
    pub setup_seconds: f64,
    pub steps_per_second: f64,
    pub final_loss: f64,
    /// Set when the run continued an earlier one (`--resume`): the step it started from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<u64>,
    /// Set when the run continued an earlier one whose checkpoint kept its clock: seconds of
    /// training over every session (`seconds` and `steps_per_second` are this session's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<Risk>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heads: Vec<HeadSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign_matching: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_eff: Option<f64>,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub linattn: Option<LinattnSummary>,
    /// Transformer runs: the learned pattern (as `icl analyze`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transformer: Option<TransformerAnalysis>,
    /// Transformer runs: risks of the model and the baselines at the training length against the
    /// noise-free target (as `icl eval`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub risks: Vec<EvalRow>,
}

impl Summary {
    /// Seconds of training the run took over all its sessions: `total_seconds` when the run was
    /// resumed from a checkpoint that kept its clock, else `seconds`.
    pub fn training_seconds(&self) -> f64 {
        self.total_seconds.unwrap_or(self.seconds)
    }
}

/// `summary.json` of an imported model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportSummary {
    pub imported_from: String,
    pub config: serde_json::Value,
}

/// One head of `icl analyze --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadAnalysis {
    pub omega: f64,
    pub mu: f64,
    pub kind: String,
    pub mu_all: Vec<f64>,
    pub omega_diag: Vec<f64>,
    pub offdiag_ratio: f64,
    pub kq21_norm: f64,
    pub ov21_norm: f64,
    pub sign_match: bool,
}

/// `icl analyze --json`: the step, and the analysis of a one-layer model or of a transformer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub step: u64,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub attention: Option<AttentionAnalysis>,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub transformer: Option<TransformerAnalysis>,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub gpt2: Option<Gpt2Analysis>,
}

/// What a GPT-2 model attends to on one evaluation prompt (`attention.svg` draws the weights).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gpt2Analysis {
    /// Pairs of the prompt (2 tokens each).
    pub prompt_pairs: usize,
    pub attention_heads: Vec<Gpt2Head>,
}

/// One head of one layer: the weight x tokens give label tokens, and tokens give themselves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gpt2Head {
    pub layer: usize,
    pub head: usize,
    pub y_mass: f64,
    pub self_mass: f64,
}

/// The eq.-5 pattern of one parameter set (the looped block, or one layer) of a transformer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerPattern {
    pub u1_omega: f64,
    pub u2_omega: f64,
    pub eta_x: f64,
    pub eta_y: f64,
    /// Per head: omega (mean of Phi's first d diagonal entries), u1, u2.
    pub omega: Vec<f64>,
    pub u1: Vec<f64>,
    pub u2: Vec<f64>,
    /// max |off-diagonal| / max |diagonal| of Phi and of Psi (acceptance test 9: < 0.15).
    pub phi_offdiag: f64,
    pub psi_offdiag: f64,
    /// |Phi[D, D]| / max |omega| (< 0.15).
    pub phi_last: f64,
    /// Coefficient of variation of Phi's first d diagonal entries (< 0.2).
    pub phi_diag_cv: f64,
    /// Under a constant covariance Sigma (C.3): per head omega = mean diag of Phi_11 Sigma and the
    /// relative distance ||Phi_11 Sigma - omega I|| / ||omega I||.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preconditioned: Option<Vec<(f64, f64)>>,
}

/// `icl analyze --json` of a transformer (multilayer paper §4.2, Table 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransformerAnalysis {
    /// `transformer`, or `iv stage 2` for the two-block IV model.
    pub block: String,
    pub looped: bool,
    /// <u1, omega>, <u2, omega>, eta_x, eta_y of the looped block (absent for non-looped stacks:
    /// see `layers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub u1_omega: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub u2_omega: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_x: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_y: Option<f64>,
    /// One entry per parameter set (one for a looped block, T otherwise).
    pub layers: Vec<LayerPattern>,
}

/// `icl analyze --json` of a one-layer attention model (He et al. 2025 §4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttentionAnalysis {
    pub heads: Vec<HeadAnalysis>,
    pub sign_matching: bool,
    pub omega_homogeneity: f64,
    pub gamma: f64,
    pub mu_plus: f64,
    pub mu_minus: f64,
    pub mu_sum: f64,
    pub zero_sum_ratio: f64,
    pub eta_eff: Option<f64>,
}

impl Analysis {
    /// From the core's report of a model after `step` steps.
    pub fn of(rep: &Report, step: u64) -> Self {
        Analysis {
            step,
            attention: Some(AttentionAnalysis::of(rep)),
            transformer: None,
            gpt2: None,
        }
    }
}

impl AttentionAnalysis {
    /// From the core's report of a one-layer model.
    pub fn of(rep: &Report) -> Self {
        AttentionAnalysis {
            heads: rep
                .heads
                .iter()
                .map(|h| HeadAnalysis {
                    omega: h.omega,
                    mu: h.mu,
                    kind: h.kind.as_str().into(),
                    mu_all: h.mu_all.clone(),
                    omega_diag: h.omega_diag.clone(),
                    offdiag_ratio: h.offdiag_ratio,
                    kq21_norm: h.kq21_norm,
                    ov21_norm: h.ov21_norm,
                    sign_match: h.sign_match,
                })
                .collect(),
            sign_matching: rep.sign_matching,
            omega_homogeneity: rep.omega_homogeneity,
            gamma: rep.gamma,
            mu_plus: rep.mu_plus,
            mu_minus: rep.mu_minus,
            mu_sum: rep.mu_sum,
            zero_sum_ratio: rep.zero_sum_ratio,
            eta_eff: rep.eta_eff,
        }
    }
}

/// One row of `icl eval --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalRow {
    pub estimator: String,
    #[serde(rename = "L")]
    pub len: usize,
    pub risk: f64,
    pub stderr: f64,
    /// The step size of a GD estimator (transformer runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta: Option<f64>,
    /// Algorithm 1's eta_x where an estimator tunes it (`eta` is then its eta_y).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_x: Option<f64>,
    /// The model's attention temperature (model rows; logits divided by tau).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tau: Option<f64>,
    /// Whether `tau` was chosen on held-out data (`--tau opt`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tau_opt: bool,
    /// The test-time shift keys that are set, e.g. `{"x_cov": 3.0}` (absent without a shift).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shift: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The shift keys that are set, as JSON (`{"x_cov": 3.0, "x_mean": "2e1"}`).
pub fn shift_json(s: &icl_core::config::ShiftConfig) -> serde_json::Map<String, serde_json::Value> {
    icl_core::config::shift::describe(s)
        .into_iter()
        .map(|(k, v)| {
            let key = k.strip_prefix("shift.").unwrap_or(&k).to_string();
            let tv = icl_core::config::parse_value_text(&v);
            (
                key,
                serde_json::to_value(&tv).unwrap_or(serde_json::Value::String(v)),
            )
        })
        .collect()
}

/// Model Sim / Grad Diff at one length (multilayer paper §4.7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlignmentRow {
    #[serde(rename = "L")]
    pub len: usize,
    pub samples: usize,
    pub model_sim: f64,
    pub grad_diff: f64,
    pub pred_diff: f64,
}

/// `icl eval --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalRows {
    pub rows: Vec<EvalRow>,
    pub samples: usize,
    pub seed: u64,
    pub engine: String,
    /// What the risks are measured against (`noise-free` for transformer runs: add sigma^2 for
    /// the noisy target; the errors are raw, not divided by d).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Algorithm 1's (eta_x, eta_y) per layer, taken from the model (transformer runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub etas: Vec<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alignment: Vec<AlignmentRow>,
    /// The test eigenvalue range, when it differs from the training range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda_range: Option<(f64, f64)>,
    /// How many times the trained block was applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<usize>,
    /// The covariate dimension (GPT-2 runs: the plot shows risk / d, Garg et al.'s Fig. 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d: Option<usize>,
    /// What the GPT-2 plot divides the squared error by: E y² of the task, as Garg et al.'s
    /// figures (d for linear functions and two-layer networks, k for sparse ones, 1 for trees).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalization: Option<f64>,
    /// The run's training length L (`task.len`), marked in the plot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_len: Option<usize>,
    /// The plot's L' axis is logarithmic (`--log-lengths`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub log_lengths: bool,
}

#[cfg(test)]
mod tests {
    /// JSON written by icl reads back to the same f64 (serde_json's `float_roundtrip`; without
    /// it the parser is off by one ulp for values such as this run clock).
    #[test]
    fn numbers_read_back_bit_for_bit() {
        for x in [
            0.38459658799999996f64,
            0.1 + 0.2,
            1e-300,
            2.0f64.sqrt(),
            8021.123456789012,
        ] {
            let back: f64 = serde_json::from_str(&super::pretty(&x)).unwrap();
            assert_eq!(back.to_bits(), x.to_bits(), "{x:e}");
        }
    }
}
