//! The C++ API: a `cxx` bridge in namespace `icl`. Handles are C++ classes owned by
//! `rust::Box<T>` (RAII: freed when the box goes out of scope); every failure throws `rust::Error`
//! (a `std::exception`) whose `what()` is the same message the C API leaves in `icl_last_error()`.
//! Panics are caught before they reach the bridge. C++ code includes `include/icl.hpp`, which
//! includes the generated `include/icl/bridge.h` and cxx's `include/rust/cxx.h` (both checked
//! against this build's by a test).
use crate::c::{FromPairs, Raw};
use crate::handles::{
    batch_from, icl_config, icl_model, icl_task, icl_trainer, Dims, HasModel, HeadCircuits,
    LogEntry,
};
use crate::status::{guard_cxx, FfiResult};
use icl_core::budget::try_vec;
use icl_core::rng::Domain;
use std::path::Path;
use std::pin::Pin;
use std::sync::Mutex;

/// The C++ header `cxx` generated for this build; it ships as `include/icl/bridge.h` (a test in
/// `tests/tests/ffi_header.rs` keeps the two equal).
pub const GENERATED_HEADER: &str = include_str!(concat!(
    env!("OUT_DIR"),
    "/cxxbridge/include/icl-ffi/src/cxx.rs.h"
));

/// cxx's own header (`rust::Box`, `rust::Error`, ...) of this build; it ships as
/// `include/rust/cxx.h`.
pub const CXX_HEADER: &str =
    include_str!(concat!(env!("OUT_DIR"), "/cxxbridge/include/rust/cxx.h"));

#[cxx::bridge(namespace = "icl")]
pub mod bridge {
    /// Shape of a task sampler, model or trainer (heads = n_params = 0 for a sampler).
    #[derive(Debug, Clone, PartialEq)]
    pub struct Dims {
        pub d: usize,
        pub n_out: usize,
        pub heads: usize,
        pub n_params: usize,
        pub train_len: usize,
        pub is_f64: bool,
    }

