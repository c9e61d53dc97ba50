//! The run layer's modules form no cycle (docs/architecture.md): every `crate::` and `super::`
//! path of each file is an edge to the module it names (a folder's file, or the folder's
//! `mod.rs`), and following edges never comes back. A folder's `mod.rs` re-exporting its own
//! children is not an edge. Fails naming a cycle.
#[path = "../../tests/support/modules.rs"]
mod modules;

use modules::{code, crate_paths, module_of, rs_files, super_paths};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The longest module of `modules` that `path` names (`eval::EvalOptions` -> `eval`).
fn target<'a>(path: &str, modules: &'a BTreeSet<String>) -> Option<&'a String> {
    modules
        .iter()
        .filter(|m| path == m.as_str() || path.starts_with(&format!("{m}::")))
        .max_by_key(|m| m.len())
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| module_of(&src, f))
        .filter(|m| m != "lib")
        .collect();
    let mut g = BTreeMap::new();
    for f in &files {
        let from = module_of(&src, f);
        if from == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let c = code(&text);
        let mut edges = BTreeSet::new();
        for p in crate_paths(&c).into_iter().chain(super_paths(&c, &from)) {
            if let Some(to) = target(&p, &modules) {
                // a folder re-exporting its own children, and a module naming itself
                if to == &from || to.starts_with(&format!("{from}::")) {
                    continue;
                }
                edges.insert(to.clone());
            }
        }
        g.insert(from, edges);
    }
    g
}

/// The first cycle found, if any (depth-first search with a path stack).
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(n) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let i = stack.iter().position(|s| s == n).unwrap_or(0);
                let mut cyc = stack[i..].to_vec();
                cyc.push(n.to_string());
                return Some(cyc);
            }
            None => {}
        }
        marks.insert(n.to_string(), Mark::Open);
        stack.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, g, marks, stack) {
                return Some(c);
            }
        }
        stack.pop();
        marks.insert(n.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for n in g.keys() {
        if let Some(c) = visit(n, g, &mut marks, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

#[test]
fn the_run_layer_has_no_import_cycle() {
    let g = graph();
    let edges: usize = g.values().map(|e| e.len()).sum();
    assert!(edges > 50, "only {edges} edges found: the parser is broken");
    if let Some(c) = find_cycle(&g) {
        panic!("an import cycle in icl-core-run: {}", c.join(" -> "));
    }
}

#[test]
fn a_cycle_is_found() {
    let mut g = BTreeMap::new();
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    g.insert("a".to_string(), set(&["b"]));
    g.insert("b".to_string(), set(&["c"]));
    g.insert("c".to_string(), set(&["a"]));
    g.insert("d".to_string(), set(&["a"]));
    assert_eq!(
        find_cycle(&g).unwrap(),
        ["a", "b", "c", "a"].map(String::from)
    );
    g.insert("c".to_string(), set(&[]));
    assert!(find_cycle(&g).is_none());
}
