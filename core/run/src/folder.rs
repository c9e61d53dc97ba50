//! Run folders: the standard file names and atomic writes.
use crate::error::{Result, RunError};
use std::path::{Path, PathBuf};

/// Write `bytes` to `path` atomically: a temporary sibling file, fsync, then rename.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<()> {
    atomic_write_all(&[(path, bytes)])
}

/// Write several files so that a failure while writing (a full disk, a missing folder) changes
/// none of them: every file is written to a temporary sibling first (fsync), and only when all
/// are written are they renamed into place.
pub fn atomic_write_all(files: &[(&Path, &[u8])]) -> Result<()> {
    use std::io::Write;
    let tmp_of = |path: &Path| {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "out".into());
        dir.join(format!(".{name}.tmp-{}", std::process::id()))
    };
    let tmps: Vec<PathBuf> = files.iter().map(|(p, _)| tmp_of(p)).collect();
    let clean = || {
        for t in &tmps {
            let _ = std::fs::remove_file(t);
        }
    };
    for ((path, bytes), tmp) in files.iter().zip(&tmps) {
        let res = (|| {
            let mut f = std::fs::File::create(tmp)?;
            f.write_all(bytes)?;
            f.sync_all()
        })();
        if let Err(e) = res {
            clean();
            return Err(RunError::Os(path.to_path_buf(), e));
        }
    }
    for ((path, _), tmp) in files.iter().zip(&tmps) {
        if let Err(e) = std::fs::rename(tmp, path) {
            clean();
            return Err(RunError::Os(path.to_path_buf(), e));
        }
    }
    Ok(())
}

/// Check, before the work that produces it, that a file can be written at `path`: the path is
/// not a folder, its folder exists, and a file can be created there (a probe file, removed at
/// once). So a bad output path is refused up front, as input, not after minutes of work.
pub fn check_output(path: &Path) -> Result<()> {
    if path.as_os_str().is_empty() {
        return Err(RunError::Refused("an output file name is empty".into()));
    }
    if path.is_dir() {
        return Err(RunError::Refused(format!(
            "{} is a folder; give a file name",
            path.display()
        )));
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(RunError::Refused(format!(
            "{}: {} {}",
            path.display(),
            dir.display(),
            if dir.exists() {
                "is not a folder"
            } else {
                "does not exist (the folder is not created)"
            }
        )));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let probe = dir.join(format!(".{name}.probe-{}", std::process::id()));
    std::fs::File::create(&probe).map_err(|e| RunError::Os(path.to_path_buf(), e))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Read a whole file (missing: [`RunError::NotFound`]; a folder: [`RunError::Refused`]).
pub fn read(path: &Path) -> Result<Vec<u8>> {
    if path.is_dir() {
        return Err(RunError::Refused(format!(
            "{} is a folder, not a file",
            path.display()
        )));
    }
    std::fs::read(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            RunError::NotFound(path.to_path_buf())
        } else {
            RunError::Os(path.to_path_buf(), e)
        }
    })
}

/// Read a UTF-8 text file.
pub fn read_text(path: &Path) -> Result<String> {
    String::from_utf8(read(path)?).map_err(|_| RunError::Corrupt(path.into(), "not UTF-8".into()))
}

/// The standard file names of a run folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    pub dir: PathBuf,
}

impl RunDir {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        RunDir { dir: dir.into() }
    }
    /// A file of the folder.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
    pub fn config(&self) -> PathBuf {
        self.file("config.toml")
    }
    pub fn model(&self) -> PathBuf {
        self.file("model.safetensors")
    }
    pub fn metrics(&self) -> PathBuf {
        self.file("metrics.csv")
    }
    pub fn summary(&self) -> PathBuf {
        self.file("summary.json")
    }
    pub fn snapshots(&self) -> PathBuf {
        self.file("snapshots.safetensors")
    }
    pub fn circuits_svg(&self) -> PathBuf {
        self.file("circuits.svg")
    }
    /// Create the folder (and parents).
    pub fn create(&self) -> Result<()> {
        std::fs::create_dir_all(&self.dir).map_err(|e| RunError::Os(self.dir.clone(), e))
    }
    /// Write a text file of the folder atomically.
    pub fn write_text(&self, name: &str, text: &str) -> Result<()> {
        atomic_write(&self.file(name), text.as_bytes())
    }
    /// Check that this names a folder holding a run (a folder with a model).
    pub fn check_run(&self) -> Result<()> {
        if self.dir.is_file() {
            return Err(RunError::Refused(format!(
                "{} is a file; a run folder (from `icl train` or `icl import`) is expected",
                self.dir.display()
            )));
        }
        if !self.dir.is_dir() {
            return Err(RunError::NotFound(self.dir.clone()));
        }
        if !self.model().is_file() {
            return Err(RunError::Refused(format!(
                "{} is not a run folder (no model.safetensors)",
                self.dir.display()
            )));
        }
        Ok(())
    }
}
