//! The theory registry ([`icl_core::theory::registry`]) for front ends: [`evaluate`] (the
//! registry with the runs a `--run` parameter names loaded from their folders), JSON forms of a
//! quantity's result and of the list of quantities (the contracts of `icl theory --json` and
//! `icl theory --list --json`, also returned by the C API), and trajectory files.
use crate::error::{Result, RunError};
use crate::folder::RunDir;
use crate::plot::{lines_figure, Figure, Series};
use icl_core::theory::registry::{
    evaluate_with, kind_of, registry, Kind, Out, Trained, Traj, Value,
};
use serde_json::{json, Map};
use std::collections::BTreeMap;
use std::path::Path;

/// Evaluate theory quantity `name` with parameters given as (name, text) pairs: the registry's
/// [`evaluate`](icl_core::theory::registry::evaluate), except that when the quantity takes a
/// `run` parameter (the temperature quantities) and it names a folder, that run is loaded
/// ([`load_trained`]) and handed to the registry. Every front end (CLI, C, C++, Python) calls
/// this, so `--run` means the same everywhere, and so does a result that is not finite: a value,
/// extra output or trajectory point that is NaN or infinite (a closed form that overflows at
/// these parameters, e.g. `sigma2 = 1e308`) is [`icl_core::Error::Numerical`] naming it, never
/// printed as `inf`/`NaN` or returned as JSON `null` (which a caller would misread).
pub fn evaluate(name: &str, args: &[(String, String)]) -> Result<(Out, BTreeMap<String, String>)> {
    let takes_run = registry()
        .iter()
        .find(|q| q.name == name)
        .is_some_and(|q| q.all_params().any(|p| p.0 == "run"));
    let dir = args
        .iter()
        .filter(|(k, _)| takes_run && k == "run")
        .map(|(_, v)| v.trim())
        .find(|v| !v.is_empty() && *v != "none");
    let run = dir.map(|d| load_trained(Path::new(d))).transpose()?;
    check_list_numbers(name, args)?;
    let (out, params) = evaluate_with(name, args, run).map_err(argument_error)?;
    check_finite(name, &out)?;
    Ok((out, params))
}

/// A closed form refusing its parameters (`ols-risk` at L <= d + 1, `bayes-risk-mc` at
/// sigma^2 = 0: the core's [`icl_core::Error::InvalidConfig`], as a configuration would be) is,
/// for a quantity evaluated by name, an invalid argument: the parameters are the caller's
/// arguments (the C API's `ICL_ERR_ARGUMENT`, which `icl_theory_eval` lists).
fn argument_error(e: icl_core::Error) -> RunError {
    match e {
        icl_core::Error::InvalidConfig(m) => icl_core::Error::InvalidArgument(m).into(),
        other => other.into(),
    }
}

/// A number inside a list parameter (`--omega 1,nan`, a covariance, a mean) that is NaN or
/// infinite is [`icl_core::Error::NonFinite`], as a scalar parameter's is (the registry reads
/// such an item as one more malformed value).
fn check_list_numbers(name: &str, args: &[(String, String)]) -> Result<()> {
    let reg = registry();
    let Some(q) = reg.iter().find(|q| q.name == name) else {
        return Ok(());
    };
    for (k, v) in args {
        let Some(p) = q.all_params().find(|p| p.0 == k) else {
            continue;
        };
        if !matches!(kind_of(name, p), Kind::List(..) | Kind::Mean | Kind::Cov) {
            continue;
        }
        for item in v.split(',').map(str::trim) {
            if item.parse::<f64>().is_ok_and(|x| !x.is_finite()) {
                return Err(icl_core::Error::NonFinite(format!(
                    "--{k}: {item:?} is not a finite number"
                ))
                .into());
            }
        }
    }
    Ok(())
}

/// The first number of a value that is not finite, if any.
fn non_finite(v: &Value) -> Option<f64> {
    match v {
        Value::Num(x) if !x.is_finite() => Some(*x),
        Value::List(xs) => xs.iter().find_map(non_finite),
        _ => None,
    }
}

/// Fail with [`icl_core::Error::Numerical`] when a number of `out` is not finite.
fn check_finite(name: &str, out: &Out) -> Result<()> {
    let named =
        std::iter::once(("value", &out.value)).chain(out.extra.iter().map(|(k, v)| (*k, v)));
    for (k, v) in named {
        if let Some(x) = non_finite(v) {
            return Err(icl_core::Error::Numerical(format!(
                "{name}: {k} = {x} is not finite (the closed form overflows at these parameters)"
            ))
            .into());
        }
    }
    if let Some(t) = &out.traj {
        let points = t.rows.iter().flatten().chain(t.refs.iter().map(|(_, y)| y));
        if let Some(x) = points.copied().find(|x| !x.is_finite()) {
            return Err(icl_core::Error::Numerical(format!(
                "{name}: its trajectory reaches {x} (not finite) at these parameters"
            ))
            .into());
        }
    }
    Ok(())
}

