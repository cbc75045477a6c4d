//! REPL commands on a small typed model: `:fit … as NAME` over an existing fit (replaced, with
//! a note before and after the run), `:set` of an unknown setting (bayesc's own message with
//! the valid settings and a did-you-mean), and `:compare` and `:param` with a point-estimate
//! (optimize) fit (no NaN); words beyond a command's synopsis (`:summary q n`) are an error,
//! `:help COMMAND`, and clear errors for `:fit … as` without one name, `:save FIT` without a
//! file and an index on a scalar; the settings line of fixed_param (no warmup) and optimize (its
//! algorithm), `:elbo` of a QNVB fit, a fit's name given to `:plot`, and MH above its
//! dimension limit refused before the settings line; `to_int` in a posterior expression, and
//! its int arithmetic (range-checked, an error on division by zero, with a help line that fits
//! a constant expression); one wording for an index out of range in `:param` and in an
//! expression; a `:fit` whose generated quantities fail is an error that keeps the fit.

mod common;

use bayesc::repl::Session;

use common::{repl_err as err, repl_ok as ok};

/// A session with a two-parameter typed model (no data).
fn session() -> Session {
    let mut s = Session::new();
    s.set_progress(false);
    ok(
        &mut s,
        "parameters {\n  real mu;\n  real<lower=0> sigma;\n}",
    );
    ok(
        &mut s,
        "model {\n  mu ~ normal(1, 2);\n  sigma ~ lognormal(0, 0.5);\n}",
    );
    s
}

#[test]
fn fitting_as_an_existing_name_replaces_it_with_a_note() {
    let mut s = session();
    let first = ok(&mut s, ":fit qbvi --seed 1 as a");
    assert!(
        !first.contains("note:") && first.contains("stored as a\n"),
        "{first}"
    );
    let second = ok(&mut s, ":fit qbvi --seed 2 as a");
    assert!(
        second.contains("note: a exists (qbvi, seed 1); it is replaced when this fit ends"),
        "{second}"
    );
    assert!(
        second.contains("stored as a, replacing the previous a (qbvi, seed 1)"),
        "{second}"
    );
    assert_eq!(s.fits().len(), 1);
    assert_eq!(s.fits()[0].result.seed, 2);
    // automatic names never replace anything
    let third = ok(&mut s, ":fit qbvi --seed 3");
    assert!(
        !third.contains("replac") && third.contains("stored as fit"),
        "{third}"
    );
    assert!(ok(&mut s, ":help").contains("`as NAME` of an existing fit replaces it"));
}

#[test]
fn an_unknown_setting_lists_the_settings() {
    let mut s = session();
    for input in [":set bogus", ":set bogus 3"] {
        let e = err(&mut s, input);
        assert!(e.starts_with("error: unknown setting `bogus`\n"), "{e}");
        assert!(!e.contains("did you mean"), "{e}");
        // bayesc's own text, not clap's
        assert!(!e.contains("tip:") && !e.contains("Usage:"), "{e}");
        for section in [
            "  general: method, seed,",
            "  mcmc: chains, warmup, samples,",
            "  variational inference: draws, diagonal,",
        ] {
            assert!(e.contains(section), "{e}");
        }
        assert!(!e.contains("refresh") && !e.contains("threads"), "{e}");
    }
    let e = err(&mut s, ":set sed 3");
    assert!(
        e.starts_with("error: unknown setting `sed`\n  help: did you mean `seed`?"),
        "{e}"
    );
    let e = err(&mut s, ":set max_dpth 12");
    assert!(e.contains("did you mean `max-depth`?"), "{e}");
    let e = err(&mut s, ":set threads 2");
    assert!(e.contains("RAYON_NUM_THREADS"), "{e}");
    let e = err(&mut s, ":set seed");
    assert!(e.starts_with("usage: :set seed VALUE"), "{e}");
    assert_eq!(ok(&mut s, ":set diagonal"), "diagonal = on\n");
    let e = err(&mut s, ":set diagonal maybe");
    assert!(e.contains("on or off"), "{e}");
    // a bad value keeps bayesc fit's message, without :fit's usage line
    let e = err(&mut s, ":set method nutz");
    assert!(
        e.contains("invalid value 'nutz'") && !e.contains("Usage:"),
        "{e}"
    );
    assert_eq!(ok(&mut s, ":set seed 7"), "seed = 7\n");
    assert_eq!(ok(&mut s, ":set"), "diagonal = on\nseed = 7\n");
}

/// The cells of the table row whose first cell is `name`.
fn cells<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{table}"))
        .split_whitespace()
        .skip(1)
        .collect()
}

