//! Native code for kernel segments (cargo feature `jit`, on by default), compiled with Cranelift
//! when the kernel is built.
//!
//! **What runs natively.** Two things, both optional per segment:
//! - the forward pass of a straight-line loop body (`Rt::seg` with a loop), once the "depends on
//!   parameters" flags have settled (`stable` in `run.rs`): the interpreter runs the first
//!   iterations, which update the flags of stores and moves, and hands the remaining iterations
//!   to native code, which updates no flag (exactly what the interpreter does when stable). A
//!   segment is compiled only if every instruction is one the code generator handles (scalar
//!   arithmetic, [`U`]/[`B`] functions, single-index loads and stores, integer arithmetic and
//!   comparisons, `reject`); log densities, `target +=` and multi-index accesses keep their
//!   segment on the interpreter;
//! - the reverse sweep of any segment (all reverse instructions are handled): the adjoint of the
//!   recorded imperative program (Griewank & Walther 2008, "Evaluating Derivatives", §3–4),
//!   reading the partials and addresses the forward pass recorded, interpreted or native alike.
//!
//! **Speed.** The cells and registers a segment names live in machine registers for the whole
//! run (loaded on entry, stored on exit); a load of the container element the loop just stored
//! (GARCH's `h[t - 1]`) and of the kernel adjoint the sweep just wrote take the value from a
//! register, so the loop-carried chain does not go through memory; the reverse sweep assigns
//! rather than adds where an adjoint is known to be +0 (`Kernel::mark_fresh`). Loops with fewer
//! than eight iterations left and single executions of a segment stay on the interpreter, where
//! the call's fixed cost would outweigh the gain.
//!
//! **Same results.** Native code performs the interpreter's floating-point operations in the
//! interpreter's order: `+ − × ÷`, negation and `sqrt` are single IEEE 754 operations in both
//! (Cranelift fuses nothing into fused multiply–adds unless asked), and every other function
//! ([`U::eval`], [`B::eval`], `powf`) is called through an `extern "C"` shim that runs the very
//! same Rust function. Values, partials, recorded addresses and so log densities and gradients
//! are bit for bit those of the interpreter (tests/kernel_jit.rs; for the assignments of the
//! reverse sweep see `Kernel::mark_fresh`). Results do not depend on the thread: the code is
//! compiled once per kernel and only reads its frame.
//!
//! **Failures.** An index out of range, integer overflow or division by zero, or `reject` makes
//! the native code return 1: the kernel stops as in the interpreter and the statement
//! interpreter reruns the loop and reports the error. The native reverse sweep checks every
//! recorded address against the memory it indexes and returns 1 (a panic in `backward`, as the
//! interpreter's bounds checks) if one is out of range.
//!
//! **Switches.** `BAYESC_JIT=0` in the environment compiles no native code; a model's
//! `Model::set_native_loops(false)` runs its kernels interpreted (for tests comparing the two).
//!
//! Files: this one holds the compiled code's owner ([`Jit`]), the frames native code reads, the
//! shims and the compilation driver; `jit/forward.rs` and `jit/reverse.rs` generate the code.

use cranelift_codegen::Context;
use cranelift_codegen::ir::{AbiParam, Signature, types};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Module, default_libcall_names};

use super::super::scalar::{B, U};
use super::{KNode, Kernel, Op};

mod forward;
mod reverse;

/// The native forward pass of a loop body: runs iterations `it ..= hi`; 0 on success, 1 when
/// the kernel must stop.
pub(super) type FwdFn = unsafe extern "C" fn(*mut FwdFrame) -> u32;
/// The native reverse sweep of a segment: `count` executions backwards; 0 on success, 1 on a
/// recorded address out of range.
pub(super) type RevFn = unsafe extern "C" fn(*mut RevFrame) -> u32;

/// What the native forward pass reads and writes (layout shared with `forward.rs`: field
/// offsets 0, 8, …, 48).
#[repr(C)]
pub(super) struct FwdFrame {
    /// Kernel memory: cells, then written containers.
    pub m: *mut f64,
    /// Integer registers.
    pub iv: *mut i64,
    /// Where the first iteration's partials go (room for all iterations reserved).
    pub parts: *mut f64,
    /// Where the first iteration's addresses go (room reserved likewise).
    pub addrs: *mut u32,
    /// One view per container of the kernel.
    pub views: *const JView,
    /// First and last iteration (inclusive), `it <= hi`.
    pub it: i64,
    pub hi: i64,
}

/// A container as native code sees it: `len` elements from `ptr`, whose recorded addresses are
/// `abase + offset` (a kernel memory cell, or a tape slot tagged with `TAPE_BIT`), or `NONE`
/// when `konst != 0` (data). Offsets 0, 8, 16, 20; 24 bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct JView {
    pub ptr: *const f64,
    pub len: u64,
    pub abase: u32,
    pub konst: u32,
}

