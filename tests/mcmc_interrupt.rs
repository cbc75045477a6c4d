//! An interrupted MCMC fit (Ctrl-C, i.e. `Monitor::stop`) with several chains: chains stop at
//! different iterations and some never reach sampling; `fit::fit` drops the chains without
//! post-warmup draws and trims the others to the shortest (`fit::trim_interrupted`), so the
//! summary (R-hat, ESS) can be computed. One rayon thread runs the chains in order, which makes
//! the stopping points deterministic. Also: every method refuses a model with no parameters.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use bayesc::fit::{self, FitDetails, FitOptions, Method, Monitor, ProgressEvent};
use bayesc::output::summary;

const MODEL: &str = "parameters { real mu; real<lower=0> sigma; }\n\
                     model { mu ~ normal(1, 2); sigma ~ lognormal(0, 0.5); }\n\
                     generated quantities { real z = normal_rng(mu, sigma); }\n";

/// NUTS with 4 chains × (100 warmup + 100 draws) on one thread; `stop` is raised from the
/// progress callback when `when(chain, iteration)` holds.
fn interrupted_fit(when: impl Fn(usize, usize) -> bool + Sync) -> fit::FitResult {
    interrupted_fit_with(when, &options(false))
}

/// The options of [`interrupted_fit`], with `--save-warmup` or without.
fn options(save_warmup: bool) -> FitOptions {
    let mut options = FitOptions::new(Method::Nuts, 7);
    options.mcmc.chains = 4;
    options.mcmc.warmup = 100;
    options.mcmc.samples = 100;
    options.mcmc.save_warmup = save_warmup;
    options
}

/// [`interrupted_fit`] with `options`.
fn interrupted_fit_with(
    when: impl Fn(usize, usize) -> bool + Sync,
    options: &FitOptions,
) -> fit::FitResult {
    let model = common::compile_source("interrupt.bayes", MODEL, None, &[]);
    let stop = AtomicBool::new(false);
    let on_progress = |e: ProgressEvent| {
        if let ProgressEvent::Chain(p) = e
            && when(p.chain, p.iteration)
        {
            stop.store(true, Ordering::SeqCst);
        }
    };
    let monitor = Monitor {
        on_progress: &on_progress,
        stop: &stop,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| fit::fit(&model, options, &monitor))
        .expect("an interrupted fit is not an error")
}

#[test]
fn unequal_chains_are_trimmed_and_empty_ones_dropped() {
    // chain 1 runs to the end (100 draws), chain 2 stops after 30 post-warmup draws (the
    // callback fires at iteration 130, the stop is seen before iteration 131), chains 3 and 4
    // stop before their first warmup iteration
    let r = interrupted_fit(|c, i| c == 1 && i >= 130);
    let FitDetails::Mcmc(out) = &r.details else {
        panic!("an MCMC fit")
    };
    assert!(out.interrupted);
    assert_eq!(out.chains.len(), 2);
    assert_eq!(r.draws.chains.len(), 2);
    assert_eq!(r.draws.n_draws(), 30);
    let k = r.draws.names.len();
    assert_eq!(k, 3); // mu, sigma, z
    for (c, chain) in out.chains.iter().enumerate() {
        assert_eq!(chain.stats.len(), 30);
        assert_eq!(chain.stats.energy.len(), 30);
        assert_eq!(chain.draws.len(), 30 * out.dim);
        assert_eq!(r.draws.chains[c].len(), 30 * k);
    }
    // the kept draws are the first 30 of each chain: the constrained sigma is exp of the
    // unconstrained draw
    for c in 0..2 {
        for i in 0..30 {
            let zeta = out.chains[c].draws[i * 2 + 1];
            let sigma = r.draws.chains[c][i * k + 1];
            assert!((sigma - zeta.exp()).abs() <= 1e-12 * sigma);
        }
    }
    let rows = summary::summarize(&r.draws, true);
    assert!(rows.iter().all(|row| row.rhat.is_some_and(f64::is_finite)));
}