#[test]
fn comparing_with_a_point_estimate_prints_no_nan() {
    let mut s = session();
    ok(&mut s, ":fit laplace --seed 1 as lap");
    ok(&mut s, ":fit optimize --seed 1 as opt");
    ok(&mut s, ":fit optimize --seed 2 as opt2");
    let t = ok(&mut s, ":compare lap opt");
    assert!(!t.contains("NaN") && !t.contains("inf"), "{t}");
    assert!(
        t.contains("opt is a point estimate (optimize)")
            && t.contains("diff/sd = (est(opt) − mean(lap)) / sd(lap)")
            && t.contains("mean(lap)  sd(lap)  est(opt)  sd(opt)  diff/sd"),
        "{t}"
    );
    // mu's posterior is normal(1, 2): the mode is 1, and the Laplace mean is near it
    let mu = cells(&t, "mu");
    assert_eq!(mu[3], "—", "{t}");
    let (mean, sd, est): (f64, f64, f64) = (
        mu[0].parse().unwrap(),
        mu[1].parse().unwrap(),
        mu[2].parse().unwrap(),
    );
    assert!((est - 1.0).abs() < 1e-3 && (sd - 2.0).abs() < 0.2, "{t}");
    let diff: f64 = mu[4].parse().unwrap();
    assert!((diff - (est - mean) / sd).abs() < 0.006, "{t}");
    // the other order scales by the same sd
    let t = ok(&mut s, ":compare opt lap");
    assert!(!t.contains("NaN"), "{t}");
    assert!(
        t.contains("diff/sd = (mean(lap) − est(opt)) / sd(lap)"),
        "{t}"
    );
    assert_eq!(cells(&t, "sigma")[1], "—", "{t}");
    // two point estimates: the plain difference, no sd
    let t = ok(&mut s, ":compare opt opt2");
    assert!(!t.contains("NaN"), "{t}");
    assert!(
        t.contains("are point estimates") && t.contains("diff = est(opt2) − est(opt)"),
        "{t}"
    );
    let diff: f64 = cells(&t, "mu")[4].parse().unwrap();
    assert!(diff.abs() < 1e-4, "{t}");
}

#[test]
fn a_quantity_with_nan_draws_compares_as_a_dash() {
    let mut s = session();
    ok(&mut s, "generated quantities {\n  real z = sqrt(mu);\n}");
    ok(&mut s, ":fit laplace --seed 1 as lap");
    ok(&mut s, ":fit qbvi --seed 1 as q");
    let t = ok(&mut s, ":compare lap q");
    assert!(
        t.lines().all(|l| l.starts_with("—:") || !l.contains("NaN")),
        "{t}"
    );
    assert_eq!(cells(&t, "z"), ["—"; 5], "{t}");
    assert!(t.contains("—: not defined (the draws include NaN"), "{t}");
    assert!(cells(&t, "mu")[4].parse::<f64>().is_ok(), "{t}");
}

/// `:param` of an optimize fit shows its estimate and standard error, labelled as
/// `bayesc fit --method optimize` labels them, not a one-draw summary with sd NaN; a generated
/// quantity shows its value at the estimate, with no standard error and a line saying why.
#[test]
fn param_of_an_optimize_fit_shows_estimate_and_standard_error() {
    let mut s = session();
    ok(
        &mut s,
        "generated quantities {\n  real m2 = 2 * mu;\n  int three = 3;\n}",
    );
    ok(&mut s, ":fit optimize --seed 1 as opt");
    let t = ok(&mut s, ":param mu");
    assert!(!t.contains("NaN") && !t.contains("mean"), "{t}");
    assert!(
        t.starts_with("standard errors: classical (inverse negative Hessian)\n")
            && t.contains("estimate")
            && t.contains("std. error"),
        "{t}"
    );
    // the mode of normal(1, 2²) and its standard error 2
    let mu: Vec<f64> = cells(&t, "mu").iter().map(|c| c.parse().unwrap()).collect();
    assert!(
        (mu[0] - 1.0).abs() < 1e-5 && (mu[1] - 2.0).abs() < 1e-3,
        "{t}"
    );
    let t = ok(&mut s, ":param m2");
    assert!(!t.contains("NaN"), "{t}");
    assert_eq!(cells(&t, "m2")[1], "-", "{t}");
    assert!(
        t.contains("m2: generated quantity, evaluated once at the estimate (no standard error)"),
        "{t}"
    );
    // an int quantity prints as an integer, as in the posterior summaries
    let t = ok(&mut s, ":param three");
    assert_eq!(cells(&t, "three"), ["3", "-"], "{t}");
    // the constrained sigma: its delta-method standard error
    let t = ok(&mut s, ":param sigma opt");
    assert!(!t.contains("NaN"), "{t}");
    assert!(cells(&t, "sigma")[1].parse::<f64>().unwrap() > 0.0, "{t}");
}

