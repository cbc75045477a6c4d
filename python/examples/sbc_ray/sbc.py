"""Simulation-based calibration (Talts, Betancourt, Simpson, Vehtari & Gelman 2018) of the
eight-schools model, one NUTS fit per simulated data set, mapped over Ray with
`bayesc.ray.fit_many` — or run as a plain Python loop over the same fits, for comparison.

For each of N simulations: draw (mu, tau, theta_tilde) from the prior, y ~ normal(theta, sigma)
with the eight schools' standard errors, fit by NUTS (4 chains × 250 draws, seed i + 1), thin
each chain by 10 and keep L = 99 draws; the rank of the true value among them is uniform on
0…L when the fit is calibrated. The ranks are binned into 10 bins of 10 and tested for
uniformity with Pearson's χ² (9 degrees of freedom). The script exits with status 1 when the
test rejects at 1% for mu or tau.

    python sbc.py --n 200 --mode both               # local Ray (started here) and a plain loop
    python sbc.py --n 200 --mode ray --address auto # an existing cluster (`ray start --head`)

See README.md beside this file for the measured numbers and how to point it at a cluster.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import bayesc

HERE = Path(__file__).resolve().parent
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
J = len(SIGMA)
THIN = 10
L = 99
BINS = 10
FIT_OPTIONS = dict(chains=4, warmup=300, samples=250)


def simulate(i: int) -> tuple[dict, dict]:
    """Simulation i: the true parameters from the prior and a data set drawn given them."""
    rng = np.random.default_rng(20180501 + i)
    mu = rng.normal(0, 5)
    tau = abs(rng.normal(0, 5))
    theta = mu + tau * rng.normal(0, 1, J)
    y = rng.normal(theta, SIGMA)
    return {"mu": mu, "tau": tau}, {"J": J, "y": y, "sigma": SIGMA}


def thinned(fit: bayesc.Fit) -> dict:
    """On the worker: L thinned draws of mu and tau, and the fit's divergences (small to send)."""
    d = fit.draws
    out = {k: d[k][:, THIN - 1 :: THIN].ravel()[:L] for k in ("mu", "tau")}
    out["divergences"] = int(sum(fit.diagnostics["divergences"]))
    return out


def ranks(results: list[dict], truths: list[dict]) -> dict[str, np.ndarray]:
    return {
        k: np.array([int(np.sum(r[k] < t[k])) for r, t in zip(results, truths)]) for k in ("mu", "tau")
    }


