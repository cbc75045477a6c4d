//! `bayesc summary` from draws files reports the sampler checks those files record:
//! divergences, tree-depth saturation and E-BFMI (issue 13, item 11).

use std::fmt::Write as _;
use std::process::Command;

/// One chain in Stan's CSV layout: `energy` and the divergent / saturated draws given, `mu` a
/// deterministic wiggle that differs between chains.
fn chain_csv(chain: usize, energy: &[f64], divergent: &[usize], saturated: &[usize]) -> String {
    let mut s = String::from(
        "# method = sample (Default)\n#   sample\n#     max_depth = 8\n\
         lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,mu\n",
    );
    for (i, e) in energy.iter().enumerate() {
        let depth = if saturated.contains(&i) { 8 } else { 3 };
        let div = u8::from(divergent.contains(&i));
        let mu = ((i * 7 + chain * 13) as f64).sin();
        writeln!(s, "-1.5,0.9,0.3,{depth},7,{div},{e},{mu}").expect("write to a String");
    }
    s
}

#[test]
fn summary_reports_divergences_treedepth_and_e_bfmi_from_the_files() {
    let dir = tempfile::tempdir().expect("temporary folder");
    // chain 1: E alternates 0, 1 (E-BFMI = 99/25 = 3.96); chain 2: E = i/100, a slow drift
    // (E-BFMI = 99·10⁻⁴ / 8.3325 = 0.00119, below 0.3)
    let e1: Vec<f64> = (0..100).map(|i| (i % 2) as f64).collect();
    let e2: Vec<f64> = (0..100).map(|i| i as f64 / 100.0).collect();
    let p1 = dir.path().join("c_1.csv");
    let p2 = dir.path().join("c_2.csv");
    std::fs::write(&p1, chain_csv(0, &e1, &[10, 20, 30], &[5, 6])).expect("write");
    std::fs::write(&p2, chain_csv(1, &e2, &[], &[50])).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .arg("summary")
        .arg(&p1)
        .arg(&p2)
        .output()
        .expect("run bayesc");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("3 of 200 transitions divergent"), "{text}");
    assert!(text.contains("3 at the maximum tree depth (8)"), "{text}");
    assert!(text.contains("E-BFMI per chain: 3.960, 0.001"), "{text}");
    assert!(
        text.contains("3 of 200 (1.5%) transitions ended with a divergence"),
        "{text}"
    );
    assert!(text.contains("chain 2: E-BFMI = 0.001"), "{text}");
    assert!(!text.contains("chain 1: E-BFMI"), "{text}");
}

/// `bayesc summary` of `--method optimize` output shows the point estimate as such (the last
/// row, which with saved iterations is the optimum), with no sd, quantiles, R-hat or ESS; the
/// old code refused it with "the files hold 1 draws per chain", or, with 4 or more saved
/// iterations, summarised the iterations as if they were draws.
#[test]
fn summary_of_an_optimize_file_shows_the_point_estimate() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let config = "# method = optimize\n#   optimize\n#     jacobian = false (Default)\n\
                  lp__,mu,n\n";
    let one = dir.path().join("opt.csv");
    std::fs::write(&one, format!("{config}-3.0638,4.620923,1000000\n")).expect("write");
    let iters = dir.path().join("iters.csv");
    std::fs::write(
        &iters,
        format!("{config}-9.5,0.1,3\n-7.25,2.0,3\n-4.0,4.0,3\n-3.5,4.5,3\n-3.0638,4.620923,3\n"),
    )
    .expect("write");
    for (path, estimate, rows) in [
        (&one, "1000000", ""),
        (&iters, "3", "the last of its 5 rows"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_bayesc"))
            .arg("summary")
            .arg(path)
            .output()
            .expect("run bayesc");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("holds a point estimate, not draws"), "{text}");
        assert!(text.contains("without the Jacobian adjustment"), "{text}");
        assert!(text.contains(rows), "{text}");
        let cells = |name: &str| -> Vec<String> {
            text.lines()
                .find(|l| l.split_whitespace().next() == Some(name))
                .unwrap_or_else(|| panic!("a row `{name}` in {text}"))
                .split_whitespace()
                .map(str::to_string)
                .collect()
        };
        assert_eq!(cells("mu"), ["mu", "4.62092"], "{text}");
        assert_eq!(cells("n"), ["n", estimate], "{text}");
        assert!(text.contains("lp__) = -3.06380"), "{text}");
        assert!(
            !text.contains("R_hat") && !text.contains("ESS_bulk"),
            "{text}"
        );
        assert!(text.contains("--method laplace"), "{text}");
    }
}

/// `bayesc summary` echoes how the fit ended, as its files record it, before the table: the
/// `# interrupted: N of M draws` line of an interrupted MCMC run (the old code printed a clean
/// table and never mentioned it).
#[test]
fn summary_warns_about_an_interrupted_mcmc_file() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let e: Vec<f64> = (0..71).map(|i| (i % 2) as f64).collect();
    let p = dir.path().join("c_1.csv");
    let mut text = chain_csv(0, &e, &[], &[]);
    text.push_str("# interrupted: 71 of 50000 draws\n");
    std::fs::write(&p, text).expect("write");
    let out = summary_of(&p);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let warning = format!("WARNING: `{}`: interrupted: 71 of 50000 draws", p.display());
    let at = text.find(&warning).unwrap_or_else(|| panic!("{text}"));
    assert!(at < text.find("R_hat").expect("an MCMC table"), "{text}");
}

