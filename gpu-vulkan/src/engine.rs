//! [`VulkanEngine`]: one-layer attention (`AttentionKernels<f32>`) on a Vulkan compute queue, and
//! [`VulkanFactory`], the `Engine<f32>` that hands it, the stack kernels and the GPT-2 kernels out.
//!
//! Per call: the circuits and the batch are written to device memory (or, for a law-2 training
//! batch, the batch is made there by `sample`, see [`DeviceData`]), `fwd_bwd` (or `predict`)
//! runs one workgroup per sequence, `reduce_partials` sums the per-sequence rank-one gradient
//! factors over fixed blocks of 64 sequences and `reduce_final` sums the blocks in order. The
//! gradient (and loss) is read back: H E E + H n_out E + 1 floats. Batches larger than one
//! storage-buffer binding run in chunks of sequences, one submission each.
//!
//! Packing ([`AttentionKernels::loss_grad_packed`]): K runs of one spec, each with its own
//! circuits and batch of n sequences, run as one batch of K n sequences (the same chunks and
//! submissions as one batch of that size). The circuit buffer holds the K circuits back to back
//! and sequence s reads those of run s / n; the reduction blocks never straddle runs, so each
//! run's loss and gradient (K of them read back) are bit for bit what it gets alone. An ordinary
//! call is the pack of one run.
use crate::context::{DeviceInfo, Options};
use crate::error::VkError;
use crate::kernels::{self, Entry, Kernels, Module, Variant, MAX_H};
use crate::session::{self, DeviceArrays, Session};
use ash::vk;
use icl_core::config::{Activation, AttentionKind};
use icl_core::data::task::PlainGaussian;
use icl_core::engine::{check_batch, check_circuits, PackedRun, Sampling};
use icl_core::families::attention::AttentionSpec;
use icl_core::rng::{self, Domain};
use icl_core::{AttentionKernels, Batch, Circuits, Task};

/// Sequences per partial gradient sum in `reduce_partials`.
const PART_LEN: usize = 64;

/// Sizes of one call, checked against the device's limits: `runs` runs (a packed call's; 1
/// otherwise) of `run_n` sequences each, `n` in all.
#[derive(Debug, Clone, Copy)]
struct Plan {
    runs: usize,
    run_n: usize,
    n: usize,
    len: usize,
    e: usize,
    no: usize,
    heads: usize,
    nk: usize,
    variant: Variant,
    /// Per-sequence stride of `seqout`: b_h, a_h (H E each), g (n_out), loss, z_q (E).
    so: usize,
    /// Gradient entries plus the loss (of one run).
    g_len: usize,
    /// Partial sums (blocks of [`PART_LEN`] sequences) of one run.
    run_parts: usize,
    /// Most sequences per submission.
    chunk: usize,
}

impl Plan {
    /// The plan of `runs` runs of `run_n` sequences of context length `len`.
    #[allow(clippy::too_many_arguments)]
    fn new(
        spec: &AttentionSpec,
        (runs, run_n): (usize, usize),
        len: usize,
        info: &DeviceInfo,
        wg: u32,
        f16: bool,
        chunk_bytes: u64,
    ) -> Result<Plan, VkError> {
        let (e, no, heads) = (spec.e(), spec.n_out, spec.heads);
        if runs == 0 || run_n == 0 {
            return Err(VkError::Unsupported(
                "internal: a plan without sequences".into(),
            ));
        }
        let variant = Variant::for_width(e, wg, f16).ok_or_else(|| {
            VkError::Unsupported(format!(
                "embedding width E = d + n_out = {e} is above the shaders' 64"
            ))
        })?;
        if heads > MAX_H {
            return Err(VkError::Unsupported(format!(
                "{heads} heads; the shaders hold at most {MAX_H}"
            )));
        }
        let so = 2 * heads * e + no + 1 + e;
        let g_len = heads * e * e + heads * no * e + 1;
        let run_parts = run_n.div_ceil(PART_LEN);
        let limit = info.max_storage_buffer_range.min(u32::MAX as u64);
        let n = runs.saturating_mul(run_n);
        let seq_bytes = ((len + 1) * e * if f16 { 2 } else { 4 }) as u64;
        let by_bytes = (limit.min(chunk_bytes) / seq_bytes.max(1)) as usize;
        if by_bytes == 0 {
            return Err(VkError::Unsupported(format!(
                "one sequence of L = {len} tokens takes {seq_bytes} bytes, above the upload limit of {} bytes",
                limit.min(chunk_bytes)
            )));
        }
        let chunk = by_bytes
            .min(info.max_workgroup_count_x as usize)
            .min(n)
            .max(1);
        let seqout_bytes = (n as u64).saturating_mul(so as u64 * 4);
        let partial_bytes = ((runs * run_parts) as u64).saturating_mul(g_len as u64 * 4);
        if seqout_bytes > limit || partial_bytes > limit {
            return Err(VkError::Unsupported(format!(
                "a batch of {n} sequences needs {} bytes of per-sequence gradient factors, above the device's storage-buffer limit of {limit}",
                seqout_bytes.max(partial_bytes)
            )));
        }
        let grad_bytes = (runs as u64).saturating_mul(g_len as u64 * 4);
        if grad_bytes > limit {
            return Err(VkError::Unsupported(format!(
                "{runs} packed runs need {grad_bytes} bytes of circuits and gradients, above the device's storage-buffer limit of {limit}"
            )));
        }
        let groups = (runs * run_parts).max((runs * g_len).div_ceil(wg as usize));
        if groups > info.max_workgroup_count_x as usize {
            return Err(VkError::Unsupported(format!(
                "the gradient reduction of {runs} runs needs {groups} workgroups, above the device's {}",
                info.max_workgroup_count_x
            )));
        }
        Ok(Plan {
            runs,
            run_n,
            n,
            len,
            e,
            no,
            heads,
            nk: spec.keys(len),
            variant,
            so,
            g_len,
            run_parts,
            chunk,
        })
    }

