//! A fuzzing harness for the parser and checker, the CSV loader and the JSON loader (issue 13:
//! "no panic, no hang" on 10^6 generated inputs each). Not part of the default build or test
//! run: `fuzz/run.sh` (or `cargo run --release --features fuzz --bin fuzz -- <target> <n>
//! [seed]`, target one of `parser`, `csv`, `json`).
//!
//! Inputs come from a small self-contained generator (xoshiro256++ streams, one per input
//! index, so a failing input is reproduced from its index): whole programs generated from the
//! grammar's pieces, and mutations (byte deletions, insertions, duplications, token splices)
//! of the example models under `examples/` and `tests/fixtures/`. Each input runs inside
//! `catch_unwind`; a watchdog aborts the run, printing the input, when one input takes longer
//! than 10 s.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const TOKENS: &[&str] = &[
    "data",
    "transformed data",
    "parameters",
    "transformed parameters",
    "model",
    "generated quantities",
    "functions",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    ",",
    "|",
    "~",
    "=",
    "+=",
    "+",
    "-",
    "*",
    "/",
    "%/%",
    "%",
    "^",
    ".*",
    "./",
    "'",
    "\\",
    "<",
    ">",
    "<=",
    ">=",
    "==",
    "!=",
    "&&",
    "||",
    "!",
    "?",
    ":",
    "int",
    "real",
    "vector",
    "row_vector",
    "matrix",
    "array",
    "simplex",
    "ordered",
    "cov_matrix",
    "cholesky_factor_corr",
    "lower",
    "upper",
    "offset",
    "multiplier",
    "for",
    "in",
    "while",
    "if",
    "else",
    "return",
    "break",
    "continue",
    "target",
    "print",
    "reject",
    "T",
    "N",
    "y",
    "x",
    "mu",
    "sigma",
    "theta",
    "alpha",
    "0",
    "1",
    "-1",
    "2.5",
    "1e300",
    "-1e-300",
    "inf",
    "nan",
    "18446744073709551616",
    "normal",
    "normal_lpdf",
    "bernoulli_logit",
    "poisson",
    "exp",
    "log",
    "sum",
    "rep_vector",
    "size",
    "log_sum_exp",
    "_rng",
    "normal_rng",
    "include",
    "\"timeseries.bayes\"",
    "//",
    "/*",
    "*/",
    "#",
    "\n",
    " ",
    "\t",
    "é",
    "\u{0}",
    "\u{feff}",
];

fn pick<'a, R: Rng>(rng: &mut R, xs: &[&'a str]) -> &'a str {
    xs[rng.random_range(0..xs.len())]
}

