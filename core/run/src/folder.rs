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

/// Largest text file icl reads (a config, a sweep file, a run's summary or manifest): 128 MiB.
/// Above the largest checkpoint header (100 MB, [`icl_core::checkpoint::MAX_HEADER`]), which
/// holds a run's whole config, so every config a run can store is read; a device or a file that
/// never ends (`/dev/zero`) stops here.
pub const MAX_TEXT: u64 = 128 << 20;

/// Largest safetensors file icl reads (a checkpoint, a PyTorch state_dict): the memory budget,
/// which bounds a model with its optimiser state, log and snapshots, plus the largest header.
pub const MAX_SAFETENSORS: u64 = icl_core::config::MEMORY_BUDGET + MAX_HEADER as u64;

use icl_core::checkpoint::{File as StFile, MAX_HEADER};

fn too_large(path: &Path, limit: u64, kind: &str) -> RunError {
    RunError::Core(icl_core::Error::TooLarge(format!(
        "{}: more than {}, the most a {kind} can be",
        path.display(),
        icl_core::config::human_bytes(limit)
    )))
}

fn no_memory(path: &Path, bytes: u64) -> RunError {
    RunError::Core(icl_core::Error::TooLarge(format!(
        "{}: reading its {} needs memory that is not available",
        path.display(),
        icl_core::config::human_bytes(bytes)
    )))
}

fn open(path: &Path) -> Result<std::fs::File> {
    if path.is_dir() {
        return Err(RunError::Refused(format!(
            "{} is a folder, not a file",
            path.display()
        )));
    }
    let os = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::NotFound {
            RunError::NotFound(path.to_path_buf())
        } else {
            RunError::Os(path.to_path_buf(), e)
        }
    };
    let f = std::fs::File::open(path).map_err(os)?;
    Ok(f)
}

/// Up to `limit + 1` bytes of `r` appended to `buf` (the memory reserved fallibly).
fn read_up_to(path: &Path, r: impl std::io::Read, limit: u64, buf: &mut Vec<u8>) -> Result<()> {
    use std::io::Read;
    r.take(limit.saturating_add(1))
        .read_to_end(buf)
        .map_err(|e| RunError::Os(path.to_path_buf(), e))?;
    Ok(())
}

/// Read a whole file of at most `limit` bytes, a `kind` (for the message: `"config file"`):
/// missing is [`RunError::NotFound`], a folder [`RunError::Refused`], a longer file (or a
/// device that never ends) a size error, refused from its length when it has one and otherwise
/// after `limit` bytes.
pub fn read_limited(path: &Path, limit: u64, kind: &str) -> Result<Vec<u8>> {
    let f = open(path)?;
    let meta = f
        .metadata()
        .map_err(|e| RunError::Os(path.to_path_buf(), e))?;
    if meta.is_file() && meta.len() > limit {
        return Err(too_large(path, limit, kind));
    }
    let mut buf = Vec::new();
    // a regular file's length is known (it may still grow: the limit holds anyway)
    if meta.is_file() {
        buf.try_reserve_exact(meta.len() as usize)
            .map_err(|_| no_memory(path, meta.len()))?;
    }
    read_up_to(path, f, limit, &mut buf)?;
    if buf.len() as u64 > limit {
        return Err(too_large(path, limit, kind));
    }
    Ok(buf)
}

/// Read a text file ([`MAX_TEXT`]).
pub fn read(path: &Path) -> Result<Vec<u8>> {
    read_limited(path, MAX_TEXT, "text file")
}

