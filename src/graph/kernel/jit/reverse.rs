//! Code generation for the native reverse sweep of a segment (a [`RevFn`](super::RevFn)): the
//! interpreter's `backward` loop over `count` executions of one segment, walking its reverse
//! instructions backwards (Griewank & Walther 2008, §3–4: an assignment `d = f(x, y)` takes
//! the adjoint of `d`, clears it, and adds its recorded partials times it to the adjoints of `x`
//! and `y`). The adjoints of the cells the segment names live in Cranelift variables for the
//! whole sweep; those of containers (recorded addresses) and of tape slots stay in memory, and
//! every recorded address is checked against the memory it indexes. Part of [`super`].

use std::collections::BTreeSet;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Function, InstBuilder, MemFlags, Type, Value, types};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};

use super::super::run::{NONE, TAPE_BIT};
use super::super::{FRESH_X, FRESH_Y, Kernel, ROp, Seg, ZERO_D};

/// The generator of one segment's reverse sweep.
pub(in super::super) struct Gen<'a> {
    pub k: &'a Kernel,
    pub seg: &'a Seg,
    pub ptr: Type,
}

fn load(b: &mut FunctionBuilder, ty: Type, base: Value, off: i64) -> Value {
    match i32::try_from(off) {
        Ok(o) => b.ins().load(ty, MemFlags::trusted(), base, o),
        Err(_) => {
            let p = b.ins().iadd_imm(base, off);
            b.ins().load(ty, MemFlags::trusted(), p, 0)
        }
    }
}

fn store(b: &mut FunctionBuilder, v: Value, base: Value, off: i64) {
    match i32::try_from(off) {
        Ok(o) => {
            b.ins().store(MemFlags::trusted(), v, base, o);
        }
        Err(_) => {
            let p = b.ins().iadd_imm(base, off);
            b.ins().store(MemFlags::trusted(), v, p, 0);
        }
    }
}

