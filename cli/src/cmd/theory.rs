//! `icl theory`: every closed form and dynamical system of the four papers, one command away, from
//! the core's theory registry (`icl_core::theory::registry`): this file only parses, prints and
//! writes files.
//!
//! `icl theory --list` names each quantity with its parameters and what they accept;
//! `icl theory NAME --param value ...` computes one (`--json` prints `{"name", "value", ...}`).
//! ODE and simulator quantities write their trajectory with `--csv FILE` and plot it with
//! `--svg FILE`.
use super::common::{out, outln};
use crate::error::{CliError, CliResult};
use icl_core::theory::registry::{registry, Value};
use icl_core_run::summary::pretty;
use icl_core_run::theory::{check_outputs, evaluate, list_json, result_json, to_text, write_files};
use icl_core_run::RunError;
use std::path::PathBuf;

/// Arguments of `icl theory`.
#[derive(clap::Args)]
#[command(
    after_help = "Temperature of a trained run: `icl theory optimal-temperature | temperature-error | \
temperature-isotropic | temperature-mc --run DIR` evaluates the temperature paper's closed forms (exact and \
paper) at the linearised layer of a one-layer, one-head softmax run (M11 = C_f KQ_11, v21, v22 = OV, m21 set to \
0; the keys the run's), with d, l = L + 1 and the test distribution the run's unless given. That is the run's \
first-order expansion in the logits, not the run: on he2025-h1 (30000 steps, l = 41) it puts G(1) 21 % below \
what `icl eval DIR --tau 1` measures and tau_opt 12 % below the run's held-out `--tau opt`, while the shift of \
tau_opt under `--test-sigma-x 2` (x 1.99) matches the run's under `--shift x_cov=2` (x 1.98). See \
docs/papers/temperature.md, \"Temperature of a trained run\"."
)]
pub struct Args {
    /// Quantity name (`icl theory --list` shows all).
    pub name: Option<String>,
    /// List every quantity with its parameters (with a NAME: that quantity's).
    #[arg(long)]
    pub list: bool,
    /// Print JSON `{"name", "value", ...}`.
    #[arg(long)]
    pub json: bool,
    /// Write the trajectory (ODE and simulator quantities) as CSV.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Plot the trajectory as SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// The quantity's parameters: `--d 5 --L 40 ...` (see `--list`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub params: Vec<String>,
}

/// Global flags that may also appear among the parameters.
struct Globals {
    json: bool,
    list: bool,
    csv: Option<PathBuf>,
    svg: Option<PathBuf>,
}

/// Split `--flag value` / `--flag=value` pairs, taking out the global flags.
fn parse_params(raw: &[String], g: &mut Globals) -> CliResult<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let t = &raw[i];
        let Some(flag) = t.strip_prefix("--") else {
            return Err(CliError::input(format!(
                "unexpected argument {t:?} (parameters are --name value)"
            )));
        };
        match flag {
            "json" => g.json = true,
            "list" => g.list = true,
            _ => {
                let (k, v) = match flag.split_once('=') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => {
                        i += 1;
                        let v = raw
                            .get(i)
                            .ok_or_else(|| CliError::input(format!("--{flag} needs a value")))?;
                        (flag.to_string(), v.clone())
                    }
                };
                match k.as_str() {
                    "csv" => g.csv = Some(PathBuf::from(v)),
                    "svg" => g.svg = Some(PathBuf::from(v)),
                    _ => out.push((k, v)),
                }
            }
        }
        i += 1;
    }
    Ok(out)
}

/// Every quantity, or with `only` that one (an unknown name is an error).
fn list(as_json: bool, only: Option<&str>) -> CliResult {
    if let Some(n) = only {
        if !registry().iter().any(|q| q.name == n) {
            return Err(icl_core::Error::UnknownName(format!(
                "quantity {n:?}; `icl theory --list` names them all"
            ))
            .into());
        }
    }
    if as_json {
        let mut v = list_json();
        if let (Some(n), serde_json::Value::Array(a)) = (only, &mut v) {
            a.retain(|q| q["name"] == n);
        }
        return outln(&pretty(&v));
    }
    let mut s = String::new();
    let mut paper = "";
    for q in registry()
        .iter()
        .filter(|q| only.is_none_or(|n| q.name == n))
    {
        if q.paper != paper {
            paper = q.paper;
            s.push_str(&format!("[{paper}]\n"));
        }
        s.push_str(&format!("  {:<22} {}\n", q.name, q.about));
        for (p, k) in q.param_kinds() {
            let default = p.1.map_or("<required>".to_string(), |d| d.to_string());
            s.push_str(&format!(
                "  {:<22}   --{} {default}: {} ({})\n",
                "",
                p.0,
                p.2,
                k.describe()
            ));
        }
    }
    s.push_str("\nGlobal flags: --json, --csv FILE, --svg FILE (trajectory quantities).\n");
    out(&s)
}

pub fn run(a: &Args) -> CliResult {
    let mut g = Globals {
        json: a.json,
        list: a.list,
        csv: a.csv.clone(),
        svg: a.svg.clone(),
    };
    let params = parse_params(&a.params, &mut g)?;
    let name = match a.name.as_deref() {
        Some(n) if !g.list && n != "--list" => n,
        Some(n) if n != "--list" => return list(g.json, Some(n)),
        _ => return list(g.json, None),
    };
    // output files that cannot be written are refused before the (possibly long) computation
    check_outputs(g.csv.as_deref(), g.svg.as_deref())?;
    // a closed form is a function of its parameters alone: one that fails or overflows at these
    // parameters (the run layer's numerical error) is bad input, exit 2 like a parameter out of
    // range
    let (res, vals) = evaluate(name, &params).map_err(|e| match e {
        RunError::Core(icl_core::Error::Numerical(_)) => CliError::input(e.to_string()),
        other => other.into(),
    })?;
    if (g.csv.is_some() || g.svg.is_some()) && res.traj.is_none() {
        return Err(CliError::input(format!(
            "{name} has no trajectory (--csv/--svg apply to ODE and simulator quantities)"
        )));
    }
    if let Some(t) = &res.traj {
        write_files(g.csv.as_deref(), g.svg.as_deref(), t)?;
    }
    // warnings (e.g. a form outside its assumptions) go to stderr in both output modes
    for (k, v) in &res.extra {
        if let (&"warnings", Value::List(w)) = (k, v) {
            for t in w {
                eprintln!("icl: warning: {}", to_text(t));
            }
        }
    }
    if g.json {
        return outln(&pretty(&result_json(name, &res, &vals)));
    }
    let mut s = format!("{name} = {}\n", to_text(&res.value));
    for (k, v) in res.extra.iter().filter(|(k, _)| *k != "warnings") {
        s.push_str(&format!("  {k} = {}\n", to_text(v)));
    }
    out(&s)
}
