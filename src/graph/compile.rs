//! AST → lowered program: resolves names to slots and functions to built-ins or families.

use std::collections::HashMap;

use crate::distributions::multivariate;
use crate::distributions::{self, CdfKind, FunctionKind};
use crate::syntax::Span;
use crate::syntax::ast::{
    self, Expr, ExprKind, Index, LValue, PrintArg, SizedBase, SizedType, Stmt, StmtKind, UnOp,
};

use super::error::GraphError;
use super::ir::{BaseEx, DeclTy, Ex, FuncIr, IxEx, OdeEx, OdeMethod, PArg, St, StKind, builtin};

/// Where a name lives.
#[derive(Clone, Copy, Debug)]
pub enum VarRef {
    Global(u32),
    Local(u32),
}

/// Scopes and slot allocation.
#[derive(Default)]
pub struct Compiler {
    scopes: Vec<HashMap<String, VarRef>>,
    /// Number of local slots allocated so far.
    pub n_slots: u32,
    /// User-defined functions by name → index in the function table.
    pub funcs: HashMap<String, u32>,
    /// True while lowering a function body (`return` allowed, no globals visible).
    pub in_function: bool,
}

impl Compiler {
    /// A compiler with one (top-level) scope.
    pub fn new() -> Self {
        Compiler {
            scopes: vec![HashMap::new()],
            n_slots: 0,
            funcs: HashMap::new(),
            in_function: false,
        }
    }

    /// Opens a nested scope.
    pub fn push(&mut self) {
        self.scopes.push(HashMap::new());
    }

    /// Closes the innermost scope.
    pub fn pop(&mut self) {
        self.scopes.pop();
    }

    /// Declares `name` as a new local slot in the innermost scope.
    pub fn declare_local(&mut self, name: &str) -> u32 {
        let s = self.n_slots;
        self.n_slots += 1;
        self.scopes
            .last_mut()
            .expect("the top-level scope is never popped")
            .insert(name.to_string(), VarRef::Local(s));
        s
    }

    /// Binds `name` (top-level scope) to a global constant.
    pub fn bind_global(&mut self, name: &str, idx: u32) {
        self.scopes[0].insert(name.to_string(), VarRef::Global(idx));
    }

    fn lookup(&self, name: &str, span: Span) -> Result<VarRef, GraphError> {
        for s in self.scopes.iter().rev() {
            if let Some(v) = s.get(name) {
                return Ok(*v);
            }
        }
        Err(GraphError::UnknownVariable {
            name: name.to_string(),
            span,
        })
    }

    /// Lowers an expression.
    pub fn expr(&self, e: &Expr) -> Result<Ex, GraphError> {
        Ok(match &e.kind {
            ExprKind::IntLit(i) => Ex::Int(*i),
            ExprKind::RealLit(x) => Ex::Real(*x),
            ExprKind::Var(name) => match self.lookup(name, e.span)? {
                VarRef::Global(i) => Ex::Global(i),
                VarRef::Local(i) => Ex::Local(i),
            },
            ExprKind::Binary { op, lhs, rhs } => {
                Ex::Bin(*op, Box::new(self.expr(lhs)?), Box::new(self.expr(rhs)?))
            }
            ExprKind::Unary { op, operand } => {
                let o = self.expr(operand)?;
                match op {
                    UnOp::Neg => Ex::Neg(Box::new(o)),
                    UnOp::Plus => o,
                    UnOp::Not => Ex::Not(Box::new(o)),
                }
            }
            ExprKind::Call { name, args, .. } => self.call(name, args)?,
            ExprKind::Index { base, indices } => {
                let mut ix = self.indices(indices)?;
                // x[i][j] with single indices in the first group is x[i, j].
                if let ExprKind::Index {
                    base: inner,
                    indices: inner_ix,
                } = &base.kind
                    && inner_ix.iter().all(|i| matches!(i, Index::Single(_)))
                {
                    if let Ex::Index(b, mut first) = self.expr(base)? {
                        first.append(&mut ix);
                        return Ok(Ex::Index(b, first));
                    }
                    let _ = inner;
                }
                Ex::Index(Box::new(self.expr(base)?), ix)
            }
            ExprKind::Ternary {
                cond,
                then,
                otherwise,
            } => Ex::Ternary(
                Box::new(self.expr(cond)?),
                Box::new(self.expr(then)?),
                Box::new(self.expr(otherwise)?),
            ),
            ExprKind::RowVectorLit(items) => Ex::RowVec(self.exprs(items)?),
            ExprKind::ArrayLit(items) => Ex::Array(self.exprs(items)?),
            ExprKind::Transpose(a) => Ex::Transpose(Box::new(self.expr(a)?)),
        })
    }

