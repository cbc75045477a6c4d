//! Per-row gradients from ONE reverse pass over a batch tape ("adjoint lanes").
//!
//! The per-observation methods (VOGN, `specs/survey_vi.md` §12; the empirical Fisher of the
//! Gauss–Newton check) need g_i = ∇ℓ_i for every row i of a batch, or Σ_i g_i². One reverse
//! pass per row (the loop of `graph::batch`) pays the interpreter and the forward pass M times.
//! Here the batch is evaluated once, with every likelihood term recorded per row (its slot
//! *tagged* with the row, `graph::per_row`), and the reverse sweep carries, for every slot, the
//! adjoint of each row separately — but stores it sparsely:
//!
//! - a slot reached only from row r's terms (every row-indexed value: the rows of `X · W`, of
//!   `tanh(…)`, of a linear predictor) holds ONE number, ∂ℓ_r/∂slot, and the row r;
//! - a slot reached from several rows (the parameters and row-free intermediates such as a
//!   broadcast scale σ) holds a lane of M numbers, ∂ℓ_r/∂slot for r = 1..M.
//!
//! Rows are collapsed only where a row-indexed adjoint meets a row-free input: then the
//! contribution goes to that row's lane. This is the per-example gradient idea of Goodfellow
//! (2015, "Efficient per-example gradient computations", arXiv:1510.01799: for Z = XW the
//! per-row gradient of W is x_i ⊗ δ_i, δ_i the adjoint of row i of Z) and of BackPACK's
//! individual gradients (Dangel, Kunstner & Hennig 2020, ICLR, §2), applied to every node kind
//! of this tape rather than to named layer types. Its cost is that of one reverse pass plus
//! M numbers per row-free slot; the lanes at the parameter slots are the M × d per-row
//! gradients.
//!
//! The result is exact (the same sums in a different order) whenever every likelihood term is
//! tagged. A gradient path from the log density to a parameter that passes no tagged slot (a
//! reduction over rows such as `dot_self(y - mu)`, a fused GLM, a multivariate density) is
//! detected — its adjoint reaches a parameter untagged, or mixes with per-row adjoints — and
//! the pass reports [`Unsupported`], so the caller falls back to the per-row loop. Scalar
//! kernels and factorisation nodes are not handled (also [`Unsupported`]).

use super::{Ew, Node, Opnd, Tape};

/// No adjoint reached the slot.
const NONE: u32 = u32::MAX;
/// The adjoint is not (yet) attributed to a row: downstream of the tagged likelihood terms
/// (the sum nodes of the log density).
const COMMON: u32 = u32::MAX - 1;
/// The slot has a lane of per-row adjoints.
const MANY: u32 = u32::MAX - 2;

/// Why [`Tape::per_row_gradient`] could not attribute the gradient to rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unsupported(pub &'static str);

/// The sparse per-row adjoints of one sweep.
struct Lanes {
    /// M.
    m: usize,
    /// Per slot: [`NONE`], [`COMMON`], [`MANY`] or the row that owns its adjoint.
    own: Vec<u32>,
    /// Per slot: the adjoint when `own` is a row or [`COMMON`].
    a: Vec<f64>,
    /// Per slot: the lane index into `pool` when `own` is [`MANY`].
    lane: Vec<u32>,
    /// Lanes of M adjoints.
    pool: Vec<f64>,
    /// Per slot: the row of a tagged likelihood term, else [`NONE`].
    tag: Vec<u32>,
    fail: Option<&'static str>,
}