    /// A token-major batch: token l of sequence b is `z[(b (len+1) + l) (d+n_out) ..]`, x then y,
    /// the query last with y-slots 0; targets `y[b n_out ..]`.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Batch {
        pub n: usize,
        pub len: usize,
        pub d: usize,
        pub n_out: usize,
        pub z: Vec<f64>,
        pub y: Vec<f64>,
    }

    /// Per-head circuits: omega (H values), mu (H x n_out, head-major).
    #[derive(Debug, Clone, PartialEq)]
    pub struct Circuits {
        pub omega: Vec<f64>,
        pub mu: Vec<f64>,
    }

    /// A Monte Carlo risk and its standard error.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Risk {
        pub risk: f64,
        pub std_error: f64,
        pub samples: usize,
    }

    /// A loss and its gradient with respect to the flat parameters.
    #[derive(Debug, Clone, PartialEq)]
    pub struct LossGrad {
        pub loss: f64,
        pub grad: Vec<f64>,
    }

    /// A row of the training log (as in `metrics.csv`): the step, the loss, the per-head omega
    /// and mu (first output) columns (empty for the `eigs` task and multi-layer models, whose
    /// logs hold other columns), and the whole row in `Trainer::log_columns` order.
    #[derive(Debug, Clone, PartialEq)]
    pub struct LogRow {
        pub step: u64,
        pub loss: f64,
        pub omega: Vec<f64>,
        pub mu: Vec<f64>,
        pub values: Vec<f64>,
    }

    unsafe extern "C++" {
        include!("icl/progress.h");
        /// Receives the progress of `repro_with_progress` (`icl/progress.h`).
        type ReproProgress;
        /// Receives the progress of `sweep_run_with_progress` (`icl/progress.h`).
        type SweepProgress;
        fn on_event(
            self: Pin<&mut ReproProgress>,
            name: &str,
            index: usize,
            count: usize,
            event: &str,
        ) -> Result<()>;
        fn on_step(
            self: Pin<&mut SweepProgress>,
            index: usize,
            step: u64,
            total: u64,
            loss: f64,
        ) -> Result<bool>;
    }

    extern "Rust" {
        /// The library version.
        fn version() -> String;
        /// The engine `icl train` uses without `--engine`.
        fn default_engine() -> String;

        /// A run configuration.
        #[cxx_name = "Config"]
        type icl_config;
        /// The configuration of a preset.
        fn config_preset(name: &str) -> Result<Box<icl_config>>;
        /// A configuration from TOML text (defaults: the he2025 preset).
        fn config_from_toml(toml: &str) -> Result<Box<icl_config>>;
        /// Set a dotted key (value checked now; the config is unchanged on failure).
        #[cxx_name = "set"]
        fn cpp_set(self: &mut icl_config, key: &str, value: &str) -> Result<()>;
        /// The value of a key as text.
        #[cxx_name = "get"]
        fn cpp_get(self: &icl_config, key: &str) -> Result<String>;
        /// Check the rules that involve several keys.
        #[cxx_name = "validate"]
        fn cpp_validate(self: &icl_config) -> Result<()>;
        /// The configuration as TOML text.
        #[cxx_name = "to_toml"]
        fn cpp_to_toml(self: &icl_config) -> String;

        /// A task sampler.
        #[cxx_name = "TaskSampler"]
        type icl_task;
        /// The sampler of a configuration.
        fn task_sampler(cfg: &icl_config) -> Result<Box<icl_task>>;
        /// Shape (d, n_out, train_len).
        #[cxx_name = "dims"]
        fn cpp_dims(self: &icl_task) -> Dims;
        /// n sequences of context length len from streams (seed, train or eval, step, b).
        #[cxx_name = "sample"]
        fn cpp_sample(
            self: &icl_task,
            seed: u64,
            eval: bool,
            step: u64,
            n: usize,
            len: usize,
        ) -> Result<Batch>;

        /// A model and its engine.
        #[cxx_name = "Model"]
        type icl_model;
        /// A freshly initialised model of a configuration.
        fn model_new(cfg: &icl_config) -> Result<Box<icl_model>>;
        /// Load a checkpoint (the model.safetensors of `icl train`).
        fn model_load(path: &str) -> Result<Box<icl_model>>;
        /// Write a checkpoint.
        #[cxx_name = "save"]
        fn cpp_save(self: &icl_model, path: &str) -> Result<()>;
        /// Run with another engine.
        #[cxx_name = "set_engine"]
        fn cpp_set_engine(self: &mut icl_model, name: &str) -> Result<()>;
        /// Shape.
        #[cxx_name = "dims"]
        fn cpp_dims(self: &icl_model) -> Dims;
        /// A copy of the model's configuration.
        #[cxx_name = "config"]
        fn cpp_config(self: &icl_model) -> Box<icl_config>;
        /// Predictions [n][n_out] for contexts x [n][len][d], y [n][len][n_out], queries xq [n][d].
        #[cxx_name = "predict"]
        fn cpp_predict(
            self: &mut icl_model,
            n: usize,
            len: usize,
            x: &[f64],
            y: &[f64],
            xq: &[f64],
        ) -> Result<Vec<f64>>;
        /// Predictions on n prompts of k pairs (xs [n][k][d], ys [n][k]): [n][k] for GPT-2 models
        /// (the prediction at every x position), [n][n_out] otherwise (the last x as the query).
        #[cxx_name = "predict_prompts"]
        fn cpp_predict_prompts(
            self: &mut icl_model,
            n: usize,
            k: usize,
            xs: &[f64],
            ys: &[f64],
        ) -> Result<Vec<f64>>;
        /// Predictions [n][n_out] for a batch.
        #[cxx_name = "predict_batch"]
        fn cpp_predict_batch(self: &mut icl_model, batch: &Batch) -> Result<Vec<f64>>;
        /// Loss and parameter gradient on a batch.
        #[cxx_name = "loss_grad"]
        fn cpp_loss_grad(self: &mut icl_model, batch: &Batch) -> Result<LossGrad>;
        /// Flat parameters.
        #[cxx_name = "params"]
        fn cpp_params(self: &icl_model) -> Vec<f64>;
        /// Replace the flat parameters.
        #[cxx_name = "set_params"]
        fn cpp_set_params(self: &mut icl_model, params: &[f64]) -> Result<()>;
        /// Per-head circuits.
        #[cxx_name = "circuits"]
        fn cpp_circuits(self: &icl_model) -> Result<Circuits>;
        /// Monte Carlo risk at test length len on the model's own task.
        #[cxx_name = "risk"]
        fn cpp_risk(self: &mut icl_model, len: usize, samples: usize, seed: u64) -> Result<Risk>;
        /// Monte Carlo risk at test length len on another task.
        #[cxx_name = "risk_on"]
        fn cpp_risk_on(
            self: &mut icl_model,
            task: &icl_task,
            len: usize,
            samples: usize,
            seed: u64,
        ) -> Result<Risk>;

        /// The training loop of `icl train`.
        #[cxx_name = "Trainer"]
        type icl_trainer;
        /// A trainer for a configuration with the named engine ("" = the default engine).
        fn trainer_new(cfg: &icl_config, engine: &str) -> Result<Box<icl_trainer>>;
        /// A trainer continuing from a checkpoint: with the trainer state of `icl train` or
        /// `Trainer::save` it continues bit for bit (optimiser moments, log, step); from a model
        /// checkpoint it starts a fresh optimiser at the saved parameters and step.
        fn trainer_from_checkpoint(path: &str, engine: &str) -> Result<Box<icl_trainer>>;
        /// Run steps on the trainer's own batches; returns their mean loss.
        #[cxx_name = "train"]
        fn cpp_train(self: &mut icl_trainer, steps: u64) -> Result<f64>;
        /// Run steps; returns the loss of each.
        #[cxx_name = "train_losses"]
        fn cpp_train_losses(self: &mut icl_trainer, steps: u64) -> Result<Vec<f64>>;
        /// One step on a caller's batch; returns its loss.
        #[cxx_name = "step_batch"]
        fn cpp_step_batch(self: &mut icl_trainer, batch: &Batch) -> Result<f64>;
        /// Steps completed.
        #[cxx_name = "step_count"]
        fn cpp_step_count(self: &icl_trainer) -> u64;
        /// The engine's name.
        #[cxx_name = "engine"]
        fn cpp_engine(self: &icl_trainer) -> String;
        /// Shape.
        #[cxx_name = "dims"]
        fn cpp_dims(self: &icl_trainer) -> Dims;
        /// Flat parameters.
        #[cxx_name = "params"]
        fn cpp_params(self: &icl_trainer) -> Vec<f64>;
        /// Replace the flat parameters (optimiser state kept).
        #[cxx_name = "set_params"]
        fn cpp_set_params(self: &mut icl_trainer, params: &[f64]) -> Result<()>;
        /// Per-head circuits.
        #[cxx_name = "circuits"]
        fn cpp_circuits(self: &icl_trainer) -> Result<Circuits>;
        /// A copy of the current model.
        #[cxx_name = "model"]
        fn cpp_model(self: &icl_trainer) -> Result<Box<icl_model>>;
        /// Write the current model as a checkpoint.
        #[cxx_name = "save"]
        fn cpp_save(self: &icl_trainer, path: &str) -> Result<()>;
        /// The training log.
        #[cxx_name = "log"]
        fn cpp_log(self: &icl_trainer) -> Vec<LogRow>;
        /// The names of the log's columns (the header of `metrics.csv`: step, loss, then every
        /// logged quantity), the order of `LogRow::values`.
        #[cxx_name = "log_columns"]
        fn cpp_log_columns(self: &icl_trainer) -> Vec<String>;

        /// Every theory quantity as JSON (`icl theory --list --json`).
        fn theory_list() -> Result<String>;
        /// Evaluate a theory quantity with parameters as text; the result as JSON
        /// (`icl theory NAME --json`).
        fn theory_eval(name: &str, keys: &Vec<String>, values: &Vec<String>) -> Result<String>;
        /// Evaluate a theory quantity; its main value as numbers (one for a scalar quantity).
        fn theory_value(name: &str, keys: &Vec<String>, values: &Vec<String>) -> Result<Vec<f64>>;

        /// The options of an entry point (`"train"`, `"eval"`, `"repro"`, `"sweep_run"`) as JSON,
        /// as `icl_options_list` in `icl.h` gives them.
        fn options_list(name: &str) -> Result<String>;
        /// Train `cfg` into the run folder `out_dir` like `icl train --out OUT_DIR` and return
        /// the text of its `summary.json`; options as `icl_train_run` in `icl.h` takes them
        /// (`steps`, `seed`, `engine`, `force`, `eval_samples`, `checkpoint_every`,
        /// `checkpoint_minutes`). Blocks until the run is done; prints nothing. Throws where
        /// `icl_train_run` returns a status; every bad option is reported before training.
        fn train_run(
            cfg: &icl_config,
            out_dir: &str,
            keys: &Vec<String>,
            values: &Vec<String>,
        ) -> Result<String>;
        /// Evaluate the run folder `dir` like `icl eval DIR --json` and return that JSON
        /// (`{"rows": [{"estimator", "L", "risk", "stderr", ...}], ...}`), the options as text
        /// pairs `keys[i]` = `values[i]` exactly as `icl_eval_run` in `icl.h` takes them
        /// (`lengths` = `"10,20,40"`, `samples`, `seed`, `engine`, `tau`, `shift.*`, and for
        /// transformer runs `lambda_range`, `stack`, `layers_out`, `alignment`, `ref`). Throws
        /// where `icl_eval_run` returns a status (the same message). Nothing is written.
        fn eval_run(dir: &str, keys: &Vec<String>, values: &Vec<String>) -> Result<String>;
        /// Draw evaluation rows (the JSON `eval_run` returns) against L', with error bars, into
        /// `path`: PNG if it ends in `.png`, SVG otherwise (`icl eval --plot`). Throws where
        /// `icl_eval_plot` returns a status.
        fn eval_plot(rows_json: &str, path: &str) -> Result<()>;
        /// Reproduce `paper` (`"he2025"`, `"zhang2025"`, `"multilayer"`, `"temperature"`, `"garg"`) into
        /// `out_dir` like `icl repro PAPER --out OUT_DIR --json` and return `report.json`'s text;
        /// options as `icl_repro` in `icl.h` takes them (`scale`, `only`, `jobs`, `engine`,
        /// `set.KEY`). Runs already complete under `OUT_DIR/runs/` are skipped, interrupted ones
        /// resumed. Blocks until every run is done; prints nothing. Throws where `icl_repro`
        /// returns a status; every bad option is reported before anything is written.
        fn repro(
            paper: &str,
            out_dir: &str,
            keys: &Vec<String>,
            values: &Vec<String>,
        ) -> Result<String>;
        /// `repro` reporting each run's start and end to `progress` (see `icl/progress.h`). The
        /// same options, files, result and exceptions as `repro`, and `rust::Error` ("the progress
        /// receiver threw: ...") once every run is done when `progress` threw (it cannot stop the
        /// reproduction; no later event is reported).
        fn repro_with_progress(
            paper: &str,
            out_dir: &str,
            keys: &Vec<String>,
            values: &Vec<String>,
            progress: Pin<&mut ReproProgress>,
        ) -> Result<String>;

        /// Expand the sweep file `file` into the sweep folder `out_dir` like
        /// `icl sweep plan FILE --out OUT_DIR --json` and return the planned runs as a JSON array
        /// (`{"index", "name", "values", "preset" or "config", "set"}`). Throws where
        /// `icl_sweep_plan` in `icl.h` returns a status.
        fn sweep_plan(file: &str, out_dir: &str) -> Result<String>;
        /// Train the runs of the sweep folder `dir` like `icl sweep run DIR --json` and return
        /// the results as a JSON array (`{"name", "status", "steps", "seconds", "steps_per_s",
        /// "wall_seconds"}`); options as `icl_sweep_run` takes them (`jobs`, `index`, `runs_per_task`, `engine`,
        /// `eval_samples`, `checkpoint_minutes`, `checkpoint_every`, `force`). Complete runs are
        /// skipped, interrupted ones resumed; prints nothing. Throws where `icl_sweep_run`
        /// returns a status (a run that failed: after every run was tried, its message).
        fn sweep_run(dir: &str, keys: &Vec<String>, values: &Vec<String>) -> Result<String>;
        /// `sweep_run` reporting each run's steps to `progress` (see `icl/progress.h`), which can
        /// interrupt the sweep by returning false: then the runs training are checkpointed and
        /// stop, the others do not start, and the results say `"interrupted"` (with `"step"`) and
        /// `"not_started"`; calling again resumes them. The same options, files, results and
        /// exceptions as `sweep_run`, and `rust::Error` ("the progress receiver threw: ...") after
        /// an exception from `progress`, which interrupts the sweep in the same way.
        fn sweep_run_with_progress(
            dir: &str,
            keys: &Vec<String>,
            values: &Vec<String>,
            progress: Pin<&mut SweepProgress>,
        ) -> Result<String>;
        /// The state of every run of the sweep folder `dir`: the objects `icl sweep status DIR
        /// --json` prints one per line, as one JSON array (`{"index", "name", "state", ...}`). Throws where
        /// `icl_sweep_status` returns a status.
        fn sweep_status(dir: &str) -> Result<String>;
        /// Draw the training figures of the finished run `dir` again like `icl plot DIR
        /// --json` and return `{"dir", "figures"}`. Throws where `icl_run_plot` returns a
        /// status.
        fn run_plot(dir: &str) -> Result<String>;
        /// Collect the sweep folder `dir` like `icl sweep collect DIR --json` (writes
        /// `results.csv`, `results.json`, `runs.csv`, plots) and return `{"columns", "rows",
        /// "incomplete", "files"}`; `partial` leaves out runs not complete instead of throwing.
        /// Throws where `icl_sweep_collect` returns a status.
        fn sweep_collect(dir: &str, partial: bool) -> Result<String>;
    }
}

