//! Posterior summary table: mean, sd, quantiles and, for MCMC, MCSE, bulk/tail ESS and R-hat
//! (specs/diagnostics.md §4 "Summary table"; layout like CmdStan's stansummary and ArviZ).

use ndarray::Array2;

use crate::diagnostics::MIN_DRAWS;
use crate::diagnostics::convergence::convergence_sorted;
use crate::diagnostics::quantile::quantile_sorted;
use crate::inference::Draws;

/// One row of the summary: pooled statistics of one scalar quantity.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryRow {
    /// User-facing name, e.g. `beta[1]`.
    pub name: String,
    /// Pooled mean over all chains and draws.
    pub mean: f64,
    /// Pooled sample standard deviation (denominator S − 1).
    pub sd: f64,
    /// 5% quantile (type 7, specs/diagnostics.md §1).
    pub q5: f64,
    /// Median (type 7).
    pub q50: f64,
    /// 95% quantile (type 7).
    pub q95: f64,
    /// MCSE of the mean (§4); `None` for variational fits or too few draws.
    pub mcse_mean: Option<f64>,
    /// Bulk ESS (§3.2); `None` as for `mcse_mean`.
    pub ess_bulk: Option<f64>,
    /// Tail ESS (§3.2); `None` as for `mcse_mean`.
    pub ess_tail: Option<f64>,
    /// Rank-normalised split R-hat, max of bulk and tail (§2); `None` as for `mcse_mean`.
    pub rhat: Option<f64>,
    /// The number of draws that are NaN (a generated quantity that could not be computed at
    /// them). When some but not all are, the statistics are over the other draws and the MCMC
    /// columns are `None` (those draws do not form a chain); the table marks such rows.
    pub nan_draws: usize,
    /// The number of draws, NaN or not (all chains).
    pub total_draws: usize,
    /// Whether every draw that is not NaN is a whole number of magnitude at most 2^53 (an
    /// `int` quantity, or a real one that takes whole values only): the table then prints the
    /// statistics that are whole numbers as integers (`2147483647`, not `2.147e9`).
    pub whole: bool,
}

impl SummaryRow {
    /// Whether some but not all draws are NaN, so that the statistics are over the others only.
    pub fn partial(&self) -> bool {
        self.nan_draws > 0 && self.nan_draws < self.total_draws
    }
}

/// Summarises every quantity of `draws`. With `mcmc = true` and at least
/// [`MIN_DRAWS`] draws per chain, the MCMC columns (MCSE, ESS, R-hat) are filled; split R-hat
/// and ESS are defined for a single chain too (specs/diagnostics.md §1 "Split"), so one chain
/// suffices. For variational fits (`mcmc = false`) the draws are iid and those columns are `None`.
/// Empty draws give NaN statistics. A quantity NaN at some draws but not all (a generated
/// quantity that failed there) is summarised over the other draws, without MCMC columns
/// ([`SummaryRow::partial`]); one NaN at every draw gets NaN statistics.
pub fn summarize(draws: &Draws, mcmc: bool) -> Vec<SummaryRow> {
    let m = draws.chains.len();
    let n = draws.n_draws();
    (0..draws.names.len())
        .map(|j| {
            let mut pooled: Vec<f64> = draws.column(j).into_iter().flatten().collect();
            let total_draws = pooled.len();
            let nan_draws = pooled.iter().filter(|v| v.is_nan()).count();
            let partial = nan_draws > 0 && nan_draws < total_draws;
            if partial {
                pooled.retain(|v| !v.is_nan());
            }
            // rescaled where squares would underflow: draws near 1e-200 that differ have sd > 0
            let (mean, sd) = crate::diagnostics::mean_sd(&pooled);
            let mut sorted = pooled.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            let q = |p: f64| {
                if sorted.iter().any(|v| v.is_nan()) {
                    f64::NAN
                } else {
                    quantile_sorted(&sorted, p)
                }
            };
            let mut row = SummaryRow {
                name: draws.names[j].clone(),
                mean,
                sd,
                q5: q(0.05),
                q50: q(0.5),
                q95: q(0.95),
                mcse_mean: None,
                ess_bulk: None,
                ess_tail: None,
                rhat: None,
                nan_draws,
                total_draws,
                whole: !sorted.is_empty() && sorted.iter().all(|v| is_whole(*v)),
            };
            // Chains of unequal length (a caller that did not trim an interrupted run, see
            // `fit::trim_interrupted`) get no MCMC columns rather than a wrong shape.
            if mcmc
                && !partial
                && n >= MIN_DRAWS
                && m > 0
                && draws
                    .chains
                    .iter()
                    .all(|c| c.len() == n * draws.names.len())
                && let Ok(x) = Array2::from_shape_vec((m, n), pooled)
            {
                let c = convergence_sorted(x.view(), &sorted);
                row.mcse_mean = Some(c.mcse_mean);
                row.ess_bulk = Some(c.ess_bulk);
                row.ess_tail = Some(c.ess_tail);
                row.rhat = Some(c.rhat);
            }
            row
        })
        .collect()
}

