//! One build for every front end: `cargo build -p icl-cli`, `-p icl-ffi`, maturin's build of the
//! Python extension (`cargo rustc -p icl-ffi-python`) and `cargo test --workspace` must build every
//! crate they share the same way, or cargo compiles everything from the core up once per command
//! (CI's Python step was a second whole build, and `cargo build --release -p icl-ffi` after
//! `cargo build --release` a third). Two things keep them equal: `icl-core-run/Cargo.toml` turns on
//! the features the extra packages of a workspace build would, and the dev profile is the test
//! profile's (`Cargo.toml`). This test fails when a new dependency or profile setting splits them.
//!
//! It reads cargo's unit graph (`--unit-graph`, which plans a build without running it; an
//! unstable flag, enabled here with `RUSTC_BOOTSTRAP=1`): a unit is its crate, target, mode,
//! features and profile settings (not the profile's name: cargo does not hash it) and, recursively,
//! its dependencies' units. Every unit of a front end's build must be a unit of the matching
//! workspace build, except the front end's own crate and, for the Python extension, PyO3's.
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// The identities of the units of the build `args` plans, keyed by identity, with a name each.
fn units(args: &[&str]) -> BTreeMap<String, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root");
    let out = Command::new(cargo)
        .current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .args(args)
        .args([
            "--locked",
            "--offline",
            "-Z",
            "unstable-options",
            "--unit-graph",
        ])
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo {args:?} --unit-graph failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let graph: Value = serde_json::from_slice(&out.stdout).expect("unit graph JSON");
    let list = graph["units"].as_array().expect("units");
    fn identity(list: &[Value], i: usize, memo: &mut Vec<Option<String>>) -> String {
        if let Some(s) = &memo[i] {
            return s.clone();
        }
        let u = &list[i];
        let mut profile = u["profile"].clone();
        if let Some(p) = profile.as_object_mut() {
            p.remove("name");
        }
        let mut deps: Vec<String> = u["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| d["index"].as_u64())
            .map(|j| identity(list, j as usize, memo))
            .collect();
        deps.sort();
        let s = format!(
            "{} {} {} {} {} {} [{}]",
            u["pkg_id"],
            u["target"]["name"],
            u["target"]["kind"],
            u["mode"],
            u["features"],
            profile,
            deps.join(",")
        );
        memo[i] = Some(s.clone());
        s
    }
    let mut memo = vec![None; list.len()];
    (0..list.len())
        .map(|i| {
            let name = list[i]["pkg_id"].as_str().unwrap_or("?");
            let name = name.rsplit(['/', '#']).next().unwrap_or(name).to_string();
            (identity(list, i, &mut memo), name)
        })
        .collect()
}

/// The crates of `front`'s units that `whole` lacks, leaving out the crates named in `own`.
fn split(
    whole: &BTreeMap<String, String>,
    front: &BTreeMap<String, String>,
    own: &[&str],
) -> BTreeSet<String> {
    front
        .iter()
        .filter(|(id, name)| !whole.contains_key(*id) && !own.iter().any(|o| name.starts_with(o)))
        .map(|(_, name)| name.clone())
        .collect()
}

#[test]
fn front_ends_share_one_build() {
    // what `cargo test --workspace` builds (the ffi tests' `cargo build` adds the extension's crate)
    let tests = units(&[
        "build",
        "--workspace",
        "--lib",
        "--bins",
        "--tests",
        "--examples",
        "--profile",
        "test",
    ]);
    let release = units(&["build", "--release"]);
    assert!(
        tests.len() > 100 && release.len() > 100,
        "{} and {} units",
        tests.len(),
        release.len()
    );
    let python = ["rustc", "--manifest-path", "ffi/python/Cargo.toml", "--lib"];
    let pyo3 = [
        "icl-ffi-python",
        "pyo3",
        "numpy",
        "ndarray",
        "rustc-hash",
        "target-lexicon",
    ];
    let mut bad = Vec::new();
    for (whole, name, args, own) in [
        (
            &tests,
            "cargo build -p icl-cli",
            vec!["build", "-p", "icl-cli"],
            &["icl-cli"][..],
        ),
        (
            &tests,
            "cargo build -p icl-ffi",
            vec!["build", "-p", "icl-ffi"],
            &["icl-ffi"][..],
        ),
        (
            &tests,
            "maturin's dev build",
            [&python[..], &["--profile", "dev"]].concat(),
            &pyo3[..],
        ),
        (
            &release,
            "cargo build --release -p icl-cli",
            vec!["build", "--release", "-p", "icl-cli"],
            &[][..],
        ),
        (
            &release,
            "cargo build --release -p icl-ffi",
            vec!["build", "--release", "-p", "icl-ffi"],
            &[][..],
        ),
        (
            &release,
            "maturin's release build",
            [&python[..], &["--release"]].concat(),
            &pyo3[..],
        ),
    ] {
        let crates = split(whole, &units(&args), own);
        if !crates.is_empty() {
            bad.push(format!("{name}: {crates:?}"));
        }
    }
    assert!(
        bad.is_empty(),
        "these builds would compile crates again that the workspace build has built otherwise \
         (turn the features on in icl-core-run/Cargo.toml; `cargo tree -e features -i CRATE` says \
         who turns them on):\n{}",
        bad.join("\n")
    );
}
