//! Size errors found before any evaluation, from what [`super::sizes`] knows of the sizes of
//! expressions: operands of `*` and of the elementwise operators, the two arguments of the
//! dot products, the vectorised arguments of a univariate distribution, a value against the
//! declared sizes of the variable it initialises or is assigned to, and negative declared
//! sizes. Unknown sizes are never reported: only sizes known on both sides can disagree; and
//! only in code known to run with the data ([`super::guards`]).

use super::sizes::Shape;
use super::*;

/// The functions whose two arguments must have the same size.
const SAME_SIZE_CALLS: &[&str] = &[
    "dot_product",
    "squared_distance",
    "distance",
    "rows_dot_product",
    "columns_dot_product",
];

impl Checker<'_> {
    /// Reports [`SemanticError::SizeMismatch`] for `e` = `lhs op rhs` (two non-scalar operands
    /// of types `l` and `r` that type-check) when the sizes that must agree are known and differ.
    pub(super) fn check_binary_sizes(&mut self, e: &Expr, op: BinOp, lhs: &Expr, rhs: &Expr) {
        let elementwise = matches!(op, BinOp::Add | BinOp::Sub | BinOp::EltMul | BinOp::EltDiv);
        if !elementwise && op != BinOp::Mul {
            return;
        }
        // two literal-sized variables: `LiteralSizeMismatch` already compared them
        if elementwise && self.literal_sizes(lhs).is_some() && self.literal_sizes(rhs).is_some() {
            return;
        }
        let (Some(l), Some(r)) = (self.shape(lhs), self.shape(rhs)) else {
            return;
        };
        let (ltext, rtext) = (pretty::expr(lhs), pretty::expr(rhs));
        let sizes = format!(
            "{} {} {}",
            l.describe(),
            if op == BinOp::Mul { "times" } else { "and" },
            r.describe()
        );
        if elementwise {
            if l.dims.len() != r.dims.len()
                || l.dims.iter().zip(&r.dims).all(|(a, b)| match (a.0, b.0) {
                    (Some(x), Some(y)) => x == y,
                    _ => true,
                })
            {
                return;
            }
            let size = |s: &Shape| {
                s.dims
                    .iter()
                    .map(|(n, _)| n.map_or("?".to_string(), |n| n.to_string()))
                    .collect::<Vec<_>>()
                    .join(" × ")
            };
            let operands = [&l, &r]
                .iter()
                .filter_map(|s| s.sized_label(&format!("size {}", size(s))))
                .collect();
            self.err(SemanticError::SizeMismatch {
                expr: pretty::expr(e),
                what: format!(
                    "`{ltext}` has size {} but `{rtext}` has size {}",
                    size(&l),
                    size(&r)
                ),
                sizes,
                operands,
                help: "an elementwise operation needs operands of the same size: declare them \
                       with the same sizes, or index the part that corresponds"
                    .into(),
                span: e.span,
            });
            return;
        }
        if l.ty.dims > 0 || r.ty.dims > 0 {
            return;
        }
        // the inner sizes of the product, with their names in words
        let (ld, lwords) = match l.ty.base {
            Base::Matrix | Base::RowVector => (l.dims.last().cloned(), "columns"),
            _ => return,
        };
        let (rd, rwords) = match r.ty.base {
            Base::Matrix | Base::Vector => (r.dims.first().cloned(), "rows"),
            _ => return,
        };
        let (Some(ld), Some(rd)) = (ld, rd) else {
            return;
        };
        let (Some(a), Some(b)) = (ld.0, rd.0) else {
            return;
        };
        if a == b {
            return;
        }
        let operands = [l.label(&ld, lwords), r.label(&rd, rwords)]
            .into_iter()
            .flatten()
            .collect();
        // the fix: size the right operand by the left's columns when it is a declared vector
        let wanted = ld.1.clone().unwrap_or_else(|| a.to_string());
        let help = match (&r.var, r.ty.base, &rhs.kind) {
            (Some((name, _)), Base::Vector, ExprKind::Var(_)) => format!(
                "a product needs as many rows on the right as columns on the left: declare \
                 `vector[{wanted}] {name};` (one coefficient per column of `{ltext}`), or \
                 check that `{ltext}` holds the columns you meant"
            ),
            _ => format!(
                "a product needs as many rows on the right ({b}) as columns on the left ({a}): \
                 resize one of the operands, or transpose one if that was meant"
            ),
        };
        self.err(SemanticError::SizeMismatch {
            expr: pretty::expr(e),
            what: format!("`{ltext}` has {a} {lwords} but `{rtext}` has {b} {rwords}"),
            sizes,
            operands,
            help,
            span: e.span,
        });
    }

    /// Reports [`SemanticError::SizeMismatch`] for a call of one of [`SAME_SIZE_CALLS`] whose
    /// two arguments have known, different sizes.
    pub(super) fn check_call_sizes(&mut self, e: &Expr, name: &str, args: &[Expr]) {
        self.check_size_arguments(name, args);
        if !SAME_SIZE_CALLS.contains(&name) || args.len() != 2 {
            return;
        }
        let (Some(a), Some(b)) = (self.shape(&args[0]), self.shape(&args[1])) else {
            return;
        };
        if a.ty.dims > 0 || b.ty.dims > 0 || a.dims.len() != b.dims.len() || a.dims.is_empty() {
            return;
        }
        let differ = a.dims.iter().zip(&b.dims).any(|(x, y)| match (x.0, y.0) {
            (Some(p), Some(q)) => p != q,
            _ => false,
        });
        if !differ {
            return;
        }
        let count = |s: &Shape| {
            s.dims
                .iter()
                .map(|(n, _)| n.map_or("?".to_string(), |n| n.to_string()))
                .collect::<Vec<_>>()
                .join(" × ")
        };
        let words = if a.dims.len() == 1 { "elements" } else { "" };
        let describe = |s: &Shape| format!("{} {words}", count(s)).trim_end().to_string();
        let operands = [&a, &b]
            .iter()
            .filter_map(|s| s.sized_label(&describe(s)))
            .collect();
        let (x, y) = (pretty::expr(&args[0]), pretty::expr(&args[1]));
        self.err(SemanticError::SizeMismatch {
            expr: pretty::expr(e),
            what: format!("`{x}` has {} but `{y}` has {}", describe(&a), describe(&b)),
            sizes: format!("{} and {}", a.describe(), b.describe()),
            operands,
            help: format!(
                "`{name}` pairs the elements of its two arguments, so they need the same size"
            ),
            span: e.span,
        });
    }

    /// The `help:` of [`SemanticError::NonIntIndex`] for the index `e` of type `t`: the integer
    /// positions around a real literal (`1.5` → `1` or `2`, `2.0` → `2`), `int` for a real
    /// variable, integer arithmetic for a real expression.
    pub(super) fn non_int_index_help(&self, e: &Expr, t: Type) -> String {
        if let Some(v) = super::dists::literal_value(e) {
            return if v.fract() == 0.0 && v.is_finite() {
                format!(
                    "positions are `int`: write `{}` (without the decimal point)",
                    v as i64
                )
            } else if v.is_finite() {
                let lo = v.floor().max(1.0) as i64;
                let hi = (v.ceil() as i64).max(lo + 1);
                format!(
                    "positions are whole numbers counted from 1: write the one you mean as an \
                     `int`, e.g. `{lo}` or `{hi}`"
                )
            } else {
                "positions are whole numbers counted from 1: write one as an `int`".into()
            };
        }
        if !t.is_scalar() {
            return "index with an `int` position, or an `array[] int` of positions".into();
        }
        match &e.kind {
            ExprKind::Var(v) => format!(
                "declare `{v}` as `int` if it holds a position, or compute the position with \
                 `int` arithmetic (`%/%` divides integers)"
            ),
            _ => "compute the position with `int` arithmetic (`%/%` divides integers) instead \
                  of real values"
                .into(),
        }
    }
}

