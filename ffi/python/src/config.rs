//! `icl.Config`: the one typed configuration of `icl_core::config`, as `icl train --preset NAME
//! --set key=value` builds it.
use crate::errors::OrPy;
use crate::values::{to_py, to_toml, toml_to_py};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A run configuration: every key of `[task]`, `[model]` and `[train]` (`Config.keys()` lists
/// them), range-checked when it is set.
///
/// Start from a preset (`Config.preset("he2025")`), a TOML text (`Config.from_toml(text)`), a
/// `config.toml` file (`Config.load(path)`) or the defaults (`Config()`, the he2025 setting), and
/// change keys with `set` (chainable) or item assignment::
///
///     cfg = icl.Config.preset("he2025").set("model.heads", 4).set("train.lr", 3e-3)
///     cfg["task.sigma2"] = 0.2
#[pyclass(module = "icl", name = "Config")]
#[derive(Clone)]
pub struct Config {
    pub cfg: icl_core::Config,
    /// The preset it started from (recorded in `summary.json`), if any.
    pub preset: Option<String>,
}

#[pymethods]
impl Config {
    /// The defaults (the he2025 setting: d = 5, L = 40, sigma2 = 0.1, two heads).
    #[new]
    fn new() -> Self {
        Config {
            cfg: icl_core::Config::default(),
            preset: None,
        }
    }

    /// The named preset (`icl.presets()` lists them). Raises `icl.UnknownNameError`.
    #[staticmethod]
    pub fn preset(name: &str) -> PyResult<Self> {
        Ok(Config {
            cfg: icl_core::presets::preset(name).or_py()?,
            preset: Some(name.to_string()),
        })
    }

    /// A TOML text (`[task]`, `[model]`, `[train]` sections) on top of the defaults, validated.
    /// Raises `icl.InputError` or `icl.UnknownNameError`.
    #[staticmethod]
    fn from_toml(text: &str) -> PyResult<Self> {
        Ok(Config {
            cfg: icl_core::Config::from_toml(text).or_py()?,
            preset: None,
        })
    }

    /// A `config.toml` file (e.g. a run folder's), as `icl train --config FILE` reads it.
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<Self> {
        Ok(Config {
            cfg: icl_core_run::checkpoint::load_config(&path).or_py()?,
            preset: None,
        })
    }

    /// Every key, the evaluation's `shift.*` keys included: `[{"key", "aliases", "doc",
    /// "accepts"}]` (as `icl presets --keys --json`).
    #[staticmethod]
    fn keys(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        to_py(py, &icl_core_run::summary::keys_json())
    }

    /// Set `key` (dotted, e.g. `"model.heads"`) to `value` (bool, int, float, list, or text as
    /// `icl train --set key=TEXT` takes it) and return this config (changed in place), so calls
    /// chain. The value is range-checked now (`icl.InputError`, `icl.UnknownNameError`; the
    /// config is then unchanged); rules between keys are checked by `validate()` and `icl.train`.
    fn set<'py>(
        mut slf: PyRefMut<'py, Self>,
        key: &str,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let v = to_toml(value)?;
        slf.cfg.set_value(key, &v).or_py()?;
        Ok(slf)
    }

    /// The value of `key` as a Python value.
    fn get<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        toml_to_py(py, &self.cfg.get(key).or_py()?)
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        self.get(py, key)
    }

    fn __setitem__(&mut self, key: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = to_toml(value)?;
        self.cfg.set_value(key, &v).or_py()
    }

    /// Check the rules between keys (what `icl.train` checks first). Raises `icl.InputError`.
    fn validate(&self) -> PyResult<()> {
        self.cfg.validate().or_py()
    }

    /// The config as TOML text (reads back with `Config.from_toml`, floats bit for bit).
    fn to_toml(&self) -> String {
        self.cfg.to_toml()
    }

    /// The config as a dict of dotted key -> value (as in `summary.json`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(to_py(py, &icl_core_run::summary::config_json(&self.cfg))?.cast_into()?)
    }

    /// The preset this config started from (`None` for TOML, files and the defaults).
    #[getter]
    fn preset_name(&self) -> Option<String> {
        self.preset.clone()
    }

    /// A copy (changing it leaves this one alone).
    fn copy(&self) -> Self {
        self.clone()
    }

    fn __copy__(&self) -> Self {
        self.clone()
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> Self {
        self.clone()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Config>()
            .map(|o| o.borrow().cfg == self.cfg)
            .unwrap_or(false)
    }

    fn __str__(&self) -> String {
        self.cfg.to_toml()
    }

    fn __repr__(&self) -> String {
        let from = match &self.preset {
            Some(p) => format!("preset {p:?}"),
            None => "no preset".into(),
        };
        let c = &self.cfg;
        format!(
            "<icl.Config ({from}): task {} d={} L={}, {} heads, {} steps; str() shows every key>",
            c.task.kind.as_str(),
            c.task.d,
            c.task.len,
            c.model.heads,
            c.train.steps
        )
    }
}

impl Config {
    /// A config from a `Config` or a preset name.
    pub fn from_arg(v: &Bound<'_, PyAny>) -> PyResult<Config> {
        if let Ok(c) = v.cast::<Config>() {
            return Ok(c.borrow().clone());
        }
        if let Ok(name) = v.extract::<String>() {
            return Config::preset(&name);
        }
        Err(crate::errors::type_err(
            "config must be an icl.Config or a preset name",
        ))
    }
}
