//! The report files: `report.json` (the contract), `report.md` (with the PNG figures),
//! `report.html` (self-contained, figures inline), and every run's figures as
//! `figures/RUN-NAME.svg` and `.png`. Each file is written atomically.
use super::{Claim, RunRow, Runs};
use crate::error::Result;
use crate::folder::atomic_write;
use crate::plot::write_svg_text;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `report.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub paper: String,
    pub scale: String,
    pub version: String,
    pub machine: String,
    /// The config overrides every run was trained with (`icl repro --set`), where any: the
    /// runs then differ from the paper's setting by these keys.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, String>,
    /// The rule of each claim's verdict, in words, and where it comes from: fixed before the
    /// runs, and written in each report's header.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
    pub claims: Vec<Claim>,
    pub runs: Vec<RunRow>,
}

/// One claim's rule (the `rules` entries of `report.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub id: String,
    /// The verdict's rule in words (the claim's `tolerance`).
    pub rule: String,
    /// Where it comes from: a spec section, the paper, or icl's own check.
    pub source: String,
}

impl Report {
    /// (passed, total).
    pub fn passed(&self) -> (usize, usize) {
        (
            self.claims.iter().filter(|c| c.pass).count(),
            self.claims.len(),
        )
    }
}

/// The text of `report.json` (pretty-printed, one trailing newline): what `icl repro --json`
/// prints, `icl_repro` returns and Python's `icl.repro` parses.
pub fn json(r: &Report) -> String {
    let json = serde_json::to_string_pretty(r).unwrap_or_default();
    format!("{json}\n")
}

/// CPU model and logical cores of this machine.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    format!("{cpu}, {cores} logical cores, {}", std::env::consts::OS)
}

fn num(x: f64) -> String {
    if !x.is_finite() {
        "—".into()
    } else if x == 0.0 || (x.abs() >= 1e-3 && x.abs() < 1e5) {
        format!("{x:.4}")
    } else {
        format!("{x:.3e}")
    }
}

/// The paper's value, or the words for none.
fn paper(c: &Claim) -> String {
    if c.paper_value.is_finite() {
        num(c.paper_value)
    } else {
        "no number in the paper".into()
    }
}

/// The distance from the paper in standard errors, signed, or "—".
fn z(c: &Claim) -> String {
    c.z.map_or_else(|| "—".into(), |z| format!("{z:+.2}"))
}

fn measured(c: &Claim) -> String {
    let m = match c.stderr {
        Some(se) if se > 0.0 => format!("{} ± {}", num(c.measured), num(se)),
        _ => num(c.measured),
    };
    match (c.exact, c.paper_form) {
        (Some(e), Some(p)) => format!("{m} (exact {}, paper form {})", num(e), num(p)),
        (Some(e), None) => format!("{m} (exact {})", num(e)),
        (None, Some(p)) => format!("{m} (paper form {})", num(p)),
        (None, None) => m,
    }
}

/// `report.md`.
pub fn markdown(r: &Report) -> String {
    let (p, n) = r.passed();
    let mut s = String::new();
    let _ = writeln!(s, "# icl repro {} ({} scale)\n", r.paper, r.scale);
    let _ = writeln!(
        s,
        "icl {} on {}. **{p} of {n} claims pass.**\n",
        r.version, r.machine
    );
    if !r.set.is_empty() {
        let _ = writeln!(
            s,
            "Every run was trained with `{}` (a change from the paper's setting).\n",
            set_text(&r.set)
        );
    }
    if !r.rules.is_empty() {
        let _ = writeln!(
            s,
            "## Rules\n\nEach verdict's rule, fixed before the runs, and where it comes from:\n"
        );
        for x in &r.rules {
            let _ = writeln!(s, "- `{}`: {} ({})", x.id, x.rule, x.source);
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "| claim | figure | paper | icl | tolerance | verdict | distance / SE |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for c in &r.claims {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            c.id,
            c.figure,
            paper(c),
            measured(c),
            c.tolerance,
            if c.pass { "pass" } else { "**FAIL**" },
            z(c)
        );
    }
    let _ = writeln!(s, "\n## Claims\n");
    for c in &r.claims {
        let _ = writeln!(s, "- **{}** ({}): {}", c.id, c.figure, c.description);
        if !c.note.is_empty() {
            let _ = writeln!(s, "  *{}*", c.note);
        }
    }
    let _ = writeln!(s, "\n## Runs\n\n| run | seconds | steps/s |\n|---|---|---|");
    for x in &r.runs {
        let _ = writeln!(
            s,
            "| {} | {:.1} | {:.0} |",
            x.name, x.seconds, x.steps_per_s
        );
    }
    s
}