impl Lanes {
    /// Adds `v` to the adjoint of slot `s` in row `r` (or unattributed, `r` = [`COMMON`]).
    #[inline]
    fn add(&mut self, s: u32, r: u32, v: f64) {
        if v == 0.0 {
            return;
        }
        let s = s as usize;
        let mut r = r;
        if r == COMMON {
            let t = self.tag[s];
            if t == NONE {
                match self.own[s] {
                    NONE => {
                        self.own[s] = COMMON;
                        self.a[s] = v;
                    }
                    COMMON => self.a[s] += v,
                    _ => self.fail = Some("an untagged path meets per-row adjoints"),
                }
                return;
            }
            r = t;
        }
        match self.own[s] {
            NONE => {
                self.own[s] = r;
                self.a[s] = v;
            }
            o if o == r => self.a[s] += v,
            MANY => self.pool[self.lane[s] as usize * self.m + r as usize] += v,
            COMMON => self.fail = Some("an untagged path meets per-row adjoints"),
            q => {
                let ix = self.pool.len() / self.m;
                self.pool.resize(self.pool.len() + self.m, 0.0);
                self.pool[ix * self.m + q as usize] = self.a[s];
                self.pool[ix * self.m + r as usize] += v;
                self.lane[s] = ix as u32;
                self.own[s] = MANY;
            }
        }
    }

    /// The offset in `pool` of slot `s`'s lane, turning its adjoint into a lane first (a
    /// slot with no adjoint gets a lane of zeros); `None` for an unattributed adjoint. Lets
    /// the dense nodes add into a parameter's lanes without a branch per entry.
    fn lane_offset(&mut self, s: u32) -> Option<usize> {
        let s = s as usize;
        match self.own[s] {
            MANY => Some(self.lane[s] as usize * self.m),
            COMMON => None,
            o => {
                let ix = self.pool.len() / self.m;
                self.pool.resize(self.pool.len() + self.m, 0.0);
                if o != NONE {
                    self.pool[ix * self.m + o as usize] = self.a[s];
                }
                self.lane[s] = ix as u32;
                self.own[s] = MANY;
                Some(ix * self.m)
            }
        }
    }

    /// Lane offsets of the `n` slots from `start` (all or none).
    fn lane_offsets(&mut self, start: u32, n: usize) -> Option<Vec<usize>> {
        (0..n as u32).map(|i| self.lane_offset(start + i)).collect()
    }

    /// The nonzero adjoints of slot `o` as (row or [`COMMON`], value) pairs, into `buf`.
    #[inline]
    fn read(&self, o: usize, buf: &mut Vec<(u32, f64)>) {
        buf.clear();
        match self.own[o] {
            NONE => {}
            MANY => {
                let b = self.lane[o] as usize * self.m;
                for (r, &v) in self.pool[b..b + self.m].iter().enumerate() {
                    if v != 0.0 {
                        buf.push((r as u32, v));
                    }
                }
            }
            r => buf.push((r, self.a[o])),
        }
    }
}

/// The slot of element `i` of an elementwise operand.
#[inline]
fn ew_slot(e: Ew, i: usize) -> Option<u32> {
    match e {
        Ew::Const => None,
        Ew::Range(s) => Some(s + i as u32),
        Ew::Bcast(s) => Some(s),
        Ew::RowRep(s, rows) => Some(s + (i / (rows as usize).max(1)) as u32),
    }
}

/// True when each of the `n` slots from `out` has no adjoint or the adjoint of one row.
fn all_rows(ln: &Lanes, out: usize, n: usize) -> bool {
    ln.own[out..out + n]
        .iter()
        .all(|&o| o == NONE || (o as usize) < ln.m)
}

impl Tape {
    /// The values of a dense operand (column-major).
    fn opnd_values(&self, o: Opnd, len: usize) -> &[f64] {
        match o {
            Opnd::Var(s) => &self.val[s as usize..s as usize + len],
            Opnd::Data(d) => &self.mats[d as usize][..len],
        }
    }