    /// Partial sums of every run.
    fn n_parts(&self) -> usize {
        self.runs * self.run_parts
    }

    /// Gradient entries plus the loss of every run.
    fn grad_len(&self) -> usize {
        self.runs * self.g_len
    }

    /// Circuit values of every run.
    fn circ_len(&self) -> usize {
        self.runs * (self.g_len - 1)
    }

    /// (run, first sequence in that run's batch, count) of each run's part of the pack's
    /// sequences start..start+count.
    fn segments(&self, start: usize, count: usize) -> impl Iterator<Item = (usize, usize, usize)> {
        let (run_n, end) = (self.run_n, start + count);
        (start / run_n..end.div_ceil(run_n)).map(move |r| {
            let lo = start.max(r * run_n);
            let hi = end.min((r + 1) * run_n);
            (r, lo - r * run_n, hi - lo)
        })
    }

    /// (first sequence, count) of each submission.
    fn chunks(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.n)
            .step_by(self.chunk)
            .map(move |s| (s, self.chunk.min(self.n - s)))
    }

    /// Words (f32 or packed f16 pairs) of `count` sequences' tokens.
    fn token_words(&self, count: usize) -> usize {
        let vals = count * (self.len + 1) * self.e;
        if self.variant.f16 {
            vals.div_ceil(2)
        } else {
            vals
        }
    }

    /// The uniform block (`Params` in the shader).
    fn params(&self, spec: &AttentionSpec, base: usize) -> [u32; 16] {
        let kind = match (spec.attention, spec.activation) {
            (AttentionKind::Linear, _) => 0,
            (AttentionKind::Softmax, Activation::Exp) => 1,
            (AttentionKind::Softmax, Activation::Affine) => 2,
            (AttentionKind::Softmax, Activation::Square) => 3,
            (AttentionKind::Softmax, Activation::Tanh) => 4,
        };
        let f = |x: f64| (x as f32).to_bits();
        [
            self.n as u32,
            self.len as u32,
            self.nk as u32,
            self.e as u32,
            self.no as u32,
            self.heads as u32,
            kind,
            base as u32,
            PART_LEN as u32,
            self.run_parts as u32,
            self.g_len as u32,
            self.so as u32,
            f(spec.c),
            f(1.0 / spec.lin_norm),
            f(1.0 / (self.run_n * self.no) as f64),
            self.run_n as u32,
        ]
    }
}

/// The storage buffers, in binding order (binding = index + 1; binding 0 is the uniform block).
const CIRC: usize = 0;
const Z: usize = 1;
const Y: usize = 2;
const SEQOUT: usize = 3;
const PARTS: usize = 4;
const GRAD: usize = 5;
/// The device sampler's covariance factor (f64).
const AUX: usize = 6;
const N_ARRAYS: usize = 7;

/// Where a call's tokens come from: the host's batches (one per run, see [`Plan`]), or the
/// law-2 sampler on the device (one run).
#[derive(Clone, Copy)]
enum Tokens<'a> {
    Host(&'a [&'a Batch<f32>]),
    /// Made by the sampler: run r's sequences from the Philox key `keys[r]`.
    Device {
        task: PlainGaussian<'a>,
        keys: &'a [[u32; 2]],
    },
}

/// Most runs of one call whose batches the device makes (their keys fill the uniform block).
pub const MAX_SAMPLED_RUNS: usize = 256;

/// The uniform block: the attention module's 16 words, the sampler's 16, then two words (a
/// Philox key) per run the sampler makes batches for.
const UNIFORM_BYTES: u64 = 128 + 8 * MAX_SAMPLED_RUNS as u64;