fn gen_expr<R: Rng>(rng: &mut R, depth: usize) -> String {
    let atoms = [
        "x", "y", "mu", "sigma", "N", "1", "0", "2.5", "-3", "1e308", "theta[1]", "y[N]",
    ];
    if depth == 0 || rng.random_bool(0.3) {
        return pick(rng, &atoms).to_string();
    }
    match rng.random_range(0..6) {
        0 => format!(
            "{} {} {}",
            gen_expr(rng, depth - 1),
            pick(
                rng,
                &[
                    "+", "-", "*", "/", "^", ".*", "./", "%/%", "%", "<", "==", "&&", "\\"
                ]
            ),
            gen_expr(rng, depth - 1)
        ),
        1 => format!(
            "{}({})",
            pick(
                rng,
                &[
                    "exp",
                    "log",
                    "sum",
                    "sqrt",
                    "log_sum_exp",
                    "normal_lpdf",
                    "atan2",
                    "rep_vector",
                    "size",
                    "foo"
                ]
            ),
            (0..rng.random_range(0..4))
                .map(|_| gen_expr(rng, depth - 1))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        2 => format!("({})", gen_expr(rng, depth - 1)),
        3 => format!("-{}", gen_expr(rng, depth - 1)),
        4 => format!(
            "{} ? {} : {}",
            gen_expr(rng, depth - 1),
            gen_expr(rng, depth - 1),
            gen_expr(rng, depth - 1)
        ),
        _ => format!("{}'", gen_expr(rng, depth - 1)),
    }
}

fn gen_type<R: Rng>(rng: &mut R) -> String {
    let base = match rng.random_range(0..6) {
        0 => "real".to_string(),
        1 => "int".to_string(),
        2 => format!("vector[{}]", gen_expr(rng, 1)),
        3 => format!("matrix[{}, {}]", gen_expr(rng, 1), gen_expr(rng, 1)),
        4 => format!("simplex[{}]", gen_expr(rng, 1)),
        _ => format!("array[{}] real", gen_expr(rng, 1)),
    };
    if rng.random_bool(0.4) {
        let b = format!(
            "<lower={}{}>",
            gen_expr(rng, 1),
            if rng.random_bool(0.5) {
                format!(", upper={}", gen_expr(rng, 1))
            } else {
                String::new()
            }
        );
        base.replacen(' ', &format!("{b} "), 1).replacen(
            "real",
            &format!("real{b}"),
            usize::from(!base.contains(' ')),
        )
    } else {
        base
    }
}

fn gen_stmt<R: Rng>(rng: &mut R, depth: usize) -> String {
    match rng.random_range(0..7) {
        0 => format!(
            "{} ~ {}({}, {});",
            gen_expr(rng, 2),
            pick(
                rng,
                &["normal", "poisson", "beta", "foo", "bernoulli_logit"]
            ),
            gen_expr(rng, 2),
            gen_expr(rng, 2)
        ),
        1 => format!("target += {};", gen_expr(rng, 3)),
        2 if depth > 0 => format!(
            "for (i in 1:{}) {{ {} }}",
            gen_expr(rng, 1),
            gen_stmt(rng, depth - 1)
        ),
        3 if depth > 0 => format!(
            "if ({}) {{ {} }} else {{ {} }}",
            gen_expr(rng, 2),
            gen_stmt(rng, depth - 1),
            gen_stmt(rng, depth - 1)
        ),
        4 if depth > 0 => format!(
            "while ({}) {{ {} }}",
            gen_expr(rng, 2),
            gen_stmt(rng, depth - 1)
        ),
        5 => format!(
            "{} z{} = {};",
            gen_type(rng),
            rng.random_range(0..3),
            gen_expr(rng, 2)
        ),
        _ => format!(
            "{} = {};",
            pick(rng, &["x", "y", "mu", "z0"]),
            gen_expr(rng, 2)
        ),
    }
}

fn gen_program<R: Rng>(rng: &mut R) -> String {
    let mut s = String::new();
    for block in [
        "functions",
        "data",
        "transformed data",
        "parameters",
        "transformed parameters",
        "model",
        "generated quantities",
    ] {
        if !rng.random_bool(0.5) {
            continue;
        }
        s.push_str(block);
        s.push_str(" {\n");
        for _ in 0..rng.random_range(0..5) {
            if matches!(block, "data" | "parameters") {
                s.push_str(&format!(
                    "  {} {};\n",
                    gen_type(rng),
                    pick(rng, &["x", "y", "mu", "sigma", "N", "theta"])
                ));
            } else if block == "functions" {
                s.push_str(&format!(
                    "  real f{}(real a) {{ {} return {}; }}\n",
                    rng.random_range(0..3),
                    gen_stmt(rng, 1),
                    gen_expr(rng, 2)
                ));
            } else {
                s.push_str(&format!("  {}\n", gen_stmt(rng, 2)));
            }
        }
        s.push_str("}\n");
    }
    s
}

/// Applies 1–8 random edits to `text` (on bytes; the result is made valid UTF-8 lossily).
fn mutate<R: Rng>(rng: &mut R, text: &str, tokens: &[&str]) -> String {
    let mut b = text.as_bytes().to_vec();
    for _ in 0..rng.random_range(1..=8) {
        let n = b.len();
        let at = if n == 0 { 0 } else { rng.random_range(0..=n) };
        match rng.random_range(0..6) {
            0 if n > 0 => {
                let len = rng.random_range(0..=(n - at.min(n)).min(16));
                b.drain(at.min(n)..(at + len).min(n));
            }
            1 => {
                let t = pick(rng, tokens).as_bytes().to_vec();
                b.splice(at..at, t);
            }
            2 if n > 0 => {
                let s = rng.random_range(0..n);
                let len = rng.random_range(0..=(n - s).min(32));
                let piece = b[s..s + len].to_vec();
                b.splice(at..at, piece);
            }
            3 => {
                let c: u8 = rng.random();
                b.insert(at, c);
            }
            4 if n > 0 => {
                let i = rng.random_range(0..n);
                b[i] = rng.random();
            }
            _ => {
                let t = format!("{}", rng.random::<i64>());
                b.splice(at..at, t.into_bytes());
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn corpus(ext: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![
        std::path::PathBuf::from("examples"),
        std::path::PathBuf::from("tests/fixtures"),
    ];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == ext)
                && let Ok(t) = std::fs::read_to_string(&p)
                && t.len() < 200_000
            {
                // big data files: keep the first 4 kB (whole lines)
                let cut = if t.len() > 4096 {
                    t[..t.floor_char_boundary(4096)]
                        .rsplit_once('\n')
                        .map_or(t.as_str(), |x| x.0)
                        .to_string()
                } else {
                    t
                };
                out.push(cut);
            }
        }
    }
    out.sort();
    out
}

fn gen_csv<R: Rng>(rng: &mut R) -> String {
    let cols = rng.random_range(0..5);
    let names = ["y", "x", "N", "", "\"q\"", "a b", "y", "é"];
    let mut s = (0..cols)
        .map(|_| pick(rng, &names))
        .collect::<Vec<_>>()
        .join(pick(rng, &[",", ";", ",,"]));
    s.push('\n');
    for _ in 0..rng.random_range(0..6) {
        let vals = [
            "1",
            "-2",
            "3.5",
            "",
            "NA",
            "nan",
            "inf",
            "-inf",
            "1e400",
            "18446744073709551616",
            "9007199254740993",
            "\"7\"",
            "x",
            " 4 ",
            "\"",
            "0x10",
        ];
        let k = if rng.random_bool(0.8) {
            cols
        } else {
            rng.random_range(0..7)
        };
        s.push_str(
            &(0..k)
                .map(|_| pick(rng, &vals))
                .collect::<Vec<_>>()
                .join(","),
        );
        s.push_str(pick(rng, &["\n", "\r\n", "\n\n", ""]));
    }
    s
}

fn gen_json<R: Rng>(rng: &mut R, depth: usize) -> String {
    if depth == 0 || rng.random_bool(0.3) {
        return pick(
            rng,
            &[
                "1",
                "-2.5",
                "1e400",
                "18446744073709551616",
                "true",
                "null",
                "\"x\"",
                "\"inf\"",
                "\"NaN\"",
                "[]",
                "{}",
                "0",
            ],
        )
        .to_string();
    }
    if rng.random_bool(0.5) {
        format!(
            "[{}]",
            (0..rng.random_range(0..4))
                .map(|_| gen_json(rng, depth - 1))
                .collect::<Vec<_>>()
                .join(",")
        )
    } else {
        format!(
            "{{{}}}",
            (0..rng.random_range(0..4))
                .map(|_| format!(
                    "\"{}\": {}",
                    pick(rng, &["N", "y", "x", "N", ""]),
                    gen_json(rng, depth - 1)
                ))
                .collect::<Vec<_>>()
                .join(",")
        )
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let target = args.get(1).cloned().unwrap_or_else(|| "parser".into());
    let n: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let seed: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let models = corpus("bayes");
    let csvs = corpus("csv");
    let jsons = corpus("json");
    std::panic::set_hook(Box::new(|_| {}));
    let current: Mutex<Option<(Instant, String)>> = Mutex::new(None);
    let done = AtomicU64::new(0);
    let panics = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            loop {
                std::thread::sleep(Duration::from_millis(500));
                if done.load(Ordering::Relaxed) >= n {
                    return;
                }
                if let Some((t, input)) = current.lock().unwrap().as_ref()
                    && t.elapsed() > Duration::from_secs(10)
                {
                    eprintln!("HANG (> 10 s) on input:\n{input:?}");
                    std::process::exit(2);
                }
            }
        });
        for i in 0..n {
            let mut rng =
                Xoshiro256PlusPlus::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i);
            let input = match target.as_str() {
                "parser" => {
                    if rng.random_bool(0.5) || models.is_empty() {
                        let g = gen_program(&mut rng);
                        if rng.random_bool(0.3) {
                            mutate(&mut rng, &g, TOKENS)
                        } else {
                            g
                        }
                    } else {
                        let base = &models[rng.random_range(0..models.len())];
                        mutate(&mut rng, base, TOKENS)
                    }
                }
                "csv" => {
                    if rng.random_bool(0.5) || csvs.is_empty() {
                        gen_csv(&mut rng)
                    } else {
                        let k = rng.random_range(0..csvs.len());
                        mutate(
                            &mut rng,
                            &csvs[k],
                            &[",", "\n", "\"", "1e999", "NA", "-", "."],
                        )
                    }
                }
                _ => {
                    if rng.random_bool(0.5) || jsons.is_empty() {
                        let g = gen_json(&mut rng, 4);
                        if rng.random_bool(0.3) {
                            mutate(&mut rng, &g, &["{", "}", "[", "]", ",", ":", "\"", "1e999"])
                        } else {
                            g
                        }
                    } else {
                        let k = rng.random_range(0..jsons.len());
                        mutate(
                            &mut rng,
                            &jsons[k],
                            &["{", "}", "[", "]", ",", ":", "\"", "1e999", "null"],
                        )
                    }
                }
            };
            *current.lock().unwrap() = Some((Instant::now(), input.clone()));
            let r = catch_unwind(AssertUnwindSafe(|| match target.as_str() {
                "parser" => {
                    let mut sources = bayesc::syntax::source::SourceMap::new();
                    if let Err(f) = bayesc::pipeline::check_source_in(
                        &mut sources,
                        "fuzz.bayes",
                        &input,
                        Some(std::path::Path::new("/nonexistent")),
                    ) {
                        let _ = f.into_reports();
                    }
                }
                "csv" => {
                    let _ = bayesc::data::load_csv_str("fuzz.csv", &input);
                }
                _ => {
                    let _ = bayesc::data::load_json_str("fuzz.json", &input);
                }
            }));
            if r.is_err() {
                panics.fetch_add(1, Ordering::Relaxed);
                println!("PANIC at input {i}:\n{input:?}");
            }
            done.store(i + 1, Ordering::Relaxed);
        }
    });
    println!(
        "{target}: {} inputs, {} panics, {:.1} s wall (seed {seed})",
        done.load(Ordering::Relaxed),
        panics.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
    if panics.load(Ordering::Relaxed) > 0 {
        std::process::exit(1);
    }
}