    fn exprs(&self, es: &[Expr]) -> Result<Vec<Ex>, GraphError> {
        es.iter().map(|e| self.expr(e)).collect()
    }

    fn indices(&self, ix: &[Index]) -> Result<Vec<IxEx>, GraphError> {
        ix.iter()
            .map(|i| {
                Ok(match i {
                    Index::Single(e) => IxEx::Single(self.expr(e)?),
                    Index::Range(lo, hi) => IxEx::Range(
                        lo.as_ref().map(|e| self.expr(e)).transpose()?,
                        hi.as_ref().map(|e| self.expr(e)).transpose()?,
                    ),
                    Index::All => IxEx::All,
                })
            })
            .collect()
    }

    fn call(&self, name: &ast::Ident, args: &[Expr]) -> Result<Ex, GraphError> {
        let n = name.name.as_str();
        let span = name.span;
        if crate::semantics::is_ode_solver(n) && !self.funcs.contains_key(n) {
            return self.ode_call(n, args, span);
        }
        if let Some(kind) = n.strip_prefix("std_normal_") {
            let mut a = self.exprs(args)?;
            let family = distributions::Family::Normal;
            let std = [Ex::Int(0), Ex::Int(1)];
            let ex = match kind {
                "lpdf" | "lupdf" if a.len() == 1 => {
                    a.extend(std);
                    Ex::Lpdf {
                        family,
                        propto: kind == "lupdf",
                        args: a,
                    }
                }
                _ if a.len() == 1 && CdfKind::from_suffix(kind).is_some() => {
                    a.extend(std);
                    Ex::Cdf {
                        family,
                        kind: CdfKind::from_suffix(kind).expect("matched in the guard"),
                        args: a,
                    }
                }
                "rng" if a.is_empty() => Ex::Rng {
                    family,
                    args: std.to_vec(),
                },
                _ => {
                    return Err(GraphError::UnknownFunction {
                        name: n.to_string(),
                        span,
                    });
                }
            };
            return Ok(ex);
        }
        if let Some((sig, kind)) = distributions::lookup_function(n) {
            let args = self.exprs(args)?;
            let family = sig.family;
            return Ok(match kind {
                FunctionKind::LogDensity => Ex::Lpdf {
                    family,
                    propto: false,
                    args,
                },
                FunctionKind::UnnormalisedLogDensity => Ex::Lpdf {
                    family,
                    propto: true,
                    args,
                },
                FunctionKind::LogCdf => Ex::Cdf {
                    family,
                    kind: CdfKind::Lcdf,
                    args,
                },
                FunctionKind::LogCcdf => Ex::Cdf {
                    family,
                    kind: CdfKind::Lccdf,
                    args,
                },
                FunctionKind::Cdf => Ex::Cdf {
                    family,
                    kind: CdfKind::Cdf,
                    args,
                },
                FunctionKind::Rng => Ex::Rng { family, args },
            });
        }
        if let Some((sig, kind)) = multivariate::lookup_function(n) {
            let args = self.exprs(args)?;
            let family = sig.family;
            return Ok(match kind {
                FunctionKind::Rng => Ex::MvRng { family, args },
                kind => Ex::MvLpdf {
                    family,
                    propto: kind == FunctionKind::UnnormalisedLogDensity,
                    args,
                },
            });
        }
        if let Some(b) = builtin(n) {
            return Ok(Ex::Call(b, self.exprs(args)?));
        }
        if let Some(&i) = self.funcs.get(n) {
            let args = self.exprs(args)?;
            return Ok(if n.ends_with("_lpdf") || n.ends_with("_lpmf") {
                Ex::NormalisedUserCall(i, args)
            } else {
                Ex::UserCall(i, args)
            });
        }
        // `foo_lupdf(…)` calls a user-defined `foo_lpdf` (the user's function decides what to drop).
        for (u, full) in [("_lupdf", "_lpdf"), ("_lupmf", "_lpmf")] {
            if let Some(stem) = n.strip_suffix(u)
                && let Some(&i) = self.funcs.get(&format!("{stem}{full}"))
            {
                return Ok(Ex::UserCall(i, self.exprs(args)?));
            }
        }
        Err(GraphError::UnknownFunction {
            name: n.to_string(),
            span,
        })
    }

