//! Reading a crate's module graph from its sources (for the layering tests): every `crate::`
//! (and `super::`) path in each file's code, use groups expanded, comments, strings and unit-test
//! modules left out.
#![allow(dead_code)]
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/families/attention/param/full.rs` -> `families::attention::param::full`.
pub fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// The code of a file without comments, string literals and `#[cfg(test)]` modules (unit tests
/// may use anything; they are not part of the layering).
pub fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        let mut in_str = false;
        let mut prev = ' ';
        for ch in line.chars() {
            if ch == '"' && prev != '\\' {
                in_str = !in_str;
            } else if !in_str {
                out.push(ch);
            }
            prev = ch;
        }
        out.push('\n');
    }
    out
}

/// Every module path the code names under `crate::`, braces of `use` groups expanded.
pub fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let b = code.as_bytes();
    let mut i = 0;
    while let Some(k) = code[i..].find("crate::") {
        let start = i + k;
        i = start + 7;
        if start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_') {
            continue; // icl_crate::, foocrate::
        }
        expand(&code[i..], String::new(), &mut out);
    }
    out
}

/// Read `a::b::{c, d::e}` from the start of `s` under `prefix`, pushing every path.
fn expand(s: &str, prefix: String, out: &mut BTreeSet<String>) {
    let s = s.trim_start();
    if let Some(rest) = s.strip_prefix('{') {
        let mut depth = 0;
        let mut item = String::new();
        for ch in rest.chars() {
            match ch {
                '{' => {
                    depth += 1;
                    item.push(ch)
                }
                '}' if depth == 0 => {
                    expand(&item, prefix.clone(), out);
                    return;
                }
                '}' => {
                    depth -= 1;
                    item.push(ch)
                }
                ',' if depth == 0 => {
                    expand(&item, prefix.clone(), out);
                    item.clear();
                }
                _ => item.push(ch),
            }
        }
        return;
    }
    let ident: String = s
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if ident.is_empty() || ident == "self" {
        if !prefix.is_empty() {
            out.insert(prefix);
        }
        return;
    }
    let path = if prefix.is_empty() {
        ident.clone()
    } else {
        format!("{prefix}::{ident}")
    };
    let rest = &s[ident.len()..];
    match rest.strip_prefix("::") {
        Some(r) => expand(r, path, out),
        None => {
            out.insert(path);
        }
    }
}

/// Every module path the code names under `super::`, resolved against the file's module
/// `module` (`a::b` for `src/a/b.rs`; `super` of `a::b` is `a`, of a top-level module the root).
pub fn super_paths(code: &str, module: &str) -> BTreeSet<String> {
    let parent = match module.rfind("::") {
        Some(i) => &module[..i],
        None => "",
    };
    let mut out = BTreeSet::new();
    let b = code.as_bytes();
    let mut i = 0;
    while let Some(k) = code[i..].find("super::") {
        let start = i + k;
        i = start + 7;
        if start > 0
            && (b[start - 1].is_ascii_alphanumeric()
                || b[start - 1] == b'_'
                || b[start - 1] == b':')
        {
            continue; // a::super:: is not ours; super::super:: is left out
        }
        let mut found = BTreeSet::new();
        expand(&code[i..], String::new(), &mut found);
        for p in found {
            out.insert(if parent.is_empty() {
                p
            } else {
                format!("{parent}::{p}")
            });
        }
    }
    out
}
