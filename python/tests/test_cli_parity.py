"""A Python fit is the CLI's fit: the same draws byte for byte for the same seed, the same
summary, and ArviZ's diagnostics agree with `bayesc summary`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayesc
from conftest import EXAMPLES, ROOT

LABOUR = EXAMPLES / "labour"


def _columns(path: str) -> dict[str, np.ndarray]:
    """The columns of a Stan CSV file, each number parsed by Python's correctly rounded float()
    (pandas 3 deprecates its exact `float_precision="round_trip"` parser)."""
    header, *rows = [l.split(",") for l in _rows(path)]
    values = np.array([[float(v) for v in r] for r in rows])
    return {name: values[:, j] for j, name in enumerate(header)}


def _rows(path: str) -> list[str]:
    """The draw rows of a Stan CSV file (comment lines, which carry timings, left out)."""
    return [l for l in Path(path).read_text().splitlines() if l and not l.startswith("#")]


@pytest.fixture(scope="module")
def cli_run(bayesc_bin: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    out = tmp_path_factory.mktemp("cli") / "labour.csv"
    run = subprocess.run(
        [
            bayesc_bin, "fit", str(LABOUR / "model.bayes"), "--data", str(LABOUR / "labour.csv"),
            "--method", "nuts", "--seed", "1", "--quiet", "--output", str(out),
        ],
        capture_output=True, text=True, check=True,
    )
    files = sorted(str(p) for p in out.parent.glob("labour_*.csv"))
    assert len(files) == 4
    return run.stdout, files


@pytest.fixture(scope="module")
def py_fit() -> bayesc.Fit:
    model = bayesc.Model(LABOUR / "model.bayes")
    return model.fit(data=str(LABOUR / "labour.csv"), method="nuts", seed=1, progress=False)


def test_draws_byte_identical_to_cli(cli_run, py_fit: bayesc.Fit, tmp_path: Path) -> None:
    _, cli_files = cli_run
    mine = py_fit.save(tmp_path / "py.csv")
    assert len(mine) == 4
    for a, b in zip(cli_files, mine):
        ra, rb = _rows(a), _rows(b)
        assert len(ra) == 1001  # header + 1000 draws
        assert ra == rb
    # and fit.draws / fit.sample_stats are exactly the numbers in the CLI's files: every
    # column of every chain, parsed at full precision, equal as float64 (not approximately)
    flat = py_fit.draws_array()
    assert flat.shape == (4, 1000, 8)
    for c, path in enumerate(cli_files):
        cli = _columns(path)
        for j, name in enumerate(py_fit.names):
            col = name.replace("[", ".").replace("]", "").replace(",", ".")
            assert np.array_equal(cli[col], flat[c, :, j]), (c, name)
        for stat, values in py_fit.sample_stats.items():
            assert np.array_equal(cli[stat], values[c]), (c, stat)
        assert np.array_equal(cli["beta.3"], py_fit.draws["beta"][c, :, 2])
    assert set(py_fit.sample_stats) >= {"lp__", "accept_stat__", "stepsize__", "divergent__"}


def _readme_script() -> str:
    """The Python script of README.md's "Python" section, as printed there."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("\n## Python\n") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```", start)]


