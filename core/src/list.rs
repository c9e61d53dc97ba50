//! Comma-separated lists as every front end writes them (`--lengths 10,20,40`, `--omega 1,2`,
//! `--tau 0.5,opt`, `--only a,b`, the older `0.5,0.3` text of a list key): one splitter, so
//! an empty item means the same everywhere. It is an error, never skipped: `10,,20` is a typo,
//! and `,` alone would otherwise select nothing, which some options read as "everything".
use crate::{Error, Result};
use alloc::format;
use alloc::vec::Vec;

/// The items of `text`, split at commas and trimmed. `what` names the input in the error
/// (`--lengths`). No items, or an empty item (`10,,20`, `10,`, `,`), is
/// [`Error::InvalidArgument`].
pub fn items<'a>(what: &str, text: &'a str) -> Result<Vec<&'a str>> {
    if text.trim().is_empty() {
        return Err(Error::InvalidArgument(format!("{what}: no values given")));
    }
    let v: Vec<&str> = text.split(',').map(str::trim).collect();
    if v.iter().any(|p| p.is_empty()) {
        return Err(Error::InvalidArgument(format!(
            "{what}: {text:?} has an empty item (a comma-separated list, e.g. 10,20,40)"
        )));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_items_are_errors_not_skipped() {
        assert_eq!(items("--x", " 1, 2 ,3").unwrap(), ["1", "2", "3"]);
        assert_eq!(items("--x", "opt").unwrap(), ["opt"]);
        for bad in ["", " ", ",", "1,,2", "1,", ",1", "1, ,2"] {
            let e = items("--x", bad).unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument(ref m) if m.starts_with("--x: ")),
                "{bad:?}: {e}"
            );
        }
    }
}
