//! The options of every front end, declared once: each entry point's options are one struct
//! ([`TrainArgs`], [`EvalArgs`], [`ReproArgs`], [`SweepRunArgs`]) whose fields carry their
//! defaults (clap's `default_value`, which [`Default`] reads), help and CLI flag. From that one
//! struct:
//!
//! * the CLI derives its flags (`#[command(flatten)]`; a field `tau_holdout` is `--tau-holdout`);
//! * the C API and C++ read `keys[i]` = `values[i]` text pairs into it with [`from_pairs`] (serde;
//!   a field is a key of the same name, `tau_holdout`);
//! * Python maps keyword arguments onto it (`tau_holdout=`), by the field's [`Kind`] ([`fields`]).
//!
//! Each struct then resolves into what the run layer computes with (`EvalArgs::options`, ...),
//! where its ranges are checked, the same for every front end. A new option is one field here
//! (and its use in that resolution).
//!
//! Values are text, parsed as the CLI parses them: integers in decimal, `true`/`false` (or
//! `1`/`0`), numbers as Rust reads `f64`. A list field (`Vec<String>`: `--shift KEY=VALUE`,
//! repeatable) takes its items from keys `FIELD.KEY` = `VALUE` (`shift.x_cov` = `3`, one item
//! `x_cov=3`) or from one key `FIELD` = comma-separated items (`only` = `"a,b"`; `""`: none).
use crate::error::{Result, RunError};
use crate::eval::{
    parse_lambda_range, parse_lengths, temper_from_text, EvalOptions, MlEvalOptions,
};
use crate::repro::ReproOptions;
use crate::sweep::SweepRunOptions;
use crate::train::TrainOptions;
use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

// ------------------------------------------------------------------------------------------------
// The schemas.

pub use crate::eval::MC_SAMPLES;

/// The default checkpoint cadence, declared with the trainer (which reads it too).
pub use crate::train::CHECKPOINT_MINUTES;

/// Options of a training run (`icl train`, `icl_train_run`, `icl.train`).
#[derive(clap::Args, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TrainArgs {
    /// Number of optimiser steps, >= 1 (overrides train.steps, read as `--set train.steps=N`
    /// reads it: 10000, 1e4; with --resume, extends a finished run).
    #[arg(long, allow_negative_numbers = true, value_parser = steps_flag)]
    pub steps: Option<u64>,
    /// Random seed (overrides train.seed, read as `--set train.seed=N` reads it).
    #[arg(long, allow_negative_numbers = true, value_parser = seed_flag)]
    pub seed: Option<u64>,
    /// Engine: simd (default, the fastest built in), scalar or vulkan (see `icl bench`).
    #[arg(long)]
    pub engine: Option<String>,
    /// Replace an existing run folder, or discard an interrupted run in it.
    #[arg(long)]
    pub force: bool,
    /// Checkpoint every N steps (besides every --checkpoint-minutes and on Ctrl-C / SIGTERM).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub checkpoint_every: u64,
    /// Checkpoint every M minutes of training (0: off): a kill loses at most M minutes.
    #[arg(
        long,
        value_name = "M",
        default_value_t = CHECKPOINT_MINUTES,
        allow_negative_numbers = true
    )]
    pub checkpoint_minutes: f64,
    /// Monte Carlo samples for the final risk at the training length in summary.json (0 or 1:
    /// skip; a risk needs at least 2).
    #[arg(long, default_value_t = MC_SAMPLES, allow_negative_numbers = true)]
    pub eval_samples: usize,
}

