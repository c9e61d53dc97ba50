//! Shared CLI plumbing: building a config from a preset and overrides, progress bars, output.
use crate::error::{CliError, CliResult};
use icl_core::Config;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// Flags that select and modify a configuration.
#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    /// Preset to start from (`icl presets` lists them; default he2025).
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
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
            None => icl_core::presets::preset(self.preset())?,
        };
        apply_sets(&mut cfg, &self.sets)?;
        cfg.validate()?;
        Ok(cfg)
    }
    /// The preset name, when the config came from one.
    pub fn preset_name(&self) -> Option<String> {
        self.config.is_none().then(|| self.preset().to_string())
    }
    /// The preset named, or the default one.
    pub fn preset(&self) -> &str {
        self.preset.as_deref().unwrap_or(icl_core::presets::DEFAULT)
    }
    /// What the config starts from, for a note before training: "preset quick", "preset he2025
    /// (the default; --preset NAME picks another)", "config FILE".
    pub fn describe(&self) -> String {
        match (&self.config, &self.preset) {
            (Some(p), _) => format!("config {}", p.display()),
            (None, Some(n)) => format!("preset {n}"),
            (None, None) => format!(
                "preset {} (the default; --preset NAME picks another)",
                icl_core::presets::DEFAULT
            ),
        }
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

/// A progress bar on stderr when it is a terminal (hidden otherwise, and when `quiet`) over the
/// `total - start` steps of this session (a resumed run starts at `start`): its rate and ETA count
/// only the steps this process trains, the ETA by the work of the steps left (`eta`: a
/// curriculum's later steps cost more). The bar shows the run's step (`start` + position) and
/// the rate in whole steps per second; the message is the caller's (the loss, labelled).
pub fn progress(
    start: u64,
    total: u64,
    eta: icl_core_run::eta::Eta,
    quiet: bool,
) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(total.saturating_sub(start));
    let step = move |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
        let _ = write!(w, "{}/{}", start + s.pos(), total);
    };
    let rate = |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
        let _ = write!(w, "{:.0}", s.per_sec());
    };
    let left = move |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
        let _ = write!(
            w,
            "{}",
            eta.left(start + s.pos(), total, s.elapsed().as_secs_f64())
        );
    };
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] step {step} {rate} steps/s eta {eta} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .with_key("step", step)
        .with_key("rate", rate)
        .with_key("eta", left)
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
