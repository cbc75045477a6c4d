"""NUTS like for like: bayesc against NumPyro on the same models, data and settings.

For labour (logistic regression, N = 753, d = 8), GARCH(1,1) (T = 1000, d = 4) and eight
schools (non-centred, d = 10), with the diagonal and the dense metric, both tools run 4 chains
× (1000 warmup + 1000 draws), target acceptance 0.8, max tree depth 10, one after the other in
this process's children/threads. The figure is the minimum bulk ESS over the parameters
(rank-normalised, Vehtari et al. 2021, computed here the same way for both tools' draws) over
the same parameters on both sides (the model's parameters; not eight schools' transformed
theta, which NumPyro's draws do not have and which bayesc's were counted with before session
17), divided by the CPU seconds of the whole run, warmup included:
- bayesc: CPU time of the `bayesc fit` child process (getrusage), everything included;
- NumPyro: process CPU time of one `mcmc.run` (warmup and sampling; chain_method="parallel"
  over 4 host devices, the fastest of NumPyro's chain methods here) in a second run with the
  same shapes, so that JAX's one-off compilation is excluded.
Both compute in double precision (NumPyro with `numpyro.enable_x64()`; `--float32` leaves JAX's
default single precision, which the runs before session 16 used).
Prints one table with the ratio bayesc / NumPyro per row. With `--decompose`, each run also
prints where the ratio comes from: gradient evaluations (leapfrog steps) per chain with warmup,
CPU µs per gradient (whole-run CPU over gradients), ESS per 1000 gradients, leapfrog steps per
post-warmup draw, mean tree depth and the chains' adapted step sizes. bayesc's come from its CSVs
(`--save-warmup`, columns `n_leapfrog__`, `stepsize__`, `treedepth__`), NumPyro's from the
`num_steps` and `adapt_state.step_size` fields collected in warmup and sampling.

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install -r benches/peers/requirements.txt
    cargo build --release
    /tmp/peers/bin/python benches/peers/nuts_peers.py [--repeats 3] [--models labour,garch,eight_schools] [--metrics diag,dense] [--decompose]
"""
import argparse, csv, glob, os, resource, subprocess, sys, tempfile, time

import numpy as np

# NumPyro runs its 4 chains in parallel over 4 host devices (its documented way on CPU).
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(ROOT, "examples")
BIN = os.path.join(ROOT, "target", "release", "bayesc")
CHAINS, WARMUP, DRAWS = 4, 1000, 1000
DATA_FILE = {"labour": "labour.csv", "garch": "returns.csv", "eight_schools": "schools.csv"}


