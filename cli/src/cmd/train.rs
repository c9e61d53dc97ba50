//! `icl train`: train a model into a run folder (see `icl_core_run::train` for the folder's guarantees:
//! complete or absent, checkpointed, resumable). Prints the path of `summary.json` last.
use super::common::{outln, progress, ConfigArgs};
use crate::error::{CliError, CliResult};
use crate::signals;
use icl_core_run::options::TrainArgs;
use icl_core_run::train::Outcome;
use std::path::PathBuf;

/// Arguments of `icl train`.
#[derive(clap::Args, Debug)]
#[command(
    override_usage = "icl train [--preset NAME | --config FILE] [--set KEY=VALUE]... [OPTIONS] --out <OUT>\n       icl train --resume <DIR> [--steps N] [OPTIONS]"
)]
pub struct Args {
    #[command(flatten)]
    pub cfg: ConfigArgs,
    /// The options (`icl_core_run::options::TrainArgs`: the C API's keys, Python's keywords).
    #[command(flatten)]
    pub opts: TrainArgs,
    /// Output run folder (written completely or not at all).
    #[arg(long, required_unless_present = "resume")]
    pub out: Option<PathBuf>,
    /// Continue the run in DIR: an interrupted run from its last checkpoint, or a finished run
    /// extended to --steps. The run keeps its own config: --preset, --config, --set, --seed,
    /// --out and --force are refused with it.
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with_all = ["out", "force", "seed", "preset", "config", "sets"]
    )]
    pub resume: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(a: &Args) -> CliResult {
    let opts = if a.resume.is_some() {
        a.opts.resume_options()?
    } else {
        a.opts.options(a.cfg.preset_name())?
    };
    // unarmed until the first step is done: a signal while the config is read and checked and
    // the run set up ends the process at once (nothing to checkpoint yet)
    signals::install();
    // the config: a fresh run's from the flags, a resumed one's from its folder
    let cfg = match &a.resume {
        Some(dir) => {
            let cfg = icl_core_run::train::resume_config(dir);
            if let Some(c) = &cfg {
                icl_core_run::train::check_engine_choice(c, a.opts.engine.as_deref())?;
            }
            cfg
        }
        None => {
            let mut cfg = a.cfg.build()?;
            a.opts.apply(&mut cfg)?;
            icl_core_run::train::check_engine_choice(&cfg, a.opts.engine.as_deref())?;
            Some(cfg)
        }
    };
    if !a.quiet {
        if let Some(note) = cfg
            .as_ref()
            .and_then(|c| icl_core_run::engines::simd_fallback_note(c, opts.engine.as_deref()))
        {
            eprintln!("icl: note: {note}");
        }
    }
    // what a fresh run trains, said once it has started (a refusal before stays one line)
    let starting = match (&a.resume, &cfg) {
        (None, Some(c)) => Some(format!(
            "icl: training {}: {} steps{}{}",
            a.cfg.describe(),
            c.train.steps,
            if a.opts.steps.is_none() {
                " (--steps N sets another length)"
            } else {
                ""
            },
            icl_core_run::eta::curriculum_note(c).map_or(String::new(), |n| format!("\nicl: {n}"))
        )),
        _ => None,
    };
    let mut pb = None;
    let (mut last, mut last_t) = (0u64, std::time::Instant::now());
    // stderr not a terminal (a log file, a cluster's job output): no bar, a plain line every
    // `line_every()` instead (30 s, or ICL_PROGRESS_SECONDS)
    use std::io::IsTerminal;
    let lines = !a.quiet && !std::io::stderr().is_terminal();
    let every = icl_core_run::eta::line_every();
    let mut line_t = std::time::Instant::now();
    let mut report = |step: u64, total: u64, loss: f64| {
        let (start, bar, eta, t0) = pb.get_or_insert_with(|| {
            // the first call comes after this session's first step
            let start = step - 1;
            if !a.quiet {
                if let Some(line) = &starting {
                    eprintln!("{line}");
                }
                if let Some(dir) = &a.resume {
                    if start == 0 {
                        eprintln!(
                            "icl: resuming {} from step 0 of {total}: it was stopped before its first checkpoint, so it starts over",
                            dir.display()
                        );
                    } else {
                        eprintln!("icl: resuming {} from step {start} of {total}", dir.display());
                    }
                }
            }
            last = start;
            // the bar's clock starts after this session's first step: the work from there on
            let eta = match &cfg {
                Some(c) => icl_core_run::eta::Eta::new(c, step),
                None => icl_core_run::eta::Eta::uniform(step),
            };
            let bar = progress(start, total, eta.clone(), a.quiet);
            line_t = std::time::Instant::now();
            (start, bar, eta, line_t)
        });
        if lines && step < total && line_t.elapsed() >= every {
            let secs = t0.elapsed().as_secs_f64();
            let rate = (step - *start - 1) as f64 / secs.max(1e-9);
            let rate = if rate >= 100.0 {
                format!("{rate:.0}")
            } else {
                format!("{rate:.2}")
            };
            eprintln!(
                "icl: step {step}/{total}, loss {loss:.4} (this step's batch), {rate} steps/s, eta {}",
                eta.left(step, total, secs)
            );
            line_t = std::time::Instant::now();
        }
        // every 500 steps, and at least every quarter second where steps are slow
        if step - last >= 500 || step == total || last_t.elapsed().as_millis() >= 250 {
            bar.set_position(step - *start);
            bar.set_message(format!("loss {loss:.4} (this step's batch)"));
            (last, last_t) = (step, std::time::Instant::now());
        }
        if signals::interrupted() {
            return false;
        }
        if step < total {
            // in the loop: a first signal stops at the next step, with a checkpoint
            signals::arm();
        } else {
            // the last step is done: the outputs and the final evaluation are not steps, so a
            // signal there ends the process (the run resumes from its last checkpoint)
            signals::disarm();
        }
        true
    };
    let (outcome, dir) = match (&a.resume, &cfg) {
        (Some(dir), _) => (
            icl_core_run::train::resume(dir, a.opts.steps, &opts, &mut report)?,
            dir.clone(),
        ),
        (None, Some(c)) => {
            let out = a.out.clone().unwrap_or_default();
            (
                icl_core_run::train::train(c, &out, &opts, &mut report)?,
                out,
            )
        }
        (None, None) => return Err(CliError::input("no config to train")),
    };
    if let Some((_, bar, _, _)) = pb {
        bar.finish_and_clear();
    }
    match outcome {
        Outcome::Finished { dir, summary } => {
            if !a.quiet {
                let from = summary.resumed_from.unwrap_or(0);
                let done = summary.steps - from;
                let which = if from > 0 {
                    format!(
                        "steps {}-{} ({done} steps, resumed at {from})",
                        from + 1,
                        summary.steps
                    )
                } else {
                    format!("{done} steps")
                };
                let window = match &cfg {
                    Some(c) if icl_core::train::objective::full_batch(c) => {
                        " (full-batch loss on the training set)".to_string()
                    }
                    Some(c) => {
                        let (f, l) = icl_core::train::row_window(summary.steps, c.train.log_every);
                        if f == l {
                            format!(" (batch loss of step {l})")
                        } else {
                            format!(" (mean batch loss of steps {f}-{l})")
                        }
                    }
                    None => String::new(),
                };
                eprintln!(
                    "trained {which} in {:.2} s ({:.0} steps/s, engine {}); final loss {:.6}{window}",
                    summary.seconds,
                    summary.steps_per_second,
                    summary.engine,
                    summary.final_loss
                );
                if let Some(l) = &summary.linattn {
                    for (i, p) in l.plateaus.iter().enumerate() {
                        eprintln!(
                            "plateau {i}: loss {:.6}  theory L(M_{}) = {:.6}  (diff {:+.4})  steps {}-{}",
                            p.loss,
                            p.m,
                            p.theory,
                            p.loss - p.theory,
                            p.start_step,
                            p.end_step
                        );
                    }
                }
            }
            outln(&dir.summary().display().to_string())
        }
        Outcome::Interrupted { step, .. } => {
            eprintln!(
                "icl: interrupted at step {step}; the run is checkpointed: continue it with `icl train --resume {}`",
                dir.display()
            );
            std::process::exit(130);
        }
    }
}
