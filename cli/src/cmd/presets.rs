//! `icl presets`: list presets, show one as TOML, or list every configuration key.
use crate::error::CliResult;
use icl_core::config::{keys, ShiftConfig};
use icl_core::presets::{preset, PRESETS};

/// Arguments of `icl presets`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print this preset's full configuration as TOML (with --json: an object of dotted keys,
    /// `{"task.d": 5, ...}`, as summary.json's `config`).
    #[arg(long, value_name = "NAME")]
    pub show: Option<String>,
    /// List every configuration key accepted by `--set`.
    #[arg(long, conflicts_with = "show")]
    pub keys: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args) -> CliResult {
    if let Some(name) = &a.show {
        let cfg = preset(name)?;
        if a.json {
            return super::common::outln(&icl_core_run::summary::pretty(
                &icl_core_run::summary::config_json(&cfg),
            ));
        }
        return super::common::out(&cfg.to_toml());
    }
    if a.keys {
        if a.json {
            return super::common::outln(&icl_core_run::summary::pretty(
                &icl_core_run::summary::keys_json(),
            ));
        }
        let mut s = String::new();
        for k in keys().chain(ShiftConfig::KEYS) {
            s.push_str(&format!(
                "{:<22} {} ({})\n",
                k.dotted(),
                k.doc,
                k.describe()
            ));
        }
        return super::common::out(&s);
    }
    if a.json {
        let v: Vec<_> = PRESETS
            .iter()
            .map(|(n, d, _)| serde_json::json!({"name": n, "description": d}))
            .collect();
        super::common::outln(&icl_core_run::summary::pretty(&v))
    } else {
        let mut s = String::new();
        for (n, d, _) in PRESETS {
            s.push_str(&format!("{n:<24} {d}\n"));
        }
        super::common::out(&s)
    }
}
