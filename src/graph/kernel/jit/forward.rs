//! Code generation for the native forward pass of a loop body (a [`FwdFn`](super::FwdFn)):
//! the interpreter's `Rt::seg` in its stable regime (no flag updates), iterating the loop's
//! variable from `frame.it` to `frame.hi`. Cells and registers the segment names live in
//! Cranelift variables (machine registers where they fit) for the whole run and are stored back
//! on success; containers stay in memory. Part of [`super`].

use std::collections::BTreeSet;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    AbiParam, Function, InstBuilder, MemFlags, Signature, StackSlotData, StackSlotKind, Type,
    Value, types,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};

use super::super::run::NONE;
use super::super::{Cmp, IOp, Kernel, Op, Seg, Test};
use super::{B, U, bin_shim, powf_shim, un_shim};
use crate::syntax::ast::{INT_MAX, INT_MIN};

/// The generator of one loop body's forward pass.
pub(in super::super) struct Gen<'a> {
    pub k: &'a Kernel,
    pub seg: &'a Seg,
    /// The loop variable's register.
    pub var: u32,
    /// Record partials and addresses (the tape is recording).
    pub rec: bool,
    /// The functions `Un`/`Bin` instructions call (native code holds pointers into these).
    pub us: &'a [U],
    pub bs: &'a [B],
    pub ptr: Type,
}

/// `base + off` bytes (an immediate offset when it fits).
fn at(b: &mut FunctionBuilder, base: Value, off: i64) -> (Value, i32) {
    match i32::try_from(off) {
        Ok(o) => (base, o),
        Err(_) => (b.ins().iadd_imm(base, off), 0),
    }
}

fn load(b: &mut FunctionBuilder, ty: Type, base: Value, off: i64) -> Value {
    let (p, o) = at(b, base, off);
    b.ins().load(ty, MemFlags::trusted(), p, o)
}

fn store(b: &mut FunctionBuilder, v: Value, base: Value, off: i64) {
    let (p, o) = at(b, base, off);
    b.ins().store(MemFlags::trusted(), v, p, o);
}

/// A container's view, loaded once on entry.
#[derive(Clone, Copy)]
struct CView {
    ptr: Value,
    len: Value,
    abase: Value,
    konst: Value,
}

