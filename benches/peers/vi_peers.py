"""Bayes-by-backprop like for like: bayesc `--method bbb` against NumPyro's SVI (AutoNormal + Adam).

The same algorithm on both sides: q = N(mu, diag sigma^2) on the unconstrained scale with
sigma = softplus(rho) (bayesc's default parameterisation; NumPyro's AutoNormal constrains its
scale with `softplus_positive`), one reparameterised draw per step (bayesc's BBB has S = 1 and no
`--mc-samples`; NumPyro `Trace_ELBO(num_particles=1)`, whose gradient with a reparameterised
AutoNormal is bayesc's closed-form-entropy gradient: d log q / d mu = 0 and d log q / d sigma =
-1/sigma at mu + sigma*eps), Adam with b1 = 0.9, b2 = 0.999, eps = 1e-8 and the same learning
rate (0.01, bayesc's default), the same number of iterations, and the same start: mu at a point
written to a JSON file (bayesc `--random-init --init FILE`; NumPyro `init_to_value`) and
sigma = 0.1 everywhere (bayesc's sigma_init without a Laplace start; AutoNormal's init_scale).

Models: labour (logistic regression, N = 753, d = 8, start at 0) and the diabetes BNN of
tests/fixtures/bnn_diabetes.bayes (10 -> 50 tanh -> 1, d = 602, N = 331; start uniform(-2, 2) on
the unconstrained scale, random.Random(1)), full batch, and the BNN on batches of M = 32 rows
(bayesc `--batch-size 32`; NumPyro `plate(subsample_size=32)`, both scaling the likelihood by N/M).

Both sides compute in double precision (NumPyro with `numpyro.enable_x64()`; `--float32` keeps
JAX's single-precision default instead, for comparison).

Measured per run (the two tools one after the other, never concurrently, one thread each):
- bayesc: CPU seconds of the `bayesc fit` child (getrusage: parse, compile, the run, the PSIS
  check on 4000 draws, writing 1000 draws), and the same for a `--max-iter 1` run of the same
  command, whose CPU is taken as the fixed overhead (CPU per iteration = (whole - overhead) / T);
- NumPyro: process CPU seconds of the loop `svi.run(..., progress_bar=False)` runs (`lax.scan`
  over `svi.update`, T steps) under one `jax.jit`, in its second call with the same shapes, so
  that JAX's one-off tracing and compilation (the first call's extra CPU, printed) are excluded,
  as nuts_peers.py does for `mcmc.run`. `svi.run` itself is not timed: it re-traces and
  recompiles its loop on every call (about 1.6 CPU-s on labour whatever T), which would measure
  compilation. `svi.init` (the guide's set-up) is outside the timed call. Its overhead is
  measured with a 1-step loop as for bayesc.
- quality: the ELBO of each side's final q, computed here the same way for both (NumPyro's log
  joint with its constants and the log-Jacobian, K = 2000 common standard-normal draws, closed-form
  entropy), and the distance between the two q's means (unconstrained scale: Euclidean norm, and
  the largest |difference| in units of NumPyro's sigma). bayesc's q is read exactly from its
  draws file: the first row is q's mean, and `log_g__` = log q of each draw, from which sigma is
  solved (a linear least-squares fit that is exact to ~1e-12 for a diagonal Gaussian).
- time to the same quality: both sides are run for T/8, T/4, T/2, 3T/4 and T iterations (the
  same seed, so these are checkpoints of one path on each side); the target is the lower of the
  two sides' final ELBOs at T minus `--tol` nats, and each side's time is the CPU of its shortest
  run whose final q reaches it.

Not like for like (see docs/variational.md): bayesc returns the Polyak average of the last 31
iterates around the iterate its exit rule keeps (the one with the best smoothed ELBO), NumPyro
the last iterate; bayesc's full-batch loop evaluates a 10-draw ELBO probe (log density without
gradient) at every 5th step for its exit rule, which NumPyro does not; bayesc's minibatches are a
fresh permutation per epoch, NumPyro's an independent random subset per step, and bayesc
computes a full-data ELBO at the end of every epoch; the random streams differ.

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install -r benches/peers/requirements.txt
    cargo build --release
    /tmp/peers/bin/python benches/peers/vi_peers.py [--iters 3000] [--seed 1] [--runs labour,bnn,bnn_mb] [--float32]
"""
import argparse, csv, json, math, os, random, re, resource, subprocess, sys, tempfile, time

