#!/usr/bin/env python3
"""Eight schools VI grid: verdicts and distances of each fit from its method's own ELBO optimum.

usage: eight_schools_vi_grid.py BIN OUT.tsv [--methods qbvi,mgvb] [--seeds 1-12] [--target FILE.json]
                                [-- extra fit args]
       eight_schools_vi_grid.py --table OUT.tsv
(run from the repository root; each fit takes well under a second to a few seconds).

Target [X]: a mean-field method is judged against the exact mean-field Gaussian ELBO optimum
(MF below, from the session-20 grid), a full-covariance method against the full-covariance
Gaussian ELBO optimum computed by benches/eight_schools_fullcov_optimum.py (stored in
benches/eight_schools_fullcov_optimum.json; --target picks another file). Both on the
unconstrained scale x = (mu, log tau, theta_tilde[1..8]).

Per fit, in the target's own sds: dist = max_j |mean_j - target_j| / sd_j (mean = the first row
of the output CSV, the mean of q), worst = its coordinate, sdlo / sdhi = min / max over j of the
sample sd of the 1000 written draws over the target's sd (Monte Carlo error about 2.2 %), and the
verdict ("converged" line, or "not converged"). The issue's bar for full-covariance methods:
a converged fit within 0.15 sds in every mean and 15 % in every sd.
"""
import json, math, os, re, subprocess, sys, tempfile

MF_MU = [4.5271, 0.80958, 0.2871, 0.0888, -0.0815, 0.0534, -0.1694, -0.0762, 0.3445, 0.0647]
MF_SD = [3.1574, 0.72905, 0.969, 0.934, 0.973, 0.945, 0.920, 0.945, 0.934, 0.978]
NAMES = ['mu', 'tau'] + [f'theta_tilde.{k}' for k in range(1, 9)]
FULL = {'qbvi', 'mgvb', 'emgvb', 'ngvi', 'von'}
HERE = os.path.dirname(os.path.abspath(__file__))


def target(method, extra, path):
    """(mean, sd) of the optimum this method aims at: full-covariance unless --diagonal."""
    if method in FULL and '--diagonal' not in extra:
        t = json.load(open(path))
        return t['mean'], t['sd'], 'FC'
    return MF_MU, MF_SD, 'MF'


def run(b, m, s, extra, tpath):
    mu, sd, kind = target(m, extra, tpath)
    fd, out = tempfile.mkstemp(suffix='.csv', prefix='es_'); os.close(fd)
    cmd = [b, 'fit', 'examples/eight_schools/model.bayes', '--data', 'examples/eight_schools/schools.csv',
           '--method', m, '-o', out, *extra]
    if s != 'default':
        cmd += ['--seed', str(s)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = p.stdout.splitlines()
    conv = any(l.startswith('converged') for l in lines) and 'not converged' not in p.stdout
    rows = [l for l in open(out) if not l.startswith('#')]
    os.unlink(out)
    if len(rows) < 3:
        return [m, s, kind, False, 'nan', 'ERR', 'nan', 'nan', (p.stdout + p.stderr)[-150:].replace('\n', ' ')]
    hdr = rows[0].strip().split(',')
    ix = [hdr.index(n) for n in NAMES]
    def unc(r):
        v = list(map(float, r.strip().split(',')))
        x = [v[i] for i in ix]
        x[1] = math.log(x[1])
        return x
    x = unc(rows[1])
    z = [abs(a - t) / c for a, t, c in zip(x, mu, sd)]
    j = max(range(10), key=lambda i: z[i])
    dr = [unc(r) for r in rows[2:]]
    ratios = []
    for i in range(10):
        v = [r[i] for r in dr]; a = sum(v) / len(v)
        ratios.append(math.sqrt(sum((t - a) ** 2 for t in v) / (len(v) - 1)) / sd[i])
    why = ''
    for l in lines:
        if 'not converged' in l or l.startswith('converged'):
            why = l[:160]; break
    moved = re.search(r'moved it by up to ([0-9.]+)', p.stdout)
    last = re.search(r'last step estimated was ([0-9.]+)', p.stdout)
    if moved: why += f' | moved {moved.group(1)}'
    if last: why += f' last {last.group(1)}'
    return [m, s, kind, conv, f'{max(z):.3f}', NAMES[j], f'{min(ratios):.3f}', f'{max(ratios):.3f}', why]


def table(path):
    rows = [l.rstrip('\n').split('\t') for l in open(path)][1:]
    print(f"{'method':8} {'conv':>6} {'maxdist(conv)':>13} {'sd ratio (conv)':>16} {'maxdist(not)':>12}  converged fits past the bar")
    for m in dict.fromkeys(r[0] for r in rows):
        rs = [r for r in rows if r[0] == m]
        c = [r for r in rs if r[3] == 'True']; n = [r for r in rs if r[3] != 'True']
        dc = max([float(r[4]) for r in c] or [0]); dn = max([float(r[4]) for r in n] or [0])
        lo = min([float(r[6]) for r in c] or [float('nan')]); hi = max([float(r[7]) for r in c] or [float('nan')])
        bad = [f"{r[1]}:{float(r[4]):.2f}/{float(r[6]):.2f}-{float(r[7]):.2f}" for r in c
               if float(r[4]) > 0.15 or abs(float(r[6]) - 1) > 0.15 or abs(float(r[7]) - 1) > 0.15]
        print(f"{m:8} {len(c):>2}/{len(rs):<3} {dc:13.3f} {lo:7.2f} - {hi:<6.2f} {dn:12.3f}  {' '.join(bad)}")


def main():
    a = sys.argv[1:]
    if a[0] == '--table':
        table(a[1]); return
    b, out = a[0], a[1]
    a = a[2:]
    methods, seeds, tpath, extra = ['qbvi', 'mgvb', 'emgvb', 'ngvi'], '1-12', os.path.join(HERE, 'eight_schools_fullcov_optimum.json'), []
    while a:
        f = a.pop(0)
        if f == '--methods': methods = a.pop(0).split(',')
        elif f == '--seeds': seeds = a.pop(0)
        elif f == '--target': tpath = a.pop(0)
        elif f == '--': extra = a; a = []
        else: sys.exit(f'unknown argument {f}')
    lo, hi = map(int, seeds.split('-'))
    with open(out, 'w') as fo:
        fo.write('method\tseed\ttarget\tconv\tdist\tworst\tsdlo\tsdhi\twhy\n')
        for m in methods:
            for s in ['default'] + list(range(lo, hi + 1)):
                fo.write('\t'.join(map(str, run(b, m, s, extra, tpath))) + '\n'); fo.flush()
    table(out)


if __name__ == '__main__':
    main()