def chi2_uniform(r: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Pearson's χ² of the ranks 0…L in BINS equal bins against the uniform: (stat, p, counts)."""
    from scipy import stats

    counts = np.bincount(r * BINS // (L + 1), minlength=BINS)
    stat, p = stats.chisquare(counts)
    return float(stat), float(p), counts


def text_histogram(k: str, counts: np.ndarray, width: int = 40) -> str:
    """The rank histogram of `k` as text: one row per bin (its ranks, count, a bar), with the
    count expected under uniformity and the 99% band of one bin's Binomial(n, 1/BINS) count."""
    from scipy import stats

    n = int(counts.sum())
    lo, hi = stats.binom.ppf([0.005, 0.995], n, 1 / BINS)
    top = max(int(counts.max()), int(hi))
    rows = [f"rank histogram of {k} ({n} fits; expected {n / BINS:g} per bin, 99% band {lo:g}-{hi:g}):"]
    for b, c in enumerate(counts):
        bar = "#" * round(width * c / top)
        first, last = b * (L + 1) // BINS, (b + 1) * (L + 1) // BINS - 1
        flag = "" if lo <= c <= hi else "  <- outside the band"
        rows.append(f"  {first:>2}-{last:<2} {c:>4} {bar}{flag}")
    return "\n".join(rows)


def plot_histograms(path: Path, rk: dict[str, np.ndarray]) -> None:
    """The rank histograms as a picture (SVG or PNG by `path`'s suffix), drawn as Talts et al.
    (2018, figure 1) do: the bin counts as bars over the grey 99% band of a uniform's counts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy import stats

    fig, axes = plt.subplots(1, len(rk), figsize=(4.2 * len(rk), 3.2), sharey=True)
    for ax, (k, r) in zip(np.atleast_1d(axes), rk.items()):
        counts = np.bincount(r * BINS // (L + 1), minlength=BINS)
        n = int(counts.sum())
        lo, hi = stats.binom.ppf([0.005, 0.995], n, 1 / BINS)
        ax.axhspan(lo, hi, color="0.85", zorder=0, label="99% band (uniform)")
        ax.axhline(n / BINS, color="0.5", lw=1, zorder=1)
        edges = np.arange(BINS) * (L + 1) / BINS
        ax.bar(edges, counts, width=(L + 1) / BINS, align="edge", color="#4c72b0", edgecolor="white", zorder=2)
        _, p = stats.chisquare(counts)
        ax.set_title(f"{k}: χ² p = {p:.3f}")
        ax.set_xlabel(f"rank of the true {k} among L = {L} draws")
        ax.set_xlim(0, L + 1)
    np.atleast_1d(axes)[0].set_ylabel("simulations")
    np.atleast_1d(axes)[0].legend(loc="lower left", fontsize=8)
    fig.suptitle(f"SBC of eight schools: {n} NUTS fits, {BINS} bins", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run_loop(model: bayesc.Model, datasets: list[dict]) -> list[dict]:
    """The same fits one after another in this process (each fit's 4 chains on all cores)."""
    return [
        thinned(model.fit(data=d, method="nuts", seed=i + 1, progress=False, **FIT_OPTIONS))
        for i, d in enumerate(datasets)
    ]


def run_ray(model: bayesc.Model, datasets: list[dict], address: str | None) -> list[dict]:
    """The fits as Ray tasks, one thread each (2 tasks at a time on 2 cores)."""
    import ray

    import bayesc.ray

    seeds = [i + 1 for i in range(len(datasets))]
    return bayesc.ray.fit_many(
        model, datasets, method="nuts", seed=seeds, result=thinned, threads=1, **FIT_OPTIONS
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200, help="number of simulated data sets")
    ap.add_argument("--mode", choices=["ray", "loop", "both"], default="ray")
    ap.add_argument(
        "--address",
        default=None,
        help="Ray cluster address: 'auto' (the cluster `ray start` started on this machine) or "
        "HEAD_IP:6379; default: ray.init()'s own choice ($RAY_ADDRESS, else the latest local "
        "`ray start` cluster, else a new local Ray instance)",
    )
    ap.add_argument("--json", type=Path, help="write the results (p-values, times) to this file")
    ap.add_argument(
        "--plot",
        type=Path,
        help="draw the rank histograms to this .svg or .png file (needs matplotlib)",
    )
    args = ap.parse_args()

    model = bayesc.Model(HERE / "model.bayes")
    sims = [simulate(i) for i in range(args.n)]
    truths = [t for t, _ in sims]
    datasets = [d for _, d in sims]
    report: dict = {"n": args.n, "L": L, "bins": BINS}
    results = None
    if args.mode in ("ray", "both"):
        import ray

        t0 = time.perf_counter()
        ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
        report["ray_init_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        results = run_ray(model, datasets, args.address)
        report["ray_seconds"] = time.perf_counter() - t0

        report["ray_cpus"] = ray.cluster_resources().get("CPU")
    if args.mode in ("loop", "both"):
        t0 = time.perf_counter()
        loop_results = run_loop(model, datasets)
        report["loop_seconds"] = time.perf_counter() - t0
        if results is not None:
            # the same seeds give the same draws in a Ray task (1 thread) and in the loop
            same = all(np.array_equal(a["mu"], b["mu"]) for a, b in zip(results, loop_results))
            report["ray_equals_loop"] = same
        results = loop_results if results is None else results
    assert results is not None
    rk = ranks(results, truths)
    ok = True
    for k in ("mu", "tau"):
        stat, p, counts = chi2_uniform(rk[k])
        report[f"chi2_{k}"], report[f"p_{k}"] = stat, p
        report[f"counts_{k}"] = counts.tolist()
        print(text_histogram(k, counts))
        print(f"{k:>4}: rank counts in {BINS} bins {counts.tolist()}  χ²({BINS - 1}) = {stat:.2f}, p = {p:.3f}")
        ok &= p >= 0.01
    if args.plot:
        plot_histograms(args.plot, rk)
        print(f"rank histograms drawn to {args.plot}")
    report["divergences"] = int(sum(r["divergences"] for r in results))
    print(f"divergent transitions over all fits: {report['divergences']}")
    for key in ("ray_seconds", "loop_seconds"):
        if key in report:
            print(f"{key.replace('_seconds', '')}: {report[key]:.1f} s wall for {args.n} fits")
    if "ray_init_seconds" in report:
        print(f"(ray.init: {report['ray_init_seconds']:.1f} s, not included above)")
    if "ray_equals_loop" in report:
        print(f"Ray draws equal the loop's: {report['ray_equals_loop']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    if not ok:
        print("REJECTED: the ranks are not uniform at the 1% level", file=sys.stderr)
        return 1
    print("uniformity not rejected at 1% for mu and tau")
    return 0


if __name__ == "__main__":
    sys.exit(main())
