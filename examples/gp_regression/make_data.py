"""Simulates the data of this example (numpy, fixed seed): run `python3 make_data.py`."""
import json

import numpy as np

rng = np.random.default_rng(20261201)
N = 24
x = np.sort(rng.uniform(-5, 5, N))
y = np.sin(x) + 0.3 * rng.standard_normal(N)
x_pred = np.linspace(-6, 6, 9)
json.dump(
    {"N": N, "x": [round(v, 6) for v in x], "y": [round(v, 6) for v in y],
     "N_pred": len(x_pred), "x_pred": list(x_pred)},
    open("data.json", "w"), indent=1)
# counts for the latent-GP Poisson regression: log rate = 1 + sin(x)
yc = rng.poisson(np.exp(1 + np.sin(x)))
json.dump({"N": N, "x": [round(v, 6) for v in x], "y": [int(v) for v in yc]},
          open("counts.json", "w"), indent=1)
