"""Predictive uncertainty on the grid, near the training data vs far from it.
Usage: python3 uncertainty.py moons_grid.csv grid_pred.csv moons_train.csv
grid_pred.csv is `bayesc predict ... --data moons_grid.csv -o grid_pred.csv`; its rows y_hat[i]
hold the posterior mean and sd of P(y_i = 1 | θ) over the draws. A grid point's distance to the
data is its Euclidean distance to the nearest training point (standardised covariates).
Standard library only."""
import csv, math, sys

def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))

grid = [(float(r["X.1"]), float(r["X.2"])) for r in rows(sys.argv[1])]
pred = {r["name"]: r for r in rows(sys.argv[2])}
train = [(float(r["X.1"]), float(r["X.2"])) for r in rows(sys.argv[3])]
bands = [(0.0, 0.25, "near (< 0.25)"), (0.25, 1.0, "0.25 - 1"), (1.0, 2.0, "1 - 2"), (2.0, 99.0, "far (> 2)")]
acc = {b[2]: [] for b in bands}
for i, (x1, x2) in enumerate(grid):
    d = min(math.hypot(x1 - a, x2 - b) for a, b in train)
    p = float(pred[f"y_hat[{i + 1}]"]["mean"])
    sd = float(pred[f"y_hat[{i + 1}]"]["sd"])
    p = min(max(p, 1e-12), 1 - 1e-12)
    h = -(p * math.log(p) + (1 - p) * math.log(1 - p))
    for lo, hi, name in bands:
        if lo <= d < hi:
            acc[name].append((h, sd))
print(f"{'distance to data':<18}{'points':>7}{'entropy (nats)':>16}{'sd of P(y=1)':>14}")
for _, _, name in bands:
    v = acc[name]
    if v:
        print(f"{name:<18}{len(v):>7}{sum(h for h, _ in v) / len(v):>16.3f}{sum(s for _, s in v) / len(v):>14.3f}")
