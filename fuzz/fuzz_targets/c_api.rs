//! The C API (`icl.h`) called as a C program might: sequences of calls on configs, task samplers,
//! models and trainers with arbitrary sizes, buffer lengths, NULL pointers, strings, engine names,
//! checkpoint files (random bytes or damaged valid ones), and the theory registry with arbitrary
//! parameters. Every call returns a status; none panics (libFuzzer aborts on any panic, even one
//! the C layer would catch as `ICL_ERR_PANIC`), aborts or writes outside the buffers it was given.
//!
//! Buffers are allocated here with the length passed (at most 2^16 values): the contract of
//! `icl.h` is that a pointer is valid for its length, so that is what is fuzzed, along with counts
//! (n, L) that disagree with the buffers. Sizes that are valid but slow (a Monte Carlo risk at
//! L = 10^6) are left out; sizes that cannot fit are kept, as the library must refuse them.
#![no_main]
use arbitrary::Arbitrary;
use icl_ffi::*;
use libfuzzer_sys::fuzz_target;
use std::ffi::{c_char, CStr, CString};
use std::ptr::{null, null_mut};

fn c(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

fn ok(s: icl_status) -> bool {
    assert_ne!(s, icl_status::ICL_ERR_PANIC, "the library panicked");
    if s != icl_status::ICL_OK {
        // every failure has a message
        let m = unsafe { CStr::from_ptr(icl_last_error()) };
        assert!(!m.to_bytes().is_empty(), "{s:?} without a message");
    }
    s == icl_status::ICL_OK
}

/// A count: small, the one the handle needs, or anything.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Count {
    Small(u8),
    Right,
    Any(usize),
}

/// A buffer: NULL, or allocated with a length (the right one, a small one, or the right one off
/// by a little).
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Buf {
    Null,
    Len(u16),
    Right,
    Off(i8),
}

struct Alloc {
    v: Vec<f64>,
    null: bool,
}

impl Alloc {
    fn new(b: Buf, right: usize, fill: f64) -> Alloc {
        let len = match b {
            Buf::Null => 0,
            Buf::Len(n) => n as usize,
            Buf::Right => right,
            Buf::Off(o) => right.saturating_add_signed(o as isize),
        };
        Alloc {
            v: vec![fill; len.min(1 << 16)],
            null: matches!(b, Buf::Null),
        }
    }
    fn ptr(&mut self) -> *mut f64 {
        if self.null {
            null_mut()
        } else {
            self.v.as_mut_ptr()
        }
    }
    fn len(&self) -> usize {
        self.v.len()
    }
}

