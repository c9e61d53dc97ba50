//! Slurm: a sweep folder as one `sbatch --array` job, task `i` running
//! `icl sweep run-one DIR --index i` (which trains, resumes or skips run `i` like the local
//! executor), or with `runs_per_task` K the runs i·K .. i·K + K − 1 (on the Vulkan engine as one
//! pack where they share a shape). Slurm's SIGTERM at the time limit checkpoints the runs;
//! submitting again resumes them.
use super::plan::load;
use crate::error::{Result, RunError};
use crate::folder::atomic_write;
use std::path::{Path, PathBuf};

/// The script's file name in the sweep folder.
pub const SCRIPT: &str = "slurm.sh";

/// What the array job asks for.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SlurmOptions {
    /// The `icl` executable the tasks run (absolute; e.g. `std::env::current_exe()`).
    pub icl: PathBuf,
    pub partition: Option<String>,
    /// Time limit per task, in a form `sbatch --time` accepts (`30`, `2:00:00`, `1-00:00:00`).
    pub time: Option<String>,
    pub cpus_per_task: Option<usize>,
    /// Memory per task (`--mem`, e.g. `2G`).
    pub mem: Option<String>,
    /// At most this many tasks at once (`--array=0-N%K`).
    pub max_parallel: Option<usize>,
    pub job_name: Option<String>,
    /// Further `#SBATCH` lines, each one option as sbatch takes it (`--account=abc`, `--qos=short`).
    pub extra: Vec<String>,
    /// Extra arguments of `icl sweep run-one` (e.g. `--engine scalar`).
    pub run_args: Vec<String>,
    /// Runs per array task (1 when `None`, at most [`super::exec::MAX_PACK`]): task i trains the
    /// runs i·K .. i·K + K − 1, on the Vulkan engine the one-layer runs of one shape among them
    /// as one pack (one device, one call per step).
    pub runs_per_task: Option<usize>,
}

/// Quote `s` for a POSIX shell.
fn sh(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn check_opt(what: &str, v: &str) -> Result<()> {
    if v.is_empty() || v.contains(['\n', '\r', '\0']) {
        return Err(RunError::Refused(format!(
            "{what} {v:?}: empty or holding a line break"
        )));
    }
    Ok(())
}

/// A time limit in one of the forms `sbatch --time` accepts: `minutes`, `minutes:seconds`,
/// `hours:minutes:seconds`, `days-hours`, `days-hours:minutes`, `days-hours:minutes:seconds`
/// (each part digits), or `infinite` / `unlimited`. Anything else would only fail at submission.
pub fn check_time(t: &str) -> Result<()> {
    let digits = |p: &str| !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit());
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(d), r),
        None => (None, t),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let ok = t.eq_ignore_ascii_case("infinite")
        || t.eq_ignore_ascii_case("unlimited")
        || (days.is_none_or(digits) && parts.len() <= 3 && parts.iter().all(|p| digits(p)));
    if ok {
        Ok(())
    } else {
        Err(RunError::Refused(format!(
            "--time {t:?} is not a Slurm time limit: minutes (30), minutes:seconds, hours:minutes:seconds (2:00:00), days-hours, days-hours:minutes or days-hours:minutes:seconds (1-00:00:00)"
        )))
    }
}

/// The `#SBATCH` lines every icl job shares: job name, output file, one task, and the options
/// of `o` (partition, time, cpus, memory, extra lines); `array` adds `--array=...`.
pub fn header(
    name: &str,
    array: Option<&str>,
    output: &str,
    o: &SlurmOptions,
) -> Result<Vec<String>> {
    let mut lines = vec!["#!/bin/bash".to_string()];
    check_opt("--job-name", name)?;
    lines.push(format!("#SBATCH --job-name={}", sh(name)));
    if let Some(a) = array {
        lines.push(format!("#SBATCH --array={a}"));
    }
    check_opt("the output file", output)?;
    lines.push(format!("#SBATCH --output={}", sh(output)));
    lines.push("#SBATCH --ntasks=1".into());
    if let Some(p) = &o.partition {
        check_opt("--partition", p)?;
        lines.push(format!("#SBATCH --partition={}", sh(p)));
    }
    if let Some(t) = &o.time {
        check_time(t)?;
        lines.push(format!("#SBATCH --time={}", sh(t)));
    }
    if let Some(c) = o.cpus_per_task {
        if c == 0 {
            return Err(RunError::Refused(
                "--cpus-per-task must be at least 1".into(),
            ));
        }
        lines.push(format!("#SBATCH --cpus-per-task={c}"));
    }
    if let Some(m) = &o.mem {
        check_opt("--mem", m)?;
        lines.push(format!("#SBATCH --mem={}", sh(m)));
    }
    for e in &o.extra {
        check_opt("--sbatch", e)?;
        if !e.starts_with('-') {
            return Err(RunError::Refused(format!(
                "--sbatch {e:?}: expected an sbatch option, e.g. --account=abc"
            )));
        }
        lines.push(format!("#SBATCH {e}"));
    }
    Ok(lines)
}

