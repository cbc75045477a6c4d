"""Reference values for tests/linalg_gp.rs, computed independently with numpy.

Run: python3 tests/reference/linalg_gp.py   (numpy >= 1.20). Each line is `name value`; the test
file quotes these numbers. Every quantity is the weighted sum sum(W * f(...)) with the fixed
weights below, so that every output element enters the value.
"""
import numpy as np

A = np.array([[2.0, 0.3, -0.5], [0.4, 1.5, 0.2], [-0.3, 0.6, 1.8]])
B = np.array([[0.7, -1.1], [0.2, 0.5], [-0.4, 0.9]])
b = np.array([0.6, -0.8, 1.3])
c = np.array([-0.2, 0.9, 0.4])
sigma, ell, per = 1.3, 0.8, 1.7
z = np.array([0.1, -0.7, 0.45, 1.2])
W33 = np.array([[0.3, -0.2, 0.5], [1.1, 0.4, -0.6], [0.2, 0.9, -0.3]])
W32 = np.array([[0.5, -0.4], [0.3, 0.8], [-0.7, 0.2]])
W23 = W32.T.copy()
w3 = np.array([0.4, -1.2, 0.7])
x = np.array([-1.0, -0.3, 0.2, 0.9, 1.6])
x2 = np.array([-0.6, 0.5, 1.1])
X = np.array([[0.0, 0.5], [1.0, -0.2], [-0.4, 0.8], [0.3, 0.3]])
W55 = np.array([[(i + 1) * 0.1 - (j + 1) * 0.07 + 0.03 * i * j for j in range(5)] for i in range(5)])
W53 = W55[:, :3].copy()
W44 = W55[:4, :4].copy()
S = A @ A.T + np.eye(3)
L = np.tril(A)


def dist(p, q):
    p = p.reshape(len(p), -1)
    q = q.reshape(len(q), -1)
    return np.sqrt(((p[:, None, :] - q[None, :, :]) ** 2).sum(-1))


def k_eq(r, s, l):
    return s * s * np.exp(-r * r / (2 * l * l))


def k_m32(r, s, l):
    u = np.sqrt(3) * r / l
    return s * s * (1 + u) * np.exp(-u)


def k_m52(r, s, l):
    u = np.sqrt(5) * r / l
    return s * s * (1 + u + u * u / 3) * np.exp(-u)


def k_per(r, s, l, p):
    return s * s * np.exp(-2 * np.sin(np.pi * r / p) ** 2 / (l * l))


out = {
    "inverse": (W33 * np.linalg.inv(A)).sum(),
    "inverse_spd": (W33 * np.linalg.inv(S)).sum(),
    "determinant": np.linalg.det(A),
    "log_determinant": np.log(abs(np.linalg.det(A))),
    "log_determinant_spd": np.log(np.linalg.det(S)),
    "mdivide_left_vec": w3 @ np.linalg.solve(A, b),
    "mdivide_left_mat": (W32 * np.linalg.solve(A, B)).sum(),
    "mdivide_right_vec": w3 @ np.linalg.solve(A.T, c),
    "mdivide_right_mat": (W23 * np.linalg.solve(A.T, B).T).sum(),
    "tri_left_vec": w3 @ np.linalg.solve(L, b),
    "tri_left_mat": (W32 * np.linalg.solve(L, B)).sum(),
    "tri_right_vec": w3 @ np.linalg.solve(L.T, c),
    "tri_right_mat": (W23 * np.linalg.solve(L.T, B).T).sum(),
    "cholesky": (W33 * np.linalg.cholesky(S)).sum(),
    "lower_tri_self_transpose": (W33 * (np.tril(A) @ np.tril(A).T)).sum(),
    "lower_tri_self_transpose_3x2": (W33 * (np.tril(B) @ np.tril(B).T)).sum(),
    "quad_form_diag": (W33 * (np.diag(b) @ A @ np.diag(b))).sum(),
    "quad_form_sym_mat": (W23[:2, :2] * (B.T @ S @ B)).sum(),
    "quad_form_sym_vec": b @ S @ b,
    "add_diag_scalar": (W33 * (A + sigma * np.eye(3))).sum(),
    "add_diag_vec": (W33 * (A + np.diag(b))).sum(),
    "gp_exp_quad": (W55 * k_eq(dist(x, x), sigma, ell)).sum(),
    "gp_exp_quad_cross": (W53 * k_eq(dist(x, x2), sigma, ell)).sum(),
    "gp_exp_quad_vec": (W44 * k_eq(dist(X, X), sigma, ell)).sum(),
    "gp_exp_quad_param_x": (W44 * k_eq(dist(z, z), sigma, ell)).sum(),
    "gp_matern32": (W55 * k_m32(dist(x, x), sigma, ell)).sum(),
    "gp_matern32_cross": (W53 * k_m32(dist(x, x2), sigma, ell)).sum(),
    "gp_matern32_param_x": (W44 * k_m32(dist(z, z), sigma, ell)).sum(),
    "gp_matern52": (W55 * k_m52(dist(x, x), sigma, ell)).sum(),
    "gp_matern52_vec": (W44 * k_m52(dist(X, X), sigma, ell)).sum(),
    "gp_matern52_param_x": (W44 * k_m52(dist(z, z), sigma, ell)).sum(),
    "gp_periodic": (W55 * k_per(dist(x, x), sigma, ell, per)).sum(),
    "gp_periodic_cross": (W53 * k_per(dist(x, x2), sigma, ell, per)).sum(),
    "gp_periodic_param_x": (W44 * k_per(dist(z, z), sigma, ell, per)).sum(),
}
for k, v in out.items():
    print(f"{k} {v:.17g}")