/// The law-2 Philox key of the training batch (seed, Train, step).
fn train_key(seed: u64, step: u64) -> [u32; 2] {
    rng::law2::key_of(rng::stream_base(seed, Domain::Train, step))
}

/// Whether the device's law-2 batches are the CPU's, bit for bit (checked on the first batch the
/// device makes: a device whose arithmetic differs keeps the CPU sampler).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceData {
    /// Not tried yet.
    Unchecked,
    /// The device makes the batches (checked equal to the CPU's).
    Yes,
    /// The CPU makes them: the device has no f64 in shaders, or its first batch differed.
    No,
}

/// The Vulkan compute engine (f32 compute; optional f16 storage of the batch tokens).
pub struct VulkanEngine {
    s: Session,
    kernels: Vec<Kernels>,
    bufs: DeviceArrays<N_ARRAYS>,
    f16: bool,
    wg: u32,
    chunk_bytes: u64,
    staging: Vec<u32>,
    circ_host: Vec<f32>,
    /// The law-2 sampler's pipeline (made on first use).
    sampler: Option<Module>,
    device_data: DeviceData,
}

impl std::fmt::Debug for VulkanEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VulkanEngine")
            .field("device", &self.s.ctx.info)
            .field("f16_batch", &self.f16)
            .finish()
    }
}

impl VulkanEngine {
    /// Open the best device the options allow.
    pub fn new(opts: &Options) -> Result<VulkanEngine, VkError> {
        let (ctx, wg, map) = session::open(opts)?;
        Ok(VulkanEngine {
            s: Session::new(ctx, N_ARRAYS as u32, map)?,
            kernels: Vec::new(),
            bufs: DeviceArrays::new(
                UNIFORM_BYTES,
                vk::BufferUsageFlags::UNIFORM_BUFFER,
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
            ),
            f16: opts.f16_batch,
            wg,
            chunk_bytes: opts.max_chunk_bytes,
            staging: Vec::new(),
            circ_host: Vec::new(),
            sampler: None,
            device_data: DeviceData::Unchecked,
        })
    }

    /// Whether training batches of law-2 tasks are made on the device (see [`DeviceData`]).
    pub fn device_data(&self) -> DeviceData {
        self.device_data
    }

    /// [`VulkanEngine::new`] with [`Options::from_env`].
    pub fn from_env() -> Result<VulkanEngine, VkError> {
        VulkanEngine::new(&Options::from_env())
    }

    /// The device in use.
    pub fn device(&self) -> &DeviceInfo {
        &self.s.ctx.info
    }

    /// Invocations per workgroup of the shaders in use.
    pub fn workgroup_size(&self) -> u32 {
        self.wg
    }

    /// Whether batch tokens are stored as f16.
    pub fn f16_batch(&self) -> bool {
        self.f16
    }

    /// Errors the validation layer reported so far (empty when validation is off).
    pub fn validation_errors(&self) -> Vec<String> {
        self.s.ctx.validation_errors()
    }

    /// Warnings the validation layer reported so far.
    pub fn validation_warnings(&self) -> Vec<String> {
        self.s.ctx.validation_warnings()
    }

    fn kernels(&mut self, v: Variant) -> Result<usize, VkError> {
        if let Some(i) = self.kernels.iter().position(|k| k.variant == v) {
            return Ok(i);
        }
        self.kernels
            .push(Kernels::new(&self.s.ctx, self.s.layout, v)?);
        Ok(self.kernels.len() - 1)
    }

    /// Make every buffer at least as large as `plan` needs; rebind the descriptor set if any grew.
    fn fit_buffers(&mut self, plan: &Plan, aux_bytes: u64) -> Result<(), VkError> {
        let f = 4u64;
        let mut need = [0; N_ARRAYS];
        need[CIRC] = (plan.grad_len() as u64) * f;
        need[Z] = plan.token_words(plan.chunk) as u64 * f;
        need[Y] = (plan.chunk * plan.no) as u64 * f;
        need[SEQOUT] = (plan.n * plan.so).max(plan.chunk * plan.no) as u64 * f;
        need[PARTS] = (plan.n_parts() * plan.g_len) as u64 * f;
        need[GRAD] = plan.grad_len() as u64 * f;
        need[AUX] = aux_bytes.max(8);
        self.bufs.fit(&self.s, need, None)
    }

    /// Write each run's circuits (KQ then OV), back to back, to the host side of the circuit
    /// buffer.
    fn write_circuits(&mut self, circs: &[&Circuits<f32>]) -> Result<(), VkError> {
        let mut host = std::mem::take(&mut self.circ_host);
        host.clear();
        for circ in circs {
            host.extend_from_slice(&circ.kq);
            host.extend_from_slice(&circ.ov);
        }
        self.bufs.get_mut()?.arrays[CIRC].host().write(&host);
        self.circ_host = host;
        Ok(())
    }

