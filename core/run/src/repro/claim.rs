//! A claim as data: its id, figure and description, the runs it is measured on, the paper's
//! value, the accepted range ([`Tolerance`]) and the function that measures it. Every paper
//! builds its claims with [`claim`], the one builder:
//!
//! ```ignore
//! claim("h1-omega", "Fig. 2a", "A single head learns ω ≈ 0.52 (≈ 1/√d)")
//!     .runs(["h1-seed1"])
//!     .paper(0.52)
//!     .range(0.45, 0.58)
//!     .measure(|r| Ok(Reading::new(omega(&r.summary("h1-seed1")?))))
//! ```
//!
//! The measuring function returns a [`Reading`]: the measured value and what the report shows
//! beside it (standard error, closed forms, a note), with any condition of the verdict beyond the
//! tolerance. The verdict is the tolerance's test of the value and those conditions.
use super::{Claim, Runs};
use crate::error::{Result, RunError};

/// The accepted range of a claim: its test and its words in the report (`tolerance`).
#[derive(Debug, Clone, PartialEq)]
pub enum Tolerance {
    /// `lo ≤ measured ≤ hi`: "[lo, hi]".
    Range(f64, f64),
    /// `|measured − target| ≤ tol`: "target ± tol".
    Within(f64, f64),
    /// `measured ≤ limit`: "≤ limit" (the limit as Rust's `{:?}` writes it: `1e-10`, `0.03`).
    AtMost(f64),
    /// The verdict is the reading's own conditions ([`Reading::and`]), described in these words.
    Stated(String),
}

impl Tolerance {
    /// Whether `x` is accepted (NaN never is, except by a [`Tolerance::Stated`] claim's own test).
    pub fn holds(&self, x: f64) -> bool {
        match self {
            Tolerance::Range(lo, hi) => x >= *lo && x <= *hi,
            Tolerance::Within(target, tol) => (x - target).abs() <= *tol,
            Tolerance::AtMost(limit) => x <= *limit,
            Tolerance::Stated(_) => true,
        }
    }

    /// The words of the report.
    pub fn text(&self) -> String {
        match self {
            Tolerance::Range(lo, hi) => format!("[{lo}, {hi}]"),
            Tolerance::Within(target, tol) => format!("{target} ± {tol}"),
            Tolerance::AtMost(limit) => format!("≤ {limit:?}"),
            Tolerance::Stated(s) => s.clone(),
        }
    }
}

/// What a claim's measuring function returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The measured value (NaN: could not be measured; the claim then fails).
    pub value: f64,
    pub stderr: Option<f64>,
    /// The exact finite-size closed form and the paper's form of the same quantity.
    pub exact: Option<f64>,
    pub paper_form: Option<f64>,
    pub note: String,
    /// The conditions of the verdict beyond the tolerance (a monotone curve, two heads in
    /// balance), all of which hold; with [`Tolerance::Stated`], the verdict itself.
    pub pass: bool,
    /// The accepted range where it depends on the data (within 0.006 of a measured baseline);
    /// `None`: the claim's own.
    pub tolerance: Option<Tolerance>,
}

impl Reading {
    pub fn new(value: f64) -> Reading {
        Reading {
            value,
            stderr: None,
            exact: None,
            paper_form: None,
            note: String::new(),
            pass: true,
            tolerance: None,
        }
    }

    /// The mean of `v` with its standard error ([`mean_se`]).
    pub fn mean(v: &[f64]) -> Reading {
        let (m, se) = mean_se(v);
        Reading::new(m).stderr(Some(se))
    }

    pub fn stderr(mut self, se: Option<f64>) -> Reading {
        self.stderr = se;
        self
    }