#[derive(Arbitrary, Debug)]
enum Op<'a> {
    FromToml(&'a str),
    Preset(u8),
    PresetName(&'a str),
    Set(icl_fuzz::Name<'a>, &'a str),
    Get(icl_fuzz::Name<'a>, u16, bool),
    ToToml(u16, bool),
    Validate,
    TaskNew,
    TaskSample(u64, u32, u64, Count, Count, Buf, Buf),
    ModelNew,
    ModelLoad(LoadFrom<'a>),
    ModelSave,
    SetEngine(&'a str),
    Predict(Count, Count, Buf, Buf, Buf, Buf, f64),
    PredictBatch(Count, Count, Buf, Buf, f64),
    LossGrad(Count, Count, Buf, Buf, Buf, bool, f64),
    ModelParams(Buf, bool, f64),
    Circuits(Buf, Buf, bool),
    Risk(Count, u8, u64, bool, bool),
    TrainerNew(Option<&'a str>),
    TrainerLoad(LoadFrom<'a>),
    Train(u8, Buf, bool),
    StepBatch(Count, Count, Buf, Buf, f64),
    TrainerParams(Buf, bool, f64),
    TrainerCircuits(Buf, Buf),
    LogRow(Count, Buf, Buf),
    TrainerModel,
    TrainerSave,
    Dims(u8),
    Theory(u8, Vec<(&'a str, &'a str)>, u16, bool),
    TheoryList(u16),
    Status(i32),
    Nulls(u8),
}

/// A checkpoint file: arbitrary bytes, or the current model's checkpoint with a byte changed.
#[derive(Arbitrary, Debug)]
enum LoadFrom<'a> {
    Bytes(&'a [u8]),
    Damaged(u32, u8),
    Valid,
    Missing,
}

/// Fast theory quantities (closed forms and short solves); simulations are left out.
const THEORY: &[&CStr] = &[
    c"eta-star",
    c"eta-vgd-star",
    c"mu-gamma",
    c"mu-star",
    c"approx-loss",
    c"manifold-loss",
    c"nw-optimum",
    c"gd-risk",
    c"gd-risk-asymptotic",
    c"ols-risk",
    c"bayes-risk",
    c"ratio-bound",
    c"sigma-tilde",
    c"precond-gd-risk",
    c"plateaus",
    c"zhang-m-star",
    c"v-star",
    c"optimal-temperature",
    c"temperature-isotropic",
    c"no-such-quantity",
];

struct State {
    cfg: *mut icl_config,
    task: *mut icl_task,
    model: *mut icl_model,
    trainer: *mut icl_trainer,
    file: std::path::PathBuf,
}

impl Drop for State {
    fn drop(&mut self) {
        unsafe {
            icl_config_free(self.cfg);
            icl_task_free(self.task);
            icl_model_free(self.model);
            icl_trainer_free(self.trainer);
        }
        let _ = std::fs::remove_file(&self.file);
    }
}

fn dims_of_model(m: *const icl_model) -> icl_dims {
    let mut d = icl_dims::default();
    unsafe { icl_model_dims(m, &mut d) };
    d
}

fn dims_of_trainer(t: *const icl_trainer) -> icl_dims {
    let mut d = icl_dims::default();
    unsafe { icl_trainer_dims(t, &mut d) };
    d
}

fn count(c: Count, right: usize) -> usize {
    match c {
        Count::Small(n) => n as usize % 9,
        Count::Right => right,
        Count::Any(n) => n,
    }
}

/// The config behind a handle, read back through the C API, if small enough for the harness.
unsafe fn harness_sized(cfg: *const icl_config) -> bool {
    let mut need = 0usize;
    icl_config_to_toml(cfg, null_mut(), 0, &mut need);
    let mut buf = vec![0 as c_char; need.max(1)];
    if icl_config_to_toml(cfg, buf.as_mut_ptr(), buf.len(), null_mut()) != icl_status::ICL_OK {
        return false;
    }
    let text = CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned();
    icl_core::config::Config::from_toml(&text).is_ok_and(|c| icl_fuzz::harness_sized(&c))
}

impl State {
    unsafe fn replace_cfg(&mut self, new: *mut icl_config) {
        icl_config_free(self.cfg);
        self.cfg = new;
    }

    unsafe fn file_for(&mut self, from: &LoadFrom) -> Option<CString> {
        let p = self.file.to_str()?;
        match from {
            LoadFrom::Bytes(b) => std::fs::write(&self.file, b).ok()?,
            LoadFrom::Missing => {
                let _ = std::fs::remove_file(&self.file);
            }
            LoadFrom::Valid | LoadFrom::Damaged(..) => {
                if self.model.is_null() || !ok(icl_model_save(self.model, c(p).as_ptr())) {
                    return None;
                }
                if let LoadFrom::Damaged(at, v) = from {
                    let mut b = std::fs::read(&self.file).ok()?;
                    let n = b.len();
                    b[*at as usize % n] = *v;
                    std::fs::write(&self.file, b).ok()?;
                }
            }
        }
        // a file the library would accept but whose config is too large for this process
        if let Ok(b) = std::fs::read(&self.file) {
            if let Ok(l) = icl_core_run::checkpoint::decode(std::path::Path::new("f"), &b) {
                if !icl_fuzz::harness_sized(&l.config) {
                    return None;
                }
            }
        }
        Some(c(p))
    }

    unsafe fn run(&mut self, op: Op) {
        let keys: Vec<String> = icl_core::config::keys().map(|k| k.dotted()).collect();
        match op {
            Op::FromToml(t) => {
                let mut h = null_mut();
                if ok(icl_config_from_toml(c(t).as_ptr(), &mut h)) {
                    self.replace_cfg(h);
                } else {
                    assert!(h.is_null(), "a failed create leaves *out NULL");
                }
            }
            Op::Preset(i) => {
                let cfg = icl_fuzz::small_preset(i);
                let mut h = null_mut();
                if ok(icl_config_from_toml(c(&cfg.to_toml()).as_ptr(), &mut h)) {
                    self.replace_cfg(h);
                }
            }
            Op::PresetName(n) => {
                let mut h = null_mut();
                if ok(icl_config_preset(c(n).as_ptr(), &mut h)) {
                    self.replace_cfg(h);
                }
            }
            Op::Set(k, v) => {
                ok(icl_config_set(
                    self.cfg,
                    c(&k.pick(&keys)).as_ptr(),
                    c(v).as_ptr(),
                ));
            }
            Op::Get(k, cap, null_needed) => {
                let mut buf = vec![0 as c_char; cap as usize];
                let mut need = 0usize;
                let np = if null_needed {
                    null_mut()
                } else {
                    &mut need as *mut usize
                };
                let s = icl_config_get(
                    self.cfg,
                    c(&k.pick(&keys)).as_ptr(),
                    buf.as_mut_ptr(),
                    buf.len(),
                    np,
                );
                if ok(s) {
                    assert!(buf.contains(&0), "a copied string is NUL-terminated");
                }
            }
            Op::ToToml(cap, null_buf) => {
                let mut buf = vec![0 as c_char; cap as usize];
                let p = if null_buf {
                    null_mut()
                } else {
                    buf.as_mut_ptr()
                };
                let mut need = 0usize;
                if ok(icl_config_to_toml(self.cfg, p, buf.len(), &mut need)) {
                    assert_eq!(CStr::from_ptr(buf.as_ptr()).to_bytes().len() + 1, need);
                }
            }
            Op::Validate => {
                ok(icl_config_validate(self.cfg));
            }
            Op::TaskNew => {
                if self.cfg.is_null() || !harness_sized(self.cfg) {
                    return;
                }
                let mut h = null_mut();
                if ok(icl_task_new(self.cfg, &mut h)) {
                    icl_task_free(self.task);
                    self.task = h;
                }
            }
            Op::TaskSample(seed, domain, step, n, len, zb, yb) => {
                let mut d = icl_dims::default();
                if self.task.is_null() || !ok(icl_task_dims(self.task, &mut d)) {
                    ok(icl_task_sample(
                        self.task,
                        seed,
                        domain,
                        step,
                        1,
                        1,
                        null_mut(),
                        0,
                        null_mut(),
                        0,
                    ));
                    return;
                }
                let (n, len) = (count(n, 2), count(len, d.train_len));
                let zr = n
                    .saturating_mul(len.saturating_add(1))
                    .saturating_mul(d.d + d.n_out);
                let (mut z, mut y) = (
                    Alloc::new(zb, zr, 0.0),
                    Alloc::new(yb, n.saturating_mul(d.n_out), 0.0),
                );
                if ok(icl_task_sample(
                    self.task,
                    seed,
                    domain,
                    step,
                    n,
                    len,
                    z.ptr(),
                    z.len(),
                    y.ptr(),
                    y.len(),
                )) {
                    assert!(z.v.iter().chain(&y.v).all(|x| x.is_finite()));
                }
            }
            Op::ModelNew => {
                if self.cfg.is_null() || !harness_sized(self.cfg) {
                    return;
                }
                let mut h = null_mut();
                if ok(icl_model_new(self.cfg, &mut h)) {
                    icl_model_free(self.model);
                    self.model = h;
                }
            }
            Op::ModelLoad(from) => {
                let Some(p) = self.file_for(&from) else {
                    return;
                };
                let mut h = null_mut();
                if ok(icl_model_load(p.as_ptr(), &mut h)) {
                    icl_model_free(self.model);
                    self.model = h;
                }
            }
            Op::ModelSave => {
                let p = c(self.file.to_str().unwrap_or(""));
                ok(icl_model_save(self.model, p.as_ptr()));
            }
            Op::SetEngine(name) => {
                ok(icl_model_set_engine(self.model, c(name).as_ptr()));
            }
            Op::Predict(n, len, xb, yb, qb, ob, fill) => {
                let d = dims_of_model(self.model);
                let (n, len) = (count(n, 2), count(len, 3));
                let mut x = Alloc::new(xb, n.saturating_mul(len).saturating_mul(d.d), fill);
                let mut y = Alloc::new(yb, n.saturating_mul(len).saturating_mul(d.n_out), 0.5);
                let mut q = Alloc::new(qb, n.saturating_mul(d.d), 0.25);
                let mut o = Alloc::new(ob, n.saturating_mul(d.n_out), 0.0);
                ok(icl_model_predict(
                    self.model,
                    n,
                    len,
                    x.ptr(),
                    x.len(),
                    y.ptr(),
                    y.len(),
                    q.ptr(),
                    q.len(),
                    o.ptr(),
                    o.len(),
                ));
            }
            Op::PredictBatch(n, len, zb, ob, fill) => {
                let d = dims_of_model(self.model);
                let (n, len) = (count(n, 2), count(len, 3));
                let mut z = Alloc::new(
                    zb,
                    n.saturating_mul(len.saturating_add(1))
                        .saturating_mul(d.d + d.n_out),
                    fill,
                );
                let mut o = Alloc::new(ob, n.saturating_mul(d.n_out), 0.0);
                ok(icl_model_predict_batch(
                    self.model,
                    n,
                    len,
                    z.ptr(),
                    z.len(),
                    o.ptr(),
                    o.len(),
                ));
            }
            Op::LossGrad(n, len, zb, yb, gb, null_loss, fill) => {
                let d = dims_of_model(self.model);
                let (n, len) = (count(n, 2), count(len, 3));
                let mut z = Alloc::new(
                    zb,
                    n.saturating_mul(len.saturating_add(1))
                        .saturating_mul(d.d + d.n_out),
                    fill,
                );
                let mut y = Alloc::new(yb, n.saturating_mul(d.n_out), 0.5);
                let mut g = Alloc::new(gb, d.n_params, 0.0);
                let mut loss = 0.0;
                let lp = if null_loss {
                    null_mut()
                } else {
                    &mut loss as *mut f64
                };
                ok(icl_model_loss_grad(
                    self.model,
                    n,
                    len,
                    z.ptr(),
                    z.len(),
                    y.ptr(),
                    y.len(),
                    lp,
                    g.ptr(),
                    g.len(),
                ));
            }
            Op::ModelParams(b, set, fill) => {
                let d = dims_of_model(self.model);
                let mut p = Alloc::new(b, d.n_params, fill);
                if set {
                    ok(icl_model_set_params(self.model, p.ptr(), p.len()));
                } else {
                    ok(icl_model_get_params(self.model, p.ptr(), p.len()));
                }
            }
            Op::Circuits(ob, mb, matrices) => {
                let d = dims_of_model(self.model);
                let e = d.d + d.n_out;
                if matrices {
                    let mut kq = Alloc::new(ob, d.heads * e * e, 0.0);
                    let mut ov = Alloc::new(mb, d.heads * d.n_out * e, 0.0);
                    ok(icl_model_circuit_matrices(
                        self.model,
                        kq.ptr(),
                        kq.len(),
                        ov.ptr(),
                        ov.len(),
                    ));
                } else {
                    let mut om = Alloc::new(ob, d.heads, 0.0);
                    let mut mu = Alloc::new(mb, d.heads * d.n_out, 0.0);
                    ok(icl_model_circuits(
                        self.model,
                        om.ptr(),
                        om.len(),
                        mu.ptr(),
                        mu.len(),
                    ));
                }
            }
            Op::Risk(len, samples, seed, own_task, null_out) => {
                let len = count(len, 4);
                // valid but slow lengths are not what this harness looks for
                if (1 << 10..1 << 40).contains(&len) {
                    return;
                }
                let t = if own_task {
                    null()
                } else {
                    self.task as *const icl_task
                };
                let (mut r, mut se) = (0.0f64, 0.0f64);
                let rp = if null_out {
                    null_mut()
                } else {
                    &mut r as *mut f64
                };
                if ok(icl_model_risk(
                    self.model,
                    t,
                    len,
                    samples as usize % 64,
                    seed,
                    rp,
                    &mut se,
                )) {
                    assert!(r.is_finite() && se.is_finite() && se >= 0.0);
                }
            }
            Op::TrainerNew(engine) => {
                if self.cfg.is_null() || !harness_sized(self.cfg) {
                    return;
                }
                let e = engine.map(c);
                let ep = e.as_ref().map_or(null(), |e| e.as_ptr());
                let mut h = null_mut();
                if ok(icl_trainer_new(self.cfg, ep, &mut h)) {
                    icl_trainer_free(self.trainer);
                    self.trainer = h;
                }
            }
            Op::TrainerLoad(from) => {
                let Some(p) = self.file_for(&from) else {
                    return;
                };
                let mut h = null_mut();
                if ok(icl_trainer_from_checkpoint(p.as_ptr(), null(), &mut h)) {
                    icl_trainer_free(self.trainer);
                    self.trainer = h;
                }
            }
            Op::Train(steps, lb, null_mean) => {
                let steps = steps as u64 % 6;
                let mut l = Alloc::new(lb, steps as usize, 0.0);
                let mut mean = 0.0;
                let mp = if null_mean {
                    null_mut()
                } else {
                    &mut mean as *mut f64
                };
                ok(icl_trainer_train(self.trainer, steps, l.ptr(), l.len(), mp));
            }
            Op::StepBatch(n, len, zb, yb, fill) => {
                let d = dims_of_trainer(self.trainer);
                let (n, len) = (count(n, 2), count(len, 3));
                let mut z = Alloc::new(
                    zb,
                    n.saturating_mul(len.saturating_add(1))
                        .saturating_mul(d.d + d.n_out),
                    fill,
                );
                let mut y = Alloc::new(yb, n.saturating_mul(d.n_out), 0.5);
                let mut loss = 0.0;
                ok(icl_trainer_step_batch(
                    self.trainer,
                    n,
                    len,
                    z.ptr(),
                    z.len(),
                    y.ptr(),
                    y.len(),
                    &mut loss,
                ));
            }
            Op::TrainerParams(b, set, fill) => {
                let d = dims_of_trainer(self.trainer);
                let mut p = Alloc::new(b, d.n_params, fill);
                if set {
                    ok(icl_trainer_set_params(self.trainer, p.ptr(), p.len()));
                } else {
                    ok(icl_trainer_get_params(self.trainer, p.ptr(), p.len()));
                }
            }
            Op::TrainerCircuits(ob, mb) => {
                let d = dims_of_trainer(self.trainer);
                let mut om = Alloc::new(ob, d.heads, 0.0);
                let mut mu = Alloc::new(mb, d.heads * d.n_out, 0.0);
                ok(icl_trainer_circuits(
                    self.trainer,
                    om.ptr(),
                    om.len(),
                    mu.ptr(),
                    mu.len(),
                ));
            }
            Op::LogRow(i, ob, mb) => {
                let d = dims_of_trainer(self.trainer);
                let mut rows = 0usize;
                ok(icl_trainer_log_len(self.trainer, &mut rows));
                let i = count(i, rows.saturating_sub(1));
                let mut om = Alloc::new(ob, d.heads, 0.0);
                let mut mu = Alloc::new(mb, d.heads, 0.0);
                let (mut step, mut loss) = (0u64, 0.0);
                ok(icl_trainer_log_row(
                    self.trainer,
                    i,
                    &mut step,
                    &mut loss,
                    om.ptr(),
                    om.len(),
                    mu.ptr(),
                    mu.len(),
                ));
            }
            Op::TrainerModel => {
                let mut h = null_mut();
                if ok(icl_trainer_model(self.trainer, &mut h)) {
                    icl_model_free(self.model);
                    self.model = h;
                }
            }
            Op::TrainerSave => {
                let p = c(self.file.to_str().unwrap_or(""));
                ok(icl_trainer_save(self.trainer, p.as_ptr()));
            }
            Op::Dims(which) => {
                let mut d = icl_dims::default();
                let mut s = 0u64;
                match which % 4 {
                    0 => ok(icl_model_dims(self.model, &mut d)),
                    1 => ok(icl_trainer_dims(self.trainer, &mut d)),
                    2 => ok(icl_task_dims(self.task, &mut d)),
                    _ => ok(icl_trainer_step_count(self.trainer, &mut s)),
                };
            }
            Op::Theory(which, params, cap, value) => {
                let name = THEORY[which as usize % THEORY.len()];
                let ks: Vec<CString> = params.iter().take(8).map(|(k, _)| c(k)).collect();
                let vs: Vec<CString> = params.iter().take(8).map(|(_, v)| c(v)).collect();
                let kp: Vec<*const c_char> = ks.iter().map(|k| k.as_ptr()).collect();
                let vp: Vec<*const c_char> = vs.iter().map(|v| v.as_ptr()).collect();
                let mut need = 0usize;
                if value {
                    let mut out = vec![0.0f64; cap as usize % 512];
                    ok(icl_theory_value(
                        name.as_ptr(),
                        kp.as_ptr(),
                        vp.as_ptr(),
                        kp.len(),
                        out.as_mut_ptr(),
                        out.len(),
                        &mut need,
                    ));
                } else {
                    let mut buf = vec![0 as c_char; cap as usize];
                    ok(icl_theory_eval(
                        name.as_ptr(),
                        kp.as_ptr(),
                        vp.as_ptr(),
                        kp.len(),
                        buf.as_mut_ptr(),
                        buf.len(),
                        &mut need,
                    ));
                }
            }
            Op::TheoryList(cap) => {
                let mut buf = vec![0 as c_char; cap as usize];
                ok(icl_theory_list(buf.as_mut_ptr(), buf.len(), null_mut()));
            }
            Op::Status(code) => {
                assert!(!CStr::from_ptr(icl_status_name(code)).to_bytes().is_empty());
                let _ = CStr::from_ptr(icl_version());
                let _ = CStr::from_ptr(icl_default_engine());
            }
            Op::Nulls(which) => {
                let st = match which % 12 {
                    0 => icl_config_from_toml(null(), null_mut()),
                    1 => icl_config_preset(c"quick".as_ptr(), null_mut()),
                    2 => icl_config_set(null_mut(), c"task.d".as_ptr(), c"3".as_ptr()),
                    3 => icl_config_set(self.cfg, null(), c"3".as_ptr()),
                    4 => icl_config_get(self.cfg, c"task.d".as_ptr(), null_mut(), 64, null_mut()),
                    5 => icl_model_load(null(), &mut null_mut()),
                    6 => icl_model_predict(
                        null_mut(),
                        1,
                        1,
                        null(),
                        0,
                        null(),
                        0,
                        null(),
                        0,
                        null_mut(),
                        0,
                    ),
                    7 => icl_trainer_train(null_mut(), 1, null_mut(), 0, null_mut()),
                    8 => icl_task_sample(null(), 0, 0, 0, 1, 1, null_mut(), 0, null_mut(), 0),
                    9 => icl_theory_value(
                        c"eta-star".as_ptr(),
                        null(),
                        null(),
                        3,
                        null_mut(),
                        0,
                        null_mut(),
                    ),
                    10 => icl_model_risk(self.model, null(), 4, 8, 0, null_mut(), null_mut()),
                    _ => icl_trainer_log_row(
                        self.trainer,
                        0,
                        null_mut(),
                        null_mut(),
                        null_mut(),
                        1,
                        null_mut(),
                        1,
                    ),
                };
                assert_ne!(
                    st,
                    icl_status::ICL_OK,
                    "a NULL argument is refused ({which})"
                );
                ok(st);
            }
        }
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let mut s = State {
        cfg: null_mut(),
        task: null_mut(),
        model: null_mut(),
        trainer: null_mut(),
        file: std::env::temp_dir()
            .join(format!("icl-fuzz-capi-{}.safetensors", std::process::id())),
    };
    for op in ops.into_iter().take(24) {
        unsafe { s.run(op) };
    }
});