    /// Write the tokens (and, for training, targets) of the pack's sequences
    /// start..start+count, taken from their runs' batches (`batches[r]` is run r's).
    fn write_batch(
        &mut self,
        plan: &Plan,
        batches: &[&Batch<f32>],
        start: usize,
        count: usize,
        targets: bool,
    ) -> Result<(), VkError> {
        let w = (plan.len + 1) * plan.e;
        let mut parts = Vec::with_capacity(2);
        for (r, first, c) in plan.segments(start, count) {
            let batch = batches.get(r).ok_or_else(|| {
                VkError::Unsupported(format!("internal: no batch for packed run {r}"))
            })?;
            parts.push((*batch, first, c));
        }
        let b = self.bufs.get_mut()?;
        if plan.variant.f16 {
            let mut z = parts
                .iter()
                .flat_map(|&(batch, first, c)| &batch.z[first * w..(first + c) * w]);
            self.staging.clear();
            while let Some(&x) = z.next() {
                let lo = half::f16::from_f32(x).to_bits() as u32;
                let hi = z
                    .next()
                    .map_or(0, |&x| half::f16::from_f32(x).to_bits() as u32);
                self.staging.push(lo | (hi << 16));
            }
            b.arrays[Z].host().write(&self.staging);
        } else {
            let mut at = 0;
            for &(batch, first, c) in &parts {
                b.arrays[Z]
                    .host()
                    .write_at(at, &batch.z[first * w..(first + c) * w]);
                at += c * w;
            }
        }
        if targets {
            let (no, mut at) = (plan.no, 0);
            for &(batch, first, c) in &parts {
                b.arrays[Y]
                    .host()
                    .write_at(at, &batch.y[first * no..(first + c) * no]);
                at += c * no;
            }
        }
        Ok(())
    }

    fn dispatch(&self, k: usize, e: Entry, groups: u32) {
        self.s.dispatch(self.kernels[k].pipeline(e), groups);
    }

    /// The plan of `runs` runs of `run_n` sequences, its kernels (index) and buffers.
    fn prepare(
        &mut self,
        spec: &AttentionSpec,
        runs: (usize, usize),
        len: usize,
        aux_bytes: u64,
    ) -> Result<(Plan, usize), VkError> {
        let plan = Plan::new(
            spec,
            runs,
            len,
            &self.s.ctx.info,
            self.wg,
            self.f16,
            self.chunk_bytes,
        )?;
        let k = self.kernels(plan.variant)?;
        self.fit_buffers(&plan, aux_bytes)?;
        Ok((plan, k))
    }

    /// Open chunk `ci`'s command buffer (sequences start..start+count) with its tokens in
    /// device memory: the host's tokens and targets (training) uploaded, or made there by the
    /// sampler; the launch parameters, and the circuits with the first chunk; then the barrier
    /// before compute. Shared by training and prediction.
    #[allow(clippy::too_many_arguments)]
    fn open_chunk(
        &mut self,
        plan: &Plan,
        spec: &AttentionSpec,
        tokens: Tokens<'_>,
        ci: usize,
        start: usize,
        count: usize,
        targets: bool,
    ) -> Result<(), VkError> {
        let mut p = [0u32; 32];
        p[..16].copy_from_slice(&plan.params(spec, start));
        match tokens {
            Tokens::Host(batches) => self.write_batch(plan, batches, start, count, targets)?,
            Tokens::Device { task, keys } => {
                p[16..].copy_from_slice(&sample_params(&task, start, count, plan));
                if ci == 0 && !task.factor.is_empty() {
                    self.bufs.get_mut()?.arrays[AUX].host().write(task.factor);
                }
                if ci == 0 {
                    if keys.len() != plan.runs || keys.len() > MAX_SAMPLED_RUNS {
                        return Err(VkError::Unsupported(format!(
                            "the device makes the batches of at most {MAX_SAMPLED_RUNS} runs a call, with a key each ({} keys for {} runs)",
                            keys.len(),
                            plan.runs
                        )));
                    }
                    // the keys stay for the call's later chunks (only words 0..32 are rewritten)
                    let words: Vec<u32> = keys.iter().flatten().copied().collect();
                    self.bufs.get_mut()?.uniform.write_at(32, &words);
                }
            }
        }
        self.bufs.get_mut()?.uniform.write(&p);
        self.s.begin()?;
        {
            let b = self.bufs.get()?;
            let d = &self.s.ctx.device;
            if ci == 0 {
                b.arrays[CIRC].record_upload(d, self.s.cmd, plan.circ_len() as u64 * 4);
            }
            match tokens {
                Tokens::Host(_) => {
                    b.arrays[Z].record_upload(d, self.s.cmd, plan.token_words(count) as u64 * 4);
                    if targets {
                        b.arrays[Y].record_upload(d, self.s.cmd, (count * plan.no) as u64 * 4);
                    }
                }
                Tokens::Device { task, .. } => {
                    if ci == 0 && !task.factor.is_empty() {
                        b.arrays[AUX].record_upload(d, self.s.cmd, task.factor.len() as u64 * 8);
                    }
                }
            }
        }
        self.s.barrier_to_compute();
        if let Tokens::Device { .. } = tokens {
            let sampler = self.sampler.as_ref().ok_or_else(|| {
                VkError::Unsupported("internal: the sampler used before it was made".into())
            })?;
            self.s.dispatch(sampler.pipeline(0), count as u32);
            self.s.barrier_compute();
        }
        Ok(())
    }

