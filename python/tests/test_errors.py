"""Errors raised in Python carry the CLI's messages: the model's span, the data's key and
element (or column and row), the option's wording."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bayesc
from conftest import EIGHT_SCHOOLS, EXAMPLES

SCHOOLS = EXAMPLES / "eight_schools" / "model.bayes"


def test_bad_model_shows_the_span() -> None:
    code = "parameters {\n  real mu;\n}\nmodel {\n  mu ~ normall(0, 1);\n}\n"
    with pytest.raises(bayesc.ModelError) as e:
        bayesc.Model(code=code)
    msg = str(e.value)
    assert "normall" in msg
    assert "<code>:5:" in msg  # file:line:column of the offending call
    assert "^" in msg  # the span underlined under the source line


def test_missing_model_file() -> None:
    with pytest.raises(OSError):
        bayesc.Model("no/such/model.bayes")


def test_bad_data_names_key_and_element() -> None:
    data = dict(EIGHT_SCHOOLS, sigma=[15.0, 10.0, -16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    with pytest.raises(bayesc.DataError) as e:
        bayesc.Model(SCHOOLS).fit(data=data, method="nuts", seed=1)
    msg = str(e.value)
    assert "key `sigma`" in msg and "sigma[3]" in msg, msg


def test_wrong_size_names_the_key() -> None:
    data = dict(EIGHT_SCHOOLS, y=np.zeros(7))
    with pytest.raises(bayesc.DataError, match="`y`"):
        bayesc.Model(SCHOOLS, data=data)


def test_missing_data_names_the_variable() -> None:
    with pytest.raises(bayesc.DataError, match="sigma"):
        bayesc.Model(SCHOOLS, data={"J": 8, "y": np.zeros(8)})


def test_bad_dataframe_names_column_and_row() -> None:
    df = pd.read_csv(EXAMPLES / "labour" / "labour.csv")
    df.loc[13, "lfp"] = 2
    with pytest.raises(bayesc.DataError) as e:
        bayesc.Model(EXAMPLES / "labour" / "model.bayes", data=df)
    msg = str(e.value)
    assert "lfp" in msg and "row 14" in msg, msg


def test_text_in_a_numeric_key() -> None:
    with pytest.raises(bayesc.DataError, match="key `y`"):
        bayesc.Model(SCHOOLS, data=dict(EIGHT_SCHOOLS, y=["a"] * 8))


def test_options_are_checked_as_the_cli_checks_them() -> None:
    model = bayesc.Model(SCHOOLS, data=EIGHT_SCHOOLS)
    with pytest.raises(bayesc.OptionError, match="num-paths"):
        model.fit(method="nuts", seed=1, num_paths=4)
    with pytest.raises(bayesc.OptionError, match="unexpected argument '--no-such-option'"):
        model.fit(method="nuts", seed=1, no_such_option=3)
    with pytest.raises(bayesc.OptionError, match="adapt-delta"):
        model.fit(method="nuts", seed=1, adapt_delta=1.5)
    with pytest.raises(bayesc.OptionError, match="invalid value 'gibbs'"):
        model.fit(method="gibbs")
    with pytest.raises(bayesc.OptionError, match="fit.save"):
        model.fit(method="nuts", output="x.csv")
