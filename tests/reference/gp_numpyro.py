"""A long NumPyro NUTS run of the GP regression (examples/gp_regression/model.bayes, the same
priors and marginal likelihood), for the #[ignore] test in tests/gp_models.rs: prints the posterior
mean, sd and MCSE of the mean of rho, alpha, sigma and f_mean[6].

Run: python3 tests/reference/gp_numpyro.py [draws per chain] (numpyro 0.22, jax 0.10; 4 chains,
1000 warmup, seed 2026). MCSE is sd / sqrt(ESS) with NumPyro's effective sample size.
"""
import json
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import MCMC, NUTS

jax.config.update("jax_enable_x64", True)
here = os.path.dirname(os.path.abspath(__file__))
d = json.load(open(os.path.join(here, "../../examples/gp_regression/data.json")))
x, y, xp = jnp.array(d["x"]), jnp.array(d["y"]), jnp.array(d["x_pred"])


def kernel(a, b, alpha, rho):
    return alpha**2 * jnp.exp(-0.5 * (a[:, None] - b[None, :]) ** 2 / rho**2)


def model():
    rho = numpyro.sample("rho", dist.InverseGamma(5.0, 5.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    k = kernel(x, x, alpha, rho) + sigma**2 * jnp.eye(x.shape[0])
    numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(x.shape[0]), covariance_matrix=k), obs=y)


draws = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
mcmc = MCMC(NUTS(model), num_warmup=1000, num_samples=draws, num_chains=4,
            chain_method="parallel", progress_bar=False)
mcmc.run(jax.random.PRNGKey(2026))
s = mcmc.get_samples(group_by_chain=True)
rho, alpha, sigma = (np.asarray(s[k]) for k in ("rho", "alpha", "sigma"))


def f_mean6(r, a, sg):
    k11 = kernel(x, x, a, r) + sg**2 * jnp.eye(x.shape[0])
    k21 = kernel(xp[5:6], x, a, r)
    return (k21 @ jnp.linalg.solve(k11, y))[0]


fm6 = np.asarray(jax.vmap(jax.vmap(f_mean6))(rho, alpha, sigma))
for name, v in [("rho", rho), ("alpha", alpha), ("sigma", sigma), ("f_mean[6]", fm6)]:
    ess = float(effective_sample_size(v))
    print(f"{name}: mean {v.mean():.5f} sd {v.std(ddof=1):.5f} mcse {v.std(ddof=1) / ess**0.5:.5f} ess {ess:.0f}")
