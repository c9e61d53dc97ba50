//! Config files: files written by earlier versions of icl (lists as comma-separated text) still
//! load; the current writer's output reads back to the same config.
use icl_core::config::{Config, LinNorm, TaskKind};
use icl_core::presets::{preset, PRESETS};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The preset `name`, which a file written before `task.data_law` reads as: under data law 1.
fn at_law1(name: &str) -> Config {
    let c = preset(name).unwrap();
    assert_eq!(c.task.data_law, 1, "{name}: configs default to law 1");
    c
}

#[test]
fn legacy_files_load() {
    let c = Config::from_toml(&fixture("legacy-zhang2025-fig8-merged.toml")).unwrap();
    assert_eq!(c, at_law1("zhang2025-fig8-merged"));
    assert_eq!(c.task.eigs, vec![0.4, 0.3, 0.2, 0.1]);
    assert_eq!(c.model.lin_norm, LinNorm::Len);
    let c = Config::from_toml(&fixture("legacy-he2025-multitask.toml")).unwrap();
    assert_eq!(c, at_law1("he2025-multitask"));
    assert_eq!(c.task.supports, vec![vec![0, 1, 2, 3], vec![2, 3, 4, 5]]);
    assert_eq!(c.model.scale, None);
    let c = Config::from_toml(&fixture("legacy-aniso-cov.toml")).unwrap();
    assert_eq!(c.task.kind, TaskKind::Anisotropic);
    assert_eq!(c.task.cov, vec![1.0, 0.25, 0.25, 1.0]);
    assert_eq!(c.task.data_law, 1);
    // law 1 is not written (files read back as law 1), law 2 is
    assert!(!c.to_toml().contains("data_law"));
    let mut two = preset("he2025").unwrap();
    two.set("task.data_law", "2").unwrap();
    assert!(two.to_toml().contains("data_law = 2"));
    assert_eq!(Config::from_toml(&two.to_toml()).unwrap().task.data_law, 2);
}

#[test]
fn every_preset_round_trips() {
    for (name, _, _) in PRESETS {
        let c = preset(name).unwrap();
        let text = c.to_toml();
        let back = Config::from_toml(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        assert_eq!(back, c, "{name}");
        assert_eq!(back.to_toml(), text, "{name}");
    }
}
