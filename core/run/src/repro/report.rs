//! The report files: `report.json` (the contract), `report.md`, `report.html` (self-contained,
//! figures inline). Each file is written atomically.
use super::{Claim, RunRow, Runs};
use crate::error::Result;
use crate::folder::atomic_write;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;

/// `report.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub paper: String,
    pub scale: String,
    pub version: String,
    pub machine: String,
    pub claims: Vec<Claim>,
    pub runs: Vec<RunRow>,
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
    let _ = writeln!(s, "| claim | figure | paper | icl | tolerance | verdict |");
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for c in &r.claims {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} |",
            c.id,
            c.figure,
            num(c.paper_value),
            measured(c),
            c.tolerance,
            if c.pass { "pass" } else { "**FAIL**" }
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
        "<h1>icl repro {} ({} scale)</h1><p>icl {} on {}. <b>{p} of {n} claims pass.</b></p><table>\
         <tr><th>claim</th><th>figure</th><th>description</th><th>paper</th><th>icl</th><th>tolerance</th><th>verdict</th></tr>",
        esc(&r.paper),
        esc(&r.scale),
        esc(&r.version),
        esc(&r.machine)
    );
    for c in &r.claims {
        let _ = write!(
            s,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
            esc(&c.id),
            esc(&c.figure),
            esc(&c.description),
            if c.note.is_empty() { String::new() } else { format!("<br><i>{}</i>", esc(&c.note)) },
            num(c.paper_value),
            esc(&measured(c)),
            esc(&c.tolerance),
            if c.pass { "pass" } else { "fail" },
            if c.pass { "pass" } else { "FAIL" }
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
        let dir = runs.path(&x.name);
        let mut figs: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "svg"))
                    .collect()
            })
            .unwrap_or_default();
        figs.sort();
        for f in figs {
            if let Ok(svg) = std::fs::read_to_string(&f) {
                let body = svg.find("<svg").map(|i| &svg[i..]).unwrap_or("");
                let _ = write!(s, "<figure>{body}</figure>");
            }
        }
    }
    s.push_str("</body></html>\n");
    s
}

/// Write `report.json`, `report.md` and `report.html` into `out`.
pub fn write_reports(out: &Path, r: &Report, runs: &Runs) -> Result<()> {
    let json = serde_json::to_string_pretty(r).unwrap_or_default();
    atomic_write(&out.join("report.json"), format!("{json}\n").as_bytes())?;
    atomic_write(&out.join("report.md"), markdown(r).as_bytes())?;
    atomic_write(&out.join("report.html"), html(r, runs).as_bytes())?;
    Ok(())
}
