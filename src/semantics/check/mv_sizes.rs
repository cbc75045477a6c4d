//! Size checks of the multivariate families ([`crate::distributions::multivariate`]): the sizes
//! their arguments must share — a multi-normal's K-vector variate, K-vector location and K × K
//! covariance; a Dirichlet's simplex and prior sample sizes; a Wishart's two K × K matrices;
//! a GLM's rows and columns; … (the table of
//! [`crate::distributions::multivariate::sizes::relations`], which the graph checks again
//! when the sizes are known only at run time) — reported as
//! [`SemanticError::ArgumentSizeMismatch`] when they are known before evaluation
//! ([`super::sizes`]: literal sizes, `int` data) and differ, in code known to run
//! ([`super::guards`]).
//!
//! [X] session 20, tester finding: `y ~ multi_normal(mu, Sigma)` with `vector[3] y`,
//! `vector[2] mu` and `matrix[2, 2] Sigma` passed `check` and failed only in `fit`, as
//! "initialisation failed: no valid initial point found in 100 attempts".

use crate::distributions::multivariate::sizes::{SizePart, position, relations};
use crate::distributions::multivariate::{MvFamily, MvSig};

use super::size_checks::declaration_label;
use super::sizes::{Dim, Shape};
use super::*;

/// The size `part` of an argument of sizes `s`, `None` when `s` has no such size (a vector
/// has no rows here, a single value no count: [`SizePart`]).
fn part_of(part: SizePart, s: &Shape) -> Option<Dim> {
    let matrix = s.ty.base == Base::Matrix && s.ty.dims == 0;
    match part {
        SizePart::Array if s.ty.dims == 1 && !s.dims.is_empty() => Some(s.dims[0].clone()),
        SizePart::Len if matches!(s.ty.base, Base::Vector | Base::RowVector) => {
            s.dims.get(s.ty.dims).cloned()
        }
        SizePart::Rows if matrix => s.dims.first().cloned(),
        SizePart::Cols if matrix => s.dims.get(1).cloned(),
        SizePart::Count if !s.ty.is_scalar() => {
            let d = match s.dims.as_slice() {
                [d] => d.clone(),
                dims => {
                    let n = dims.iter().try_fold(1i64, |acc, d| acc.checked_mul(d.0?));
                    (n, None)
                }
            };
            // a vector of one element is broadcast as a single value
            (s.ty.dims > 0 || d.0 != Some(1)).then_some(d)
        }
        _ => None,
    }
}

/// What the family needs, in words, for the `help:` of a mismatch.
fn rule(sig: &MvSig) -> String {
    let f = sig.name;
    match sig.family {
        MvFamily::MultiNormal
        | MvFamily::MultiNormalCholesky
        | MvFamily::MultiNormalPrec
        | MvFamily::MultiStudentT => {
            let matrix = sig
                .params
                .last()
                .map_or("matrix".to_string(), |p| lowercase_first(p.name));
            format!(
                "`{f}` needs one size K throughout: the variate and the location are K-vectors \
                 (or arrays of them, of one length when both are arrays) and the {matrix} is \
                 K × K"
            )
        }
        MvFamily::MultiGpCholesky => "`multi_gp_cholesky(y | L, w)` needs y of size K × N, L of \
                                      size N × N and w of K elements"
            .into(),
        MvFamily::LkjCorrCholesky | MvFamily::LkjCorr => {
            format!("the variate of `{f}` is a square K × K matrix")
        }
        MvFamily::Dirichlet => "`dirichlet` needs one prior sample size in α per category of \
                                the simplex (and as many of each when both are arrays)"
            .into(),
        MvFamily::Categorical => String::new(),
        MvFamily::CategoricalLogit => {
            "a matrix of log odds has one row of log odds per outcome".into()
        }
        MvFamily::OrderedLogistic | MvFamily::OrderedProbit => format!(
            "`{f}` needs one location per outcome when the locations are a vector, and one \
             vector of cut-points per outcome when they are an array"
        ),
        MvFamily::Wishart | MvFamily::WishartCholesky | MvFamily::InvWishart => {
            format!("`{f}` needs a square K × K variate and a K × K scale matrix")
        }
        MvFamily::PoissonLogGlm | MvFamily::BernoulliLogitGlm => format!(
            "`{f}(y | x, α, β)` needs one outcome in y per row of x, an intercept α that is a \
             single value or one value per row of x, and one coefficient in β per column of x"
        ),
        MvFamily::CategoricalLogitGlm => "`categorical_logit_glm(y | x, α, β)` needs one \
                                          outcome in y per row of x, β of size K × C for the \
                                          K columns of x and C categories, and α of C elements"
            .into(),
    }
}