    /// Loss and circuit gradient of each run (`circs[r]` with its tokens, `run_n` sequences of
    /// length `len` a run) into `losses[r]` and `grads[r]`: one batch of every run's sequences.
    fn run_loss_grad(
        &mut self,
        spec: &AttentionSpec,
        circs: &[&Circuits<f32>],
        tokens: Tokens<'_>,
        (run_n, len): (usize, usize),
        grads: &mut [Circuits<f32>],
        losses: &mut [f32],
    ) -> Result<(), VkError> {
        let runs = circs.len();
        if grads.len() != runs || losses.len() != runs {
            return Err(VkError::Unsupported(format!(
                "internal: {runs} runs, {} gradients and {} losses",
                grads.len(),
                losses.len()
            )));
        }
        let (plan, k) = self.prepare(spec, (runs, run_n), len, aux_bytes(tokens))?;
        self.write_circuits(circs)?;
        let chunks: Vec<(usize, usize)> = plan.chunks().collect();
        for (ci, &(start, count)) in chunks.iter().enumerate() {
            self.open_chunk(&plan, spec, tokens, ci, start, count, true)?;
            self.dispatch(k, Entry::FwdBwd, count as u32);
            if ci + 1 == chunks.len() {
                self.record_reduction(&plan, k)?;
            }
            self.s.submit_wait()?;
        }
        let mut out = vec![0.0f32; plan.grad_len()];
        self.bufs.get_mut()?.arrays[GRAD].host().read(&mut out);
        let nkq = plan.heads * plan.e * plan.e;
        for ((g, loss), run) in grads
            .iter_mut()
            .zip(losses.iter_mut())
            .zip(out.chunks_exact(plan.g_len))
        {
            g.kq.copy_from_slice(&run[..nkq]);
            g.ov.copy_from_slice(&run[nkq..plan.g_len - 1]);
            *loss = run[plan.g_len - 1];
        }
        Ok(())
    }

    /// Record, after the last chunk's `fwd_bwd`, the two reductions (blocks per run, then each
    /// run's blocks in order) and the download of every run's gradient and loss.
    fn record_reduction(&self, plan: &Plan, k: usize) -> Result<(), VkError> {
        self.s.barrier_compute();
        self.dispatch(k, Entry::ReducePartials, plan.n_parts() as u32);
        self.s.barrier_compute();
        self.dispatch(
            k,
            Entry::ReduceFinal,
            (plan.grad_len() as u32).div_ceil(plan.variant.wg),
        );
        self.s.barrier_to_host();
        self.bufs.get()?.arrays[GRAD].record_download(
            &self.s.ctx.device,
            self.s.cmd,
            plan.grad_len() as u64 * 4,
        );
        self.s.barrier_copy_to_host();
        Ok(())
    }

    /// Loss and circuit gradient of one run (the pack of one).
    fn run_one(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<f32>,
        tokens: Tokens<'_>,
        (n, len): (usize, usize),
        grad: &mut Circuits<f32>,
    ) -> Result<f32, VkError> {
        let mut loss = [0.0f32];
        self.run_loss_grad(
            spec,
            &[circ],
            tokens,
            (n, len),
            std::slice::from_mut(grad),
            &mut loss,
        )?;
        Ok(loss[0])
    }

