//! The options schema (`icl_core_run::options`): every field of every options struct reaches every
//! front end. The fields are read from the structs themselves, so a field added to a struct and
//! not reachable from a front end fails here: the CLI's `--help` of the command lists its flag
//! (clap derives the flags and the help from the same struct), and the C entry point takes it as
//! a key. Python's keywords are checked by `ffi/python/tests/test_options.py`, from the same
//! list (`icl.options`); C++ reads its text pairs through the C API's reader.
mod ffi_common;

use icl_core_run::options::{schema, NAMES};
use icl_ffi::*;
use std::ffi::{c_char, CStr, CString};
use std::process::Command;
use std::ptr::{null, null_mut};

/// The `icl` commands whose `--help` lists the options of entry point `name` (together).
fn commands(name: &str) -> Vec<Vec<&'static str>> {
    match name {
        "train" => vec![vec!["train"]],
        "eval" => vec![vec!["eval"]],
        "repro" => vec![vec!["repro"]],
        "sweep_run" => vec![vec!["sweep", "run"], vec!["sweep", "run-one"]],
        _ => panic!("options {name:?} have no command here: add it"),
    }
}

/// A value of the field's kind (the key must be taken; the value's range is checked later).
fn sample(kind: &str) -> &'static str {
    match kind {
        "bool" => "true",
        "int" => "3",
        "float" => "0.5",
        "list" => "1,2",
        _ => "x",
    }
}

/// Call entry point `name` with the text pairs and `buf` NULL with `cap` 1: the options are read
/// (an unknown key is `ICL_ERR_ARGUMENT`) before the output pointers are checked
/// (`ICL_ERR_NULL`), and nothing runs.
fn c_call(name: &str, pairs: &[(String, String)]) -> icl_status {
    let ks: Vec<CString> = pairs
        .iter()
        .map(|(k, _)| CString::new(k.as_str()).unwrap())
        .collect();
    let vs: Vec<CString> = pairs
        .iter()
        .map(|(_, v)| CString::new(v.as_str()).unwrap())
        .collect();
    let kp: Vec<*const c_char> = ks.iter().map(|c| c.as_ptr()).collect();
    let vp: Vec<*const c_char> = vs.iter().map(|c| c.as_ptr()).collect();
    let (k, v, n) = (kp.as_ptr(), vp.as_ptr(), pairs.len());
    let nowhere = CString::new("/nonexistent/icl-options").unwrap();
    let paper = CString::new("he2025").unwrap();
    unsafe {
        match name {
            "train" => {
                let mut cfg = null_mut();
                let preset = CString::new("quick").unwrap();
                assert_eq!(
                    icl_config_preset(preset.as_ptr(), &mut cfg),
                    icl_status::ICL_OK
                );
                let s = icl_train_run(cfg, nowhere.as_ptr(), k, v, n, null_mut(), 1, null_mut());
                icl_config_free(cfg);
                s
            }
            "eval" => icl_eval_run(nowhere.as_ptr(), k, v, n, null_mut(), 1, null_mut()),
            "repro" => icl_ffi::c::repro::icl_repro(
                paper.as_ptr(),
                nowhere.as_ptr(),
                k,
                v,
                n,
                null_mut(),
                1,
                null_mut(),
            ),
            "sweep_run" => icl_sweep_run(nowhere.as_ptr(), k, v, n, null_mut(), 1, null_mut()),
            _ => panic!("options {name:?} have no C entry point here: add it"),
        }
    }
}

/// Every option's flag is in the `--help` of its command(s) (`tau_holdout`: `--tau-holdout`;
/// `index` is `icl sweep run-one --index`).
#[test]
fn every_option_is_a_flag_in_the_help() {
    let icl = &ffi_common::built().icl;
    for &name in NAMES {
        let help: String = commands(name)
            .iter()
            .map(|c| {
                let out = Command::new(icl).args(c).arg("--help").output().unwrap();
                assert!(out.status.success(), "icl {c:?} --help");
                String::from_utf8(out.stdout).unwrap()
            })
            .collect();
        for f in schema(name).unwrap().as_array().unwrap() {
            let flag = format!("--{}", f["name"].as_str().unwrap().replace('_', "-"));
            assert!(
                help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
                "{name}: {flag} is not in the help of icl {:?}",
                commands(name)
            );
        }
    }
}

/// Every option is a key of its C entry point (an item key `FIELD.KEY` for a list of items),
/// and `icl_options_list` lists the same options.
#[test]
fn every_option_is_a_c_key() {
    for &name in NAMES {
        let fields = schema(name).unwrap();
        let fields = fields.as_array().unwrap();
        assert!(!fields.is_empty(), "{name}");
        let c_name = CString::new(name).unwrap();
        let mut need = 0usize;
        let st = unsafe { icl_options_list(c_name.as_ptr(), null_mut(), 0, &mut need) };
        assert_eq!(st, icl_status::ICL_ERR_SIZE);
        let mut buf = vec![0u8; need];
        let st = unsafe {
            icl_options_list(
                c_name.as_ptr(),
                buf.as_mut_ptr() as *mut c_char,
                need,
                null_mut(),
            )
        };
        assert_eq!(st, icl_status::ICL_OK);
        let listed = CStr::from_bytes_with_nul(&buf).unwrap().to_str().unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(listed).unwrap(),
            schema(name).unwrap()
        );
        // an unknown key is refused before the output pointers are checked
        let bogus = [("no_such_option".to_string(), "1".to_string())];
        assert_eq!(c_call(name, &bogus), icl_status::ICL_ERR_ARGUMENT, "{name}");
        for f in fields {
            let field = f["name"].as_str().unwrap();
            let kind = f["kind"].as_str().unwrap();
            let key = match kind {
                "items" => format!("{field}.k"),
                _ => field.to_string(),
            };
            let st = c_call(name, &[(key.clone(), sample(kind).to_string())]);
            assert_eq!(
                st,
                icl_status::ICL_ERR_NULL,
                "{name}: the C key {key} = {:?} is refused: {}",
                sample(kind),
                unsafe { CStr::from_ptr(icl_last_error()) }.to_string_lossy()
            );
        }
    }
    let bad = CString::new("nope").unwrap();
    assert_eq!(
        unsafe { icl_options_list(bad.as_ptr(), null_mut(), 0, null_mut()) },
        icl_status::ICL_ERR_UNKNOWN_NAME
    );
    assert_eq!(
        unsafe { icl_options_list(null(), null_mut(), 0, null_mut()) },
        icl_status::ICL_ERR_NULL
    );
}
