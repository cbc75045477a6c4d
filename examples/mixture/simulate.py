"""Simulates mixture.csv for the mixture example (Python standard library only, seed 20261130).

Two normal components with weights (0.3, 0.7), means (-2, 1.5) and sds (0.7, 1.0).
"""
import random

rng = random.Random(20261130)
w, mu, sd = (0.3, 0.7), (-2.0, 1.5), (0.7, 1.0)
with open("mixture.csv", "w") as f:
    f.write("y\n")
    for _ in range(200):
        k = 0 if rng.random() < w[0] else 1
        f.write(f"{rng.gauss(mu[k], sd[k]):.6f}\n")
