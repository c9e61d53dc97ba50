//! Status codes, the thread-local last-error message, and the panic guard every exported
//! function runs its body in (nothing unwinds across the C or C++ boundary).
use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What an `icl_` function returns. `ICL_OK` (0) is success; every other value is a failure whose
/// message `icl_last_error()` returns.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum icl_status {
    /// Success.
    ICL_OK = 0,
    /// A required pointer argument is NULL.
    ICL_ERR_NULL = 1,
    /// A buffer length or a shape (n, L, number of parameters, samples, ...) is wrong, zero, too
    /// large or overflows, an index is past the end, or the memory a size needs is not available.
    ICL_ERR_SIZE = 2,
    /// An input value is NaN or infinite (or overflows the model's precision).
    ICL_ERR_NONFINITE = 3,
    /// A configuration value is out of range or malformed, a TOML text does not parse, a rule
    /// between keys fails, or the configuration needs more than the 16 GiB memory budget.
    ICL_ERR_CONFIG = 4,
    /// A configuration key that does not exist.
    ICL_ERR_UNKNOWN_KEY = 5,
    /// An unknown preset, engine or theory quantity name.
    ICL_ERR_UNKNOWN_NAME = 6,
    /// A numerical failure: a singular or indefinite matrix, a diverged training step, a result
    /// that is not finite.
    ICL_ERR_NUMERICAL = 7,
    /// An option combination that is not implemented, or an engine that cannot run here
    /// (vulkan without a device or in f64).
    ICL_ERR_UNSUPPORTED = 8,
    /// The operating system refused a file operation (missing file, permissions, ...).
    ICL_ERR_IO = 9,
    /// A file exists but is not a valid icl checkpoint.
    ICL_ERR_CHECKPOINT = 10,
    /// A string argument is not valid UTF-8.
    ICL_ERR_UTF8 = 11,
    /// Any other invalid argument: an enum value out of range (`domain`), a misaligned pointer,
    /// or a theory parameter that is unknown, repeated, missing or outside its range.
    ICL_ERR_ARGUMENT = 12,
    /// A bug: the library panicked. The handle passed in may be in an unspecified (but safe to
    /// free) state.
    ICL_ERR_PANIC = 13,
}

impl icl_status {
    /// Every status, in code order (the codes are 0, 1, 2, ...).
    pub const ALL: [icl_status; 14] = {
        use icl_status::*;
        [
            ICL_OK,
            ICL_ERR_NULL,
            ICL_ERR_SIZE,
            ICL_ERR_NONFINITE,
            ICL_ERR_CONFIG,
            ICL_ERR_UNKNOWN_KEY,
            ICL_ERR_UNKNOWN_NAME,
            ICL_ERR_NUMERICAL,
            ICL_ERR_UNSUPPORTED,
            ICL_ERR_IO,
            ICL_ERR_CHECKPOINT,
            ICL_ERR_UTF8,
            ICL_ERR_ARGUMENT,
            ICL_ERR_PANIC,
        ]
    };

    /// The status of a code, if there is one.
    pub fn from_code(code: i32) -> Option<icl_status> {
        usize::try_from(code)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
            .filter(|s| *s as i32 == code)
    }

