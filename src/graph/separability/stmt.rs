//! Statements and declarations of the separability analysis (`super`): row loops, assignments
//! (state carried between rows), `~` and `target +=` terms and their classification.

use std::collections::HashMap;

use super::WHY_MIX;
use super::{Analyser, Block, K, R, Var, err, join, leading_size, mentions, other_sizes, show};
use crate::syntax::Span;
use crate::syntax::ast::{BinOp, Expr, ExprKind, Index, SizedBase, Stmt, StmtKind, UnOp, VarDecl};

impl Analyser<'_> {
    pub(super) fn top_stmt(&mut self, s: &Stmt, block: Block) -> R<()> {
        match &s.kind {
            StmtKind::Decl(d) => self.decl(d, block),
            _ => self.stmt(s),
        }
    }

    /// A declaration in any block.
    pub(super) fn decl(&mut self, d: &VarDecl, block: Block) -> R<()> {
        let name = &d.name.name;
        if block == Block::Data && *name == self.axis {
            self.bind(
                name,
                Var {
                    kind: K::Size,
                    scalar: true,
                    rank: 0,
                    array_rows: false,
                    level: 0,
                },
            );
            return Ok(());
        }
        let rows = match leading_size(&d.ty) {
            Some(e) => self.expr(e)? == K::Size,
            None => false,
        };
        for e in other_sizes(&d.ty) {
            if self.expr(e)? == K::Size {
                return Err(err(
                    e.span,
                    format!(
                        "`{name}` has the observation axis `{}` as a size that is not its first",
                        self.axis
                    ),
                    "only the leading dimension of a variable can be sliced into batches",
                    "store it with the rows first (e.g. transposed), so that row i is observation i",
                ));
            }
        }
        if block == Block::Parameters && rows {
            return Err(err(
                d.ty.span,
                format!(
                    "parameter `{name}` is sized by the observation axis `{}`",
                    self.axis
                ),
                "a per-observation parameter (a local latent variable) is only partly updated by \
                 each batch, which the N/M scaling of the likelihood does not account for",
                "fit this model without --batch-size",
            ));
        }
        let c = &d.ty.constraint;
        for e in [&c.lower, &c.upper, &c.offset, &c.multiplier]
            .into_iter()
            .flatten()
        {
            let k = self.val(e)?;
            if k != K::Const && !(rows && k == K::Rows) {
                return Err(err(
                    e.span,
                    format!("the bound `{}` depends on the rows", show(e)),
                    WHY_MIX,
                    "use bounds that do not depend on the rows",
                ));
            }
        }
        let init = match &d.init {
            Some(e) => Some((self.val(e)?, e)),
            None => None,
        };
        let scalar =
            matches!(d.ty.base, SizedBase::Int | SizedBase::Real) && d.ty.array_dims.is_empty();
        let kind = if rows {
            if let Some((k @ K::Row, e)) = init {
                let _ = k;
                return Err(err(
                    e.span,
                    format!("`{name}` has one entry per row but is set from a single row"),
                    WHY_MIX,
                    "set row n of it inside the loop over rows: `x[n] = ...`",
                ));
            }
            K::Rows
        } else {
            match init {
                None => K::Const,
                Some((K::Rows, e)) => {
                    return Err(err(
                        e.span,
                        format!(
                            "`{name}` holds a value with one entry per row, but its leading size is \
                             not `{}`",
                            self.axis
                        ),
                        "only variables whose leading size is the observation axis are sliced \
                         into batches",
                        &format!("declare it with leading size `{}`", self.axis),
                    ));
                }
                Some((k, _)) => k,
            }
        };
        if rows && matches!(block, Block::Data | Block::TransformedData) && self.scopes.len() == 1 {
            self.sliced.push(name.clone());
        }
        self.bind(
            name,
            Var {
                kind,
                scalar,
                rank: d.ty.array_dims.len()
                    + match d.ty.base {
                        SizedBase::Int | SizedBase::Real => 0,
                        SizedBase::Vector(_)
                        | SizedBase::RowVector(_)
                        | SizedBase::Simplex(_)
                        | SizedBase::Ordered(_)
                        | SizedBase::PositiveOrdered(_) => 1,
                        _ => 2,
                    },
                array_rows: rows && !d.ty.array_dims.is_empty(),
                level: self.level,
            },
        );
        Ok(())
    }

    /// Records a log-density term of the given kind.
    pub(super) fn term(&mut self, k: K) {
        if k == K::Const {
            self.terms.0 = true;
        } else {
            self.terms.1 = true;
        }
    }

    /// The linear parts of a `target +=` expression; each is a term (a sum over rows may appear
    /// only here).
    pub(super) fn target_parts(&mut self, e: &Expr, out: &mut Vec<(K, Span)>) -> R<()> {
        match &e.kind {
            ExprKind::Binary {
                op: BinOp::Add | BinOp::Sub,
                lhs,
                rhs,
            } => {
                self.target_parts(lhs, out)?;
                self.target_parts(rhs, out)
            }
            ExprKind::Unary {
                op: UnOp::Neg | UnOp::Plus,
                operand,
            } => self.target_parts(operand, out),
            ExprKind::Binary {
                op: BinOp::Mul,
                lhs,
                rhs,
            } if self.known_scalar(lhs) && self.val(lhs)? == K::Const => {
                self.target_parts(rhs, out)
            }
            ExprKind::Binary {
                op: BinOp::Mul | BinOp::Div,
                lhs,
                rhs,
            } if self.known_scalar(rhs) && self.val(rhs)? == K::Const => {
                self.target_parts(lhs, out)
            }
            _ => {
                let k = match self.expr(e)? {
                    K::RowSum => K::RowSum,
                    _ => self.val(e)?,
                };
                out.push((k, e.span));
                Ok(())
            }
        }
    }

    pub(super) fn stmt(&mut self, s: &Stmt) -> R<()> {
        match &s.kind {
            StmtKind::Decl(d) => self.decl(d, Block::Other),
            StmtKind::Assign { lhs, rhs, .. } => {
                let rk = match self.expr(rhs)? {
                    K::RowSum => self.val(rhs)?,
                    _ => self.val(rhs)?,
                };
                let Some(var) = self.lookup(&lhs.name.name) else {
                    return Ok(());
                };
                let name = &lhs.name.name;
                let row = self.row_loop.clone();
                let first = lhs.indices.first().and_then(|g| g.first());
                if var.kind == K::Rows {
                    let by_row = matches!(first, Some(Index::Single(x))
                        if matches!(&x.kind, ExprKind::Var(v) if Some(v) == row.as_ref()));
                    let ok = match (first, by_row) {
                        (None | Some(Index::All), _) => matches!(rk, K::Rows | K::Const),
                        (_, true) => matches!(rk, K::Row | K::Const),
                        (Some(Index::Single(x)), false)
                            if row.as_ref().is_some_and(|r| mentions(x, r)) =>
                        {
                            return Err(err(
                                x.span,
                                format!(
                                    "`{name}[{}]` is set in the iteration of another row: the \
                                     loop carries state from row to row",
                                    show(x)
                                ),
                                "a batch holds M randomly chosen rows, not consecutive ones; a \
                                 recursion over rows does not split into independent per-row \
                                 terms, and the N/M-scaled batch sum would be biased",
                                "compute each row from its own data only (pass lagged values as \
                                 data), or fit without --batch-size",
                            ));
                        }
                        _ => false,
                    };
                    if !ok {
                        return Err(err(
                            s.span,
                            format!("this assignment mixes rows of `{name}`"),
                            WHY_MIX,
                            "set all rows from row-indexed values, or row n from row n's values",
                        ));
                    }
                    for g in &lhs.indices {
                        for ix in g.iter().skip(1) {
                            if let Index::Single(x) = ix {
                                self.val(x)?;
                            }
                        }
                    }
                    return Ok(());
                }
                match rk {
                    K::Const => Ok(()),
                    K::Row if var.level == self.level => {
                        self.update(name, K::Row);
                        Ok(())
                    }
                    K::Row => Err(err(
                        s.span,
                        format!(
                            "`{name}` is declared outside the loop over rows and updated from a \
                             row: the loop carries state from row to row"
                        ),
                        "the value after the loop would depend on which rows are in the batch \
                         (and in what order), so the per-row terms are not independent and the \
                         N/M-scaled estimate is biased",
                        "declare the variable inside the loop, or give it one entry per row \
                         (leading size N) and set entry n",
                    )),
                    _ => Err(err(
                        s.span,
                        format!(
                            "`{name}` receives a value with one entry per row, but its leading \
                             size is not `{}`",
                            self.axis
                        ),
                        "only variables whose leading size is the observation axis are sliced",
                        &format!("declare it with leading size `{}`", self.axis),
                    )),
                }
            }
            StmtKind::Tilde {
                lhs,
                dist,
                args,
                truncation,
            } => {
                let mut all = vec![lhs.clone()];
                all.extend(args.iter().cloned());
                let fname = ["_lpdf", "_lpmf"]
                    .iter()
                    .map(|suf| format!("{}{suf}", dist.name))
                    .find(|n| self.funcs.contains_key(n))
                    .unwrap_or_else(|| format!("{}_lpdf", dist.name));
                let call = Expr {
                    kind: ExprKind::Call {
                        name: crate::syntax::ast::Ident {
                            name: fname,
                            span: dist.span,
                        },
                        args: all,
                        conditional: true,
                    },
                    span: s.span,
                };
                let k = self.expr(&call)?;
                if let Some(t) = truncation {
                    for b in [&t.lower, &t.upper].into_iter().flatten() {
                        if self.val(b)? == K::Rows {
                            return Err(err(
                                b.span,
                                "a truncation bound with one entry per row".into(),
                                WHY_MIX,
                                "truncate inside a loop over rows",
                            ));
                        }
                    }
                }
                self.term(k);
                Ok(())
            }
            StmtKind::TargetPlus(e) => {
                let mut parts = Vec::new();
                self.target_parts(e, &mut parts)?;
                let prior = parts.iter().any(|(k, _)| *k == K::Const);
                let lik = parts.iter().any(|(k, _)| *k != K::Const);
                if prior && lik {
                    return Err(err(
                        s.span,
                        "this `target +=` adds a term that depends on the rows and one that does \
                         not"
                        .into(),
                        "under --batch-size the per-row terms are scaled by N/M and the prior \
                         terms are not",
                        "split it into two `target +=` statements",
                    ));
                }
                for (k, _) in parts {
                    self.term(k);
                }
                Ok(())
            }
            StmtKind::For { var, lo, hi, body } => {
                if self.expr(hi)? == K::Size {
                    if self.row_loop.is_some() {
                        return Err(err(
                            s.span,
                            "a loop over rows inside a loop over rows".into(),
                            WHY_MIX,
                            "loop over the rows once",
                        ));
                    }
                    self.scopes.push(HashMap::new());
                    self.level += 1;
                    self.row_loop = Some(var.name.clone());
                    self.bind(
                        &var.name,
                        Var {
                            kind: K::RowIx,
                            scalar: true,
                            rank: 0,
                            array_rows: false,
                            level: self.level,
                        },
                    );
                    let r = self.stmt(body);
                    self.row_loop = None;
                    self.level -= 1;
                    self.scopes.pop();
                    r?;
                    if !matches!(lo.kind, ExprKind::IntLit(1)) {
                        return Err(err(
                            lo.span,
                            format!("this loop over rows starts at `{}`, not at 1", show(lo)),
                            "a batch holds M randomly chosen rows; a loop that skips the first \
                             rows skips whichever rows come first in the batch",
                            "loop over all rows, `for (n in 1:N)`, and pass per-row values as \
                             data",
                        ));
                    }
                    return Ok(());
                }
                let k = join(self.val(lo)?, self.val(hi)?).unwrap_or(K::Rows);
                if k == K::Rows {
                    return Err(err(
                        s.span,
                        "loop bounds that depend on all rows".into(),
                        WHY_MIX,
                        "use bounds that do not depend on the rows",
                    ));
                }
                self.scopes.push(HashMap::new());
                self.bind(
                    &var.name,
                    Var {
                        kind: k,
                        scalar: true,
                        rank: 0,
                        array_rows: false,
                        level: self.level,
                    },
                );
                let r = self.stmt(body);
                self.scopes.pop();
                r
            }
            StmtKind::ForEach {
                var,
                collection,
                body,
            } => {
                let k = self.val(collection)?;
                if k == K::Rows {
                    return Err(err(
                        collection.span,
                        format!("a foreach loop over the rows of `{}`", show(collection)),
                        "the analysis proves loops over rows independent only in the form \
                         `for (n in 1:N)`",
                        "write the loop as `for (n in 1:N)` and index by n",
                    ));
                }
                self.scopes.push(HashMap::new());
                self.bind(
                    &var.name,
                    Var {
                        kind: k,
                        scalar: false,
                        rank: 1,
                        array_rows: false,
                        level: self.level,
                    },
                );
                let r = self.stmt(body);
                self.scopes.pop();
                r
            }
            StmtKind::While { cond, body } => {
                if self.val(cond)? == K::Rows {
                    return Err(err(
                        cond.span,
                        "a loop condition that depends on all rows".into(),
                        WHY_MIX,
                        "use a condition that does not depend on the rows",
                    ));
                }
                self.scopes.push(HashMap::new());
                let r = self.stmt(body);
                self.scopes.pop();
                r
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                if self.val(cond)? == K::Rows {
                    return Err(err(
                        cond.span,
                        "a condition that depends on all rows".into(),
                        WHY_MIX,
                        "use a condition on one row inside the loop over rows",
                    ));
                }
                self.scopes.push(HashMap::new());
                let r = self.stmt(then);
                self.scopes.pop();
                r?;
                if let Some(o) = otherwise {
                    self.scopes.push(HashMap::new());
                    let r = self.stmt(o);
                    self.scopes.pop();
                    r?;
                }
                Ok(())
            }
            StmtKind::Block(sts) => {
                self.scopes.push(HashMap::new());
                let r = sts.iter().try_for_each(|st| self.stmt(st));
                self.scopes.pop();
                r
            }
            StmtKind::Break if self.row_loop.is_some() && self.level > 0 => Err(err(
                s.span,
                "`break` in a loop over rows".into(),
                "whether later rows are visited would depend on earlier rows of the batch, so \
                 the per-row terms are not independent",
                "skip a row with `continue`-free conditions instead, or fit without --batch-size",
            )),
            StmtKind::Return(Some(e)) => {
                let k = match self.expr(e)? {
                    K::RowSum => K::RowSum,
                    K::Size => K::Size,
                    _ => self.val(e)?,
                };
                self.returns.push(k);
                Ok(())
            }
            StmtKind::Expr(e) => {
                if let ExprKind::Call { name, .. } = &e.kind
                    && name.name.ends_with("_lp")
                {
                    let k = self.expr(e)?;
                    let _ = k;
                    return Ok(());
                }
                self.val(e).map(|_| ())
            }
            StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Return(None)
            | StmtKind::Print(_)
            | StmtKind::Reject(_) => Ok(()),
        }
    }

    pub(super) fn update(&mut self, name: &str, kind: K) {
        for s in self.scopes.iter_mut().rev() {
            if let Some(v) = s.get_mut(name) {
                v.kind = kind;
                return;
            }
        }
    }
}
