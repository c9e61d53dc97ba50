//! `icl repro PAPER`: run a paper's experiments and write a report of its claims (paper value,
//! icl's measured value, verdict). Thin: the runs and claims live in `icl_core_run::repro`.
use crate::cmd::common::outln;
use crate::error::{CliError, CliResult};
use icl_core_run::options::ReproArgs;
use icl_core_run::repro::{repro_lines, ReproOptions};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `icl repro`.
#[derive(clap::Args)]
pub struct Args {
    /// The paper: he2025, zhang2025, multilayer, temperature or garg.
    pub paper: String,
    /// Output folder: runs/ (ordinary run folders), report.json, report.md, report.html.
    #[arg(long)]
    pub out: PathBuf,
    /// The options (`icl_core_run::options::ReproArgs`: the C API's keys, Python's keywords).
    #[command(flatten)]
    pub opts: ReproArgs,
    /// Print report.json to stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Do not train here: write OUT/runs/slurm.sh (an sbatch --array over the runs the claims
    /// need, each task `icl sweep run-one OUT/runs --index i`) and OUT/report.sh (this command,
    /// which then finds the runs complete and writes the reports).
    #[arg(long)]
    pub slurm: bool,
    /// With --slurm: submit the array, and the report job after it (--dependency=afterok).
    #[arg(long)]
    pub submit: bool,
    #[command(flatten)]
    pub sbatch: crate::cmd::sweep::SlurmArgs,
}

pub fn run(a: &Args) -> CliResult {
    // checked where the C API and Python check them too
    let o = a.opts.options(&a.paper, a.out.clone())?;
    if a.slurm {
        if a.opts.jobs != 1 {
            return Err(CliError::input(
                "--jobs has no effect with --slurm (Slurm runs the array; --max-parallel caps it)",
            ));
        }
        return slurm(a, &o);
    }
    let b = &a.sbatch;
    if a.submit
        || b.partition.is_some()
        || b.time.is_some()
        || b.cpus_per_task.is_some()
        || b.mem.is_some()
        || b.max_parallel.is_some()
        || b.job_name.is_some()
        || !b.sbatch.is_empty()
        || b.icl.is_some()
    {
        return Err(CliError::input(
            "--submit and the Slurm options (--partition, --time, ...) need --slurm",
        ));
    }
    let quiet = a.quiet;
    let mut progress = move |name: &str, i: usize, n: usize, what: &str| {
        if !quiet {
            let _ = writeln!(std::io::stderr(), "[{}/{n}] {what:5} {name}", i + 1);
        }
    };
    let mut lines = move |line: &str| {
        if !quiet {
            let _ = writeln!(std::io::stderr(), "      {line}");
        }
    };
    let r = repro_lines(&o, &mut progress, &mut lines)?;
    if a.json {
        outln(icl_core_run::repro::report::json(&r).trim_end())?;
    } else {
        outln(&icl_core_run::repro::report::markdown(&r))?;
        let (p, n) = r.passed();
        outln(&format!(
            "{p} of {n} claims pass; reports in {}",
            a.out.display()
        ))?;
    }
    Ok(())
}

/// `--slurm`: write (and with `--submit` submit) the array and the report job.
fn slurm(a: &Args, o: &ReproOptions) -> CliResult {
    let p = icl_core_run::repro::slurm(o, &a.sbatch.options(Vec::new())?, a.submit)?;
    if a.json {
        let v = serde_json::json!({
            "runs": p.runs,
            "array_script": p.array_script.as_ref().map(|x| x.display().to_string()),
            "report_script": p.report_script.display().to_string(),
            "array_job": p.jobs.as_ref().and_then(|j| j.0.clone()),
            "report_job": p.jobs.as_ref().map(|j| j.1.clone()),
        });
        return outln(&serde_json::to_string_pretty(&v).unwrap_or_default());
    }
    match &p.array_script {
        Some(s) => outln(&format!("{} runs: {}", p.runs, s.display()))?,
        None => outln("0 runs: the claims need no training")?,
    }
    outln(&format!("report: {}", p.report_script.display()))?;
    match &p.jobs {
        Some((array, report)) => {
            if let Some(id) = array {
                outln(&format!("submitted the runs as job {id}"))?;
            }
            outln(&format!(
                "submitted the report as job {report}; it writes {}/report.md when the runs are done",
                a.out.display()
            ))
        }
        None => outln("submit with --submit, or sbatch the scripts (the report after the runs)"),
    }
}
