//! What the firmware example (`examples/firmware`) computes, on the host: the he2025-mcu configs (full and
//! reduced model) trained in f32 with the scalar engine, and predictions of a checkpoint, by the same core code
//! ([`icl_core::embedded`]), as the one JSON line the firmware prints after `result: `.
use crate::checkpoint;
use crate::error::Result;
use icl_core::embedded;
use std::path::Path;

/// The JSON line for the checkpoint at `path` (read with the run layer's strict reader).
pub fn report(path: &Path) -> Result<String> {
    let loaded = checkpoint::load(path)?;
    let model = loaded.model.to::<f32>();
    // refused before the seconds of training, not after
    embedded::check_one_layer(&model)?;
    let full = embedded::train::<f32>(&embedded::config()?, embedded::RISK_SAMPLES, &mut |_| {})?;
    let reduced = embedded::train::<f32>(
        &embedded::config_reduced()?,
        embedded::RISK_SAMPLES,
        &mut |_| {},
    )?;
    let pred = embedded::predict(
        &loaded.config,
        loaded.step,
        &model,
        embedded::PREDICTIONS,
        embedded::PREDICTIONS,
    )?;
    Ok(embedded::json(&full, &reduced, &pred))
}
