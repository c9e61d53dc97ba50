//! One module per subcommand.
pub mod analyze;
pub mod bench;
pub mod common;
pub mod embedded;
pub mod eval;
pub mod export;
pub mod import;
pub mod plot;
pub mod predict;
pub mod presets;
pub mod repro;
pub mod sweep;
pub mod theory;
pub mod train;
