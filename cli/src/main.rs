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
    /// Per-head circuits (omega, mu, kind, pattern metrics) of a trained model; writes circuits.svg.
    Analyze(cmd::analyze::Args),
    /// Make a run folder from a PyTorch state_dict saved as safetensors (reference-code layout).
    Import(cmd::import::Args),
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
    icl_run::engines::adopt_current_thread();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => parse_error(e),
    };
    // a misspelt ICL_SIMD would otherwise run at the detected level without a word
    if let Err(e) = icl_run::engines::check_simd_env() {
        eprintln!("icl: error: {e}");
        std::process::exit(2);
    }
    let res = match &cli.cmd {
        Command::Train(a) => cmd::train::run(a),
        Command::Eval(a) => cmd::eval::run(a),
        Command::Analyze(a) => cmd::analyze::run(a),
        Command::Import(a) => cmd::import::run(a),
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
/// `icl: error: ...`, exit code 2.
fn parse_error(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            std::process::exit(0);
        }
        _ => {
            let text = e.render().to_string();
            let mut lines = text.lines();
            let first = lines.next().unwrap_or("bad arguments");
            let mut msg = first.strip_prefix("error: ").unwrap_or(first).to_string();
            if e.kind() == ErrorKind::MissingRequiredArgument {
                // clap lists the missing arguments on the indented lines that follow
                let missing: Vec<&str> = lines
                    .take_while(|l| l.starts_with(char::is_whitespace))
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect();
                if !missing.is_empty() {
                    msg = format!("{} {}", msg, missing.join(", "));
                }
            }
            let hint = match e.kind() {
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                | ErrorKind::MissingSubcommand => missing_subcommand(&text),
                _ => format!("{msg} (see --help)"),
            };
            eprintln!("icl: error: {hint}");
            std::process::exit(2);
        }
    }
}

/// The one line for a command given without its subcommand: `icl` alone names the top-level
/// commands, `icl sweep` names sweep's. Clap renders either its error (`'icl sweep' requires a
/// subcommand` and `[subcommands: ...]`) or the command's help (`Usage: icl sweep <COMMAND>`
/// and the `Commands:` list); both name the command and its subcommands.
fn missing_subcommand(text: &str) -> String {
    let from_error = text.lines().next().and_then(|l| {
        let c = l.split('\'').nth(1)?;
        let subs = text.lines().find_map(|l| {
            l.trim()
                .strip_prefix("[subcommands: ")?
                .strip_suffix(']')
                .map(|x| {
                    x.split(',')
                        .map(|n| n.trim().to_string())
                        .collect::<Vec<_>>()
                })
        })?;
        Some((c.to_string(), subs))
    });
    let from_help = || {
        let c = text.lines().find_map(|l| {
            l.trim()
                .strip_prefix("Usage: ")?
                .strip_suffix(" <COMMAND>")
                .map(str::to_string)
        })?;
        let subs: Vec<String> = text
            .lines()
            .skip_while(|l| l.trim() != "Commands:")
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect();
        Some((c, subs))
    };
    match from_error.or_else(from_help) {
        Some((c, subs)) if c.starts_with("icl ") && !subs.is_empty() => {
            let names: Vec<&str> = subs.iter().map(String::as_str).filter(|n| *n != "help").collect();
            format!(
                "`{c}` needs a subcommand ({}); see `{c} --help`",
                names.join(", ")
            )
        }
        _ => "a subcommand is required (train, eval, analyze, import, presets, theory, bench, embedded, repro, sweep); see `icl --help`".to_string(),
    }
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
