"""The log density, its gradient and the constraining transforms from Python."""

from __future__ import annotations

import numpy as np
import pytest

import bayesc
from conftest import EIGHT_SCHOOLS, EXAMPLES


@pytest.fixture(scope="module")
def schools() -> bayesc.Model:
    return bayesc.Model(EXAMPLES / "eight_schools" / "model.bayes", data=EIGHT_SCHOOLS)


def test_gradient_matches_central_differences(schools: bayesc.Model) -> None:
    rng = np.random.default_rng(7)
    for _ in range(3):
        theta = rng.uniform(-2, 2, schools.dim)
        lp, grad = schools.log_density_grad(theta)
        assert lp == pytest.approx(schools.log_density(theta), rel=1e-14)
        h = 1e-5
        fd = np.array(
            [
                (schools.log_density(theta + h * e) - schools.log_density(theta - h * e)) / (2 * h)
                for e in np.eye(schools.dim)
            ]
        )
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)


def test_jacobian_term_is_log_tau(schools: bayesc.Model) -> None:
    # tau = exp(zeta_2): the Jacobian adjustment adds log|d tau / d zeta| = zeta_2
    theta = np.linspace(-1, 1, schools.dim)
    with_j = schools.log_density(theta)
    without = schools.log_density(theta, jacobian=False)
    assert with_j - without == pytest.approx(theta[1], abs=1e-12)


def test_constrain_unconstrain_round_trip(schools: bayesc.Model) -> None:
    theta = np.linspace(-1, 1, schools.dim)
    values = schools.constrain(theta, include_tp=True)
    assert values["tau"] == pytest.approx(np.exp(theta[1]))
    np.testing.assert_allclose(values["theta"], values["mu"] + values["tau"] * values["theta_tilde"])
    back = schools.unconstrain({k: values[k] for k in ("mu", "tau", "theta_tilde")})
    np.testing.assert_allclose(back, theta, rtol=1e-13, atol=1e-13)
    with pytest.raises(ValueError, match="lower bound 0"):
        schools.unconstrain({"mu": 0.0, "tau": -1.0, "theta_tilde": np.zeros(8)})


def test_theta_of_wrong_length(schools: bayesc.Model) -> None:
    with pytest.raises(ValueError, match="d = 10"):
        schools.log_density(np.zeros(3))


# Every constraining transform at once: the gradient then includes each transform's Jacobian
# term and its chain rule (bounds, simplex, ordered, Cholesky factors, covariance and
# correlation matrices).
TRANSFORMS = """
data {
  int<lower=1> K;
  vector[K] x;
}
parameters {
  real<lower=-1, upper=2> b;
  real<lower=0> s;
  simplex[K] w;
  ordered[K] o;
  positive_ordered[2] po;
  cholesky_factor_corr[K] L;
  cov_matrix[2] S;
  corr_matrix[2] R;
  cholesky_factor_cov[2] Lc;
}
model {
  b ~ normal(0.5, 1);
  s ~ lognormal(0, 1);
  w ~ dirichlet(rep_vector(2, K));
  o ~ normal(0, 3);
  po ~ exponential(1);
  L ~ lkj_corr_cholesky(2);
  S ~ wishart(4, diag_matrix(rep_vector(1, 2)));
  R ~ lkj_corr(2);
  to_vector(Lc) ~ normal(0, 2);
  x ~ normal(b + o + w * s, 1 + po[1]);
}
"""


def _central_differences(model: bayesc.Model, theta: np.ndarray, h: float) -> np.ndarray:
    return np.array(
        [(model.log_density(theta + h * e) - model.log_density(theta - h * e)) / (2 * h) for e in np.eye(model.dim)]
    )


def test_gradient_matches_finite_differences_through_every_transform() -> None:
    model = bayesc.Model(code=TRANSFORMS, data={"K": 3, "x": [0.3, -1.2, 2.0]})
    # 1 + 1 + 2 (simplex) + 3 + 2 + 3 (cholesky corr) + 3 (cov) + 1 (corr) + 3 (cholesky cov)
    assert model.dim == 19
    rng = np.random.default_rng(11)
    for _ in range(3):
        theta = rng.uniform(-1, 1, model.dim)
        lp, grad = model.log_density_grad(theta)
        assert np.isfinite(lp) and lp == pytest.approx(model.log_density(theta), rel=1e-13)
        fd = _central_differences(model, theta, 1e-5)
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)
        # without the Jacobian terms too (what optimisation uses)
        _, g0 = model.log_density_grad(theta, jacobian=False)
        fd0 = np.array(
            [
                (model.log_density(theta + 1e-5 * e, jacobian=False) - model.log_density(theta - 1e-5 * e, jacobian=False))
                / 2e-5
                for e in np.eye(model.dim)
            ]
        )
        np.testing.assert_allclose(g0, fd0, rtol=1e-6, atol=1e-6)
        assert not np.allclose(grad, g0)


def test_labour_gradient_matches_finite_differences() -> None:
    import pandas as pd

    df = pd.read_csv(EXAMPLES / "labour" / "labour.csv")
    model = bayesc.Model(EXAMPLES / "labour" / "model.bayes", data=df)
    assert model.dim == 8
    theta = np.array([0.5, -1.0, -0.1, -0.05, 0.8, 0.1, 0.6, -0.03])
    lp, grad = model.log_density_grad(theta)
    # the logistic likelihood over 753 rows: steps scaled to each coordinate's curvature
    fd = _central_differences(model, theta, 1e-6)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-4)
    assert np.linalg.norm(grad) > 1.0  # away from the mode, so the comparison is not 0 ≈ 0