    /// The enumerator's name as a C string, e.g. `c"ICL_ERR_SIZE"`.
    pub fn name_c(self) -> &'static std::ffi::CStr {
        use icl_status::*;
        match self {
            ICL_OK => c"ICL_OK",
            ICL_ERR_NULL => c"ICL_ERR_NULL",
            ICL_ERR_SIZE => c"ICL_ERR_SIZE",
            ICL_ERR_NONFINITE => c"ICL_ERR_NONFINITE",
            ICL_ERR_CONFIG => c"ICL_ERR_CONFIG",
            ICL_ERR_UNKNOWN_KEY => c"ICL_ERR_UNKNOWN_KEY",
            ICL_ERR_UNKNOWN_NAME => c"ICL_ERR_UNKNOWN_NAME",
            ICL_ERR_NUMERICAL => c"ICL_ERR_NUMERICAL",
            ICL_ERR_UNSUPPORTED => c"ICL_ERR_UNSUPPORTED",
            ICL_ERR_IO => c"ICL_ERR_IO",
            ICL_ERR_CHECKPOINT => c"ICL_ERR_CHECKPOINT",
            ICL_ERR_UTF8 => c"ICL_ERR_UTF8",
            ICL_ERR_ARGUMENT => c"ICL_ERR_ARGUMENT",
            ICL_ERR_PANIC => c"ICL_ERR_PANIC",
        }
    }

    /// The enumerator's name, e.g. `"ICL_ERR_SIZE"`.
    pub fn name(self) -> &'static str {
        self.name_c().to_str().unwrap_or("ICL_UNKNOWN_STATUS")
    }
}

/// A failure: its status code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FfiError {
    pub status: icl_status,
    pub msg: String,
}

/// Result alias of the binding layer.
pub type FfiResult<T> = Result<T, FfiError>;

impl FfiError {
    /// A failure with a status and message.
    pub fn new(status: icl_status, msg: impl Into<String>) -> Self {
        FfiError {
            status,
            msg: msg.into(),
        }
    }
    /// `ICL_ERR_SIZE`.
    pub fn size(msg: impl Into<String>) -> Self {
        Self::new(icl_status::ICL_ERR_SIZE, msg)
    }
    /// `ICL_ERR_NULL` for the named argument.
    pub fn null(what: &str) -> Self {
        Self::new(icl_status::ICL_ERR_NULL, format!("{what} is NULL"))
    }
    /// `ICL_ERR_ARGUMENT`.
    pub fn argument(msg: impl Into<String>) -> Self {
        Self::new(icl_status::ICL_ERR_ARGUMENT, msg)
    }
    /// `ICL_ERR_NONFINITE`.
    pub fn nonfinite(msg: impl Into<String>) -> Self {
        Self::new(icl_status::ICL_ERR_NONFINITE, msg)
    }
}

impl fmt::Display for FfiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for FfiError {}

impl From<icl_core::Error> for FfiError {
    fn from(e: icl_core::Error) -> Self {
        use icl_core::Error as E;
        use icl_status::*;
        let status = match &e {
            E::InvalidConfig(_) => ICL_ERR_CONFIG,
            E::UnknownKey(_) => ICL_ERR_UNKNOWN_KEY,
            E::UnknownPreset(_) => ICL_ERR_UNKNOWN_NAME,
            E::Shape(_) => ICL_ERR_SIZE,
            E::NonFinite(_) => ICL_ERR_NONFINITE,
            E::Numerical(_) => ICL_ERR_NUMERICAL,
            E::Unsupported(_) => ICL_ERR_UNSUPPORTED,
            E::Checkpoint(_) => ICL_ERR_CHECKPOINT,
            E::InvalidArgument(_) => ICL_ERR_ARGUMENT,
            E::UnknownName(_) => ICL_ERR_UNKNOWN_NAME,
            E::TooLarge(_) => ICL_ERR_SIZE,
        };
        FfiError::new(status, e.to_string())
    }
}