    /// [`AttentionKernels::loss_grad_packed`] on inputs of one shape (checked here).
    fn run_packed(
        &mut self,
        spec: &AttentionSpec,
        runs: &[PackedRun<'_, f32>],
        grads: &mut [Circuits<f32>],
    ) -> icl_core::Result<Vec<f32>> {
        let Some(first) = runs.first() else {
            return Ok(Vec::new());
        };
        if grads.len() != runs.len() {
            return Err(icl_core::Error::Shape(format!(
                "{} packed runs and {} gradients",
                runs.len(),
                grads.len()
            )));
        }
        let (n, len) = (first.batch.n, first.batch.len);
        for (i, (r, g)) in runs.iter().zip(grads.iter()).enumerate() {
            let b = r.batch;
            if (b.n, b.len, b.d, b.n_out) != (n, len, first.batch.d, first.batch.n_out) {
                return Err(icl_core::Error::Shape(format!(
                    "a packed call's batches need one shape: run {i} has n={} L={} d={} n_out={}, run 0 n={n} L={len} d={} n_out={}",
                    b.n, b.len, b.d, b.n_out, first.batch.d, first.batch.n_out
                )));
            }
            check_batch(spec, r.circ, b)?;
            check_circuits(spec, g)?;
        }
        let circs: Vec<&Circuits<f32>> = runs.iter().map(|r| r.circ).collect();
        let batches: Vec<&Batch<f32>> = runs.iter().map(|r| r.batch).collect();
        let mut losses = vec![0.0f32; runs.len()];
        self.run_loss_grad(
            spec,
            &circs,
            Tokens::Host(&batches),
            (n, len),
            grads,
            &mut losses,
        )?;
        Ok(losses)
    }

    fn run_predict(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<f32>,
        batch: &Batch<f32>,
        out: &mut [f32],
    ) -> Result<(), VkError> {
        let (plan, k) = self.prepare(spec, (1, batch.n), batch.len, 0)?;
        self.write_circuits(&[circ])?;
        let no = plan.no;
        let chunks: Vec<(usize, usize)> = plan.chunks().collect();
        for (ci, &(start, count)) in chunks.iter().enumerate() {
            let batches = [batch];
            self.open_chunk(&plan, spec, Tokens::Host(&batches), ci, start, count, false)?;
            self.dispatch(k, Entry::Predict, count as u32);
            self.s.barrier_to_host();
            self.bufs.get()?.arrays[SEQOUT].record_download(
                &self.s.ctx.device,
                self.s.cmd,
                (count * no) as u64 * 4,
            );
            self.s.barrier_copy_to_host();
            self.s.submit_wait()?;
            self.bufs.get_mut()?.arrays[SEQOUT]
                .host()
                .read(&mut out[start * no..(start + count) * no]);
        }
        Ok(())
    }

    /// The device's sampler for `task`, when it has one: a law-2 task of
    /// [`Task::plain_gaussian`]'s kinds, f32 tokens, f64 in shaders.
    fn device_task<'t>(&mut self, task: &'t Task) -> Result<Option<PlainGaussian<'t>>, VkError> {
        let Some(t) = task.plain_gaussian() else {
            return Ok(None);
        };
        if self.f16 || !self.s.ctx.info.float64 || t.d >= 64 {
            return Ok(None);
        }
        if self.sampler.is_none() {
            self.sampler = Some(kernels::sampler(&self.s.ctx, self.s.layout, self.wg)?);
        }
        Ok(Some(t))
    }

    /// The training batch (seed, Train, step) of `n` sequences of context length `len` as the
    /// device makes it (law-2 tasks of [`Task::plain_gaussian`]'s kinds; an error for others),
    /// read back: bit for bit [`Task::sample_into`]'s. For `spec`'s model (its shape sizes the
    /// buffers).
    pub fn sample_batch(
        &mut self,
        spec: &AttentionSpec,
        task: &Task,
        seed: u64,
        step: u64,
        (n, len): (usize, usize),
    ) -> icl_core::Result<Batch<f32>> {
        icl_core::engine::check_task(spec, task, &Sampling { seed, step, n, len })?;
        let Some(t) = self.device_task(task)? else {
            return Err(icl_core::Error::Unsupported(format!(
                "the device does not make this task's batches (it needs task.data_law = 2, an isotropic, anisotropic, linear or eigs task without a shift or fixed task vector, f32 tokens, d < 64, and shaderFloat64; the device has it: {})",
                self.s.ctx.info.float64
            )));
        };
        Ok(self.download_sampled(spec, t, seed, step, n, len)?)
    }

    /// Whether the device's batch (seed, Train, step) is [`Task::sample_batch`]'s, bit for bit.
    fn matches_cpu(
        &mut self,
        spec: &AttentionSpec,
        t: PlainGaussian<'_>,
        task: &Task,
        seed: u64,
        step: u64,
        (n, len): (usize, usize),
    ) -> Result<bool, VkError> {
        let dev = self.download_sampled(spec, t, seed, step, n, len)?;
        let cpu = task.sample_batch::<f32>(seed, Domain::Train, step, n, len);
        let bits =
            |b: &Batch<f32>| -> Vec<u32> { b.z.iter().chain(&b.y).map(|x| x.to_bits()).collect() };
        Ok(bits(&dev) == bits(&cpu))
    }

    /// Whether this engine makes `task`'s training batches on the device: the check
    /// [`AttentionKernels::sampled_loss_grad`] makes on its first batch, on the batch (seed,
    /// Train, step) of `n` sequences of length `len` (false for a task the device does not
    /// make, or on any device error).
    pub fn makes_data(
        &mut self,
        spec: &AttentionSpec,
        task: &Task,
        seed: u64,
        step: u64,
        (n, len): (usize, usize),
    ) -> bool {
        match self.device_task(task) {
            Ok(Some(t)) => self
                .matches_cpu(spec, t, task, seed, step, (n, len))
                .unwrap_or(false),
            _ => false,
        }
    }

    fn download_sampled(
        &mut self,
        spec: &AttentionSpec,
        task: PlainGaussian<'_>,
        seed: u64,
        step: u64,
        n: usize,
        len: usize,
    ) -> Result<Batch<f32>, VkError> {
        let keys = [train_key(seed, step)];
        let tokens = Tokens::Device { task, keys: &keys };
        let (plan, _) = self.prepare(spec, (1, n), len, aux_bytes(tokens))?;
        let mut batch = Batch::try_zeros(n, len, task.d, task.n_out)
            .map_err(|e| VkError::Unsupported(e.to_string()))?;
        let w = (len + 1) * plan.e;
        for (ci, (start, count)) in plan.chunks().enumerate() {
            self.open_chunk(&plan, spec, tokens, ci, start, count, true)?;
            self.s.barrier_to_host();
            let b = self.bufs.get()?;
            let d = &self.s.ctx.device;
            b.arrays[Z].record_download(d, self.s.cmd, (count * w) as u64 * 4);
            b.arrays[Y].record_download(d, self.s.cmd, (count * plan.no) as u64 * 4);
            self.s.barrier_copy_to_host();
            self.s.submit_wait()?;
            let b = self.bufs.get_mut()?;
            b.arrays[Z]
                .host()
                .read(&mut batch.z[start * w..(start + count) * w]);
            b.arrays[Y]
                .host()
                .read(&mut batch.y[start * plan.no..(start + count) * plan.no]);
        }
        Ok(batch)
    }
}

