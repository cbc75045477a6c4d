"""Posterior means and sds of the GP regression's hyperparameters (examples/gp_regression) by
deterministic quadrature, for the #[ignore] test in tests/gp_models.rs.

Run: python3 tests/reference/gp_posterior.py (numpy). The posterior of (rho, alpha, sigma) is
p ∝ inv_gamma(rho | 5, 5) · half-normal(alpha) · half-normal(sigma) · N(y | 0, K + sigma² I),
integrated on a 90³ grid in log(rho), log(alpha), log(sigma) (with the Jacobian); the grid
covers ±8 posterior sd, and doubling it to 120³ changes the printed moments by < 1e-4.
"""
import json
import math
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
d = json.load(open(os.path.join(here, "../../examples/gp_regression/data.json")))
x, y, xp = np.array(d["x"]), np.array(d["y"]), np.array(d["x_pred"])
n = int(sys.argv[1]) if len(sys.argv) > 1 else 90
lr = np.linspace(math.log(0.2), math.log(6.0), n)
la = np.linspace(math.log(0.1), math.log(4.0), n)
ls = np.linspace(math.log(0.08), math.log(1.0), n)
R, A, S = np.meshgrid(lr, la, ls, indexing="ij")
R, A, S = R.ravel(), A.ravel(), S.ravel()
rho, alpha, sigma = np.exp(R), np.exp(A), np.exp(S)
d2 = (x[:, None] - x[None, :]) ** 2
logp = np.empty(len(rho))
fm6 = np.empty(len(rho))
k6 = (xp[5] - x) ** 2
for i0 in range(0, len(rho), 20000):
    sl = slice(i0, i0 + 20000)
    K = alpha[sl, None, None] ** 2 * np.exp(-d2[None] / (2 * rho[sl, None, None] ** 2))
    K = K + (sigma[sl, None, None] ** 2) * np.eye(len(x))[None]
    L = np.linalg.cholesky(K)
    z = np.linalg.solve(L, np.broadcast_to(y, (L.shape[0], len(y)))[..., None])[..., 0]
    ll = -0.5 * (z * z).sum(-1) - np.log(np.diagonal(L, axis1=1, axis2=2)).sum(-1)
    kxs = alpha[sl, None] ** 2 * np.exp(-k6[None] / (2 * rho[sl, None] ** 2))
    Kinv_y = np.linalg.solve(K, np.broadcast_to(y, (L.shape[0], len(y)))[..., None])[..., 0]
    fm6[sl] = (kxs * Kinv_y).sum(-1)
    logp[sl] = ll
r = rho
logp += 5 * math.log(5) - math.lgamma(5) - 6 * np.log(r) - 5 / r  # inv_gamma(5, 5)
logp += -0.5 * alpha**2 - 0.5 * sigma**2  # half-normals (constants cancel)
logp += R + A + S  # Jacobian of the log grid
w = np.exp(logp - logp.max())
w /= w.sum()
for name, v in [("rho", rho), ("alpha", alpha), ("sigma", sigma), ("f_mean[6]", fm6)]:
    m = (w * v).sum()
    sd = math.sqrt((w * (v - m) ** 2).sum())
    print(f"{name} {m:.5f} {sd:.5f}")
