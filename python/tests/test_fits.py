"""Fits from Python: variational methods, LOO through ArviZ, threads, Ctrl-C, pickling."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bayesc
from conftest import EIGHT_SCHOOLS, EXAMPLES

SCHOOLS_LOGLIK = """
data {
  int<lower=0> J;
  vector[J] y;
  vector<lower=0>[J] sigma;
}
parameters {
  real mu;
  real<lower=0> tau;
  vector[J] theta_tilde;
}
transformed parameters {
  vector[J] theta = mu + tau * theta_tilde;
}
model {
  mu ~ normal(0, 5);
  tau ~ normal(0, 5);
  theta_tilde ~ normal(0, 1);
  y ~ normal(theta, sigma);
}
generated quantities {
  vector[J] log_lik;
  for (j in 1:J) log_lik[j] = normal_lpdf(y[j] | theta[j], sigma[j]);
}
"""


def test_loo_on_a_model_with_log_lik() -> None:
    import arviz as az

    fit = bayesc.Model(code=SCHOOLS_LOGLIK).fit(
        data=EIGHT_SCHOOLS, method="nuts", seed=3, samples=500, warmup=500, progress=False
    )
    idata = fit.to_arviz()
    assert "log_likelihood" in idata.groups()
    assert "log_lik" not in idata.posterior
    assert idata.log_likelihood["log_lik"].shape == (4, 500, 8)
    np.testing.assert_array_equal(idata.observed_data["y"].values, EIGHT_SCHOOLS["y"])
    loo = az.loo(idata)
    # eight schools: elpd_loo ≈ -30.7 and p_loo ≈ 1 (Vehtari, Gelman & Gabry 2017)
    assert -32.5 < loo.elpd_loo < -29.5
    assert 0.3 < loo.p_loo < 2.5


def test_variational_fit_has_one_chain_and_khat() -> None:
    fit = bayesc.Model(EXAMPLES / "labour" / "model.bayes").fit(
        data=str(EXAMPLES / "labour" / "labour.csv"), seed=1, progress=False
    )
    assert fit.method == "qbvi"
    assert fit.draws["beta"].shape == (1, 1000, 7)
    assert 0 <= fit.diagnostics["khat"] < 0.7
    assert list(fit.summary().columns) == ["mean", "sd", "5%", "50%", "95%"]
    # the README's numbers for this fit
    assert fit.summary().loc["beta[1]", "mean"] == pytest.approx(-1.484, abs=1e-3)


def test_threads_do_not_change_the_draws() -> None:
    model = bayesc.Model(EXAMPLES / "eight_schools" / "model.bayes", data=EIGHT_SCHOOLS)
    a = model.fit(method="nuts", seed=5, samples=200, warmup=200, threads=1, progress=False)
    b = model.fit(method="nuts", seed=5, samples=200, warmup=200, threads=2, progress=False)
    assert np.array_equal(a.draws_array(), b.draws_array())
    assert a.draws["theta"].shape == (4, 200, 8)


def test_model_pickles_as_source() -> None:
    model = bayesc.Model(EXAMPLES / "eight_schools" / "model.bayes")
    again = pickle.loads(pickle.dumps(model))
    assert again.code == model.code and again.data_names == ["J", "y", "sigma"]


def test_ctrl_c_stops_the_fit_and_keeps_its_draws(tmp_path) -> None:
    script = tmp_path / "long_fit.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import signal, sys, warnings
            # Python's own Ctrl-C handler, as in a terminal: a child started with SIGINT ignored
            # (a CI job or `cmd &` from a script) would otherwise inherit SIG_IGN and keep it
            signal.signal(signal.SIGINT, signal.default_int_handler)
            import bayesc
            model = bayesc.Model({str(EXAMPLES / "labour" / "model.bayes")!r})
            print("ready", flush=True)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                fit = model.fit(data={str(EXAMPLES / "labour" / "labour.csv")!r}, method="nuts",
                                seed=1, warmup=50, samples=200_000, progress=False)
            print("interrupted", fit.interrupted, flush=True)
            print("draws", fit.draws["alpha"].shape[1] > 0, flush=True)
            print("warned", any("interrupted" in str(x.message) for x in w), flush=True)
            """
        )
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    import time

    time.sleep(6)
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, out
    assert "interrupted True" in out and "draws True" in out and "warned True" in out, out
