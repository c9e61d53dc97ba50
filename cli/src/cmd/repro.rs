//! `icl repro PAPER`: run a paper's experiments and write a report of its claims (paper value,
//! icl's measured value, verdict). Thin: the runs and claims live in `icl_run::repro`.
use crate::cmd::common::outln;
use crate::error::{CliError, CliResult};
use icl_run::repro::{repro, Paper, ReproOptions, Scale};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `icl repro`.
#[derive(clap::Args)]
pub struct Args {
    /// The paper: he2025, zhang2025 or temperature.
    pub paper: String,
    /// Output folder: runs/ (ordinary run folders), report.json, report.md, report.html.
    #[arg(long)]
    pub out: PathBuf,
    /// smoke (minutes on 2 cores, reductions stated per claim) or paper (the paper's sizes).
    #[arg(long, default_value = "smoke")]
    pub scale: String,
    /// Only these claims (comma-separated ids; the report lists them); only their runs are trained.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Runs trained at once.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Engine (default: the fastest built in).
    #[arg(long)]
    pub engine: Option<String>,
    /// Print report.json to stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(a: &Args) -> CliResult {
    if a.jobs == 0 || a.jobs > 256 {
        return Err(CliError::input(format!("--jobs {}: give 1..=256", a.jobs)));
    }
    let o = ReproOptions {
        paper: Paper::parse(&a.paper)?,
        scale: Scale::parse(&a.scale)?,
        only: a.only.iter().filter(|s| !s.is_empty()).cloned().collect(),
        jobs: a.jobs,
        out: a.out.clone(),
        engine: a.engine.clone(),
    };
    let quiet = a.quiet;
    let mut progress = move |name: &str, i: usize, n: usize, what: &str| {
        if !quiet {
            let _ = writeln!(std::io::stderr(), "[{}/{n}] {what:5} {name}", i + 1);
        }
    };
    let r = repro(&o, &mut progress)?;
    if a.json {
        outln(&serde_json::to_string_pretty(&r).unwrap_or_default())?;
    } else {
        outln(&icl_run::repro::report::markdown(&r))?;
        let (p, n) = r.passed();
        outln(&format!(
            "{p} of {n} claims pass; reports in {}",
            a.out.display()
        ))?;
    }
    Ok(())
}
