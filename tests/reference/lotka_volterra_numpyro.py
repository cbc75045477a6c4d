"""A long NumPyro NUTS run of the Lotka-Volterra model of examples/lotka_volterra/model.bayes
(the same data file, priors, likelihood and parameterisation), the reference of the tests in
tests/ode_lotka_volterra.rs. It writes two files beside this script:

- lotka_volterra_numpyro.csv: name,mean,sd,mcse,ess,rhat of the eight parameters (alpha, beta,
  gamma, delta, z_init[1], z_init[2], sigma[1], sigma[2]) and of z[n,k] for a few n; MCSE is
  sd / sqrt(ESS) with NumPyro's effective sample size, R-hat is NumPyro's split R-hat;
- lotka_volterra_numpyro_points.csv: point,quantity,value at three parameter points ("mean": the
  posterior mean of this run, and two fixed points "a" and "b"): the eight parameter values, the
  log joint density in the constrained space (no Jacobian, with every normalising constant),
  its gradient grad[name] with respect to the constrained parameters, and the ODE solution
  z[n,k] (n = 1..20, k = 1 hare, 2 lynx) from a tighter solve (rtol = atol = 1e-10).

Model (as the .bayes): z' = ((alpha - beta z2) z1, (-gamma + delta z1) z2) from z(0) = z_init,
observed at t = 1..20 (years after 1900); y_init[k] ~ lognormal(log z_init[k], sigma[k]),
y[n, k] ~ lognormal(log z[n][k], sigma[k]); alpha, gamma ~ normal(1, 0.5) and beta, delta ~
normal(0.05, 0.05), all truncated to (0, inf) (the .bayes's <lower=0>: the same posterior,
as the truncation constant does not depend on the parameters); sigma ~ lognormal(-1, 1);
z_init ~ lognormal(log 10, 1). The ODE is solved by jax.experimental.ode.odeint (Dormand-Prince
5(4), gradients by its adjoint) with rtol = atol = 1e-8 and mxstep 100000, tighter than the
.bayes's (1e-5, 1e-3).

Settings: NUTS (target acceptance 0.8, diagonal mass matrix), 4 chains, 2000 warmup and 10 000
draws each (the first argument changes the number of draws), PRNGKey(2026), each chain started
at init_to_median (medians of 15 prior draws); float64. Run with numpyro 0.22.0, jax/jaxlib
0.10.2, Python 3.11.7, CPU; 0 divergences, 32.8 leapfrog steps per draw on average; the
whole script took 58 min wall and 14.3 CPU-min on a shared (heavily loaded) 2-core machine:

    python3 tests/reference/lotka_volterra_numpyro.py [draws per chain]
"""
import json
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.experimental.ode import odeint
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
from numpyro.infer import MCMC, NUTS, init_to_median
from numpyro.infer.util import log_density

jax.config.update("jax_enable_x64", True)
here = os.path.dirname(os.path.abspath(__file__))
d = json.load(open(os.path.join(here, "../../examples/lotka_volterra/lynx_hare.json")))
N = d["N"]
ts = jnp.concatenate([jnp.zeros(1), jnp.array(d["ts"], dtype=jnp.float64)])  # t0 = 0, then ts
y_init = jnp.array(d["y_init"])
y = jnp.array(d["y"])  # N x 2: hare, lynx
NAMES = ["alpha", "beta", "gamma", "delta", "z_init[1]", "z_init[2]", "sigma[1]", "sigma[2]"]


def dz_dt(z, t, alpha, beta, gamma, delta):
    return jnp.stack([(alpha - beta * z[1]) * z[0], (-gamma + delta * z[0]) * z[1]])


def solve(z_init, alpha, beta, gamma, delta, tol=1e-8):
    """z at ts[1:] (N x 2)."""
    return odeint(dz_dt, z_init, ts, alpha, beta, gamma, delta, rtol=tol, atol=tol,
                  mxstep=100000)[1:]


