//! `bayesc diagnose`: the model's gradient against central finite differences at one point on
//! the unconstrained scale, as CmdStan's `diagnose` method (`test=gradient`, defaults
//! `epsilon = 1e-6`, `error = 1e-6`).

use std::path::PathBuf;

use clap::Args;

use crate::inference::LogDensity;
use crate::inference::init::random_init;
use crate::inference::rng::stream;
use crate::pipeline;
use crate::syntax::source::SourceMap;

/// Arguments of `bayesc diagnose`.
#[derive(Args, Debug)]
pub struct DiagnoseArgs {
    /// The model file (.bayes).
    pub model: PathBuf,
    /// Data files (CSV with a header row, or JSON in Stan's format); repeat for several files.
    #[arg(long = "data", value_name = "FILE")]
    pub data: Vec<PathBuf>,
    /// Seed of the random point, uniform(−R, R) on the unconstrained scale.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Half-width R of the box the point is drawn from (0: the origin).
    #[arg(long, default_value_t = 2.0)]
    pub init: f64,
    /// Finite-difference step ε (central differences (L(ζ+εe_i) − L(ζ−εe_i)) / 2ε).
    #[arg(long, default_value_t = 1e-6)]
    pub epsilon: f64,
    /// Largest |gradient − finite difference| accepted, relative to max(1, |gradient|), plus
    /// the rounding floor 10·ε_mach·|L|/ε of the finite difference itself.
    #[arg(long, default_value_t = 1e-6)]
    pub error: f64,
}

/// Central finite differences of `density` at `zeta` with step `eps` (length d). A coordinate
/// whose neighbouring values cannot be evaluated gets NaN.
pub fn finite_difference_gradient(density: &dyn LogDensity, zeta: &[f64], eps: f64) -> Vec<f64> {
    let mut z = zeta.to_vec();
    (0..zeta.len())
        .map(|i| {
            z[i] = zeta[i] + eps;
            let up = density.log_density(&z);
            z[i] = zeta[i] - eps;
            let down = density.log_density(&z);
            z[i] = zeta[i];
            match (up, down) {
                (Ok(a), Ok(b)) => (a - b) / (2.0 * eps),
                _ => f64::NAN,
            }
        })
        .collect()
}

/// Prints the log density at the point and, per unconstrained coordinate, its value, the
/// model's gradient, the finite difference and their difference; flags the coordinates whose
/// difference exceeds `--error`. Exit code 0 when every coordinate agrees, 1 otherwise (or on
/// a model, data or evaluation error), 2 for bad arguments.
pub fn run(args: DiagnoseArgs) -> i32 {
    if !(args.epsilon > 0.0 && args.epsilon.is_finite()) {
        eprintln!(
            "error: --epsilon must be a positive number, got {}",
            args.epsilon
        );
        return super::EXIT_USAGE;
    }
    if !(args.error > 0.0 && args.error.is_finite()) {
        eprintln!(
            "error: --error must be a positive number, got {}",
            args.error
        );
        return super::EXIT_USAGE;
    }
    if !(args.init >= 0.0 && args.init.is_finite()) {
        eprintln!("error: --init must be a radius ≥ 0, got {}", args.init);
        return super::EXIT_USAGE;
    }
    let mut sources = SourceMap::new();
    let checked = match pipeline::check_file_with_data(&mut sources, &args.model, &args.data) {
        Ok(c) => c,
        Err(f) => return super::report_failure(&sources, f),
    };
    super::report_warnings(&sources, &checked.warnings);
    let data = match pipeline::load_data(&args.data) {
        Ok(d) => d,
        Err(f) => return super::report_failure(&sources, f),
    };
    let model = match pipeline::compile(&checked, &sources, &data) {
        Ok(m) => m,
        Err(f) => return super::report_failure(&sources, f),
    };
    let d = model.dim();
    if d == 0 {
        eprintln!("error: the model has no parameters (d = 0): there is no gradient to check");
        return super::EXIT_ERROR;
    }
    let zeta = if args.init == 0.0 {
        vec![0.0; d]
    } else if args.init == crate::inference::init::INIT_RADIUS {
        match random_init(&model, &mut stream(args.seed, 0)) {
            Ok(z) => z,
            Err(e) => {
                eprintln!("error: {e}");
                return super::EXIT_ERROR;
            }
        }
    } else {
        use rand::RngExt;
        let mut rng = stream(args.seed, 0);
        (0..d)
            .map(|_| rng.random_range(-args.init..args.init))
            .collect()
    };
    let mut grad = vec![0.0; d];
    let lp = match model.log_density_grad(&zeta, &mut grad) {
        Ok(lp) => lp,
        Err(e) => {
            eprintln!("error: the log density cannot be evaluated at the point: {e}");
            return super::EXIT_ERROR;
        }
    };
    let fd = finite_difference_gradient(&model, &zeta, args.epsilon);
    let point = if args.init == 0.0 {
        "at the origin".to_string()
    } else {
        format!(
            "drawn uniform(-{r}, {r}) with seed {}",
            args.seed,
            r = args.init
        )
    };
    println!(
        "gradient test on the unconstrained scale, {point}; epsilon = {}, accepted error = {} × max(1, |gradient|) + rounding",
        args.epsilon, args.error
    );
    println!("log density = {lp}\n");
    let names: Vec<String> = (0..d).map(|i| model.coordinate_name(i)).collect();
    let w = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(10);
    println!(
        "{:>5}  {:<w$} {:>14} {:>16} {:>16} {:>12}",
        "idx", "coordinate", "value", "model", "finite diff", "error"
    );
    let mut bad = Vec::new();
    for i in 0..d {
        let err = grad[i] - fd[i];
        // Rounding in L(ζ ± ε) alone gives differences up to ~ε_mach·|L|/ε; that floor is
        // added so that a large log density (big N) does not fail a correct gradient.
        let rounding = 10.0 * f64::EPSILON * lp.abs().max(1.0) / args.epsilon;
        let ok = err.abs() <= args.error * grad[i].abs().max(1.0) + rounding;
        if !ok {
            bad.push(names[i].clone());
        }
        println!(
            "{:>5}  {:<w$} {:>14.6} {:>16.8e} {:>16.8e} {:>12.3e}{}",
            i,
            names[i],
            zeta[i],
            grad[i],
            fd[i],
            err,
            if ok { "" } else { "  MISMATCH" }
        );
    }
    if bad.is_empty() {
        println!("\nthe gradient agrees with finite differences in all {d} coordinates");
        0
    } else {
        println!(
            "\nWARNING: the gradient differs from finite differences in {} of {d} coordinates ({}). \
             Either the log density is not smooth there (a kink such as abs or fmax, a step \
             function, a discontinuity) or the gradient is wrong; please report the latter \
             with the model.",
            bad.len(),
            bad.join(", ")
        );
        super::EXIT_ERROR
    }
}