/// Options of an evaluation (`icl eval`, `icl_eval_run`, `icl.Run.eval`).
#[derive(clap::Args, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EvalArgs {
    /// Test context lengths L', comma-separated (GPT-2 runs: every L from 0 to the longest
    /// given, within the model's positions).
    #[arg(long, default_value = "10,20,40,100", allow_negative_numbers = true)]
    pub lengths: List,
    /// Monte Carlo samples per length (>= 2).
    #[arg(long, default_value_t = MC_SAMPLES, allow_negative_numbers = true)]
    pub samples: usize,
    /// Seed of the evaluation streams.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub seed: u64,
    /// Engine for the model's predictions: simd (default, the fastest built in), scalar or
    /// vulkan.
    #[arg(long)]
    pub engine: Option<String>,
    /// Transformer runs: test eigenvalue range MIN,MAX (out of distribution, e.g. 1.1,1.5).
    #[arg(long, value_name = "MIN,MAX", allow_hyphen_values = true)]
    pub lambda_range: Option<String>,
    /// Transformer runs: apply the trained block k times (k T layers).
    #[arg(long, value_name = "K", allow_negative_numbers = true)]
    pub stack: Option<usize>,
    /// Transformer runs: also report the readout after every layer (model_t1.., alg1_t1..).
    #[arg(long)]
    pub layers_out: bool,
    /// Transformer runs: sequences per length for Model Sim / Grad Diff (0: none).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub alignment: usize,
    /// IV two-stage runs: a one-stage run folder to evaluate as "tf_ref" on the same sequences.
    #[arg(long = "ref", value_name = "DIR")]
    #[serde(rename = "ref")]
    pub reference: Option<PathBuf>,
    /// Attention temperatures, comma-separated: numbers > 0 and `opt` (chosen per length on
    /// held-out sequences of independent streams). Every attention logit is divided by tau.
    #[arg(long, value_name = "TAUS", allow_negative_numbers = true)]
    pub tau: Option<String>,
    /// Test-time shift KEY=VALUE (repeatable): x_cov, x_mean, w_cov, w_mean, noise (e.g.
    /// x_cov=3, x_mean=2e1 for 2 e_1, noise=1); `icl presets --keys` documents each.
    #[arg(long, value_name = "KEY=VALUE")]
    pub shift: Vec<String>,
    /// Held-out sequences per length for `--tau opt` (default 4096; only with opt among the
    /// temperatures).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub tau_holdout: Option<usize>,
    /// The plot's test-length axis (`--plot`) logarithmic (default: logarithmic only when the
    /// lengths span a factor 20 or more).
    #[arg(long)]
    pub log_lengths: bool,
}

/// Options of a paper's reproduction (`icl repro`, `icl_repro`, `icl.repro`), besides the paper
/// and the output folder.
#[derive(clap::Args, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ReproArgs {
    /// smoke (minutes on 2 cores, reductions stated per claim) or paper (the paper's sizes).
    #[arg(long, default_value = "smoke")]
    pub scale: String,
    /// Only these claims (comma-separated ids; the report lists them); only their runs are trained.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Runs trained at once (with `--engine vulkan`: packs of one-layer runs at once, docs/sweeps.md).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub jobs: usize,
    /// Engine (default: the fastest built in).
    #[arg(long)]
    pub engine: Option<String>,
    /// Override a config key in every trained run, e.g. `--set train.steps=50000` for runs
    /// shorter than the paper's (repeatable; report.json records it under "set").
    #[arg(long = "set", value_name = "KEY=VALUE")]
    #[serde(rename = "set")]
    pub sets: Vec<String>,
}

/// Options of a sweep's training (`icl sweep run` and `run-one`, `icl_sweep_run`,
/// `icl.sweep_run`).
#[derive(clap::Args, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SweepRunArgs {
    /// Runs at once (default 1; 0: one per core); the cores are shared between them. With
    /// `--engine vulkan`, packs at once: the one-layer runs of one shape train as one pack on
    /// one device, their steps in one call (docs/sweeps.md). Not with an index (`icl sweep
    /// run-one`).
    #[arg(long, allow_negative_numbers = true)]
    pub jobs: Option<usize>,
    /// Train only this run (its line in the manifest, from 0): `icl sweep run-one --index`.
    #[arg(skip)]
    pub index: Option<usize>,
    /// With `index`: train the K runs index·K .. index·K + K − 1 (K this; default 1), what a
    /// Slurm array task of `icl sweep slurm --runs-per-task K` trains; on the Vulkan engine the
    /// one-layer runs among them of one shape train as one pack. `icl sweep run-one
    /// --runs-per-task`.
    #[arg(skip)]
    pub runs_per_task: Option<usize>,
    /// Engine: simd (default), scalar or vulkan.
    #[arg(long)]
    pub engine: Option<String>,
    /// Monte Carlo samples for the final risk in each summary.json (0 or 1: skip; a risk needs
    /// at least 2).
    #[arg(long, default_value_t = MC_SAMPLES, allow_negative_numbers = true)]
    pub eval_samples: usize,
    /// Checkpoint every M minutes of training (0: off; Ctrl-C / SIGTERM always checkpoint): a
    /// kill loses at most M minutes of a run.
    #[arg(
        long,
        value_name = "M",
        default_value_t = CHECKPOINT_MINUTES,
        allow_negative_numbers = true
    )]
    pub checkpoint_minutes: f64,
    /// Checkpoint every N steps too (0: off).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub checkpoint_every: u64,
    /// Retrain complete runs too (replacing their folders).
    #[arg(long)]
    pub force: bool,
}