import numpy as np

# One thread on each side: XLA's CPU backend single-threaded, bayesc --threads 1.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1 "
                      "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("BAYESC", os.path.join(ROOT, "target", "release", "bayesc"))
LABOUR = (os.path.join(ROOT, "examples", "labour", "model.bayes"),
          os.path.join(ROOT, "examples", "labour", "labour.csv"))
BNN = (os.path.join(ROOT, "tests", "fixtures", "bnn_diabetes.bayes"),
       os.path.join(ROOT, "..", "shared", "data", "bnn", "diabetes_train.csv"))
H = 50
LR = 0.01
SIGMA0 = 0.1
ELBO_DRAWS = 2000
FRACTIONS = (0.125, 0.25, 0.5, 0.75, 1.0)


# ---------- the runs ----------
RUNS = {
    # name: (model files, batch size or None, label)
    "labour": (LABOUR, None, "labour (d = 8, N = 753), full batch"),
    "bnn": (BNN, None, "diabetes BNN H = 50 (d = 602, N = 331), full batch"),
    "bnn_mb": (BNN, 32, "diabetes BNN H = 50, batches of M = 32"),
}


def start_point(name):
    """The common start on the constrained scale (a dict as bayesc's JSON init file)."""
    if name == "labour":
        return {"alpha": 0.0, "beta": [0.0] * 7}
    r = random.Random(1)
    u = lambda n: [r.uniform(-2, 2) for _ in range(n)]
    return {"W1": [u(H) for _ in range(10)], "b1": u(H), "w2": u(H), "b2": u(1)[0],
            "sigma": math.exp(u(1)[0])}


def load_data(name):
    import pandas as pd
    if name == "labour":
        d = pd.read_csv(LABOUR[1])
        X = d[["k5", "k618", "age", "wc", "hc", "lwg", "inc"]].to_numpy(float)
        return X, d["lfp"].to_numpy(float)
    d = pd.read_csv(BNN[1])
    return d[[f"X.{k}" for k in range(1, 11)]].to_numpy(float), d["y"].to_numpy(float)


# ---------- bayesc ----------
def parse_name(col):
    """bayesc's column name -> (site, index or None): `W1.3.7` -> ("W1", (2, 6))."""
    parts = col.split(".")
    idx = tuple(int(k) - 1 for k in parts[1:])
    return parts[0], (None if not idx else idx[0] if len(idx) == 1 else idx)


def read_q(draws_csv, sites, positive):
    """bayesc's q from its draws file: (parameter columns, mean, sd) on the unconstrained scale.
    Row 1 is q's mean (constrained), `log_g__` the exact log q of each draw; sd is solved from
    log_g = C - 0.5 * sum((z - mean)^2 / sd^2). `sites`: the parameters (other columns are
    generated quantities); `positive`: those whose unconstrained value is the log."""
    rows = [l for l in open(draws_csv) if not l.startswith("#")]
    r = list(csv.reader(rows))
    head = r[0]
    a = np.array(r[1:], dtype=float)
    cols = [i for i, h in enumerate(head) if parse_name(h)[0] in sites]
    z = a[:, cols]
    for j, i in enumerate(cols):
        if parse_name(head[i])[0] in positive:
            z[:, j] = np.log(z[:, j])
    mean, draws, log_g = z[0], z[1:], a[1:, head.index("log_g__")]
    A = np.column_stack([np.ones(len(log_g)), -0.5 * (draws - mean) ** 2])
    sol = np.linalg.lstsq(A, log_g, rcond=None)[0]
    resid = np.abs(A @ sol - log_g).max()
    if not (np.all(sol[1:] > 0) and resid < 1e-6):
        sys.exit(f"{draws_csv}: log_g__ is not a diagonal Gaussian's log density (residual {resid})")
    return [parse_name(head[i]) for i in cols], mean, 1.0 / np.sqrt(sol[1:])


