//! `icl sweep`: seeds x grids of runs from one sweep file, run locally in parallel or as a Slurm
//! array, collected into one tidy table. Thin: the work is `icl_core_run::sweep`.
//!
//! `plan FILE --out DIR` writes the manifest; `run DIR [--jobs N]` trains what is not complete;
//! `run-one DIR --index I` trains run I (a Slurm array task); `status DIR`; `collect DIR`
//! writes `results.csv`, `results.json`, `runs.csv` and summary plots; `slurm DIR` writes (and
//! with `--submit` submits) the `sbatch --array` script.
use super::common::{out, outln};
use crate::error::{CliError, CliResult};
use crate::signals;
use icl_core_run::options::SweepRunArgs;
use icl_core_run::sweep::{self, front, RunStatus, SlurmOptions, State};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Arguments of `icl sweep`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// How to train (shared by `run` and `run-one`).
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// The options (`icl_core_run::options::SweepRunArgs`: the C API's keys, Python's keywords).
    #[command(flatten)]
    pub opts: SweepRunArgs,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the results as JSON on stdout (one object per run: name, status, steps, seconds,
    /// steps_per_s, wall_seconds; step when interrupted, error when failed).
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Subcommand, Debug)]
pub enum Cmd {
    /// Expand a sweep file into a sweep folder: DIR/manifest.jsonl, one line per run.
    Plan {
        /// The sweep file (TOML: preset or config, seeds, [set], [grid]).
        file: PathBuf,
        /// The sweep folder.
        #[arg(long)]
        out: PathBuf,
        /// Print the planned runs as JSON (the manifest's lines as one array).
        #[arg(long)]
        json: bool,
    },
    /// Train every run not yet complete (interrupted runs resume), N at a time.
    Run {
        /// The sweep folder (from `icl sweep plan`).
        dir: PathBuf,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Train run I of the sweep, or with --runs-per-task K runs I*K..I*K+K-1 (what a Slurm
    /// array task runs).
    RunOne {
        /// The sweep folder (from `icl sweep plan`).
        dir: PathBuf,
        /// The run's index (its line in the manifest, from 0); with --runs-per-task K, the
        /// array task's: runs index*K .. index*K+K-1.
        #[arg(long, allow_negative_numbers = true)]
        index: usize,
        /// Runs per array task (default 1; `icl sweep slurm --runs-per-task`): on the Vulkan
        /// engine the one-layer runs of one shape among them train as one pack.
        #[arg(long, value_name = "K", allow_negative_numbers = true)]
        runs_per_task: Option<usize>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// The state of every run (complete, running, interrupted, pending, damaged).
    Status {
        /// The sweep folder (from `icl sweep plan`).
        dir: PathBuf,
        /// One JSON object per run.
        #[arg(long)]
        json: bool,
    },
    /// Write DIR/results.csv and results.json (one row per run x metric), runs.csv and plots.
    Collect {
        /// The sweep folder (from `icl sweep plan`).
        dir: PathBuf,
        /// Leave out runs that are not complete instead of refusing.
        #[arg(long)]
        partial: bool,
        /// Print results.json (columns, rows) with incomplete and files, instead of the paths.
        #[arg(long)]
        json: bool,
    },
    /// Write DIR/slurm.sh, an sbatch --array script running `icl sweep run-one` per task.
    Slurm {
        /// The sweep folder (from `icl sweep plan`).
        dir: PathBuf,
        #[command(flatten)]
        slurm: SlurmArgs,
        /// The engine the tasks train with.
        #[arg(long)]
        engine: Option<String>,
        /// Submit the script with sbatch and print the job id.
        #[arg(long)]
        submit: bool,
    },
}

/// What a Slurm job asks for (`icl sweep slurm`, `icl repro --slurm`).
#[derive(clap::Args, Debug, Clone)]
pub struct SlurmArgs {
    /// Slurm partition (sbatch --partition; default: the cluster's).
    #[arg(long)]
    pub partition: Option<String>,
    /// Time limit per task (as sbatch: 30, 2:00:00, 1-00:00:00).
    #[arg(long)]
    pub time: Option<String>,
    /// CPUs per task (sbatch --cpus-per-task; the task's RAYON_NUM_THREADS; default 1).
    #[arg(long, allow_negative_numbers = true)]
    pub cpus_per_task: Option<usize>,
    /// Memory per task (as sbatch --mem, e.g. 2G).
    #[arg(long)]
    pub mem: Option<String>,
    /// At most K array tasks at once (--array=0-N%K).
    #[arg(long, value_name = "K", allow_negative_numbers = true)]
    pub max_parallel: Option<usize>,
    /// Job name (sbatch --job-name; default: icl-sweep-FOLDER, icl-repro-PAPER-runs).
    #[arg(long)]
    pub job_name: Option<String>,
    /// Another #SBATCH option, e.g. --sbatch=--account=abc (repeatable).
    #[arg(long = "sbatch", value_name = "OPTION", allow_hyphen_values = true)]
    pub sbatch: Vec<String>,
    /// The icl executable the tasks run (default: this one).
    #[arg(long, value_name = "PATH")]
    pub icl: Option<PathBuf>,
    /// Runs per array task (default 1, at most 256): task i trains runs i*K..i*K+K-1; on the
    /// Vulkan engine the one-layer runs of one shape among them train as one pack (one device,
    /// one call per step for all of them).
    #[arg(long, value_name = "K", allow_negative_numbers = true)]
    pub runs_per_task: Option<usize>,
}

impl SlurmArgs {
    /// The run layer's options; the tasks run `run_args` after their command.
    pub fn options(&self, run_args: Vec<String>) -> CliResult<SlurmOptions> {
        let icl = match &self.icl {
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .map_err(|e| CliError::runtime(format!("finding the icl executable: {e}")))?,
        };
        Ok(SlurmOptions {
            icl,
            partition: self.partition.clone(),
            time: self.time.clone(),
            cpus_per_task: self.cpus_per_task,
            mem: self.mem.clone(),
            max_parallel: self.max_parallel,
            job_name: self.job_name.clone(),
            extra: self.sbatch.clone(),
            run_args,
            runs_per_task: self.runs_per_task,
        })
    }
}

fn status_word(s: &RunStatus) -> String {
    match s {
        RunStatus::Skipped => "complete (skipped)".into(),
        RunStatus::Trained => "trained".into(),
        RunStatus::Resumed => "resumed".into(),
        RunStatus::Interrupted { step } => format!("interrupted at step {step}"),
        RunStatus::NotStarted => "not started".into(),
        RunStatus::Failed(e) => format!("failed: {e}"),
    }
}

/// The sweep's step reports: stop at a signal, and (unless `quiet`) a line on stderr of the runs
/// in training, their steps and time left, every [`icl_core_run::eta::line_every`].
fn lines(
    dir: &std::path::Path,
    quiet: bool,
) -> CliResult<impl Fn(usize, u64, u64, f64) -> bool + Sync> {
    let runs = (!quiet)
        .then(|| sweep::plan::specs(dir))
        .transpose()?
        .map(|specs| icl_core_run::eta::RunsLines::new(&specs, icl_core_run::eta::line_every()));
    Ok(move |i: usize, step: u64, total: u64, _: f64| {
        if let Some(line) = runs.as_ref().and_then(|r| r.step(i, step, total)) {
            eprintln!("{line}");
        }
        !signals::interrupted()
    })
}

/// Report the results and exit as the worst of them: 130 when interrupted, 1 when a run failed.
fn finish(results: &[sweep::RunResult], quiet: bool, json: bool) -> CliResult {
    if json {
        let v: Vec<_> = results.iter().map(front::result_json).collect();
        outln(&serde_json::Value::Array(v).to_string())?;
    }
    let mut text = String::new();
    for r in results {
        let timing = match (r.seconds, r.steps_per_s) {
            (Some(s), Some(v)) => format!("  {s:.2} s, {v:.0} steps/s"),
            _ => String::new(),
        };
        let _ = writeln!(text, "{}: {}{timing}", r.name, status_word(&r.status));
    }
    if !quiet {
        eprint!("{text}");
    }
    let failed: Vec<&sweep::RunResult> = results
        .iter()
        .filter(|r| matches!(r.status, RunStatus::Failed(_)))
        .collect();
    if results.iter().any(sweep::RunResult::stopped) {
        eprintln!(
            "icl: interrupted; the runs are checkpointed: run the same command again to continue"
        );
        std::process::exit(130);
    }
    if let Some(f) = failed.first() {
        let RunStatus::Failed(e) = &f.status else {
            unreachable!()
        };
        return Err(CliError::runtime(format!(
            "{} of {} runs failed (first: {}: {e})",
            failed.len(),
            results.len(),
            f.name
        )));
    }
    Ok(())
}

pub fn run(a: &Args) -> CliResult {
    match &a.cmd {
        Cmd::Plan {
            file,
            out: dir,
            json,
        } => {
            let p = sweep::plan(file, dir)?;
            eprintln!(
                "{} runs planned in {} (grid: {})",
                p.runs.len(),
                dir.display(),
                if p.keys.is_empty() {
                    "none".to_string()
                } else {
                    p.keys.join(" x ")
                }
            );
            if *json {
                outln(&front::plan_json(&p.runs).to_string())
            } else {
                outln(&dir.join(sweep::plan::MANIFEST).display().to_string())
            }
        }
        Cmd::Run { dir, run: r } => {
            let opts = r.opts.options()?;
            // the runs checkpoint at a step: a first signal stops them there
            signals::install();
            signals::arm();
            let results = opts.run(dir, &lines(dir, r.quiet)?)?;
            finish(&results, r.quiet, r.json)
        }
        Cmd::RunOne {
            dir,
            index,
            runs_per_task,
            run: r,
        } => {
            let opts = SweepRunArgs {
                index: Some(*index),
                runs_per_task: *runs_per_task,
                ..r.opts.clone()
            }
            .options()?;
            // the runs checkpoint at a step: a first signal stops them there
            signals::install();
            signals::arm();
            let results = opts.run(dir, &lines(dir, r.quiet)?)?;
            finish(&results, r.quiet, r.json)
        }
        Cmd::Status { dir, json } => {
            let st = sweep::status(dir)?;
            let mut text = String::new();
            let mut counts = [0usize; 5];
            for s in &st {
                let k = match s.state {
                    State::Complete { .. } => 0,
                    State::Running => 1,
                    State::Interrupted { .. } => 2,
                    State::Pending => 3,
                    State::Damaged { .. } => 4,
                };
                counts[k] += 1;
                if *json {
                    let _ = writeln!(text, "{}", front::state_json(s));
                } else {
                    let extra = match s.state {
                        State::Complete {
                            steps,
                            seconds,
                            steps_per_s,
                        } => format!("{steps} steps, {seconds:.2} s, {steps_per_s:.0} steps/s"),
                        State::Interrupted { step: Some(step) } => format!("at step {step}"),
                        State::Damaged { ref reason } => format!("({reason})"),
                        _ => String::new(),
                    };
                    let _ = writeln!(
                        text,
                        "{:>4}  {:<12} {}  {extra}",
                        s.index,
                        s.state.label(),
                        s.name
                    );
                }
            }
            if !*json {
                let _ = writeln!(
                    text,
                    "{} runs: {} complete, {} running, {} interrupted, {} pending{}",
                    st.len(),
                    counts[0],
                    counts[1],
                    counts[2],
                    counts[3],
                    if counts[4] > 0 {
                        format!(
                            ", {} damaged (`icl sweep run` trains them again)",
                            counts[4]
                        )
                    } else {
                        String::new()
                    }
                );
            }
            out(&text)
        }
        Cmd::Collect { dir, partial, json } => {
            let c = sweep::collect(dir, *partial)?;
            if !c.incomplete.is_empty() {
                eprintln!(
                    "left out {} incomplete runs (first: {})",
                    c.incomplete.len(),
                    c.incomplete[0]
                );
            }
            if *json {
                return outln(&icl_core_run::summary::pretty(&front::collected_json(&c)));
            }
            let mut text = String::new();
            for f in &c.files {
                let _ = writeln!(text, "{}", f.display());
            }
            out(&text)
        }
        Cmd::Slurm {
            dir,
            slurm,
            engine,
            submit,
        } => {
            let mut run_args = Vec::new();
            if let Some(e) = engine {
                run_args.push("--engine".to_string());
                run_args.push(e.clone());
            }
            let o = slurm.options(run_args)?;
            let path = sweep::slurm::write_script(dir, &o)?;
            if *submit {
                let id = sweep::slurm::submit(&path)?;
                eprintln!("submitted {} as job {id}", path.display());
                outln(&id)
            } else {
                outln(&path.display().to_string())
            }
        }
    }
}
