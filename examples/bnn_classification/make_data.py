"""Writes moons_train.csv and moons_test.csv: the two-moons problem of PyMC's "Variational
inference: Bayesian neural networks" example — scikit-learn's make_moons with 1000 points and
noise 0.2, the covariates scaled to zero mean and unit variance, split half and half — and
moons_grid.csv, a 41 × 41 grid over [-3, 3]² (label 0 as a placeholder) for predictive
uncertainty away from the data. Run: pip install scikit-learn==1.9.1; python3 make_data.py
"""
import numpy as np
from sklearn.datasets import make_moons
from sklearn.preprocessing import scale

X, y = make_moons(n_samples=1000, noise=0.2, random_state=0)
X = scale(X)
rng = np.random.default_rng(0)
perm = rng.permutation(len(y))
train, test = perm[:500], perm[500:]

def write(path, X, y):
    with open(path, "w") as f:
        f.write("X.1,X.2,y\n")
        for (a, b), c in zip(X, y):
            f.write(f"{a:.10g},{b:.10g},{int(c)}\n")

write("moons_train.csv", X[train], y[train])
write("moons_test.csv", X[test], y[test])
g = np.linspace(-3, 3, 41)
gx, gy = np.meshgrid(g, g)
write("moons_grid.csv", np.c_[gx.ravel(), gy.ravel()], np.zeros(gx.size))
print("train", y[train].mean(), "test", y[test].mean())
