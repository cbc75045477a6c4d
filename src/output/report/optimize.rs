//! The report of `--method optimize` (and the REPL's `:fit optimize`, `:summary`): the
//! estimates with standard errors, the generated quantities at the optimum, the convergence
//! verdict and how the standard errors were computed.

use crate::fit::{self, FitResult};
use crate::inference::Draws;

/// The optimizer's name as the reports print it: `L-BFGS`, `BFGS` or `Newton`.
pub fn optimizer_name(a: crate::inference::optimize::Algorithm) -> &'static str {
    use crate::inference::optimize::Algorithm;
    match a {
        Algorithm::Lbfgs => "L-BFGS",
        Algorithm::Bfgs => "BFGS",
        Algorithm::Newton => "Newton",
    }
}

/// What `--method optimize` prints (and the REPL's `:fit optimize`): the table of estimates
/// and standard errors with the generated quantities at the optimum ([`optimize_table`]), the
/// log density at the optimum, the iterations, the convergence verdict and how the standard
/// errors were computed. Ends with a newline.
pub fn optimize_text(result: &FitResult, fit: &fit::OptimizeFit) -> String {
    format!(
        "{}\n{}",
        optimize_table(fit, &result.draws),
        optimize_footer(result, fit)
    )
}

/// The lines of [`optimize_text`] after its table: the log density at the optimum, the
/// iterations, the convergence verdict (or the warning that there is no optimum) and how the
/// standard errors were computed. The REPL's `:summary` and `:diagnostics` of an optimize fit
/// print them too. Ends with a newline.
pub fn optimize_footer(result: &FitResult, fit: &fit::OptimizeFit) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "log density at the optimum = {:.6} ({})",
        fit.log_density,
        if fit.jacobian {
            "with the Jacobian adjustment"
        } else {
            "without the Jacobian adjustment"
        }
    );
    // "12 L-BFGS iterations + 2 Newton polish steps", "5 Newton steps" ([X] session 21,
    // tester finding: "5 Newton + 0 Newton steps"); the polish's steps, 0 included, after
    // L-BFGS or BFGS, whose settings line announces it
    let newton = fit.algorithm == crate::inference::optimize::Algorithm::Newton;
    let first = if newton {
        crate::words::counted(fit.lbfgs.iterations, "Newton step")
    } else {
        format!(
            "{} {}",
            fit.lbfgs.iterations,
            if fit.lbfgs.iterations == 1 {
                format!("{} iteration", optimizer_name(fit.algorithm))
            } else {
                format!("{} iterations", optimizer_name(fit.algorithm))
            }
        )
    };
    let polish = if fit.newton_steps > 0 || !newton {
        format!(
            " + {}",
            crate::words::counted(fit.newton_steps, "Newton polish step")
        )
    } else {
        String::new()
    };
    let _ = writeln!(s, "iterations: {first}{polish} ({:.2} s)", result.seconds);
    if !fit.flat.is_empty() {
        let _ = writeln!(
            s,
            "WARNING: no optimum: the log density does not change along {} (its gradient is 0 \
             from the end point out to 100 units on the unconstrained scale), so the estimate \
             there is arbitrary and the posterior is improper; give it a proper prior or check \
             that the likelihood depends on it",
            fit.flat.join(", ")
        );
    } else if let Some(reason) = &fit.no_mode {
        let _ = writeln!(
            s,
            "WARNING: no optimum ({} stopped: {}): {reason}",
            optimizer_name(fit.algorithm),
            fit.lbfgs.message
        );
    } else if let (true, false, Some(dec)) = (fit.converged, fit.lbfgs.converged, fit.polished) {
        let _ = writeln!(
            s,
            "converged: the Newton polish reached the optimum (a further Newton step would gain \
             {dec:.1e}), which {} had not reached in {}",
            optimizer_name(fit.algorithm),
            crate::words::counted(fit.lbfgs.iterations, "iteration")
        );
    } else if fit.converged {
        let _ = writeln!(s, "converged: {}", fit.lbfgs.message);
    } else {
        let _ = writeln!(
            s,
            "WARNING: {} did not converge: {}{}",
            optimizer_name(fit.algorithm),
            fit.lbfgs.message,
            if fit.newton_steps > 0 {
                " (the Newton polish that followed reached a point where the Hessian is negative definite)"
            } else {
                ""
            }
        );
    }
    if let Some(note) = bound_mode_note(fit) {
        let _ = writeln!(s, "{note}");
    } else if fit.flat.is_empty()
        && fit.no_mode.is_none()
        && let Some(note) = boundary_note(fit)
    {
        let _ = writeln!(s, "{note}");
    }
    // the note above already says that a parameter at its bound has no standard error
    let at_bound = |k: usize| {
        fit.names
            .get(k)
            .is_some_and(|n| fit.at_bound.iter().any(|(b, ..)| b == n))
    };
    if fit
        .std_errors
        .iter()
        .enumerate()
        .any(|(k, v)| v.is_nan() && !at_bound(k))
    {
        s.push_str(
            "WARNING: the Hessian at the optimum is not negative definite (or could not be computed): no standard errors\n",
        );
    }
    s.push_str(match fit.std_error_kind {
        fit::StdErrorKind::Hessian => {
            "standard errors: inverse negative Hessian of the optimised log density (finite differences) on the \
             unconstrained scale, mapped to the constrained scale by the delta method\n"
        }
        fit::StdErrorKind::Robust => {
            "standard errors: robust sandwich H⁻¹BH⁻¹ (H the finite-difference Hessian, B the covariance of the \
             per-observation scores) on the unconstrained scale, mapped to the constrained scale by the delta method\n"
        }
    });
    if let Some(note) = &result.gq_note {
        let _ = writeln!(s, "ERROR: {note}");
    }
    s
}