fn engine_arg(e: &str) -> Option<&str> {
    if e.is_empty() {
        None
    } else {
        Some(e)
    }
}

fn dims_cxx(d: Dims) -> bridge::Dims {
    bridge::Dims {
        d: d.d,
        n_out: d.n_out,
        heads: d.heads,
        n_params: d.n_params,
        train_len: d.train_len,
        is_f64: d.is_f64,
    }
}

fn circuits_cxx(c: HeadCircuits) -> bridge::Circuits {
    bridge::Circuits {
        omega: c.omega,
        mu: c.mu,
    }
}

fn risk_cxx(r: icl_core::families::attention::eval::RiskEstimate) -> bridge::Risk {
    bridge::Risk {
        risk: r.risk,
        std_error: r.stderr,
        samples: r.n,
    }
}

fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

fn default_engine() -> String {
    icl_core_run::default_engine().to_string()
}

fn config_preset(name: &str) -> FfiResult<Box<icl_config>> {
    guard_cxx(|| icl_config::preset(name).map(Box::new))
}

fn config_from_toml(toml: &str) -> FfiResult<Box<icl_config>> {
    guard_cxx(|| icl_config::from_toml(toml).map(Box::new))
}

impl icl_config {
    fn cpp_set(&mut self, key: &str, value: &str) -> FfiResult<()> {
        guard_cxx(|| self.set_key(key, value))
    }
    fn cpp_get(&self, key: &str) -> FfiResult<String> {
        guard_cxx(|| self.get_key(key))
    }
    fn cpp_validate(&self) -> FfiResult<()> {
        guard_cxx(|| self.validate())
    }
    fn cpp_to_toml(&self) -> String {
        self.toml()
    }
}

