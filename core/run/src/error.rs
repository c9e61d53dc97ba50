//! The run layer's error: what went wrong, classified so that every front end maps it the same
//! way (the CLI to exit codes 2 / 1, the C API to status codes, Python to exception types).
use std::path::PathBuf;

/// What went wrong in a run-layer operation.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Invalid input for the core (configuration, shapes, options), or a numerical failure.
    #[error(transparent)]
    Core(#[from] icl_core::Error),
    /// A file or folder is missing.
    #[error("{}: no such file or folder", .0.display())]
    NotFound(PathBuf),
    /// A file exists but cannot be decoded.
    #[error("{}: corrupt or not an icl file: {}", .0.display(), .1)]
    Corrupt(PathBuf, String),
    /// The operating system refused (permissions, full disk, ...).
    #[error("{}: {}", .0.display(), .1)]
    Os(PathBuf, std::io::Error),
    /// A request that cannot be carried out as asked (an existing run folder without `force`,
    /// an unknown engine, an engine that cannot run here).
    #[error("{0}")]
    Refused(String),
    /// An engine failed at run time (no device, driver error).
    #[error("{0}")]
    Engine(String),
    /// An unknown name (engine, preset).
    #[error("{0}")]
    UnknownName(String),
}

impl RunError {
    /// Whether the error is the caller's input (bad arguments, configs or files) rather than a
    /// failure while running (diverged training, a full disk, engine failures). An OS error on
    /// a path the caller gave (no such folder, a folder where a file is wanted or the reverse,
    /// no permission, a read-only file system) is input; one of the machine's (a full disk, a
    /// file too large, an I/O error) is not.
    pub fn is_input(&self) -> bool {
        match self {
            RunError::Core(icl_core::Error::Numerical(_)) => false,
            RunError::Core(_) | RunError::NotFound(_) | RunError::Corrupt(..) => true,
            RunError::Refused(_) | RunError::UnknownName(_) => true,
            RunError::Os(_, e) => is_bad_path(e),
            RunError::Engine(_) => false,
        }
    }
}

/// Whether an OS error says the path itself is wrong (the caller's input), not that the
/// machine failed.
pub fn is_bad_path(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::NotFound
            | K::PermissionDenied
            | K::AlreadyExists
            | K::NotADirectory
            | K::IsADirectory
            | K::DirectoryNotEmpty
            | K::ReadOnlyFilesystem
            | K::InvalidFilename
            | K::InvalidInput
    )
}

/// Result alias.
pub type Result<T> = std::result::Result<T, RunError>;
