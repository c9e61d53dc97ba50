//! The time left of a training run, from the work of its steps rather than their count: a step
//! costs its forward and backward FLOPs (`ModelSpec::step_flops` at the step's context length), so
//! a run whose curriculum grows its prompts (Garg et al.'s GPT-2 presets: L from 10 to 40, or 25 to
//! 100, over the first 30,000 steps) is not promised the rate of its first, cheapest stages. One
//! estimate for every front end: the CLI's progress bar and Python's progress line.
use crate::sweep::RunSpec;
use icl_core::config::Config;
use icl_core::families::gpt2::objective::Curriculum;
use icl_core::model::ModelSpec;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Stages of a curriculum followed one by one; a longer one is counted at the final cost from
/// there on (a pessimistic estimate; the presets have 16 stages).
const MAX_STAGES: u64 = 100_000;

/// What a run under Garg et al.'s curriculum says when it starts (`None` without one): its
/// schedule and the step from which it trains at the full size, e.g. `curriculum: d 5 -> 20 (+1)
/// and L 10 -> 40 (+2) every 2000 steps; the full size (d = 20, L = 40) from step 30000`. The CLI
/// and Python's progress line print it.
pub fn curriculum_note(cfg: &Config) -> Option<String> {
    let c = Curriculum::of(&cfg.task)?;
    let size = format!("the full size (d = {}, L = {})", cfg.task.d, cfg.task.len);
    let when = match c.full_size_step() {
        Some(0) => String::new(),
        Some(s) if s < cfg.train.steps => format!("; {size} from step {s}"),
        Some(s) => format!("; {size} not reached: it starts at step {s}"),
        None => format!("; {size} never (an increment of 0)"),
    };
    Some(format!("curriculum: {}{when}", c.describe()))
}

/// The cost of a run's steps, and the step this session started from.
#[derive(Debug, Clone, PartialEq)]
pub struct Eta {
    /// Steps per stage and the cost of a step in each stage before the last (empty without a
    /// curriculum).
    every: u64,
    stages: Vec<f64>,
    /// The cost of a step at the run's full size.
    last: f64,
    start: u64,
}

impl Eta {
    /// The estimate for `cfg`'s run, this session starting after step `start` (0 for a new run;
    /// a resumed run's restored steps took no time here).
    pub fn new(cfg: &Config, start: u64) -> Self {
        let (batch, len) = (cfg.train.batch, cfg.task.len);
        let spec = ModelSpec::from_config(cfg).ok();
        let flops = |l: usize| -> f64 {
            spec.as_ref()
                .map(|m| m.step_flops(l, batch))
                .filter(|f| f.is_finite() && *f > 0.0)
                .unwrap_or(1.0)
        };
        let last = flops(len);
        let (mut every, mut stages) = (1, Vec::new());
        if let Some(c) = Curriculum::of(&cfg.task) {
            every = cfg.task.curriculum_every.max(1);
            for k in 0..MAX_STAGES {
                let l = c.at(k.saturating_mul(every)).1;
                if l >= len {
                    break;
                }
                stages.push(flops(l));
            }
        }
        Eta {
            every,
            stages,
            last,
            start,
        }
    }

    /// The estimate where the run's config is not at hand: every step costs the same.
    pub fn uniform(start: u64) -> Self {
        Eta {
            every: 1,
            stages: Vec::new(),
            last: 1.0,
            start,
        }
    }

    /// The work of steps `0..s` (in FLOPs).
    pub fn work(&self, s: u64) -> f64 {
        let mut w = 0.0;
        let mut first = 0u64;
        for &c in &self.stages {
            let end = first.saturating_add(self.every);
            w += c * (s.min(end).saturating_sub(first)) as f64;
            if s <= end {
                return w;
            }
            first = end;
        }
        w + self.last * s.saturating_sub(first) as f64
    }

    /// Seconds left after `step` of `total` steps, `elapsed` seconds into this session, at the
    /// session's rate of work so far; `None` before the session has done work in some time.
    pub fn seconds_left(&self, step: u64, total: u64, elapsed: f64) -> Option<f64> {
        let done = self.work(step) - self.work(self.start.min(step));
        if !(done > 0.0) || !(elapsed > 0.0) {
            return None;
        }
        let left = (self.work(total.max(step)) - self.work(step)).max(0.0);
        Some(elapsed * left / done)
    }

