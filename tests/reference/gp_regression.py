"""Closed-form GP predictive mean and variance for tests/gp_models.rs (numpy).

Run: python3 tests/reference/gp_regression.py. With rho = 1.1, alpha = 0.9, sigma = 0.3 and the
data of examples/gp_regression/data.json: mean = K21 (K11 + sigma^2 I)^-1 y and
var = diag(K22 - K21 (K11 + sigma^2 I)^-1 K12), computed with numpy.linalg.solve (LU), not a
Cholesky factor, so the check does not share the model's algorithm.
"""
import json
import os

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
d = json.load(open(os.path.join(here, "../../examples/gp_regression/data.json")))
x, y, xp = np.array(d["x"]), np.array(d["y"]), np.array(d["x_pred"])
rho, alpha, sigma = 1.1, 0.9, 0.3


def k(a, b):
    return alpha**2 * np.exp(-((a[:, None] - b[None, :]) ** 2) / (2 * rho**2))


K11 = k(x, x) + sigma**2 * np.eye(len(x))
K21 = k(xp, x)
mean = K21 @ np.linalg.solve(K11, y)
var = np.diag(k(xp, xp) - K21 @ np.linalg.solve(K11, K21.T))
print("mean", ", ".join(f"{v:.17e}" for v in mean))
print("var", ", ".join(f"{v:.17e}" for v in var))
