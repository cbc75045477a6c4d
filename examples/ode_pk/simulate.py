#!/usr/bin/env python3
"""Simulates the one-compartment oral-dose data of this example (pk.json).

One dose D = 100 mg at t = 0 into the gut; first-order absorption (rate ka, 1/h) into the
central compartment of volume V (L), first-order elimination (rate ke, 1/h). The
concentration is the closed form C(t) = D ka / (V (ka - ke)) (exp(-ke t) - exp(-ka t)); each
observation is C(t) times log-normal noise with sd sigma. Python standard library only, fixed
seed, so the file is reproducible:

    python3 simulate.py > pk.json
"""
import json
import math
import random

KA, KE, V, SIGMA, DOSE = 1.2, 0.25, 8.0, 0.15, 100.0
TIMES = [0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0]

rng = random.Random(20260412)
conc = []
for t in TIMES:
    c = DOSE * KA / (V * (KA - KE)) * (math.exp(-KE * t) - math.exp(-KA * t))
    conc.append(round(c * math.exp(rng.gauss(0.0, SIGMA)), 4))
print(json.dumps({"N": len(TIMES), "t": TIMES, "conc": conc, "dose": DOSE}))