/// `:set` of a setting of another method than the current one (`chains` while the method is
/// the default qbvi) keeps it with a note, so that `:set method nuts` or `:fit nuts` can
/// follow; a qbvi `:fit` leaves it out with a note. Bad values are still refused, and an
/// option of another method typed on the `:fit` line is refused as `bayesc fit` refuses it.
#[test]
fn a_setting_of_another_method_is_kept_with_a_note() {
    let mut s = session();
    let t = ok(&mut s, ":set chains 2");
    assert!(
        t.starts_with(
            "chains = 2\nnote: chains applies to nuts, hmc, mh, fixed_param, not qbvi (the \
             current method)"
        ),
        "{t}"
    );
    let e = err(&mut s, ":set chains 0");
    assert!(e.contains("invalid value '0'"), "{e}");
    assert_eq!(
        ok(&mut s, ":set warmup 150"),
        "warmup = 150\nnote: warmup applies to nuts, hmc, mh (fixed_param has no warmup), not qbvi (the current method): kept for `:fit METHOD` with one of those, or after `:set method METHOD`\n"
    );
    ok(&mut s, ":set samples 100");
    let t = ok(&mut s, ":set");
    assert!(
        t.starts_with("chains = 2  (for nuts, hmc, mh, fixed_param; not used by qbvi)\n"),
        "{t}"
    );
    // a qbvi fit leaves the MCMC settings out, and says so
    let t = ok(&mut s, ":fit --seed 1 as q");
    assert!(
        t.contains(
            "note: the session default chains = 2 applies to nuts, hmc, mh, fixed_param, not \
             qbvi: not used for this fit"
        ),
        "{t}"
    );
    // `:fit nuts` uses them
    let t = ok(&mut s, ":fit nuts --seed 1 as n");
    assert!(t.contains("2 chains × (150 warmup + 100 draws)"), "{t}");
    assert!(!t.contains("note:"), "{t}");
    assert_eq!(s.fits()[1].result.draws.chains.len(), 2);
    // typed on the :fit line, an option of another method is refused, as in `bayesc fit`
    let e = err(&mut s, ":fit qbvi --chains 2");
    assert!(e.contains("--chains applies to --method nuts"), "{e}");
    // after `:set method nuts` the settings apply and nothing is noted; switching back notes
    // the settings the method leaves out
    assert_eq!(ok(&mut s, ":set method nuts"), "method = nuts\n");
    assert!(!ok(&mut s, ":set").contains("not used"));
    let t = ok(&mut s, ":set method qbvi");
    assert!(
        t.contains("note: the session default warmup = 150 applies to nuts"),
        "{t}"
    );
}

/// `:fits` lists an optimize fit as a point estimate with its convergence and the log density
/// at the mode (not "1 chain(s) × 1 draws"), in the same columns as the other fits, which show
/// how they ended too; no NaN and no empty column.
#[test]
fn fits_lists_an_optimize_fit_with_its_mode_and_convergence() {
    let mut s = session();
    ok(&mut s, ":fit optimize --seed 1 as opt");
    ok(&mut s, ":fit optimize --seed 1 --iter 1 as short");
    ok(&mut s, ":fit laplace --seed 1 as lap");
    ok(
        &mut s,
        ":fit nuts --seed 1 --chains 2 --warmup 100 --samples 100 as n",
    );
    let t = ok(&mut s, ":fits");
    assert!(!t.contains("NaN") && !t.contains("   1 draws"), "{t}");
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 4, "{t}");
    assert!(
        lines[0].contains("optimize")
            && lines[0].contains("point estimate (L-BFGS)")
            && lines[0].contains("converged, log density at the mode 0.125000 (without Jacobian)"),
        "{t}"
    );
    // one L-BFGS iteration, then the Newton polish reaches the optimum (verified by the
    // Newton decrement), so this fit is converged too
    assert!(
        lines[1].contains("  converged, log density at the mode 0.125000"),
        "{t}"
    );
    assert!(
        lines[2].contains("1 chain(s) × 1000 draws  finished, ELBO"),
        "{t}"
    );
    assert!(
        lines[3].contains("2 chain(s) × 100 draws") && lines[3].contains("divergences"),
        "{t}"
    );
    // one set of columns: the seed, time and model start at the same place on every line
    for col in ["seed 1", " s  <repl>"] {
        let at: Vec<Option<usize>> = lines
            .iter()
            .map(|l| l.find(col).map(|b| l[..b].chars().count()))
            .collect();
        assert!(at.iter().all(|a| a.is_some() && *a == at[0]), "{col}: {t}");
    }
}

/// `:summary` of an optimize fit is what `bayesc fit --method optimize` prints — estimates,
/// standard errors, the log density at the optimum and whether it converged — with the
/// generated quantities at the estimate; a run stopped by `--iter` says it did not converge
/// (in `:summary` and `:diagnostics`), not just print its estimates.
#[test]
fn summary_of_an_optimize_fit_says_whether_it_converged() {
    let mut s = session();
    ok(&mut s, "generated quantities {\n  real m2 = 2 * mu;\n}");
    ok(&mut s, ":fit optimize --seed 1 as opt");
    let t = ok(&mut s, ":summary");
    assert!(!t.contains("NaN"), "{t}");
    assert!(
        t.contains("log density at the optimum = 0.125000 (without the Jacobian adjustment)")
            && t.contains("\nconverged: "),
        "{t}"
    );
    assert_eq!(cells(&t, "m2"), ["2.00000", "-"], "{t}");
    assert!(t.contains("m2: generated quantity"), "{t}");
    // one L-BFGS iteration: the Newton polish finishes the job and the report says how
    ok(&mut s, ":fit optimize --seed 1 --iter 1 as short");
    let t = ok(&mut s, ":summary short");
    assert!(
        t.contains("converged: the Newton polish reached the optimum"),
        "{t}"
    );
    let t = ok(&mut s, ":diagnostics short");
    assert!(
        t.contains("which L-BFGS had not reached in 1 iteration") && !t.contains("no diagnostics"),
        "{t}"
    );
}

