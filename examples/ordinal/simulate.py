"""Simulates ratings.csv for the ordinal example (Python standard library only, seed 20261130).

Model: eta = 1.0 * x1 - 0.5 * x2, cut-points c = (-1, 0.5, 2); y ~ ordered_logistic(eta, c),
so P(y <= k) = logistic(c_k - eta) for k = 1..3 and y in 1..4.
"""
import math
import random

rng = random.Random(20261130)
beta = (1.0, -0.5)
cuts = (-1.0, 0.5, 2.0)
rows = []
for _ in range(300):
    x1, x2 = rng.gauss(0, 1), rng.gauss(0, 1)
    eta = beta[0] * x1 + beta[1] * x2
    u = rng.random()
    y = 1 + sum(u > 1 / (1 + math.exp(-(c - eta))) for c in cuts)
    rows.append((y, x1, x2))
with open("ratings.csv", "w") as f:
    f.write("y,x1,x2\n")
    for y, x1, x2 in rows:
        f.write(f"{y},{x1:.6f},{x2:.6f}\n")