fn task_sampler(cfg: &icl_config) -> FfiResult<Box<icl_task>> {
    guard_cxx(|| icl_task::new(&cfg.cfg).map(Box::new))
}

impl icl_task {
    fn cpp_dims(&self) -> bridge::Dims {
        let (d, n_out, train_len) = self.dims();
        bridge::Dims {
            d,
            n_out,
            heads: 0,
            n_params: 0,
            train_len,
            is_f64: false,
        }
    }
    fn cpp_sample(
        &self,
        seed: u64,
        eval: bool,
        step: u64,
        n: usize,
        len: usize,
    ) -> FfiResult<bridge::Batch> {
        guard_cxx(|| {
            // the C path's checked allocation: a batch that does not fit is an exception
            let dom = if eval { Domain::Eval } else { Domain::Train };
            let b = self.sample_batch(seed, dom, step, n, len)?;
            Ok(bridge::Batch {
                n,
                len,
                d: b.d,
                n_out: b.n_out,
                z: b.z,
                y: b.y,
            })
        })
    }
}

fn model_new(cfg: &icl_config) -> FfiResult<Box<icl_model>> {
    guard_cxx(|| icl_model::new(&cfg.cfg).map(Box::new))
}

fn model_load(path: &str) -> FfiResult<Box<icl_model>> {
    guard_cxx(|| icl_model::load(Path::new(path)).map(Box::new))
}