/// The table of `--method optimize`: name, estimate, standard error (constrained scale) of the
/// parameters and transformed parameters, then the generated quantities at the optimum: the
/// columns of `draws` (the fit's one row, at the estimate) that `fit` has no estimate for.
/// These have no standard error (`-`; they are evaluated once at the estimate, `_rng` calls
/// drawing once), which a line under the table says.
pub fn optimize_table(fit: &fit::OptimizeFit, draws: &Draws) -> String {
    let mut rows: Vec<(&str, f64, f64, bool)> = fit
        .names
        .iter()
        .zip(&fit.estimates)
        .zip(&fit.std_errors)
        .map(|((n, e), s)| (n.as_str(), *e, *s, false))
        .collect();
    let row = draws.chains.first();
    let generated: Vec<&str> = draws
        .names
        .iter()
        .enumerate()
        .filter(|(_, n)| !fit.names.contains(n))
        .map(|(j, n)| {
            let v = row.and_then(|r| r.get(j)).copied().unwrap_or(f64::NAN);
            rows.push((n.as_str(), v, f64::NAN, true));
            n.as_str()
        })
        .collect();
    let mut s = optimize_rows_table(fit.std_error_kind, &rows);
    // named by variable: `y_rep`, not each of its elements
    let mut variables: Vec<&str> = Vec::new();
    for n in generated.iter().map(|n| n.split('[').next().unwrap_or(n)) {
        if !variables.contains(&n) {
            variables.push(n);
        }
    }
    if !variables.is_empty() {
        s.push_str(&format!(
            "{}: generated {}, evaluated once at the estimate (no standard error)\n",
            crate::words::name_list(&variables, 6),
            if generated.len() == 1 {
                "quantity"
            } else {
                "quantities"
            }
        ));
    }
    s
}

/// Significant digits of the estimates and standard errors of [`optimize_rows_table`], with
/// the posterior summary's formatter ([`crate::output::summary::format_sig`]: fixed notation
/// for 1e-4 ≤ |x| < 1e10, scientific otherwise). [X]: six fixed decimals printed 1e-20 as
/// `0.000000` and 1e290 with 291 digits (fresh-user finding); six significant digits keep the
/// precision that the decimals gave values of order 1.
pub const OPTIMIZE_SIG: usize = 6;

/// The lines of [`optimize_table`] for chosen rows — (name, estimate, standard error, whether
/// it is a generated quantity) on the constrained scale — under the line naming the standard
/// errors' `kind`; a standard error that is NaN (none: −H not positive definite, or a quantity
/// without one) prints as `-`. Numbers print with [`OPTIMIZE_SIG`] significant digits, except that a generated
/// quantity whose value is a whole number (an `int`, e.g. `poisson_rng(3)`) prints as an
/// integer, as the posterior summaries print quantities whose draws are whole numbers.
/// The REPL's `:param` shows one parameter of an optimize fit with it.
pub fn optimize_rows_table(kind: fit::StdErrorKind, rows: &[(&str, f64, f64, bool)]) -> String {
    let width = rows
        .iter()
        .map(|r| r.0.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "standard errors: {}\n{:<width$}  {:>14}  {:>12}\n",
        match kind {
            fit::StdErrorKind::Hessian => "classical (inverse negative Hessian)",
            fit::StdErrorKind::Robust =>
                "robust (sandwich H⁻¹BH⁻¹, Huber–White / Bollerslev–Wooldridge)",
        },
        "name",
        "estimate",
        "std. error"
    );
    for (n, e, s, generated) in rows {
        let se = if s.is_nan() {
            "-".to_string()
        } else {
            crate::output::summary::format_sig(*s, OPTIMIZE_SIG)
        };
        let est = if *generated && crate::output::summary::is_whole(*e) {
            format!("{}", *e as i64)
        } else {
            let sig = crate::output::summary::sig_resolving(*e, *s, OPTIMIZE_SIG);
            crate::output::summary::format_sig(*e, sig)
        };
        out.push_str(&format!("{n:<width$}  {est:>14}  {se:>12}\n"));
    }
    out
}

