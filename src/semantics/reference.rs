//! The function reference page `docs/functions.md`, rendered from the registries that `check`
//! and the graph use: [`super::builtins::BUILTINS`], the univariate families of
//! [`crate::distributions::registry::FAMILIES`] (with their CDFs from
//! [`crate::distributions::cdf::has_log_cdf`]) and the multivariate ones of
//! [`crate::distributions::multivariate::MV_FAMILIES`]. `tests/functions_doc.rs` fails when
//! the file and [`functions_markdown`] disagree; `BLESS=1 cargo test --release --test
//! functions_doc` rewrites the file.

use std::fmt::Write as _;

use crate::distributions::cdf::{CdfKind, has_log_cdf};
use crate::distributions::multivariate::{MV_FAMILIES, Shape};
use crate::distributions::registry::{FAMILIES, Support};

/// The command that regenerates `docs/functions.md`.
pub const REGENERATE: &str = "BLESS=1 cargo test --release --test functions_doc";

fn support(s: Support) -> &'static str {
    match s {
        Support::Real => "real",
        Support::Positive => "real > 0",
        Support::NonNegative => "real ≥ 0",
        Support::UnitInterval => "real in [0, 1]",
        Support::Count => "int ≥ 0",
        Support::Binary => "int in {0, 1}",
        Support::Integer => "int",
    }
}

fn shape(s: Shape) -> &'static str {
    match s {
        Shape::Real => "real",
        Shape::Int => "int",
        Shape::Ints => "int | array[] int",
        Shape::Reals => "real | vector | row_vector | array[] real",
        Shape::Vector => "vector | row_vector",
        Shape::Vectors => "vector | row_vector | array[] vector | array[] row_vector",
        Shape::Matrix => "matrix",
        Shape::LogOdds => "vector | row_vector | matrix (one row per outcome)",
    }
}

/// `` `foo_cdf` ``, `` `foo_lcdf` ``, `` `foo_lccdf` `` for the family `foo`.
fn cdf_names(family: &str) -> Vec<String> {
    CdfKind::ALL
        .iter()
        .map(|k| format!("`{}`", k.function_name(family)))
        .collect()
}

/// The line for a multivariate family without `_rng`: what to write instead.
fn no_rng(family: &str) -> String {
    let instead = match family {
        "multi_normal_prec" => "draw with `multi_normal_rng(mu, inverse_spd(Omega))`".to_string(),
        "multi_gp_cholesky" => {
            "draw each row i as `multi_normal_cholesky_rng(rep_vector(0, N), L / sqrt(w[i]))`"
                .to_string()
        }
        f if f.ends_with("_glm") => {
            let base = f.trim_end_matches("_glm");
            let rng = match base {
                "categorical_logit" => "categorical_logit_rng(alpha + (x * beta)[n]')",
                "poisson_log" => "poisson_log_rng(alpha + x * beta)",
                _ => "bernoulli_logit_rng(alpha + x * beta)",
            };
            format!("simulate from the linear predictor, e.g. `{rng}`")
        }
        _ => "none is provided".to_string(),
    };
    // Stan Math has a C++ `multi_normal_prec_rng`, but the Stan Functions Reference lists no
    // `_rng` for this family, nor for `multi_gp_cholesky` and the GLMs.
    format!("no `{family}_rng` (the Stan Functions Reference lists none): {instead}")
}

/// The Markdown text of `docs/functions.md`.
pub fn functions_markdown() -> String {
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(w, "# Functions and distributions");
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "Every built-in function and distribution that `bayesc check` accepts, with its \
         signatures. Generated from the registries (`src/semantics/builtins.rs`, \
         `src/distributions/registry.rs`, `src/distributions/multivariate/mod.rs`) by \
         `src/semantics/reference.rs`; do not edit by hand: run `{REGENERATE}`."
    );
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "Elementwise functions take `real`, `vector`, `row_vector`, `matrix` or arrays of \
         these and return the same shape (`int` is promoted to `real`). Operators: \
         `+ - * / ^ .* ./ .^ %` and `%/%`, transpose `'`, `A \\ B` (= `mdivide_left(A, B)`) and \
         `B / A` for a matrix `A` (= `mdivide_right(B, A)`), comparisons, `&&`, `||`, `!`."
    );
    let _ = writeln!(w);
    let _ = writeln!(w, "## Functions");
    let _ = writeln!(w);
    let mut names: Vec<_> = super::builtins::BUILTINS.iter().collect();
    names.sort_by_key(|b| b.name);
    for b in names {
        let _ = writeln!(w, "- `{}`: {}", b.name, b.signatures);
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "## Univariate distributions");
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "`y ~ foo(θ…)` drops constant terms; `foo_lpdf(y | θ…)` (`_lpmf` for integer \
         variates) keeps them and `foo_lupdf` drops them. The arguments are vectorised: any \
         of them may be a container (`vector`, `row_vector`, `array[]`), the others \
         broadcast. `foo_cdf(y | θ…)` is P(Y ≤ y), the product over elements for containers \
         (as Stan); `foo_lcdf` and `foo_lccdf` are log P(Y ≤ y) and log P(Y > y), summed over \
         elements. `foo_rng(θ…)` draws in generated quantities (one draw per element for \
         container arguments)."
    );
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "- `std_normal`: variate real; functions `std_normal_lpdf`, `std_normal_lupdf`, {}, `std_normal_rng()`; the same as `normal(0, 1)`",
        cdf_names("std_normal").join(", ")
    );
    let mut fams: Vec<_> = FAMILIES.iter().collect();
    fams.sort_by_key(|f| f.name);
    for f in fams {
        let d = if f.discrete { "lpmf" } else { "lpdf" };
        let u = if f.discrete { "lupmf" } else { "lupdf" };
        let mut fns = vec![format!("`{}_{d}`", f.name), format!("`{}_{u}`", f.name)];
        if has_log_cdf(f.family) {
            fns.extend(cdf_names(f.name));
        }
        fns.push(format!("`{}_rng`", f.name));
        let params: Vec<String> = f
            .params
            .iter()
            .map(|p| format!("{} ({})", p.name.to_lowercase(), support(p.support)))
            .collect();
        let _ = writeln!(
            w,
            "- `{}`: variate {}; parameters {}; functions {}{}",
            f.name,
            support(f.variate),
            params.join(", "),
            fns.join(", "),
            if has_log_cdf(f.family) {
                "; truncation `T[a, b]`"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "## Multivariate and categorical distributions");
    let _ = writeln!(w);
    let mut mv: Vec<_> = MV_FAMILIES.iter().collect();
    mv.sort_by_key(|f| f.name);
    for f in mv {
        let d = if f.discrete { "lpmf" } else { "lpdf" };
        let u = if f.discrete { "lupmf" } else { "lupdf" };
        let params: Vec<String> = f
            .params
            .iter()
            .map(|p| format!("{} ({})", p.name.to_lowercase(), shape(p.shape)))
            .collect();
        let rng = match f.rng_params {
            Some(ps) => {
                let names: Vec<String> = ps.iter().map(|p| p.name.to_lowercase()).collect();
                format!(", `{}_rng({})`", f.name, names.join(", "))
            }
            None => format!("; {}", no_rng(f.name)),
        };
        let _ = writeln!(
            w,
            "- `{}`: variate {} ({}); parameters {}; functions `{}_{d}`, `{}_{u}`{rng}",
            f.name,
            f.variate.name.to_lowercase(),
            shape(f.variate.shape),
            params.join(", "),
            f.name,
            f.name,
        );
    }
    s
}