impl Gen<'_> {
    /// Whether the generator handles every instruction of the segment, and the trace one
    /// iteration writes is exactly the segment's `n_parts` partials and `n_addrs` addresses
    /// (what `run.rs` reserves room for).
    fn supported(&self) -> bool {
        let (mut p, mut a) = (0u32, 0u32);
        for op in &self.seg.ops {
            match op {
                Op::Mul(..) | Op::Div(..) | Op::Bin(..) => p += 2,
                Op::Un(..) => p += 1,
                Op::Ld1 { .. } | Op::St1 { .. } => a += 1,
                Op::Add(..)
                | Op::Sub(..)
                | Op::Mov { .. }
                | Op::IToR(..)
                | Op::LdG1 { .. }
                | Op::LdI1 { .. }
                | Op::IBin(..)
                | Op::INeg(..)
                | Op::IAbs(..)
                | Op::IMov(..)
                | Op::INot(..)
                | Op::ICmp(..)
                | Op::RCmp(..)
                | Op::RNot(..)
                | Op::RTest(..)
                | Op::IPow(..)
                | Op::IDivR(..) => {}
                Op::Ld { .. }
                | Op::LdG { .. }
                | Op::LdI { .. }
                | Op::St { .. }
                | Op::Lpdf { .. }
                | Op::Target { .. }
                | Op::Bail => return false,
            }
        }
        p == self.seg.n_parts && a == self.seg.n_addrs
    }

    /// The cells, registers and containers the segment names (the loop variable included).
    fn names(&self) -> (BTreeSet<u32>, BTreeSet<u32>, BTreeSet<u32>) {
        let (mut cs, mut rs, mut ks) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
        rs.insert(self.var);
        for op in &self.seg.ops {
            match *op {
                Op::Add(d, x, y) | Op::Sub(d, x, y) | Op::Mul(d, x, y) | Op::Div(d, x, y) => {
                    cs.extend([d, x, y])
                }
                Op::Bin(_, d, x, y) => cs.extend([d, x, y]),
                Op::Un(_, d, x) | Op::Mov { d, x, .. } => cs.extend([d, x]),
                Op::IToR(d, r) => {
                    cs.insert(d);
                    rs.insert(r);
                }
                Op::Ld1 { d, c, i } | Op::LdG1 { d, c, i } => {
                    cs.insert(d);
                    ks.insert(c);
                    rs.insert(i);
                }
                Op::LdI1 { d, c, i } => {
                    rs.extend([d, i]);
                    ks.insert(c);
                }
                Op::St1 { c, s, i, .. } => {
                    cs.insert(s);
                    ks.insert(c);
                    rs.insert(i);
                }
                Op::IBin(_, d, x, y) | Op::ICmp(_, d, x, y) => rs.extend([d, x, y]),
                Op::INeg(d, x) | Op::IAbs(d, x) | Op::IMov(d, x) | Op::INot(d, x) => {
                    rs.extend([d, x])
                }
                Op::RCmp(_, d, x, y) => {
                    rs.insert(d);
                    cs.extend([x, y]);
                }
                Op::RNot(d, x) | Op::RTest(_, d, x) => {
                    rs.insert(d);
                    cs.insert(x);
                }
                Op::IPow(d, x, y) | Op::IDivR(d, x, y) => {
                    cs.insert(d);
                    rs.extend([x, y]);
                }
                Op::Ld { .. }
                | Op::LdG { .. }
                | Op::LdI { .. }
                | Op::St { .. }
                | Op::Lpdf { .. }
                | Op::Target { .. }
                | Op::Bail => {}
            }
        }
        (cs, rs, ks)
    }

    /// Builds the function into `func` (whose signature is set); `None` if the segment is not
    /// handled or names memory outside the kernel's (checked before building starts, so that
    /// the builder's context is left clean).
    pub fn build(&self, func: &mut Function, fbc: &mut FunctionBuilderContext) -> Option<()> {
        if !self.supported() {
            return None;
        }
        let (cells, regs, conts) = self.names();
        if cells.iter().any(|&c| c >= self.k.n_cells)
            || regs.iter().any(|&r| r >= self.k.n_regs)
            || conts.iter().any(|&c| c as usize >= self.k.conts.len())
            || self.seg.ops.iter().any(|op| match op {
                Op::Bin(f, ..) => !self.bs.contains(f),
                Op::Un(u, ..) => !self.us.contains(u),
                _ => false,
            })
        {
            return None;
        }
        let (ptr, rec) = (self.ptr, self.rec);
        let call_conv = func.signature.call_conv;
        let mut b = FunctionBuilder::new(func, fbc);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let frame = b.block_params(entry)[0];
        let m = load(&mut b, ptr, frame, 0);
        let iv = load(&mut b, ptr, frame, 8);
        let parts = load(&mut b, ptr, frame, 16);
        let addrs = load(&mut b, ptr, frame, 24);
        let views = load(&mut b, ptr, frame, 32);
        let it0 = load(&mut b, types::I64, frame, 40);
        let hi = load(&mut b, types::I64, frame, 48);
        let n_cells = self.k.n_cells as usize;
        let n_regs = self.k.n_regs as usize;
        let mut cv: Vec<Option<Variable>> = vec![None; n_cells];
        let mut rv: Vec<Option<Variable>> = vec![None; n_regs];
        for &c in &cells {
            let v = b.declare_var(types::F64);
            let x = load(&mut b, types::F64, m, 8 * c as i64);
            b.def_var(v, x);
            cv[c as usize] = Some(v);
        }
        for &r in &regs {
            let v = b.declare_var(types::I64);
            let x = load(&mut b, types::I64, iv, 8 * r as i64);
            b.def_var(v, x);
            rv[r as usize] = Some(v);
        }
        let mut kv: Vec<Option<CView>> = vec![None; self.k.conts.len()];
        for &c in &conts {
            let o = 24 * c as i64;
            kv[c as usize] = Some(CView {
                ptr: load(&mut b, ptr, views, o),
                len: load(&mut b, types::I64, views, o + 8),
                abase: load(&mut b, types::I32, views, o + 16),
                konst: load(&mut b, types::I32, views, o + 20),
            });
        }
        // The last store into each container the segment stores into: (offset, value), so that
        // a load of the element just stored takes the value from a register instead of
        // memory (the loop-carried `h[t - 1]`; a branch the processor predicts, not a data
        // dependency on the store). Memory is written all the same, so this only shortens the
        // chain of dependent operations; the values are the memory's.
        let mut last: Vec<Option<(Variable, Variable)>> = vec![None; self.k.conts.len()];
        for op in &self.seg.ops {
            if let Op::St1 { c: k, .. } = *op
                && last[k as usize].is_none()
            {
                let (li, lv) = (b.declare_var(types::I64), b.declare_var(types::F64));
                let none = b.ins().iconst(types::I64, -1);
                b.def_var(li, none);
                let z = b.ins().f64const(0.0);
                b.def_var(lv, z);
                last[k as usize] = Some((li, lv));
            }
        }
        let itv = b.declare_var(types::I64);
        b.def_var(itv, it0);
        let ppv = b.declare_var(ptr);
        b.def_var(ppv, parts);
        let apv = b.declare_var(ptr);
        b.def_var(apv, addrs);
        // Where partials go when not recording (shims always write theirs).
        let scratch =
            b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 3));
        let fail = b.create_block();
        let header = b.create_block();
        b.ins().jump(header, &[]);

        let un_sig = {
            let mut s = Signature::new(call_conv);
            s.params.extend([
                AbiParam::new(ptr),
                AbiParam::new(types::F64),
                AbiParam::new(ptr),
            ]);
            s.returns.push(AbiParam::new(types::F64));
            b.import_signature(s)
        };
        let bin_sig = {
            let mut s = Signature::new(call_conv);
            s.params.extend([
                AbiParam::new(ptr),
                AbiParam::new(types::F64),
                AbiParam::new(types::F64),
                AbiParam::new(ptr),
            ]);
            s.returns.push(AbiParam::new(types::F64));
            b.import_signature(s)
        };
        let pow_sig = {
            let mut s = Signature::new(call_conv);
            s.params
                .extend([AbiParam::new(types::F64), AbiParam::new(types::F64)]);
            s.returns.push(AbiParam::new(types::F64));
            b.import_signature(s)
        };

        b.switch_to_block(header);
        let it = b.use_var(itv);
        b.def_var(rv[self.var as usize].expect("named register"), it);
        let pp = b.use_var(ppv);
        let ap = b.use_var(apv);
        let (mut po, mut ao) = (0i64, 0i64);
        let c = |x: u32| cv[x as usize].expect("named cell");
        let r = |x: u32| rv[x as usize].expect("named register");
        // Continues in a new block when `ok` (an i8 truth value), else fails.
        let check = |b: &mut FunctionBuilder, ok: Value| {
            let cont = b.create_block();
            b.ins().brif(ok, cont, &[], fail, &[]);
            b.switch_to_block(cont);
        };
        // Fails unless `v` is a value of the 32-bit `int` (the interpreter re-runs and reports
        // the overflow, as for an overflow of the 64-bit registers).
        let check_int = |b: &mut FunctionBuilder, v: Value| {
            let lo = b
                .ins()
                .icmp_imm(IntCC::SignedGreaterThanOrEqual, v, INT_MIN);
            let hi = b.ins().icmp_imm(IntCC::SignedLessThanOrEqual, v, INT_MAX);
            let ok = b.ins().band(lo, hi);
            check(b, ok);
        };
        // The 0-based offset of 1-based index register `i` into container `k`, checked.
        let index = |b: &mut FunctionBuilder, i: u32, k: CView| -> Value {
            let i = b.use_var(r(i));
            let o = b.ins().iadd_imm(i, -1);
            let ok = b.ins().icmp(IntCC::UnsignedLessThan, o, k.len);
            check(b, ok);
            o
        };
        let elem = |b: &mut FunctionBuilder, k: CView, o: Value| -> Value {
            let off = b.ins().ishl_imm(o, 3);
            b.ins().iadd(k.ptr, off)
        };
        // Records the address of element `o` of container `k`.
        let record = |b: &mut FunctionBuilder, k: CView, o: Value, ao: &mut i64| {
            let o32 = b.ins().ireduce(types::I32, o);
            let a = b.ins().iadd(k.abase, o32);
            let none = b.ins().iconst(types::I32, NONE as i64);
            let a = b.ins().select(k.konst, none, a);
            store(b, a, ap, 4 * *ao);
            *ao += 1;
        };
        // Where the next `n` partials go.
        let pdst = |b: &mut FunctionBuilder, po: i64| -> Value {
            if rec {
                b.ins().iadd_imm(pp, 8 * po)
            } else {
                b.ins().stack_addr(ptr, scratch, 0)
            }
        };
        let bool64 = |b: &mut FunctionBuilder, t: Value| b.ins().uextend(types::I64, t);
        for op in &self.seg.ops {
            match *op {
                Op::Add(d, x, y) => {
                    let (x, y) = (b.use_var(c(x)), b.use_var(c(y)));
                    let v = b.ins().fadd(x, y);
                    b.def_var(c(d), v);
                }
                Op::Sub(d, x, y) => {
                    let (x, y) = (b.use_var(c(x)), b.use_var(c(y)));
                    let v = b.ins().fsub(x, y);
                    b.def_var(c(d), v);
                }
                Op::Mul(d, x, y) => {
                    let (x, y) = (b.use_var(c(x)), b.use_var(c(y)));
                    let v = b.ins().fmul(x, y);
                    b.def_var(c(d), v);
                    if rec {
                        store(&mut b, y, pp, 8 * po);
                        store(&mut b, x, pp, 8 * (po + 1));
                    }
                    po += 2;
                }
                Op::Div(d, x, y) => {
                    // As `B::Div`: (x / y, 1 / y, −(x / y) / y).
                    let (x, y) = (b.use_var(c(x)), b.use_var(c(y)));
                    let v = b.ins().fdiv(x, y);
                    b.def_var(c(d), v);
                    if rec {
                        let one = b.ins().f64const(1.0);
                        let da = b.ins().fdiv(one, y);
                        let q = b.ins().fdiv(v, y);
                        let db = b.ins().fneg(q);
                        store(&mut b, da, pp, 8 * po);
                        store(&mut b, db, pp, 8 * (po + 1));
                    }
                    po += 2;
                }
                Op::Bin(f, d, x, y) => {
                    let fi = self.bs.iter().position(|&g| g == f).expect("checked");
                    let fp = b.ins().iconst(ptr, &self.bs[fi] as *const B as i64);
                    let (x, y) = (b.use_var(c(x)), b.use_var(c(y)));
                    let dst = pdst(&mut b, po);
                    let callee = b.ins().iconst(ptr, bin_shim as *const () as i64);
                    let call = b.ins().call_indirect(bin_sig, callee, &[fp, x, y, dst]);
                    let v = b.inst_results(call)[0];
                    b.def_var(c(d), v);
                    po += 2;
                }
                Op::Un(u, d, x) => {
                    let x = b.use_var(c(x));
                    // As `Rt::seg` and `U::eval`.
                    let (v, dx) = match u {
                        U::Square => {
                            let v = b.ins().fmul(x, x);
                            let two = b.ins().f64const(2.0);
                            (v, Some(b.ins().fmul(two, x)))
                        }
                        U::Neg => (b.ins().fneg(x), Some(b.ins().f64const(-1.0))),
                        U::Sqrt => {
                            let s = b.ins().sqrt(x);
                            let half = b.ins().f64const(0.5);
                            (s, Some(b.ins().fdiv(half, s)))
                        }
                        u => {
                            let ui = self.us.iter().position(|&g| g == u).expect("checked");
                            let fp = b.ins().iconst(ptr, &self.us[ui] as *const U as i64);
                            let dst = pdst(&mut b, po);
                            let callee = b.ins().iconst(ptr, un_shim as *const () as i64);
                            let call = b.ins().call_indirect(un_sig, callee, &[fp, x, dst]);
                            (b.inst_results(call)[0], None)
                        }
                    };
                    b.def_var(c(d), v);
                    if let (true, Some(dx)) = (rec, dx) {
                        store(&mut b, dx, pp, 8 * po);
                    }
                    po += 1;
                }
                Op::Mov { d, x, .. } => {
                    let x = b.use_var(c(x));
                    b.def_var(c(d), x);
                }
                Op::IToR(d, x) => {
                    let x = b.use_var(r(x));
                    let v = b.ins().fcvt_from_sint(types::F64, x);
                    b.def_var(c(d), v);
                }
                Op::Ld1 { d, c: kc, i } => {
                    let k = kv[kc as usize].expect("named container");
                    let o = index(&mut b, i, k);
                    let p = elem(&mut b, k, o);
                    if let Some((li, lv)) = last[kc as usize] {
                        let (hit, miss, join) =
                            (b.create_block(), b.create_block(), b.create_block());
                        let l = b.use_var(li);
                        let same = b.ins().icmp(IntCC::Equal, o, l);
                        b.ins().brif(same, hit, &[], miss, &[]);
                        b.switch_to_block(hit);
                        let v = b.use_var(lv);
                        b.def_var(c(d), v);
                        b.ins().jump(join, &[]);
                        b.switch_to_block(miss);
                        let v = b.ins().load(types::F64, MemFlags::trusted(), p, 0);
                        b.def_var(c(d), v);
                        b.ins().jump(join, &[]);
                        b.switch_to_block(join);
                    } else {
                        let v = b.ins().load(types::F64, MemFlags::trusted(), p, 0);
                        b.def_var(c(d), v);
                    }
                    if rec {
                        record(&mut b, k, o, &mut ao);
                    } else {
                        ao += 1;
                    }
                }
                Op::LdG1 { d, c: k, i } => {
                    let k = kv[k as usize].expect("named container");
                    let o = index(&mut b, i, k);
                    let p = elem(&mut b, k, o);
                    let v = b.ins().load(types::F64, MemFlags::trusted(), p, 0);
                    b.def_var(c(d), v);
                }
                Op::LdI1 { d, c: k, i } => {
                    let k = kv[k as usize].expect("named container");
                    let o = index(&mut b, i, k);
                    let p = elem(&mut b, k, o);
                    let v = b.ins().load(types::F64, MemFlags::trusted(), p, 0);
                    // `as i64`: saturating, NaN to 0.
                    let v = b.ins().fcvt_to_sint_sat(types::I64, v);
                    b.def_var(r(d), v);
                }
                Op::St1 { c: kc, s, i, .. } => {
                    let k = kv[kc as usize].expect("named container");
                    let o = index(&mut b, i, k);
                    let p = elem(&mut b, k, o);
                    let v = b.use_var(c(s));
                    b.ins().store(MemFlags::trusted(), v, p, 0);
                    if let Some((li, lv)) = last[kc as usize] {
                        b.def_var(li, o);
                        b.def_var(lv, v);
                    }
                    if rec {
                        record(&mut b, k, o, &mut ao);
                    } else {
                        ao += 1;
                    }
                }
                Op::IBin(f, d, x, y) => {
                    let (x, y) = (b.use_var(r(x)), b.use_var(r(y)));
                    let v = match f {
                        IOp::Add | IOp::Sub | IOp::Mul => {
                            let (v, of) = match f {
                                IOp::Add => b.ins().sadd_overflow(x, y),
                                IOp::Sub => b.ins().ssub_overflow(x, y),
                                _ => b.ins().smul_overflow(x, y),
                            };
                            let ok = b.ins().icmp_imm(IntCC::Equal, of, 0);
                            check(&mut b, ok);
                            check_int(&mut b, v);
                            v
                        }
                        IOp::Div | IOp::Mod => {
                            // `checked_div`/`checked_rem`: fail on y = 0 and on MIN / −1.
                            let nz = b.ins().icmp_imm(IntCC::NotEqual, y, 0);
                            check(&mut b, nz);
                            let xm = b.ins().icmp_imm(IntCC::Equal, x, i64::MIN);
                            let ym = b.ins().icmp_imm(IntCC::Equal, y, -1);
                            let bad = b.ins().band(xm, ym);
                            let ok = b.ins().icmp_imm(IntCC::Equal, bad, 0);
                            check(&mut b, ok);
                            let v = if let IOp::Div = f {
                                b.ins().sdiv(x, y)
                            } else {
                                b.ins().srem(x, y)
                            };
                            check_int(&mut b, v);
                            v
                        }
                        IOp::Min => b.ins().smin(x, y),
                        IOp::Max => b.ins().smax(x, y),
                    };
                    b.def_var(r(d), v);
                }
                Op::INeg(d, x) | Op::IAbs(d, x) => {
                    let x = b.use_var(r(x));
                    let ok = b.ins().icmp_imm(IntCC::NotEqual, x, i64::MIN);
                    check(&mut b, ok);
                    let v = if let Op::INeg(..) = op {
                        b.ins().ineg(x)
                    } else {
                        b.ins().iabs(x)
                    };
                    check_int(&mut b, v);
                    b.def_var(r(d), v);
                }
                Op::IMov(d, x) => {
                    let x = b.use_var(r(x));
                    b.def_var(r(d), x);
                }
                Op::INot(d, x) => {
                    let x = b.use_var(r(x));
                    let t = b.ins().icmp_imm(IntCC::Equal, x, 0);
                    let v = bool64(&mut b, t);
                    b.def_var(r(d), v);
                }
                Op::ICmp(cmp, d, x, y) => {
                    let (x, y) = (b.use_var(r(x)), b.use_var(r(y)));
                    let t = match cmp {
                        Cmp::Lt => b.ins().icmp(IntCC::SignedLessThan, x, y),
                        Cmp::Le => b.ins().icmp(IntCC::SignedLessThanOrEqual, x, y),
                        Cmp::Gt => b.ins().icmp(IntCC::SignedGreaterThan, x, y),
                        Cmp::Ge => b.ins().icmp(IntCC::SignedGreaterThanOrEqual, x, y),
                        Cmp::Eq => b.ins().icmp(IntCC::Equal, x, y),
                        Cmp::Ne => b.ins().icmp(IntCC::NotEqual, x, y),
                        Cmp::And | Cmp::Or => {
                            let tx = b.ins().icmp_imm(IntCC::NotEqual, x, 0);
                            let ty = b.ins().icmp_imm(IntCC::NotEqual, y, 0);
                            if let Cmp::And = cmp {
                                b.ins().band(tx, ty)
                            } else {
                                b.ins().bor(tx, ty)
                            }
                        }
                    };
                    let v = bool64(&mut b, t);
                    b.def_var(r(d), v);
                }
                Op::RCmp(cmp, d, x, y) => {
                    let (x, y) = (b.use_var(c(x)), b.use_var(c(y)));
                    // Rust's comparisons: false with a NaN, except `!=` (true).
                    let t = match cmp {
                        Cmp::Lt => b.ins().fcmp(FloatCC::LessThan, x, y),
                        Cmp::Le => b.ins().fcmp(FloatCC::LessThanOrEqual, x, y),
                        Cmp::Gt => b.ins().fcmp(FloatCC::GreaterThan, x, y),
                        Cmp::Ge => b.ins().fcmp(FloatCC::GreaterThanOrEqual, x, y),
                        Cmp::Eq => b.ins().fcmp(FloatCC::Equal, x, y),
                        Cmp::Ne => b.ins().fcmp(FloatCC::NotEqual, x, y),
                        Cmp::And | Cmp::Or => {
                            let z = b.ins().f64const(0.0);
                            let tx = b.ins().fcmp(FloatCC::NotEqual, x, z);
                            let ty = b.ins().fcmp(FloatCC::NotEqual, y, z);
                            if let Cmp::And = cmp {
                                b.ins().band(tx, ty)
                            } else {
                                b.ins().bor(tx, ty)
                            }
                        }
                    };
                    let v = bool64(&mut b, t);
                    b.def_var(r(d), v);
                }
                Op::RNot(d, x) => {
                    let x = b.use_var(c(x));
                    let z = b.ins().f64const(0.0);
                    let t = b.ins().fcmp(FloatCC::Equal, x, z);
                    let v = bool64(&mut b, t);
                    b.def_var(r(d), v);
                }
                Op::RTest(t, d, x) => {
                    let x = b.use_var(c(x));
                    let t = match t {
                        Test::IntStep => {
                            let z = b.ins().f64const(0.0);
                            b.ins().fcmp(FloatCC::GreaterThan, x, z)
                        }
                        Test::IsInf => {
                            let a = b.ins().fabs(x);
                            let inf = b.ins().f64const(f64::INFINITY);
                            b.ins().fcmp(FloatCC::Equal, a, inf)
                        }
                        Test::IsNan => b.ins().fcmp(FloatCC::Unordered, x, x),
                    };
                    let v = bool64(&mut b, t);
                    b.def_var(r(d), v);
                }
                Op::IPow(d, x, y) => {
                    let (x, y) = (b.use_var(r(x)), b.use_var(r(y)));
                    let fx = b.ins().fcvt_from_sint(types::F64, x);
                    let fy = b.ins().fcvt_from_sint(types::F64, y);
                    let callee = b.ins().iconst(ptr, powf_shim as *const () as i64);
                    let call = b.ins().call_indirect(pow_sig, callee, &[fx, fy]);
                    let v = b.inst_results(call)[0];
                    b.def_var(c(d), v);
                }
                Op::IDivR(d, x, y) => {
                    let (x, y) = (b.use_var(r(x)), b.use_var(r(y)));
                    let fx = b.ins().fcvt_from_sint(types::F64, x);
                    let fy = b.ins().fcvt_from_sint(types::F64, y);
                    let v = b.ins().fdiv(fx, fy);
                    b.def_var(c(d), v);
                }
                Op::Ld { .. }
                | Op::LdG { .. }
                | Op::LdI { .. }
                | Op::St { .. }
                | Op::Lpdf { .. }
                | Op::Target { .. }
                | Op::Bail => unreachable!("checked by `supported`"),
            }
        }
        debug_assert_eq!((po, ao), (self.seg.n_parts as i64, self.seg.n_addrs as i64));
        let exit = b.create_block();
        let next = b.create_block();
        let done = b.ins().icmp(IntCC::SignedGreaterThanOrEqual, it, hi);
        b.ins().brif(done, exit, &[], next, &[]);

        b.switch_to_block(next);
        let it1 = b.ins().iadd_imm(it, 1);
        b.def_var(itv, it1);
        let pp1 = b.ins().iadd_imm(pp, 8 * po);
        b.def_var(ppv, pp1);
        let ap1 = b.ins().iadd_imm(ap, 4 * ao);
        b.def_var(apv, ap1);
        b.ins().jump(header, &[]);

        b.switch_to_block(exit);
        for &x in &cells {
            let v = b.use_var(c(x));
            store(&mut b, v, m, 8 * x as i64);
        }
        for &x in &regs {
            let v = b.use_var(r(x));
            store(&mut b, v, iv, 8 * x as i64);
        }
        super::return_codes(b, fail);
        Some(())
    }
}
