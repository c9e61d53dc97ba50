//! icl-core on a Cortex-M4F: an STM32F405RG (1 MiB flash, 128 KiB SRAM used), emulated by
//! `qemu-system-arm -machine netduinoplus2`, output by semihosting.
//!
//! 1. trains `he2025-mcu` (he2025 sized for the part, [`icl_core::embedded::config`]) and its
//!    reduced (omega, mu) model in f32 with the core's one trainer, sampler and Adam, on the
//!    scalar reference engine ([`icl_core::embedded::train`]);
//! 2. reads a checkpoint written by `icl train` on the host, embedded in flash
//!    (`ICL_CHECKPOINT` at build time), with the core's `no_std` reader, and predicts the first
//!    sequences of its evaluation stream ([`icl_core::embedded::predict`]).
//!
//! It prints `result: {json}` (the same line `icl embedded` prints on the host) and
//! `stats: {json}` (heap and stack high-water marks, instructions per training step), then exits
//! with status 0. Any error, including a heap too small for the run, prints `error: ...` and exits
//! with status 1.
#![no_std]
#![no_main]

use core::alloc::{GlobalAlloc, Layout};
use core::fmt::Write as _;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::{entry, exception, ExceptionFrame};
use cortex_m_semihosting::{debug, hio};
use embedded_alloc::LlffHeap;

extern crate alloc;
use alloc::string::String;
use alloc::vec::Vec;

/// The heap, in bytes (`ICL_HEAP_BYTES` at build time).
const HEAP_BYTES: usize = parse(env!("ICL_HEAP_BYTES"));

const fn parse(s: &str) -> usize {
    let b = s.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < b.len() {
        n = n * 10 + (b[i] - b'0') as usize;
        i += 1;
    }
    n
}

/// The checkpoint trained on the host by `icl train`.
static CHECKPOINT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/checkpoint.safetensors"));

static mut HEAP_MEM: [MaybeUninit<u8>; HEAP_BYTES] = [MaybeUninit::uninit(); HEAP_BYTES];