fn check_batch_shape(b: &bridge::Batch, d: usize, n_out: usize) -> FfiResult<()> {
    if b.d != d || b.n_out != n_out {
        return Err(crate::status::FfiError::size(format!(
            "batch has d = {} and n_out = {}, model has d = {d} and n_out = {n_out}",
            b.d, b.n_out
        )));
    }
    Ok(())
}

impl icl_model {
    fn cpp_save(&self, path: &str) -> FfiResult<()> {
        guard_cxx(|| self.save(Path::new(path)))
    }
    fn cpp_set_engine(&mut self, name: &str) -> FfiResult<()> {
        guard_cxx(|| self.set_engine(name))
    }
    fn cpp_dims(&self) -> bridge::Dims {
        dims_cxx(self.dims())
    }
    fn cpp_config(&self) -> Box<icl_config> {
        Box::new(icl_config {
            cfg: self.cfg.clone(),
        })
    }
    fn cpp_predict(
        &mut self,
        n: usize,
        len: usize,
        x: &[f64],
        y: &[f64],
        xq: &[f64],
    ) -> FfiResult<Vec<f64>> {
        guard_cxx(|| {
            let mut out = try_vec(n.saturating_mul(self.dims().n_out), 0.0, "predictions")?;
            self.predict(n, len, x, y, xq, &mut out)?;
            Ok(out)
        })
    }
    fn cpp_predict_prompts(
        &mut self,
        n: usize,
        k: usize,
        xs: &[f64],
        ys: &[f64],
    ) -> FfiResult<Vec<f64>> {
        guard_cxx(|| self.prompt_predictions(n, k, xs, ys))
    }
    fn cpp_predict_batch(&mut self, b: &bridge::Batch) -> FfiResult<Vec<f64>> {
        guard_cxx(|| {
            let dm = self.dims();
            check_batch_shape(b, dm.d, dm.n_out)?;
            let mut out = try_vec(b.n.saturating_mul(dm.n_out), 0.0, "predictions")?;
            self.predict_batch(b.n, b.len, &b.z, &mut out)?;
            Ok(out)
        })
    }
    fn cpp_loss_grad(&mut self, b: &bridge::Batch) -> FfiResult<bridge::LossGrad> {
        guard_cxx(|| {
            let dm = self.dims();
            check_batch_shape(b, dm.d, dm.n_out)?;
            let mut grad = try_vec(dm.n_params, 0.0, "the gradient")?;
            let loss = self.loss_grad(b.n, b.len, &b.z, &b.y, &mut grad)?;
            Ok(bridge::LossGrad { loss, grad })
        })
    }
    fn cpp_params(&self) -> Vec<f64> {
        self.params()
    }
    fn cpp_set_params(&mut self, p: &[f64]) -> FfiResult<()> {
        guard_cxx(|| self.set_params(p))
    }
    fn cpp_circuits(&self) -> FfiResult<bridge::Circuits> {
        guard_cxx(|| self.circuits().map(circuits_cxx))
    }
    fn cpp_risk(&mut self, len: usize, samples: usize, seed: u64) -> FfiResult<bridge::Risk> {
        guard_cxx(|| self.risk(None, len, samples, seed).map(risk_cxx))
    }
    fn cpp_risk_on(
        &mut self,
        task: &icl_task,
        len: usize,
        samples: usize,
        seed: u64,
    ) -> FfiResult<bridge::Risk> {
        guard_cxx(|| self.risk(Some(task), len, samples, seed).map(risk_cxx))
    }
}