impl From<icl_core_run::RunError> for FfiError {
    fn from(e: icl_core_run::RunError) -> Self {
        use icl_core_run::RunError as E;
        let status = match &e {
            E::Core(_) => {
                if let E::Core(c) = e {
                    return c.into();
                }
                icl_status::ICL_ERR_ARGUMENT
            }
            E::Corrupt(..) => icl_status::ICL_ERR_CHECKPOINT,
            E::NotFound(_) | E::Os(..) => icl_status::ICL_ERR_IO,
            E::UnknownName(_) => icl_status::ICL_ERR_UNKNOWN_NAME,
            E::Engine(_) => icl_status::ICL_ERR_UNSUPPORTED,
            E::Refused(_) => icl_status::ICL_ERR_ARGUMENT,
        };
        FfiError::new(status, e.to_string())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Record `msg` as this thread's last error (interior NULs are replaced).
pub fn set_last_error(msg: &str) {
    let c = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    // `try_with`: during thread teardown the slot may be gone; the message is then dropped.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = c);
}

/// Pointer to this thread's last error message (empty when none). Valid until the next failing
/// `icl_` call on this thread.
pub fn last_error_ptr() -> *const c_char {
    static EMPTY: &[u8] = b"\0";
    LAST_ERROR
        .try_with(|slot| slot.borrow().as_ptr())
        .unwrap_or(EMPTY.as_ptr() as *const c_char)
}

/// The text of a panic payload.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".into()
    }
}

/// Run `f`, catching panics; turn its outcome into a status and record the message of a failure.
pub fn guard<F: FnOnce() -> FfiResult<()>>(f: F) -> icl_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => icl_status::ICL_OK,
        Ok(Err(e)) => {
            set_last_error(&e.msg);
            e.status
        }
        Err(p) => {
            set_last_error(&format!("internal error (panic): {}", panic_message(&*p)));
            icl_status::ICL_ERR_PANIC
        }
    }
}

/// Run `f`, catching panics, for the C++ bridge (whose failures become C++ exceptions).
pub fn guard_cxx<T, F: FnOnce() -> FfiResult<T>>(f: F) -> FfiResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(FfiError::new(
            icl_status::ICL_ERR_PANIC,
            format!("internal error (panic): {}", panic_message(&*p)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use icl_core::Error as E;

    #[test]
    fn core_errors_map_to_their_documented_codes() {
        use icl_status::*;
        let cases = [
            (E::InvalidConfig("a".into()), ICL_ERR_CONFIG),
            (E::UnknownKey("a".into()), ICL_ERR_UNKNOWN_KEY),
            (E::UnknownPreset("a".into()), ICL_ERR_UNKNOWN_NAME),
            (E::Shape("a".into()), ICL_ERR_SIZE),
            (E::NonFinite("a".into()), ICL_ERR_NONFINITE),
            (E::Numerical("a".into()), ICL_ERR_NUMERICAL),
            (E::Unsupported("a".into()), ICL_ERR_UNSUPPORTED),
            (E::Checkpoint("a".into()), ICL_ERR_CHECKPOINT),
            (E::TooLarge("a".into()), ICL_ERR_SIZE),
        ];
        for (e, want) in cases {
            let msg = e.to_string();
            let f: FfiError = e.into();
            assert_eq!(f.status, want);
            assert_eq!(f.msg, msg);
        }
        let io: FfiError = icl_core_run::RunError::NotFound("/x".into()).into();
        assert_eq!(io.status, ICL_ERR_IO);
        let bad: FfiError = icl_core_run::RunError::Corrupt("/x".into(), "junk".into()).into();
        assert_eq!(bad.status, ICL_ERR_CHECKPOINT);
    }

    #[test]
    fn guard_turns_panics_into_a_status_and_a_message() {
        let s = guard(|| panic!("boom {}", 7));
        assert_eq!(s, icl_status::ICL_ERR_PANIC);
        let msg = unsafe { std::ffi::CStr::from_ptr(last_error_ptr()) };
        assert!(msg.to_str().unwrap().contains("boom 7"));
        let s = guard(|| Err(FfiError::size("too small\0inner nul")));
        assert_eq!(s, icl_status::ICL_ERR_SIZE);
        let msg = unsafe { std::ffi::CStr::from_ptr(last_error_ptr()) };
        assert_eq!(msg.to_str().unwrap(), "too small\\0inner nul");
        let r: FfiResult<u8> = guard_cxx(|| panic!("cxx side"));
        assert_eq!(r.unwrap_err().status, icl_status::ICL_ERR_PANIC);
    }
}
