//! SIGINT / SIGTERM: the first one asks a running command to stop at the next step (a training run
//! checkpoints and exits); a second one ends the process at once.
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    if STOP.swap(true, Ordering::SeqCst) {
        // SAFETY: restoring the default disposition and re-raising is async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// Install the handlers (idempotent).
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only touches an atomic and async-signal-safe libc calls.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Whether a stop was requested.
pub fn interrupted() -> bool {
    STOP.load(Ordering::SeqCst)
}