/// The sizes of `s` in words, outermost first: "3", "`N` = 10", "2 × `K` = 7" ("?" where
/// unknown).
fn size_words(s: &Shape) -> String {
    s.dims
        .iter()
        .map(|(n, text)| match (n, text) {
            (Some(n), Some(t)) if *t != n.to_string() => format!("`{t}` = {n}"),
            (Some(n), _) => n.to_string(),
            (None, Some(t)) => format!("`{t}`"),
            (None, None) => "?".to_string(),
        })
        .collect::<Vec<_>>()
        .join(" × ")
}

/// The secondary label for the declaration of the variable `s` is (possibly indexed): its
/// declared sizes when `s` has them all ("`y` declared with `N` = 4 elements"), else only
/// where it is declared.
pub(super) fn declaration_label(s: &Shape, unit: &str) -> Option<(String, Span)> {
    let (name, decl) = s.var.clone()?;
    let declared = !s.dims.is_empty() && s.dims.iter().all(|(_, t)| t.is_some());
    let msg = if !declared {
        format!("`{name}` declared here")
    } else if s.dims.len() == 1 {
        format!("`{name}` declared with {} {unit}", size_words(s))
    } else {
        format!("`{name}` declared with sizes {}", size_words(s))
    };
    Some((msg, decl))
}