    /// Lowers `ode_rk45(f, y0, t0, ts, ...)` and the other solvers (checked by
    /// `semantics::check::ode`): the first argument names the system function.
    fn ode_call(&self, n: &str, args: &[Expr], span: Span) -> Result<Ex, GraphError> {
        let (name, method) = match n {
            "ode_rk45" => ("ode_rk45", OdeMethod::Rk45),
            "ode_rk45_tol" => ("ode_rk45_tol", OdeMethod::Rk45),
            "ode_bdf" => ("ode_bdf", OdeMethod::Bdf),
            _ => ("ode_bdf_tol", OdeMethod::Bdf),
        };
        let fixed = if n.ends_with("_tol") { 7 } else { 4 };
        let func = match args.first().map(|a| &a.kind) {
            Some(ExprKind::Var(f)) => self.funcs.get(f).copied(),
            _ => None,
        };
        let (Some(func), true) = (func, args.len() >= fixed) else {
            return Err(GraphError::UnknownFunction {
                name: n.to_string(),
                span,
            });
        };
        let tol = if fixed == 7 {
            Some(Box::new([
                self.expr(&args[4])?,
                self.expr(&args[5])?,
                self.expr(&args[6])?,
            ]))
        } else {
            None
        };
        Ok(Ex::Ode(Box::new(OdeEx {
            name,
            method,
            func,
            y0: self.expr(&args[1])?,
            t0: self.expr(&args[2])?,
            ts: self.expr(&args[3])?,
            tol,
            args: self.exprs(&args[fixed..])?,
        })))
    }

    /// Lowers a sized type (constraints are handled by the caller).
    pub fn decl_ty(&self, ty: &SizedType, int: bool) -> Result<DeclTy, GraphError> {
        let base = match &ty.base {
            SizedBase::Int | SizedBase::Real => BaseEx::Scalar,
            SizedBase::Vector(n)
            | SizedBase::Simplex(n)
            | SizedBase::Ordered(n)
            | SizedBase::PositiveOrdered(n) => BaseEx::Vector(self.expr(n)?),
            SizedBase::RowVector(n) => BaseEx::RowVector(self.expr(n)?),
            SizedBase::Matrix(r, c) => BaseEx::Matrix(self.expr(r)?, self.expr(c)?),
            SizedBase::CholeskyFactorCorr(k)
            | SizedBase::CholeskyFactorCov(k)
            | SizedBase::CovMatrix(k)
            | SizedBase::CorrMatrix(k) => BaseEx::Matrix(self.expr(k)?, self.expr(k)?),
        };
        Ok(DeclTy {
            int: int || matches!(ty.base, SizedBase::Int),
            base,
            arr: self.exprs(&ty.array_dims)?,
        })
    }

    /// The arguments of `print` / `reject`: strings kept, expressions lowered.
    fn print_args(&mut self, args: &[PrintArg]) -> Result<Vec<PArg>, GraphError> {
        args.iter()
            .map(|a| {
                Ok(match a {
                    PrintArg::Str(s, _) => PArg::Str(s.clone()),
                    PrintArg::Expr(e) => PArg::Ex(self.expr(e)?),
                })
            })
            .collect()
    }