def bayesc_run(name, iters, seed):
    """(CPU s, wall s, iterations run, column names, q mean, q sd) of one `bayesc fit`."""
    (model, data), batch, _ = RUNS[name]
    with tempfile.TemporaryDirectory() as d:
        init, out = os.path.join(d, "init.json"), os.path.join(d, "draws.csv")
        json.dump(start_point(name), open(init, "w"))
        cmd = [BIN, "fit", model, "--data", data, "--method", "bbb", "--seed", str(seed),
               "--random-init", "--init", init, "--max-iter", str(iters),
               "--step-size", str(LR), "--threads", "1", "--output", out]
        if batch:
            cmd += ["--batch-size", str(batch)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        p = subprocess.run(cmd, check=True, capture_output=True, text=True)
        wall = time.time() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        m = re.search(r"(\d+) iterations", p.stdout + p.stderr)
        ran = int(m.group(1)) if m else iters
        names, mean, sd = read_q(out, set(SHAPES[name]), {"sigma"})
        return cpu, wall, ran, names, mean, sd


# ---------- NumPyro ----------
def numpyro_model(name):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    def labour(X, y, batch=None):
        alpha = numpyro.sample("alpha", dist.Normal(0, 10))
        beta = numpyro.sample("beta", dist.Normal(0, 10).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("rows", X.shape[0], subsample_size=batch) as i:
            Xb, yb = (X, y) if batch is None else (X[i], y[i])
            numpyro.sample("y", dist.Bernoulli(logits=alpha + Xb @ beta), obs=yb)

    def bnn(X, y, batch=None):
        W1 = numpyro.sample("W1", dist.Normal(0, 1).expand([X.shape[1], H]).to_event(2))
        b1 = numpyro.sample("b1", dist.Normal(0, 1).expand([H]).to_event(1))
        w2 = numpyro.sample("w2", dist.Normal(0, 1 / np.sqrt(H)).expand([H]).to_event(1))
        b2 = numpyro.sample("b2", dist.Normal(0, 1))
        # bayesc: real<lower=0> sigma ~ normal(0, 1), i.e. half-normal up to log 2
        sigma = numpyro.sample("sigma", dist.HalfNormal(1))
        with numpyro.plate("rows", X.shape[0], subsample_size=batch) as i:
            Xb, yb = (X, y) if batch is None else (X[i], y[i])
            mu = jnp.tanh(Xb @ W1 + b1) @ w2 + b2
            numpyro.sample("y", dist.Normal(mu, sigma), obs=yb)

    return labour if name == "labour" else bnn


# The parameters' shapes on NumPyro's side (bayesc's columns name the same sites).
SHAPES = {"labour": {"alpha": (), "beta": (7,)},
          "bnn": {"W1": (10, H), "b1": (H,), "w2": (H,), "b2": (), "sigma": ()}}
SHAPES["bnn_mb"] = SHAPES["bnn"]


def flatten(order, per_site):
    """Per-site arrays -> one vector in bayesc's column order `order` ((site, index) pairs)."""
    return np.array([np.asarray(per_site[s]) if k is None else np.asarray(per_site[s])[k]
                     for s, k in order], dtype=float)


def numpyro_run(name, iters, seed, order):
    """(CPU s, wall s, first-call extra CPU s, q mean, q sd) of the second call of the jitted
    SVI loop, the q in bayesc's column order `order`."""
    import jax
    import jax.numpy as jnp
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal
    from numpyro.infer.initialization import init_to_value
    from numpyro.optim import Adam

    _, batch, _ = RUNS[name]
    X, y = (jnp.asarray(a) for a in load_data(name))
    init = {k: jnp.asarray(v, dtype=float) for k, v in start_point(name).items()}
    model = numpyro_model(name)
    guide = AutoNormal(model, init_loc_fn=init_to_value(values=init), init_scale=SIGMA0)
    svi = SVI(model, guide, Adam(LR), Trace_ELBO(num_particles=1))

    # svi.run(progress_bar=False) is lax.scan over svi.update (its body_fn), but it re-traces and
    # recompiles that loop on every call (~1.5 CPU-s on labour at any T, measured), so the same
    # loop is jitted here once and its second call is timed.
    def loop(state):
        return jax.lax.scan(lambda st, _: svi.update(st, X, y, batch=batch), state, None,
                            length=iters)

    run = jax.jit(loop)

    def once(key):
        state = svi.init(key, X, y, batch=batch)
        jax.block_until_ready(state)
        t0, w0 = time.process_time(), time.time()
        state, losses = run(state)
        jax.block_until_ready(state)
        return time.process_time() - t0, time.time() - w0, state

    first, _, _ = once(jax.random.PRNGKey(seed + 1000))  # traces and compiles
    cpu, wall, state = once(jax.random.PRNGKey(seed))
    p = svi.get_params(state)
    loc = {s: p[f"{s}_auto_loc"] for s in SHAPES[name]}
    scale = {s: p[f"{s}_auto_scale"] for s in SHAPES[name]}
    return cpu, wall, first - cpu, flatten(order, loc), flatten(order, scale)


def elbo(name, order, mean, sd, seed=0):
    """ELBO of q = N(mean, diag sd^2) on the unconstrained scale (in the column order `order`): NumPyro's
    full-data log joint (constants included) plus log-Jacobian at ELBO_DRAWS common draws, plus
    q's entropy in closed form."""
    import jax
    import jax.numpy as jnp
    from numpyro.infer.util import potential_energy

    X, y = (jnp.asarray(a) for a in load_data(name))
    model = numpyro_model(name)
    shapes = SHAPES[name]

    def unflatten(z):
        out = {s: jnp.zeros(shapes[s]) for s, _ in order}
        for n, (s, k) in enumerate(order):
            out[s] = z[n] if k is None else out[s].at[k].set(z[n])
        return out

    eps = np.random.default_rng(seed).standard_normal((ELBO_DRAWS, len(mean)))
    zs = jnp.asarray(mean + sd * eps)

    @jax.jit
    def neg_pe(z):
        return -potential_energy(model, (X, y), {}, unflatten(z))

    lp = np.array(jax.lax.map(neg_pe, zs))
    entropy = np.log(sd).sum() + 0.5 * len(mean) * (1 + np.log(2 * np.pi))
    return float(lp.mean() + entropy)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=3000, help="T, iterations of the longest run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", default="labour,bnn,bnn_mb")
    ap.add_argument("--float32", action="store_true",
                    help="NumPyro in JAX's default single precision (bayesc computes in double; "
                         "by default JAX is switched to double precision too)")
    ap.add_argument("--tol", type=float, default=0.5,
                    help="nats below the lower final ELBO that count as the same quality")
    a = ap.parse_args()
    if not a.float32:
        import numpyro
        numpyro.enable_x64()
    if not os.path.exists(BIN):
        sys.exit(f"{BIN} not found: run `cargo build --release` first")
    table = []
    for name in a.runs.split(","):
        label = RUNS[name][2]
        ob, _, _, order, _, _ = bayesc_run(name, 1, a.seed)  # bayesc's fixed overhead
        on = numpyro_run(name, 1, a.seed, order)[0]  # NumPyro's per-call overhead
        ladder = {"bayesc": [], "NumPyro": []}
        for f in FRACTIONS:
            t = max(1, round(f * a.iters))
            bc, bw, ran, order, bm, bs = bayesc_run(name, t, a.seed)
            if ran != t:
                print(f"  note: bayesc ran {ran} of {t} iterations (exit rule); NumPyro runs {ran}")
            nc, nw, comp, nm, ns = numpyro_run(name, ran, a.seed, order)
            be, ne = elbo(name, order, bm, bs), elbo(name, order, nm, ns)
            ladder["bayesc"].append((ran, bc, bw, be, bm, bs))
            ladder["NumPyro"].append((ran, nc, nw, ne, nm, ns, comp))
            print(f"{name:7s} T = {ran:5d}  bayesc CPU {bc:6.2f} s wall {bw:6.2f} s ELBO {be:10.2f}"
                  f"  |  NumPyro CPU {nc:6.2f} s wall {nw:6.2f} s ELBO {ne:10.2f} "
                  f"(compile {comp:4.1f} CPU-s)  load {os.getloadavg()[0]:.1f}", flush=True)
        ran, bc, bw, be, bm, bs = ladder["bayesc"][-1]
        _, nc, nw, ne, nm, ns, comp = ladder["NumPyro"][-1]
        target = min(be, ne) - a.tol
        # (whole-run CPU s, iterations) of each side's shortest run that reaches the target
        reach = {k: next(((r[1], r[0]) for r in v if r[3] >= target), (math.nan, math.nan))
                 for k, v in ladder.items()}
        dist = float(np.linalg.norm(bm - nm))
        dist_sd = float(np.max(np.abs(bm - nm) / ns))
        table.append((label, ran, bc, bw, (bc - ob) / max(ran - 1, 1), be, ob, nc, nw,
                      (nc - on) / max(ran - 1, 1), ne, on, comp, dist, dist_sd, target, reach))
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; seed {a.seed}; "
          f"lr {LR}; S = 1; sigma0 = {SIGMA0}; ELBO from {ELBO_DRAWS} common draws; NumPyro in "
          f"{'float32' if a.float32 else 'float64'}")
    print("| run | T | tool | CPU s (whole run) | wall s | overhead CPU s (T = 1) "
          "| CPU ms / iteration | final ELBO |")
    print("|---|---|---|---|---|---|---|---|")
    for (label, ran, bc, bw, bpi, be, ob, nc, nw, npi, ne, on, comp, *_rest) in table:
        print(f"| {label} | {ran} | bayesc | {bc:.2f} | {bw:.2f} | {ob:.2f} | {1e3 * bpi:.3f} "
              f"| {be:.2f} |")
        print(f"| | | NumPyro | {nc:.2f} | {nw:.2f} | {on:.2f} | {1e3 * npi:.3f} | {ne:.2f} |")
    print("\n| run | CPU / iteration, bayesc / NumPyro | whole-run CPU, bayesc / NumPyro "
          "| target ELBO | iterations to target, bayesc / NumPyro "
          "| whole-run CPU s to target, bayesc / NumPyro (ratio) "
          "| loop CPU s to target (iterations x CPU / iteration), bayesc / NumPyro (ratio) "
          "| distance of means (Euclidean; max in NumPyro sds) | NumPyro compile CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (label, ran, bc, bw, bpi, be, ob, nc, nw, npi, ne, on, comp, dist, dist_sd, target,
         reach) in table:
        (bt, bi), (nt, ni) = reach["bayesc"], reach["NumPyro"]
        bl, nl = bi * bpi, ni * npi
        print(f"| {label} | {bpi / npi:.2f} | {bc / nc:.2f} | {target:.2f} | {bi} / {ni} "
              f"| {bt:.2f} / {nt:.2f} ({bt / nt:.2f}) | {bl:.3f} / {nl:.3f} ({bl / nl:.2f}) "
              f"| {dist:.3g}; {dist_sd:.2f} | {comp:.1f} |")


if __name__ == "__main__":
    main()