/// The heap, with its high-water mark and the last request it could not serve.
struct Counting {
    heap: LlffHeap,
    high: AtomicUsize,
    failed: AtomicUsize,
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.heap.alloc(layout) };
        if p.is_null() {
            self.failed.store(layout.size(), Ordering::Relaxed);
        } else {
            self.high.fetch_max(self.heap.used(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { self.heap.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static HEAP: Counting = Counting {
    heap: LlffHeap::empty(),
    high: AtomicUsize::new(0),
    failed: AtomicUsize::new(0),
};

/// SysTick wraps (every 2^24 ticks).
static WRAPS: AtomicU32 = AtomicU32::new(0);

/// The heap in use (`HEAP_BYTES` or a smaller `heap=N`).
static HEAP_USE: AtomicUsize = AtomicUsize::new(HEAP_BYTES);

#[exception]
fn SysTick() {
    WRAPS.fetch_add(1, Ordering::Relaxed);
}

/// Ticks since the SysTick was started (a consistent read across a wrap).
fn ticks() -> u64 {
    loop {
        let w = WRAPS.load(Ordering::Relaxed);
        let v = cortex_m::peripheral::SYST::get_current();
        if WRAPS.load(Ordering::Relaxed) == w {
            return ((w as u64) << 24) + (0x00FF_FFFF - v) as u64;
        }
    }
}

/// SysTick ticks per instruction, from a loop of known length (two instructions per iteration).
/// Under QEMU's `-icount shift=0` every instruction takes the same virtual time, so ticks divided
/// by this are instructions; on a real part SysTick counts cycles.
fn ticks_per_instruction() -> f64 {
    const N: u32 = 1_000_000;
    let t0 = ticks();
    unsafe {
        core::arch::asm!(
            "2:",
            "subs {n}, {n}, #1",
            "bne 2b",
            n = inout(reg) N => _,
            options(nomem, nostack),
        );
    }
    (ticks() - t0) as f64 / (2.0 * N as f64)
}

extern "C" {
    static _stack_start: u32;
}
const STACK_BYTES: usize = 16 * 1024;
const PAINT: u32 = 0x5AFE_C0DE;

/// Fill the unused stack (below the current stack pointer, less a margin) with a pattern.
fn paint_stack() {
    let top = core::ptr::addr_of!(_stack_start) as usize;
    let bottom = top - STACK_BYTES;
    let sp = cortex_m::register::msp::read() as usize - 256;
    let mut a = bottom;
    while a < sp {
        unsafe { core::ptr::write_volatile(a as *mut u32, PAINT) };
        a += 4;
    }
}

/// Deepest stack use so far, in bytes (the first word below the top that lost its paint).
fn stack_high_water() -> usize {
    let top = core::ptr::addr_of!(_stack_start) as usize;
    let bottom = top - STACK_BYTES;
    let mut a = bottom;
    while a < top && unsafe { core::ptr::read_volatile(a as *const u32) } == PAINT {
        a += 4;
    }
    top - a
}

fn fail(msg: &dyn core::fmt::Display) -> ! {
    if let Ok(mut out) = hio::hstdout() {
        let _ = writeln!(out, "error: {msg}");
    }
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

/// Options on the semihosting command line (QEMU's `-append`), read before the heap exists.
#[derive(Clone, Copy)]
struct Args {
    /// `heap=N`: use N bytes of the heap at most (how `run.sh` checks that a too-small heap is
    /// reported, without a rebuild).
    heap: usize,
    /// `bench batch=N L=N steps=N`: train the full model at other sizes and print only the
    /// statistics (no comparison with the host).
    bench: Option<(usize, usize, u64)>,
}

fn args() -> Args {
    let mut buf = [0u8; 1024];
    let mut block = [buf.as_mut_ptr() as usize, buf.len()];
    // SYS_GET_CMDLINE: fills buf and sets block[1] to the length; 0 on success
    let ok = unsafe {
        cortex_m_semihosting::syscall1(
            cortex_m_semihosting::nr::GET_CMDLINE,
            block.as_mut_ptr() as usize,
        )
    } == 0;
    // (the call may write memory: the compiler does not assume buf and block unchanged)
    let len = block[1].min(buf.len());
    let line = if ok {
        core::str::from_utf8(&buf[..len]).unwrap_or("")
    } else {
        ""
    };
    let value = |key: &str| {
        line.split_whitespace().find_map(|w| {
            w.strip_prefix(key)?
                .strip_prefix('=')?
                .parse::<usize>()
                .ok()
        })
    };
    Args {
        heap: value("heap").map_or(HEAP_BYTES, |n| n.min(HEAP_BYTES)),
        bench: line.split_whitespace().any(|w| w == "bench").then(|| {
            (
                value("batch").unwrap_or(8),
                value("L").unwrap_or(20),
                value("steps").unwrap_or(20) as u64,
            )
        }),
    }
}

#[entry]
fn main() -> ! {
    paint_stack();
    let args = args();
    let heap = args.heap;
    HEAP_USE.store(heap, Ordering::Relaxed);
    unsafe {
        HEAP.heap
            .init(core::ptr::addr_of_mut!(HEAP_MEM) as usize, heap);
    }
    let mut cp = cortex_m::Peripherals::take().unwrap_or_else(|| fail(&"no core peripherals"));
    cp.SYST.set_clock_source(SystClkSource::Core);
    cp.SYST.set_reload(0x00FF_FFFF);
    cp.SYST.clear_current();
    cp.SYST.enable_interrupt();
    cp.SYST.enable_counter();
    // the counter reads 0 until its first reload
    let mut spins = 0u32;
    while cortex_m::peripheral::SYST::get_current() == 0 && spins < 1_000_000 {
        spins += 1;
    }
    let tpi = ticks_per_instruction();

    let outcome = match args.bench {
        None => run(tpi),
        Some((batch, len, steps)) => bench(tpi, batch, len, steps).map(|s| (String::new(), s)),
    };
    match outcome {
        Ok((result, stats)) => {
            let Ok(mut out) = hio::hstdout() else {
                fail(&"no semihosting stdout")
            };
            if !result.is_empty() {
                let _ = writeln!(out, "result: {result}");
            }
            let _ = writeln!(out, "stats: {stats}");
            debug::exit(debug::EXIT_SUCCESS);
        }
        Err(e) => fail(&e),
    }
    loop {
        cortex_m::asm::wfi();
    }
}

fn run(tpi: f64) -> icl_core::Result<(String, String)> {
    use icl_core::embedded;
    let cfg = embedded::config()?;
    let (rep, full_steps) = timed_train(&cfg, tpi)?;
    let heap_train = HEAP.high.load(Ordering::Relaxed);
    let (reduced, reduced_steps) = timed_train(&embedded::config_reduced()?, tpi)?;
    // the share of a step spent drawing its batch (f64 Box-Muller, soft float on this FPU)
    let task = icl_core::Task::new(&cfg)?;
    let mut batch: icl_core::Batch<f32> =
        icl_core::Batch::try_zeros(cfg.train.batch, cfg.task.len, task.d, task.n_out)?;
    let mut normals = Vec::new();
    let t0 = ticks();
    task.sample_into(
        cfg.train.seed,
        icl_core::rng::Domain::Train,
        0,
        0,
        &mut batch,
        &mut normals,
    );
    let sampling = (ticks() - t0) as f64 / tpi;
    drop((batch, normals, task));
    let ck = icl_core::checkpoint::decode_model_only(CHECKPOINT)?;
    let model = ck.model::<f32>()?;
    let pred = embedded::predict(
        &ck.config,
        ck.step,
        &model,
        embedded::PREDICTIONS,
        embedded::PREDICTIONS,
    )?;
    let result = embedded::json(&rep, &reduced, &pred);

    let mut stats = String::new();
    let _ = write!(
        stats,
        "{{\"part\":\"STM32F405RG\",\"heap_bytes\":{},\"heap_high_water\":{},\
         \"heap_high_water_training\":{heap_train},\"stack_bytes\":{STACK_BYTES},\
         \"stack_high_water\":{},\"checkpoint_bytes\":{},\"ticks_per_instruction\":{tpi:.4},\
         \"instructions_per_step\":{full_steps},\"instructions_per_step_reduced\":{reduced_steps},\
         \"instructions_sampling_one_batch\":{sampling:.0},\
         \"batch\":{},\"L\":{},\"heads\":{}}}",
        HEAP_USE.load(Ordering::Relaxed),
        HEAP.high.load(Ordering::Relaxed),
        stack_high_water(),
        CHECKPOINT.len(),
        cfg.train.batch,
        cfg.task.len,
        cfg.model.heads,
    );
    Ok((result, stats))
}

/// The full model of [`icl_core::embedded::config`] at another batch size, length and number of
/// steps: heap and stack high-water marks and instructions per step.
fn bench(tpi: f64, batch: usize, len: usize, steps: u64) -> icl_core::Result<String> {
    let mut cfg = icl_core::embedded::config()?;
    cfg.set("train.batch", &alloc::format!("{batch}"))?;
    cfg.set("task.L", &alloc::format!("{len}"))?;
    cfg.set("train.steps", &alloc::format!("{steps}"))?;
    cfg.validate()?;
    let (_, per_step) = timed_train(&cfg, tpi)?;
    Ok(alloc::format!(
        "{{\"bench\":{{\"batch\":{batch},\"L\":{len},\"steps\":{steps}}},\"heap_bytes\":{},\
         \"heap_high_water\":{},\"stack_high_water\":{},\"instructions_per_step\":{per_step}}}",
        HEAP_USE.load(Ordering::Relaxed),
        HEAP.high.load(Ordering::Relaxed),
        stack_high_water(),
    ))
}

/// Train `cfg` (f32, [`icl_core::embedded::train`]), reading SysTick after every step; returns the
/// report and `{"mean","min","max"}` instructions per step.
fn timed_train(
    cfg: &icl_core::Config,
    tpi: f64,
) -> icl_core::Result<(icl_core::embedded::TrainReport, String)> {
    // ticks at the end of every step
    let mut marks: Vec<u64> = Vec::new();
    marks
        .try_reserve_exact(cfg.train.steps as usize + 1)
        .map_err(|_| icl_core::Error::Shape("no heap for the step timings".into()))?;
    marks.push(ticks());
    let rep = icl_core::embedded::train::<f32>(cfg, icl_core::embedded::RISK_SAMPLES, &mut |_| {
        marks.push(ticks())
    })?;
    let steps: Vec<u64> = marks.windows(2).map(|w| w[1] - w[0]).collect();
    let n = steps.len().max(1) as f64;
    let mean = steps.iter().sum::<u64>() as f64 / n / tpi;
    let min = steps.iter().copied().min().unwrap_or(0) as f64 / tpi;
    let max = steps.iter().copied().max().unwrap_or(0) as f64 / tpi;
    let mut s = String::new();
    let _ = write!(
        s,
        "{{\"mean\":{mean:.0},\"min\":{min:.0},\"max\":{max:.0}}}"
    );
    Ok((rep, s))
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let failed = HEAP.failed.load(Ordering::Relaxed);
    if failed > 0 {
        let used = HEAP.heap.used();
        let msg = OutOfHeap { failed, used };
        fail(&msg)
    }
    fail(info)
}

struct OutOfHeap {
    failed: usize,
    used: usize,
}

impl core::fmt::Display for OutOfHeap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "out of heap: an allocation of {} bytes failed with {} of {} bytes in use \
             (rebuild with a larger ICL_HEAP_BYTES)",
            self.failed,
            self.used,
            HEAP_USE.load(Ordering::Relaxed)
        )
    }
}

#[exception]
unsafe fn HardFault(ef: &ExceptionFrame) -> ! {
    let pc = ef.pc();
    fail(&HardFaultAt(pc))
}

struct HardFaultAt(u32);

impl core::fmt::Display for HardFaultAt {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "hard fault at pc {:#010x} (a stack overflow faults below 0x20000000)",
            self.0
        )
    }
}
