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