    /// The exact form and the paper's form beside the measurement.
    pub fn forms(mut self, exact: Option<f64>, paper_form: Option<f64>) -> Reading {
        self.exact = exact;
        self.paper_form = paper_form;
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Reading {
        self.note = note.into();
        self
    }

    /// A further condition of the verdict.
    pub fn and(mut self, ok: bool) -> Reading {
        self.pass &= ok;
        self
    }

    /// The accepted range, set by the data.
    pub fn tolerance(mut self, t: Tolerance) -> Reading {
        self.tolerance = Some(t);
        self
    }
}

/// How a claim is measured from the finished runs.
type Measure = Box<dyn Fn(&Runs) -> Result<Reading>>;

/// A claim's definition: what the paper says, which runs it needs and how it is measured.
pub struct ClaimDef {
    pub id: String,
    pub figure: &'static str,
    pub description: &'static str,
    /// The run folders it is measured on (names under `runs/`): trained runs or experiments.
    pub runs: Vec<String>,
    /// The paper's number (NaN: the paper states the claim without one).
    pub paper: f64,
    /// `None`: the measuring function gives it ([`Reading::tolerance`]).
    pub tolerance: Option<Tolerance>,
    /// Where the rule of the verdict comes from (a spec section, the paper, icl's own check),
    /// written beside the rule in the report's header ([`ClaimBuilder::source`]); empty: the
    /// paper's default ([`ClaimDef::sourced`]).
    pub source: String,
    /// How the runs it is measured on differ from the paper's at this scale (fewer steps, a
    /// smaller model), added to the note of the report ([`ClaimDef::reduced`]); empty: none.
    pub reduction: String,
    measure: Measure,
}

/// The builder of a claim (see the module docs); [`ClaimBuilder::measure`] finishes it.
pub struct ClaimBuilder {
    id: String,
    figure: &'static str,
    description: &'static str,
    runs: Vec<String>,
    paper: f64,
    tolerance: Option<Tolerance>,
    source: String,
}

/// Start a claim: its id (unique in its paper), the paper's figure or section, and the sentence
/// it checks, with what is measured.
pub fn claim(
    id: impl Into<String>,
    figure: &'static str,
    description: &'static str,
) -> ClaimBuilder {
    ClaimBuilder {
        id: id.into(),
        figure,
        description,
        runs: Vec::new(),
        paper: f64::NAN,
        tolerance: None,
        source: String::new(),
    }
}

impl ClaimBuilder {
    /// The runs it is measured on (none: a closed form or a Monte Carlo of the registry).
    pub fn runs<S: Into<String>>(mut self, runs: impl IntoIterator<Item = S>) -> Self {
        self.runs = runs.into_iter().map(Into::into).collect();
        self
    }

    /// The paper's number.
    pub fn paper(mut self, x: f64) -> Self {
        self.paper = x;
        self
    }

    /// Accepted: `lo ≤ measured ≤ hi`.
    pub fn range(self, lo: f64, hi: f64) -> Self {
        self.tolerance(Tolerance::Range(lo, hi))
    }

    /// Accepted: `|measured − target| ≤ tol`.
    pub fn within(self, target: f64, tol: f64) -> Self {
        self.tolerance(Tolerance::Within(target, tol))
    }

    /// Accepted: `measured ≤ limit`.
    pub fn at_most(self, limit: f64) -> Self {
        self.tolerance(Tolerance::AtMost(limit))
    }

    /// Accepted: what the measuring function finds ([`Reading::and`]), in these words.
    pub fn stated(self, words: impl Into<String>) -> Self {
        self.tolerance(Tolerance::Stated(words.into()))
    }

    pub fn tolerance(mut self, t: Tolerance) -> Self {
        self.tolerance = Some(t);
        self
    }

    /// Where the rule comes from, in words ("spec §5.1", "the paper's Table 1").
    pub fn source(mut self, words: impl Into<String>) -> Self {
        self.source = words.into();
        self
    }

