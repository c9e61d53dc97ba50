//! `icl`: train one-layer attention models on in-context linear regression, analyse their
//! circuits, evaluate them against classical estimators and theory. Thin: parsing and printing;
//! the science lives in `icl-core`.
mod cmd;
mod error;
mod signals;

use clap::{Parser, Subcommand};
use std::io::Write;

#[derive(Parser)]
#[command(
    name = "icl",
    version,
    about = "In-context learning of linear regression by attention models: train, analyse, evaluate, theory"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train a model from a preset (plus overrides) and write a run folder.
    Train(cmd::train::Args),
    /// Monte Carlo risk of a trained model and the classical baselines at several test lengths.
    Eval(cmd::eval::Args),
    /// Per-head circuits (omega, mu, kind, pattern metrics) of a trained model; writes
    /// circuits.svg (the table's columns: docs/cli.md, "The icl analyze table").
    Analyze(cmd::analyze::Args),
    /// Make a run folder from a PyTorch state_dict saved as safetensors (reference-code layout,
    /// or Garg et al.'s TransformerModel for GPT-2 presets).
    Import(cmd::import::Args),
    /// A GPT-2 run as a state_dict of Garg et al.'s TransformerModel (safetensors).
    Export(cmd::export::Args),
    /// A trained model's predictions on given prompts (safetensors in and out).
    Predict(cmd::predict::Args),
    /// Draw a finished run's training figures again (loss.svg, omega_mu.svg, pattern.svg, ...).
    Plot(cmd::plot::Args),
    /// List presets (and with --keys every configuration key).
    Presets(cmd::presets::Args),
    /// Closed forms and dynamical systems of the four papers.
    Theory(cmd::theory::Args),
    /// Measure training throughput (steps/s) of the engines.
    Bench(cmd::bench::Args),
    /// What the firmware example computes on a microcontroller, on the host (one JSON line).
    Embedded(cmd::embedded::Args),
    /// Reproduce a paper: run its experiments, check every claim, write report.json/.md/.html.
    Repro(cmd::repro::Args),
    /// Seeds x grids of runs from a sweep file: plan, run locally or on Slurm, status, collect.
    Sweep(cmd::sweep::Args),
}

fn main() {
    restore_sigpipe();
    icl_core_run::engines::adopt_current_thread();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => parse_error(e),
    };
    // a misspelt ICL_SIMD would otherwise run at the detected level without a word
    for check in [
        icl_core_run::engines::check_simd_env,
        icl_core_run::eta::check_progress_env,
    ] {
        if let Err(e) = check() {
            eprintln!("icl: error: {e}");
            std::process::exit(2);
        }
    }
    let res = match &cli.cmd {
        Command::Train(a) => cmd::train::run(a),
        Command::Eval(a) => cmd::eval::run(a),
        Command::Analyze(a) => cmd::analyze::run(a),
        Command::Import(a) => cmd::import::run(a),
        Command::Predict(a) => cmd::predict::run(a),
        Command::Export(a) => cmd::export::run(a),
        Command::Plot(a) => cmd::plot::run(a),
        Command::Presets(a) => cmd::presets::run(a),
        Command::Theory(a) => cmd::theory::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Embedded(a) => cmd::embedded::run(a),
        Command::Repro(a) => cmd::repro::run(a),
        Command::Sweep(a) => cmd::sweep::run(a),
    };
    if let Err(e) = res {
        let _ = writeln!(std::io::stderr(), "icl: error: {e}");
        std::process::exit(e.code);
    }
}

/// Help and version go to stdout (exit 0); every other argument error is one line on stderr,
/// `icl: error: ...`, exit code 2. The line is made from clap's error kind and context, not from
/// its rendered text: the arguments a `MissingRequiredArgument` names, and for a command given
/// without its subcommand the subcommands of the command the arguments reach.
fn parse_error(e: clap::Error) -> ! {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let msg = match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            std::process::exit(0);
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            missing_subcommand()
        }
        ErrorKind::MissingRequiredArgument => {
            let missing = match e.get(ContextKind::InvalidArg) {
                Some(ContextValue::Strings(v)) => v.join(", "),
                Some(ContextValue::String(v)) => v.clone(),
                _ => String::new(),
            };
            format!("the following required arguments were not provided: {missing} (see --help)")
        }
        _ => {
            // clap's own one-line statement of the error (its first line), then the hint
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("bad arguments");
            format!(
                "{} (see --help)",
                first.strip_prefix("error: ").unwrap_or(first)
            )
        }
    };
    eprintln!("icl: error: {msg}");
    std::process::exit(2);
}

/// The one line for a command given without its subcommand: `icl` alone names the top-level
/// commands, `icl sweep` names sweep's (the deepest command the arguments name, found in the
/// command tree clap derives from [`Cli`]).
fn missing_subcommand() -> String {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut path = vec![cmd.get_name().to_string()];
    for arg in std::env::args().skip(1) {
        let Some(sub) = cmd.find_subcommand(&arg).cloned() else {
            continue;
        };
        path.push(sub.get_name().to_string());
        cmd = sub;
    }
    let names: Vec<&str> = cmd
        .get_subcommands()
        .map(|c| c.get_name())
        .filter(|n| *n != "help")
        .collect();
    let c = path.join(" ");
    format!(
        "`{c}` needs a subcommand ({}); see `{c} --help`",
        names.join(", ")
    )
}

/// Die quietly on a closed pipe (`icl ... | head`) like other Unix tools, instead of panicking
/// in `println!`.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: resetting a signal disposition to its default before any thread is spawned.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
