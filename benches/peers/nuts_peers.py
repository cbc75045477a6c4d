"""NUTS like for like: bayesc against NumPyro on the same models, data and settings.

For labour (logistic regression, N = 753, d = 8), GARCH(1,1) (T = 1000, d = 4) and eight
schools (non-centred, d = 10), with the diagonal and the dense metric, both tools run 4 chains
× (1000 warmup + 1000 draws), target acceptance 0.8, max tree depth 10, one after the other in
this process's children/threads. The figure is the minimum bulk ESS over the parameters
(rank-normalised, Vehtari et al. 2021, computed here the same way for both tools' draws)
divided by the CPU seconds of the whole run, warmup included:
- bayesc: CPU time of the `bayesc fit` child process (getrusage), everything included;
- NumPyro: process CPU time of `mcmc.run` (chain_method="parallel" over 4 host devices) in a
  second run with the same shapes, so that JAX's one-off compilation is excluded.
Prints one table with the ratio bayesc / NumPyro per row.

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install -r benches/peers/requirements.txt
    cargo build --release
    /tmp/peers/bin/python benches/peers/nuts_peers.py [--repeats 3] [--models labour,garch,eight_schools]
"""
import argparse, csv, glob, os, resource, subprocess, sys, tempfile, time

import numpy as np

# NumPyro runs its 4 chains in parallel over 4 host devices (its documented way on CPU).
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(ROOT, "examples")
BIN = os.path.join(ROOT, "target", "release", "bayesc")
CHAINS, WARMUP, DRAWS = 4, 1000, 1000


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
def bayesc_run(model, data, metric, seed):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "fit.csv")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        subprocess.run([BIN, "fit", model, "--data", data, "--method", "nuts", "--metric", metric,
                        "--seed", str(seed), "--output", out, "--quiet"],
                       check=True, stdout=subprocess.DEVNULL)
        wall = time.time() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        chains = []
        for f in sorted(glob.glob(os.path.join(d, "fit_*.csv"))):
            rows = [l for l in open(f) if not l.startswith("#")]
            r = list(csv.reader(rows))
            chains.append((r[0], np.array(r[1:], dtype=float)))
        names = [n for n in chains[0][0] if not n.endswith("__")]
        draws = {n: np.stack([c[1][:, c[0].index(n)] for c in chains]) for n in names}
        return min_ess(draws), cpu, wall


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


def numpyro_run(name, metric, seed):
    import jax
    from numpyro.infer import MCMC, NUTS
    model = numpyro_models()[name]
    args = load_data(name)
    kernel = NUTS(model, dense_mass=(metric == "dense"), target_accept_prob=0.8, max_tree_depth=10)
    mcmc = MCMC(kernel, num_warmup=WARMUP, num_samples=DRAWS, num_chains=CHAINS,
                chain_method="parallel", progress_bar=False, jit_model_args=True)
    t0 = time.process_time()
    mcmc.run(jax.random.PRNGKey(seed + 1000), *args)  # includes compilation
    first = time.process_time() - t0
    t0, w0 = time.process_time(), time.time()
    mcmc.run(jax.random.PRNGKey(seed), *args)
    cpu, wall = time.process_time() - t0, time.time() - w0
    s = mcmc.get_samples(group_by_chain=True)
    keep = {"labour": ["alpha", "beta"], "garch": ["mu", "omega", "alpha1", "beta1"],
            "eight_schools": ["mu", "tau", "theta_tilde"]}[name]
    draws = {}
    for k in keep:
        v = np.asarray(s[k])
        if v.ndim == 2:
            draws[k] = v
        else:
            for j in range(v.shape[2]):
                draws[f"{k}[{j + 1}]"] = v[:, :, j]
    return min_ess(draws), cpu, wall, first - cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", default="labour,garch,eight_schools")
    a = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit(f"{BIN} not found: run `cargo build --release` first")
    data_file = {"labour": "labour.csv", "garch": "returns.csv", "eight_schools": "schools.csv"}
    rows = []
    for name in a.models.split(","):
        for metric in ["diag", "dense"]:
            b, n = [], []
            for rep in range(a.repeats):  # interleaved
                e, c, _ = bayesc_run(os.path.join(EX, name, "model.bayes"),
                                     os.path.join(EX, name, data_file[name]), metric, rep + 1)
                b.append(e / c)
                e, c, _, comp = numpyro_run(name, metric, rep + 1)
                n.append(e / c)
            bm, nm = float(np.median(b)), float(np.median(n))
            rows.append((name, metric, bm, nm, bm / nm, comp))
            print(f"{name:14s} {metric:5s} bayesc {bm:9.1f}  numpyro {nm:9.1f}  ratio {bm / nm:5.2f}", flush=True)
    print("\nmin bulk ESS per CPU-second, whole runs (warmup included), medians of", a.repeats, "interleaved runs")
    print("| model | metric | bayesc | NumPyro | bayesc / NumPyro |")
    print("|---|---|---|---|---|")
    for name, metric, bm, nm, r, comp in rows:
        print(f"| {name} | {metric} | {bm:.0f} | {nm:.0f} | {r:.2f} |")


if __name__ == "__main__":
    main()