    /// Per-row gradients of the recorded log density with respect to slots `0 .. d`, where
    /// `d = grads.len() / m`: seeds ∂/∂slot = 1 at `seeds` (the terms of the log density, as
    /// [`Tape::gradient`]) and attributes the adjoint that flows into each tagged slot
    /// (`tags`: slot, row < `m`) to that row. Row r's gradient is written into
    /// `grads[r·d .. (r+1)·d]`; the rows sum to the gradient [`Tape::gradient`] gives when
    /// every path passes a tagged slot. Module docs: the method and its sources.
    ///
    /// Errors: [`Unsupported`] when part of the gradient reaches a parameter without passing
    /// a tagged slot, or the tape holds a kernel or factorisation node.
    pub(crate) fn per_row_gradient(
        &self,
        seeds: &[u32],
        tags: &[(u32, u32)],
        m: usize,
        grads: &mut [f64],
    ) -> Result<(), Unsupported> {
        let n_slots = self.val.len();
        let d = grads.len() / m.max(1);
        let mut ln = Lanes {
            m,
            own: vec![NONE; n_slots],
            a: vec![0.0; n_slots],
            lane: vec![0; n_slots],
            pool: Vec::new(),
            tag: vec![NONE; n_slots],
            fail: None,
        };
        for &(s, r) in tags {
            debug_assert!((r as usize) < m);
            ln.tag[s as usize] = r;
        }
        for &s in seeds {
            ln.add(s, COMMON, 1.0);
        }
        let mut buf: Vec<(u32, f64)> = Vec::new();
        for node in self.nodes.iter().rev() {
            match *node {
                Node::Lin { out, n, k, base } => {
                    let (out, k, base) = (out as usize, k as usize, base as usize);
                    for i in 0..n as usize {
                        ln.read(out + i, &mut buf);
                        let e = base + i * k;
                        for &(r, v) in &buf {
                            for (&inp, &p) in self.ins[e..e + k].iter().zip(&self.parts[e..e + k]) {
                                ln.add(inp, r, p * v);
                            }
                        }
                    }
                }
                Node::Map { out, x, n, p } => {
                    for i in 0..n as usize {
                        ln.read(out as usize + i, &mut buf);
                        let d = self.cparts[p as usize + i];
                        for &(r, v) in &buf {
                            ln.add(x + i as u32, r, d * v);
                        }
                    }
                }
                Node::Map2 { out, x, y, n, p } => {
                    let n = n as usize;
                    let mut blocks = [(Ew::Const, 0usize); 2];
                    let mut q = p as usize;
                    for (b, e) in blocks.iter_mut().zip([x, y]) {
                        if e != Ew::Const {
                            *b = (e, q);
                            q += n;
                        }
                    }
                    for i in 0..n {
                        ln.read(out as usize + i, &mut buf);
                        for &(e, blk) in &blocks {
                            let Some(s) = ew_slot(e, i) else { continue };
                            let d = self.cparts[blk + i];
                            for &(r, v) in &buf {
                                ln.add(s, r, d * v);
                            }
                        }
                    }
                }
                Node::Affine2 {
                    out,
                    x,
                    y,
                    n,
                    cx,
                    cy,
                } => {
                    for i in 0..n as usize {
                        ln.read(out as usize + i, &mut buf);
                        for (e, c) in [(x, cx), (y, cy)] {
                            let Some(s) = ew_slot(e, i) else { continue };
                            for &(r, v) in &buf {
                                ln.add(s, r, c * v);
                            }
                        }
                    }
                }
                Node::Dot { out, x, n, p } => {
                    ln.read(out as usize, &mut buf);
                    let parts = &self.cparts[p as usize..p as usize + n as usize];
                    for &(r, v) in &buf {
                        for (i, &d) in parts.iter().enumerate() {
                            ln.add(x + i as u32, r, d * v);
                        }
                    }
                }
                Node::MatMul { out, a, b, m, k, n } => {
                    let (out, mm, k, n) = (out as usize, m as usize, k as usize, n as usize);
                    let av = self.opnd_values(a, mm * k);
                    let bv = self.opnd_values(b, k * n);
                    // B (the weights) as lanes when the outputs belong to single rows.
                    let b_lanes = match b {
                        Opnd::Var(sb) if all_rows(&ln, out, mm * n) => ln.lane_offsets(sb, k * n),
                        _ => None,
                    };
                    for j in 0..n {
                        for i in 0..mm {
                            ln.read(out + i + j * mm, &mut buf);
                            for &(r, v) in &buf {
                                if let Opnd::Var(sa) = a {
                                    for l in 0..k {
                                        ln.add(sa + (i + l * mm) as u32, r, v * bv[l + j * k]);
                                    }
                                }
                                if let Some(offs) = &b_lanes {
                                    let offs = &offs[j * k..(j + 1) * k];
                                    for (l, &o) in offs.iter().enumerate() {
                                        ln.pool[o + r as usize] += av[i + l * mm] * v;
                                    }
                                } else if let Opnd::Var(sb) = b {
                                    for l in 0..k {
                                        ln.add(sb + (l + j * k) as u32, r, av[i + l * mm] * v);
                                    }
                                }
                            }
                        }
                    }
                }
                Node::DenseTanh {
                    out,
                    x,
                    w,
                    b,
                    n,
                    d,
                    h,
                } => {
                    let (out, n, dd, h) = (out as usize, n as usize, d as usize, h as usize);
                    let xv = self.opnd_values(x, n * dd);
                    let wv = self.opnd_values(w, dd * h);
                    if all_rows(&ln, out, n * h)
                        && let Opnd::Var(sw) = w
                        && let Some(w_lanes) = ln.lane_offsets(sw, dd * h)
                    {
                        // Every output belongs to one row (the usual case): W's and b's lanes
                        // take x_i ⊗ δ_i and δ_i directly (Goodfellow 2015).
                        let b_lanes = match b {
                            Some(Opnd::Var(sb)) => ln.lane_offsets(sb, h),
                            _ => None,
                        };
                        for j in 0..h {
                            for i in 0..n {
                                let o = out + i + j * n;
                                let r = ln.own[o];
                                if r == NONE {
                                    continue;
                                }
                                let z = self.val[o];
                                let delta = (1.0 - z * z) * ln.a[o];
                                let r = r as usize;
                                match (&b_lanes, b) {
                                    (Some(bl), _) => ln.pool[bl[j] + r] += delta,
                                    (None, Some(Opnd::Var(sb))) => {
                                        ln.add(sb + j as u32, r as u32, delta)
                                    }
                                    _ => {}
                                }
                                if let Opnd::Var(sx) = x {
                                    for l in 0..dd {
                                        ln.add(
                                            sx + (i + l * n) as u32,
                                            r as u32,
                                            delta * wv[l + j * dd],
                                        );
                                    }
                                }
                                for (l, &wo) in w_lanes[j * dd..(j + 1) * dd].iter().enumerate() {
                                    ln.pool[wo + r] += xv[i + l * n] * delta;
                                }
                            }
                        }
                        if let Some(f) = ln.fail {
                            return Err(Unsupported(f));
                        }
                        continue;
                    }
                    for j in 0..h {
                        for i in 0..n {
                            let o = out + i + j * n;
                            ln.read(o, &mut buf);
                            let z = self.val[o];
                            for &(r, v) in &buf {
                                // tanh' = 1 − z², as in `dense::backward`.
                                let delta = (1.0 - z * z) * v;
                                if let Some(Opnd::Var(sb)) = b {
                                    ln.add(sb + j as u32, r, delta);
                                }
                                if let Opnd::Var(sx) = x {
                                    for l in 0..dd {
                                        ln.add(sx + (i + l * n) as u32, r, delta * wv[l + j * dd]);
                                    }
                                }
                                if let Opnd::Var(sw) = w {
                                    for l in 0..dd {
                                        ln.add(sw + (l + j * dd) as u32, r, xv[i + l * n] * delta);
                                    }
                                }
                            }
                        }
                    }
                }
                Node::Kernel(_) => return Err(Unsupported("a scalar-kernel node")),
                Node::Linalg { .. } => return Err(Unsupported("a factorisation node")),
            }
            if let Some(f) = ln.fail {
                return Err(Unsupported(f));
            }
        }
        grads.iter_mut().for_each(|g| *g = 0.0);
        for j in 0..d.min(n_slots) {
            match ln.own[j] {
                NONE => {}
                COMMON => {
                    return Err(Unsupported(
                        "part of the gradient reaches a parameter without a per-row term",
                    ));
                }
                MANY => {
                    let b = ln.lane[j] as usize * m;
                    for r in 0..m {
                        grads[r * d + j] = ln.pool[b + r];
                    }
                }
                r => grads[r as usize * d + j] = ln.a[j],
            }
        }
        Ok(())
    }
}