    /// Lowers a statement. `Decl`s declare their name in the innermost scope after their
    /// initialiser is lowered.
    pub fn stmt(&mut self, s: &Stmt) -> Result<St, GraphError> {
        let span = s.span;
        let kind = match &s.kind {
            StmtKind::Decl(d) => {
                let ty = self.decl_ty(&d.ty, false)?;
                let init = d.init.as_ref().map(|e| self.expr(e)).transpose()?;
                let slot = self.declare_local(&d.name.name);
                StKind::Decl { slot, ty, init }
            }
            StmtKind::Assign { lhs, op, rhs } => {
                let (slot, idx) = self.lvalue(lhs)?;
                StKind::Assign {
                    slot,
                    idx,
                    op: *op,
                    rhs: self.expr(rhs)?,
                }
            }
            StmtKind::Tilde {
                lhs,
                dist,
                args,
                truncation,
            } => {
                if dist.name == "std_normal" {
                    if !args.is_empty() {
                        return Err(GraphError::Eval {
                            message: "std_normal takes no parameters".into(),
                            span,
                            origin: None,
                        });
                    }
                    if truncation.is_some() {
                        return Err(GraphError::Unsupported {
                            what: "truncation of std_normal (write normal(0, 1) instead)".into(),
                            span,
                        });
                    }
                    return Ok(St {
                        kind: StKind::Tilde {
                            lhs: self.expr(lhs)?,
                            family: distributions::Family::Normal,
                            args: vec![Ex::Int(0), Ex::Int(1)],
                            trunc: None,
                            plan: Default::default(),
                        },
                        span,
                    });
                }
                if let Some(sig) = multivariate::lookup(&dist.name) {
                    if let Some(t) = truncation {
                        return Err(GraphError::Unsupported {
                            what: format!("truncation of the multivariate family `{}`", sig.name),
                            span: t.span,
                        });
                    }
                    let mut all = vec![self.expr(lhs)?];
                    all.extend(self.exprs(args)?);
                    return Ok(St {
                        kind: StKind::TargetPlus(Ex::MvLpdf {
                            family: sig.family,
                            propto: true,
                            args: all,
                        }),
                        span,
                    });
                }
                let Some(sig) = distributions::lookup(&dist.name) else {
                    // A user-defined density: `y ~ foo(θ)` is `target += foo_lpdf(y | θ)`.
                    for suffix in ["_lpdf", "_lpmf"] {
                        if let Some(&i) = self.funcs.get(&format!("{}{suffix}", dist.name)) {
                            if truncation.is_some() {
                                return Err(GraphError::Unsupported {
                                    what: "truncation of a user-defined distribution".into(),
                                    span,
                                });
                            }
                            let mut all = vec![self.expr(lhs)?];
                            all.extend(self.exprs(args)?);
                            return Ok(St {
                                kind: StKind::TargetPlus(Ex::UserCall(i, all)),
                                span,
                            });
                        }
                    }
                    return Err(GraphError::UnknownFunction {
                        name: dist.name.clone(),
                        span: dist.span,
                    });
                };
                let trunc = match truncation {
                    Some(t) => {
                        if !distributions::has_log_cdf(sig.family) {
                            return Err(GraphError::Unsupported {
                                what: format!(
                                    "truncation of `{}` (no log CDF is available for this family)",
                                    sig.name
                                ),
                                span: t.span,
                            });
                        }
                        Some((
                            t.lower.as_ref().map(|e| self.expr(e)).transpose()?,
                            t.upper.as_ref().map(|e| self.expr(e)).transpose()?,
                        ))
                    }
                    None => None,
                };
                StKind::Tilde {
                    lhs: self.expr(lhs)?,
                    family: sig.family,
                    args: self.exprs(args)?,
                    trunc,
                    plan: Default::default(),
                }
            }
            StmtKind::TargetPlus(e) => StKind::TargetPlus(self.expr(e)?),
            StmtKind::For { var, lo, hi, body } => {
                let lo = self.expr(lo)?;
                let hi = self.expr(hi)?;
                self.push();
                let slot = self.declare_local(&var.name);
                let body = self.stmt(body);
                self.pop();
                let plain = St {
                    kind: StKind::For {
                        slot,
                        var: var.name.clone(),
                        lo,
                        hi,
                        body: Box::new(body?),
                    },
                    span,
                };
                StKind::Fast {
                    cache: Default::default(),
                    plain: Box::new(plain),
                }
            }
            StmtKind::ForEach {
                var,
                collection,
                body,
            } => {
                let coll = self.expr(collection)?;
                self.push();
                let slot = self.declare_local(&var.name);
                let body = self.stmt(body);
                self.pop();
                StKind::ForEach {
                    slot,
                    coll,
                    body: Box::new(body?),
                }
            }
            StmtKind::While { cond, body } => StKind::While {
                cond: self.expr(cond)?,
                body: Box::new(self.scoped(body)?),
            },
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => StKind::If {
                cond: self.expr(cond)?,
                then: Box::new(self.scoped(then)?),
                otherwise: match otherwise {
                    Some(o) => Some(Box::new(self.scoped(o)?)),
                    None => None,
                },
            },
            StmtKind::Block(sts) => {
                self.push();
                let r: Result<Vec<St>, GraphError> = sts.iter().map(|s| self.stmt(s)).collect();
                self.pop();
                StKind::Block(r?)
            }
            StmtKind::Break => StKind::Break,
            StmtKind::Continue => StKind::Continue,
            StmtKind::Return(e) => {
                if !self.in_function {
                    return Err(GraphError::Unsupported {
                        what: "`return` outside a function".into(),
                        span,
                    });
                }
                StKind::Return(e.as_ref().map(|e| self.expr(e)).transpose()?)
            }
            StmtKind::Print(args) => StKind::Print(self.print_args(args)?),
            StmtKind::Reject(args) => StKind::Reject(self.print_args(args)?),
            StmtKind::Expr(e) => StKind::ExprStmt(self.expr(e)?),
        };
        Ok(St { kind, span })
    }