fn trainer_new(cfg: &icl_config, engine: &str) -> FfiResult<Box<icl_trainer>> {
    guard_cxx(|| icl_trainer::new(&cfg.cfg, engine_arg(engine)).map(Box::new))
}

fn trainer_from_checkpoint(path: &str, engine: &str) -> FfiResult<Box<icl_trainer>> {
    guard_cxx(|| icl_trainer::from_checkpoint(Path::new(path), engine_arg(engine)).map(Box::new))
}

impl icl_trainer {
    fn cpp_train(&mut self, steps: u64) -> FfiResult<f64> {
        guard_cxx(|| self.train(steps, None))
    }
    fn cpp_train_losses(&mut self, steps: u64) -> FfiResult<Vec<f64>> {
        guard_cxx(|| {
            let n = usize::try_from(steps)
                .map_err(|_| crate::status::FfiError::size("steps overflows"))?;
            let mut l = try_vec(n, 0.0, "the losses of `steps` steps")?;
            self.train(steps, Some(&mut l))?;
            Ok(l)
        })
    }
    fn cpp_step_batch(&mut self, b: &bridge::Batch) -> FfiResult<f64> {
        guard_cxx(|| {
            let dm = self.dims();
            check_batch_shape(b, dm.d, dm.n_out)?;
            // validate before the step so that a bad batch leaves the trainer untouched
            batch_from::<f64>(b.n, b.len, b.d, b.n_out, &b.z, &b.y)?;
            self.step_batch(b.n, b.len, &b.z, &b.y)
        })
    }
    fn cpp_step_count(&self) -> u64 {
        self.step()
    }
    fn cpp_engine(&self) -> String {
        self.engine_name().to_string()
    }
    fn cpp_dims(&self) -> bridge::Dims {
        dims_cxx(self.dims())
    }
    fn cpp_params(&self) -> Vec<f64> {
        self.params()
    }
    fn cpp_set_params(&mut self, p: &[f64]) -> FfiResult<()> {
        guard_cxx(|| self.set_params(p))
    }
    fn cpp_circuits(&self) -> FfiResult<bridge::Circuits> {
        guard_cxx(|| self.circuits().map(circuits_cxx))
    }
    fn cpp_model(&self) -> FfiResult<Box<icl_model>> {
        guard_cxx(|| self.model().map(Box::new))
    }
    fn cpp_save(&self, path: &str) -> FfiResult<()> {
        guard_cxx(|| self.save(Path::new(path)))
    }
    fn cpp_log(&self) -> Vec<bridge::LogRow> {
        (0..self.log_len())
            .filter_map(|i| Some((self.log_row(i).ok()?, self.log_values(i).ok()?)))
            .map(|(r, values): (LogEntry, Vec<f64>)| bridge::LogRow {
                step: r.step,
                loss: r.loss,
                omega: r.omega,
                mu: r.mu,
                values,
            })
            .collect()
    }
    fn cpp_log_columns(&self) -> Vec<String> {
        self.log_columns()
    }
}

