"""Simulates data.json for examples/cdfs (numpy and scipy, seed 14): skew-normal values with some
left-censored below L, and von Mises angles with some known only to be below 0."""
import json

import numpy as np
from scipy import stats

rng = np.random.default_rng(14)
xi, omega, alpha, L = 1.0, 2.0, 3.0, 1.5
y = stats.skewnorm.rvs(alpha, loc=xi, scale=omega, size=120, random_state=rng)
observed = y[y >= L]
mu, kappa = 0.4, 3.0
theta = stats.vonmises.rvs(kappa, loc=mu, size=150, random_state=rng)
theta = (theta + np.pi) % (2 * np.pi) - np.pi
keep = rng.random(theta.size) < 0.7
data = {
    "N": int(observed.size), "y": [round(float(v), 6) for v in observed],
    "N_cens": int((y < L).sum()), "L": L, "alpha": alpha,
    "M": int(keep.sum()), "theta": [round(float(v), 6) for v in theta[keep]],
    "n_below": int((theta[~keep] < 0).sum()), "n_above": int((theta[~keep] >= 0).sum()),
}
json.dump(data, open("data.json", "w"), indent=1)
print({k: v for k, v in data.items() if not isinstance(v, list)})