/// A posterior expression after an optimize fit is its value at the estimate, without the
/// "sd NaN" and one-draw quantiles of a summary over draws; a reduction over draws (a
/// probability, sd or quantile) is refused with the reason.
#[test]
fn an_expression_on_an_optimize_fit_is_its_value_at_the_estimate() {
    let mut s = session();
    ok(&mut s, ":fit optimize --seed 1 as opt");
    let t = ok(&mut s, "2 * mu");
    assert!(!t.contains("NaN") && !t.contains("draws"), "{t}");
    assert!(
        t.starts_with("2 * mu = 2.000  (at the estimate of opt, a point estimate"),
        "{t}"
    );
    for e in ["mean(mu > 0)", "sd(mu)", "quantile(mu, 0.9)"] {
        let t = err(&mut s, e);
        assert!(
            t.contains("opt is a point estimate (optimize), not posterior draws"),
            "{t}"
        );
    }
}

#[test]
fn words_beyond_a_commands_synopsis_are_an_error() {
    let mut s = session();
    ok(&mut s, ":fit qbvi --seed 1 as q");
    // `:summary [FIT]`: a second word was once ignored, printing the whole table
    let e = err(&mut s, ":summary q n");
    assert!(
        e.starts_with("error: `:summary` takes at most one argument; `n` is left over\n"),
        "{e}"
    );
    assert!(e.contains("  usage: :summary [FIT]\n"), "{e}");
    assert!(!e.contains("name "), "no table: {e}");
    // a quantity among the words, in either order, points to `:param`
    for input in [":summary q mu", ":summary mu q"] {
        let e = err(&mut s, input);
        assert!(
            e.contains("help: to summarise one quantity, `:param mu q`"),
            "{e}"
        );
    }
    let e = err(&mut s, ":summary sigma");
    assert!(
        e.contains("help: `sigma` is a quantity of q, not a fit: `:param sigma` summarises it"),
        "{e}"
    );
    assert!(ok(&mut s, ":summary q").contains("sigma"));
    assert!(ok(&mut s, ":summary").contains("sigma"));
    for (input, takes) in [
        (
            ":diagnostics q x",
            "`:diagnostics` takes at most one argument; `x`",
        ),
        (":elbo q x", "`:elbo` takes at most one argument; `x`"),
        (":fits all", "`:fits` takes no arguments; `all`"),
        (":show all", "`:show` takes no arguments; `all`"),
        (":reload now", "`:reload` takes no arguments; `now`"),
        (":q now", "`:quit` takes no arguments; `now`"),
    ] {
        let o = s.execute(input);
        assert!(o.is_error && !o.quit, "{input}: {o:?}");
        assert!(o.text.contains(takes), "{input}: {}", o.text);
    }
}

#[test]
fn help_on_one_command() {
    let mut s = session();
    let h = ok(&mut s, ":help summary");
    assert!(h.starts_with(":summary [FIT]\n  posterior summary"), "{h}");
    assert!(h.contains("short form: :s"), "{h}");
    assert_eq!(ok(&mut s, ":help :s"), h);
    assert!(ok(&mut s, ":help").contains(":help [COMMAND]"));
    let e = err(&mut s, ":help sumary");
    assert!(e.contains("did you mean `:summary`?"), "{e}");
}

#[test]
fn fit_names_and_save_arguments_get_clear_errors() {
    let mut s = session();
    let e = err(&mut s, ":fit qbvi as");
    assert!(e.contains("`as` at the end of `:fit` needs a name"), "{e}");
    let e = err(&mut s, ":fit qbvi as a b");
    assert!(
        e.contains("names the fit with one word; got `as a b`"),
        "{e}"
    );
    assert!(!e.contains("unexpected argument"), "{e}");
    assert!(s.fits().is_empty());
    ok(&mut s, ":fit qbvi --seed 1 as q");
    // `:save q` would have written a file called `q`
    let dir = tempfile::tempdir().unwrap();
    let cwd = std::env::current_dir().unwrap();
    let e = err(&mut s, ":save q");
    assert!(
        e.contains("`q` is the name of a fit; give the file too: `:save q FILE`"),
        "{e}"
    );
    assert!(!cwd.join("q").exists());
    let file = dir.path().join("q.csv");
    let o = ok(&mut s, &format!(":save q {}", file.display()));
    assert!(o.starts_with("q draws written to"), "{o}");
    assert!(file.exists());
    // indexing a scalar says so
    let e = err(&mut s, "mean(mu[1] > 0)");
    assert!(e.contains("`mu` is a scalar; it has no elements"), "{e}");
}

