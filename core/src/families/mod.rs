//! The model families, one folder each: its configuration section (spec), its forward/backward
//! pairs, its kernels (the operations an engine implements for it, with the scalar reference),
//! its objective, probes, analysis and evaluation.
//!
//! * [`attention`]: one attention layer reading the query's outputs, softmax or linear, in six
//!   parametrisations (He et al. 2025, Zhang et al. 2025, the temperature paper);
//! * [`linear_attention`]: what Zhang et al. (2025)'s protocol adds to one-layer linear attention
//!   (the sufficient-statistics objective on a fixed set, the cubic-feature twin, plateau metrics);
//! * [`stack`]: multi-layer attention-only transformers, looped or not (multilayer paper §3.2);
//! * [`iv`]: the two-block model of in-context IV regression (multilayer paper §6.2);
//! * [`gpt2`]: Garg et al. (2022)'s GPT-2 in-context learner (read-in, pre-LN GPT-2 blocks with
//!   learned positions, read-out at every x token), as llm.c's forward/backward pairs.
//!
//! Families sit above [`crate::data`] and below the model registry ([`crate::model`]), the engine
//! seam ([`crate::engine`]) and the trainer ([`crate::train`]); `docs/architecture.md` gives the
//! order of every module and the recipe for adding a family.
pub mod attention;
pub mod gpt2;
pub mod iv;
pub mod linear_attention;
pub mod stack;
