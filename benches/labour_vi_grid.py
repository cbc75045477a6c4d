#!/usr/bin/env python3
"""Labour grid: bayesc fit per (method, batch size, seed); verdict and mean offsets.

usage: labour_vi_grid.py BIN OUT.tsv [--seeds 1-12] [--cells qbvi:64,bbb:full] [-- extra args]
       labour_vi_grid.py --table OUT.tsv
(run from the repository root; the NUTS reference is ../shared/validation/reference_fits/labour.csv;
a grid of 444 fits takes about 2 minutes). Columns: verdict (conv / notconv), zn and zm (the max
over coordinates of |mean - NUTS| and |mean - MF| in NUTS sds), sd (max |sd / sd_MF - 1| from the
output draws; meaningful for mean-field fits only), the report's verdict line with the refinement
note's numbers (moved=, est=).
Per fit: the verdict ("converged" line or "not converged"), and the max over the 8 coordinates
of |mean_j - NUTS_j| / sd_NUTS_j and |mean_j - MF_j| / sd_NUTS_j, MF the exact mean-field
optimum (tests/qbvi_minibatch_labour.rs), mean = first row of the output CSV (the mean of q).
"""
import csv, os, re, subprocess, sys, time, tempfile

NUTS = {}
for r in csv.DictReader(open(os.environ.get('LABOUR_REFERENCE', '../shared/validation/reference_fits/labour.csv'))):
    NUTS[r['name'].replace('[', '.').replace(']', '')] = (float(r['mean']), float(r['sd']))
NAMES = ['alpha'] + [f'beta.{k}' for k in range(1, 8)]
MFSD = dict(zip(NAMES, [0.080402, 0.153354, 0.043045, 0.0018305, 0.165367, 0.132318, 0.067363, 0.0035495]))
MF = dict(zip(NAMES, [3.201173, -1.483323, -0.064231, -0.063264, 0.819688, 0.115618, 0.613366, -0.034926]))

FULL = ['bbb', 'ivon', 'vogn', 'von', 'vadam', 'bbvi', 'ngbbvi', 'qbvi']
MB = ['qbvi', 'ivon', 'bbb']
BATCHES = [5, 16, 32, 50, 64, 100, 200]

EXTRA_FULL = ['mgvb', 'emgvb', 'ngvi', 'vlaplace']
EXTRA_MB = [('vogn', 32), ('vadam', 32), ('vlaplace', 32), ('von', 32)]

def cells():
    for m in FULL:
        yield (m, None)
    for m in MB:
        for b in BATCHES:
            yield (m, b)
    for m in EXTRA_FULL:
        yield (m, None)
    for m, b in EXTRA_MB:
        yield (m, b)

def run(binary, method, batch, seed, extra=()):
    fd, out = tempfile.mkstemp(suffix='.csv', prefix='g18_'); os.close(fd)
    cmd = [binary, 'fit', 'examples/labour/model.bayes', '--data', 'examples/labour/labour.csv',
           '--method', method, '--seed', str(seed), '-o', out, *extra]
    if batch:
        cmd += ['--batch-size', str(batch)]
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t
    conv = any(l.startswith('converged') for l in p.stdout.splitlines())
    notc = 'not converged' in p.stdout
    verdict = 'conv' if conv and not notc else ('notconv' if notc else 'other')
    first = ''
    for l in p.stdout.splitlines():
        if l.startswith('converged') or 'not converged' in l:
            first = l.strip()[:300]; break
    try:
        rows = [l for l in open(out) if not l.startswith('#')]
        hdr = rows[0].strip().split(',')
        mean = dict(zip(hdr, map(float, rows[1].strip().split(','))))
        zn = max(abs(mean[n] - NUTS[n][0]) / NUTS[n][1] for n in NAMES)
        zm = max(abs(mean[n] - MF[n]) / NUTS[n][1] for n in NAMES)
        worst = max(NAMES, key=lambda n: abs(mean[n] - NUTS[n][0]) / NUTS[n][1])
        cols = [hdr.index(n) for n in NAMES]
        dr = [[float(x) for x in l.strip().split(',')] for l in rows[2:]]
        sdr = []
        for n, c in zip(NAMES, cols):
            v = [r[c] for r in dr]; m = sum(v) / len(v)
            sdr.append((sum((x - m) ** 2 for x in v) / (len(v) - 1)) ** 0.5 / MFSD[n])
        sdbad = max(abs(x - 1) for x in sdr)
        sdlo, sdhi = min(sdr), max(sdr)
        nsd = [x * MFSD[n] / NUTS[n][1] for x, n in zip(sdr, NAMES)]
        nsdlo, nsdhi = min(nsd), max(nsd)
    except Exception as e:
        zn = zm = sdbad = sdlo = sdhi = nsdlo = nsdhi = float('nan'); worst = 'ERR'
    os.unlink(out)
    it = re.search(r'after (\d+) iterations', p.stdout)
    moved = re.search(r'moved it by up to ([0-9.]+)', p.stdout)
    est = re.search(r'estimated to be ([0-9.]+) posterior sds', p.stdout)
    first = f"moved={moved.group(1) if moved else '-'} est={est.group(1) if est else '<.05'} | " + first
    return dict(method=method, batch=batch or 'full', seed=seed, verdict=verdict,
                zn=zn, zm=zm, worst=worst, iters=it.group(1) if it else '', wall=wall, sd=sdbad,
                sdlo=sdlo, sdhi=sdhi, nsdlo=nsdlo, nsdhi=nsdhi, line=first, rc=p.returncode)

