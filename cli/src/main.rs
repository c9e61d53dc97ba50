//! `icl`: train one-layer attention models on in-context linear regression, analyse their
//! circuits, evaluate them against classical estimators and theory. Thin: parsing and printing;
//! the science lives in `icl-core`.
mod cmd;
mod engines;
mod error;
mod plot;

use clap::{Parser, Subcommand};

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
}

fn main() {
    restore_sigpipe();
    let cli = Cli::parse();
    let res = match &cli.cmd {
        Command::Train(a) => cmd::train::run(a),
        Command::Eval(a) => cmd::eval::run(a),
        Command::Analyze(a) => cmd::analyze::run(a),
        Command::Import(a) => cmd::import::run(a),
        Command::Presets(a) => cmd::presets::run(a),
        Command::Theory(a) => cmd::theory::run(a),
        Command::Bench(a) => cmd::bench::run(a),
    };
    if let Err(e) = res {
        eprintln!("icl: error: {e}");
        std::process::exit(e.code);
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