/// A size as a linear form in `int` data: `(variable → coefficient, constant)`, from its text
/// as written (`N`, `N + 1`, `2 * K - 1`); `None` for anything else (parentheses, division,
/// calls).
pub(super) type Linear = (std::collections::BTreeMap<String, i64>, i64);

/// The [`Linear`] form of the size text `t`.
fn linear(t: &str) -> Option<Linear> {
    let mut vars = std::collections::BTreeMap::new();
    let mut constant = 0i64;
    // terms separated by + and -, each a product of integers and at most one name
    let mut sign = 1i64;
    let mut term = String::new();
    let mut terms: Vec<(i64, String)> = Vec::new();
    for c in t.chars() {
        match c {
            '+' | '-' => {
                if term.trim().is_empty() {
                    // a unary sign
                    if c == '-' {
                        sign = -sign;
                    }
                    continue;
                }
                terms.push((sign, std::mem::take(&mut term)));
                sign = if c == '-' { -1 } else { 1 };
            }
            _ => term.push(c),
        }
    }
    terms.push((sign, term));
    for (sign, term) in terms {
        let mut coef = sign;
        let mut name: Option<String> = None;
        for factor in term.split('*') {
            let f = factor.trim();
            if f.is_empty() {
                return None;
            }
            if let Ok(v) = f.parse::<i64>() {
                coef = coef.checked_mul(v)?;
            } else if f.chars().all(|c| c.is_alphanumeric() || c == '_')
                && f.chars().next().is_some_and(|c| c.is_alphabetic())
                && name.is_none()
            {
                name = Some(f.to_string());
            } else {
                return None;
            }
        }
        match name {
            Some(n) => *vars.entry(n).or_insert(0) += coef,
            None => constant = constant.checked_add(coef)?,
        }
    }
    vars.retain(|_, c| *c != 0);
    Some((vars, constant))
}

/// One size of one argument, known before evaluation.
struct Known<'e> {
    /// Position in the call's arguments.
    pos: usize,
    part: SizePart,
    dim: Dim,
    n: i64,
    shape: Shape,
    arg: &'e Expr,
}

/// "`y` (the variate)" or "`Sigma` (covariance matrix)".
fn named(k: &Known, roles: &[String]) -> String {
    format!("`{}` ({})", pretty::expr(k.arg), roles[k.pos])
}

/// The size of `k` in words: "3 rows", "`N` = 3 elements".
fn sized(k: &Known) -> String {
    match &k.dim.1 {
        Some(t) if t.parse::<i64>().is_err() => format!("`{t}` = {} {}", k.n, k.part.words()),
        _ => format!("{} {}", k.n, k.part.words()),
    }
}