    /// [`Eta::seconds_left`] as `H:MM:SS` (`?` before any work).
    pub fn left(&self, step: u64, total: u64, elapsed: f64) -> String {
        match self.seconds_left(step, total, elapsed) {
            Some(s) if s < 1e9 => {
                let s = s.round() as u64;
                format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
            }
            _ => "?".into(),
        }
    }
}

/// Runs named in one progress line at most; the others are counted.
const MAX_NAMED: usize = 4;

/// How often the front ends print a progress line by default: of the runs in training (`icl
/// sweep run`, `icl repro`), and of `icl train` where stderr is not a terminal (a log file, a
/// cluster job's output).
pub const LINE_EVERY: Duration = Duration::from_secs(30);

/// The progress lines' interval: `ICL_PROGRESS_SECONDS` (a positive number of seconds, e.g.
/// `600` for a long job's log) or [`LINE_EVERY`]; a value that is not such a number is refused
/// by [`check_progress_env`] before any work.
pub fn line_every() -> Duration {
    progress_env().ok().flatten().unwrap_or(LINE_EVERY)
}

/// `ICL_PROGRESS_SECONDS`, when set: `Err` for a value that is not a positive, finite number of
/// seconds (at most a year).
fn progress_env() -> Result<Option<Duration>, String> {
    let Some(v) = std::env::var_os("ICL_PROGRESS_SECONDS") else {
        return Ok(None);
    };
    let text = v.to_string_lossy().into_owned();
    match text.trim().parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 3.2e7 => Ok(Some(Duration::from_secs_f64(s))),
        _ => Err(text),
    }
}

/// Refuse an `ICL_PROGRESS_SECONDS` that is not a positive number of seconds.
pub fn check_progress_env() -> crate::error::Result<()> {
    progress_env().map(|_| ()).map_err(|v| {
        crate::error::RunError::Refused(format!(
            "ICL_PROGRESS_SECONDS={v:?} is not a number of seconds above 0: give e.g. 60, or unset it"
        ))
    })
}

/// Progress lines of several runs (`icl sweep run`, `icl repro`): at most one line every
/// `every`, with each run in training, its step and its time left ([`Eta`]). The runs are the
/// specs' (by index); thread-safe, as the runs report from their workers.
#[derive(Debug)]
pub struct RunsLines {
    every: Duration,
    specs: Vec<(String, Option<Config>)>,
    state: Mutex<Lines>,
}

#[derive(Debug)]
struct Lines {
    last: Instant,
    /// The runs in training.
    running: BTreeMap<usize, Running>,
}

/// A run in training: its estimate, when its first and its last report came, its step.
#[derive(Debug)]
struct Running {
    eta: Eta,
    first: Instant,
    last: Instant,
    step: u64,
    total: u64,
}

impl RunsLines {
    /// Lines for `specs` (a spec's config is read once here), the first `every` after now.
    pub fn new(specs: &[RunSpec], every: Duration) -> Self {
        RunsLines {
            every,
            specs: specs
                .iter()
                .map(|s| (s.name.clone(), s.build().ok()))
                .collect(),
            state: Mutex::new(Lines {
                last: Instant::now(),
                running: BTreeMap::new(),
            }),
        }
    }

    /// Run `i` has done `step` of `total`: the line to print, when one is due.
    pub fn step(&self, i: usize, step: u64, total: u64) -> Option<String> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let e = st.running.entry(i).or_insert_with(|| {
            // the clock starts at this first report: the work from this step on
            let eta = match self.specs.get(i).and_then(|s| s.1.as_ref()) {
                Some(c) => Eta::new(c, step),
                None => Eta::uniform(step),
            };
            Running {
                eta,
                first: now,
                last: now,
                step,
                total,
            }
        });
        (e.last, e.step, e.total) = (now, step, total);
        if step >= total {
            st.running.remove(&i);
            return None;
        }
        if now.duration_since(st.last) < self.every {
            return None;
        }
        st.last = now;
        // a run that stopped reporting has ended (failed or stopped: its last step never came)
        let stale = (3 * self.every).max(Duration::from_secs(300));
        st.running.retain(|_, r| now.duration_since(r.last) < stale);
        let mut parts: Vec<String> = Vec::new();
        for (&j, r) in st.running.iter().take(MAX_NAMED) {
            let name = self.specs.get(j).map_or("?", |s| s.0.as_str());
            let left = r
                .eta
                .left(r.step, r.total, now.duration_since(r.first).as_secs_f64());
            parts.push(format!("{name} step {}/{} eta {left}", r.step, r.total));
        }
        if st.running.len() > MAX_NAMED {
            parts.push(format!("{} more", st.running.len() - MAX_NAMED));
        }
        Some(format!("training: {}", parts.join("; ")))
    }

    /// Run `i` ended (finished, failed or stopped): no longer in the lines.
    pub fn ended(&self, i: usize) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.running.remove(&i);
    }
}

