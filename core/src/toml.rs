//! A small TOML subset for run configs: `[section]` headers, `key = value` lines, `#` comments.
//! Values are numbers, booleans, quoted strings or flat arrays of those. Each entry becomes a
//! dotted key and a plain-text value (arrays joined by commas) that [`crate::Config::set`] parses.
use crate::{Error, Result};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// Parse `text` into `(section.key, value)` pairs in file order.
pub fn parse(text: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut section = String::new();
    for (no, raw) in text.lines().enumerate() {
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        let lineno = no + 1;
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.strip_suffix(']').ok_or_else(|| {
                Error::InvalidConfig(format!("line {lineno}: unterminated section header"))
            })?;
            section = name.trim().to_string();
            continue;
        }
        let (k, v) = line.split_once('=').ok_or_else(|| {
            Error::InvalidConfig(format!("line {lineno}: expected `key = value`"))
        })?;
        let key = k.trim();
        if key.is_empty() {
            return Err(Error::InvalidConfig(format!("line {lineno}: empty key")));
        }
        let value = parse_value(v.trim())
            .map_err(|m| Error::InvalidConfig(format!("line {lineno}: {m}")))?;
        let full = if section.is_empty() {
            key.to_string()
        } else {
            format!("{section}.{key}")
        };
        out.push((full, value));
    }
    Ok(out)
}

fn strip_comment(line: &str) -> &str {
    let mut in_str = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => in_str = !in_str,
            '#' if !in_str => return &line[..i],
            _ => {}
        }
    }
    line
}

fn parse_value(v: &str) -> core::result::Result<String, String> {
    if let Some(inner) = v.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or("unterminated array")?;
        let mut items = Vec::new();
        for item in inner.split(',') {
            let item = item.trim();
            if !item.is_empty() {
                items.push(parse_value(item)?);
            }
        }
        return Ok(items.join(","));
    }
    if let Some(inner) = v.strip_prefix('"') {
        let inner = inner.strip_suffix('"').ok_or("unterminated string")?;
        return Ok(inner.to_string());
    }
    if v.is_empty() {
        return Err("missing value".into());
    }
    Ok(v.to_string())
}

/// Render a value for a TOML file: numbers and booleans bare, everything else quoted.
pub fn render_value(v: &str) -> String {
    let is_bool = v == "true" || v == "false";
    let is_num = v.parse::<f64>().is_ok()
        && !v.contains(',')
        && !v.eq_ignore_ascii_case("nan")
        && !v.contains("inf");
    if is_bool || is_num {
        v.to_string()
    } else {
        format!("\"{}\"", v.replace('"', ""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parses_sections_arrays_comments() {
        let t = "# top\n[task]\nd = 5 # dims\nname = \"iso#x\"\n[model]\neigs = [0.4, 0.3]\n";
        let kv = parse(t).unwrap();
        assert_eq!(kv[0], ("task.d".into(), "5".into()));
        assert_eq!(kv[1], ("task.name".into(), "iso#x".into()));
        assert_eq!(kv[2], ("model.eigs".into(), "0.4,0.3".into()));
        assert!(parse("[task\n").is_err());
        assert!(parse("d 5\n").is_err());
    }
}