fn text_pairs(keys: &[String], values: &[String]) -> FfiResult<Vec<(String, String)>> {
    if keys.len() != values.len() {
        return Err(crate::status::FfiError::size(format!(
            "{} keys but {} values",
            keys.len(),
            values.len()
        )));
    }
    Ok(keys.iter().cloned().zip(values.iter().cloned()).collect())
}
/// The bridge's text pairs read as `T`, as the C API reads its pairs ([`FromPairs`]).
fn text_options<T: FromPairs>(keys: &[String], values: &[String]) -> FfiResult<T> {
    T::from_pairs(text_pairs(keys, values)?)
}
fn options_list(name: &str) -> FfiResult<String> {
    guard_cxx(|| Ok(icl_core_run::options::schema(name)?.to_string()))
}
#[allow(clippy::ptr_arg)] // cxx passes rust::Vec by reference
fn train_run(
    cfg: &icl_config,
    out_dir: &str,
    keys: &Vec<String>,
    values: &Vec<String>,
) -> FfiResult<String> {
    guard_cxx(|| crate::c::train::train_json(&cfg.cfg, out_dir, &text_options(keys, values)?))
}
fn theory_list() -> FfiResult<String> {
    guard_cxx(|| Ok(icl_core_run::theory::list_json().to_string()))
}
#[allow(clippy::ptr_arg)] // cxx passes rust::Vec by reference
fn theory_eval(name: &str, keys: &Vec<String>, values: &Vec<String>) -> FfiResult<String> {
    guard_cxx(|| {
        let Raw(args) = text_options(keys, values)?;
        let (out, vals) = icl_core_run::theory::evaluate(name, &args)?;
        Ok(icl_core_run::theory::result_json(name, &out, &vals).to_string())
    })
}
#[allow(clippy::ptr_arg)] // cxx passes rust::Vec by reference
fn theory_value(name: &str, keys: &Vec<String>, values: &Vec<String>) -> FfiResult<Vec<f64>> {
    guard_cxx(|| {
        let Raw(args) = text_options(keys, values)?;
        let (out, _) = icl_core_run::theory::evaluate(name, &args)?;
        out.value.as_f64s().ok_or_else(|| {
            crate::status::FfiError::new(
                crate::status::icl_status::ICL_ERR_UNSUPPORTED,
                format!("{name}: its value is not a number or a list of numbers"),
            )
        })
    })
}
#[allow(clippy::ptr_arg)] // cxx passes rust::Vec by reference
fn eval_run(dir: &str, keys: &Vec<String>, values: &Vec<String>) -> FfiResult<String> {
    guard_cxx(|| crate::c::eval::eval_json(dir, &text_options(keys, values)?))
}
fn eval_plot(rows_json: &str, path: &str) -> FfiResult<()> {
    guard_cxx(|| crate::c::eval::plot_rows(rows_json, path))
}
#[allow(clippy::ptr_arg)] // cxx passes rust::Vec by reference
fn repro(
    paper: &str,
    out_dir: &str,
    keys: &Vec<String>,
    values: &Vec<String>,
) -> FfiResult<String> {
    guard_cxx(|| crate::c::repro::repro_json(&repro_options(paper, out_dir, keys, values)?))
}