/// A comma-separated list given as one text (`--lengths 10,20,40`, `lengths` = `"10,20,40"`),
/// a list in Python (`lengths=[10, 20, 40]`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct List(pub String);

impl From<String> for List {
    fn from(s: String) -> Self {
        List(s)
    }
}

impl fmt::Display for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An options struct: its fields are the options of one entry point (see the module's doc).
pub trait Options:
    DeserializeOwned + Serialize + Default + clap::Args + clap::FromArgMatches
{
    /// What the options are of, in messages ("unknown evaluation option").
    const WHAT: &'static str;
}

impl Options for TrainArgs {
    const WHAT: &'static str = "train";
}
impl Options for EvalArgs {
    const WHAT: &'static str = "evaluation";
}
impl Options for ReproArgs {
    const WHAT: &'static str = "repro";
}
impl Options for SweepRunArgs {
    const WHAT: &'static str = "sweep";
}

/// The defaults of an options struct: its CLI's, with no flag given.
fn clap_default<T: clap::Args + clap::FromArgMatches>() -> T {
    let cmd = T::augment_args(clap::Command::new("icl").no_binary_name(true));
    // no field is required and every default parses (a test checks each struct)
    cmd.try_get_matches_from(std::iter::empty::<String>())
        .and_then(|m| T::from_arg_matches(&m))
        .unwrap_or_else(|e| panic!("the options' defaults: {e}"))
}

macro_rules! clap_defaults {
    ($($t:ty),*) => {$(
        impl Default for $t {
            /// Every field at its default (the CLI's without the flag).
            fn default() -> Self {
                clap_default()
            }
        }
    )*};
}

clap_defaults!(TrainArgs, EvalArgs, ReproArgs, SweepRunArgs);

/// The value of the integer config key `key` (`train.steps`, `train.seed`) from a flag's text,
/// read by the one parser of `--set KEY=TEXT` ([`icl_core::Config::set`]: `10000`, `1e4`), so
/// a flag and its key accept the same forms.
fn config_u64(
    key: &str,
    text: &str,
    read: fn(&icl_core::Config) -> u64,
) -> std::result::Result<u64, String> {
    let mut c = icl_core::Config::default();
    c.set(key, text).map_err(|e| e.to_string())?;
    Ok(read(&c))
}

fn steps_flag(text: &str) -> std::result::Result<u64, String> {
    config_u64("train.steps", text, |c| c.train.steps)
}

fn seed_flag(text: &str) -> std::result::Result<u64, String> {
    config_u64("train.seed", text, |c| c.train.seed)
}

/// One `KEY=VALUE` item of `--set` or `--shift` as (KEY, VALUE).
pub fn split_set(s: &str) -> Result<(&str, &str)> {
    s.split_once('=').ok_or_else(|| {
        RunError::Refused(format!(
            "--set {s:?}: expected KEY=VALUE, e.g. model.heads=4"
        ))
    })
}

// ------------------------------------------------------------------------------------------------
// Resolution: the checked options the run layer computes with.

impl TrainArgs {
    /// The training options (`checkpoint_minutes` a number >= 0; `preset`: where the config
    /// came from, for the summary). `steps` and `seed` are applied to the config by
    /// [`TrainArgs::apply`].
    pub fn options(&self, preset: Option<String>) -> Result<TrainOptions> {
        let m = self.checkpoint_minutes;
        if !(m >= 0.0) || m.is_infinite() {
            return Err(RunError::Refused(
                "--checkpoint-minutes must be a number >= 0".into(),
            ));
        }
        let o = TrainOptions {
            engine: self.engine.clone(),
            preset,
            force: self.force,
            eval_samples: self.eval_samples,
            checkpoint_every: self.checkpoint_every,
            checkpoint_seconds: 60.0 * m,
            pack: None,
        };
        o.check()?;
        Ok(o)
    }

    /// `steps` and `seed` set into `cfg` (`train.steps`, `train.seed`), then the config checked.
    pub fn apply(&self, cfg: &mut icl_core::Config) -> Result<()> {
        if let Some(s) = self.steps {
            cfg.set("train.steps", &s.to_string())?;
        }
        if let Some(s) = self.seed {
            cfg.set("train.seed", &s.to_string())?;
        }
        cfg.validate()?;
        Ok(())
    }

    /// The options of a resumed run, which keeps its own config: a `seed` or `force` is refused.
    pub fn resume_options(&self) -> Result<TrainOptions> {
        if self.seed.is_some() || self.force {
            return Err(RunError::Refused(
                "a resumed run keeps its own config and folder: seed and force are refused with it"
                    .into(),
            ));
        }
        self.options(None)
    }
}

impl EvalArgs {
    /// [`crate::eval::eval_run`] of the run in `dir` with these options, as every front end
    /// takes them (`icl eval`'s flags, the C API's pairs, Python's keywords): checked
    /// ([`EvalArgs::options`]), and the plot's choices (`--log-lengths`) recorded in the rows for
    /// [`crate::eval::write_risk_plot`].
    pub fn eval(&self, dir: &crate::folder::RunDir) -> Result<crate::summary::EvalRows> {
        let mut res = crate::eval::eval_run(dir, &self.options()?)?;
        res.log_lengths = self.log_lengths;
        Ok(res)
    }

    /// The checked evaluation options: lengths in 1..=2^20, samples >= 2, temperatures and
    /// shifts as [`temper_from_text`] reads them.
    pub fn options(&self) -> Result<EvalOptions> {
        let o = EvalOptions {
            lengths: parse_lengths(&self.lengths.0)?,
            samples: self.samples,
            seed: self.seed,
            engine: self.engine.clone(),
            multilayer: MlEvalOptions {
                lambda_range: self
                    .lambda_range
                    .as_deref()
                    .map(parse_lambda_range)
                    .transpose()?,
                stack: self.stack,
                layers_out: self.layers_out,
                alignment: self.alignment,
                reference: self.reference.clone(),
            },
            temper: temper_from_text(self.tau.as_deref(), &self.shift, self.tau_holdout)?,
        };
        crate::eval::check(&o)?;
        Ok(o)
    }
}

impl ReproArgs {
    /// The checked options of reproducing `paper` into `out` ([`ReproOptions::new`] and
    /// [`ReproOptions::with_set`]).
    pub fn options(&self, paper: &str, out: impl Into<PathBuf>) -> Result<ReproOptions> {
        let sets = self
            .sets
            .iter()
            .map(|s| split_set(s))
            .collect::<Result<Vec<_>>>()?;
        ReproOptions::new(
            paper,
            &self.scale,
            &self.only,
            self.jobs,
            self.engine.as_deref(),
            out,
        )?
        .with_set(&sets)
    }
}

impl SweepRunArgs {
    /// The checked options ([`SweepRunOptions::new`]): `jobs` (default 1) or `index` (with
    /// `runs_per_task`), not both.
    pub fn options(&self) -> Result<SweepRunOptions> {
        if self.index.is_some() && self.jobs.is_some() {
            return Err(RunError::Refused(
                "give jobs (every run, that many at once) or index (one run), not both".into(),
            ));
        }
        if self.runs_per_task.is_some() && self.index.is_none() {
            return Err(RunError::Refused(
                "runs_per_task goes with index (the runs of one array task)".into(),
            ));
        }
        SweepRunOptions::new(
            self.jobs.unwrap_or(1),
            self.index.map(|i| (i, self.runs_per_task.unwrap_or(1))),
            self.engine.as_deref(),
            self.eval_samples,
            self.checkpoint_minutes,
            self.checkpoint_every,
            self.force,
        )
    }
}

// ------------------------------------------------------------------------------------------------
// The fields of a struct and their kinds.

/// What a field takes, as front ends without flags see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `true` or `false`.
    Bool,
    /// A non-negative integer.
    Int,
    /// A number.
    Float,
    /// Text (a name, a path, a list written out: `"0.5,1,opt"`).
    Text,
    /// A comma-separated list ([`List`]): in Python only a list.
    List,
    /// Repeatable items (`Vec<String>`): keys `FIELD.KEY`, or one comma-separated text.
    Items,
}

