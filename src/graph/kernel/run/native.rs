//! The hand-over of a stable loop to its native code (feature `jit`): container views for
//! native code, the trace reserved and committed, Ctrl-C looked at between blocks of
//! iterations. Part of `super` (`Rt::seg`).

use super::super::Seg;
use super::super::jit::{FwdFn, FwdFrame, JView};
use super::{CRt, LOOP_CHECK_EVERY, Op, Stop, TAPE_BIT, View};

/// Runs iterations `it ..= hi` of loop body `s` with its native code `f` (the stable regime of
/// `Rt::seg`: no flag updates), in blocks of [`LOOP_CHECK_EVERY`] iterations between looks at
/// the Ctrl-C flag, appending the trace (when `rec`) to `parts` and `addrs` as the interpreter
/// would. `Ok(false)` (nothing run) when a container's view cannot be given to native code (a
/// parameter container whose slots are not contiguous, or a store into a container not held in
/// kernel memory); `Err(Stop)` when the native code stops (index out of range, overflow).
///
/// # Safety
/// `f` is the native forward pass of segment `s` of the kernel whose run `crt`, `m` and `iv`
/// belong to (one view per container, memory of at least `n_cells` cells plus the written
/// containers, `n_regs` registers): the generator only names cells, registers and containers of
/// that kernel (`jit::forward`), and writes `s.n_parts` partials and `s.n_addrs` addresses per
/// iteration when recording.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn native_loop(
    f: FwdFn,
    s: &Seg,
    crt: &[CRt],
    m: &mut [f64],
    iv: &mut [i64],
    val: &[f64],
    parts: &mut Vec<f64>,
    addrs: &mut Vec<u32>,
    mut it: i64,
    hi: i64,
    rec: bool,
) -> Result<bool, Stop> {
    // Stores go to kernel memory only.
    for op in &s.ops {
        if let Op::St1 { c, .. } = *op
            && !matches!(crt[c as usize].view, View::Mem(_))
        {
            return Ok(false);
        }
    }
    const NO_VIEW: JView = JView {
        ptr: std::ptr::null(),
        len: 0,
        abase: 0,
        konst: 1,
    };
    let mut stack = [NO_VIEW; 16];
    let mut heap = Vec::new();
    let views: &mut [JView] = if crt.len() <= stack.len() {
        &mut stack[..crt.len()]
    } else {
        heap.resize(crt.len(), NO_VIEW);
        &mut heap
    };
    let mp = m.as_mut_ptr();
    for (v, c) in views.iter_mut().zip(crt) {
        // Every view addresses exactly `len` elements of live memory, and its recorded
        // addresses `abase + offset` stay below `TAPE_BIT` (for cells) or tag a tape slot.
        *v = match c.view {
            View::Const(xs) => JView {
                ptr: xs.as_ptr(),
                len: xs.len() as u64,
                abase: 0,
                konst: 1,
            },
            View::Var(sl) => match sl.contiguous() {
                Some(st)
                    if (st as usize)
                        .checked_add(c.len)
                        .is_some_and(|e| e <= val.len() && e < TAPE_BIT as usize) =>
                {
                    JView {
                        // SAFETY: `st + len <= val.len()` (checked).
                        ptr: unsafe { val.as_ptr().add(st as usize) },
                        len: c.len as u64,
                        abase: st | TAPE_BIT,
                        konst: 0,
                    }
                }
                _ => return Ok(false),
            },
            View::Mem(b) => {
                if b.checked_add(c.len).is_none_or(|e| e > m.len()) {
                    return Ok(false);
                }
                JView {
                    // SAFETY: `b + len <= m.len()` (checked).
                    ptr: unsafe { mp.add(b) },
                    len: c.len as u64,
                    abase: b as u32,
                    konst: 0,
                }
            }
        };
    }
    let (np, na) = (s.n_parts as usize, s.n_addrs as usize);
    loop {
        let end = hi.min(it.saturating_add(LOOP_CHECK_EVERY - 1));
        let n = (end - it + 1) as usize;
        if rec {
            parts.reserve(np * n);
            addrs.reserve(na * n);
        }
        let mut frame = FwdFrame {
            m: mp,
            iv: iv.as_mut_ptr(),
            // SAFETY: one past the initialised elements, within the allocation.
            parts: unsafe { parts.as_mut_ptr().add(parts.len()) },
            // SAFETY: as for `parts`.
            addrs: unsafe { addrs.as_mut_ptr().add(addrs.len()) },
            views: views.as_ptr(),
            it,
            hi: end,
        };
        // SAFETY: the caller's contract for `f`, `m`, `iv` and the views built above; room for
        // `n` iterations of trace was reserved (when recording; else nothing is written).
        let rc = unsafe { f(&mut frame) };
        if rc != 0 {
            return Err(Stop);
        }
        if rec {
            // SAFETY: the native code initialised `np` partials and `na` addresses for each of
            // the `n` iterations, within the capacity reserved above.
            unsafe {
                parts.set_len(parts.len() + np * n);
                addrs.set_len(addrs.len() + na * n);
            }
        }
        if end == hi {
            return Ok(true);
        }
        it = end + 1;
        if crate::inference::interrupt::requested() {
            return Err(Stop);
        }
    }
}