def main():
    if sys.argv[1] == '--table':
        return table(sys.argv[2])
    binary, outp = sys.argv[1], sys.argv[2]
    seeds = range(1, 13)
    sel = None
    extra = []
    args = sys.argv[3:]
    i = 0
    while i < len(args):
        if args[i] == '--seeds':
            a, b = args[i + 1].split('-'); seeds = range(int(a), int(b) + 1); i += 2
        elif args[i] == '--cells':
            sel = args[i + 1].split(','); i += 2
        elif args[i] == '--':
            extra = args[i + 1:]; break
        else:
            raise SystemExit(args[i])
    with open(outp, 'w') as f:
        f.write('method\tbatch\tseed\tverdict\tzn\tzm\tworst\titers\twall\tsd\tsdlo\tsdhi\tnsdlo\tnsdhi\tline\n')
        # --cells may name cells outside the default grid (e.g. vadam:5)
        chosen = [(t.split(':')[0], None if t.split(':')[1] == 'full' else int(t.split(':')[1]))
                  for t in sel] if sel else list(cells())
        for m, b in chosen:
            if not sel and os.environ.get('GRID_MAIN_ONLY') and (m in EXTRA_FULL and b is None or (m, b) in EXTRA_MB):
                continue
            for s in seeds:
                r = run(binary, m, b, s, extra)
                f.write('\t'.join(str(r[k]) for k in
                        ['method', 'batch', 'seed', 'verdict', 'zn', 'zm', 'worst', 'iters', 'wall', 'sd', 'sdlo', 'sdhi', 'nsdlo', 'nsdhi', 'line']) + '\n')
                f.flush()

def table(path):
    from collections import OrderedDict
    rows = list(csv.DictReader(open(path), delimiter='\t'))
    cells = OrderedDict()
    for r in rows:
        cells.setdefault((r['method'], r['batch']), []).append(r)
    print(f"{'cell':14} {'conv':>6} {'maxN':>6} {'meanN':>6} {'maxMF':>6} {'meanMF':>6} {'>0.15':>5} {'nc maxN':>7} {'wall':>6} {'sdlo':>5} {'sdhi':>5} {'sd>.2':>5} bad-seeds")
    for (m, b), rs in cells.items():
        c = [r for r in rs if r['verdict'] == 'conv']
        zn = [float(r['zn']) for r in c]; zm = [float(r['zm']) for r in c]
        nc = [float(r['zn']) for r in rs if r['verdict'] != 'conv']
        bad = [f"{r['seed']}:{float(r['zn']):.2f}" for r in c if float(r['zn']) > 0.15]
        w = sum(float(r['wall']) for r in rs) / len(rs)
        f = lambda v, g: f"{g(v):6.3f}" if v else '     -'
        # sd / sd_MF over the converged fits (meaningful for mean-field q only; 'sdlo' absent
        # in files written before it was recorded)
        lo = [float(r['sdlo']) for r in c if r.get('sdlo')]
        hi = [float(r['sdhi']) for r in c if r.get('sdhi')]
        far = sum(1 for a, b in zip(lo, hi) if a < 0.8 or b > 1.2)
        sds = f"{min(lo):5.2f} {max(hi):5.2f} {far:>5}" if lo else f"{'-':>5} {'-':>5} {'-':>5}"
        print(f"{m+':'+b:14} {len(c):>2}/{len(rs):<3} {f(zn,max)} {f(zn,lambda v: sum(v)/len(v))} {f(zm,max)} {f(zm,lambda v: sum(v)/len(v))} {len(bad):>5} {f(nc,max):>7} {w:6.2f} {sds} {' '.join(bad)}")


if __name__ == '__main__':
    main()