/// One field of an options struct.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Field {
    /// Its name: the C key and Python keyword (the CLI flag is `--` and the name with `-`).
    pub name: &'static str,
    pub kind: Kind,
    /// Whether unset means "none" (an `Option`) rather than a default value.
    pub optional: bool,
}

impl Field {
    /// The CLI flag of the field (`tau_holdout`: `--tau-holdout`).
    pub fn flag(&self) -> String {
        format!("--{}", self.name.replace('_', "-"))
    }
}

/// The fields of options struct `T`, in declaration order, found by deserializing it from a
/// probe that records what each field asks for.
pub fn fields<T: DeserializeOwned>() -> Vec<Field> {
    let mut out = Vec::new();
    let _ = T::deserialize(Probe { out: &mut out });
    out
}

/// A deserializer that answers a struct's fields with placeholder values, recording each field's
/// name and the kind its type asks for.
struct Probe<'a> {
    out: &'a mut Vec<Field>,
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = TextError;
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        names: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        visitor.visit_map(ProbeMap {
            names,
            i: 0,
            out: self.out,
        })
    }
    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> std::result::Result<V::Value, TextError> {
        Err(de::Error::custom("not an options struct"))
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

struct ProbeMap<'a> {
    names: &'static [&'static str],
    i: usize,
    out: &'a mut Vec<Field>,
}

