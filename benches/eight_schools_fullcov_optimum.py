#!/usr/bin/env python3
"""Eight schools: the full-covariance Gaussian ELBO optimum on the unconstrained scale.

usage: eight_schools_fullcov_optimum.py [OUT.json] [--draws N] [--sets K]
(needs numpy and scipy; about a minute per draw set of 200 000 at the default settings)

Target: q = N(m, L Lᵀ) over x = (mu, log tau, theta_tilde[1..8]) (d = 10) maximising
    ELBO(m, L) = E_{ε~N(0,I)}[log p(m + L ε)] + Σ_i log |L_ii|      (survey_vi.md §1, eq. (1),
the Gaussian entropy up to a constant), with log p the model's log density on the unconstrained
scale *including* the log-Jacobian log tau of tau = exp(x_2) (examples/eight_schools/model.bayes:
mu ~ normal(0, 5), tau ~ cauchy(0, 5) on tau > 0, theta_tilde ~ normal(0, 1),
y ~ normal(mu + tau theta_tilde, sigma)).

Method [X]: common random numbers. For each of K independent draw sets of N antithetic standard
normal draws (ε and −ε), the sample-average ELBO is a deterministic smooth function of (m, L);
L-BFGS-B with the exact gradient (∇_m = mean ∇log p, ∇_L = lower(mean ∇log p εᵀ) + diag(1/L_ii))
maximises it to a gradient norm < 1e-9. The K optima differ only by Monte Carlo error: the
reported value is their average and its Monte Carlo error the standard deviation of the K
optima / sqrt(K). Measured (K = 4, N = 200 000): every coordinate's mean and sd to ≤ 0.003 in the
optimum's own sds (printed per coordinate).

Output: a table (coordinate, mean, its MC error, sd, its MC error, and the same in units of the
optimum's own sd), and with OUT.json a file {"names", "mean", "sd", "cov", "mean_mce", "sd_mce",
"elbo"} read by benches/eight_schools_vi_grid.py --target.
"""
import json
import sys

import numpy as np
from scipy.optimize import minimize

Y = np.array([28.0, 8, -3, 7, -1, 1, 18, 12])
SIG = np.array([15.0, 10, 16, 11, 9, 11, 10, 18])
D = 10
NAMES = ['mu', 'log_tau'] + [f'theta_tilde.{k}' for k in range(1, 9)]
TRIL = np.tril_indices(D)


def logp_grad(x):
    """log p (up to a constant) and its gradient at rows x (n × 10), unconstrained scale."""
    mu, s, tt = x[:, 0], x[:, 1], x[:, 2:]
    tau = np.exp(s)
    theta = mu[:, None] + tau[:, None] * tt
    r = (Y - theta) / SIG ** 2                       # d/dtheta of the likelihood
    lp = (-0.5 * (mu / 5) ** 2 - np.log1p((tau / 5) ** 2) + s
          - 0.5 * (tt ** 2).sum(1) - 0.5 * (((Y - theta) / SIG) ** 2).sum(1))
    g = np.empty_like(x)
    g[:, 0] = -mu / 25 + r.sum(1)
    g[:, 1] = -2 * (tau / 5) ** 2 / (1 + (tau / 5) ** 2) + 1 + tau * (r * tt).sum(1)
    g[:, 2:] = -tt + tau[:, None] * r
    return lp, g


def unpack(p):
    m = p[:D]
    L = np.zeros((D, D))
    L[TRIL] = p[D:]
    return m, L


def neg_elbo(p, eps):
    m, L = unpack(p)
    x = m + eps @ L.T
    lp, g = logp_grad(x)
    d = np.diag(L)
    f = lp.mean() + np.log(np.abs(d)).sum()
    gm = g.mean(0)
    gL = (g.T @ eps) / len(eps)
    gL[np.diag_indices(D)] += 1 / d
    return -f, -np.concatenate([gm, gL[TRIL]])


def optimum(eps, start):
    r = minimize(neg_elbo, start, args=(eps,), jac=True, method='L-BFGS-B',
                 options={'maxiter': 20000, 'maxcor': 30, 'gtol': 1e-10, 'ftol': 1e-15})
    m, L = unpack(r.x)
    return m, L @ L.T, -r.fun, np.abs(r.jac).max()


def main():
    args = sys.argv[1:]
    n, k, out = 200_000, 4, None
    while args:
        a = args.pop(0)
        if a == '--draws':
            n = int(args.pop(0))
        elif a == '--sets':
            k = int(args.pop(0))
        else:
            out = a
    start = np.zeros(D + len(TRIL[0]))
    start[:D] = [4.5, 0.8] + [0.0] * 8
    Ls = np.eye(D)
    Ls[0, 0], Ls[1, 1] = 3.0, 0.7
    start[D:] = Ls[TRIL]
    ms, covs, elbos = [], [], []
    for j in range(k):
        rng = np.random.default_rng(1000 + j)
        e = rng.standard_normal((n // 2, D))
        eps = np.vstack([e, -e])
        m, c, f, gmax = optimum(eps, start)
        ms.append(m); covs.append(c); elbos.append(f)
        print(f'set {j}: elbo {f:.6f}, max |gradient| {gmax:.1e}, mean {np.round(m, 4).tolist()}',
              file=sys.stderr)
    ms, covs = np.array(ms), np.array(covs)
    sds = np.sqrt(np.diagonal(covs, axis1=1, axis2=2))
    m, sd = ms.mean(0), sds.mean(0)
    m_mce, sd_mce = ms.std(0, ddof=1) / np.sqrt(k), sds.std(0, ddof=1) / np.sqrt(k)
    cov = covs.mean(0)
    print(f'{"coordinate":14} {"mean":>9} {"mce":>7} {"sd":>8} {"mce":>7} {"mce/sd(m)":>9} {"mce/sd(sd)":>10}')
    for i in range(D):
        print(f'{NAMES[i]:14} {m[i]:9.4f} {m_mce[i]:7.4f} {sd[i]:8.4f} {sd_mce[i]:7.4f} '
              f'{m_mce[i] / sd[i]:9.4f} {sd_mce[i] / sd[i]:10.4f}')
    corr = cov / np.outer(sd, sd)
    print('largest |correlations|:')
    pairs = sorted(((abs(corr[i, j]), i, j) for i in range(D) for j in range(i)), reverse=True)[:6]
    for c, i, j in pairs:
        print(f'  {NAMES[i]} ~ {NAMES[j]}: {corr[i, j]:+.3f}')
    print(f'ELBO (up to the constant) {np.mean(elbos):.5f} ± {np.std(elbos, ddof=1) / np.sqrt(k):.5f}')
    if out:
        json.dump({'names': NAMES, 'mean': m.tolist(), 'sd': sd.tolist(), 'cov': cov.tolist(),
                   'mean_mce': m_mce.tolist(), 'sd_mce': sd_mce.tolist(),
                   'elbo': float(np.mean(elbos)), 'draws_per_set': n, 'sets': k}, open(out, 'w'),
                  indent=1)


if __name__ == '__main__':
    main()