    /// A statement in its own scope (the body of `if`/`while`).
    fn scoped(&mut self, s: &Stmt) -> Result<St, GraphError> {
        self.push();
        let r = self.stmt(s);
        self.pop();
        r
    }

    fn lvalue(&self, lv: &LValue) -> Result<(u32, Vec<IxEx>), GraphError> {
        let slot = match self.lookup(&lv.name.name, lv.name.span)? {
            VarRef::Local(s) => s,
            VarRef::Global(_) => {
                return Err(GraphError::Eval {
                    message: format!(
                        "cannot assign to `{}`: data and transformed data are read-only here",
                        lv.name.name
                    ),
                    span: lv.span,
                    origin: None,
                });
            }
        };
        let mut idx = Vec::new();
        let groups = lv.indices.len();
        for (g, group) in lv.indices.iter().enumerate() {
            if g + 1 < groups && !group.iter().all(|i| matches!(i, Index::Single(_))) {
                return Err(GraphError::Unsupported {
                    what: "assignment through a slice followed by another index".into(),
                    span: lv.span,
                });
            }
            idx.extend(self.indices(group)?);
        }
        Ok((slot, idx))
    }
}

/// Lowers the `functions` block: every name is registered first (so bodies may call each other
/// and themselves), then each body is lowered in its own slot frame, seeing only its arguments.
pub fn lower_functions(
    defs: &[ast::FunctionDef],
) -> Result<(HashMap<String, u32>, Vec<FuncIr>), GraphError> {
    let mut table: HashMap<String, u32> = HashMap::new();
    let mut funcs: Vec<FuncIr> = Vec::new();
    for d in defs {
        if !table.contains_key(&d.name.name) {
            table.insert(d.name.name.clone(), funcs.len() as u32);
            funcs.push(FuncIr {
                name: d.name.name.clone(),
                n_slots: 0,
                params: Vec::new(),
                returns_int: matches!(&d.return_type, ast::ReturnType::Type(t) if t.base == ast::UnsizedBase::Int && t.array_dims == 0),
                void: matches!(d.return_type, ast::ReturnType::Void),
                body: None,
            });
        }
    }
    for d in defs {
        let Some(body) = &d.body else { continue };
        let mut c = Compiler::new();
        c.funcs = table.clone();
        c.in_function = true;
        let params: Vec<(u32, bool)> = d
            .params
            .iter()
            .map(|p| {
                (
                    c.declare_local(&p.name.name),
                    p.ty.base == ast::UnsizedBase::Int,
                )
            })
            .collect();
        let st = c.stmt(body)?;
        let f = &mut funcs[table[&d.name.name] as usize];
        f.params = params;
        f.n_slots = c.n_slots;
        f.body = Some(st);
    }
    Ok((table, funcs))
}
