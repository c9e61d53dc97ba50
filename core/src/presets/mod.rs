//! Named configurations reproducing the papers' setups, one file per paper; any key can be
//! overridden afterwards with [`crate::Config::set`]. [`PRESETS`] lists them all in the order
//! `icl presets` prints them.
use crate::config::Config;
use crate::{Error, Result};
use alloc::format;

pub mod garg;
pub mod he2025;
pub mod multilayer;
pub mod temperature;
pub mod zhang2025;

/// Key-value overrides of a preset.
pub type Overrides = &'static [(&'static str, &'static str)];

/// A preset: (name, description, overrides applied on top of [`Config::default`] = `he2025`).
pub type Preset = (&'static str, &'static str, Overrides);

/// Every paper's presets, in `icl presets` order: a new paper's list goes at the end (the IV
/// presets of the multilayer paper come after the temperature paper's, where they were first
/// listed).
const LISTS: &[&[Preset]] = &[
    he2025::PRESETS,
    zhang2025::PRESETS,
    multilayer::PRESETS,
    temperature::PRESETS,
    multilayer::IV,
    garg::PRESETS,
];

/// The number of presets in `lists`.
const fn count(lists: &[&[Preset]]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < lists.len() {
        n += lists[i].len();
        i += 1;
    }
    n
}

/// `lists` one after the other.
const fn concat<const N: usize>(lists: &[&[Preset]]) -> [Preset; N] {
    let mut out: [Preset; N] = [("", "", &[]); N];
    let (mut k, mut i) = (0, 0);
    while i < lists.len() {
        let mut j = 0;
        while j < lists[i].len() {
            out[k] = lists[i][j];
            k += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

const ALL: [Preset; count(LISTS)] = concat(LISTS);

/// Every preset: (name, description, overrides applied on top of [`Config::default`] =
/// `he2025`).
pub const PRESETS: &[Preset] = &ALL;

/// The preset a front end trains when none is named ([`crate::Config::default`] is it).
pub const DEFAULT: &str = "he2025";

/// The config of a preset.
pub fn preset(name: &str) -> Result<Config> {
    let (_, _, sets) = PRESETS.iter().find(|(n, _, _)| *n == name).ok_or_else(|| {
        let hint = crate::config::did_you_mean(name, PRESETS.iter().map(|(n, _, _)| *n));
        Error::UnknownPreset(format!("{name}{hint} (see `icl presets`)"))
    })?;
    let mut c = Config::default();
    for (k, v) in sets.iter() {
        c.set(k, v)?;
    }
    c.validate()?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    #[test]
    fn all_presets_validate() {
        for (n, _, _) in super::PRESETS {
            super::preset(n).unwrap();
        }
        assert!(super::preset("nope").is_err());
        let e = alloc::format!("{}", super::preset("he2052").unwrap_err());
        assert!(e.contains("did you mean he2025?"), "{e}");
    }

    /// Every paper's list is in [`super::PRESETS`] once, and the names are unique.
    #[test]
    fn every_list_once_and_names_unique() {
        let n: usize = super::LISTS.iter().map(|l| l.len()).sum();
        assert_eq!(super::PRESETS.len(), n);
        let mut names: alloc::vec::Vec<&str> = super::PRESETS.iter().map(|p| p.0).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