/// The run in folder `dir` (its `model.safetensors`, which holds the config) as the registry
/// takes it, the parameters widened to f64.
pub fn load_trained(dir: &Path) -> Result<Trained> {
    let rd = RunDir::new(dir);
    rd.check_run()?;
    let l = crate::checkpoint::load(&rd.model())?;
    Ok(Trained {
        config: l.config,
        model: l.model.to::<f64>(),
    })
}

/// A registry value as JSON.
pub fn to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Num(x) => json!(x),
        Value::Text(s) => json!(s),
        Value::List(l) => serde_json::Value::Array(l.iter().map(to_json).collect()),
    }
}

/// `{"name", "value", <extra outputs>..., "params": {name: value}}`.
pub fn result_json(name: &str, out: &Out, params: &BTreeMap<String, String>) -> serde_json::Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(name));
    m.insert("value".into(), to_json(&out.value));
    for (k, v) in &out.extra {
        m.insert((*k).into(), to_json(v));
    }
    m.insert("params".into(), json!(params));
    serde_json::Value::Object(m)
}

/// Every quantity: `[{"name", "paper", "about", "params": [{"flag", "default", "help", "accepts"}]}]`.
pub fn list_json() -> serde_json::Value {
    let v: Vec<_> = registry()
        .iter()
        .map(|q| {
            json!({"name": q.name, "paper": q.paper, "about": q.about,
                   "params": q.param_kinds().iter().map(|(p, k)| json!({
                       "flag": p.0, "default": p.1, "help": p.2, "accepts": k.describe(),
                   })).collect::<Vec<_>>()})
        })
        .collect();
    serde_json::Value::Array(v)
}

/// A value in plain text (numbers, lists joined by commas, `none`).
pub fn to_text(v: &Value) -> String {
    match v {
        Value::Null => "none".into(),
        Value::Num(x) => format!("{x}"),
        Value::Text(s) => s.clone(),
        Value::List(l) => l.iter().map(to_text).collect::<Vec<_>>().join(", "),
    }
}

/// A trajectory as CSV text (header = column names).
fn csv_text(t: &Traj) -> Result<String> {
    let rows = t
        .rows
        .iter()
        .map(|r| r.iter().map(|v| format!("{v}")).collect());
    crate::csv_text::csv_text(&t.columns, rows)
}

/// Write a trajectory as CSV (header = column names).
pub fn write_csv(path: &Path, t: &Traj) -> Result<()> {
    crate::folder::atomic_write(path, csv_text(t)?.as_bytes())
}

/// A reader's names for a trajectory column or reference line: (short, for the y label; long,
/// for the legend). Names not listed are their own.
fn display_name(column: &str) -> (String, String) {
    let digits = |p: &str| column.strip_prefix(p).and_then(|k| k.parse::<usize>().ok());
    if let Some(k) = digits("omega") {
        let n = format!("ω{}", crate::plot::subscript(k));
        return (n.clone(), format!("{n} (head {k})"));
    }
    if let Some(k) = digits("mu") {
        let n = format!("μ{}", crate::plot::subscript(k));
        return (n.clone(), format!("{n} (head {k})"));
    }
    let (short, long) = match column {
        "phi" => ("φ", "φ (KQ scale)"),
        "rho" => ("ρ", "ρ (OV scale)"),
        "approx_loss" => ("L~", "approximate loss L~"),
        "two_phi_rho" => ("2φρ", "2φρ (effective step)"),
        "phi_star" => ("φ*", "φ*(ρ), the flow's target"),
        "sigma" => ("σ", "σ"),
        "eta*" => ("η*", "η*, the optimal step"),
        "L~*" => ("L~*", "L~*, the least approximate loss"),
        "sigma(inf)" => ("σ(∞)", "σ(∞)"),
        "L(inf)" => ("L(∞)", "L(∞)"),
        other => (other, other),
    };
    (short.into(), long.into())
}

/// Whether a linear x axis would crowd the trajectory's change into a sliver at its left (at
/// least half of the plotted columns make half their total variation in the first 2% of x)
/// while x spans a factor 1000 or more: then the x axis is logarithmic (He et al.'s flow moves
/// by t = 10 of 2000, φ then drifting slowly along the manifold).
fn early_dynamics(t: &Traj) -> bool {
    let xs: Vec<f64> = t.rows.iter().filter_map(|r| r.first().copied()).collect();
    let pos = xs.iter().copied().filter(|x| *x > 0.0 && x.is_finite());
    let (lo, hi) = pos.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if !(lo > 0.0 && hi / lo >= 1e3) || xs.iter().any(|x| *x < 0.0) || t.plot.is_empty() {
        return false;
    }
    let cut = xs[0] + 0.02 * (hi - xs[0]);
    let early_columns = t
        .plot
        .iter()
        .filter(|&&j| {
            let (mut early, mut total) = (0.0, 0.0);
            for w in t.rows.windows(2) {
                let (Some(a), Some(b)) = (w[0].get(j), w[1].get(j)) else {
                    continue;
                };
                let dv = (b - a).abs();
                if !dv.is_finite() {
                    continue;
                }
                total += dv;
                if w[1][0] <= cut {
                    early += dv;
                }
            }
            total > 0.0 && early >= 0.5 * total
        })
        .count();
    2 * early_columns >= t.plot.len()
}