# ---------- bulk ESS (rank-normalised split-chain ESS, Vehtari et al. 2021, §3) ----------
def _ess_raw(x):
    """x: (chains, draws). Geyer's initial monotone sequence estimator on split chains."""
    m, n = x.shape
    acov = []
    for c in range(m):
        y = x[c] - x[c].mean()
        f = np.fft.rfft(y, n=2 * n)
        ac = np.fft.irfft(f * np.conj(f))[:n] / n
        acov.append(ac)
    acov = np.array(acov)
    chain_var = acov[:, 0] * n / (n - 1)
    w = chain_var.mean()
    b = n * x.mean(axis=1).var(ddof=1) if m > 1 else 0.0
    var_plus = w * (n - 1) / n + b / n
    rho = 1.0 - (w - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    t, s, prev = 0, 0.0, np.inf
    while t + 1 < n:
        p = rho[t] + rho[t + 1]
        if p < 0:
            break
        p = min(p, prev)
        s += p
        prev = p
        t += 2
    tau = -1.0 + 2.0 * s
    return m * n / max(tau, 1.0 / np.log10(m * n))


def _split(x):
    m, n = x.shape
    h = n // 2
    return np.concatenate([x[:, :h], x[:, n - h:]], axis=0)


def ess_bulk(x):
    from statistics import NormalDist
    z = _split(np.asarray(x, dtype=float))
    r = z.ravel().argsort().argsort().astype(float) + 1.0
    q = (r - 0.375) / (r.size + 0.25)
    inv = np.vectorize(NormalDist().inv_cdf)
    return _ess_raw(inv(q).reshape(z.shape))


def min_ess(draws):  # draws: dict name -> (chains, draws)
    return min(ess_bulk(v) for v in draws.values())


# ---------- bayesc ----------
# The parameters whose minimum bulk ESS is taken, the same on both sides (bayesc's CSV columns
# `beta.1`, … and NumPyro's sites; GARCH's beta1 is a deterministic site in NumPyro).
PARAMS = {"labour": ["alpha", "beta"], "garch": ["mu", "omega", "alpha1", "beta1"],
          "eight_schools": ["mu", "tau", "theta_tilde"]}


def bayesc_run(name, metric, seed, binary=None):
    """(min bulk ESS, CPU s, wall s, decomposition). Warmup rows are saved (`--save-warmup`)
    so that the gradient count includes warmup; NumPyro collects its warmup statistics too."""
    model = os.path.join(EX, name, "model.bayes")
    data = os.path.join(EX, name, DATA_FILE[name])
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "fit.csv")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        subprocess.run([binary or BIN, "fit", model, "--data", data, "--method", "nuts", "--metric", metric,
                        "--seed", str(seed), "--output", out, "--quiet", "--save-warmup"],
                       check=True, stdout=subprocess.DEVNULL)
        wall = time.time() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        chains = []
        for f in sorted(glob.glob(os.path.join(d, "fit_*.csv"))):
            rows = [l for l in open(f) if not l.startswith("#")]
            r = list(csv.reader(rows))
            chains.append((r[0], np.array(r[1:], dtype=float)))
        header = chains[0][0]
        # The same parameters as NumPyro's side (PARAMS): transformed parameters and generated
        # quantities (eight schools' theta) are not in NumPyro's draws, so they are left out here.
        names = [n for n in header if n.split(".")[0] in PARAMS[name]]
        post = [c[1][WARMUP:] for c in chains]
        draws = {n: np.stack([p[:, header.index(n)] for p in post]) for n in names}
        col = lambda name, rows: np.stack([r[:, header.index(name)] for r in rows])
        leap_all = col("n_leapfrog__", [c[1] for c in chains])
        dec = decomposition(
            grads=leap_all.sum(axis=1),
            grads_warmup=leap_all[:, :WARMUP].sum(axis=1),
            step=col("stepsize__", post)[:, 0],
            depth=col("treedepth__", post).mean(),
            leap_sampling=col("n_leapfrog__", post).mean())
        return min_ess(draws), cpu, wall, dec


def decomposition(grads, grads_warmup, step, depth, leap_sampling):
    """Per-chain gradient counts (warmup included), the chains' adapted step sizes, the mean
    tree depth and mean leapfrog steps per post-warmup transition."""
    return {"grads": np.asarray(grads, float), "grads_warmup": np.asarray(grads_warmup, float),
            "step": np.asarray(step, float), "depth": float(depth),
            "leap": float(leap_sampling)}


# ---------- NumPyro ----------
def numpyro_models():
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from jax import lax

    def labour(X, y):
        alpha = numpyro.sample("alpha", dist.Normal(0, 10))
        beta = numpyro.sample("beta", dist.Normal(0, 10).expand([X.shape[1]]))
        numpyro.sample("y", dist.Bernoulli(logits=alpha + X @ beta), obs=y)

    def garch(r):
        mu = numpyro.sample("mu", dist.ImproperUniform(dist.constraints.real, (), ()))
        omega = numpyro.sample("omega", dist.ImproperUniform(dist.constraints.positive, (), ()))
        alpha1 = numpyro.sample("alpha1", dist.Uniform(0, 1))
        # beta1 uniform on (0, 1 - alpha1): the same joint density as bayesc's bounded beta1 with
        # no prior statement (uniform on the triangle up to a constant).
        beta1_raw = numpyro.sample("beta1_raw", dist.Uniform(0, 1))
        beta1 = numpyro.deterministic("beta1", beta1_raw * (1 - alpha1))
        numpyro.factor("triangle_jacobian", jnp.log1p(-alpha1))
        h1 = jnp.var(r, ddof=1)

        def step(h, rt):
            hn = omega + alpha1 * (rt - mu) ** 2 + beta1 * h
            return hn, hn

        _, hs = lax.scan(step, h1, r[:-1])
        h = jnp.concatenate([jnp.array([h1]), hs])
        numpyro.sample("r", dist.Normal(mu, jnp.sqrt(h)), obs=r)

    def eight_schools(y, sigma):
        mu = numpyro.sample("mu", dist.Normal(0, 5))
        tau = numpyro.sample("tau", dist.HalfCauchy(5))
        tt = numpyro.sample("theta_tilde", dist.Normal(0, 1).expand([y.shape[0]]))
        numpyro.sample("y", dist.Normal(mu + tau * tt, sigma), obs=y)

    return {"labour": labour, "garch": garch, "eight_schools": eight_schools}