/// Read a safetensors file (a checkpoint, a state_dict; at most [`MAX_SAFETENSORS`]). A regular
/// file is read whole (its decoder checks it); a stream (a pipe, a device) is read as its header
/// declares: the 8-byte header length, the header, then exactly the data its tensors cover and
/// nothing more, so `/dev/zero` is refused after 8 bytes instead of being read for ever.
pub fn read_safetensors(path: &Path) -> Result<Vec<u8>> {
    let kind = "checkpoint or safetensors file";
    let mut f = open(path)?;
    let meta = f
        .metadata()
        .map_err(|e| RunError::Os(path.to_path_buf(), e))?;
    if meta.is_file() {
        return read_limited(path, MAX_SAFETENSORS, kind);
    }
    use std::io::Read;
    let corrupt = |m: String| RunError::Corrupt(path.to_path_buf(), m);
    let from_core = |e: icl_core::Error| match e {
        icl_core::Error::Checkpoint(m) => corrupt(m),
        other => RunError::Core(other),
    };
    let mut buf = vec![0u8; 8];
    f.read_exact(&mut buf)
        .map_err(|_| corrupt("shorter than the 8-byte header length".into()))?;
    let n = u64::from_le_bytes(buf[..8].try_into().unwrap_or([0; 8]));
    if n > MAX_HEADER as u64 {
        return Err(corrupt(format!("header of {n} bytes is too large")));
    }
    read_up_to(path, (&mut f).take(n), n, &mut buf)?;
    let total = StFile::declared_len(&buf).map_err(from_core)?;
    if total > MAX_SAFETENSORS {
        return Err(too_large(path, MAX_SAFETENSORS, kind));
    }
    let rest = total - buf.len() as u64;
    buf.try_reserve_exact(rest as usize)
        .map_err(|_| no_memory(path, total))?;
    // the declared data and one byte more, if there is one (File::parse names the difference)
    read_up_to(path, f, rest, &mut buf)?;
    Ok(buf)
}

/// Read a UTF-8 text file of at most [`MAX_TEXT`] bytes.
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
    /// `attention.svg`: a GPT-2 run's attention maps ([`crate::analyze::analyze_run`]).
    pub fn attention_svg(&self) -> PathBuf {
        self.file("attention.svg")
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn tmp(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("icl-core-run-folder-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn too_large(r: Result<Vec<u8>>) -> String {
        match r {
            Err(RunError::Core(icl_core::Error::TooLarge(m))) => m,
            other => panic!("expected a size error, got {:?}", other.map(|b| b.len())),
        }
    }

    /// `/dev/zero` as a config: refused after the text limit (it used to be read until the memory
    /// ran out); as a checkpoint: refused after its 8-byte header length; a regular file over a
    /// limit is refused from its length, without reading it.
    #[test]
    fn endless_and_oversized_files_are_refused_after_a_bounded_read() {
        let t0 = Instant::now();
        let m = too_large(read(Path::new("/dev/zero")));
        assert!(m.contains("/dev/zero") && m.contains("128.0 MiB"), "{m}");
        match read_safetensors(Path::new("/dev/zero")) {
            Err(RunError::Corrupt(p, m)) => assert!(p == Path::new("/dev/zero"), "{m}"),
            other => panic!("{:?}", other.map(|b| b.len())),
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        let d = tmp("limits");
        let f = d.join("ten");
        std::fs::write(&f, b"0123456789").unwrap();
        assert!(too_large(read_limited(&f, 9, "test file")).contains("test file"));
        assert_eq!(read_limited(&f, 10, "test file").unwrap(), b"0123456789");
    }

    /// A checkpoint through a pipe is read exactly as far as its header declares (one byte more
    /// shows trailing data), so streams work and a stream that never ends stops.
    #[test]
    fn safetensors_streams_are_read_as_far_as_declared() {
        let d = tmp("fifo");
        let cfg = icl_core::presets::preset("quick").unwrap();
        let m = icl_core::Model::<f32>::init(&cfg).unwrap();
        let file = d.join("m.safetensors");
        crate::checkpoint::save_model(&file, &m, &cfg, 3).unwrap();
        let bytes = std::fs::read(&file).unwrap();
        for extra in [&b""[..], &b"junk"[..]] {
            let fifo = d.join("pipe");
            let _ = std::fs::remove_file(&fifo);
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: a plain mkfifo on a path we own.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let (p, mut all) = (fifo.clone(), bytes.clone());
            all.extend(extra);
            let writer = std::thread::spawn(move || {
                use std::io::Write;
                // the reader may stop early: a broken pipe is fine
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&p)
                    .and_then(|mut f| f.write_all(&all));
            });
            let got = read_safetensors(&fifo).unwrap();
            writer.join().unwrap();
            assert_eq!(&got[..bytes.len()], &bytes[..]);
            assert_eq!(got.len(), bytes.len() + extra.len().min(1));
            let loaded = crate::checkpoint::decode(&fifo, &got);
            assert_eq!(loaded.is_ok(), extra.is_empty());
        }
    }
}
