//! `icl repro` through C: a paper's runs, claims and reports, with the CLI's options as text
//! pairs, checked and computed by the same library functions ([`ReproArgs`],
//! [`icl_core_run::repro::repro`]).
use super::{json_call, text};
use crate::status::{icl_status, FfiResult};
use icl_core_run::options::ReproArgs;
use icl_core_run::repro::ReproOptions;
use std::ffi::{c_char, c_void, CString};

/// Reproduce the paper `paper` (`"he2025"`, `"zhang2025"`, `"multilayer"`, `"temperature"` or `"garg"`)
/// into the folder `out_dir` like `icl repro PAPER --out OUT_DIR --json`, and copy the text of
/// the `report.json` it writes into `buf` (capacity `cap`, NUL included; `needed`, optional,
/// receives the size required): `{"paper", "scale", "version", "machine", "claims": [{"id",
/// "figure", "description", "paper_value", "measured", "stderr", "tolerance", "pass", "runs",
/// ...}], "runs": [{"name", "seconds", "steps_per_s"}]}`. The runs the selected claims need are
/// trained as run folders under `OUT_DIR/runs/` (`out_dir` and `runs/` are created if missing);
/// a run already complete there is skipped and an interrupted one resumed, so calling again with
/// the same options trains nothing and returns the same claims. `OUT_DIR/report.json`,
/// `report.md`, `report.html` and the figures are (re)written on every success. The options are
/// `n` text pairs `keys[i]` = `values[i]`: `scale` (`"smoke"`, the default, or `"paper"`), `only`
/// (comma-separated claim ids, e.g. `"fig13-final"`; unset or `""`: every claim; only the runs
/// the selected claims need are trained), `jobs` (runs trained at once, `"1"` to `"256"`,
/// default `"1"`), `engine` (`"simd"`, `"scalar"` or `"vulkan"`; unset: `icl_default_engine()`),
/// and `set.KEY` (or `set` = `"KEY=VALUE"`, as `--set`) for any key `icl_config_set` takes: that override in every run the selected
/// claims train, as `icl repro --set KEY=VALUE` (e.g. `set.train.steps` = `"50000"` for runs
/// shorter than the paper's; `report.json` then lists the overrides under `"set"`). Nothing is
/// printed. Statuses: `ICL_ERR_UNKNOWN_NAME` (an unknown `paper` or `engine`),
/// `ICL_ERR_ARGUMENT` (an unknown or repeated key, a `scale` other than `smoke` or `paper`, a
/// claim id the paper does not have or an empty one (`only` = `","`), `jobs` not an integer in
/// 1..=256, `out_dir` `""` or a file, `set.` with an empty KEY, any `set.KEY` when the selected
/// claims train no run, a `set.KEY` of a key the selected runs differ in, such as he2025's
/// `train.seed`),
/// `ICL_ERR_UNKNOWN_KEY`, `ICL_ERR_CONFIG` or `ICL_ERR_NONFINITE` (a `set.KEY` that
/// `icl_config_set` refuses with that status, or that breaks a rule of `icl_config_validate` in
/// one of the runs),
/// `ICL_ERR_IO` (a folder or file under `out_dir` cannot be created or written, e.g. a parent
/// of `out_dir` is a file), `ICL_ERR_NULL` (`paper` or `out_dir` NULL, `keys` or `values` NULL with `n` > 0,
/// `buf` NULL with `cap` > 0), `ICL_ERR_UTF8` (a text not UTF-8), `ICL_ERR_SIZE` (more than 1024
/// options, or `cap` too small: nothing is copied and `*needed` is set, but the runs and reports
/// are written, so the call again with a buffer of `*needed` bytes trains nothing). Every bad
/// option and NULL is reported before anything is written; a run that fails while training
/// returns its status (e.g. `ICL_ERR_NUMERICAL`, `ICL_ERR_UNSUPPORTED` for vulkan without a
/// device). Blocks until every run is done (seconds for one zhang2025 claim, minutes for a paper
/// at smoke scale, hours at paper scale). Thread-safe, but two calls must not share `out_dir`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn icl_repro(
    paper: *const c_char,
    out_dir: *const c_char,
    keys: *const *const c_char,
    values: *const *const c_char,
    n: usize,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    // SAFETY: the caller's pointers, as this function's contract states them
    unsafe {
        icl_repro_with_progress(
            paper,
            out_dir,
            keys,
            values,
            n,
            None,
            std::ptr::null_mut(),
            buf,
            cap,
            needed,
        )
    }
}