def load_data(name):
    import pandas as pd
    if name == "labour":
        d = pd.read_csv(os.path.join(EX, "labour", "labour.csv"))
        X = d[["k5", "k618", "age", "wc", "hc", "lwg", "inc"]].to_numpy(float)
        return (X, d["lfp"].to_numpy(float))
    if name == "garch":
        return (pd.read_csv(os.path.join(EX, "garch", "returns.csv"))["r"].to_numpy(float),)
    d = pd.read_csv(os.path.join(EX, "eight_schools", "schools.csv"))
    return (d["y"].to_numpy(float), d["sigma"].to_numpy(float))


def numpyro_run(name, metric, seed, decompose=False):
    """(min bulk ESS, CPU s, wall s, compile CPU s, decomposition).

    The timed run is one `mcmc.run` (warmup and sampling, as `bayesc fit` does), after a first
    `mcmc.run` of the same shapes that compiles and is not timed. Collecting the warmup's leapfrog
    counts needs `mcmc.warmup(collect_warmup=True)` followed by `mcmc.run`; timed, that pair took
    about twice the CPU of one `mcmc.run` on GARCH (15 against 8-9 s, 2026-12-03), so with
    `decompose` those counts come from a separate, untimed warmup of the same settings."""
    import jax
    from numpyro.infer import MCMC, NUTS
    model = numpyro_models()[name]
    args = load_data(name)
    kernel = NUTS(model, dense_mass=(metric == "dense"), target_accept_prob=0.8, max_tree_depth=10)

    def make():
        return MCMC(kernel, num_warmup=WARMUP, num_samples=DRAWS, num_chains=CHAINS,
                    chain_method="parallel", progress_bar=False, jit_model_args=True)

    fields = ("num_steps", "adapt_state.step_size")
    mcmc = make()
    t0 = time.process_time()
    mcmc.run(jax.random.PRNGKey(seed + 1000), *args, extra_fields=fields)  # compiles
    jax.block_until_ready(mcmc.last_state)
    first = time.process_time() - t0
    t0, w0 = time.process_time(), time.time()
    mcmc.run(jax.random.PRNGKey(seed), *args, extra_fields=fields)
    jax.block_until_ready(mcmc.last_state)
    cpu, wall = time.process_time() - t0, time.time() - w0
    if decompose:
        # A warmup of the same kernel and settings, run again to count its leapfrog steps
        # (another draw of the same adaptation; not timed).
        w = make()
        w.warmup(jax.random.PRNGKey(seed), *args, extra_fields=("num_steps",),
                 collect_warmup=True)
        warm = np.asarray(w.get_extra_fields(group_by_chain=True)["num_steps"])
    else:
        warm = np.zeros((CHAINS, 1))
    s = mcmc.get_samples(group_by_chain=True)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    steps = np.asarray(extra["num_steps"], float)
    draws = {}
    for k in PARAMS[name]:
        v = np.asarray(s[k])
        if v.ndim == 2:
            draws[k] = v
        else:
            for j in range(v.shape[2]):
                draws[f"{k}[{j + 1}]"] = v[:, :, j]
    # NumPyro stores no tree depth: the depth of a transition of n leapfrog steps is taken as
    # floor(log2(n + 1)), Stan's relation 2^d - 1 <= n < 2^(d+1) for a tree that stopped at a
    # doubling.
    dec = decomposition(
        grads=warm.sum(axis=1) + steps.sum(axis=1),
        grads_warmup=warm.sum(axis=1),
        step=np.asarray(extra["adapt_state.step_size"], float)[:, -1],
        depth=np.floor(np.log2(steps + 1)).mean(),
        leap_sampling=steps.mean())
    return min_ess(draws), cpu, wall, first - cpu, dec