def test_readme_script_prints_the_clis_summary(cli_run, tmp_path: Path) -> None:
    """README's script, run as written from a folder holding `examples/`: it prints the
    summary table `bayesc fit … --method nuts --seed 1` prints, and its `fit.save` files have
    the CLI's draws byte for byte."""
    stdout, cli_files = cli_run
    script = _readme_script()
    assert 'method="nuts", seed=1' in script and len(script.strip().splitlines()) <= 12
    (tmp_path / "examples").symlink_to(EXAMPLES)
    (tmp_path / "readme.py").write_text(script)
    run = subprocess.run(
        [sys.executable, "readme.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.rstrip("\n").splitlines()
    table, divergences = "\n".join(lines[:-1]), lines[-1]
    assert table.startswith("name") or "mean" in table.splitlines()[0], table
    assert len(table.splitlines()) >= 9  # header + alpha + beta[1..7]
    assert table in stdout
    assert divergences.startswith("[") and len(divergences.strip("[]").split(",")) == 4
    for c, cli in enumerate(cli_files, start=1):
        assert _rows(str(tmp_path / f"labour_{c}.csv")) == _rows(cli)


def test_dataframe_gives_the_same_draws(py_fit: bayesc.Fit) -> None:
    df = pd.read_csv(LABOUR / "labour.csv")
    fit = bayesc.Model(LABOUR / "model.bayes").fit(data=df, method="nuts", seed=1, progress=False)
    assert np.array_equal(fit.draws_array(), py_fit.draws_array())


def test_summary_is_the_clis(cli_run, py_fit: bayesc.Fit) -> None:
    stdout, _ = cli_run
    assert py_fit.summary_text() in stdout
    table = py_fit.summary()
    assert list(table.columns) == ["mean", "sd", "5%", "50%", "95%", "MCSE", "ESS_bulk", "ESS_tail", "R_hat"]
    assert list(table.index) == ["alpha"] + [f"beta[{i}]" for i in range(1, 8)]
    np.testing.assert_allclose(table.loc["alpha", "mean"], py_fit.draws["alpha"].mean(), rtol=1e-12)
    assert py_fit.summary_text() in py_fit.report()


def _cli_summary(bayesc_bin: str, files: list[str]) -> pd.DataFrame:
    out = subprocess.run([bayesc_bin, "summary", *files], capture_output=True, text=True, check=True).stdout
    lines = [l.split() for l in out.splitlines()]
    head = next(i for i, l in enumerate(lines) if l[:2] == ["name", "mean"])
    cols = lines[head]
    body = [l for l in lines[head + 1 :] if len(l) == len(cols)]
    return pd.DataFrame([l[1:] for l in body], index=[l[0] for l in body], columns=cols[1:]).astype(float)


def test_arviz_summary_agrees_with_bayesc_summary(bayesc_bin: str, cli_run, py_fit: bayesc.Fit) -> None:
    import arviz as az

    _, files = cli_run
    cli = _cli_summary(bayesc_bin, files)
    idata = py_fit.to_arviz()
    assert set(idata.groups()) >= {"posterior", "sample_stats", "observed_data"}
    assert idata.posterior["beta"].shape == (4, 1000, 7)
    assert int(idata.sample_stats["diverging"].sum()) == sum(py_fit.diagnostics["divergences"])
    azs = az.summary(idata, round_to="none")
    mine = py_fit.summary()
    for name in mine.index:
        # ArviZ labels elements from 0 (as its from_cmdstan does), bayesc from 1
        az_name = re.sub(r"\[(\d+)\]", lambda m: f"[{int(m.group(1)) - 1}]", name)
        # bayesc's unrounded values and ArviZ's agree to 2 decimals …
        assert round(azs.loc[az_name, "r_hat"], 2) == round(mine.loc[name, "R_hat"], 2), name
        assert abs(azs.loc[az_name, "ess_bulk"] - mine.loc[name, "ESS_bulk"]) < 0.005, name
        assert abs(azs.loc[az_name, "ess_tail"] - mine.loc[name, "ESS_tail"]) < 0.005, name
        # … and `bayesc summary`, run on the CLI's files, prints those values (R-hat to 3
        # decimals, ESS as whole numbers), so ArviZ agrees with what it prints to its precision
        assert cli.loc[name, "R_hat"] == pytest.approx(mine.loc[name, "R_hat"], abs=0.0005 + 1e-12)
        assert cli.loc[name, "ESS_bulk"] == pytest.approx(mine.loc[name, "ESS_bulk"], abs=0.5 + 1e-9)
        assert cli.loc[name, "ESS_tail"] == pytest.approx(mine.loc[name, "ESS_tail"], abs=0.5 + 1e-9)
        assert abs(azs.loc[az_name, "r_hat"] - cli.loc[name, "R_hat"]) <= 0.0005 + 0.005, name
        assert abs(azs.loc[az_name, "ess_bulk"] - cli.loc[name, "ESS_bulk"]) <= 0.5 + 0.005, name
        assert abs(azs.loc[az_name, "ess_tail"] - cli.loc[name, "ESS_tail"]) <= 0.5 + 0.005, name
    assert set(cli.index) == set(mine.index)
