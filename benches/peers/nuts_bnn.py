"""NUTS on the diabetes BNN (H = 50, d = 602), bayesc against NumPyro: CPU time per iteration.

Issue 10's bar: bayesc's NUTS uses at most 1.5x NumPyro's CPU time per iteration on the same
model, data, priors and settings. The model is tests/fixtures/bnn_diabetes.bayes (10 -> 50 tanh
-> 1, N(0, 1) priors on W1, b1, b2, N(0, 1/H) on w2, sigma ~ N+(0, 1)) on
../shared/data/bnn/diabetes_train.csv (331 rows, standardised). Both tools run the same number
of chains, warmup and draws with the diagonal metric, target acceptance 0.8, max tree depth 10,
one chain after the other on one core (bayesc --threads 1; NumPyro chain_method="sequential"),
so that CPU time is not shared with a second chain. Both compute in double precision (NumPyro
with `numpyro.enable_x64()`; `--float32` leaves JAX's default single precision, which the runs
before session 16 used).

Per tool the script reports: CPU seconds of the whole run (warmup included), CPU seconds per
iteration (warmup + draws), the mean number of leapfrog steps (gradients) per iteration, and CPU
microseconds per gradient (CPU time over all leapfrogs, warmup's included). NUTS's trees can differ in depth between the tools (different
adaptation paths), so the per-gradient cost is the like-for-like figure of the engine; the
per-iteration cost is the bar's figure.
- bayesc: CPU time of the `bayesc fit` child (getrusage), everything included (parse, compile,
  the run, writing the draws); leapfrogs from the `n_leapfrog__` column (`--save-warmup`, so
  warmup's leapfrogs are counted too).
- NumPyro: process CPU time of `mcmc.run` in a second run with the same shapes (JAX's one-off
  compilation excluded, as in nuts_peers.py); leapfrogs from `num_steps` of warmup
  (`collect_warmup=True`) and of the draws.

    cargo build --release
    python3 benches/peers/nuts_bnn.py [--warmup 200] [--draws 200] [--chains 1] [--seed 1] [--float32]
"""
import argparse, csv, glob, os, resource, subprocess, sys, tempfile, time

import numpy as np

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "target", "release", "bayesc")
MODEL = os.path.join(ROOT, "tests", "fixtures", "bnn_diabetes.bayes")
DATA = os.path.join(ROOT, "..", "shared", "data", "bnn", "diabetes_train.csv")
H = 50


def bayesc_run(chains, warmup, draws, seed):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "fit.csv")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        subprocess.run([BIN, "fit", MODEL, "--data", DATA, "--method", "nuts", "--metric", "diag",
                        "--chains", str(chains), "--warmup", str(warmup), "--samples", str(draws),
                        "--threads", "1", "--seed", str(seed), "--output", out, "--quiet",
                        "--save-warmup"],
                       check=True, stdout=subprocess.DEVNULL)
        wall = time.time() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        drawn, total = [], 0.0
        for f in sorted(glob.glob(os.path.join(d, "fit_*.csv"))):
            rows = [l for l in open(f) if not l.startswith("#")]
            r = list(csv.reader(rows))
            j = r[0].index("n_leapfrog__")
            leap = [float(x[j]) for x in r[1:]]
            total += sum(leap)
            drawn += leap[warmup:]
        return cpu, wall, float(np.mean(drawn)), total