def model():
    alpha = numpyro.sample("alpha", dist.TruncatedNormal(1.0, 0.5, low=0.0))
    beta = numpyro.sample("beta", dist.TruncatedNormal(0.05, 0.05, low=0.0))
    gamma = numpyro.sample("gamma", dist.TruncatedNormal(1.0, 0.5, low=0.0))
    delta = numpyro.sample("delta", dist.TruncatedNormal(0.05, 0.05, low=0.0))
    z_init = numpyro.sample("z_init", dist.LogNormal(jnp.log(10.0), 1.0).expand([2]).to_event(1))
    sigma = numpyro.sample("sigma", dist.LogNormal(-1.0, 1.0).expand([2]).to_event(1))
    z = solve(z_init, alpha, beta, gamma, delta)
    numpyro.deterministic("z", z)
    numpyro.sample("y_init", dist.LogNormal(jnp.log(z_init), sigma).to_event(1), obs=y_init)
    numpyro.sample("y", dist.LogNormal(jnp.log(z), sigma).to_event(2), obs=y)


def flat(s):
    """The eight parameters as columns (… x 8), in NAMES order."""
    return np.concatenate([np.asarray(s[k])[..., None] for k in ("alpha", "beta", "gamma", "delta")]
                          + [np.asarray(s["z_init"]), np.asarray(s["sigma"])], axis=-1)


def unflat(v):
    v = jnp.asarray(v)
    return {"alpha": v[0], "beta": v[1], "gamma": v[2], "delta": v[3], "z_init": v[4:6],
            "sigma": v[6:8]}


def log_joint(v):
    return log_density(model, (), {}, unflat(v))[0]


draws = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
start, cpu0 = time.time(), time.process_time()
mcmc = MCMC(NUTS(model, init_strategy=init_to_median), num_warmup=2000, num_samples=draws,
            num_chains=4, chain_method="parallel", progress_bar=False)
mcmc.run(jax.random.PRNGKey(2026), extra_fields=("diverging", "num_steps"))
s = mcmc.get_samples(group_by_chain=True)
extra = mcmc.get_extra_fields(group_by_chain=True)
p = flat(s)  # chains x draws x 8
z = np.asarray(s["z"])  # chains x draws x N x 2
# (after the draws are on the host: JAX dispatches asynchronously)
wall, cpu = time.time() - start, time.process_time() - cpu0
cols = [(n, p[:, :, i]) for i, n in enumerate(NAMES)]
cols += [(f"z[{n},{k}]", z[:, :, n - 1, k - 1]) for n in (1, 5, 10, 15, 20) for k in (1, 2)]
rows = []
for name, v in cols:
    ess = float(effective_sample_size(v))
    sd = v.std(ddof=1)
    rows.append((name, v.mean(), sd, sd / ess**0.5, ess, float(split_gelman_rubin(v))))
    print(f"{name:10s} mean {v.mean():.6g} sd {sd:.6g} mcse {sd / ess**0.5:.3g} ess {ess:.0f} "
          f"rhat {rows[-1][5]:.4f}")
print(f"divergences {int(np.asarray(extra['diverging']).sum())}, mean leapfrog steps "
      f"{np.asarray(extra['num_steps']).mean():.1f}; wall {wall:.0f} s, cpu {cpu:.0f} s")
with open(os.path.join(here, "lotka_volterra_numpyro.csv"), "w") as f:
    f.write("name,mean,sd,mcse,ess,rhat\n")
    for r in rows:
        f.write(f"{r[0]},{r[1]:.8g},{r[2]:.8g},{r[3]:.4g},{r[4]:.0f},{r[5]:.5f}\n")

points = {
    "mean": p.reshape(-1, 8).mean(axis=0),
    "a": np.array([0.6, 0.03, 0.75, 0.022, 32.0, 6.2, 0.3, 0.2]),
    "b": np.array([0.45, 0.024, 0.9, 0.027, 36.0, 5.5, 0.2, 0.3]),
}
lj_grad = jax.jit(jax.value_and_grad(log_joint))
with open(os.path.join(here, "lotka_volterra_numpyro_points.csv"), "w") as f:
    f.write("point,quantity,value\n")
    for key, v in points.items():
        lj, g = lj_grad(jnp.asarray(v))
        zz = np.asarray(solve(jnp.asarray(v[4:6]), *[jnp.asarray(x) for x in v[:4]], tol=1e-10))
        for n, x in zip(NAMES, v):
            f.write(f"{key},{n},{float(x)!r}\n")
        f.write(f"{key},log_joint,{float(lj)!r}\n")
        for n, x in zip(NAMES, np.asarray(g)):
            f.write(f"{key},grad[{n}],{float(x)!r}\n")
        for n in range(N):
            for k in range(2):
                f.write(f"{key},z[{n + 1},{k + 1}],{float(zz[n, k])!r}\n")