impl<'de> de::MapAccess<'de> for ProbeMap<'_> {
    type Error = TextError;
    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> std::result::Result<Option<K::Value>, TextError> {
        let Some(name) = self.names.get(self.i) else {
            return Ok(None);
        };
        seed.deserialize(name.into_deserializer()).map(Some)
    }
    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> std::result::Result<V::Value, TextError> {
        let name = self.names[self.i];
        self.i += 1;
        let mut f = Field {
            name,
            kind: Kind::Text,
            optional: false,
        };
        let mut kind = None;
        let v = seed.deserialize(ProbeValue {
            kind: &mut kind,
            optional: &mut f.optional,
        })?;
        f.kind = kind.unwrap_or(Kind::Text);
        self.out.push(f);
        Ok(v)
    }
}

/// One field's value in a [`Probe`]: records the first kind asked for, answers a placeholder.
struct ProbeValue<'a> {
    kind: &'a mut Option<Kind>,
    optional: &'a mut bool,
}

impl ProbeValue<'_> {
    fn is(&mut self, k: Kind) {
        self.kind.get_or_insert(k);
    }
}

impl<'de> de::Deserializer<'de> for ProbeValue<'_> {
    type Error = TextError;
    fn deserialize_any<V: Visitor<'de>>(
        mut self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        self.is(Kind::Text);
        visitor.visit_str("")
    }
    fn deserialize_bool<V: Visitor<'de>>(
        mut self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        self.is(Kind::Bool);
        visitor.visit_bool(false)
    }
    fn deserialize_u64<V: Visitor<'de>>(
        mut self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        self.is(Kind::Int);
        visitor.visit_u64(0)
    }
    fn deserialize_u32<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        self.deserialize_u64(visitor)
    }
    fn deserialize_f64<V: Visitor<'de>>(
        mut self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        self.is(Kind::Float);
        visitor.visit_f64(0.0)
    }
    fn deserialize_option<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        *self.optional = true;
        visitor.visit_some(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(
        mut self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        self.is(Kind::Items);
        visitor.visit_seq(de::value::SeqDeserializer::<_, TextError>::new(
            std::iter::empty::<String>(),
        ))
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        mut self,
        name: &'static str,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        if name == "List" {
            self.is(Kind::List);
        }
        visitor.visit_newtype_struct(self)
    }
    serde::forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u128 f32 char str string bytes byte_buf
        unit unit_struct tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// The options structs by entry point: `train`, `eval`, `repro`, `sweep_run`.
pub const NAMES: &[&str] = &["train", "eval", "repro", "sweep_run"];