/// Formats `x` with `sig` significant digits: fixed notation for 1e-4 ≤ |x| < 1e10 (at least
/// the whole digits: 1000012.3 prints `1000012`, not `1.000e6`), scientific otherwise; `NaN`,
/// `inf`, `-inf` for non-finite values.
///
/// [X]: the bound was 1e6, which printed the 5%, 50% and 95% of `mu ~ normal(1e6, 10)` all as
/// `1.000e6` (and a constant 1e6 as `1.000e6` beside an int column printed whole); ten digits
/// still read at a glance and cover the int32 range, as ArviZ's fixed-decimal summary does,
/// while 1e10 and beyond stay scientific as in CmdStan's stansummary.
pub fn format_sig(x: f64, sig: usize) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".to_string();
    }
    // the decimal exponent after rounding to `sig` digits (0.99996 → 1.000e0, not e−1)
    let sci = format!("{:.*e}", sig.saturating_sub(1), x);
    let e: i32 = sci
        .rsplit('e')
        .next()
        .and_then(|t| t.parse().ok())
        .expect("`{:e}` output of a finite f64 ends in e<integer>");
    if !(-4..10).contains(&e) {
        sci
    } else {
        let decimals = (sig as i32 - 1 - e).max(0) as usize;
        format!("{x:.decimals$}")
    }
}

/// Whether `x` is a whole number that an `i64` holds exactly (|x| ≤ 2^53).
pub fn is_whole(x: f64) -> bool {
    x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_992.0
}

/// A statistic of a summary row: as an integer when the row's draws are whole numbers
/// ([`SummaryRow::whole`]) and so is `x`, else [`format_sig`] with `sig` digits.
fn format_stat(x: f64, sig: usize, whole: bool) -> String {
    if whole && is_whole(x) {
        format!("{}", x as i64)
    } else {
        format_sig(x, sig)
    }
}

/// A location statistic (mean or quantile) of a row with standard deviation `sd`: as
/// [`format_stat`] with 4 significant digits, or with more when 4 would stop short of the place
/// of the sd's leading digit, so that the spread of the draws shows (at most 17 digits, all an
/// f64 has). [X] A parameter at 123456789.123 with sd 1e-4 printed as `123456789` in every
/// location column (fresh-user finding, session 20); a value whose sd is of its own order keeps
/// 4 digits, so ordinary tables are unchanged.
fn format_location(x: f64, sd: f64, whole: bool) -> String {
    format_stat(x, sig_resolving(x, sd, 4), whole)
}

/// The number of significant digits (≥ `base`, ≤ 17) with which `x` is printed so that its last
/// digit is no coarser than the leading digit of its spread `sd` (a posterior sd or a standard
/// error): `base` when `x` or `sd` is zero or not finite. [X], the rule of the summary table's
/// location columns, shared with the optimize table (123456789.123 with sd 1e-4 prints as
/// 123456789.1230, not 123456789).
pub(crate) fn sig_resolving(x: f64, sd: f64, base: usize) -> usize {
    if x.is_finite() && x != 0.0 && sd.is_finite() && sd > 0.0 {
        let last_place = x.abs().log10().floor() - (base as f64 - 1.0);
        let sd_place = sd.log10().floor();
        if last_place > sd_place {
            return ((last_place - sd_place) as usize + base).min(17);
        }
    }
    base
}

fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map(f).unwrap_or_else(|| "NA".to_string())
}