    /// The measuring function: the claim is complete.
    pub fn measure(self, f: impl Fn(&Runs) -> Result<Reading> + 'static) -> ClaimDef {
        ClaimDef {
            id: self.id,
            figure: self.figure,
            description: self.description,
            runs: self.runs,
            paper: self.paper,
            tolerance: self.tolerance,
            source: self.source,
            reduction: String::new(),
            measure: Box::new(f),
        }
    }
}

impl ClaimDef {
    /// The claim, its runs reduced from the paper's as `words` say (a claim measured on no run,
    /// a closed form's, keeps no reduction).
    pub fn reduced(mut self, words: impl Into<String>) -> ClaimDef {
        if !self.runs.is_empty() {
            self.reduction = words.into();
        }
        self
    }

    /// The claim, the rule's source `words` where it names none.
    pub fn sourced(mut self, words: &str) -> ClaimDef {
        if self.source.is_empty() {
            self.source = words.into();
        }
        self
    }

    /// Measure the claim on the finished runs: the report's entry with its verdict.
    pub fn check(&self, runs: &Runs) -> Result<Claim> {
        let r = (self.measure)(runs)?;
        let tolerance = r
            .tolerance
            .or_else(|| self.tolerance.clone())
            .ok_or_else(|| RunError::Refused(format!("claim {} has no tolerance", self.id)))?;
        // the paper's number or none: never one read off icl's own data (issue 39)
        let paper_value = self.paper;
        Ok(Claim {
            id: self.id.clone(),
            figure: self.figure.into(),
            description: self.description.into(),
            paper_value,
            measured: r.value,
            stderr: r.stderr,
            z: distance_in_se(r.value, r.stderr, paper_value, &tolerance),
            exact: r.exact,
            paper_form: r.paper_form,
            tolerance: tolerance.text(),
            pass: tolerance.holds(r.value) && r.pass,
            note: match (r.note.is_empty(), self.reduction.is_empty()) {
                (_, true) => r.note,
                (true, false) => self.reduction.clone(),
                (false, false) => format!("{}; {}", r.note, self.reduction),
            },
            runs: self.runs.clone(),
        })
    }
}

/// How far `measured` is from the paper, in units of its standard error: from the paper's value,
/// or where the paper has none from the target of a `target ± tol` rule (a statement such as
/// "risk(H) − risk(2) = 0"); `None` without a positive standard error or a reference.
pub fn distance_in_se(measured: f64, se: Option<f64>, paper: f64, t: &Tolerance) -> Option<f64> {
    let se = se.filter(|s| s.is_finite() && *s > 0.0)?;
    let reference = match t {
        _ if paper.is_finite() => paper,
        Tolerance::Within(target, _) => *target,
        _ => return None,
    };
    let z = (measured - reference) / se;
    z.is_finite().then_some(z)
}

/// Mean and standard error of the mean (0 for one value; NaN for none).
pub fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let m = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (m, 0.0);
    }
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