/// `bayesc summary` of an unconverged variational fit's draws file (IVON on labour with
/// batches of 5 rows, seed 1, whose steps made q worse) says so before the table, and shows the
/// table `bayesc fit` shows for variational draws: no R-hat or ESS, which for independent draws
/// of q (1.000 and about 1000 here) read as if the fit were fine.
#[test]
fn summary_of_an_unconverged_variational_file_warns_and_shows_no_rhat() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let root = env!("CARGO_MANIFEST_DIR");
    let p = dir.path().join("iv.csv");
    let fit = Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .args(["fit", &format!("{root}/examples/labour/model.bayes")])
        .args(["--data", &format!("{root}/examples/labour/labour.csv")])
        .args(["--method", "ivon", "--batch-size", "5", "--seed", "1", "-o"])
        .arg(&p)
        .output()
        .expect("run bayesc");
    assert!(
        fit.status.success(),
        "{}",
        String::from_utf8_lossy(&fit.stderr)
    );
    let out = summary_of(&p);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let warning = format!(
        "WARNING: `{}`: not converged: the full-data ELBO averaged -497.984",
        p.display()
    );
    assert!(text.starts_with(&warning), "{text}");
    assert!(
        text.contains("1000 independent draws of the fitted approximation (method = variational)"),
        "{text}"
    );
    // the mean of q at this seed (IVON at M = 5 from the mode, then the refinement): 3.331
    // before the Newton steps crossed the alpha–age ridge (session 20; their curvature's
    // eigenvalues were floored at 0.05 where the ridge's is 0.009), 0.13 from the mean-field
    // optimum's 3.201 (1.6 of its sds); now 3.204
    assert!(text.contains("alpha       3.204"), "{text}");
    assert!(
        !text.contains("R_hat") && !text.contains("ESS_bulk"),
        "{text}"
    );
}

/// `bayesc summary FILE`'s output.
fn summary_of(p: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bayesc"))
        .arg("summary")
        .arg(p)
        .output()
        .expect("run bayesc")
}

/// A file of warmup draws only (a `--save-warmup` run stopped in warmup) is described, marked
/// as warmup and without R-hat or ESS, instead of "error: the files hold 0 draws per chain; a
/// summary needs at least 4" (fresh-user finding, session 20). mu = 1, 2, …, 8: mean 4.5.
#[test]
fn summary_of_a_warmup_only_file_describes_the_warmup_draws_as_such() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let mut csv = String::from(
        "# method = sample (Default)\n#   sample\n#     num_samples = 100\n\
         #     num_warmup = 1000\n#     thin = 1\n#     save_warmup = true\n\
         lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,mu\n",
    );
    for i in 1..=8 {
        writeln!(csv, "-1.5,0.9,0.3,3,7,0,2.0,{i}").expect("write to a String");
    }
    csv.push_str("#\n# interrupted: 0 of 100 draws, 8 warmup draws (in warmup)\n");
    let p = dir.path().join("w_1.csv");
    std::fs::write(&p, csv).expect("write");
    let out = summary_of(&p);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}{err}");
    assert!(!err.contains("error"), "{err}");
    assert!(
        text.contains("the files hold warmup draws only (8 per chain)"),
        "{text}"
    );
    assert!(
        text.contains("WARMUP draws (not a posterior): 1 chain(s) × 8 draws"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("mu "))
        .expect("a row for mu");
    let mean: f64 = row.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!((mean - 4.5).abs() < 1e-9, "{row}");
    let header = text.lines().find(|l| l.starts_with("name")).unwrap();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["name", "mean", "sd", "5%", "50%", "95%"]
    );
}

/// Variational files of two methods, or of two models that share a parameter name, are not one
/// fit: pooling them printed the summary of a mixture ("2 files pooled", a bimodal `mu`) without
/// a word (fresh-user finding, session 21). Two seeds of one method and model still pool.
#[test]
fn summary_refuses_to_pool_variational_files_of_different_methods_or_models() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let root = env!("CARGO_MANIFEST_DIR");
    let fit = |model_name: &str, method: &str, seed: &str| {
        let model = dir.path().join(format!("{model_name}.bayes"));
        let body = if model_name == "a" {
            "parameters { real mu; } model { mu ~ normal(0, 1); }\n"
        } else {
            "parameters { real mu; } model { mu ~ normal(5, 1); }\n"
        };
        std::fs::write(&model, body).unwrap();
        let out = dir.path().join(format!("{model_name}_{method}_{seed}.csv"));
        let o = Command::new(env!("CARGO_BIN_EXE_bayesc"))
            .current_dir(root)
            .arg("fit")
            .arg(&model)
            .args(["--method", method, "--seed", seed, "-q", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let a_bbb = fit("a", "bbb", "1");
    let a_bbb2 = fit("a", "bbb", "2");
    let a_qbvi = fit("a", "qbvi", "1");
    let b_bbb = fit("b", "bbb", "1");
    let both = |p: &std::path::Path, q: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_bayesc"))
            .arg("summary")
            .arg(p)
            .arg(q)
            .output()
            .unwrap()
    };
    let o = both(&a_bbb, &a_qbvi);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("a `bbb` fit but") && err.contains("a `qbvi` fit"),
        "{err}"
    );
    let o = both(&a_bbb, &b_bbb);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("an `a` model but") && err.contains("a `b` model"),
        "{err}"
    );
    let o = both(&a_bbb, &a_bbb2);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 files pooled"));
}