/// The message of an interrupted run says where each chain was and why chains 3 and 4 have no
/// draws: one thread runs one chain at a time, so they had not started (the fresh-user finding:
/// on 2 cores a Ctrl-C kept 2 of 4 chains without saying why).
#[test]
fn the_interruption_message_says_which_chains_had_not_started_and_why() {
    use bayesc::inference::mcmc::ChainEnd;
    let r = interrupted_fit(|c, i| c == 1 && i >= 130);
    let FitDetails::Mcmc(out) = &r.details else {
        panic!("an MCMC fit")
    };
    assert_eq!(
        out.chain_ends,
        vec![
            ChainEnd::Finished,
            ChainEnd::Sampling(30),
            ChainEnd::NotStarted,
            ChainEnd::NotStarted
        ]
    );
    assert_eq!(out.parallel_chains, 1);
    let mut options = FitOptions::new(Method::Nuts, 7);
    options.mcmc.chains = 4;
    let text = bayesc::output::report::mcmc_text(&r, out, &options);
    assert!(
        text.contains(
            "Of the 4 chains, 1 had finished (chain 1), 1 was sampling (chain 2) and 2 had not \
             started (chains 3 and 4): chains run in parallel, at most 1 at a time (one per \
             core, or --threads), so chains 3 and 4 were still waiting for a free core when \
             the stop came"
        ),
        "{text}"
    );
    // a stop in warmup: chain 1 was in warmup (50 iterations), the others had not started
    let r = interrupted_fit(|c, i| c == 0 && i >= 50);
    let FitDetails::Mcmc(out) = &r.details else {
        panic!("an MCMC fit")
    };
    assert_eq!(out.chain_ends[0], ChainEnd::Warmup(50));
    let text = bayesc::output::report::mcmc_text(&r, out, &options);
    assert!(
        text.contains(
            "Of the 4 chains, 1 was in warmup (chain 1) and 3 had not started (chains 2–4)"
        ),
        "{text}"
    );
}

#[test]
fn a_stop_during_warmup_of_every_chain_leaves_no_chains() {
    let r = interrupted_fit(|c, i| c == 0 && i >= 50);
    let FitDetails::Mcmc(out) = &r.details else {
        panic!("an MCMC fit")
    };
    assert!(out.interrupted);
    assert!(out.chains.is_empty());
    assert!(r.draws.chains.is_empty());
    assert_eq!(r.draws.n_draws(), 0);
    // summarising nothing does not panic
    let rows = summary::summarize(&r.draws, true);
    assert_eq!(rows.len(), 3);
    assert!(rows[0].rhat.is_none());
}

#[test]
fn an_uninterrupted_fit_keeps_every_chain() {
    let r = interrupted_fit(|_, _| false);
    let FitDetails::Mcmc(out) = &r.details else {
        panic!("an MCMC fit")
    };
    assert!(!out.interrupted);
    assert_eq!(r.draws.chains.len(), 4);
    assert_eq!(r.draws.n_draws(), 100);
}

