//! The order of the core's modules (docs/architecture.md): every `crate::` path in the core's
//! code points down this list, or stays inside its own unit. A family may use the families it
//! is declared to build on, and nothing else beside it. Fails with every offending edge.
#[path = "support/modules.rs"]
mod modules;

use modules::{code, crate_paths, module_of, rs_files};
use std::collections::BTreeSet;
use std::path::Path;

/// The units of the core, lowest first: (rank, module path prefix). The longest matching prefix
/// names a module's unit; units of equal rank may not use each other.
const ORDER: &[(u32, &str)] = &[
    (0, "error"),
    (1, "scalar"),
    (1, "rng"),
    (1, "list"),
    (1, "fd"),
    (1, "budget"),
    (1, "tensor"),
    (2, "config"),
    (3, "presets"),
    (4, "data"),
    (5, "theory"),
    (5, "estimator"),
    (5, "optim"),
    (5, "tempered"),
    // the families' definitions: specs, forward/backward pairs, kernels and their reference
    (6, "families::attention"),
    (6, "families::stack"),
    (6, "families::gpt2"),
    (7, "families::linear_attention"),
    (7, "families::iv"),
    (8, "families"),
    // the registry of families
    (9, "model"),
    // what a family gives the trainer (an objective, probes)
    (10, "objective"),
    // the families' protocols, which read a configured model: objective, probes, evaluation
    (11, "families::attention::objective"),
    (11, "families::attention::probe"),
    (11, "families::attention::eval"),
    (11, "families::attention::analysis"),
    (11, "families::linear_attention::objective"),
    (11, "families::linear_attention::probe"),
    (11, "families::linear_attention::metrics"),
    (11, "families::linear_attention::mlp"),
    (11, "families::stack::objective"),
    (11, "families::stack::probe"),
    (11, "families::stack::eval"),
    (11, "families::stack::analysis"),
    (11, "families::iv::objective"),
    (11, "families::iv::eval"),
    (11, "families::gpt2::objective"),
    (11, "families::gpt2::eval"),
    (11, "families::gpt2::analysis"),
    (12, "engine"),
    (13, "train"),
    (14, "conformance"),
    (15, "theory::registry"),
    (15, "theory::temperature::trained"),
    (15, "checkpoint"),
    (16, "embedded"),
    (17, "lib"),
];

/// The root's re-exports and exported macros, and the modules they stand for.
const ROOT: &[(&str, &str)] = &[
    ("Error", "error"),
    ("Result", "error"),
    ("Scalar", "scalar"),
    ("Config", "config"),
    ("Batch", "data"),
    ("Task", "data"),
    ("Model", "model"),
    ("ModelSpec", "model"),
    ("Circuits", "model"),
    ("AttentionKernels", "engine"),
    ("Engine", "engine"),
    ("Runner", "engine"),
    ("Sampling", "engine"),
    ("AttentionReference", "engine"),
    ("ScalarEngine", "engine"),
    ("engine_conformance", "conformance"),
    ("stack_conformance", "conformance"),
];

/// Edges between units of equal rank that are part of the design: a family built on another.
const BUILDS_ON: &[(&str, &str)] = &[
    ("families::linear_attention", "families::attention"),
    ("families::iv", "families::stack"),
];

/// `families::attention` for `families::attention::eval`; the unit itself otherwise.
fn family(unit: &str) -> &str {
    match unit.strip_prefix("families::") {
        Some(rest) => &unit[..10 + rest.find("::").unwrap_or(rest.len())],
        None => unit,
    }
}

fn builds_on(from: &str, to: &str) -> bool {
    BUILDS_ON.contains(&(family(from), family(to)))
}

fn unit(module: &str) -> Option<(u32, &'static str)> {
    ORDER
        .iter()
        .filter(|(_, p)| module == *p || module.starts_with(&format!("{p}::")))
        .max_by_key(|(_, p)| p.len())
        .map(|&(r, p)| (r, p))
}

#[test]
fn every_crate_path_points_down_the_order() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    files.sort();
    let mut bad = Vec::new();
    let mut unplaced = BTreeSet::new();
    let mut edges = 0;
    for f in &files {
        let from = module_of(&src, f);
        let Some((rf, uf)) = unit(&from) else {
            unplaced.insert(from);
            continue;
        };
        for to in crate_paths(&code(&std::fs::read_to_string(f).unwrap())) {
            // the root's re-exports stand for their modules
            let first = to.split("::").next().unwrap_or_default();
            let to = match ROOT.iter().find(|(name, _)| *name == first) {
                Some((_, module)) => module.to_string(),
                None => to,
            };
            // a path names a module or an item inside one: its longest module prefix decides
            let Some((rt, ut)) = unit(&to) else {
                unplaced.insert(to);
                continue;
            };
            edges += 1;
            let (ff, ft) = (family(uf), family(ut));
            let across_families =
                ff != ft && ff.starts_with("families::") && ft.starts_with("families::");
            let ok = if across_families {
                // one family uses another only where it is declared to build on it
                builds_on(uf, ut) && rt <= rf
            } else {
                ut == uf || rt < rf || (rt == rf && ff == ft)
            };
            if !ok {
                bad.push(format!("{from} ({uf}, {rf}) -> crate::{to} ({ut}, {rt})"));
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "modules the order does not place (add them to ORDER and docs/architecture.md): {unplaced:?}"
    );
    assert!(
        edges > 100,
        "only {edges} crate:: paths found: the parser is broken"
    );
    assert!(
        bad.is_empty(),
        "{} crate:: paths point up or sideways in the module order:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn the_parser_expands_use_groups() {
    let c = code(
        "use crate::a::{b, c::{d, e}};\n// crate::commented\nlet x = crate::f::g(\"crate::s\");",
    );
    let got: Vec<String> = crate_paths(&c).into_iter().collect();
    assert_eq!(got, ["a::b", "a::c::d", "a::c::e", "f::g"]);
}