/// The fields of the options of entry point `name` ([`NAMES`]) as JSON: `[{"name", "kind",
/// "optional", "default", "flag", "help"}]` (`flag` null where the CLI has no flag of its own
/// for the field: `index`, which is `icl sweep run-one --index`); an unknown name is
/// [`RunError::UnknownName`].
pub fn schema(name: &str) -> Result<serde_json::Value> {
    Ok(match name {
        "train" => schema_of::<TrainArgs>(),
        "eval" => schema_of::<EvalArgs>(),
        "repro" => schema_of::<ReproArgs>(),
        "sweep_run" => schema_of::<SweepRunArgs>(),
        _ => {
            return Err(RunError::UnknownName(format!(
                "options {name:?} ({})",
                NAMES.join(", ")
            )))
        }
    })
}

fn schema_of<T: Options>() -> serde_json::Value {
    let defaults = serde_json::to_value(T::default()).unwrap_or_default();
    let cmd = T::augment_args(clap::Command::new("icl"));
    let rows: Vec<serde_json::Value> = fields::<T>()
        .iter()
        .map(|f| {
            let flag = f.flag();
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long().is_some_and(|l| flag == format!("--{l}")));
            serde_json::json!({
                "name": f.name,
                "kind": f.kind,
                "optional": f.optional,
                "default": defaults.get(f.name).cloned().unwrap_or_default(),
                "flag": arg.map(|_| flag),
                "help": arg.and_then(|a| a.get_help()).map(|h| h.to_string()),
            })
        })
        .collect();
    serde_json::Value::Array(rows)
}

// ------------------------------------------------------------------------------------------------
// Text pairs into a struct.

/// The error of reading text into options (a [`RunError::Refused`] for the caller).
#[derive(Debug)]
pub struct TextError(String);

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TextError {}

impl de::Error for TextError {
    fn custom<M: fmt::Display>(msg: M) -> Self {
        TextError(msg.to_string())
    }
}

impl From<TextError> for RunError {
    fn from(e: TextError) -> Self {
        RunError::Refused(e.0)
    }
}