impl Checker<'_> {
    /// The [`Linear`] form of the size `dim` when it is written in `int` data declared in the
    /// `data` block only (fixed for the whole run, whatever their values), the value of a
    /// known size being a constant form.
    pub(super) fn linear_size(&self, dim: &Dim) -> Option<Linear> {
        if let Some(n) = dim.0 {
            return Some((Default::default(), n));
        }
        let form = linear(dim.1.as_deref()?)?;
        let all_data = form.0.keys().all(|v| {
            self.func.is_none()
                && self
                    .scopes
                    .lookup(v)
                    .is_some_and(|i| i.origin == Origin::Data && i.ty == Type::INT)
        });
        all_data.then_some(form)
    }

    /// Reports [`SemanticError::ArgumentSizeMismatch`] for the first relation of `sig`'s
    /// family ([`relations`]) with two sizes that are not known before the data but differ
    /// whatever the data are: linear forms in the same `int` data with different constants
    /// (`array[N] int y` against `rep_vector(0, N + 1)`). Returns whether one was reported.
    /// Only run when no size is known to differ ([`Self::check_mv_sizes`]).
    ///
    /// [X] session 21, tester finding: `y ~ ordered_logistic(rep_vector(0, N + 1), c)` with
    /// `array[N] int y` passed `check` without data and failed in `fit`.
    fn check_mv_symbolic_sizes(
        &mut self,
        sig: &MvSig,
        function: &str,
        args: &[&Expr],
        rng: bool,
    ) -> bool {
        let mut roles: Vec<String> = Vec::new();
        if !rng {
            roles.push("the variate".into());
        }
        roles.extend(sig.params.iter().map(|p| lowercase_first(p.name)));
        if roles.len() != args.len() {
            return false;
        }
        for group in relations(sig.family) {
            // (position, part, form, text)
            let mut sizes: Vec<(usize, SizePart, Linear, String)> = Vec::new();
            for &(p, part) in group.iter() {
                let Some(pos) = position(sig, p, rng) else {
                    continue;
                };
                let Some(shape) = self.shape(args[pos]) else {
                    continue;
                };
                let Some(dim) = part_of(part, &shape) else {
                    continue;
                };
                let Some(form) = self.linear_size(&dim) else {
                    continue;
                };
                let text = match (&dim.0, &dim.1) {
                    (Some(n), _) => n.to_string(),
                    (None, Some(t)) => format!("`{t}`"),
                    (None, None) => continue,
                };
                sizes.push((pos, part, form, text));
            }
            for (i, a) in sizes.iter().enumerate() {
                let Some(b) = sizes[i + 1..]
                    .iter()
                    .find(|b| b.0 != a.0 && !a.2.0.is_empty() && b.2.0 == a.2.0 && b.2.1 != a.2.1)
                else {
                    continue;
                };
                let what = format!(
                    "`{}` ({}) has {} {} but `{}` ({}) has {} {}, which differ whatever the \
                     data are",
                    pretty::expr(args[a.0]),
                    roles[a.0],
                    a.3,
                    a.1.words(),
                    pretty::expr(args[b.0]),
                    roles[b.0],
                    b.3,
                    b.1.words()
                );
                let labels = vec![
                    (format!("{} {}", b.3, b.1.words()), args[b.0].span),
                    (format!("{} {}", a.3, a.1.words()), args[a.0].span),
                ];
                self.err(SemanticError::ArgumentSizeMismatch {
                    function: function.to_string(),
                    what,
                    args: labels,
                    decls: Vec::new(),
                    help: format!(
                        "{}: resize one of them, or index the parts that belong together",
                        rule(sig)
                    ),
                    span: args[b.0].span,
                });
                return true;
            }
        }
        false
    }

    /// The sizes of `args` known before evaluation, relation by relation ([`relations`]), with
    /// the role of each argument in words; `None` when the arguments are not those of `sig`'s
    /// density (or of its `_rng` when `rng`) or have none to compare.
    fn mv_known_sizes<'e>(
        &self,
        sig: &MvSig,
        args: &[&'e Expr],
        rng: bool,
    ) -> Option<(Vec<String>, Vec<Vec<Known<'e>>>)> {
        let mut roles: Vec<String> = Vec::new();
        if !rng {
            roles.push("the variate".into());
        }
        roles.extend(sig.params.iter().map(|p| lowercase_first(p.name)));
        if roles.len() != args.len() {
            return None;
        }
        let mut groups = Vec::new();
        for group in relations(sig.family) {
            let mut known: Vec<Known> = Vec::new();
            for &(p, part) in group.iter() {
                // positions in the density's arguments → in `args`
                let Some(pos) = position(sig, p, rng) else {
                    continue;
                };
                let Some(shape) = self.shape(args[pos]) else {
                    continue;
                };
                let Some(dim) = part_of(part, &shape) else {
                    continue;
                };
                let Some(n) = dim.0 else { continue };
                known.push(Known {
                    pos,
                    part,
                    dim,
                    n,
                    shape,
                    arg: args[pos],
                });
            }
            groups.push(known);
        }
        Some((roles, groups))
    }

    /// Whether some sizes of `sig`'s `_rng` arguments `args` that must agree are known to
    /// differ (the call is then reported, and its draw has no sizes to follow).
    pub(super) fn mv_rng_sizes_differ(&self, sig: &MvSig, args: &[Expr]) -> bool {
        let all: Vec<&Expr> = args.iter().collect();
        self.mv_known_sizes(sig, &all, true)
            .is_some_and(|(_, groups)| groups.iter().any(|g| g.iter().any(|k| k.n != g[0].n)))
    }

    /// Reports [`SemanticError::ArgumentSizeMismatch`] for each relation of `sig`'s family
    /// ([`relations`]) whose sizes in `args` are known and differ. `args` are the call's
    /// arguments: the variate first, then the parameters, unless `rng` (`foo_rng(θ…)`: the
    /// parameters only). `function` is the name as written. In each relation the odd ones out
    /// are those whose size differs from the size most of its arguments share (the earlier on a
    /// tie, the variate first); a relation with an argument already reported for another is
    /// not reported (its sizes are in doubt: one transposed `x` breaks both of a GLM's).
    pub(super) fn check_mv_sizes(
        &mut self,
        sig: &MvSig,
        function: &str,
        args: &[&Expr],
        rng: bool,
    ) {
        let Some((roles, groups)) = self.mv_known_sizes(sig, args, rng) else {
            return;
        };
        let before = self.errors.len();
        self.check_mv_known_groups(sig, function, roles, groups);
        if self.errors.len() == before {
            self.check_mv_symbolic_sizes(sig, function, args, rng);
        }
    }

    /// [`Self::check_mv_sizes`] for the sizes known before evaluation, `groups` of
    /// [`Self::mv_known_sizes`].
    fn check_mv_known_groups(
        &mut self,
        sig: &MvSig,
        function: &str,
        roles: Vec<String>,
        groups: Vec<Vec<Known<'_>>>,
    ) {
        let mut reported: Vec<usize> = Vec::new();
        for known in groups {
            // how many arguments have size n (a matrix's rows and columns count once)
            let count = |n: i64| {
                let mut at: Vec<usize> = known.iter().filter(|k| k.n == n).map(|k| k.pos).collect();
                at.dedup();
                at.len()
            };
            let mut reference: Option<&Known> = None;
            for k in &known {
                if reference.is_none_or(|r| count(k.n) > count(r.n)) {
                    reference = Some(k);
                }
            }
            let Some(r) = reference else { continue };
            let odd: Vec<&Known> = known.iter().filter(|k| k.n != r.n).collect();
            if odd.is_empty() || known.iter().any(|k| reported.contains(&k.pos)) {
                continue;
            }
            // the odd sizes, argument by argument: "`Sigma` (covariance matrix) has 2 rows
            // and 2 columns"
            let mut positions: Vec<usize> = Vec::new();
            for k in &odd {
                if !positions.contains(&k.pos) {
                    positions.push(k.pos);
                }
            }
            let mut parts: Vec<String> = Vec::new();
            for &pos in &positions {
                let sizes: Vec<String> = odd
                    .iter()
                    .filter(|k| k.pos == pos)
                    .map(|k| sized(k))
                    .collect();
                let first = odd.iter().find(|k| k.pos == pos).expect("an odd size");
                parts.push(if pos == r.pos {
                    sizes.join(" and ")
                } else {
                    format!("{} has {}", named(first, &roles), sizes.join(" and "))
                });
            }
            let what = format!(
                "{} has {} but {}",
                named(r, &roles),
                sized(r),
                parts.join(", and ")
            );
            let mut labels: Vec<(String, Span)> = positions
                .iter()
                .map(|&pos| {
                    let k = odd.iter().find(|k| k.pos == pos).expect("an odd size");
                    (k.shape.describe(), k.arg.span)
                })
                .collect();
            // then the arguments that agree, the reference first: where the other size is from
            let agree: Vec<&Known> = std::iter::once(r)
                .chain(known.iter().filter(|k| k.n == r.n))
                .collect();
            let mut seen = positions.clone();
            for k in &agree {
                if !seen.contains(&k.pos) {
                    seen.push(k.pos);
                    labels.push((k.shape.describe(), k.arg.span));
                }
            }
            let mut decls: Vec<(String, Span)> = Vec::new();
            for s in odd.iter().chain(&agree).map(|k| &k.shape) {
                if let Some(l) = declaration_label(s, "elements")
                    && !decls.iter().any(|d| d.1 == l.1)
                {
                    decls.push(l);
                }
            }
            let first = odd[0];
            let size = match &r.dim.1 {
                Some(t) if t.parse::<i64>().is_err() => format!("`{t}`"),
                _ => r.n.to_string(),
            };
            let fix = match (&first.arg.kind, first.pos == r.pos) {
                (ExprKind::Var(name), false) => format!(
                    "declare `{name}` with size {size} (the {} of `{}`), or resize `{}`",
                    match r.part {
                        SizePart::Array => "array length",
                        SizePart::Rows => "rows",
                        SizePart::Cols => "columns",
                        SizePart::Len | SizePart::Count => "size",
                    },
                    pretty::expr(r.arg),
                    pretty::expr(r.arg),
                ),
                (ExprKind::Var(name), true) => format!("declare `{name}` square"),
                _ => "resize one of them, or index the parts that belong together".into(),
            };
            reported.extend(positions.iter().copied());
            self.err(SemanticError::ArgumentSizeMismatch {
                function: function.to_string(),
                what,
                args: labels,
                decls,
                help: format!("{}: {fix}", rule(sig)),
                span: first.arg.span,
            });
        }
    }
}