/// What the native reverse sweep reads and writes (offsets 0, 8, …, 56).
#[repr(C)]
pub(super) struct RevFrame {
    /// Adjoints of kernel memory and their number.
    pub ka: *mut f64,
    pub ka_len: u64,
    /// Adjoints of tape slots and their number.
    pub adj: *mut f64,
    pub adj_len: u64,
    /// One past the last partial / address of the executions to sweep.
    pub parts: *const f64,
    pub addrs: *const u32,
    /// Executions of the segment to sweep (at least 1).
    pub count: u64,
    /// First tape slot of the run's log density terms.
    pub terms_out: u64,
}

/// Native code of one segment.
#[derive(Default)]
struct SegCode {
    /// Forward pass recording the trace, and without recording.
    fwd_rec: Option<FwdFn>,
    fwd: Option<FwdFn>,
    rev: Option<RevFn>,
}

/// The native code of a kernel's segments, owning the executable memory it lives in.
pub struct Jit {
    segs: Vec<SegCode>,
    /// The module holding the code; its memory is freed when the `Jit` drops.
    module: Option<JITModule>,
    /// The functions the shims evaluate; native code holds pointers to these elements, so the
    /// boxes must live (and not move their contents) as long as the code.
    _us: Box<[U]>,
    _bs: Box<[B]>,
}

// SAFETY: after `compile` the module is never touched again until `Drop`; the code it holds is
// immutable and reads only its frame, the `_us`/`_bs` boxes (immutable) and what the frame points
// to, so calling it from several threads at once is sound as long as each call has its own frame
// (each kernel run and reverse sweep builds its own).
unsafe impl Send for Jit {}
// SAFETY: as for `Send`: shared references only read the function pointers.
unsafe impl Sync for Jit {}

impl Drop for Jit {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: the function pointers live in `self.segs`, dropped with `self`, and are
            // called only through `&Kernel`, which cannot outlive the kernel owning this `Jit`;
            // so no code of the module runs or is referenced any more.
            unsafe { m.free_memory() };
        }
    }
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = |g: fn(&SegCode) -> bool| self.segs.iter().filter(|s| g(s)).count();
        write!(
            f,
            "Jit({} forward, {} reverse of {} segments)",
            n(|s| s.fwd_rec.is_some()),
            n(|s| s.rev.is_some()),
            self.segs.len()
        )
    }
}

impl Jit {
    /// The native forward pass of segment `s` (recording or not), if any.
    pub(super) fn fwd(&self, s: u32, rec: bool) -> Option<FwdFn> {
        let c = self.segs.get(s as usize)?;
        if rec { c.fwd_rec } else { c.fwd }
    }

    /// Whether some loop body has a native forward pass.
    pub(super) fn has_forward(&self) -> bool {
        self.segs.iter().any(|s| s.fwd_rec.is_some())
    }

    /// The native reverse sweep of segment `s`, if any.
    pub(super) fn rev(&self, s: u32) -> Option<RevFn> {
        self.segs.get(s as usize)?.rev
    }
}

/// Whether the environment turns native code off (`BAYESC_JIT=0`).
/// The end of a generated function: the current block returns 0 (success) and block `fail`
/// returns 1 (the interpreter reruns); then all blocks are sealed and the function finished.
/// Shared by the forward and reverse code generators.
fn return_codes(
    mut b: cranelift_frontend::FunctionBuilder<'_>,
    fail: cranelift_codegen::ir::Block,
) {
    use cranelift_codegen::ir::InstBuilder;
    let ok = b.ins().iconst(types::I32, 0);
    b.ins().return_(&[ok]);
    b.switch_to_block(fail);
    let one = b.ins().iconst(types::I32, 1);
    b.ins().return_(&[one]);
    b.seal_all_blocks();
    b.finalize();
}

fn disabled() -> bool {
    std::env::var_os("BAYESC_JIT").is_some_and(|v| v == "0")
}

/// `U::eval` for native code: returns f(x) and writes f′(x) to `*d`.
///
/// # Safety
/// `u` points to a live `U`, `d` to a writable `f64`.
pub(super) unsafe extern "C" fn un_shim(u: *const U, x: f64, d: *mut f64) -> f64 {
    // SAFETY: the caller's contract.
    let (v, dx) = unsafe { (*u).eval(x) };
    // SAFETY: the caller's contract.
    unsafe { *d = dx };
    v
}

/// `B::eval` for native code: returns f(x, y) and writes ∂f/∂x, ∂f/∂y to `d[0]`, `d[1]`.
///
/// # Safety
/// `b` points to a live `B`, `d` to two writable `f64`.
pub(super) unsafe extern "C" fn bin_shim(b: *const B, x: f64, y: f64, d: *mut f64) -> f64 {
    // SAFETY: the caller's contract.
    let (v, dx, dy) = unsafe { (*b).eval(x, y) };
    // SAFETY: the caller's contract.
    unsafe {
        *d = dx;
        *d.add(1) = dy;
    }
    v
}

