//! SIGINT / SIGTERM. While a command can stop cleanly (a training loop, which checkpoints and
//! exits; a sweep), it *arms* the handler: the first signal asks it to stop at the next step, a
//! second one ends the process at once. Unarmed (reading and checking the input, setting up,
//! writing the outputs), the first signal ends the process at once, as if no handler were
//! installed (exit status 128 + the signal: 130, 143): nothing is half-done there that stopping
//! at a step would keep, and a command blocked on its input (a pipe, a large file) or busy checking
//! it must not ignore the signal.
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static ARMED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    if !ARMED.load(Ordering::SeqCst) || STOP.swap(true, Ordering::SeqCst) {
        // SAFETY: restoring the default disposition and re-raising is async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// Install the handlers, unarmed (idempotent).
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only touches atomics and async-signal-safe libc calls.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// From now on a first signal asks the command to stop ([`interrupted`]) instead of ending it.
pub fn arm() {
    ARMED.store(true, Ordering::SeqCst);
}

/// From now on a signal ends the process at once (a request already made stays).
pub fn disarm() {
    ARMED.store(false, Ordering::SeqCst);
}

/// Whether a stop was requested.
pub fn interrupted() -> bool {
    STOP.load(Ordering::SeqCst)
}
