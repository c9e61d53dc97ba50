//! Shared CLI plumbing: building a config from a preset and overrides, progress bars, output.
use crate::error::{CliError, CliResult};
use icl_core::Config;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// Flags that select and modify a configuration.
#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    /// Preset to start from (`icl presets` lists them).
    #[arg(long, default_value = "he2025")]
    pub preset: String,
    /// A config.toml to start from instead of a preset.
    #[arg(long, value_name = "FILE", conflicts_with = "preset")]
    pub config: Option<PathBuf>,
    /// Override one key, e.g. `--set model.heads=4` (repeatable; `icl presets --keys` lists keys).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
}

impl ConfigArgs {
    /// The validated config these flags describe.
    pub fn build(&self) -> CliResult<Config> {
        let mut cfg = match &self.config {
            Some(p) => icl_core_run::checkpoint::load_config(p)?,
            None => icl_core::presets::preset(&self.preset)?,
        };
        apply_sets(&mut cfg, &self.sets)?;
        cfg.validate()?;
        Ok(cfg)
    }
    /// The preset name, when the config came from one.
    pub fn preset_name(&self) -> Option<String> {
        self.config.is_none().then(|| self.preset.clone())
    }
}

/// Apply `KEY=VALUE` overrides.
pub fn apply_sets(cfg: &mut Config, sets: &[String]) -> CliResult {
    for s in sets {
        let (k, v) = split_set(s)?;
        cfg.set(k.trim(), v.trim())?;
    }
    Ok(())
}

/// One `--set KEY=VALUE` flag as (KEY, VALUE).
pub fn split_set(s: &str) -> CliResult<(&str, &str)> {
    s.split_once('=').ok_or_else(|| {
        CliError::input(format!(
            "--set {s:?}: expected KEY=VALUE, e.g. model.heads=4"
        ))
    })
}

/// A progress bar on stderr when it is a terminal (hidden otherwise, and when `quiet`).
pub fn progress(total: u64, quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(total);
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} steps {per_sec} eta {eta} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    pb
}

/// Print text to stdout, reporting a failed write (a full disk, a closed pipe is quiet: SIGPIPE).
pub fn out(text: &str) -> CliResult {
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())
        .and_then(|_| o.flush())
        .map_err(|e| CliError::runtime(format!("writing to stdout: {e}")))
}

/// Print a line to stdout (see [`out`]).
pub fn outln(text: &str) -> CliResult {
    out(&format!("{text}\n"))
}
