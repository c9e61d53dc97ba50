//! Every function of the C API fed bad arguments: NULL pointers, zero and wrong sizes, NaN and
//! infinite values, unknown keys and names, out-of-range enums, misaligned buffers, missing and
//! corrupt files. Each must return the documented status, leave a message in `icl_last_error()`,
//! set creation out-parameters to NULL, and leave the handle unchanged. Called through the same
//! `extern "C"` functions a C program links to.
use icl_ffi::*;
use std::ffi::{c_char, CStr, CString};
use std::ptr::{null, null_mut};

use icl_status::*;

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn last() -> String {
    unsafe { CStr::from_ptr(icl_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Assert a call returns `want` and leaves a non-empty message.
macro_rules! fails {
    ($want:ident, $call:expr) => {{
        let got = unsafe { $call };
        assert_eq!(
            got,
            $want,
            "{} -> {:?} ({})",
            stringify!($call),
            got,
            last()
        );
        assert!(
            !last().is_empty(),
            "{}: empty last error",
            stringify!($call)
        );
    }};
}

macro_rules! ok {
    ($call:expr) => {{
        let got = unsafe { $call };
        assert_eq!(
            got,
            ICL_OK,
            "{} -> {:?} ({})",
            stringify!($call),
            got,
            last()
        );
    }};
}

/// A creation call with a non-NULL garbage value in `*out` must fail and set it to NULL.
macro_rules! fails_create {
    ($want:ident, $f:ident ( $($arg:expr),* )) => {{
        let mut out = std::ptr::NonNull::dangling().as_ptr();
        fails!($want, $f($($arg,)* &mut out));
        assert!(out.is_null(), "{}: out not NULL after failure", stringify!($f));
    }};
}

struct Fix {
    cfg: *mut icl_config,
    task: *mut icl_task,
    model: *mut icl_model,
    trainer: *mut icl_trainer,
    dims: icl_dims,
}

impl Drop for Fix {
    fn drop(&mut self) {
        unsafe {
            icl_trainer_free(self.trainer);
            icl_model_free(self.model);
            icl_task_free(self.task);
            icl_config_free(self.cfg);
        }
    }
}

fn fixture() -> Fix {
    let mut f = Fix {
        cfg: null_mut(),
        task: null_mut(),
        model: null_mut(),
        trainer: null_mut(),
        dims: icl_dims::default(),
    };
    ok!(icl_config_preset(c("quick").as_ptr(), &mut f.cfg));
    ok!(icl_config_set(f.cfg, c("task.L").as_ptr(), c("6").as_ptr()));
    ok!(icl_config_set(
        f.cfg,
        c("train.batch").as_ptr(),
        c("4").as_ptr()
    ));
    ok!(icl_task_new(f.cfg, &mut f.task));
    ok!(icl_model_new(f.cfg, &mut f.model));
    ok!(icl_trainer_new(f.cfg, null(), &mut f.trainer));
    ok!(icl_model_dims(f.model, &mut f.dims));
    f
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("icl-ffi-bad-args-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn library_functions() {
    assert_eq!(
        unsafe { CStr::from_ptr(icl_version()) }.to_str().unwrap(),
        env!("CARGO_PKG_VERSION")
    );
    // every status the header declares is in ALL, with its code, and icl_status_name names it
    let header =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../ffi/include/icl.h"))
            .unwrap();
    let declared: Vec<&str> = header
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("ICL_OK") || w.starts_with("ICL_ERR_"))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(declared.len(), icl_status::ALL.len(), "{declared:?}");
    for (code, s) in icl_status::ALL.iter().enumerate() {
        assert_eq!(*s as usize, code);
        let n = unsafe { CStr::from_ptr(icl_status_name(*s as i32)) };
        assert_eq!(n.to_str().unwrap(), s.name());
        assert!(declared.contains(&s.name()), "{}", s.name());
    }
    for bad in [-1, 14, 1000] {
        let n = unsafe { CStr::from_ptr(icl_status_name(bad)) };
        assert_eq!(n.to_str().unwrap(), "ICL_UNKNOWN_STATUS");
    }
    let e = unsafe { CStr::from_ptr(icl_default_engine()) };
    assert_eq!(e.to_str().unwrap(), icl_core_run::default_engine());
}

#[test]
fn last_error_is_per_thread() {
    fails_create!(
        ICL_ERR_UNKNOWN_NAME,
        icl_config_preset(c("no-such-preset").as_ptr())
    );
    assert!(last().contains("no-such-preset"), "{}", last());
    let other = std::thread::spawn(last).join().unwrap();
    assert_eq!(other, "", "a fresh thread has no error");
    assert!(last().contains("no-such-preset"));
}

#[test]
fn config_functions() {
    let f = fixture();
    let bad_utf8: &[u8] = b"qu\xffck\0";
    fails_create!(ICL_ERR_NULL, icl_config_preset(null()));
    fails_create!(ICL_ERR_UNKNOWN_NAME, icl_config_preset(c("nope").as_ptr()));
    fails_create!(
        ICL_ERR_UTF8,
        icl_config_preset(bad_utf8.as_ptr() as *const c_char)
    );
    fails!(
        ICL_ERR_NULL,
        icl_config_preset(c("quick").as_ptr(), null_mut())
    );
    fails_create!(ICL_ERR_NULL, icl_config_from_toml(null()));
    fails_create!(
        ICL_ERR_CONFIG,
        icl_config_from_toml(c("[model]\nheads = 0\n").as_ptr())
    );
    fails_create!(
        ICL_ERR_UNKNOWN_KEY,
        icl_config_from_toml(c("[model]\nnope = 1\n").as_ptr())
    );
    fails_create!(
        ICL_ERR_NONFINITE,
        icl_config_from_toml(c("[task]\nsigma2 = nan\n").as_ptr())
    );
    fails_create!(
        ICL_ERR_CONFIG,
        icl_config_from_toml(c("[task\nd = 3\n").as_ptr())
    );

    let (k, v) = (c("model.heads"), c("3"));
    fails!(
        ICL_ERR_NULL,
        icl_config_set(null_mut(), k.as_ptr(), v.as_ptr())
    );
    fails!(ICL_ERR_NULL, icl_config_set(f.cfg, null(), v.as_ptr()));
    fails!(ICL_ERR_NULL, icl_config_set(f.cfg, k.as_ptr(), null()));
    fails!(
        ICL_ERR_UNKNOWN_KEY,
        icl_config_set(f.cfg, c("model.nope").as_ptr(), v.as_ptr())
    );
    fails!(
        ICL_ERR_NONFINITE,
        icl_config_set(f.cfg, c("task.sigma2").as_ptr(), c("NaN").as_ptr())
    );
    fails!(
        ICL_ERR_NONFINITE,
        icl_config_set(f.cfg, c("train.lr").as_ptr(), c("inf").as_ptr())
    );
    fails!(
        ICL_ERR_CONFIG,
        icl_config_set(f.cfg, k.as_ptr(), c("two").as_ptr())
    );
    fails!(
        ICL_ERR_UTF8,
        icl_config_set(f.cfg, k.as_ptr(), bad_utf8.as_ptr() as *const c_char)
    );

    // get: the failed sets above left the value alone
    let mut buf = [0 as c_char; 64];
    let mut need = 0usize;
    ok!(icl_config_get(
        f.cfg,
        k.as_ptr(),
        buf.as_mut_ptr(),
        buf.len(),
        &mut need
    ));
    assert_eq!(
        unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap(),
        "2"
    );
    assert_eq!(need, 2);
    fails!(
        ICL_ERR_NULL,
        icl_config_get(null(), k.as_ptr(), buf.as_mut_ptr(), 64, null_mut())
    );
    fails!(
        ICL_ERR_NULL,
        icl_config_get(f.cfg, null(), buf.as_mut_ptr(), 64, null_mut())
    );
    fails!(
        ICL_ERR_UNKNOWN_KEY,
        icl_config_get(f.cfg, c("x.y").as_ptr(), buf.as_mut_ptr(), 64, null_mut())
    );
    fails!(
        ICL_ERR_SIZE,
        icl_config_get(f.cfg, k.as_ptr(), buf.as_mut_ptr(), 1, &mut need)
    );
    assert_eq!(need, 2, "needed size reported on ICL_ERR_SIZE");
    fails!(
        ICL_ERR_SIZE,
        icl_config_get(f.cfg, k.as_ptr(), null_mut(), 0, &mut need)
    );
    fails!(
        ICL_ERR_NULL,
        icl_config_get(f.cfg, k.as_ptr(), null_mut(), 64, null_mut())
    );

    fails!(ICL_ERR_NULL, icl_config_validate(null()));
    fails!(
        ICL_ERR_NULL,
        icl_config_to_toml(null(), buf.as_mut_ptr(), 64, null_mut())
    );
    fails!(
        ICL_ERR_SIZE,
        icl_config_to_toml(f.cfg, null_mut(), 0, &mut need)
    );
    assert!(need > 100, "TOML needs {need} bytes");

    // cross-field rules are checked when the config is used
    let mut bad = null_mut();
    ok!(icl_config_preset(c("quick").as_ptr(), &mut bad));
    ok!(icl_config_set(
        bad,
        c("task.kind").as_ptr(),
        c("multitask").as_ptr()
    ));
    fails!(ICL_ERR_CONFIG, icl_config_validate(bad));
    fails_create!(ICL_ERR_CONFIG, icl_task_new(bad));
    fails_create!(ICL_ERR_CONFIG, icl_model_new(bad));
    fails_create!(ICL_ERR_CONFIG, icl_trainer_new(bad, null()));
    unsafe { icl_config_free(bad) };
    unsafe { icl_config_free(null_mut()) };
}

#[test]
fn task_functions() {
    let f = fixture();
    let (n, len) = (3usize, 6usize);
    let e = f.dims.d + f.dims.n_out;
    let (zn, yn) = (n * (len + 1) * e, n * f.dims.n_out);
    let mut z = vec![0.0; zn + 1];
    let mut y = vec![0.0; yn];
    fails_create!(ICL_ERR_NULL, icl_task_new(null()));
    fails!(ICL_ERR_NULL, icl_task_new(f.cfg, null_mut()));
    let mut dims = icl_dims::default();
    fails!(ICL_ERR_NULL, icl_task_dims(null(), &mut dims));
    fails!(ICL_ERR_NULL, icl_task_dims(f.task, null_mut()));
    ok!(icl_task_dims(f.task, &mut dims));
    assert_eq!((dims.d, dims.n_out, dims.train_len), (5, 1, 6));

    let zp = z.as_mut_ptr();
    let yp = y.as_mut_ptr();
    ok!(icl_task_sample(
        f.task,
        1,
        ICL_DOMAIN_TRAIN,
        0,
        n,
        len,
        zp,
        zn,
        yp,
        yn
    ));
    fails!(
        ICL_ERR_NULL,
        icl_task_sample(null(), 1, 0, 0, n, len, zp, zn, yp, yn)
    );
    fails!(
        ICL_ERR_ARGUMENT,
        icl_task_sample(f.task, 1, 2, 0, n, len, zp, zn, yp, yn)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_task_sample(f.task, 1, 0, 0, 0, len, zp, zn, yp, yn)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_task_sample(f.task, 1, 0, 0, n, 0, zp, zn, yp, yn)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_task_sample(f.task, 1, 0, 0, n, len, zp, zn + 1, yp, yn)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_task_sample(f.task, 1, 0, 0, n, len, zp, zn, yp, yn - 1)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_task_sample(f.task, 1, 0, 0, n, len, zp, 0, yp, yn)
    );
    fails!(
        ICL_ERR_NULL,
        icl_task_sample(f.task, 1, 0, 0, n, len, null_mut(), zn, yp, yn)
    );
    fails!(
        ICL_ERR_NULL,
        icl_task_sample(f.task, 1, 0, 0, n, len, zp, zn, null_mut(), yn)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_task_sample(f.task, 1, 0, 0, usize::MAX, len, zp, zn, yp, yn)
    );
    let misaligned = unsafe { (zp as *mut u8).add(1) } as *mut f64;
    fails!(
        ICL_ERR_ARGUMENT,
        icl_task_sample(f.task, 1, 0, 0, n, len, misaligned, zn, yp, yn)
    );
    unsafe { icl_task_free(null_mut()) };
}

#[test]
fn model_functions() {
    let f = fixture();
    let m = f.model;
    let (d, no, np, heads) = (f.dims.d, f.dims.n_out, f.dims.n_params, f.dims.heads);
    let (n, len) = (2usize, 6usize);
    let e = d + no;
    let x = vec![0.5; n * len * d];
    let y = vec![0.25; n * len * no];
    let xq = vec![1.0; n * d];
    let mut out = vec![0.0; n * no];
    let (xp, yp, qp, op) = (x.as_ptr(), y.as_ptr(), xq.as_ptr(), out.as_mut_ptr());
    let (xn, yn, qn, on) = (x.len(), y.len(), xq.len(), out.len());

    fails_create!(ICL_ERR_NULL, icl_model_new(null()));
    fails!(ICL_ERR_NULL, icl_model_new(f.cfg, null_mut()));
    fails_create!(ICL_ERR_NULL, icl_model_load(null()));
    fails_create!(
        ICL_ERR_IO,
        icl_model_load(c("/nonexistent/model.safetensors").as_ptr())
    );
    let junk = tmp("junk.safetensors");
    std::fs::write(&junk, b"this is not a checkpoint").unwrap();
    fails_create!(
        ICL_ERR_CHECKPOINT,
        icl_model_load(c(junk.to_str().unwrap()).as_ptr())
    );
    fails!(ICL_ERR_NULL, icl_model_save(null(), c("x").as_ptr()));
    fails!(ICL_ERR_NULL, icl_model_save(m, null()));
    fails!(
        ICL_ERR_IO,
        icl_model_save(m, c("/nonexistent/dir/m.safetensors").as_ptr())
    );
    fails!(
        ICL_ERR_NULL,
        icl_model_set_engine(null_mut(), c("scalar").as_ptr())
    );
    fails!(ICL_ERR_NULL, icl_model_set_engine(m, null()));
    fails!(
        ICL_ERR_UNKNOWN_NAME,
        icl_model_set_engine(m, c("warp-drive").as_ptr())
    );
    let mut dims = icl_dims::default();
    fails!(ICL_ERR_NULL, icl_model_dims(null(), &mut dims));
    fails!(ICL_ERR_NULL, icl_model_dims(m, null_mut()));
    fails_create!(ICL_ERR_NULL, icl_model_config(null()));
    fails!(ICL_ERR_NULL, icl_model_config(m, null_mut()));

    // predict
    ok!(icl_model_predict(m, n, len, xp, xn, yp, yn, qp, qn, op, on));
    fails!(
        ICL_ERR_NULL,
        icl_model_predict(null_mut(), n, len, xp, xn, yp, yn, qp, qn, op, on)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_predict(m, 0, len, xp, xn, yp, yn, qp, qn, op, on)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_predict(m, n, 0, xp, xn, yp, yn, qp, qn, op, on)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_predict(m, n, len, xp, xn - 1, yp, yn, qp, qn, op, on)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_predict(m, n, len, xp, xn, yp, yn + 1, qp, qn, op, on)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_predict(m, n, len, xp, xn, yp, yn, qp, qn - 1, op, on)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_predict(m, n, len, xp, xn, yp, yn, qp, qn, op, on - 1)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_predict(m, n, len, xp, 0, yp, yn, qp, qn, op, on)
    );
    fails!(
        ICL_ERR_NULL,
        icl_model_predict(m, n, len, null(), xn, yp, yn, qp, qn, op, on)
    );
    fails!(
        ICL_ERR_NULL,
        icl_model_predict(m, n, len, xp, xn, null(), yn, qp, qn, op, on)
    );
    fails!(
        ICL_ERR_NULL,
        icl_model_predict(m, n, len, xp, xn, yp, yn, null(), qn, op, on)
    );
    fails!(
        ICL_ERR_NULL,
        icl_model_predict(m, n, len, xp, xn, yp, yn, qp, qn, null_mut(), on)
    );
    for (which, bad) in [
        (0, f64::NAN),
        (1, f64::INFINITY),
        (2, f64::NEG_INFINITY),
        (0, 1e300),
    ] {
        let (mut x2, mut y2, mut q2) = (x.clone(), y.clone(), xq.clone());
        match which {
            0 => x2[3] = bad,
            1 => y2[1] = bad,
            _ => q2[0] = bad,
        }
        fails!(
            ICL_ERR_NONFINITE,
            icl_model_predict(
                m,
                n,
                len,
                x2.as_ptr(),
                xn,
                y2.as_ptr(),
                yn,
                q2.as_ptr(),
                qn,
                op,
                on
            )
        );
    }

    // predict_batch and loss_grad
    let zn = n * (len + 1) * e;
    let mut z = vec![0.3; zn];
    let t = vec![0.1; n * no];
    let mut grad = vec![0.0; np];
    let mut loss = 0.0;
    ok!(icl_model_predict_batch(m, n, len, z.as_ptr(), zn, op, on));
    fails!(
        ICL_ERR_NULL,
        icl_model_predict_batch(null_mut(), n, len, z.as_ptr(), zn, op, on)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_predict_batch(m, 0, len, z.as_ptr(), zn, op, on)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_predict_batch(m, n, len, z.as_ptr(), zn - 1, op, on)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_predict_batch(m, n, len, z.as_ptr(), zn, op, on + 1)
    );
    fails!(
        ICL_ERR_NULL,
        icl_model_predict_batch(m, n, len, null(), zn, op, on)
    );
    ok!(icl_model_loss_grad(
        m,
        n,
        len,
        z.as_ptr(),
        zn,
        t.as_ptr(),
        t.len(),
        &mut loss,
        grad.as_mut_ptr(),
        np
    ));
    fails!(
        ICL_ERR_NULL,
        icl_model_loss_grad(
            null_mut(),
            n,
            len,
            z.as_ptr(),
            zn,
            t.as_ptr(),
            t.len(),
            &mut loss,
            grad.as_mut_ptr(),
            np
        )
    );
    fails!(
        ICL_ERR_NULL,
        icl_model_loss_grad(
            m,
            n,
            len,
            z.as_ptr(),
            zn,
            t.as_ptr(),
            t.len(),
            null_mut(),
            grad.as_mut_ptr(),
            np
        )
    );
    fails!(
        ICL_ERR_NULL,
        icl_model_loss_grad(
            m,
            n,
            len,
            z.as_ptr(),
            zn,
            t.as_ptr(),
            t.len(),
            &mut loss,
            null_mut(),
            np
        )
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_loss_grad(
            m,
            n,
            len,
            z.as_ptr(),
            zn,
            t.as_ptr(),
            t.len(),
            &mut loss,
            grad.as_mut_ptr(),
            np - 1
        )
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_loss_grad(
            m,
            n,
            len,
            z.as_ptr(),
            zn,
            t.as_ptr(),
            0,
            &mut loss,
            grad.as_mut_ptr(),
            np
        )
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_loss_grad(
            m,
            0,
            len,
            z.as_ptr(),
            zn,
            t.as_ptr(),
            t.len(),
            &mut loss,
            grad.as_mut_ptr(),
            np
        )
    );
    z[5] = f64::NAN;
    fails!(
        ICL_ERR_NONFINITE,
        icl_model_predict_batch(m, n, len, z.as_ptr(), zn, op, on)
    );
    fails!(
        ICL_ERR_NONFINITE,
        icl_model_loss_grad(
            m,
            n,
            len,
            z.as_ptr(),
            zn,
            t.as_ptr(),
            t.len(),
            &mut loss,
            grad.as_mut_ptr(),
            np
        )
    );

    // parameters
    let mut p = vec![0.0; np];
    ok!(icl_model_get_params(m, p.as_mut_ptr(), np));
    fails!(
        ICL_ERR_NULL,
        icl_model_get_params(null(), p.as_mut_ptr(), np)
    );
    fails!(ICL_ERR_NULL, icl_model_get_params(m, null_mut(), np));
    fails!(
        ICL_ERR_SIZE,
        icl_model_get_params(m, p.as_mut_ptr(), np + 1)
    );
    fails!(ICL_ERR_SIZE, icl_model_get_params(m, p.as_mut_ptr(), 0));
    fails!(
        ICL_ERR_NULL,
        icl_model_set_params(null_mut(), p.as_ptr(), np)
    );
    fails!(ICL_ERR_NULL, icl_model_set_params(m, null(), np));
    fails!(ICL_ERR_SIZE, icl_model_set_params(m, p.as_ptr(), np - 1));
    let mut p_bad = p.clone();
    p_bad[np - 1] = f64::NAN;
    fails!(
        ICL_ERR_NONFINITE,
        icl_model_set_params(m, p_bad.as_ptr(), np)
    );
    p_bad[np - 1] = 1e39; // overflows f32
    fails!(
        ICL_ERR_NONFINITE,
        icl_model_set_params(m, p_bad.as_ptr(), np)
    );
    let mut p2 = vec![0.0; np];
    ok!(icl_model_get_params(m, p2.as_mut_ptr(), np));
    assert_eq!(p, p2, "failed set_params left the parameters alone");

    // circuits
    let mut om = vec![0.0; heads];
    let mut mu = vec![0.0; heads * no];
    ok!(icl_model_circuits(
        m,
        om.as_mut_ptr(),
        heads,
        mu.as_mut_ptr(),
        heads * no
    ));
    fails!(
        ICL_ERR_NULL,
        icl_model_circuits(null(), om.as_mut_ptr(), heads, mu.as_mut_ptr(), heads * no)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_circuits(m, om.as_mut_ptr(), heads + 1, mu.as_mut_ptr(), heads * no)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_circuits(m, om.as_mut_ptr(), heads, mu.as_mut_ptr(), 0)
    );
    fails!(
        ICL_ERR_NULL,
        icl_model_circuits(m, null_mut(), heads, mu.as_mut_ptr(), heads * no)
    );
    let mut kq = vec![0.0; heads * e * e];
    let mut ov = vec![0.0; heads * no * e];
    ok!(icl_model_circuit_matrices(
        m,
        kq.as_mut_ptr(),
        kq.len(),
        ov.as_mut_ptr(),
        ov.len()
    ));
    fails!(
        ICL_ERR_NULL,
        icl_model_circuit_matrices(null(), kq.as_mut_ptr(), kq.len(), ov.as_mut_ptr(), ov.len())
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_circuit_matrices(m, kq.as_mut_ptr(), kq.len() - 1, ov.as_mut_ptr(), ov.len())
    );
    fails!(
        ICL_ERR_NULL,
        icl_model_circuit_matrices(m, kq.as_mut_ptr(), kq.len(), null_mut(), ov.len())
    );

    // risk
    let (mut r, mut se) = (0.0, 0.0);
    ok!(icl_model_risk(m, null(), 6, 16, 1, &mut r, &mut se));
    fails!(
        ICL_ERR_NULL,
        icl_model_risk(null_mut(), null(), 6, 16, 1, &mut r, &mut se)
    );
    fails!(
        ICL_ERR_NULL,
        icl_model_risk(m, null(), 6, 16, 1, null_mut(), &mut se)
    );
    fails!(
        ICL_ERR_NULL,
        icl_model_risk(m, null(), 6, 16, 1, &mut r, null_mut())
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_risk(m, null(), 0, 16, 1, &mut r, &mut se)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_model_risk(m, null(), 6, 1, 1, &mut r, &mut se)
    );
    let mut other_cfg = null_mut();
    let mut other_task = null_mut();
    ok!(icl_config_preset(
        c("he2025-multitask").as_ptr(),
        &mut other_cfg
    ));
    ok!(icl_task_new(other_cfg, &mut other_task));
    fails!(
        ICL_ERR_SIZE,
        icl_model_risk(m, other_task, 6, 16, 1, &mut r, &mut se)
    );
    unsafe {
        icl_task_free(other_task);
        icl_config_free(other_cfg);
        icl_model_free(null_mut());
    }
}

#[test]
fn trainer_functions() {
    let f = fixture();
    let tr = f.trainer;
    let (d, no, np, heads) = (f.dims.d, f.dims.n_out, f.dims.n_params, f.dims.heads);
    fails_create!(ICL_ERR_NULL, icl_trainer_new(null(), null()));
    fails_create!(
        ICL_ERR_UNKNOWN_NAME,
        icl_trainer_new(f.cfg, c("warp-drive").as_ptr())
    );
    fails!(ICL_ERR_NULL, icl_trainer_new(f.cfg, null(), null_mut()));
    fails_create!(ICL_ERR_NULL, icl_trainer_from_checkpoint(null(), null()));
    fails_create!(
        ICL_ERR_IO,
        icl_trainer_from_checkpoint(c("/nonexistent/m.safetensors").as_ptr(), null())
    );
    let ckpt = tmp("trainer.safetensors");
    let ck = c(ckpt.to_str().unwrap());
    ok!(icl_model_save(f.model, ck.as_ptr()));
    fails_create!(
        ICL_ERR_UNKNOWN_NAME,
        icl_trainer_from_checkpoint(ck.as_ptr(), c("warp").as_ptr())
    );

    let mut losses = vec![0.0; 3];
    let mut mean = 0.0;
    ok!(icl_trainer_train(tr, 3, losses.as_mut_ptr(), 3, &mut mean));
    ok!(icl_trainer_train(tr, 0, null_mut(), 0, null_mut()));
    fails!(
        ICL_ERR_NULL,
        icl_trainer_train(null_mut(), 1, null_mut(), 0, null_mut())
    );
    fails!(
        ICL_ERR_SIZE,
        icl_trainer_train(tr, 4, losses.as_mut_ptr(), 3, &mut mean)
    );
    let mut step = 0u64;
    ok!(icl_trainer_step_count(tr, &mut step));
    assert_eq!(step, 3, "a failed train call takes no step");
    fails!(ICL_ERR_NULL, icl_trainer_step_count(null(), &mut step));
    fails!(ICL_ERR_NULL, icl_trainer_step_count(tr, null_mut()));

    // step on a caller's batch
    let (n, len) = (2usize, 5usize);
    let zn = n * (len + 1) * (d + no);
    let mut z = vec![0.2; zn];
    let t = vec![0.4; n * no];
    let mut loss = 0.0;
    ok!(icl_trainer_step_batch(
        tr,
        n,
        len,
        z.as_ptr(),
        zn,
        t.as_ptr(),
        t.len(),
        &mut loss
    ));
    fails!(
        ICL_ERR_NULL,
        icl_trainer_step_batch(
            null_mut(),
            n,
            len,
            z.as_ptr(),
            zn,
            t.as_ptr(),
            t.len(),
            &mut loss
        )
    );
    fails!(
        ICL_ERR_SIZE,
        icl_trainer_step_batch(tr, 0, len, z.as_ptr(), zn, t.as_ptr(), t.len(), &mut loss)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_trainer_step_batch(
            tr,
            n,
            len,
            z.as_ptr(),
            zn - 2,
            t.as_ptr(),
            t.len(),
            &mut loss
        )
    );
    fails!(
        ICL_ERR_NULL,
        icl_trainer_step_batch(tr, n, len, null(), zn, t.as_ptr(), t.len(), &mut loss)
    );
    z[0] = f64::NAN;
    fails!(
        ICL_ERR_NONFINITE,
        icl_trainer_step_batch(tr, n, len, z.as_ptr(), zn, t.as_ptr(), t.len(), &mut loss)
    );
    ok!(icl_trainer_step_count(tr, &mut step));
    assert_eq!(step, 4, "failed step_batch calls take no step");

    let mut dims = icl_dims::default();
    ok!(icl_trainer_dims(tr, &mut dims));
    assert_eq!(dims, f.dims);
    fails!(ICL_ERR_NULL, icl_trainer_dims(null(), &mut dims));
    fails!(ICL_ERR_NULL, icl_trainer_dims(tr, null_mut()));

    let mut p = vec![0.0; np];
    ok!(icl_trainer_get_params(tr, p.as_mut_ptr(), np));
    fails!(
        ICL_ERR_NULL,
        icl_trainer_get_params(null(), p.as_mut_ptr(), np)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_trainer_get_params(tr, p.as_mut_ptr(), np - 1)
    );
    fails!(
        ICL_ERR_NULL,
        icl_trainer_set_params(null_mut(), p.as_ptr(), np)
    );
    fails!(ICL_ERR_SIZE, icl_trainer_set_params(tr, p.as_ptr(), 0));
    let mut pb = p.clone();
    pb[0] = f64::INFINITY;
    fails!(
        ICL_ERR_NONFINITE,
        icl_trainer_set_params(tr, pb.as_ptr(), np)
    );

    let mut om = vec![0.0; heads];
    let mut mu = vec![0.0; heads * no];
    ok!(icl_trainer_circuits(
        tr,
        om.as_mut_ptr(),
        heads,
        mu.as_mut_ptr(),
        heads * no
    ));
    fails!(
        ICL_ERR_NULL,
        icl_trainer_circuits(null(), om.as_mut_ptr(), heads, mu.as_mut_ptr(), heads * no)
    );
    fails!(
        ICL_ERR_SIZE,
        icl_trainer_circuits(tr, om.as_mut_ptr(), heads - 1, mu.as_mut_ptr(), heads * no)
    );

    fails_create!(ICL_ERR_NULL, icl_trainer_model(null()));
    fails!(ICL_ERR_NULL, icl_trainer_model(tr, null_mut()));
    fails!(ICL_ERR_NULL, icl_trainer_save(null(), ck.as_ptr()));
    fails!(ICL_ERR_NULL, icl_trainer_save(tr, null()));
    fails!(
        ICL_ERR_IO,
        icl_trainer_save(tr, c("/nonexistent/dir/t.safetensors").as_ptr())
    );

    let mut rows = 0usize;
    ok!(icl_trainer_log_len(tr, &mut rows));
    // step 0's row and the early row of step 1 (rows at 1, 2, 5 x 10^k below log_every)
    assert_eq!(rows, 2, "log after step 1 (log_every = 100)");
    fails!(ICL_ERR_NULL, icl_trainer_log_len(null(), &mut rows));
    fails!(ICL_ERR_NULL, icl_trainer_log_len(tr, null_mut()));
    let mut lmu = vec![0.0; heads];
    ok!(icl_trainer_log_row(
        tr,
        0,
        &mut step,
        &mut loss,
        om.as_mut_ptr(),
        heads,
        lmu.as_mut_ptr(),
        heads
    ));
    fails!(
        ICL_ERR_NULL,
        icl_trainer_log_row(
            null(),
            0,
            &mut step,
            &mut loss,
            om.as_mut_ptr(),
            heads,
            lmu.as_mut_ptr(),
            heads
        )
    );
    fails!(
        ICL_ERR_SIZE,
        icl_trainer_log_row(
            tr,
            2,
            &mut step,
            &mut loss,
            om.as_mut_ptr(),
            heads,
            lmu.as_mut_ptr(),
            heads
        )
    );
    fails!(
        ICL_ERR_SIZE,
        icl_trainer_log_row(
            tr,
            0,
            &mut step,
            &mut loss,
            om.as_mut_ptr(),
            heads + 1,
            lmu.as_mut_ptr(),
            heads
        )
    );
    fails!(
        ICL_ERR_NULL,
        icl_trainer_log_row(
            tr,
            0,
            &mut step,
            &mut loss,
            om.as_mut_ptr(),
            heads,
            null_mut(),
            heads
        )
    );
    unsafe { icl_trainer_free(null_mut()) };
}

#[test]
fn diverging_training_is_an_error_not_a_nan() {
    let mut cfg = null_mut();
    let mut tr = null_mut();
    ok!(icl_config_preset(c("quick").as_ptr(), &mut cfg));
    for (k, v) in [
        ("train.optimizer", "sgd"),
        ("train.lr", "1e30"),
        ("task.L", "6"),
        ("train.batch", "4"),
    ] {
        ok!(icl_config_set(cfg, c(k).as_ptr(), c(v).as_ptr()));
    }
    ok!(icl_trainer_new(cfg, null(), &mut tr));
    fails!(
        ICL_ERR_NUMERICAL,
        icl_trainer_train(tr, 50, null_mut(), 0, null_mut())
    );
    assert!(last().contains("diverged"), "{}", last());
    unsafe {
        icl_trainer_free(tr);
        icl_config_free(cfg);
    }
}

#[test]
fn theory_functions() {
    let q = |name: &str, kv: &[(&str, &str)], out: *mut f64, len: usize| {
        let keys: Vec<CString> = kv.iter().map(|(k, _)| c(k)).collect();
        let vals: Vec<CString> = kv.iter().map(|(_, v)| c(v)).collect();
        let kp: Vec<*const std::ffi::c_char> = keys.iter().map(|k| k.as_ptr()).collect();
        let vp: Vec<*const std::ffi::c_char> = vals.iter().map(|v| v.as_ptr()).collect();
        let mut n = 0;
        unsafe {
            icl_theory_value(
                c(name).as_ptr(),
                kp.as_ptr(),
                vp.as_ptr(),
                kv.len(),
                out,
                len,
                &mut n,
            )
        }
    };
    let mut out = [0.0f64; 8];
    let o = out.as_mut_ptr();
    assert_eq!(q("eta-star", &[], o, 8), ICL_OK, "{}", last());
    assert_eq!(q("no-such-quantity", &[], o, 8), ICL_ERR_UNKNOWN_NAME);
    for kv in [
        vec![("d", "0")],
        vec![("L", "0")],
        vec![("sigma2", "-1")],
        vec![("dd", "3")],
        vec![("d", "5"), ("d", "6")],
        vec![("d", "five")],
    ] {
        assert_eq!(q("eta-star", &kv, o, 8), ICL_ERR_ARGUMENT, "{kv:?}");
    }
    assert_eq!(q("eta-star", &[("sigma2", "nan")], o, 8), ICL_ERR_NONFINITE);
    assert_eq!(
        q("gd-risk-asymptotic", &[("xi", "-1")], o, 8),
        ICL_ERR_ARGUMENT
    );
    assert_eq!(q("sigma-tilde", &[("rho", "5")], o, 8), ICL_ERR_ARGUMENT);
    assert_eq!(q("sigma-tilde", &[("d", "100000")], o, 8), ICL_ERR_ARGUMENT);
    assert_eq!(
        q("mu-gamma", &[], o, 8),
        ICL_ERR_ARGUMENT,
        "required --gamma"
    );
    assert_eq!(q("eta-star", &[], null_mut(), 8), ICL_ERR_NULL);
    // a closed form refusing its parameters is ICL_ERR_ARGUMENT, as `icl.h` lists it (the
    // registry's domain errors used to pass through as ICL_ERR_CONFIG): OLS needs L > d + 1,
    // the Monte Carlo Bayes risk a noise variance > 0
    for (name, kv) in [
        ("ols-risk", vec![("d", "5"), ("L", "6")]),
        ("ols-risk", vec![("d", "5"), ("L", "5")]),
        ("bayes-risk-mc", vec![("sigma2", "0"), ("n", "10")]),
    ] {
        assert_eq!(
            q(name, &kv, o, 8),
            ICL_ERR_ARGUMENT,
            "{name} {kv:?}: {}",
            last()
        );
    }
    // a number inside a list parameter that is NaN or infinite is ICL_ERR_NONFINITE, as a
    // scalar's is (it was ICL_ERR_ARGUMENT); a malformed item stays ICL_ERR_ARGUMENT
    for eigs in ["0.4,nan", "inf,0.1", "0.4, -inf ,0.1"] {
        assert_eq!(
            q("plateaus", &[("eigs", eigs)], o, 8),
            ICL_ERR_NONFINITE,
            "{eigs}: {}",
            last()
        );
    }
    assert_eq!(q("plateaus", &[("eigs", "0.4,x")], o, 8), ICL_ERR_ARGUMENT);
    // a list value does not fit a short buffer: ICL_ERR_SIZE, and the count says how many
    assert_eq!(
        q("plateaus", &[("eigs", "0.4,0.3,0.2,0.1")], o, 2),
        ICL_ERR_SIZE
    );
    assert_eq!(
        unsafe { icl_theory_value(null(), null(), null(), 0, o, 8, null_mut()) },
        ICL_ERR_NULL
    );
    assert_eq!(
        unsafe { icl_theory_value(c("eta-star").as_ptr(), null(), null(), 1, o, 8, null_mut()) },
        ICL_ERR_NULL
    );
    assert_eq!(
        unsafe { icl_theory_list(null_mut(), 0, null_mut()) },
        ICL_ERR_SIZE
    );
}