def numpyro_run(chains, warmup, draws, seed):
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    import pandas as pd
    from numpyro.infer import MCMC, NUTS

    d = pd.read_csv(DATA)
    X = d[[f"X.{k}" for k in range(1, 11)]].to_numpy(float)
    y = d["y"].to_numpy(float)

    def bnn(X, y):
        W1 = numpyro.sample("W1", dist.Normal(0, 1).expand([X.shape[1], H]).to_event(2))
        b1 = numpyro.sample("b1", dist.Normal(0, 1).expand([H]).to_event(1))
        w2 = numpyro.sample("w2", dist.Normal(0, 1 / np.sqrt(H)).expand([H]).to_event(1))
        b2 = numpyro.sample("b2", dist.Normal(0, 1))
        sigma = numpyro.sample("sigma", dist.HalfNormal(1))
        mu = jnp.tanh(X @ W1 + b1) @ w2 + b2
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)

    kernel = NUTS(bnn, target_accept_prob=0.8, max_tree_depth=10)
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=chains,
                chain_method="sequential", progress_bar=False, jit_model_args=True)
    def whole_run(key):
        """Warmup (its leapfrogs collected), then the draws from the adapted state."""
        mcmc.warmup(key, X, y, extra_fields=("num_steps",), collect_warmup=True)
        warm = np.asarray(mcmc.get_extra_fields()["num_steps"]).sum()
        mcmc.run(mcmc.post_warmup_state.rng_key, X, y, extra_fields=("num_steps",))
        return warm, np.asarray(mcmc.get_extra_fields()["num_steps"])

    t0 = time.process_time()
    # includes compilation; the same extra fields as the timed run, so that nothing of the timed
    # run's loop is compiled again (the field list is part of the compiled loop's cache key)
    mcmc.run(jax.random.PRNGKey(seed + 1000), X, y, extra_fields=("num_steps",))
    first = time.process_time() - t0
    t0, w0 = time.process_time(), time.time()
    mcmc.run(jax.random.PRNGKey(seed), X, y, extra_fields=("num_steps",))
    cpu, wall = time.process_time() - t0, time.time() - w0
    drawn = np.asarray(mcmc.get_extra_fields()["num_steps"])
    # The timed run is one `mcmc.run`; splitting it into warmup() + run() to collect warmup's
    # leapfrogs recompiles and would inflate the time. So warmup's leapfrogs are counted in a
    # second, untimed run of the same key, which follows the same path when its draws'
    # leapfrogs agree with the timed run's (checked).
    warm, drawn_again = whole_run(jax.random.PRNGKey(seed))
    if not np.array_equal(drawn, drawn_again):
        print("note: the untimed warmup-counting run took another path; its warmup count is "
              "an estimate", file=sys.stderr)
    return cpu, wall, float(np.mean(drawn)), float(warm + drawn.sum()), first - cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chains", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--float32", action="store_true",
                    help="leave JAX in its default single precision (bayesc computes in double)")
    a = ap.parse_args()
    if not a.float32:
        # like for like: bayesc computes in double precision (set before any JAX array exists)
        import numpyro
        numpyro.enable_x64()
    if not os.path.exists(BIN):
        sys.exit(f"{BIN} not found: run `cargo build --release` first")
    iters = a.chains * (a.warmup + a.draws)
    bc, bw, bl, bt = bayesc_run(a.chains, a.warmup, a.draws, a.seed)
    nc, nw, nl, nt, comp = numpyro_run(a.chains, a.warmup, a.draws, a.seed)
    print(f"diabetes BNN H = {H}, {a.chains} chain(s) x ({a.warmup} warmup + {a.draws} draws), "
          f"diag metric, one core; NumPyro compile {comp:.1f} CPU-s excluded")
    print("| tool | CPU s (run) | wall s | CPU s / iteration | leapfrogs / iteration (draws) "
          "| leapfrogs (warmup + draws) | CPU us / leapfrog |")
    print("|---|---|---|---|---|---|---|")
    for name, c, w, l, t in [("bayesc", bc, bw, bl, bt), ("NumPyro", nc, nw, nl, nt)]:
        print(f"| {name} | {c:.1f} | {w:.1f} | {c / iters:.4f} | {l:.1f} | {t:.0f} "
              f"| {1e6 * c / t:.0f} |")
    print(f"ratio bayesc / NumPyro, CPU per iteration: {bc / nc:.2f}; per leapfrog: "
          f"{(bc / bt) / (nc / nt):.2f}")


if __name__ == "__main__":
    main()