/// Aligned plain-text table of `rows`: the name column left-aligned, numbers right-aligned,
/// two spaces between columns. Columns `name mean sd 5% 50% 95%` (4 significant digits; more
/// in the location columns of a row whose sd is tiny beside its mean, see `format_location`), and
/// for MCMC also `MCSE` (3 significant digits), `ESS_bulk`, `ESS_tail` (whole numbers) and
/// `R_hat` (3 decimals). Missing values print as `NA`. The mean and quantiles of a quantity
/// whose draws are whole numbers ([`SummaryRow::whole`]) print as integers where they are
/// whole. Ends with a newline.
pub fn format_table(rows: &[SummaryRow], mcmc: bool) -> String {
    format_table_marking(rows, mcmc, &|_| false)
}

/// Whether a row's draws do not vary: sd at rounding level (≤ 1e-9·max(1, |mean|)), as for
/// a parameter that a method fits as a point estimate (MC dropout's weights without
/// `@dropout`).
pub fn is_point_estimate(r: &SummaryRow) -> bool {
    r.sd.is_finite() && r.sd <= 1e-9 * r.mean.abs().max(1.0)
}

/// [`format_table`], with `point` in the sd column of the rows for which `point` holds (their
/// draws are a point estimate, not a posterior: the rounding-level sd would read as certainty).
/// Rows summarised over the draws that are not NaN ([`SummaryRow::partial`]) have their name
/// marked `*`, and a line under the table says over how many draws.
pub fn format_table_marking(
    rows: &[SummaryRow],
    mcmc: bool,
    point: &dyn Fn(&SummaryRow) -> bool,
) -> String {
    let mut header = vec!["name", "mean", "sd", "5%", "50%", "95%"];
    if mcmc {
        header.extend(["MCSE", "ESS_bulk", "ESS_tail", "R_hat"]);
    }
    let mut cells: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        let is_point = point(r);
        // a point estimate's rounding-level sd says nothing about the digits to show
        let spread = if is_point { f64::NAN } else { r.sd };
        let mut c = vec![
            if r.partial() {
                format!("{}*", r.name)
            } else {
                r.name.clone()
            },
            format_location(r.mean, spread, r.whole),
            if is_point {
                "point".to_string()
            } else {
                format_sig(r.sd, 4)
            },
            format_location(r.q5, spread, r.whole),
            format_location(r.q50, spread, r.whole),
            format_location(r.q95, spread, r.whole),
        ];
        if mcmc {
            c.push(opt(r.mcse_mean, |v| format_sig(v, 3)));
            c.push(opt(r.ess_bulk, |v| format!("{v:.0}")));
            c.push(opt(r.ess_tail, |v| format!("{v:.0}")));
            c.push(opt(r.rhat, |v| format!("{v:.3}")));
        }
        cells.push(c);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|j| {
            cells
                .iter()
                .map(|r| r[j].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in &cells {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(j, (cell, w))| {
                if j == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(&partial_footnote(rows, mcmc));
    out
}

/// The line under a summary table for its rows summarised over the draws that are not NaN
/// ([`SummaryRow::partial`]), with their counts; empty when there is none.
fn partial_footnote(rows: &[SummaryRow], mcmc: bool) -> String {
    let partial: Vec<String> = rows
        .iter()
        .filter(|r| r.partial())
        .map(|r| {
            format!(
                "{} {} of {}",
                r.name,
                r.total_draws - r.nan_draws,
                r.total_draws
            )
        })
        .collect();
    if partial.is_empty() {
        return String::new();
    }
    format!(
        "* over the draws where the quantity is not NaN (it could not be computed at the \
         others){}: {}\n",
        if mcmc {
            "; no MCSE, ESS or R-hat, as those draws do not form a chain"
        } else {
            ""
        },
        crate::words::name_list(&partial, 6)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::tests_support::iid_normal_chains;

    /// The location columns resolve a small sd: 123456789.123 ± 1e-4 printed `123456789`
    /// (session 20); an ordinary row keeps 4 significant digits.
    #[test]
    fn location_columns_resolve_a_small_sd() {
        let d = Draws {
            names: vec!["far".into(), "usual".into()],
            chains: vec![
                (0..200)
                    .flat_map(|k| {
                        let u = (k as f64 - 99.5) / 57.7;
                        [123_456_789.123 + 1e-4 * u, 3.2 + 0.66 * u]
                    })
                    .collect(),
            ],
        };
        let table = format_table(&summarize(&d, false), false);
        let row = |name: &str| -> Vec<String> {
            table
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap()
                .split_whitespace()
                .map(String::from)
                .collect()
        };
        assert_eq!(row("far")[1], "123456789.1230", "{table}");
        assert_eq!(row("usual")[1], "3.200", "{table}");
        assert_eq!(format_location(150.04, 0.3, false), "150.0");
        assert_eq!(format_location(1.23e12, 1.0, false), "1.230000000000e12");
        assert_eq!(format_location(1.23e12, 1e4, false), "1.23000000e12");
    }

    /// A constant column (a generated quantity `real c = 2.7;`) has sd exactly 0, as one value
    /// per chain or pooled (the sd printed 7.8e-14: the mean of 4000 copies of 2.7 is not 2.7
    /// to the last bit).
    #[test]
    fn a_constant_column_has_sd_exactly_zero() {
        let d = Draws {
            names: vec!["c".into()],
            chains: vec![vec![2.7; 1000]; 4],
        };
        for mcmc in [true, false] {
            let r = &summarize(&d, mcmc)[0];
            assert_eq!((r.mean, r.sd, r.q5, r.q95), (2.7, 0.0, 2.7, 2.7));
            let table = format_table(std::slice::from_ref(r), mcmc);
            let sd = table
                .lines()
                .nth(1)
                .and_then(|l| l.split_whitespace().nth(2));
            assert_eq!(sd, Some("0"), "{table}");
        }
    }

    /// An int quantity prints as an int where its statistic is a whole number: the largest
    /// int, constant (`int big = 2147483647;`, printed 2.147e9), and large counts whose
    /// quantiles are whole and mean is not; a real column is unchanged.
    #[test]
    fn whole_number_statistics_of_int_quantities_print_as_ints() {
        let counts: Vec<f64> = (0..100).map(|k| f64::from(3_000_000 + 7 * k)).collect();
        let d = Draws {
            names: vec!["big".into(), "count".into(), "x".into()],
            chains: vec![
                (0..100)
                    .flat_map(|k| [2_147_483_647.0, counts[k], 2.0 + 0.5 * k as f64])
                    .collect(),
            ],
        };
        let rows = summarize(&d, false);
        assert!(rows[0].whole && rows[1].whole && !rows[2].whole);
        let table = format_table(&rows, false);
        let cells = |name: &str| -> Vec<String> {
            table
                .lines()
                .find(|l| l.split_whitespace().next() == Some(name))
                .unwrap()
                .split_whitespace()
                .skip(1)
                .map(str::to_string)
                .collect()
        };
        assert_eq!(
            cells("big"),
            ["2147483647", "0", "2147483647", "2147483647", "2147483647"],
            "{table}"
        );
        // mean 3000346.5 and the type-7 quantiles 3000034.65, 3000346.5 and 3000658.35 are
        // not whole: their whole digits (half to even), not 3.000e6 for all three; the sd is a
        // real statistic
        assert_eq!(
            cells("count"),
            ["3000346", "203.1", "3000035", "3000346", "3000658"],
            "{table}"
        );
        // whole quantiles of a count print as ints: 0..=20, type-7 5% = 1, 50% = 10, 95% = 19
        let d = Draws {
            names: vec!["n".into()],
            chains: vec![(0..=20).map(f64::from).collect()],
        };
        let table = format_table(&summarize(&d, false), false);
        assert_eq!(
            table
                .lines()
                .nth(1)
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["n", "10", "6.205", "1", "10", "19"],
            "{table}"
        );
        assert_eq!(cells("x")[0], "26.75", "{table}");
    }

    #[test]
    fn known_sample_variational() {
        // one "chain" 1..8: mean 4.5, sd √6, type-7 quantiles 1.35, 4.5, 7.65
        let d = Draws {
            names: vec!["beta[1]".into()],
            chains: vec![(1..=8).map(f64::from).collect()],
        };
        let r = &summarize(&d, false)[0];
        assert_eq!(r.name, "beta[1]");
        assert!((r.mean - 4.5).abs() < 1e-15);
        assert!((r.sd - 6f64.sqrt()).abs() < 1e-15);
        assert!((r.q5 - 1.35).abs() < 1e-12);
        assert!((r.q50 - 4.5).abs() < 1e-15);
        assert!((r.q95 - 7.65).abs() < 1e-12);
        assert_eq!(r.rhat, None);
        assert_eq!(
            format_table(&summarize(&d, false), false),
            "name      mean     sd     5%    50%    95%\n\
             beta[1]  4.500  2.449  1.350  4.500  7.650\n"
        );
    }

    #[test]
    fn no_nan_in_the_mcmc_columns_goes_unexplained() {
        // 2 chains × 200 draws of `t` (iid N(0, 1) × 1e-200: its squares underflow), `c`
        // (always 3), `x` (infinite at one draw) and `p` (NaN at every draw: a failed
        // generated quantity, explained by its own warning)
        let z = iid_normal_chains(2, 200, 5);
        let chains: Vec<Vec<f64>> = z
            .iter()
            .map(|ch| {
                ch.iter()
                    .enumerate()
                    .flat_map(|(i, v)| {
                        let x = if i == 7 { f64::INFINITY } else { *v };
                        [v * 1e-200, 3.0, x, f64::NAN]
                    })
                    .collect()
            })
            .collect();
        let d = Draws {
            names: vec!["t".into(), "c".into(), "x".into(), "p".into()],
            chains,
        };
        let rows = summarize(&d, true);
        let t = &rows[0];
        let (_, sd) = crate::diagnostics::mean_sd(&z.concat());
        assert!((t.sd / (sd * 1e-200) - 1.0).abs() < 1e-12, "{t:?}");
        assert!(t.rhat.is_some_and(|r| (r - 1.0).abs() < 0.05), "{t:?}");
        assert!(t.ess_bulk.is_some_and(|e| e > 200.0), "{t:?}");
        assert!(rows[1].rhat.is_some_and(f64::is_nan));
        assert_eq!(
            convergence_warnings(&rows, 2),
            vec![
                "R-hat, ESS and MCSE are undefined (NaN in the table) for c = 3: every draw \
                 has the same value. A transformed parameter or generated quantity that does \
                 not depend on the parameters is constant by design; a parameter that never \
                 changes means its chains never moved (every transition was rejected: check \
                 the model's scales and the sampler warnings)"
                    .to_string(),
                "R-hat, ESS and MCSE are undefined (NaN in the table) for x: some draws are \
                 infinite (an overflow, e.g. `exp` of a large value); compute the quantity on \
                 the log scale or guard it"
                    .to_string(),
            ]
        );
    }

    #[test]
    fn a_quantity_nan_at_some_draws_is_summarised_over_the_others_and_marked() {
        // two chains of 100 draws; `b` is NaN at every 4th draw, `c` at every draw
        let chains: Vec<Vec<f64>> = (0..2)
            .map(|c| {
                (0..100)
                    .flat_map(|i| {
                        let x = f64::from(c * 100 + i);
                        [x, if i % 4 == 0 { f64::NAN } else { x }, f64::NAN]
                    })
                    .collect()
            })
            .collect();
        let d = Draws {
            names: vec!["a".into(), "b".into(), "c".into()],
            chains,
        };
        let rows = summarize(&d, true);
        let (a, b, c) = (&rows[0], &rows[1], &rows[2]);
        assert!(!a.partial() && a.rhat.is_some());
        assert!(b.partial() && (b.nan_draws, b.total_draws) == (50, 200));
        // the mean of 0..199 without the multiples of 4: (19900 − 4·(0 + … + 49)) / 150
        assert!((b.mean - (19900.0 - 4.0 * 1225.0) / 150.0).abs() < 1e-12);
        assert!(b.q50.is_finite() && b.rhat.is_none() && b.ess_bulk.is_none());
        assert!(!c.partial() && c.mean.is_nan());
        let table = format_table(&rows, true);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[2].starts_with("b*  "), "{table}");
        assert!(
            lines[3].starts_with("c   ") && lines[3].contains("NaN"),
            "{table}"
        );
        assert!(
            lines[4].starts_with("* over the draws where the quantity is not NaN")
                && lines[4].ends_with("do not form a chain: b 150 of 200"),
            "{table}"
        );
    }

    #[test]
    fn unequal_chains_get_no_mcmc_columns() {
        // an untrimmed interrupted run: chains of 300, 200 and 0 draws (once a panic)
        let d = Draws {
            names: vec!["x".into()],
            chains: vec![
                (0..300).map(f64::from).collect(),
                (0..200).map(f64::from).collect(),
                Vec::new(),
            ],
        };
        let r = &summarize(&d, true)[0];
        assert_eq!(r.rhat, None);
        assert_eq!(r.ess_bulk, None);
        // pooled mean of 0..299 and 0..199: (44850 + 19900) / 500
        assert!((r.mean - 129.5).abs() < 1e-12);
    }

    #[test]
    fn mcmc_columns_match_diagnostics() {
        let c = iid_normal_chains(4, 500, 9);
        let n = 500;
        // two quantities interleaved row-major: x and 10 + 2x
        let chains: Vec<Vec<f64>> = c
            .iter()
            .map(|ch| ch.iter().flat_map(|v| [*v, 10.0 + 2.0 * v]).collect())
            .collect();
        let d = Draws {
            names: vec!["a".into(), "b".into()],
            chains,
        };
        let rows = summarize(&d, true);
        let slices = crate::diagnostics::as_slices(&c);
        let r = &rows[0];
        assert_eq!(r.rhat, Some(crate::diagnostics::rhat(&slices).unwrap()));
        assert_eq!(
            r.ess_bulk,
            Some(crate::diagnostics::ess_bulk(&slices).unwrap())
        );
        assert_eq!(
            r.ess_tail,
            Some(crate::diagnostics::ess_tail(&slices).unwrap())
        );
        assert_eq!(
            r.mcse_mean,
            Some(crate::diagnostics::mcse_mean(&slices).unwrap())
        );
        // rank-based diagnostics are invariant under increasing affine maps (up to rounding,
        // which can reorder near-ties of the folded values)
        let b = &rows[1];
        assert!((b.rhat.unwrap() - r.rhat.unwrap()).abs() < 1e-4);
        assert!((b.ess_bulk.unwrap() - r.ess_bulk.unwrap()).abs() < 1e-6 * r.ess_bulk.unwrap());
        assert!((b.mean - (10.0 + 2.0 * r.mean)).abs() < 1e-12);
        assert!((b.sd - 2.0 * r.sd).abs() < 1e-12);
        assert!((b.mcse_mean.unwrap() - 2.0 * r.mcse_mean.unwrap()).abs() < 1e-12);
        assert!(r.rhat.unwrap() < 1.01 && r.ess_bulk.unwrap() > 0.8 * (4 * n) as f64);
        let table = format_table(&rows, true);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("name"));
        assert!(
            lines[0].ends_with("MCSE  ESS_bulk  ESS_tail  R_hat"),
            "{}",
            lines[0]
        );
        // all lines have equal width (right-aligned numbers)
        assert!(lines.iter().all(|l| l.len() == lines[0].len()), "{table}");
    }

    /// Large values read the same in the table and in the warnings: `real m = 1e6;` and
    /// `int big = 2147483647;` constant (once `m = 1.000e6, big = 2.147e9` in the warning), and
    /// the quantiles of a real near 1e6 keep their whole digits (once all `1.000e6`).
    #[test]
    fn large_values_keep_their_whole_digits() {
        let d = Draws {
            names: vec!["m".into(), "big".into(), "mu".into()],
            chains: vec![
                (0..200)
                    .flat_map(|k| [1e6, 2_147_483_647.0, 1e6 + 0.1 * (k as f64 - 99.5)])
                    .collect(),
            ],
        };
        let rows = summarize(&d, true);
        let w = undefined_diagnostics(&rows);
        assert!(w[0].contains("for m = 1000000, big = 2147483647:"), "{w:?}");
        let table = format_table(&rows, false);
        let mu: Vec<&str> = table.lines().nth(3).unwrap().split_whitespace().collect();
        // mean 1e6, 5% = 1e6 - 9.0, 95% = 1e6 + 9.0 (type-7 over the 200 values)
        assert_eq!(
            mu,
            ["mu", "1000000", "5.788", "999991", "1000000", "1000009"],
            "{table}"
        );
    }

    #[test]
    fn significant_digits() {
        assert_eq!(format_sig(12.3456, 4), "12.35");
        assert_eq!(format_sig(-0.001234, 4), "-0.001234");
        assert_eq!(format_sig(123456.0, 4), "123456");
        // fixed up to 1e10 (once 1.500e7, and 1.000e6 for 1000012.3)
        assert_eq!(format_sig(1.5e7, 4), "15000000");
        assert_eq!(format_sig(1000012.3, 4), "1000012");
        assert_eq!(format_sig(-999983.46, 4), "-999983");
        assert_eq!(format_sig(9_876_543_210.4, 4), "9876543210");
        assert_eq!(format_sig(9_999_999_999.9, 4), "1.000e10");
        assert_eq!(format_sig(1.5e10, 4), "1.500e10");
        assert_eq!(format_sig(2147483647.5, 4), "2147483648");
        assert_eq!(format_sig(2.0e-5, 3), "2.00e-5");
        assert_eq!(format_sig(f64::NAN, 4), "NaN");
        assert_eq!(format_sig(0.0, 4), "0");
        assert_eq!(format_sig(0.99996, 4), "1.000");
        assert_eq!(format_sig(-9.99996e-5, 3), "-0.000100");
    }
}

/// R-hat above this flags chains that have not mixed (Vehtari et al. 2021, §4).
pub const RHAT_WARN: f64 = 1.01;

/// Minimum bulk and tail ESS per chain below which estimates are unreliable (Vehtari et al. 2021).
pub const ESS_PER_CHAIN_WARN: f64 = 100.0;

/// A chain whose own split R-hat (its two halves compared, [`crate::diagnostics::rhat::rhat`]
/// of the one chain) is below this counts as stable on its own ([X], a design decision: a
/// stationary chain of a few hundred draws gives about 1.00–1.01).
pub const CHAIN_STABLE_RHAT: f64 = 1.05;

/// Chain means more than this many within-chain sds apart count as different modes ([X]: a
/// chain that merely has not finished exploring one mode drifts by about one sd, not five).
pub const MODE_SEPARATION_SDS: f64 = 5.0;

/// The quantities of `draws` whose chains settled in different modes: R-hat (in `rows`, the
/// summary of `draws` in column order) above [`RHAT_WARN`] although every chain is stable on
/// its own (its split R-hat below [`CHAIN_STABLE_RHAT`], its sd positive), with two chain
/// means more than [`MODE_SEPARATION_SDS`] within-chain sds apart. Each with the largest
/// separation, in within-chain sds. Running longer does not fix this (a multimodal posterior,
/// label switching in a mixture), so the advice differs from that for chains still moving.
pub fn separated_modes(draws: &Draws, rows: &[SummaryRow]) -> Vec<(String, f64)> {
    if draws.chains.len() < 2 || draws.n_draws() < 2 * MIN_DRAWS {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (j, row) in rows.iter().enumerate() {
        if !row.rhat.is_some_and(|r| r > RHAT_WARN) || draws.names.get(j) != Some(&row.name) {
            continue;
        }
        let cols = draws.column(j);
        let mut stats = Vec::with_capacity(cols.len());
        for c in &cols {
            let n = c.len() as f64;
            let mean = c.iter().sum::<f64>() / n;
            let sd = (c.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            let stable = crate::diagnostics::rhat::rhat(&[c.as_slice()])
                .is_ok_and(|r| r < CHAIN_STABLE_RHAT);
            if !(stable && sd > 0.0 && sd.is_finite() && mean.is_finite()) {
                stats.clear();
                break;
            }
            stats.push((mean, sd));
        }
        let mut sep = 0.0_f64;
        for (a, &(ma, sa)) in stats.iter().enumerate() {
            for &(mb, sb) in &stats[a + 1..] {
                sep = sep.max((ma - mb).abs() / sa.max(sb));
            }
        }
        if sep > MODE_SEPARATION_SDS {
            out.push((row.name.clone(), sep));
        }
    }
    out
}

/// [`convergence_warnings`] knowing the draws: quantities whose chains each look stationary but
/// settled in different modes ([`separated_modes`]) get their own warning, that the posterior
/// is multimodal (in a mixture: label switching, fixed by `ordered` component locations), in
/// place of the advice to run longer and draw more samples, which cannot help them.
pub fn convergence_warnings_for(rows: &[SummaryRow], draws: &Draws) -> Vec<String> {
    let modes = separated_modes(draws, rows);
    if modes.is_empty() {
        return convergence_warnings(rows, draws.chains.len());
    }
    let names: Vec<&str> = modes.iter().map(|(n, _)| n.as_str()).collect();
    let widest = modes.iter().map(|m| m.1).fold(0.0, f64::max);
    let rest: Vec<SummaryRow> = rows
        .iter()
        .filter(|r| !names.contains(&r.name.as_str()))
        .cloned()
        .collect();
    let mut w = vec![format!(
        "R-hat > {RHAT_WARN} for {}: each chain is stable on its own (its split R-hat < \
         {CHAIN_STABLE_RHAT}), but the chains settled in different modes (chain means up to \
         {widest:.0} within-chain sds apart), so the posterior is multimodal and running longer \
         will not mix them. In a mixture model this is label switching: the components can swap \
         names; declare the component locations `ordered` (e.g. `ordered[K] mu;`) so that only \
         one labelling remains. Otherwise, find out which mode holds the mass (compare `lp__` \
         across chains) before trusting the summary",
        crate::words::name_list(&names, 6)
    )];
    w.extend(convergence_warnings(&rest, draws.chains.len()));
    w
}

/// Convergence warnings for an MCMC summary of `chains` chains, as the CLI prints them: one
/// message naming every quantity with R-hat > [`RHAT_WARN`] ("the chains have not mixed"), and
/// one naming every quantity with bulk or tail ESS below [`ESS_PER_CHAIN_WARN`] per chain.
/// Rows without MCMC columns (variational fits) never warn. Source: Vehtari, Gelman, Simpson,
/// Carpenter & Bürkner (2021), "Rank-normalization, folding, and localization", §4.
pub fn convergence_warnings(rows: &[SummaryRow], chains: usize) -> Vec<String> {
    let mut w = Vec::new();
    let high: Vec<&str> = rows
        .iter()
        .filter(|r| r.rhat.is_some_and(|x| x > RHAT_WARN))
        .map(|r| r.name.as_str())
        .collect();
    if !high.is_empty() {
        w.push(format!(
            "R-hat > {RHAT_WARN} for {}: the chains have not mixed; run longer (--warmup, --samples) or reparameterise",
            crate::words::name_list(&high, 6)
        ));
    }
    let min_ess = ESS_PER_CHAIN_WARN * chains as f64;
    let low: Vec<&str> = rows
        .iter()
        .filter(|r| {
            r.ess_bulk.is_some_and(|x| x < min_ess) || r.ess_tail.is_some_and(|x| x < min_ess)
        })
        .map(|r| r.name.as_str())
        .collect();
    if !low.is_empty() {
        w.push(format!(
            "effective sample size below {min_ess:.0} (100 per chain) for {}: estimates of means and quantiles are unreliable; draw more samples",
            crate::words::name_list(&low, 6)
        ));
    }
    w.extend(undefined_diagnostics(rows));
    w
}

/// Warnings for the rows whose MCMC columns are NaN, so that no NaN in the table goes
/// unexplained: one for quantities whose draws are all equal (naming each with its value: a
/// transformed parameter or generated quantity that does not depend on the parameters, or a
/// parameter whose chains never moved), one for quantities with infinite draws, and one for
/// any other. R-hat and ESS are undefined for constant draws: ArviZ and `posterior` return NaN
/// (NA), and CmdStan's stansummary prints nan; the draws files keep NaN. Rows NaN at every
/// draw (a generated quantity that always failed) are left to the failure's own warning.
pub fn undefined_diagnostics(rows: &[SummaryRow]) -> Vec<String> {
    let undefined = |r: &&SummaryRow| {
        r.nan_draws < r.total_draws
            && [r.rhat, r.ess_bulk, r.ess_tail, r.mcse_mean]
                .iter()
                .any(|v| v.is_some_and(f64::is_nan))
    };
    let infinite = |r: &SummaryRow| [r.mean, r.sd, r.q5, r.q95].iter().any(|v| v.is_infinite());
    let (mut constant, mut inf, mut other) = (Vec::new(), Vec::new(), Vec::new());
    for r in rows.iter().filter(undefined) {
        if infinite(r) {
            inf.push(r.name.as_str().to_string());
        } else if r.q5 == r.q95 && r.sd.is_finite() {
            constant.push(format!("{} = {}", r.name, format_stat(r.q50, 4, r.whole)));
        } else {
            other.push(r.name.clone());
        }
    }
    let mut w = Vec::new();
    if !constant.is_empty() {
        w.push(format!(
            "R-hat, ESS and MCSE are undefined (NaN in the table) for {}: every draw has the \
             same value. A transformed parameter or generated quantity that does not depend on \
             the parameters is constant by design; a parameter that never changes means its \
             chains never moved (every transition was rejected: check the model's scales and \
             the sampler warnings)",
            crate::words::name_list(&constant, 6)
        ));
    }
    if !inf.is_empty() {
        w.push(format!(
            "R-hat, ESS and MCSE are undefined (NaN in the table) for {}: some draws are \
             infinite (an overflow, e.g. `exp` of a large value); compute the quantity on the \
             log scale or guard it",
            crate::words::name_list(&inf, 6)
        ));
    }
    if !other.is_empty() {
        w.push(format!(
            "R-hat, ESS or MCSE could not be computed (NaN in the table) for {}",
            crate::words::name_list(&other, 6)
        ));
    }
    w
}