/// A model with no parameters: MCMC refuses it when there is nothing to sample, and runs
/// fixed_param sampling (as CmdStan does) when it has generated quantities; every other method
/// refuses both with the same cause.
#[test]
fn mcmc_refuses_a_model_without_parameters() {
    let stop = AtomicBool::new(false);
    let monitor = Monitor {
        on_progress: &|_| {},
        stop: &stop,
    };
    for text in [
        "model { }\n",
        "generated quantities { real y = normal_rng(0, 1); }\n",
    ] {
        let model = common::compile_source("empty.bayes", text, None, &[]);
        let simulates = text.contains("normal_rng");
        for method in [Method::Nuts, Method::Hmc, Method::Mh] {
            let r = fit::fit(&model, &FitOptions::new(method, 1), &monitor);
            if simulates {
                // fixed_param: y ~ normal(0, 1) drawn afresh each of the 4 × 1000 iterations
                let r = r.expect("fixed_param sampling runs");
                let j = r.draws.position("y").unwrap();
                let y: Vec<f64> = r.draws.column(j).concat();
                let n = y.len() as f64;
                let mean = y.iter().sum::<f64>() / n;
                let sd = (y.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
                assert!(
                    y.len() == 4000 && mean.abs() < 0.1 && (sd - 1.0).abs() < 0.05,
                    "{method}: {} draws, mean {mean}, sd {sd}",
                    y.len()
                );
            } else {
                let e = r.expect_err("nothing to sample").to_string();
                assert!(e.contains("no parameters (d = 0)"), "{e}");
                assert!(e.contains("nothing to sample"), "{e}");
            }
        }
        // and every other method refuses it with the same cause, instead of "invalid
        // settings" (QBVI) or "converged" (optimize)
        for method in [
            Method::Qbvi,
            Method::Qnvb,
            Method::Optimize,
            Method::Laplace,
            Method::Pathfinder,
            Method::Vadam,
            Method::Ngbbvi,
        ] {
            let e = fit::fit(&model, &FitOptions::new(method, 1), &monitor)
                .expect_err("d = 0 cannot be fitted")
                .to_string();
            assert!(e.contains("no parameters (d = 0)"), "{method}: {e}");
        }
    }
}

/// `d` independent standard normals.
fn iid_normal(d: usize) -> bayesc::graph::Model {
    let text = format!("parameters {{ vector[{d}] x; }}\nmodel {{ x ~ std_normal(); }}\n");
    common::compile_source("iid.bayes", &text, None, &[])
}

#[test]
fn metropolis_hastings_refuses_dimensions_where_it_cannot_mix() {
    let model = iid_normal(fit::MH_MAX_DIM + 1);
    let mut options = FitOptions::new(Method::Mh, 1);
    options.mcmc = bayesc::inference::mcmc::McmcSettings::mh_defaults(fit::MH_MAX_DIM + 1);
    let stop = AtomicBool::new(false);
    let monitor = Monitor {
        on_progress: &|_| {},
        stop: &stop,
    };
    let e = fit::fit(&model, &options, &monitor)
        .unwrap_err()
        .to_string();
    assert!(e.contains("d = 51") && e.contains("--method nuts"), "{e}");
}

#[test]
fn metropolis_hastings_stops_promptly_when_asked() {
    // d = 50 with the default run (25 000 warmup + 10 000 draws per chain, 4 chains): the stop
    // raised at warmup iteration 200 of the first chain ends every chain.
    let d = fit::MH_MAX_DIM;
    let model = iid_normal(d);
    let mut options = FitOptions::new(Method::Mh, 1);
    options.mcmc = bayesc::inference::mcmc::McmcSettings::mh_defaults(d);
    let stop = AtomicBool::new(false);
    let on_progress = |e: ProgressEvent| {
        if let ProgressEvent::Chain(p) = e
            && p.iteration >= 200
        {
            stop.store(true, Ordering::SeqCst);
        }
    };
    let monitor = Monitor {
        on_progress: &on_progress,
        stop: &stop,
    };
    let t = std::time::Instant::now();
    let r = fit::fit(&model, &options, &monitor).expect("an interrupted fit is not an error");
    let seconds = t.elapsed().as_secs_f64();
    let FitDetails::Mcmc(out) = &r.details else {
        panic!("an MCMC fit")
    };
    assert!(out.interrupted);
    assert!(seconds < 5.0, "stopping took {seconds} s");
}

/// Chains keep their own numbers when an interrupted run drops one in the middle (fresh-user
/// finding: with chain 2 in warmup at the stop, chain 3's draws were written to `_2.csv` with
/// `id = 2`). Built from a run stopped in chain 3's sampling (chains 1 and 2 finished) by
/// dropping chain 2 as if it had been in warmup, as happens when chains run in parallel.
#[test]
fn files_of_an_interrupted_run_keep_their_chain_numbers() {
    use bayesc::inference::mcmc::ChainEnd;
    let mut r = interrupted_fit(|c, i| c == 2 && i >= 130);
    let FitDetails::Mcmc(out) = &mut r.details else {
        panic!("an MCMC fit")
    };
    assert_eq!(out.chains.len(), 3);
    out.chain_ends[1] = ChainEnd::Warmup(50);
    out.chains.remove(1);
    r.draws.chains.remove(1);
    let FitDetails::Mcmc(out) = &r.details else {
        unreachable!()
    };
    assert_eq!(out.chain_ids(), vec![0, 2]);
    let mut options = FitOptions::new(Method::Nuts, 7);
    options.mcmc.chains = 4;
    options.mcmc.warmup = 100;
    options.mcmc.samples = 100;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("draws.csv");
    let files = bayesc::output::fit_files::write_outputs(
        &path,
        &r,
        &options,
        std::path::Path::new("interrupt.bayes"),
    )
    .unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            std::path::Path::new(f)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(names, vec!["draws_1.csv", "draws_3.csv"]);
    let read = |f: &String| bayesc::output::read_stan_csv(std::path::Path::new(f)).unwrap();
    for (file, id) in files.iter().zip(["1", "3"]) {
        let csv = read(file);
        assert!(
            csv.config_lines
                .iter()
                .any(|l| l.trim() == format!("id = {id}")),
            "{file}: {:?}",
            csv.config_lines
        );
        assert_eq!(csv.n_draws, 30);
    }
    // the third chain's file holds the third chain's draws (the second kept)
    let third = read(&files[1]);
    let k = r.draws.names.len();
    let (j, jm) = (
        third.names.iter().position(|n| n == "mu").unwrap(),
        r.draws.names.iter().position(|n| n == "mu").unwrap(),
    );
    for i in [0, 29] {
        let ours = r.draws.chains[1][i * k + jm];
        let theirs = third.values[i * third.names.len() + j];
        assert!(
            (ours - theirs).abs() <= 1e-5 * ours.abs().max(1.0),
            "{ours} vs {theirs}"
        );
    }
    // and the summary says which chains are there
    let text = bayesc::output::report::mcmc_text(&r, out, &options);
    assert!(
        text.contains("2 chains (chains 1 and 3) × 30 draws kept (of 4 chains"),
        "{text}"
    );
}

/// With `--save-warmup`, a stop during warmup keeps the warmup draws streamed so far (the rule:
/// nothing the user fitted is lost): the old code deleted every file ("nothing written: the fit
/// has no draws"). One thread: chain 1 is stopped after 50 of its 100 warmup iterations, the
/// others had not started; chain 1's file keeps its 50 warmup rows and says where it stopped,
/// and no file is made for the chains that had not started.
#[test]
fn a_stop_in_warmup_keeps_the_saved_warmup_draws() {
    let model = common::compile_source("interrupt.bayes", MODEL, None, &[]);
    let mut options = FitOptions::new(Method::Nuts, 7);
    options.mcmc.chains = 4;
    options.mcmc.warmup = 100;
    options.mcmc.samples = 100;
    options.mcmc.save_warmup = true;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sw.csv");
    let files = bayesc::output::stan_stream::ChainFiles::new(
        &path,
        std::path::Path::new("interrupt.bayes"),
        &options,
        &fit::draw_names(&model),
        2,
    );
    let stop = AtomicBool::new(false);
    let on_progress = |e: ProgressEvent| {
        if let ProgressEvent::Chain(p) = e
            && p.chain == 0
            && p.iteration >= 50
        {
            stop.store(true, Ordering::SeqCst);
        }
    };
    let monitor = Monitor {
        on_progress: &on_progress,
        stop: &stop,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let r = pool
        .install(|| fit::fit_with_stream(&model, &options, &monitor, Some(&files)))
        .expect("an interrupted fit is not an error");
    assert!(r.draws.chains.is_empty());
    let written = files.finish(&r).unwrap();
    assert_eq!(
        written,
        vec![path.with_file_name("sw_1.csv").display().to_string()]
    );
    let text = std::fs::read_to_string(&written[0]).unwrap();
    assert!(
        text.ends_with("# interrupted: 0 of 100 draws, 50 warmup draws (in warmup)\n"),
        "{text}"
    );
    let csv = bayesc::output::read_stan_csv(std::path::Path::new(&written[0])).unwrap();
    assert_eq!((csv.n_draws, csv.warmup_draws), (0, 50));
    assert!(csv.values.is_empty());
    for c in 2..=4 {
        assert!(!path.with_file_name(format!("sw_{c}.csv")).exists());
    }
}

/// With `--save-warmup`, a run stopped in warmup keeps the warmup draws (nothing the user
/// fitted is lost): the fit keeps them (`McmcOutput::warmup_stopped`) and `write_outputs`, which
/// the REPL's `:save` calls, writes the file `bayesc fit --output` streams for such a chain,
/// ending `# interrupted: 0 of 100 draws, 50 warmup draws (in warmup)`. The REPL used to drop
/// them ("nothing stored"), so `:save` wrote nothing (fresh-user finding, session 20). The
/// files of a run interrupted while sampling end `# interrupted: N of M draws` whoever writes
/// them.
#[test]
fn warmup_draws_of_a_run_stopped_in_warmup_are_kept_and_written_marked() {
    let opts = options(true);
    let r = interrupted_fit_with(|c, i| c == 0 && i >= 50, &opts);
    let FitDetails::Mcmc(out) = &r.details else {
        panic!("an MCMC fit")
    };
    assert!(out.interrupted && out.chains.is_empty() && r.draws.chains.is_empty());
    assert_eq!(out.warmup_stopped.len(), 1);
    let w = &out.warmup_stopped[0];
    assert_eq!((w.id, w.chain.warmup_stats.len()), (0, 50));
    assert_eq!(w.values.len(), 50 * r.draws.names.len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("draws.csv");
    let model = std::path::Path::new("interrupt.bayes");
    let files = bayesc::output::fit_files::write_outputs(&path, &r, &opts, model).unwrap();
    assert_eq!(
        files,
        vec![dir.path().join("draws_1.csv").display().to_string()]
    );
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        text.ends_with("# interrupted: 0 of 100 draws, 50 warmup draws (in warmup)\n"),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );
    let csv = bayesc::output::read_stan_csv(std::path::Path::new(&files[0])).unwrap();
    assert_eq!((csv.n_draws, csv.warmup_draws), (0, 50));
    // the first warmup row holds the fit's first kept warmup draw of mu
    let j = csv.names.iter().position(|n| n == "mu").unwrap();
    let jm = r.draws.names.iter().position(|n| n == "mu").unwrap();
    assert!((csv.warmup_values[j] - w.values[jm]).abs() <= 1e-9 * w.values[jm].abs().max(1.0));
    // without --save-warmup nothing is kept, as before
    let r = interrupted_fit(|c, i| c == 0 && i >= 50);
    let FitDetails::Mcmc(out) = &r.details else {
        panic!("an MCMC fit")
    };
    assert!(out.warmup_stopped.is_empty());
    // a run stopped while sampling: the kept chains' files say so on their last line, and the
    // chain stopped in warmup keeps its warmup draws beside them
    let r = interrupted_fit_with(|c, i| c == 1 && i >= 130, &opts);
    let files = bayesc::output::fit_files::write_outputs(&path, &r, &opts, model).unwrap();
    assert_eq!(files.len(), 2, "{files:?}");
    let first = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        first.ends_with("# interrupted: 30 of 100 draws\n"),
        "{first}"
    );
}