/// `repro`'s options from the bridge's text pairs.
fn repro_options(
    paper: &str,
    out_dir: &str,
    keys: &[String],
    values: &[String],
) -> FfiResult<icl_core_run::repro::ReproOptions> {
    let a: icl_core_run::options::ReproArgs = text_options(keys, values)?;
    Ok(a.options(paper, out_dir)?)
}
/// The message of the error a call returns after the progress receiver threw `e`.
fn receiver_threw(e: &cxx::Exception) -> crate::status::FfiError {
    crate::status::FfiError::new(
        crate::status::icl_status::ICL_ERR_ARGUMENT,
        format!("the progress receiver threw: {}", e.what()),
    )
}

/// A caller's progress receiver, moved to icl's threads.
struct Receiver<'a, T>(Pin<&'a mut T>);

// SAFETY: `icl/progress.h` tells the caller that the receiver is called from icl's threads; the
// calls are one at a time (repro's progress is one `FnMut`; the sweep's runs under a lock).
unsafe impl<T> Send for Receiver<'_, T> {}

impl<T> Receiver<'_, T> {
    /// The receiver, to call (a method, so that closures capture the whole `Receiver`).
    fn get(&mut self) -> Pin<&mut T> {
        self.0.as_mut()
    }
}

#[allow(clippy::ptr_arg)] // cxx passes rust::Vec by reference
fn repro_with_progress(
    paper: &str,
    out_dir: &str,
    keys: &Vec<String>,
    values: &Vec<String>,
    progress: Pin<&mut bridge::ReproProgress>,
) -> FfiResult<String> {
    guard_cxx(|| {
        let o = repro_options(paper, out_dir, keys, values)?;
        let mut rx = Receiver(progress);
        let mut threw = None;
        let json = crate::c::repro::report_json(
            &o,
            &mut |name: &str, i: usize, count: usize, ev: &str| {
                if threw.is_none() {
                    if let Err(e) = rx.get().on_event(name, i, count, ev) {
                        threw = Some(receiver_threw(&e));
                    }
                }
            },
        )?;
        threw.map_or(Ok(json), Err)
    })
}

#[allow(clippy::ptr_arg)] // cxx passes rust::Vec by reference
fn sweep_run_with_progress(
    dir: &str,
    keys: &Vec<String>,
    values: &Vec<String>,
    progress: Pin<&mut bridge::SweepProgress>,
) -> FfiResult<String> {
    guard_cxx(|| {
        let a: icl_core_run::options::SweepRunArgs = text_options(keys, values)?;
        let o = a.options()?;
        let rx = Mutex::new((Receiver(progress), None));
        let gate = icl_core_run::sweep::Throttle::default();
        let report = |i: usize, step: u64, total: u64, loss: f64| {
            let mut g = rx.lock().unwrap_or_else(|e| e.into_inner());
            let (rx, threw) = &mut *g;
            if threw.is_some() {
                return false;
            }
            let go = gate.when_due(i, step, total, || rx.get().on_step(i, step, total, loss));
            match go {
                Some(Err(e)) => {
                    *threw = Some(receiver_threw(&e));
                    false
                }
                Some(Ok(go)) => go,
                None => true,
            }
        };
        let results = o.run(Path::new(dir), &report)?;
        let (_, threw) = rx.into_inner().unwrap_or_else(|e| e.into_inner());
        match threw {
            Some(e) => Err(e),
            None => crate::c::sweep::results_json(results),
        }
    })
}

fn sweep_plan(file: &str, out_dir: &str) -> FfiResult<String> {
    guard_cxx(|| crate::c::sweep::plan_json(file, out_dir))
}
#[allow(clippy::ptr_arg)] // cxx passes rust::Vec by reference
fn sweep_run(dir: &str, keys: &Vec<String>, values: &Vec<String>) -> FfiResult<String> {
    guard_cxx(|| {
        let a: icl_core_run::options::SweepRunArgs = text_options(keys, values)?;
        crate::c::sweep::run_json(dir, &a.options()?)
    })
}
fn sweep_status(dir: &str) -> FfiResult<String> {
    guard_cxx(|| crate::c::sweep::status_json(dir))
}
fn run_plot(dir: &str) -> FfiResult<String> {
    guard_cxx(|| crate::c::train::plot_json(dir))
}
fn sweep_collect(dir: &str, partial: bool) -> FfiResult<String> {
    guard_cxx(|| crate::c::sweep::collect_json(dir, partial))
}