/// Bytes of the device sampler's covariance factor.
fn aux_bytes(tokens: Tokens<'_>) -> u64 {
    match tokens {
        Tokens::Device { task, .. } => task.factor.len() as u64 * 8,
        Tokens::Host(_) => 0,
    }
}

/// The sampler's parameters (`Params` of `sample.wgsl` after the attention module's 16 words;
/// the runs' keys follow them): the call's first sequence of the chunk, the sizes, the f64 scale
/// and noise as two words each (low word first), and the sequences per run.
fn sample_params(t: &PlainGaussian<'_>, first: usize, count: usize, plan: &Plan) -> [u32; 16] {
    let first = first as u64;
    let (scale, sigma) = (t.scale.to_bits(), t.sigma.to_bits());
    [
        0,
        0,
        first as u32,
        (first >> 32) as u32,
        count as u32,
        plan.len as u32,
        t.d as u32,
        t.n_out as u32,
        t.query_noise as u32,
        !t.factor.is_empty() as u32,
        scale as u32,
        (scale >> 32) as u32,
        sigma as u32,
        (sigma >> 32) as u32,
        plan.run_n as u32,
        0,
    ]
}

impl AttentionKernels<f32> for VulkanEngine {
    fn name(&self) -> &'static str {
        "vulkan"
    }

    fn loss_grad(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<f32>,
        batch: &Batch<f32>,
        grad: &mut Circuits<f32>,
    ) -> icl_core::Result<f32> {
        let batches = [batch];
        let tokens = Tokens::Host(&batches);
        Ok(self.run_one(spec, circ, tokens, (batch.n, batch.len), grad)?)
    }

    fn predict(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<f32>,
        batch: &Batch<f32>,
        out: &mut [f32],
    ) -> icl_core::Result<()> {
        Ok(self.run_predict(spec, circ, batch, out)?)
    }

    /// The runs as one batch of every run's sequences: one submission per chunk of it (see the
    /// module doc), each run's loss and gradient bit for bit its [`loss_grad`] alone. Batches
    /// of f16 tokens pack too (each value is rounded as alone).
    ///
    /// [`loss_grad`]: AttentionKernels::loss_grad
    fn loss_grad_packed(
        &mut self,
        spec: &AttentionSpec,
        runs: &[PackedRun<'_, f32>],
        grads: &mut [Circuits<f32>],
    ) -> Option<icl_core::Result<Vec<f32>>> {
        Some(self.run_packed(spec, runs, grads))
    }

    /// Law-2 tasks of [`Task::plain_gaussian`]'s kinds are made on the device (nothing is
    /// uploaded but the circuits), bit for bit the CPU's batches: the first batch is read back
    /// and compared with [`Task::sample_into`]'s, and a device that differs (or has no f64 in
    /// shaders) keeps the CPU sampler (the Runner's path, `None`), as do other tasks. The pack
    /// of one run of [`AttentionKernels::sampled_loss_grad_packed`].
    fn sampled_loss_grad(
        &mut self,
        spec: &AttentionSpec,
        circ: &Circuits<f32>,
        task: &Task,
        s: Sampling,
        grad: &mut Circuits<f32>,
    ) -> Option<icl_core::Result<f32>> {
        self.sampled_loss_grad_packed(spec, &[circ], task, &[s], std::slice::from_mut(grad))
            .map(|r| {
                r.and_then(|losses| {
                    losses.first().copied().ok_or_else(|| {
                        icl_core::Error::Unsupported(
                            "internal: a pack of one without a loss".into(),
                        )
                    })
                })
            })
    }

    /// [`AttentionKernels::sampled_loss_grad`] of several runs of one task in one call, each
    /// run's batch made on the device from its own seed and step: run r's loss and gradient bit
    /// for bit what `sampled_loss_grad` gives it alone. `None` where that would sample on the
    /// CPU (another task, or a device whose batches differ).
    fn sampled_loss_grad_packed(
        &mut self,
        spec: &AttentionSpec,
        circs: &[&Circuits<f32>],
        task: &Task,
        runs: &[Sampling],
        grads: &mut [Circuits<f32>],
    ) -> Option<icl_core::Result<Vec<f32>>> {
        let first = *runs.first()?;
        if self.device_data == DeviceData::No {
            return None;
        }
        let t = match self.device_task(task) {
            Ok(Some(t)) => t,
            Ok(None) => return None,
            Err(e) => return Some(Err(e.into())),
        };
        let checked = (|| -> icl_core::Result<()> {
            if circs.len() != runs.len() || grads.len() != runs.len() {
                return Err(icl_core::Error::Shape(format!(
                    "{} sampled runs, {} circuits and {} gradients",
                    runs.len(),
                    circs.len(),
                    grads.len()
                )));
            }
            for (r, (c, g)) in runs.iter().zip(circs.iter().zip(grads.iter())) {
                if (r.n, r.len) != (first.n, first.len) {
                    return Err(icl_core::Error::Shape(format!(
                        "a packed call's runs need one n and L: n={} L={} and n={} L={}",
                        r.n, r.len, first.n, first.len
                    )));
                }
                icl_core::engine::check_task(spec, task, r)?;
                check_circuits(spec, c)?;
                check_circuits(spec, g)?;
            }
            Ok(())
        })();
        if let Err(e) = checked {
            return Some(Err(e));
        }
        if self.device_data == DeviceData::Unchecked {
            match self.matches_cpu(spec, t, task, first.seed, first.step, (first.n, first.len)) {
                Ok(true) => self.device_data = DeviceData::Yes,
                Ok(false) => {
                    self.device_data = DeviceData::No;
                    return None;
                }
                Err(e) => return Some(Err(e.into())),
            }
        }
        let keys: Vec<[u32; 2]> = runs.iter().map(|r| train_key(r.seed, r.step)).collect();
        let tokens = Tokens::Device {
            task: t,
            keys: &keys,
        };
        let mut losses = vec![0.0f32; runs.len()];
        Some(
            self.run_loss_grad(
                spec,
                circs,
                tokens,
                (first.n, first.len),
                grads,
                &mut losses,
            )
            .map(|()| losses)
            .map_err(Into::into),
        )
    }
}