/// `x.powf(y)` for native code (the interpreter's `IPow`).
pub(super) extern "C" fn powf_shim(x: f64, y: f64) -> f64 {
    x.powf(y)
}

/// The segments that are the whole body of a `for` loop, with the loop's variable register.
fn loop_bodies(nodes: &[KNode], out: &mut Vec<(u32, u32)>) {
    for n in nodes {
        match n {
            KNode::For { var, body, .. } => {
                if let [KNode::Seg(s)] = body[..] {
                    out.push((s, *var));
                } else {
                    loop_bodies(body, out);
                }
            }
            KNode::If {
                then, otherwise, ..
            } => {
                loop_bodies(then, out);
                loop_bodies(otherwise, out);
            }
            KNode::Seg(_) | KNode::Break | KNode::Continue => {}
        }
    }
}

/// Compiles the native code of kernel `k`: forward passes of its loop bodies, reverse sweeps of
/// its segments. `None` when native code is off or Cranelift cannot target the host (then
/// everything is interpreted); a segment the generator does not handle is left to the
/// interpreter.
pub(super) fn compile(k: &Kernel) -> Option<Jit> {
    if disabled() {
        return None;
    }
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").ok()?;
    flags.set("is_pic", "false").ok()?;
    let isa = cranelift_native::builder()
        .ok()?
        .finish(settings::Flags::new(flags))
        .ok()?;
    let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    let us: Box<[U]> = k
        .segs
        .iter()
        .flat_map(|s| &s.ops)
        .filter_map(|op| match op {
            Op::Un(u, ..) => Some(*u),
            _ => None,
        })
        .collect();
    let bs: Box<[B]> = k
        .segs
        .iter()
        .flat_map(|s| &s.ops)
        .filter_map(|op| match op {
            Op::Bin(b, ..) => Some(*b),
            _ => None,
        })
        .collect();
    let ptr = module.target_config().pointer_type();
    let mut sig = Signature::new(module.target_config().default_call_conv);
    sig.params.push(AbiParam::new(ptr));
    sig.returns.push(AbiParam::new(types::I32));
    let mut ctx = Context::new();
    let mut fbc = FunctionBuilderContext::new();
    let mut bodies = Vec::new();
    loop_bodies(&k.root, &mut bodies);
    // (segment, recording, function) to look up once the module is finalized.
    let mut fwd_ids = Vec::new();
    let mut rev_ids = Vec::new();
    for &(s, var) in &bodies {
        for rec in [true, false] {
            ctx.func.signature = sig.clone();
            let g = forward::Gen {
                k,
                seg: &k.segs[s as usize],
                var,
                rec,
                us: &us,
                bs: &bs,
                ptr,
            };
            if g.build(&mut ctx.func, &mut fbc).is_some() {
                let id = module.declare_anonymous_function(&sig).ok()?;
                if module.define_function(id, &mut ctx).is_ok() {
                    fwd_ids.push((s, rec, id));
                }
            }
            module.clear_context(&mut ctx);
        }
    }
    for (s, seg) in k.segs.iter().enumerate() {
        if seg.rev.is_empty() {
            continue;
        }
        ctx.func.signature = sig.clone();
        let g = reverse::Gen { k, seg, ptr };
        if g.build(&mut ctx.func, &mut fbc).is_some() {
            let id = module.declare_anonymous_function(&sig).ok()?;
            if module.define_function(id, &mut ctx).is_ok() {
                rev_ids.push((s as u32, id));
            }
        }
        module.clear_context(&mut ctx);
    }
    module.finalize_definitions().ok()?;
    let mut segs: Vec<SegCode> = (0..k.segs.len()).map(|_| SegCode::default()).collect();
    for (s, rec, id) in fwd_ids {
        let p = module.get_finalized_function(id);
        // SAFETY: `id` was defined with signature `sig`, `fn(*mut FwdFrame) -> u32` in the
        // host's default C calling convention, which is `FwdFn`'s `extern "C"`.
        let f = unsafe { std::mem::transmute::<*const u8, FwdFn>(p) };
        let c = &mut segs[s as usize];
        if rec {
            c.fwd_rec = Some(f);
        } else {
            c.fwd = Some(f);
        }
    }
    for (s, id) in rev_ids {
        let p = module.get_finalized_function(id);
        // SAFETY: as above, with `RevFn`.
        segs[s as usize].rev = Some(unsafe { std::mem::transmute::<*const u8, RevFn>(p) });
    }
    Some(Jit {
        segs,
        module: Some(module),
        _us: us,
        _bs: bs,
    })
}
