"""Simulates the data of this example: x ~ normal(1, 2), y = 0.5 + 1.5 x + normal(0, 0.5),
N = 200, and removes each x with probability 0.2 (missing completely at random).
Writes data.csv (x is `NA` where removed) and removed.csv (the true values of the removed x)."""
import random

random.seed(7)
rows, removed = [], []
for i in range(200):
    x = random.gauss(1, 2)
    y = 0.5 + 1.5 * x + random.gauss(0, 0.5)
    if random.random() < 0.2:
        rows.append(("NA", f"{y:.6f}"))
        removed.append((i + 1, x))
    else:
        rows.append((f"{x:.6f}", f"{y:.6f}"))
with open("data.csv", "w") as f:
    f.write("x,y\n" + "".join(f"{a},{b}\n" for a, b in rows))
with open("removed.csv", "w") as f:
    f.write("row,x\n" + "".join(f"{i},{x:.6f}\n" for i, x in removed))