/// The number of elements of a shape whose sizes are all known.
fn element_count(s: &Shape) -> Option<i64> {
    s.dims.iter().try_fold(1i64, |acc, d| acc.checked_mul(d.0?))
}

impl Checker<'_> {
    /// Reports [`SemanticError::ArgumentSizeMismatch`] when the non-scalar arguments of a
    /// univariate distribution (`items`: each argument with its role, the variate first when
    /// there is one) have known element counts that differ. The odd ones out are those whose
    /// count differs from the count most arguments share (the variate's on a tie).
    pub(super) fn check_vectorised_sizes(&mut self, function: &str, items: &[(&Expr, String)]) {
        let mut known: Vec<(usize, i64, Shape)> = Vec::new();
        for (k, (e, _)) in items.iter().enumerate() {
            let Some(s) = self.shape(e) else { continue };
            if s.ty.is_scalar() || !(s.ty.is_reals() || s.ty.is_ints()) {
                continue;
            }
            if let Some(n) = element_count(&s) {
                known.push((k, n, s));
            }
        }
        let count = |n: i64| known.iter().filter(|x| x.1 == n).count();
        let mut reference: Option<&(usize, i64, Shape)> = None;
        for x in &known {
            if reference.is_none_or(|r| count(x.1) > count(r.1)) {
                reference = Some(x);
            }
        }
        let Some((rk, rn, rs)) = reference else {
            self.check_vectorised_symbolic(function, items);
            return;
        };
        let odd: Vec<&(usize, i64, Shape)> = known.iter().filter(|x| x.1 != *rn).collect();
        let Some((ok, _, os)) = odd.first().copied() else {
            self.check_vectorised_symbolic(function, items);
            return;
        };
        let text = |k: usize| pretty::expr(items[k].0);
        let mut what = format!(
            "`{}` ({}) has {rn} elements but `{}` ({}) has {}",
            text(*rk),
            items[*rk].1,
            text(*ok),
            items[*ok].1,
            odd[0].1
        );
        for (k, n, _) in &odd[1..] {
            what.push_str(&format!(" and `{}` ({}) has {n}", text(*k), items[*k].1));
        }
        let mut args: Vec<(String, Span)> = odd
            .iter()
            .map(|(k, _, s)| (s.describe(), items[*k].0.span))
            .collect();
        args.push((rs.describe(), items[*rk].0.span));
        let mut decls: Vec<(String, Span)> = Vec::new();
        for s in odd.iter().map(|x| &x.2).chain([rs]) {
            if let Some(l) = declaration_label(s, "elements")
                && !decls.iter().any(|d| d.1 == l.1)
            {
                decls.push(l);
            }
        }
        let base = "a vectorised distribution pairs the i-th elements of its arguments, so the \
                    variate and every argument that is not a single value need the same number \
                    of elements (a single value is shared by all)";
        let help = match (&items[*ok].0.kind, rs.dims.as_slice()) {
            (ExprKind::Var(name), [(_, Some(size))]) if os.dims.len() == 1 => format!(
                "{base}: declare `{}` (one value per element of `{}`), or pass a single value",
                sized_decl(os.ty, std::slice::from_ref(size), name),
                text(*rk)
            ),
            _ => format!("{base}: resize one of them, or index the elements that belong together"),
        };
        self.err(SemanticError::ArgumentSizeMismatch {
            function: function.to_string(),
            what,
            args,
            decls,
            help,
            span: items[*ok].0.span,
        });
    }

    /// [`Self::check_vectorised_sizes`] for one-dimensional arguments whose sizes are not
    /// known before the data but differ whatever the data are: linear forms of the same `int`
    /// data with different constants (`vector[N] y` against `rep_vector(0, N + 1)`;
    /// `mv_sizes.rs`). Session 21.
    fn check_vectorised_symbolic(&mut self, function: &str, items: &[(&Expr, String)]) {
        let mut sizes = Vec::new();
        for (k, (e, _)) in items.iter().enumerate() {
            let Some(s) = self.shape(e) else { continue };
            if s.ty.is_scalar() || !(s.ty.is_reals() || s.ty.is_ints()) {
                continue;
            }
            let [dim] = s.dims.as_slice() else { continue };
            let Some(form) = self.linear_size(dim) else {
                continue;
            };
            let text = match dim {
                (Some(n), _) => n.to_string(),
                (None, Some(t)) => format!("`{t}`"),
                (None, None) => continue,
            };
            sizes.push((k, form, text));
        }
        for (i, a) in sizes.iter().enumerate() {
            let Some(b) = sizes[i + 1..]
                .iter()
                .find(|b| !a.1.0.is_empty() && b.1.0 == a.1.0 && b.1.1 != a.1.1)
            else {
                continue;
            };
            let text = |k: usize| pretty::expr(items[k].0);
            self.err(SemanticError::ArgumentSizeMismatch {
                function: function.to_string(),
                what: format!(
                    "`{}` ({}) has {} elements but `{}` ({}) has {} elements, which differ \
                     whatever the data are",
                    text(a.0),
                    items[a.0].1,
                    a.2,
                    text(b.0),
                    items[b.0].1,
                    b.2
                ),
                args: vec![
                    (format!("{} elements", b.2), items[b.0].0.span),
                    (format!("{} elements", a.2), items[a.0].0.span),
                ],
                decls: Vec::new(),
                help: "a vectorised distribution pairs the i-th elements of its arguments, so \
                       the variate and every argument that is not a single value need the same \
                       number of elements: resize one of them, or index the elements that \
                       belong together"
                    .into(),
                span: items[b.0].0.span,
            });
            return;
        }
    }

    /// Reports [`SemanticError::AssignedSizeMismatch`] for the declaration `d` (of type `ty`,
    /// size expressions as written `sizes`, their known values `known`) initialised with
    /// `init` when both have known sizes that differ.
    pub(super) fn check_declared_sizes(
        &mut self,
        d: &VarDecl,
        ty: Type,
        sizes: &[String],
        known: &[Option<i64>],
        init: &Expr,
    ) {
        let name = &d.name.name;
        let mut dims: Vec<(Option<i64>, Option<String>)> = known
            .iter()
            .zip(sizes)
            .map(|(n, t)| (*n, Some(t.clone())))
            .collect();
        // `cov_matrix[K]`, `cholesky_factor_corr[K]`, …: one size for both dimensions
        if ty.base == Base::Matrix && dims.len() == ty.dims + 1 {
            dims.push(dims.last().cloned().unwrap_or((None, None)));
        }
        let target = Shape {
            ty,
            dims,
            var: Some((name.clone(), d.name.span)),
        };
        self.report_assigned_sizes(format!("the declaration of `{name}`"), name, &target, init);
    }

    /// Reports [`SemanticError::AssignedSizeMismatch`] for `lhs = rhs` (or `+=`, `-=`, `.*=`,
    /// `./=`, whose operands must have the same sizes too) when the sizes of the assigned
    /// variable, indexed as written, and those of the value are known and differ.
    pub(super) fn check_assignment_sizes(&mut self, lhs: &LValue, rhs: &Expr) {
        let mut target = Expr {
            kind: ExprKind::Var(lhs.name.name.clone()),
            span: lhs.name.span,
        };
        for group in &lhs.indices {
            target = Expr {
                kind: ExprKind::Index {
                    base: Box::new(target),
                    indices: group.clone(),
                },
                span: lhs.span,
            };
        }
        let Some(shape) = self.shape(&target) else {
            return;
        };
        let written = pretty_lvalue(lhs);
        self.report_assigned_sizes(
            format!("the assignment to `{written}`"),
            &written,
            &shape,
            rhs,
        );
    }

    /// The report of [`Self::check_declared_sizes`] and [`Self::check_assignment_sizes`].
    fn report_assigned_sizes(
        &mut self,
        context: String,
        written: &str,
        target: &Shape,
        value: &Expr,
    ) {
        let Some(v) = self.shape(value) else {
            return;
        };
        if target.ty.is_scalar() || v.ty.is_scalar() || target.dims.len() != v.dims.len() {
            return;
        }
        let differ = target
            .dims
            .iter()
            .zip(&v.dims)
            .any(|(a, b)| matches!((a.0, b.0), (Some(x), Some(y)) if x != y));
        if !differ {
            return;
        }
        let unit = if target.dims.len() == 1 {
            "elements"
        } else {
            ""
        };
        let mut decls: Vec<(String, Span)> = Vec::new();
        for s in [target, &v] {
            if let Some(l) = declaration_label(s, unit)
                && !decls.iter().any(|d| d.1 == l.1)
            {
                decls.push(l);
            }
        }
        let value_text = pretty::expr(value);
        let rule = "a value must have the sizes of the variable that holds it";
        let help = match (&target.var, target.dims.as_slice(), v.dims.as_slice()) {
            (Some((name, _)), [(Some(n), size)], [(Some(m), _)]) if name == written => {
                let count = size.clone().unwrap_or_else(|| n.to_string());
                let or = if m > n {
                    format!("take the part that fits, e.g. `head({value_text}, {count})`")
                } else {
                    format!("assign a value of {n} elements")
                };
                format!(
                    "{rule}: declare `{name}` with the size of `{value_text}` ({}), or {or}",
                    size_words(&v)
                )
            }
            _ => format!(
                "{rule}: give `{written}` the sizes {}, or assign a value of sizes {}",
                size_words(&v),
                size_words(target)
            ),
        };
        self.err(SemanticError::AssignedSizeMismatch {
            context,
            target: written.to_string(),
            declared: target.describe(),
            value: value_text,
            found: v.describe(),
            decls,
            help,
            span: value.span,
        });
    }

    /// Reports [`SemanticError::NegativeSizeArgument`] for each size argument of the built-in
    /// `name` (`rep_vector(x, n)`'s n, `rep_matrix(x, m, n)`'s m and n, `rep_array`'s sizes)
    /// whose value is known before evaluation ([`Self::size_value`]) and negative. [X] session
    /// 21, tester finding: `rep_vector(1, -1)` was reported only as a size mismatch of a
    /// "vector[-1]".
    pub(super) fn check_size_arguments(&mut self, name: &str, args: &[Expr]) {
        let sizes: std::ops::Range<usize> = match (name, args.len()) {
            ("rep_vector" | "rep_row_vector", 2) => 1..2,
            ("rep_matrix", 3) => 1..3,
            ("rep_matrix", 2) => 1..2,
            ("rep_array", k) if k >= 2 => 1..k,
            ("zeros_vector" | "zeros_row_vector" | "ones_vector" | "ones_row_vector", 1) => 0..1,
            ("zeros_int_array" | "zeros_array" | "ones_int_array" | "ones_array", 1) => 0..1,
            ("identity_matrix", 1) => 0..1,
            _ => return,
        };
        for i in sizes {
            let a = &args[i];
            if let Some(v) = self.size_value(a)
                && v < 0
            {
                self.err(SemanticError::NegativeSizeArgument {
                    function: name.to_string(),
                    size: pretty::expr(a),
                    value: v,
                    span: a.span,
                });
            }
        }
    }

    /// Reports [`SemanticError::NegativeSize`] for the size expression `e` of `name`, whose
    /// value `v` is negative, with the `int` values it is computed from as secondary labels.
    pub(super) fn negative_size(&mut self, name: &str, e: &Expr, v: i64) {
        let mut vars = Vec::new();
        collect_vars(e, &mut vars);
        let mut sources: Vec<(String, Span)> = Vec::new();
        for (var, at) in vars {
            let Some(info) = self.scopes.lookup(var) else {
                continue;
            };
            let var_expr = Expr {
                kind: ExprKind::Var(var.to_string()),
                span: at,
            };
            let Some(value) = self.size_value(&var_expr) else {
                continue;
            };
            if sources.iter().any(|s| s.1 == info.decl_span) {
                continue;
            }
            let whence = if info.origin == Origin::Data {
                " in the data"
            } else {
                ""
            };
            sources.push((format!("`{var}` is {value}{whence}"), info.decl_span));
        }
        self.err(SemanticError::NegativeSize {
            name: name.to_string(),
            size: pretty::expr(e),
            value: v,
            sources,
            span: e.span,
        });
    }
}