/// The overrides as `--set` flags: `--set train.steps=50000 --set ...`.
fn set_text(set: &BTreeMap<String, String>) -> String {
    set.iter()
        .map(|(k, v)| format!("--set {k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `report.html`: the table, the claims, and each run's figures inline.
pub fn html(r: &Report, runs: &Runs) -> String {
    let (p, n) = r.passed();
    let mut s = String::new();
    let _ = write!(
        s,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>icl repro {}</title><style>\
         body{{font-family:sans-serif;max-width:70em;margin:2em auto}}td,th{{padding:.2em .6em;border-bottom:1px solid #ddd}}\
         .fail{{color:#b00;font-weight:bold}}.pass{{color:#070}}figure{{display:inline-block;margin:.5em}}</style></head><body>",
        esc(&r.paper)
    );
    let _ = write!(
        s,
        "<h1>icl repro {} ({} scale)</h1><p>icl {} on {}. <b>{p} of {n} claims pass.</b></p>",
        esc(&r.paper),
        esc(&r.scale),
        esc(&r.version),
        esc(&r.machine)
    );
    if !r.set.is_empty() {
        let _ = write!(
            s,
            "<p>Every run was trained with <code>{}</code> (a change from the paper's setting).</p>",
            esc(&set_text(&r.set))
        );
    }
    if !r.rules.is_empty() {
        s.push_str("<h2>Rules</h2><p>Each verdict's rule, fixed before the runs, and where it comes from:</p><ul>");
        for x in &r.rules {
            let _ = write!(
                s,
                "<li><code>{}</code>: {} ({})</li>",
                esc(&x.id),
                esc(&x.rule),
                esc(&x.source)
            );
        }
        s.push_str("</ul>");
    }
    s.push_str(
        "<table><tr><th>claim</th><th>figure</th><th>description</th><th>paper</th><th>icl</th>\
         <th>tolerance</th><th>verdict</th><th>distance / SE</th></tr>",
    );
    for c in &r.claims {
        let _ = write!(
            s,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
            esc(&c.id),
            esc(&c.figure),
            esc(&c.description),
            if c.note.is_empty() { String::new() } else { format!("<br><i>{}</i>", esc(&c.note)) },
            esc(&paper(c)),
            esc(&measured(c)),
            esc(&c.tolerance),
            if c.pass { "pass" } else { "fail" },
            if c.pass { "pass" } else { "FAIL" },
            z(c)
        );
    }
    s.push_str("</table><h2>Runs</h2>");
    for x in &r.runs {
        let _ = write!(
            s,
            "<h3>{} <small>({:.1} s, {:.0} steps/s)</small></h3>",
            esc(&x.name),
            x.seconds,
            x.steps_per_s
        );
        for f in run_figures(runs, &x.name) {
            if let Ok(svg) = std::fs::read_to_string(&f) {
                let body = svg.find("<svg").map(|i| &svg[i..]).unwrap_or("");
                let _ = write!(s, "<figure>{body}</figure>");
            }
        }
    }
    s.push_str("</body></html>\n");
    s
}

/// The SVG figures of run `name`, sorted by file name.
fn run_figures(runs: &Runs, name: &str) -> Vec<PathBuf> {
    let mut figs: Vec<PathBuf> = std::fs::read_dir(runs.path(name))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "svg"))
                .collect()
        })
        .unwrap_or_default();
    figs.sort();
    figs
}

/// Copy every run's figures into `out/figures/` as `RUN-NAME-FIGURE.svg` (`h2-seed1-loss.svg`)
/// and render each to `RUN-NAME-FIGURE.png`; returns the PNG names (relative to `out`) with their run.
pub fn write_figures(out: &Path, r: &Report, runs: &Runs) -> Result<Vec<(String, String)>> {
    let dir = out.join("figures");
    std::fs::create_dir_all(&dir).map_err(|e| crate::error::RunError::Os(dir.clone(), e))?;
    let mut written = Vec::new();
    for x in &r.runs {
        for f in run_figures(runs, &x.name) {
            let Some(stem) = f.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            let svg = crate::folder::read_text(&f)?;
            let base = format!("{}-{stem}", x.name.replace(['/', '\\'], "_"));
            atomic_write(&dir.join(format!("{base}.svg")), svg.as_bytes())?;
            write_svg_text(&dir.join(format!("{base}.png")), &svg)?;
            written.push((x.name.clone(), format!("figures/{base}.png")));
        }
    }
    Ok(written)
}

/// The figures section of `report.md`: each run's PNGs.
fn markdown_figures(figs: &[(String, String)]) -> String {
    let mut s = String::new();
    if figs.is_empty() {
        return s;
    }
    let _ = writeln!(s, "\n## Figures\n");
    let mut last = "";
    for (run, png) in figs {
        if run != last {
            let _ = writeln!(s, "\n### {run}\n");
            last = run;
        }
        let _ = writeln!(s, "![{run}: {png}]({png})");
    }
    s
}

/// Write `report.json`, `report.md`, `report.html` and the figures (`figures/*.svg`, `*.png`)
/// into `out`.
pub fn write_reports(out: &Path, r: &Report, runs: &Runs) -> Result<()> {
    atomic_write(&out.join("report.json"), json(r).as_bytes())?;
    let figs = write_figures(out, r, runs)?;
    let md = markdown(r) + &markdown_figures(&figs);
    atomic_write(&out.join("report.md"), md.as_bytes())?;
    atomic_write(&out.join("report.html"), html(r, runs).as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_carry_every_run_figure_as_svg_and_png() {
        let out = std::env::temp_dir().join(format!("icl-report-figs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let run = out.join("runs").join("h2-seed1");
        std::fs::create_dir_all(&run).unwrap();
        let curve: Vec<(f64, f64)> = (1..=40)
            .map(|k| (100.0 * k as f64, 1.0 / k as f64))
            .collect();
        crate::plot::figures::loss(&curve)
            .write(&run.join("loss.svg"))
            .unwrap();
        let r = Report {
            paper: "he2025".into(),
            scale: "smoke".into(),
            version: "0".into(),
            machine: "test".into(),
            set: [("train.steps".to_string(), "50".to_string())].into(),
            rules: vec![Rule {
                id: "h2-risk".into(),
                rule: "0.2435 ± 0.006".into(),
                source: "spec he2025 §5.1".into(),
            }],
            claims: vec![Claim {
                id: "h2-risk".into(),
                figure: "Fig. 3".into(),
                description: "d".into(),
                paper_value: f64::NAN,
                measured: 0.25,
                stderr: Some(0.002),
                z: Some(3.25),
                exact: None,
                paper_form: None,
                tolerance: "0.2435 ± 0.006".into(),
                pass: false,
                note: String::new(),
                runs: vec!["h2-seed1".into()],
            }],
            runs: vec![RunRow {
                name: "h2-seed1".into(),
                seconds: 1.0,
                steps_per_s: 1.0,
            }],
        };
        let runs = Runs {
            dir: out.join("runs"),
        };
        write_reports(&out, &r, &runs).unwrap();
        let svg = std::fs::read_to_string(out.join("figures/h2-seed1-loss.svg")).unwrap();
        assert_eq!(svg, std::fs::read_to_string(run.join("loss.svg")).unwrap());
        let png = std::fs::read(out.join("figures/h2-seed1-loss.png")).unwrap();
        let (w, h, _) = crate::plot::png::decode(&png).unwrap();
        assert_eq!((w, h), (1600, 1000));
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(md.contains("](figures/h2-seed1-loss.png)"), "{md}");
        // the rules in the header, the paper's missing number in words, the distance in SE
        assert!(
            md.contains("## Rules")
                && md.contains("- `h2-risk`: 0.2435 ± 0.006 (spec he2025 §5.1)"),
            "{md}"
        );
        assert!(
            md.contains("| `h2-risk` | Fig. 3 | no number in the paper | 0.2500 ± 0.0020 | 0.2435 ± 0.006 | **FAIL** | +3.25 |"),
            "{md}"
        );
        // the overrides every run was trained with, in each report
        assert!(
            md.contains("Every run was trained with `--set train.steps=50`"),
            "{md}"
        );
        let html = std::fs::read_to_string(out.join("report.html")).unwrap();
        assert!(html.contains("<figure><svg"));
        assert!(html.contains("<code>--set train.steps=50</code>"));
        assert!(html.contains("<li><code>h2-risk</code>: 0.2435 ± 0.006 (spec he2025 §5.1)</li>"));
        assert!(html.contains("<td>no number in the paper</td>"));
        let json = std::fs::read_to_string(out.join("report.json")).unwrap();
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(back.rules, r.rules);
        assert!(back.claims[0].paper_value.is_nan() && back.claims[0].z == Some(3.25));
        assert!(json.contains("\"rules\": [") && json.contains("\"source\": \"spec he2025 §5.1\""));
        assert!(
            json.contains("\"set\": {\n    \"train.steps\": \"50\"\n  }"),
            "{json}"
        );
        std::fs::remove_dir_all(&out).unwrap();
    }
}