/// The Vulkan engine, made with fixed [`Options`]: one-layer attention, multi-layer
/// transformer stacks (and so the IV model) and GPT-2 models, in f32.
#[derive(Debug, Clone, PartialEq)]
pub struct VulkanFactory(pub Options);

impl icl_core::Engine<f32> for VulkanFactory {
    fn name(&self) -> &str {
        "vulkan"
    }
    fn attention(&self) -> icl_core::Result<Box<dyn AttentionKernels<f32>>> {
        Ok(Box::new(VulkanEngine::new(&self.0)?))
    }
    fn stack(&self) -> icl_core::Result<Box<dyn icl_core::engine::StackKernels<f32>>> {
        Ok(Box::new(crate::stack::VulkanStack::new(&self.0)?))
    }
    fn gpt2(&self) -> icl_core::Result<Box<dyn icl_core::engine::Gpt2Kernels<f32>>> {
        Ok(Box::new(crate::gpt2::VulkanGpt2::new(&self.0)?))
    }
}

impl Drop for VulkanEngine {
    fn drop(&mut self) {
        let d = &self.s.ctx.device;
        // SAFETY: once the queue is idle nothing of ours is in flight; destroying null handles is
        // a no-op.
        self.s.ctx.wait_idle();
        unsafe {
            self.bufs.destroy(d);
            for k in &mut self.kernels {
                k.destroy(d);
            }
            if let Some(m) = self.sampler.as_mut() {
                m.destroy(d);
            }
        }
        // `s` drops next: descriptor set, command buffer, fence (the device stays, shared).
    }
}