/// Fraction of the PSIS draws below which the PSIS ESS alone makes the means unreliable
/// (defined with the rest of the gate in [`fit::vi_gate`]).
pub use crate::fit::vi_gate::PSIS_ESS_FLOOR;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_and_huge_values_print_with_significant_digits() {
        let rows = [
            ("tiny", 1e-20, 3.2e-21, false),
            ("huge", 1e290, 2.5e289, false),
            ("plain", 1.2345678, 0.5, false),
            ("count", 3.0, f64::NAN, true),
        ];
        let t = optimize_rows_table(fit::StdErrorKind::Hessian, &rows);
        let line = |n: &str| -> Vec<String> {
            t.lines()
                .find(|l| l.starts_with(n))
                .unwrap()
                .split_whitespace()
                .map(str::to_string)
                .collect()
        };
        // six fixed decimals printed 0.000000 and 0.000000, and 1e290 with 291 digits
        assert_eq!(line("tiny"), ["tiny", "1.00000e-20", "3.20000e-21"]);
        assert_eq!(line("huge"), ["huge", "1.00000e290", "2.50000e289"]);
        assert_eq!(line("plain"), ["plain", "1.23457", "0.500000"]);
        assert_eq!(line("count"), ["count", "3", "-"]);
    }
}

/// |ζ̂| from which a constrained coordinate counts as at its bound ([X]: e⁻⁸ ≈ 3·10⁻⁴ of
/// the bound for a lower or upper bound, 1 − 3·10⁻⁴ of the interval for two bounds). Eight
/// schools (non-centred) without the Jacobian ends at tau = 9.1e-6, ζ̂ = −11.6.
const AT_BOUND_ZETA: f64 = 8.0;

/// The note for an optimum at (or near) the boundary of a constrained parameter: a coordinate
/// whose constraining map is not the identity (θ̂ ≠ ζ̂), with |ζ̂| ≥ [`AT_BOUND_ZETA`] and an
/// unconstrained standard error of at least 1 (or none), so the curvature does not pin the
/// parameter near the bound: a parameter that is genuinely small (a scale of 10⁻⁵ well
/// determined by the data) has a small se on the log scale and no note. Reads the first d
/// names of `fit.names` as the coordinates' (true for scalars and vectors of bounded reals;
/// a simplex or a Cholesky factor shifts them, and then θ̂ ≠ ζ̂ rarely pairs with a huge |ζ̂|).
/// [X]: fresh-user finding, session 20: eight schools' joint mode at tau = 9.9e-6 was reported
/// as "converged" with no word that it is the degenerate mode of the funnel. `None` otherwise.
fn boundary_note(fit: &fit::OptimizeFit) -> Option<String> {
    let at: Vec<String> = fit
        .point
        .iter()
        .enumerate()
        .filter_map(|(i, &z)| {
            let est = *fit.estimates.get(i)?;
            let se = fit.unconstrained_se.get(i).copied().unwrap_or(f64::NAN);
            let transformed = (est - z).abs() > 1e-9 * z.abs().max(1.0);
            let name = fit.names.get(i)?;
            (transformed && z.abs() >= AT_BOUND_ZETA && !(se < 1.0))
                .then(|| format!("`{name}` = {}", crate::output::summary::format_sig(est, 3)))
        })
        .collect();
    if at.is_empty() {
        return None;
    }
    Some(format!(
        "note: the optimum is at (or near) the boundary of a constrained parameter: {} (its \
         unconstrained value is beyond ±{AT_BOUND_ZETA} and the curvature there does not hold it), \
         so the standard errors say little. In a hierarchical model this is the usual degenerate \
         joint mode, a group scale going to 0 (the neck of the funnel), not a summary of the \
         posterior: use --method nuts for the posterior of such a scale.",
        crate::words::name_list(&at, 6)
    ))
}

/// The note for parameters whose optimum is at a bound (`fit.at_bound`, see
/// [`fit::OptimizeFit::at_bound`]): the mode is the bound itself, which is no sign of an
/// improper posterior, with the methods that do summarise the posterior. `None` when there is
/// none. [X], fresh-user finding (session 21): `real<lower=0> s; s ~ exponential(1);` was
/// reported as improper.
fn bound_mode_note(fit: &fit::OptimizeFit) -> Option<String> {
    if fit.at_bound.is_empty() {
        return None;
    }
    let at: Vec<String> = fit
        .at_bound
        .iter()
        .map(|(name, side, x)| {
            format!(
                "the {side} bound of `{name}` (the estimate {} is the optimizer's last point on \
                 its way there)",
                crate::output::summary::format_sig(*x, 3)
            )
        })
        .collect();
    Some(format!(
        "note: the optimum is at {}: the maximised density (without the Jacobian adjustment) \
         rises towards the bound and levels off there, so the mode on the constrained scale is \
         the bound itself. That is a mode on the boundary, not an improper posterior (a density \
         that stays finite at a bound is integrable there), and it has no standard error. For a \
         summary of the posterior use --method nuts or --method laplace, or --jacobian for the \
         mode of the density on the unconstrained scale, which lies inside the bounds.",
        crate::words::name_list(&at, 6)
    ))
}