#[test]
fn settings_lines_and_elbo_traces_match_the_method() {
    let mut s = session();
    // fixed_param has no warmup (as `bayesc fit` says); optimize names its algorithm
    let o = ok(&mut s, ":fit fixed_param --seed 1 --samples 3 as fp");
    let first = o.lines().next().unwrap();
    assert!(
        first.starts_with("fp: method = fixed_param (parameters fixed")
            && first.contains("4 chains × 3 draws")
            && !first.contains("warmup"),
        "{o}"
    );
    let o = ok(&mut s, ":fit optimize --algorithm newton --seed 1 as opt");
    assert!(
        o.starts_with("opt: method = optimize (Newton + Newton polish"),
        "{o}"
    );
    // :elbo reads QNVB's trace too, and names the fits it applies to
    ok(&mut s, ":fit qnvb --seed 1 as qn");
    let e = ok(&mut s, ":elbo qn");
    assert!(
        e.starts_with("ELBO over ") && !e.contains("best smoothed"),
        "{e}"
    );
    let e = err(&mut s, ":elbo opt");
    assert!(
        e.starts_with("error: opt (an optimize fit) keeps no ELBO trace; :elbo applies to"),
        "{e}"
    );
}

/// `:elbo` of a minibatch fit shows two series, each named for what it is: the per-iteration
/// batch estimates, and the full-data ELBO of the exit rule's epoch checks with its smoothed
/// values (the best smoothed value was printed next to the batch estimates, as if it smoothed
/// them).
#[test]
fn elbo_of_a_minibatch_fit_names_its_two_series() {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut s = Session::new();
    s.set_progress(false);
    ok(&mut s, &format!(":load {root}/examples/labour/model.bayes"));
    ok(&mut s, &format!(":data {root}/examples/labour/labour.csv"));
    ok(&mut s, ":fit ivon --batch-size 50 --seed 1 as mb");
    let e = ok(&mut s, ":elbo mb");
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 6, "{e}");
    // 753 rows at M = 50: 15 batches an epoch, one check per epoch
    assert!(
        lines[0].starts_with("batch ELBO estimates over ")
            && lines[0].contains(" iterations, one batch each (first "),
        "{e}"
    );
    let iterations: usize = lines[0]["batch ELBO estimates over ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        lines[3].starts_with(&format!(
            "full-data ELBO at {} epoch checks (the exit rule's statistic; first ",
            iterations / 15
        )) && lines[3].contains("; smoothed: last -47")
            && lines[3].contains(", best -47"),
        "{e}"
    );
    assert!(!lines[0].contains("smoothed"), "{e}");
    assert!(lines[1].chars().count() <= 60 && lines[4].chars().count() <= 60);
    // `:plot elbo` labels them the same way
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("elbo.svg");
    ok(&mut s, &format!(":plot elbo {}", svg.display()));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.contains("batch ELBO estimate") && text.contains("smoothed full-data ELBO"),
        "the legend names the series"
    );
    // a full-batch fit keeps the one series
    ok(&mut s, ":fit ivon --seed 1 as fb");
    let e = ok(&mut s, ":elbo fb");
    assert!(
        e.starts_with("ELBO over ") && e.contains("best smoothed"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 3, "{e}");
}

#[test]
fn a_fit_name_given_to_plot_is_not_taken_for_a_quantity() {
    let mut s = session();
    ok(&mut s, ":fit qbvi --seed 1 as a");
    ok(&mut s, ":fit qbvi --seed 2 as b");
    let e = err(&mut s, ":plot trace mu a");
    assert!(
        e.starts_with(
            "error: `a` is a fit, but `:plot` draws the last fit, b; to plot a, `:save a FILE.csv`"
        ),
        "{e}"
    );
    let e = err(&mut s, ":plot trace mu b");
    assert!(
        e.starts_with("error: `b` is the last fit, which `:plot` draws anyway"),
        "{e}"
    );
    assert!(!std::path::Path::new("b_trace.svg").exists());
}

/// `:fit mh` above MH's dimension limit is refused before the settings line, which would
/// describe a run that never starts.
#[test]
fn mh_above_its_dimension_limit_fails_before_the_settings_line() {
    let mut s = Session::new();
    s.set_progress(false);
    ok(&mut s, "parameters {\n  vector[51] z;\n}");
    ok(&mut s, "model {\n  z ~ normal(0, 1);\n}");
    let e = err(&mut s, ":fit mh --seed 1");
    assert!(
        e.starts_with("error: mh failed: the model has d = 51 unconstrained parameters"),
        "{e}"
    );
    assert!(!e.contains("method = mh"), "{e}");
    assert!(s.fits().is_empty());
}

