//! Every flag that [`check_args`] accepts for a method must reach a setting that method
//! reads in [`options_from_args`] (issue 13, item 6: QNVB ignored `--max-iter`).

use super::*;
use clap::Parser;

#[derive(Parser)]
struct Wrapper {
    #[command(flatten)]
    fit: FitArgs,
}

fn parse(extra: &[&str]) -> FitArgs {
    let mut argv = vec!["bayesc", "m.bayes"];
    argv.extend_from_slice(extra);
    use clap::{CommandFactory, FromArgMatches};
    let matches = Wrapper::command()
        .try_get_matches_from(argv)
        .expect("test arguments parse");
    let mut args = Wrapper::from_arg_matches(&matches)
        .expect("test arguments parse")
        .fit;
    args.note_explicit(&matches, &[]);
    args
}

/// The part of the options that `method` reads for `flag`, as text.
fn read(flag: &str, method: fit::Method, o: &FitOptions) -> String {
    use fit::Method as M;
    match (flag, method) {
        ("--draws", _) => format!("{}", o.vi_draws),
        ("--diagonal", _) => format!("{:?}", o.qbvi.covariance),
        ("--mc-samples", _) => format!("{}", o.qbvi.n_samples),
        ("--max-iter", M::Qnvb) => format!("{}", o.qnvb.max_iter),
        ("--max-iter", M::Pathfinder) => format!("{}", o.pathfinder.optimize.max_iter),
        ("--num-paths", _) => format!("{}", o.pathfinder.num_paths),
        ("--history-size", M::Optimize) => format!("{}", o.optimize.history),
        ("--history-size", _) => format!("{}", o.pathfinder.history),
        ("--algorithm", _) => format!("{}", o.optimize.algorithm),
        ("--iter", _) => format!("{}", o.optimize.max_iter),
        ("--tol-grad", _) => format!("{}", o.optimize.tol_grad),
        ("--save-warmup", _) => format!("{}", o.mcmc.save_warmup),
        ("--refresh", _) => format!("{:?}", o.mcmc.refresh),
        ("--num-elbo-draws", _) => format!("{}", o.pathfinder.num_elbo_draws),
        ("--init", _) => format!("{} {:?}", o.mcmc.init_radius, o.mcmc_init),
        ("--max-iter", _) => format!("{}", o.qbvi.max_iter),
        ("--step-size", M::Nuts | M::Hmc) => format!("{}", o.mcmc.step_size),
        ("--step-size", _) => format!("{:?}", o.qbvi.step_size),
        ("--random-init", _) => format!("{:?}", o.vi_init),
        ("--no-refine", _) => format!("{:?}", o.refine_mean),
        ("--psis-resample", _) => format!("{}", o.psis_resample),
        ("--jacobian", _) => format!("{}", o.jacobian),
        ("--se", _) => format!("{}", o.std_errors),
        ("--chains", _) => format!("{}", o.mcmc.chains),
        ("--warmup", _) => format!("{}", o.mcmc.warmup),
        ("--samples", _) => format!("{}", o.mcmc.samples),
        ("--thin", _) => format!("{}", o.mcmc.thin),
        ("--adapt-delta", _) => format!("{}", o.mcmc.adapt_delta),
        ("--max-depth", _) => format!("{}", o.mcmc.max_depth),
        ("--metric" | "--dense", _) => format!("{:?}", o.mcmc.metric),
        ("--n-leapfrog", _) => format!("{:?}", o.mcmc.method),
        _ => panic!("no reader for {flag}"),
    }
}