/// The progress callback of `icl_repro_with_progress`: `event` is `"start"` when a run's
/// training starts (or resumes), `"done"` when it ends (trained now) and `"skip"` for a run that
/// was complete already, as each happens; `name` is the run's folder under
/// `OUT_DIR/runs/` and `index` its place among the `count` runs the selected claims train. The
/// claims that need a computation without training (the temperature paper's experiments) then
/// report theirs the same way, `"start"` and then `"done"` or `"skip"`, with `index` and `count`
/// counted among those computations. `name` and `event` are valid during the call only; `user` is
/// the pointer given to `icl_repro_with_progress`, passed as is.
#[allow(non_camel_case_types)]
pub type icl_repro_progress_fn = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        name: *const c_char,
        index: usize,
        count: usize,
        event: *const c_char,
    ),
>;

/// `icl_repro` with progress reports: the same options, statuses, files and result, and
/// `progress` (NULL: none, as `icl_repro`) called with `user` as `icl_repro_progress_fn`
/// says, one call at a time (from icl's threads when `jobs` > 1). The callback cannot stop the
/// call; it must return normally (no `longjmp`, no C++ exception) and must not call
/// `icl_repro_with_progress` or `icl_repro` for the same `out_dir`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn icl_repro_with_progress(
    paper: *const c_char,
    out_dir: *const c_char,
    keys: *const *const c_char,
    values: *const *const c_char,
    n: usize,
    progress: icl_repro_progress_fn,
    user: *mut c_void,
    buf: *mut c_char,
    cap: usize,
    needed: *mut usize,
) -> icl_status {
    json_call(
        || Ok((text(paper, "paper")?, text(out_dir, "out_dir")?)),
        keys,
        values,
        n,
        buf,
        cap,
        needed,
        |(paper, out), a: ReproArgs| {
            let o = a.options(paper, out)?;
            let cb = Callback { f: progress, user };
            report_json(&o, &mut move |name: &str,
                                       i: usize,
                                       count: usize,
                                       ev: &str| {
                cb.call(name, i, count, ev)
            })
        },
    )
}

/// A C progress callback and its user pointer, handed to the library's progress (which needs
/// `Send`: the pointer goes to the callback as is, which the header states).
struct Callback {
    f: icl_repro_progress_fn,
    user: *mut c_void,
}

// SAFETY: the pointer is never dereferenced here, only passed to the caller's own callback, and
// the header tells the caller that the callback runs on icl's threads.
unsafe impl Send for Callback {}

impl Callback {
    fn call(&self, name: &str, i: usize, count: usize, ev: &str) {
        if let Some(f) = self.f {
            // run names and events hold no NUL (folder names are checked)
            let name = CString::new(name).unwrap_or_default();
            let ev = CString::new(ev).unwrap_or_default();
            // SAFETY: the caller gave a function of this signature; the strings outlive the call
            unsafe { f(self.user, name.as_ptr(), i, count, ev.as_ptr()) }
        }
    }
}

/// Run `icl repro` with checked options, silently, and return `report.json`'s text: the body of
/// `icl_repro` and of C++'s `icl::repro`.
pub(crate) fn repro_json(o: &ReproOptions) -> FfiResult<String> {
    report_json(o, &mut |_: &str, _: usize, _: usize, _: &str| {})
}

/// Run `icl repro` with checked options, reporting to `progress`, and return `report.json`'s text.
pub(crate) fn report_json(
    o: &ReproOptions,
    progress: icl_core_run::repro::Progress,
) -> FfiResult<String> {
    let r = icl_core_run::repro::repro(o, progress)?;
    Ok(icl_core_run::repro::report::json(&r))
}
