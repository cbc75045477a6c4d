"""Coverage of the removed values by the imputed posterior: reads the NUTS draws files given on
the command line (Stan CSV) and removed.csv, and prints how many removed values fall inside the
central 50 % and 90 % posterior intervals of their `x_missing` entries."""
import csv
import sys

draws = {}
for path in sys.argv[1:]:
    rows = [line for line in open(path) if not line.startswith("#")]
    reader = csv.reader(rows)
    header = next(reader)
    for row in reader:
        for name, value in zip(header, row):
            draws.setdefault(name, []).append(float(value))
removed = list(csv.DictReader(open("removed.csv")))
inside = {0.5: 0, 0.9: 0}
for k, r in enumerate(removed, start=1):
    d = sorted(draws[f"x_missing.{k}"])
    q = lambda p: d[round(p * (len(d) - 1))]
    for level in inside:
        lo, hi = q((1 - level) / 2), q((1 + level) / 2)
        inside[level] += lo <= float(r["x"]) <= hi
n = len(removed)
for level, count in inside.items():
    print(f"{level:.0%} intervals cover {count} of {n} removed values (nominal {level * n:.1f})")
