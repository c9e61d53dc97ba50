//! Checkpoint files: arbitrary bytes, and valid checkpoints of every preset (trainer state
//! included) with edited metadata, config keys, tensor names, shapes, dtypes and values, are
//! decoded strictly: an error or a checkpoint, never a panic, an abort or an allocation beyond
//! the file's size. A checkpoint that decodes is written back and reads back to the same content.
#![no_main]
use arbitrary::Arbitrary;
use icl_core_run::checkpoint::decode;
use icl_fuzz::{checkpoints, edited, Edit};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

#[derive(Arbitrary, Debug)]
enum Input<'a> {
    Raw(&'a [u8]),
    Edited(u8, Vec<Edit<'a>>),
}

fuzz_target!(
    // the base checkpoints (2 training steps of every preset) are built once, before fuzzing
    init: {
        checkpoints();
    },
    |input: Input| {
    let bytes = match input {
        Input::Raw(b) => b.to_vec(),
        Input::Edited(i, edits) => {
            let all = checkpoints();
            match edited(&all[i as usize % all.len()], &edits) {
                Some(b) => b,
                None => return,
            }
        }
    };
    let Ok(l) = decode(Path::new("fuzz"), &bytes) else {
        return;
    };
    // what was read is a consistent checkpoint: its config validates and sizes the model
    l.config.validate().expect("a decoded config validates");
    assert_eq!(
        l.model.spec(),
        &icl_core::ModelSpec::from_config(&l.config).expect("spec of a decoded config")
    );
    // and it is written back to a file that reads back to the same model, config and step
    let path = std::env::temp_dir().join(format!("icl-fuzz-ck-{}.safetensors", std::process::id()));
    icl_core_run::dispatch!(&l.model, m => icl_core_run::checkpoint::save_model(&path, m, &l.config, l.step))
        .expect("a decoded checkpoint saves");
    let back = icl_core_run::checkpoint::load(&path).expect("a saved checkpoint loads");
    assert_eq!(back.config, l.config);
    assert_eq!(back.model, l.model);
    assert_eq!(back.step, l.step);
});