/// Numbers to 4 decimals, comma-separated (claim notes).
pub fn fmt_list(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.4}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of each tolerance are the report's (`[0.1, 0.16]`, `1 ± 0`, `≤ 1e-10`), NaN
    /// never passes a tolerance, and a stated one passes on the reading's conditions alone.
    #[test]
    fn tolerances_read_and_test_as_the_report_says() {
        let cases = [
            (Tolerance::Range(0.10, 0.16), "[0.1, 0.16]", 0.12, 0.17),
            (Tolerance::Within(1.0, 0.0), "1 ± 0", 1.0, 1.5),
            (
                Tolerance::Within(0.879, 5e-4),
                "0.879 ± 0.0005",
                0.8791,
                0.88,
            ),
            (Tolerance::AtMost(1e-10), "≤ 1e-10", 0.0, 1e-9),
            (Tolerance::AtMost(0.03), "≤ 0.03", 0.03, 0.031),
        ];
        for (t, words, yes, no) in cases {
            assert_eq!(t.text(), words);
            assert!(
                t.holds(yes) && !t.holds(no) && !t.holds(f64::NAN),
                "{words}"
            );
        }
        let stated = Tolerance::Stated("> 0.95".into());
        assert_eq!(stated.text(), "> 0.95");
        assert!(stated.holds(f64::NAN));
    }

    /// The report's entry: the claim's paper value and tolerance unless the reading sets them,
    /// the verdict the tolerance's test and the reading's conditions.
    #[test]
    fn check_joins_the_claim_and_its_reading() {
        let runs = Runs {
            dir: "/nonexistent".into(),
        };
        let c = claim("x", "Fig. 1", "d")
            .runs(["a", "b"])
            .paper(2.0)
            .range(1.0, 3.0)
            .measure(|_| Ok(Reading::mean(&[1.0, 3.0]).note("n")))
            .check(&runs)
            .unwrap();
        assert_eq!((c.paper_value, c.measured, c.stderr), (2.0, 2.0, Some(1.0)));
        assert_eq!(c.z, Some(0.0));
        assert_eq!(
            (c.tolerance.as_str(), c.pass, c.note.as_str()),
            ("[1, 3]", true, "n")
        );
        assert_eq!(c.runs, ["a", "b"]);
        let c = claim("y", "Fig. 1", "d")
            .paper(2.0)
            .range(1.0, 3.0)
            .measure(|_| Ok(Reading::new(2.0).and(false)))
            .check(&runs)
            .unwrap();
        assert!(!c.pass);
        // the range may be set by the data; the paper value never is (no number: NaN)
        let c = claim("z", "Fig. 1", "d")
            .measure(|_| Ok(Reading::new(5.0).tolerance(Tolerance::Within(4.0, 0.5))))
            .check(&runs)
            .unwrap();
        assert!(c.paper_value.is_nan());
        assert_eq!((c.tolerance.as_str(), c.pass), ("4 ± 0.5", false));
        assert!(claim("w", "", "")
            .measure(|_| Ok(Reading::new(1.0)))
            .check(&runs)
            .is_err());
        // a reduction is stated after the reading's note, on claims measured on runs only
        let c = claim("r", "", "")
            .runs(["a"])
            .stated("s")
            .measure(|_| Ok(Reading::new(1.0).note("n")))
            .reduced("smoke: 4e4 steps");
        assert_eq!(c.check(&runs).unwrap().note, "n; smoke: 4e4 steps");
        let c = claim("t", "", "")
            .stated("s")
            .measure(|_| Ok(Reading::new(1.0)))
            .reduced("smoke: 4e4 steps");
        assert_eq!(c.check(&runs).unwrap().note, "");
        // no paper number: NaN (null in report.json)
        let c = claim("v", "", "")
            .stated("s")
            .measure(|_| Ok(Reading::new(1.0)));
        assert!(c.check(&runs).unwrap().paper_value.is_nan());
        // the source: the claim's own, else the paper's default
        let c = claim("s", "", "")
            .source("spec §5.1")
            .stated("s")
            .measure(|_| Ok(Reading::new(1.0)));
        assert_eq!(c.sourced("spec").source, "spec §5.1");
        let c = claim("s", "", "")
            .stated("s")
            .measure(|_| Ok(Reading::new(1.0)));
        assert_eq!(c.sourced("spec").source, "spec");
    }

    /// The distance in standard errors: from the paper's value (3 − 2)/0.5 = 2, from a
    /// statement's target where the paper has none, none without a standard error.
    #[test]
    fn distance_is_counted_in_standard_errors() {
        let w = Tolerance::Within(0.0, 0.006);
        assert_eq!(distance_in_se(3.0, Some(0.5), 2.0, &w), Some(2.0));
        assert_eq!(
            distance_in_se(-0.003, Some(0.001), f64::NAN, &w),
            Some(-3.0)
        );
        assert_eq!(
            distance_in_se(3.0, Some(0.5), f64::NAN, &Tolerance::AtMost(1.0)),
            None
        );
        assert_eq!(distance_in_se(3.0, None, 2.0, &w), None);
        assert_eq!(distance_in_se(3.0, Some(0.0), 2.0, &w), None);
    }
}