/// Options struct `T` from `keys[i]` = `values[i]` text pairs, for front ends without a flag
/// parser (the C API, C++, Python): each key a field of `T` ([`fields`]), or `FIELD.KEY` for
/// an item of a list field; unset fields take their defaults. An unknown or repeated key, or a
/// value not of its field's kind, is [`RunError::Refused`]; the values' ranges are checked when
/// the options are resolved.
pub fn from_pairs<T: Options, K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> Result<T> {
    let what = T::WHAT;
    let fields = fields::<T>();
    let mut seen = BTreeSet::new();
    let mut given: Vec<(&'static str, Text)> = Vec::new();
    for (k, v) in pairs {
        let (k, v) = (k.as_ref().trim(), v.as_ref().trim());
        if !seen.insert(k.to_string()) {
            return Err(RunError::Refused(format!("{what} option {k} given twice")));
        }
        let item = fields.iter().find_map(|f| {
            let rest = k.strip_prefix(f.name)?.strip_prefix('.')?;
            (f.kind == Kind::Items).then(|| (f.name, format!("{rest}={v}")))
        });
        if let Some((name, item)) = item {
            match given.iter_mut().find(|(n, _)| *n == name) {
                Some((_, Text::Items(items))) => items.push(item),
                // `FIELD` = "a,b" and `FIELD.KEY` = ... together
                Some(_) => {
                    return Err(RunError::Refused(format!(
                        "{what} option {name} given twice"
                    )))
                }
                None => given.push((name, Text::Items(vec![item]))),
            }
            continue;
        }
        let Some(f) = fields.iter().find(|f| f.name == k) else {
            let names: Vec<String> = fields
                .iter()
                .map(|f| match f.kind {
                    Kind::Items => format!("{}.KEY", f.name),
                    _ => f.name.to_string(),
                })
                .collect();
            return Err(RunError::Refused(format!(
                "unknown {what} option {k:?} ({})",
                names.join(", ")
            )));
        };
        if given.iter().any(|(n, _)| *n == f.name) {
            return Err(RunError::Refused(format!(
                "{what} option {} given twice",
                f.name
            )));
        }
        given.push((f.name, Text::One(v.to_string())));
    }
    let map = PairsMap {
        items: given.into_iter(),
        value: None,
    };
    Ok(T::deserialize(de::value::MapAccessDeserializer::new(map))?)
}

/// A field's text: one value, or list items.
enum Text {
    One(String),
    Items(Vec<String>),
}

struct PairsMap {
    items: std::vec::IntoIter<(&'static str, Text)>,
    value: Option<(&'static str, Text)>,
}

impl<'de> de::MapAccess<'de> for PairsMap {
    type Error = TextError;
    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> std::result::Result<Option<K::Value>, TextError> {
        let Some((k, t)) = self.items.next() else {
            return Ok(None);
        };
        self.value = Some((k, t));
        seed.deserialize(k.into_deserializer()).map(Some)
    }
    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> std::result::Result<V::Value, TextError> {
        let (key, text) = self
            .value
            .take()
            .ok_or_else(|| de::Error::custom("a value without its key"))?;
        seed.deserialize(TextValue { key, text })
    }
}

/// One field's text, parsed by the kind its type asks for.
struct TextValue {
    key: &'static str,
    text: Text,
}

impl TextValue {
    fn one(&self) -> std::result::Result<&str, TextError> {
        match &self.text {
            Text::One(s) => Ok(s),
            Text::Items(_) => Err(de::Error::custom(format!(
                "{} takes one value, not {}.KEY items",
                self.key, self.key
            ))),
        }
    }
    /// An unsigned integer, in the range of `max`.
    fn unsigned(&self, max: u64) -> std::result::Result<u64, TextError> {
        let v = self.one()?;
        let k = self.key;
        v.parse::<u64>().ok().filter(|&x| x <= max).ok_or_else(|| {
            let digits = v.strip_prefix('-').unwrap_or(v);
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                TextError(format!(
                    "{k} = {v} is outside 0..={max}, the range of this option"
                ))
            } else {
                TextError(format!("{k} = {v:?} is not a non-negative integer"))
            }
        })
    }
}

impl<'de> de::Deserializer<'de> for TextValue {
    type Error = TextError;
    fn deserialize_any<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        match self.text {
            Text::One(s) => visitor.visit_string(s),
            Text::Items(v) => visitor.visit_seq(de::value::SeqDeserializer::new(v.into_iter())),
        }
    }
    fn deserialize_bool<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        match self.one()? {
            "true" | "1" => visitor.visit_bool(true),
            "false" | "0" => visitor.visit_bool(false),
            v => Err(TextError(format!(
                "{} = {v:?} is not true or false",
                self.key
            ))),
        }
    }
    fn deserialize_u64<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        visitor.visit_u64(self.unsigned(u64::MAX)?)
    }
    fn deserialize_u32<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        visitor.visit_u64(self.unsigned(u32::MAX as u64)?)
    }
    fn deserialize_f64<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        let v = self.one()?;
        let x = v
            .parse::<f64>()
            .map_err(|_| TextError(format!("{} = {v:?} is not a number", self.key)))?;
        visitor.visit_f64(x)
    }
    fn deserialize_option<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        visitor.visit_some(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        let items = match self.text {
            Text::Items(v) => v,
            Text::One(s) if s.is_empty() => Vec::new(),
            Text::One(s) => s.split(',').map(str::to_string).collect(),
        };
        visitor.visit_seq(de::value::SeqDeserializer::new(items.into_iter()))
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> std::result::Result<V::Value, TextError> {
        visitor.visit_newtype_struct(self)
    }
    serde::forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u128 f32 char str string bytes byte_buf
        unit unit_struct tuple tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default checkpoint cadence is declared once ([`CHECKPOINT_MINUTES`], at most half a
    /// minute, so a kill loses at most 30 s of work); the docs of every front end say its value.
    #[test]
    fn the_checkpoint_default_is_what_every_front_end_documents() {
        const { assert!(CHECKPOINT_MINUTES > 0.0 && CHECKPOINT_MINUTES <= 0.5) };
        assert_eq!(
            TrainOptions::default().checkpoint_seconds,
            60.0 * CHECKPOINT_MINUTES
        );
        assert_eq!(
            SweepRunArgs::default().checkpoint_minutes,
            CHECKPOINT_MINUTES
        );
        let m = CHECKPOINT_MINUTES;
        for (file, text, want) in [
            (
                "docs/run-folders.md",
                include_str!("../../../docs/run-folders.md"),
                format!("`--checkpoint-minutes` (default {m}"),
            ),
            (
                "ffi/src/c/train.rs",
                include_str!("../../../ffi/src/c/train.rs"),
                format!("`checkpoint_minutes` (default `\"{m}\"`"),
            ),
            (
                "ffi/src/c/sweep.rs",
                include_str!("../../../ffi/src/c/sweep.rs"),
                format!("`checkpoint_minutes` (default `\"{m}\"`"),
            ),
            (
                "ffi/python/README.md",
                include_str!("../../../ffi/python/README.md"),
                format!("checkpoint_minutes={m}"),
            ),
        ] {
            assert!(text.contains(&want), "{file} does not say {want}");
        }
    }

    #[test]
    fn defaults_are_the_clis() {
        let e = EvalArgs::default();
        assert_eq!(e.lengths.0, "10,20,40,100");
        assert_eq!((e.samples, e.seed, e.alignment), (20_000, 0, 0));
        assert!(e.shift.is_empty() && e.tau.is_none() && !e.layers_out);
        let t = TrainArgs::default();
        assert_eq!((t.eval_samples, t.checkpoint_every), (20_000, 0));
        assert_eq!(t.checkpoint_minutes, CHECKPOINT_MINUTES);
        let r = ReproArgs::default();
        assert_eq!((r.scale.as_str(), r.jobs), ("smoke", 1));
        let s = SweepRunArgs::default();
        assert_eq!((s.jobs, s.index, s.eval_samples), (None, None, 20_000));
    }

    #[test]
    fn fields_and_kinds_are_read_from_the_struct() {
        let f = fields::<EvalArgs>();
        let names: Vec<&str> = f.iter().map(|f| f.name).collect();
        // in declaration order, `ref` by its serde name
        assert_eq!(names[..4], ["lengths", "samples", "seed", "engine"]);
        assert!(
            names.contains(&"ref") && names.contains(&"tau_holdout"),
            "{names:?}"
        );
        let kind = |n: &str| f.iter().find(|f| f.name == n).map(|f| (f.kind, f.optional));
        assert_eq!(kind("lengths"), Some((Kind::List, false)));
        assert_eq!(kind("samples"), Some((Kind::Int, false)));
        assert_eq!(kind("stack"), Some((Kind::Int, true)));
        assert_eq!(kind("layers_out"), Some((Kind::Bool, false)));
        assert_eq!(kind("ref"), Some((Kind::Text, true)));
        assert_eq!(kind("shift"), Some((Kind::Items, false)));
        let t = fields::<TrainArgs>();
        assert_eq!(
            t.iter()
                .find(|f| f.name == "checkpoint_minutes")
                .map(|f| f.kind),
            Some(Kind::Float)
        );
    }

    #[test]
    fn pairs_read_text_as_the_cli_does() {
        let e: EvalArgs = from_pairs(&[
            ("samples", " 300"),
            ("layers_out", "1"),
            ("shift.x_cov", "3"),
            ("shift.noise", "1"),
            ("ref", "runs/a"),
            ("lengths", "10,20"),
        ])
        .unwrap();
        assert_eq!(e.samples, 300);
        assert!(e.layers_out);
        assert_eq!(e.shift, ["x_cov=3", "noise=1"]);
        assert_eq!(e.reference, Some(PathBuf::from("runs/a")));
        assert_eq!(e.lengths.0, "10,20");
        assert_eq!(e.seed, 0);
        let r: ReproArgs = from_pairs(&[("only", "a,b"), ("set.train.steps", "5")]).unwrap();
        assert_eq!(r.only, ["a", "b"]);
        assert_eq!(r.sets, ["train.steps=5"]);
        let r: ReproArgs = from_pairs(&[("only", "")]).unwrap();
        assert!(r.only.is_empty());
        for (pairs, want) in [
            (vec![("samples", "x")], "is not a non-negative integer"),
            (vec![("samples", "-2")], "is outside 0..="),
            (vec![("seed", "18446744073709551616")], "is outside 0..="),
            (vec![("layers_out", "yes")], "true or false"),
            (vec![("nope", "1")], "unknown evaluation option \"nope\""),
            (vec![("seed", "1"), (" seed", "2")], "given twice"),
            (
                vec![("shift.x_cov", "1"), ("shift.x_cov", "2")],
                "given twice",
            ),
            (vec![("samples.x", "1")], "unknown evaluation option"),
        ] {
            let e = from_pairs::<EvalArgs, _, _>(&pairs)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{pairs:?}: {e}");
        }
        let t = from_pairs::<TrainArgs, _, _>(&[("checkpoint_minutes", "x")]);
        assert!(t.unwrap_err().to_string().contains("is not a number"));
    }
}
