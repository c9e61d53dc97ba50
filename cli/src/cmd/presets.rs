//! `icl presets`: list presets, show one as TOML, or list every configuration key.
use crate::error::CliResult;
use icl_core::config::keys;
use icl_core::presets::{preset, PRESETS};

/// Arguments of `icl presets`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print this preset's full configuration as TOML.
    #[arg(long, value_name = "NAME")]
    pub show: Option<String>,
    /// List every configuration key accepted by `--set`.
    #[arg(long)]
    pub keys: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args) -> CliResult {
    if let Some(name) = &a.show {
        print!("{}", preset(name)?.to_toml());
        return Ok(());
    }
    if a.keys {
        if a.json {
            let v: Vec<_> = keys()
                .map(|k| {
                    serde_json::json!({"key": k.dotted(), "aliases": k.aliases.iter().map(|a| format!("{}.{a}", k.section)).collect::<Vec<_>>(), "doc": k.doc, "accepts": k.describe()})
                })
                .collect();
            println!("{}", super::common::json(&serde_json::Value::Array(v)));
            return Ok(());
        }
        for k in keys() {
            println!("{:<22} {} ({})", k.dotted(), k.doc, k.describe());
        }
        return Ok(());
    }
    if a.json {
        let v: Vec<_> = PRESETS
            .iter()
            .map(|(n, d, _)| serde_json::json!({"name": n, "description": d}))
            .collect();
        println!("{}", super::common::json(&serde_json::Value::Array(v)));
    } else {
        for (n, d, _) in PRESETS {
            println!("{n:<24} {d}");
        }
    }
    Ok(())
}