/// The plot of a trajectory (its plotted columns against column 0, reference lines dashed),
/// the columns by their readers' names, the y axis named after them, and a log x axis where a
/// linear one would crowd the dynamics into a sliver ([`early_dynamics`]).
fn figure(t: &Traj) -> Result<Figure> {
    if t.rows.is_empty() || t.columns.is_empty() {
        return Err(RunError::Refused("the trajectory is empty".into()));
    }
    let mut series: Vec<Series> = t
        .plot
        .iter()
        .filter(|&&j| j < t.columns.len())
        .map(|&j| {
            Series::line(
                display_name(&t.columns[j]).1,
                t.rows
                    .iter()
                    .filter_map(|r| Some((*r.first()?, *r.get(j)?)))
                    .collect(),
            )
        })
        .collect();
    let log_x = early_dynamics(t);
    let x0 = if log_x {
        t.rows
            .iter()
            .filter_map(|r| r.first().copied())
            .find(|x| *x > 0.0)
    } else {
        t.rows.first().and_then(|r| r.first().copied())
    };
    if let (Some(x0), Some(x1)) = (x0, t.rows.last().and_then(|r| r.first().copied())) {
        for (name, y) in &t.refs {
            series.push(Series::level(display_name(name).1, *y, x0, x1));
        }
    }
    let mut ylabel: Vec<String> = t
        .plot
        .iter()
        .filter_map(|&j| t.columns.get(j))
        .map(|c| display_name(c).0)
        .collect();
    ylabel.dedup();
    let mut fig = lines_figure(
        &t.title,
        &display_name(&t.columns[0]).1,
        &ylabel.join(", "),
        &series,
        t.log_y,
    );
    if log_x {
        for p in &mut fig.panels {
            p.x.scale = crate::plot::Scale::Log;
        }
    }
    Ok(fig)
}

/// Plot a trajectory as SVG (its plotted columns against column 0, reference lines dashed).
pub fn write_svg(path: &Path, t: &Traj) -> Result<()> {
    figure(t)?.write(path)
}

/// Check the output files of a trajectory (`--csv`, `--svg`) before computing it: each can be
/// written ([`crate::folder::check_output`]), and they are not the same file.
pub fn check_outputs(csv: Option<&Path>, svg: Option<&Path>) -> Result<()> {
    if let (Some(a), Some(b)) = (csv, svg) {
        if a == b {
            return Err(RunError::Refused(format!(
                "--csv and --svg name the same file {}",
                a.display()
            )));
        }
    }
    for p in [csv, svg].into_iter().flatten() {
        crate::folder::check_output(p)?;
    }
    Ok(())
}

/// Write a trajectory's CSV and plot (either may be absent) together: both are made in memory
/// and written with [`crate::folder::atomic_write_all`], so a failure leaves neither changed.
pub fn write_files(csv: Option<&Path>, svg: Option<&Path>, t: &Traj) -> Result<()> {
    check_outputs(csv, svg)?;
    let mut files: Vec<(&Path, Vec<u8>)> = Vec::new();
    if let Some(p) = csv {
        files.push((p, csv_text(t)?.into_bytes()));
    }
    if let Some(p) = svg {
        files.push((p, crate::plot::file_bytes(p, &figure(t)?.svg()?)?));
    }
    let refs: Vec<(&Path, &[u8])> = files.iter().map(|(p, b)| (*p, b.as_slice())).collect();
    crate::folder::atomic_write_all(&refs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A closed form that overflows at its parameters is a numerical error for every front end,
    /// never a value of inf or NaN (printed by the CLI, `null` in JSON).
    #[test]
    fn results_that_are_not_finite_are_errors() {
        for (name, kv) in [
            (
                "ols-risk",
                vec![("sigma2", "1e308"), ("d", "1"), ("L", "3")],
            ),
            ("mu-gamma", vec![("gamma", "1e308")]),
            ("gd-risk", vec![("eta", "1e308")]),
            ("bayes-risk", vec![("xi", "1e-320")]),
            ("temperature-error", vec![("tau", "1e-300")]),
        ] {
            match evaluate(name, &args(&kv)) {
                Err(RunError::Core(icl_core::Error::Numerical(m))) => {
                    assert!(m.contains("not finite"), "{name}: {m}")
                }
                Err(e) => panic!("{name}: {e}"),
                Ok((out, _)) => panic!("{name}: {:?}", out.value),
            }
        }
        let (out, _) = evaluate("ols-risk", &args(&[("d", "1"), ("L", "3")])).unwrap();
        assert!(matches!(out.value, Value::Num(x) if x.is_finite()));
    }
}