#[cfg(test)]
mod tests {
    use super::{Eta, RunsLines};
    use crate::sweep::RunSpec;
    use icl_core::presets::preset;
    use std::time::Duration;

    #[test]
    fn a_run_at_one_size_is_left_its_steps_at_the_rate_so_far() {
        let cfg = preset("he2025").unwrap();
        let e = Eta::new(&cfg, 0);
        assert_eq!(e.seconds_left(250, 1000, 10.0), Some(30.0));
        assert_eq!(e.left(250, 1000, 10.0), "0:00:30");
        assert_eq!(e.left(1000, 1000, 10.0), "0:00:00");
        assert_eq!(e.left(0, 1000, 0.0), "?");
        // resumed at step 600: only this session's 200 steps took the 10 s
        let r = Eta::new(&cfg, 600);
        assert_eq!(r.seconds_left(800, 1000, 10.0), Some(10.0));
        assert_eq!(r.left(600, 1000, 3.0), "?");
        assert_eq!(Eta::new(&cfg, 0).left(1, 3_600_001, 1.0), "1000:00:00");
    }

    #[test]
    fn a_curriculum_counts_each_step_at_its_stage_s_size() {
        // garg-linear-tiny: L = 10 + 2 k at stage k (2,000 steps each) up to 40 at step 30,000
        let cfg = preset("garg-linear-tiny").unwrap();
        let spec = icl_core::model::ModelSpec::from_config(&cfg).unwrap();
        let flops = |s: u64| spec.step_flops((10 + 2 * (s / 2000) as usize).min(40), 64);
        // the work summed step by step
        let brute = |s: u64| (0..s).map(flops).sum::<f64>();
        let e = Eta::new(&cfg, 0);
        for s in [0, 1, 1999, 2000, 2001, 29_999, 30_000, 31_234, 100_000] {
            let (w, b) = (e.work(s), brute(s));
            assert!((w - b).abs() <= 1e-12 * b, "step {s}: {w} vs {b}");
        }
        // after the first stage in 100 s: the steps left cost more than the first stage's, so
        // far more than the 100 s x 498,001 / 2,000 that the step count says
        let naive = 100.0 * (500_001.0 - 2000.0) / 2000.0;
        let left = e.seconds_left(2000, 500_001, 100.0).unwrap();
        let want = 100.0 * (brute(30_000) - brute(2000) + 470_001.0 * flops(30_000)) / brute(2000);
        assert!((left / want - 1.0).abs() < 1e-9, "{left} vs {want}");
        assert!(left > 3.0 * naive, "{left} vs {naive}");
    }

    #[test]
    fn runs_lines_name_the_runs_in_training_at_most_every_interval() {
        let spec = |name: &str| RunSpec {
            name: name.into(),
            preset: Some("he2025".into()),
            config: None,
            set: vec![],
        };
        let specs = [spec("a"), spec("b")];
        // no interval: a line at every report, the runs in index order
        let l = RunsLines::new(&specs, Duration::ZERO);
        assert_eq!(l.step(1, 1, 100).unwrap(), "training: b step 1/100 eta ?");
        let line = l.step(0, 11, 100).unwrap();
        assert!(line.starts_with("training: a step 11/100 eta "), "{line}");
        assert!(line.ends_with("; b step 1/100 eta ?"), "{line}");
        // a run's last step takes it out of the lines (and prints none)
        assert_eq!(l.step(1, 100, 100), None);
        assert!(l
            .step(0, 12, 100)
            .unwrap()
            .starts_with("training: a step 12/100"));
        l.ended(0);
        assert_eq!(l.step(1, 5, 100).unwrap(), "training: b step 5/100 eta ?");
        // a long interval: none yet
        let quiet = RunsLines::new(&specs, Duration::from_secs(3600));
        assert_eq!(quiet.step(0, 1, 100), None);
        assert_eq!(quiet.step(0, 50, 100), None);
    }
}