def describe(tool, ess, cpu, dec):
    g = dec["grads"]
    return (f"    {tool:8s} ESS {ess:7.0f}  CPU {cpu:6.2f} s  grads/chain {g.mean():8.0f} "
            f"(warmup {dec['grads_warmup'].mean():7.0f})  us/grad {cpu / g.sum() * 1e6:6.1f}  "
            f"ESS/1000 grads {ess / g.sum() * 1000:6.2f}  leap/draw {dec['leap']:6.1f}  "
            f"depth {dec['depth']:4.2f}  step " + " ".join(f"{e:.3g}" for e in dec["step"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", default="labour,garch,eight_schools")
    ap.add_argument("--metrics", default="diag,dense")
    ap.add_argument("--baseline", metavar="BAYESC",
                    help="another bayesc binary (e.g. a copy built from an earlier commit) run "
                         "in the same interleaved loop, with its own ratio")
    ap.add_argument("--decompose", action="store_true",
                    help="also print, per run, gradients per chain (warmup included), CPU us per "
                         "gradient, ESS per 1000 gradients, leapfrog steps per draw, mean tree "
                         "depth and the chains' adapted step sizes")
    ap.add_argument("--float32", action="store_true",
                    help="leave JAX in its default single precision (bayesc computes in double)")
    a = ap.parse_args()
    if not a.float32:
        # like for like: bayesc computes in double precision (set before any JAX array exists)
        import numpyro
        numpyro.enable_x64()
    if not os.path.exists(BIN):
        sys.exit(f"{BIN} not found: run `cargo build --release` first")
    print("load average at start", " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    rows = []
    for name in a.models.split(","):
        for metric in a.metrics.split(","):
            b, n, base, bg, ng = [], [], [], [], []
            for rep in range(a.repeats):  # interleaved
                if a.baseline:
                    e, c, _, dec = bayesc_run(name, metric, rep + 1, a.baseline)
                    base.append(e / c)
                    if a.decompose:
                        print(describe("baseline", e, c, dec), flush=True)
                e, c, _, dec = bayesc_run(name, metric, rep + 1)
                b.append(e / c)
                bg.append(c / dec["grads"].sum() * 1e6)
                if a.decompose:
                    print(describe("bayesc", e, c, dec), flush=True)
                e, c, _, comp, dec = numpyro_run(name, metric, rep + 1, a.decompose)
                n.append(e / c)
                ng.append(c / dec["grads"].sum() * 1e6)
                if a.decompose:
                    print(describe("numpyro", e, c, dec), flush=True)
            bm, nm = float(np.median(b)), float(np.median(n))
            if base:
                print(f"{name:14s} {metric:5s} baseline {np.median(base):9.1f}  ratio "
                      f"{np.median(base) / nm:5.2f}", flush=True)
            # CPU us per gradient needs NumPyro's warmup count, collected only with --decompose
            ug = (float(np.median(bg)), float(np.median(ng))) if a.decompose else None
            rows.append((name, metric, bm, nm, bm / nm, ug))
            print(f"{name:14s} {metric:5s} bayesc {bm:9.1f}  numpyro {nm:9.1f}  ratio {bm / nm:5.2f}  "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    print("\nload average", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("min bulk ESS per CPU-second, whole runs (warmup included), medians of", a.repeats, "interleaved runs")
    print("| model | metric | bayesc | NumPyro | bayesc / NumPyro | CPU us / gradient (bayesc, "
          "NumPyro; medians) | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name, metric, bm, nm, r, ug in rows:
        g = f"{ug[0]:.1f}, {ug[1]:.1f} | {ug[0] / ug[1]:.2f}" if ug else "— | —"
        print(f"| {name} | {metric} | {bm:.0f} | {nm:.0f} | {r:.2f} | {g} |")


if __name__ == "__main__":
    main()