/// The number after `= ` in an expression's answer (`mean(mu > 0) = 0.6930  (MCSE …`).
fn answer(text: &str) -> f64 {
    let rest = text.split(" = ").nth(1).unwrap_or_else(|| panic!("{text}"));
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

/// `to_int` in a posterior expression truncates each draw toward zero, as in a model: the
/// share of draws with `to_int(mu) == 0` is the share with -1 < mu < 1, and `to_int(mu) == -1`
/// the share with -2 < mu ≤ -1. A value outside the int range is the model's error.
#[test]
fn to_int_in_a_posterior_expression_truncates_toward_zero() {
    let mut s = session();
    ok(&mut s, ":fit qbvi --seed 1 as q");
    let zero = answer(&ok(&mut s, "mean(to_int(mu) == 0)"));
    assert_eq!(zero, answer(&ok(&mut s, "mean(mu > -1 && mu < 1)")));
    let minus = answer(&ok(&mut s, "mean(to_int(mu) == -1)"));
    assert_eq!(minus, answer(&ok(&mut s, "mean(mu > -2 && mu <= -1)")));
    // mu ~ N(1, 2): both shares are well away from 0 and 1
    assert!(
        zero > 0.2 && zero < 0.6 && minus > 0.05 && minus < 0.3,
        "{zero} {minus}"
    );
    let e = err(&mut s, "mean(to_int(mu * 1e10) > 0)");
    assert!(
        e.contains("is not in the range of int (-2147483648 to 2147483647)")
            && e.contains("(the first draw where it fails)"),
        "{e}"
    ); // a huge value is shown in exponent form, not as its 301 digits
    let e = err(&mut s, "to_int(mu * 0 + 1e300)");
    assert_eq!(
        headline(&e),
        "to_int: 1e300 is not in the range of int (-2147483648 to 2147483647)"
    );
}

/// The help line of an error in an expression of constants only (`7 %/% 0`).
const CONSTANT_HELP: &str = "help: the expression is made of constants only (it reads no \
                             draws), so it fails as written, whatever the fit";

const RANGE: &str = "outside the range of int (-2147483648 to 2147483647); int is 32-bit, as \
                     in Stan: to compute with larger values, convert to real first (e.g. \
                     `1.0 * n`)";

/// The first line of a rendered error, after `error: `.
fn headline(e: &str) -> &str {
    let first = e.lines().next().unwrap_or(e);
    first.strip_prefix("error: ").unwrap_or(first)
}

/// Int arithmetic in a posterior expression is the model's: range-checked with the model's
/// integer-overflow message (the operation at the first failing draw and its true value), not
/// a value past the 32-bit int; mixed with a real it is real arithmetic.
#[test]
fn int_arithmetic_in_a_posterior_expression_is_range_checked() {
    let mut s = session();
    ok(&mut s, ":fit qbvi --seed 1 as q");
    let at_first = "help: at draw 1 of chain 1 (the first draw where it fails)";
    let cases = [
        (
            "to_int(mu * 0 + 3) * 1000000000",
            "`3 * 1000000000` is 3000000000",
        ),
        (
            "mean((mu > -1e9) + 2147483647)",
            "`1 + 2147483647` is 2147483648",
        ),
        (
            "-2147483647 - to_int(mu * 0 + 2)",
            "`-2147483647 - 2` is -2147483649",
        ),
        ("-(-2147483647 - 1)", "`-(-2147483648)` is 2147483648"),
        ("abs(-2147483647 - 1)", "`abs(-2147483648)` is 2147483648"),
    ];
    for (input, what) in cases {
        let e = err(&mut s, input);
        assert_eq!(headline(&e), format!("integer overflow: {what}, {RANGE}"));
        // an operation on constants fails whatever the draws: its help says so
        let help = if input.contains("mu") {
            at_first
        } else {
            CONSTANT_HELP
        };
        assert!(e.contains(help), "{e}");
    }
    // a real operand makes it real arithmetic, as in a model
    let big = answer(&ok(&mut s, "mean(to_int(mu * 0 + 3) * 1000000000.0)"));
    assert_eq!(big, 3e9);
    // up to the largest int exactly (answers print 4 significant digits)
    let top = "mean(to_int(mu * 0 + 2) * 1000000000 + 147483647 - 2147483600)";
    assert_eq!(answer(&ok(&mut s, top)), 47.0);
}

/// `%/%`, `%` and `/` of ints by zero in a posterior expression are an error naming the
/// expression (as the model's check of `5 % 0`), not NaN or infinity; by a non-zero int they
/// truncate toward zero, `/` with the model's integer-division warning before the answer.
#[test]
fn int_division_by_zero_in_a_posterior_expression_is_an_error() {
    let mut s = session();
    ok(&mut s, ":fit qbvi --seed 1 as q");
    let cases = [
        (
            "mean(to_int(mu) %/% 0)",
            "integer division by zero in `to_int(mu) %/% 0`",
        ),
        (
            "to_int(mu) % (to_int(mu) - to_int(mu))",
            "integer modulus by zero in `to_int(mu) % (to_int(mu) - to_int(mu))`",
        ),
        ("mu %/% 0", "integer division by zero in `mu %/% 0`"),
        (
            "to_int(mu) / 0",
            "integer division by zero in `to_int(mu) / 0`",
        ),
    ];
    for (input, message) in cases {
        let e = err(&mut s, input);
        assert_eq!(headline(&e), message);
        assert!(
            e.contains("help: at draw 1 of chain 1 (the first draw where it fails)"),
            "{e}"
        );
    }
    assert_eq!(answer(&ok(&mut s, "mean(to_int(mu * 0 - 7) %/% 2)")), -3.0);
    assert_eq!(answer(&ok(&mut s, "mean(to_int(mu * 0 - 7) % 3)")), -1.0);
    let third = ok(&mut s, "mean(to_int(mu * 0 - 7) / 3)");
    assert!(
        third.starts_with(
            "warning: integer division `to_int((mu * 0) - 7) / 3` rounds towards zero\n"
        ) && third.contains(
            "help: write `to_int((mu * 0) - 7) * 1.0 / 3` for real division, or \
             `to_int((mu * 0) - 7) %/% 3` if rounding is intended"
        ),
        "{third}"
    );
    assert_eq!(answer(third.lines().last().unwrap()), -2.0);
    // a real operand is real division, without the warning
    let real = ok(&mut s, "mean(to_int(mu * 0 - 7) / 2.0)");
    assert!(!real.contains("warning"), "{real}");
    assert_eq!(answer(&real), -3.5);
    // as in a model, only the branch of `?:` taken at a draw is evaluated there: a guarded
    // division or to_int is no error, the same division unguarded is
    let guarded = ok(&mut s, "mean(to_int(mu) != 0 ? 10 %/% to_int(mu) : 0)");
    assert!(answer(&guarded) > 0.5, "{guarded}");
    let e = err(&mut s, "mean(to_int(mu) == 0 ? 10 %/% to_int(mu) : 0)");
    assert_eq!(
        headline(&e),
        "integer division by zero in `10 %/% to_int(mu)`"
    );
    let nested = "mean(mu > 1e9 ? (mu > 2e9 ? to_int(mu * 1e20) : 2147483647 + 1) : 1)";
    assert_eq!(answer(&ok(&mut s, nested)), 1.0);
    let e = err(&mut s, "(-2147483647 - 1) / -1");
    assert_eq!(
        headline(&e),
        format!("integer overflow: `-2147483648 / -1` is 2147483648, {RANGE}")
    );
}

/// A NaN or ∞ in an expression's answer is explained: `log(-sigma)` is NaN at every draw and
/// `sigma / 0` infinite, which printed "NaN" and "5% NaN, 95% NaN" without a word
/// (fresh-user testing); all-infinite draws have infinite quantiles.
#[test]
fn non_finite_expression_values_are_explained() {
    let mut s = session();
    ok(&mut s, ":fit qbvi --seed 1");
    let log = ok(&mut s, "log(-sigma)");
    assert!(
        log.contains("note: the expression is NaN at 1000 of 1000 draws (an argument outside a function's domain"),
        "{log}"
    );
    let inf = ok(&mut s, "sigma / 0");
    assert!(inf.contains("5% inf, 95% inf"), "{inf}");
    assert!(
        inf.contains("note: the expression is infinite at 1000 of 1000 draws (a division by 0"),
        "{inf}"
    );
    let fine = ok(&mut s, "mu + 1");
    assert!(!fine.contains("note:"), "{fine}");
}

/// `:param beta[0]` and the expressions `beta[9]` and `beta[0]` word an index out of range the
/// same way: Stan's indices start at 1, and the valid range. A failing expression of
/// constants (`7 %/% 0`) has a help line that fits it, not "the first draw where it fails".
#[test]
fn range_errors_share_one_wording_and_constant_errors_name_no_draw() {
    let mut s = Session::new();
    s.set_progress(false);
    ok(&mut s, "parameters {\n  vector[3] beta;\n}");
    ok(&mut s, "model {\n  beta ~ normal(0, 1);\n}");
    ok(&mut s, ":fit qbvi --seed 1 as q");
    let want = |name: &str| {
        format!(
            "`{name}` is out of range: indices start at 1, as in Stan, and the elements run \
             from `beta[1]` to `beta[3]`"
        )
    };
    assert_eq!(headline(&err(&mut s, ":param beta[0]")), want("beta[0]"));
    assert_eq!(headline(&err(&mut s, ":param beta[4]")), want("beta[4]"));
    assert_eq!(headline(&err(&mut s, "beta[9]")), want("beta[9]"));
    assert_eq!(headline(&err(&mut s, "mean(beta[0])")), want("beta[0]"));
    // an unknown name is still named as such, with a suggestion
    let e = err(&mut s, ":param bta[1]");
    assert!(
        e.contains("`bta[1]` is not in the draws of q") && e.contains("`beta`"),
        "{e}"
    );
    for (input, message) in [
        ("7 %/% 0", "integer division by zero in `7 %/% 0`"),
        ("beta[1] + 7 % 0", "integer modulus by zero in `7 % 0`"),
    ] {
        let e = err(&mut s, input);
        assert_eq!(headline(&e), message);
        assert!(e.contains(CONSTANT_HELP), "{e}");
        assert!(!e.contains("first draw"), "{e}");
    }
    // a constant division inside a branch taken at some draws fails at the first of them
    let e = err(&mut s, "mean(beta[1] > -100 ? 7 %/% 0 : 1)");
    assert!(
        e.contains("help: at draw 1 of chain 1 (the first draw where it fails)"),
        "{e}"
    );
}

/// A `:fit` whose generated quantities fail at some draws stores the fit and prints the
/// failure as an error (as `bayesc fit`, which exits with status 3), so that a script's exit
/// code says so (docs/generated_quantities.md).
#[test]
fn a_fit_whose_generated_quantities_fail_is_an_error_that_keeps_the_fit() {
    let mut s = Session::new();
    s.set_progress(false);
    ok(
        &mut s,
        "parameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n\
         generated quantities {\n  real b = normal_rng(0, mu);\n}",
    );
    let out = err(&mut s, ":fit qbvi --seed 1 as g");
    assert!(
        out.contains("ERROR: the generated quantities failed at ")
            && out.contains("of 1000 draws (b at "),
        "{out}"
    );
    assert!(!out.contains("WARNING: the generated quantities"), "{out}");
    // stored: its quantities can be inspected
    let mu = ok(&mut s, ":param mu g");
    assert!(mu.contains("mu"), "{mu}");
}

/// Session 18, tester finding 3: a decimal index is no position, so `:param beta[1.5]` and the
/// expression `beta[1.5]` say an index must be an integer and name the ones around it (they
/// used to say "out of range", and "must be integer constants"); `beta[2.0]` names `beta[2]`.
/// Finding 2: a transformed parameter assigned `log(s)` under `~` warns as `log(s) ~` does.
#[test]
fn a_decimal_index_names_the_integer_positions() {
    let mut s = Session::new();
    s.set_progress(false);
    ok(&mut s, "parameters {\n  vector[3] beta;\n}");
    ok(&mut s, "model {\n  beta ~ normal(0, 1);\n}");
    ok(&mut s, ":fit qbvi --seed 1 as q");
    let e = err(&mut s, ":param beta[1.5]");
    assert_eq!(
        headline(&e),
        "`beta[1.5]`: an index must be an integer, found `1.5`"
    );
    assert!(
        e.contains("help: positions are whole numbers counted from 1: `beta[1]` or `beta[2]`"),
        "{e}"
    );
    assert!(!e.contains("out of range"), "{e}");
    let e = err(&mut s, ":param beta[2.0]");
    assert!(
        e.contains("`beta[2]`") && !e.contains("out of range"),
        "{e}"
    );
    let e = err(&mut s, "beta[1.5]");
    assert_eq!(headline(&e), "an index must be an integer, found `1.5`");
    assert!(e.contains("`beta[1]` or `beta[2]`"), "{e}");
    // integer indexes still read the draws, and out of range stays out of range
    ok(&mut s, ":param beta[2]");
    assert!(err(&mut s, ":param beta[4]").contains("out of range"));

    let mut s = Session::new();
    s.set_progress(false);
    ok(&mut s, "parameters {\n  real<lower=0> s;\n}");
    ok(&mut s, "transformed parameters {\n  real ls = log(s);\n}");
    let w = ok(&mut s, "model {\n  ls ~ normal(0, 1);\n}");
    assert!(
        w.contains("non-linear transform of a parameter")
            && w.contains("`ls` is assigned this non-linear value"),
        "{w}"
    );
}

/// `:diagnostics` gives the verdict `:fit` gave: an IVON fit of labour with batches of 5 rows
/// (seed 1), whose steps made q worse, was "NOT converged" in `:fit` and `:fits` but "stop
/// reason: converged (the smoothed-ELBO exit rule fired)" in `:diagnostics`.
#[test]
fn diagnostics_stop_reason_agrees_with_the_fit_verdict() {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut s = Session::new();
    s.set_progress(false);
    ok(&mut s, &format!(":load {root}/examples/labour/model.bayes"));
    ok(&mut s, &format!(":data {root}/examples/labour/labour.csv"));
    let fit = ok(&mut s, ":fit ivon --batch-size 5 --seed 1 as iv");
    assert!(fit.contains("NOT converged after"), "{fit}");
    let d = ok(&mut s, ":diagnostics iv");
    let line = d.lines().find(|l| l.starts_with("stop reason:")).unwrap();
    assert!(
        line.starts_with(
            "stop reason: the exit rule fired; NOT converged: the full-data ELBO averaged -497.984"
        ),
        "{d}"
    );
    assert!(!d.contains("stop reason: converged"), "{d}");
    let fits = ok(&mut s, ":fits");
    assert!(fits.contains("NOT converged"), "{fits}");
    // a clean fit still says so, after what fired
    ok(&mut s, ":fit qbvi --seed 1 as q");
    let d = ok(&mut s, ":diagnostics q");
    assert!(
        d.contains("stop reason: the exit rule fired; converged\n"),
        "{d}"
    );
}