#[test]
fn every_accepted_flag_changes_a_setting_its_method_reads() {
    let flags: [&[&str]; 31] = [
        &["--draws", "7"],
        &["--init", "0.5"],
        &["--init", "pathfinder"],
        &["--num-paths", "2"],
        &["--history-size", "3"],
        &["--num-elbo-draws", "9"],
        &["--diagonal"],
        &["--mc-samples", "7"],
        &["--max-iter", "7"],
        &["--step-size", "0.3"],
        &["--random-init"],
        &["--no-refine"],
        &["--psis-resample"],
        &["--jacobian"],
        &["--se", "robust"],
        &["--chains", "2"],
        &["--warmup", "7"],
        &["--samples", "7"],
        &["--thin", "2"],
        &["--adapt-delta", "0.95"],
        &["--max-depth", "5"],
        &["--metric", "diag"],
        &["--dense"],
        &["--n-leapfrog", "5"],
        &["--metric", "dense"],
        &["--algorithm", "bfgs"],
        &["--iter", "7"],
        &["--tol-grad", "0.5"],
        &["--save-warmup"],
        &["--refresh", "7"],
        &["--metric", "unit"],
    ];
    let methods = [
        "qbvi",
        "qnvb",
        "laplace",
        "optimize",
        "nuts",
        "hmc",
        "mh",
        "pathfinder",
        "fixed_param",
    ];
    let mut accepted = 0;
    let mut failures = Vec::new();
    for m in methods {
        let base = parse(&["--method", m]);
        let method: fit::Method = base.method.into();
        let o0 = options_from_args(&base, 3, 1);
        for flag in flags {
            let mut argv = vec!["--method", m];
            argv.extend_from_slice(flag);
            let args = parse(&argv);
            if check_args(&args).is_err() {
                continue;
            }
            accepted += 1;
            let o1 = options_from_args(&args, 3, 1);
            if read(flag[0], method, &o0) == read(flag[0], method, &o1) {
                failures.push(format!(
                    "--method {m} {}: accepted but ignored",
                    flag.join(" ")
                ));
            }
        }
    }
    // 6 VI flags × 2 + draws/psis for laplace + optimize's 2 + MCMC's (4 + 5 + 5 + 4 + 1)
    assert!(accepted >= 30, "only {accepted} accepted pairs");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn flags_of_other_methods_are_refused() {
    for (m, flag) in [
        ("qnvb", &["--step-size", "0.3"][..]),
        ("qnvb", &["--mc-samples", "7"][..]),
        ("laplace", &["--max-iter", "7"][..]),
        ("optimize", &["--draws", "7"][..]),
        ("mh", &["--adapt-delta", "0.95"][..]),
        ("hmc", &["--max-depth", "5"][..]),
        ("nuts", &["--n-leapfrog", "5"][..]),
        ("mh", &["--step-size", "0.5"][..]),
        ("nuts", &["--jacobian"][..]),
        ("nuts", &["--num-paths", "2"][..]),
        // given at their defaults: refused by presence, not by value
        ("nuts", &["--num-paths", "4"][..]),
        ("nuts", &["--history-size", "6"][..]),
        ("qbvi", &["--chains", "4"][..]),
        ("qbvi", &["--adapt-delta", "0.8"][..]),
        ("qbvi", &["--metric", "auto"][..]),
        ("nuts", &["--draws", "1000"][..]),
        ("nuts", &["--max-iter", "5000"][..]),
        ("laplace", &["--mc-samples", "100"][..]),
        ("hmc", &["--max-depth", "10"][..]),
        ("optimize", &["--thin", "1"][..]),
        ("mh", &["--num-elbo-draws", "25"][..]),
        ("pathfinder", &["--psis-resample"][..]),
        ("qbvi", &["--init", "1"][..]),
        ("nuts", &["--init", "-1"][..]),
        ("nuts", &["--init", "inits.json"][..]),
        ("fixed_param", &["--warmup", "7"][..]),
        ("fixed_param", &["--save-warmup"][..]),
        ("fixed_param", &["--adapt-delta", "0.9"][..]),
        ("nuts", &["--algorithm", "bfgs"][..]),
        ("nuts", &["--tol-grad", "1"][..]),
        ("optimize", &["--save-warmup"][..]),
        ("qbvi", &["--refresh", "3"][..]),
        ("laplace", &["--iter", "3"][..]),
        // MC dropout has no ELBO and no density q to resample by (session 21)
        ("mcdropout", &["--psis-resample"][..]),
        ("mcdropout", &["--elbo-output", "e.csv"][..]),
    ] {
        let mut argv = vec!["--method", m];
        argv.extend_from_slice(flag);
        let e = check_args(&parse(&argv)).expect_err("flag of another method");
        assert!(e.contains(flag[0]), "{e}");
    }
}

#[test]
fn option_words_parse_and_check_as_the_cli() {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let args = parse_option_words("m.bayes", &words(&["--method", "nuts", "--seed", "3"]))
        .expect("valid options");
    assert_eq!(args.method, MethodArg::Nuts);
    assert_eq!(args.seed, Some(3));
    assert!(args.explicit.iter().any(|e| e == "seed"));
    let err = parse_option_words("m.bayes", &words(&["--method", "nuts", "--num-paths", "4"]))
        .unwrap_err();
    assert!(
        err.starts_with("error: ") && err.contains("--num-paths"),
        "{err}"
    );
    let err = parse_option_words("m.bayes", &words(&["--bogus", "1"])).unwrap_err();
    assert!(err.contains("unexpected argument '--bogus'"), "{err}");
}

/// NGVI fits the full covariance unless `--diagonal`; `--full` says so explicitly and is
/// accepted (it was refused as "applies to qbvi, von": fresh-user finding, session 21).
#[test]
fn ngvi_accepts_full_as_its_default_family() {
    use crate::inference::vi::Covariance;
    let args = parse(&["--method", "ngvi", "--full"]);
    assert_eq!(check_args(&args), Ok(()));
    assert_eq!(
        options_from_args(&args, 3, 1).ngvi.covariance,
        Covariance::Full
    );
    let default = parse(&["--method", "ngvi"]);
    assert_eq!(
        options_from_args(&default, 3, 1).ngvi.covariance,
        Covariance::Full
    );
}
