//! Run folders: the standard file names and atomic writes.
use crate::error::{Result, RunError};
use std::path::{Path, PathBuf};

/// Write `bytes` to `path` atomically: a temporary sibling file, fsync, then rename.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let res = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = res {
        let _ = std::fs::remove_file(&tmp);
        return Err(RunError::Os(path.to_path_buf(), e));
    }
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