impl Gen<'_> {
    /// The cells the reverse instructions name (log density arguments included), or `None` if
    /// one is out of the kernel's range.
    fn cells(&self) -> Option<BTreeSet<u32>> {
        let mut cs = BTreeSet::new();
        for r in &self.seg.rev {
            match *r {
                ROp::Add(d, x, y) | ROp::Sub(d, x, y) | ROp::P2(d, x, y) => cs.extend([d, x, y]),
                ROp::P1(d, x) | ROp::Mov(d, x) => cs.extend([d, x]),
                ROp::Ld(d) | ROp::St(d) | ROp::Target(d) => {
                    cs.insert(d);
                }
                ROp::Pn(d, a, n) => {
                    cs.insert(d);
                    let la = self
                        .k
                        .largs
                        .get(a as usize..(a as usize).checked_add(n as usize)?)?;
                    cs.extend(la.iter().map(|&(c, _)| c));
                }
            }
        }
        cs.iter().all(|&c| c < self.k.n_cells).then_some(cs)
    }

    /// Builds the function into `func` (whose signature is set); `None` if a cell is out of
    /// range (checked before building starts).
    pub fn build(&self, func: &mut Function, fbc: &mut FunctionBuilderContext) -> Option<()> {
        let cells = self.cells()?;
        // Offsets of each reverse instruction's partials and address within one execution's
        // trace (the forward pass records them in instruction order).
        let (mut po, mut ao) = (Vec::new(), Vec::new());
        let (mut np, mut na) = (0i64, 0i64);
        for r in &self.seg.rev {
            po.push(np);
            ao.push(na);
            match *r {
                ROp::P2(..) => np += 2,
                ROp::P1(..) => np += 1,
                ROp::Pn(_, _, n) => np += n as i64,
                ROp::Ld(_) | ROp::St(_) | ROp::Target(_) => na += 1,
                ROp::Add(..) | ROp::Sub(..) | ROp::Mov(..) => {}
            }
        }
        if (np, na) != (self.seg.n_parts as i64, self.seg.n_addrs as i64) {
            return None;
        }
        let ptr = self.ptr;
        let n_cells = self.k.n_cells as i64;
        let mut b = FunctionBuilder::new(func, fbc);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let frame = b.block_params(entry)[0];
        let ka = load(&mut b, ptr, frame, 0);
        let ka_len = load(&mut b, types::I64, frame, 8);
        let adj = load(&mut b, ptr, frame, 16);
        let adj_len = load(&mut b, types::I64, frame, 24);
        let pend = load(&mut b, ptr, frame, 32);
        let aend = load(&mut b, ptr, frame, 40);
        let count = load(&mut b, types::I64, frame, 48);
        let terms_out = load(&mut b, types::I64, frame, 56);
        // Recorded kernel addresses `a` must satisfy n_cells <= a < ka_len: as one unsigned
        // comparison, a − n_cells < ka_len − n_cells (`backward` asserts n_cells <= ka_len).
        let mem_room = b.ins().iadd_imm(ka_len, -n_cells);
        let mut cv: Vec<Option<Variable>> = vec![None; self.k.n_cells as usize];
        for &c in &cells {
            let v = b.declare_var(types::F64);
            let x = load(&mut b, types::F64, ka, 8 * c as i64);
            b.def_var(v, x);
            cv[c as usize] = Some(v);
        }
        let c = |x: u32| cv[x as usize].expect("named cell");
        // The last execution's trace starts `np` partials and `na` addresses before the ends.
        let pbv = b.declare_var(ptr);
        let pb0 = b.ins().iadd_imm(pend, -8 * np);
        b.def_var(pbv, pb0);
        let abv = b.declare_var(ptr);
        let ab0 = b.ins().iadd_imm(aend, -4 * na);
        b.def_var(abv, ab0);
        let iv = b.declare_var(types::I64);
        let zero_i = b.ins().iconst(types::I64, 0);
        b.def_var(iv, zero_i);
        // The last kernel adjoint written (`read`, `write` below), none yet.
        let (la, lv) = (b.declare_var(types::I64), b.declare_var(types::F64));
        let none = b.ins().iconst(types::I64, -1);
        b.def_var(la, none);
        let z0 = b.ins().f64const(0.0);
        b.def_var(lv, z0);
        let fail = b.create_block();
        let header = b.create_block();
        b.ins().jump(header, &[]);

        b.switch_to_block(header);
        let pb = b.use_var(pbv);
        let ab = b.use_var(abv);
        let zero = b.ins().f64const(0.0);
        let check = |b: &mut FunctionBuilder, ok: Value| {
            let cont = b.create_block();
            b.ins().brif(ok, cont, &[], fail, &[]);
            b.switch_to_block(cont);
        };
        // g ← adjoint of `d` (+0 when the marks `f` say so), which is cleared.
        let take = |b: &mut FunctionBuilder, d: u32, f: u8| -> Value {
            let g = if f & ZERO_D != 0 {
                zero
            } else {
                b.use_var(c(d))
            };
            b.def_var(c(d), zero);
            g
        };
        // adjoint of `x` += p · g, or = p · g when `fresh` (`Kernel::mark_fresh`)
        let acc = |b: &mut FunctionBuilder, x: u32, p: Option<Value>, g: Value, fresh: bool| {
            let t = match p {
                Some(p) => b.ins().fmul(p, g),
                None => g,
            };
            let s = if fresh {
                t
            } else {
                let a = b.use_var(c(x));
                b.ins().fadd(a, t)
            };
            b.def_var(c(x), s);
        };
        // The address of kernel adjoint `a` (an i32 recorded address), checked; and `a` as i64.
        let mem_at = |b: &mut FunctionBuilder, a: Value| -> (Value, Value) {
            let a = b.ins().uextend(types::I64, a);
            let rel = b.ins().iadd_imm(a, -n_cells);
            let ok = b.ins().icmp(IntCC::UnsignedLessThan, rel, mem_room);
            check(b, ok);
            let off = b.ins().ishl_imm(a, 3);
            (a, b.ins().iadd(ka, off))
        };
        // The last kernel adjoint written, (address, value), kept in step with memory: a read
        // of the adjoint just written takes the value from a register (the loop-carried adjoint
        // of `h[t - 1]`), through a predicted branch instead of a dependency on the store.
        // The kernel adjoint at address `a` (i64), pointer `p`.
        let read = |b: &mut FunctionBuilder, a: Value, p: Value| -> Value {
            let t = b.declare_var(types::F64);
            let (hit, miss, join) = (b.create_block(), b.create_block(), b.create_block());
            let l = b.use_var(la);
            let same = b.ins().icmp(IntCC::Equal, a, l);
            b.ins().brif(same, hit, &[], miss, &[]);
            b.switch_to_block(hit);
            let v = b.use_var(lv);
            b.def_var(t, v);
            b.ins().jump(join, &[]);
            b.switch_to_block(miss);
            let v = b.ins().load(types::F64, MemFlags::trusted(), p, 0);
            b.def_var(t, v);
            b.ins().jump(join, &[]);
            b.switch_to_block(join);
            b.use_var(t)
        };
        let write = |b: &mut FunctionBuilder, a: Value, p: Value, v: Value| {
            b.ins().store(MemFlags::trusted(), v, p, 0);
            b.def_var(la, a);
            b.def_var(lv, v);
        };
        // The address of tape adjoint `slot` (i64), checked.
        let adj_at = |b: &mut FunctionBuilder, slot: Value| -> Value {
            let ok = b.ins().icmp(IntCC::UnsignedLessThan, slot, adj_len);
            check(b, ok);
            let off = b.ins().ishl_imm(slot, 3);
            b.ins().iadd(adj, off)
        };
        for (j, r) in self.seg.rev.iter().enumerate().rev() {
            let (p0, a0) = (8 * po[j], 4 * ao[j]);
            let f = self.seg.fresh[j];
            let (fx, fy) = (f & FRESH_X != 0, f & FRESH_Y != 0);
            match *r {
                ROp::Add(d, x, y) => {
                    let g = take(&mut b, d, f);
                    acc(&mut b, x, None, g, fx);
                    acc(&mut b, y, None, g, fy);
                }
                ROp::Sub(d, x, y) => {
                    let g = take(&mut b, d, f);
                    acc(&mut b, x, None, g, fx);
                    let s = if fy {
                        b.ins().fneg(g)
                    } else {
                        let a = b.use_var(c(y));
                        b.ins().fsub(a, g)
                    };
                    b.def_var(c(y), s);
                }
                ROp::P2(d, x, y) => {
                    let px = load(&mut b, types::F64, pb, p0);
                    let py = load(&mut b, types::F64, pb, p0 + 8);
                    let g = take(&mut b, d, f);
                    acc(&mut b, x, Some(px), g, fx);
                    acc(&mut b, y, Some(py), g, fy);
                }
                ROp::P1(d, x) => {
                    let px = load(&mut b, types::F64, pb, p0);
                    let g = take(&mut b, d, f);
                    acc(&mut b, x, Some(px), g, fx);
                }
                ROp::Mov(d, x) => {
                    let g = take(&mut b, d, f);
                    acc(&mut b, x, None, g, fx);
                }
                ROp::Pn(d, a, n) => {
                    let g = take(&mut b, d, f);
                    for jj in 0..n {
                        let x = self.k.largs[(a + jj) as usize].0;
                        let p = load(&mut b, types::F64, pb, p0 + 8 * jj as i64);
                        acc(&mut b, x, Some(p), g, false);
                    }
                }
                ROp::Ld(d) => {
                    // NONE: a constant; TAPE_BIT: a tape slot; else kernel memory.
                    let a = load(&mut b, types::I32, ab, a0);
                    let g = take(&mut b, d, f);
                    let (some, tape, mem, next) = (
                        b.create_block(),
                        b.create_block(),
                        b.create_block(),
                        b.create_block(),
                    );
                    let is_none = b.ins().icmp_imm(IntCC::Equal, a, NONE as i64);
                    b.ins().brif(is_none, next, &[], some, &[]);
                    b.switch_to_block(some);
                    let t = b.ins().band_imm(a, TAPE_BIT as i64);
                    b.ins().brif(t, tape, &[], mem, &[]);
                    b.switch_to_block(tape);
                    let s = b.ins().band_imm(a, !TAPE_BIT as i64);
                    let s = b.ins().uextend(types::I64, s);
                    let p = adj_at(&mut b, s);
                    let v = b.ins().load(types::F64, MemFlags::trusted(), p, 0);
                    let v = b.ins().fadd(v, g);
                    b.ins().store(MemFlags::trusted(), v, p, 0);
                    b.ins().jump(next, &[]);
                    b.switch_to_block(mem);
                    let (a, p) = mem_at(&mut b, a);
                    let v = read(&mut b, a, p);
                    let v = b.ins().fadd(v, g);
                    write(&mut b, a, p, v);
                    b.ins().jump(next, &[]);
                    b.switch_to_block(next);
                }
                ROp::Target(x) => {
                    let a = load(&mut b, types::I32, ab, a0);
                    let (some, next) = (b.create_block(), b.create_block());
                    let is_none = b.ins().icmp_imm(IntCC::Equal, a, NONE as i64);
                    b.ins().brif(is_none, next, &[], some, &[]);
                    b.switch_to_block(some);
                    // As the interpreter: the slot terms_out + a in u32 arithmetic.
                    let t32 = b.ins().ireduce(types::I32, terms_out);
                    let s = b.ins().iadd(t32, a);
                    let s = b.ins().uextend(types::I64, s);
                    let p = adj_at(&mut b, s);
                    let v = b.ins().load(types::F64, MemFlags::trusted(), p, 0);
                    acc(&mut b, x, None, v, fx);
                    b.ins().jump(next, &[]);
                    b.switch_to_block(next);
                }
                ROp::St(s) => {
                    let a = load(&mut b, types::I32, ab, a0);
                    let (a, p) = mem_at(&mut b, a);
                    let g = read(&mut b, a, p);
                    write(&mut b, a, p, zero);
                    acc(&mut b, s, None, g, fx);
                }
            }
        }
        let exit = b.create_block();
        let next = b.create_block();
        let i = b.use_var(iv);
        let i1 = b.ins().iadd_imm(i, 1);
        let done = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, i1, count);
        b.ins().brif(done, exit, &[], next, &[]);

        b.switch_to_block(next);
        b.def_var(iv, i1);
        let pb1 = b.ins().iadd_imm(pb, -8 * np);
        b.def_var(pbv, pb1);
        let ab1 = b.ins().iadd_imm(ab, -4 * na);
        b.def_var(abv, ab1);
        b.ins().jump(header, &[]);

        b.switch_to_block(exit);
        for &x in &cells {
            let v = b.use_var(c(x));
            store(&mut b, v, ka, 8 * x as i64);
        }
        super::return_codes(b, fail);
        Some(())
    }
}