/// The absolute icl executable of `o`, as script text.
pub fn icl_text(o: &SlurmOptions) -> Result<String> {
    let icl = o.icl.to_string_lossy().to_string();
    check_opt("--icl", &icl)?;
    if !o.icl.is_absolute() {
        return Err(RunError::Refused(format!(
            "the icl executable {icl:?} must be an absolute path (Slurm tasks start elsewhere)"
        )));
    }
    if !is_executable(&o.icl) {
        return Err(RunError::Refused(format!(
            "the icl executable {icl:?} is not an executable file here (the tasks would fail to start)"
        )));
    }
    Ok(sh(&icl))
}

fn is_executable(p: &Path) -> bool {
    let Ok(m) = std::fs::metadata(p) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        m.is_file() && m.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        m.is_file()
    }
}

/// A command line for a script: each word quoted for a POSIX shell.
pub fn command(words: &[String]) -> Result<String> {
    for w in words {
        check_opt("an argument", w)?;
    }
    Ok(words.iter().map(|w| sh(w)).collect::<Vec<_>>().join(" "))
}

/// The array script for the sweep folder `dir` (absolute, so the script runs from anywhere).
pub fn script(dir: &Path, o: &SlurmOptions) -> Result<String> {
    array_script(dir, load(dir)?.len(), o)
}

/// The array script of `n` runs for the sweep folder `dir` (its manifest written or not yet).
pub fn array_script(dir: &Path, n: usize, o: &SlurmOptions) -> Result<String> {
    if n == 0 {
        return Err(RunError::Refused(format!(
            "{} plans no runs",
            dir.display()
        )));
    }
    let dir = std::path::absolute(dir).map_err(|e| RunError::Os(dir.into(), e))?;
    let d = dir.to_string_lossy().to_string();
    check_opt("the sweep folder", &d)?;
    let icl = icl_text(o)?;
    let name = o.job_name.clone().unwrap_or_else(|| {
        format!(
            "icl-sweep-{}",
            dir.file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default()
        )
    });
    let per_task = o.runs_per_task.unwrap_or(1);
    super::exec::check_runs_per_task("--runs-per-task", per_task)?;
    let tasks = n.div_ceil(per_task);
    let mut array = format!("0-{}", tasks - 1);
    if let Some(k) = o.max_parallel {
        if k == 0 {
            return Err(RunError::Refused(
                "--max-parallel must be at least 1".into(),
            ));
        }
        array.push_str(&format!("%{k}"));
    }
    let mut lines = header(&name, Some(&array), &format!("{d}/slurm/%A_%a.out"), o)?;
    lines.push(String::new());
    if per_task == 1 {
        lines.push(format!(
            "# {n} runs of the sweep {d}; task i runs `icl sweep run-one --index i` (complete runs are"
        ));
    } else {
        lines.push(format!(
            "# {n} runs of the sweep {d}, {per_task} a task; task i trains runs i*{per_task} .. i*{per_task}+{} (complete runs are",
            per_task - 1
        ));
    }
    lines.push(
        "# skipped, interrupted ones resumed: submitting again finishes what is left).".into(),
    );
    lines.push("set -euo pipefail".into());
    lines.push("export RAYON_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}".into());
    let mut cmd = format!(
        "exec {icl} sweep run-one {} --index \"$SLURM_ARRAY_TASK_ID\"",
        sh(&d)
    );
    if per_task > 1 {
        cmd.push_str(&format!(" --runs-per-task {per_task}"));
    }
    if !o.run_args.is_empty() {
        cmd.push(' ');
        cmd.push_str(&command(&o.run_args)?);
    }
    lines.push(cmd);
    lines.push(String::new());
    Ok(lines.join("\n"))
}

/// Write the array script into `dir/slurm.sh` (and make `dir/slurm/` for the task logs).
pub fn write_script(dir: &Path, o: &SlurmOptions) -> Result<PathBuf> {
    write_text(dir, SCRIPT, &script(dir, o)?)
}

/// Write an executable script `name` into `dir` (and make `dir/slurm/` for the job logs).
pub fn write_text(dir: &Path, name: &str, text: &str) -> Result<PathBuf> {
    let logs = dir.join("slurm");
    std::fs::create_dir_all(&logs).map_err(|e| RunError::Os(logs, e))?;
    let path = dir.join(name);
    atomic_write(&path, text.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| RunError::Os(path.clone(), e))?;
    }
    Ok(path)
}

/// Submit a script with `sbatch --parsable`; the job id.
pub fn submit(script: &Path) -> Result<String> {
    submit_after(script, None)
}

/// Submit a script with `sbatch --parsable`, to start only after job `after` succeeded
/// (`--dependency=afterok:ID`) when given; the job id.
pub fn submit_after(script: &Path, after: Option<&str>) -> Result<String> {
    let mut cmd = std::process::Command::new("sbatch");
    cmd.arg("--parsable");
    if let Some(id) = after {
        check_opt("a job id", id)?;
        cmd.arg(format!("--dependency=afterok:{id}"));
    }
    let out = cmd
        .arg(script)
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                RunError::Refused(
                    "sbatch not found: submit from a Slurm login node (or run the script's array by hand)".into(),
                )
            } else {
                RunError::Os("sbatch".into(), e)
            }
        })?;
    if !out.status.success() {
        return Err(RunError::Engine(format!(
            "sbatch failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() {
        return Err(RunError::Engine("sbatch printed no job id".into()));
    }
    Ok(id)
}
