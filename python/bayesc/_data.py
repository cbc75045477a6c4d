"""Conversion of Python data (dicts of numpy arrays and scalars, pandas DataFrames, file paths)
into the sources the compiled library binds, as `bayesc fit --data` binds JSON and CSV files."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ._bayesc import DataError

__all__ = ["to_sources", "observed"]


def _is_dataframe(x: Any) -> bool:
    return type(x).__name__ == "DataFrame" and hasattr(x, "columns") and hasattr(x, "iloc")


def _numeric(key: str, value: Any) -> np.ndarray:
    """`value` as a C-ordered float64 array; raises DataError naming `key` otherwise."""
    if hasattr(value, "to_numpy") and not isinstance(value, np.ndarray):
        value = value.to_numpy()
    try:
        arr = np.asarray(value)
    except Exception as e:  # ragged nested lists
        raise DataError(f"data, key `{key}`: cannot be read as an array of numbers ({e})") from None
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            bad = next(
                (i for i, v in np.ndenumerate(arr) if not isinstance(v, (int, float, bool, np.number))),
                None,
            )
            where = "" if bad is None else f", element `{key}[{', '.join(str(i + 1) for i in bad)}]`"
            raise DataError(
                f"data, key `{key}`{where}: not a number ({arr[bad]!r})" if bad is not None
                else f"data, key `{key}`: not an array of numbers"
            ) from None
    if arr.dtype.kind not in "biuf":
        raise DataError(
            f"data, key `{key}`: dtype {arr.dtype} is not numeric (give numbers, e.g. a float or int array)"
        )
    return np.asarray(arr, dtype=np.float64, order="C")  # (ascontiguousarray makes 0-d arrays 1-d)


def _frame_columns(df: Any) -> list[tuple[str, bytes, list[tuple[int, str]]]]:
    cols = []
    for name in df.columns:
        s = df[name]
        kind = getattr(s.dtype, "kind", "O")
        if kind in "biuf":
            values = s.to_numpy(dtype=np.float64, na_value=np.nan)
            other: list[tuple[int, str]] = []
        else:
            # text columns (labels, dates) bind only when the model declares them, where the
            # library names the first cell that is not a number, as for a CSV file
            raw = s.to_numpy(dtype=object)
            values = np.empty(len(raw))
            other = []
            for r, v in enumerate(raw):
                try:
                    values[r] = float(v)
                    if np.isnan(values[r]):
                        other.append((r, "NaN"))
                except (TypeError, ValueError):
                    values[r] = np.nan
                    other.append((r, str(v)))
        cols.append((str(name), np.ascontiguousarray(values, dtype=np.float64).tobytes(), other))
    return cols


def to_sources(data: Any) -> tuple[list, list | None, list[str]]:
    """Splits `data` into (arrays, columns, files) for `_Program.bind`.

    `data` is None, a dict mapping names to numpy arrays, lists or scalars (bound as the keys of a
    JSON data file: row-major, a matrix is given as its rows), a pandas DataFrame (bound as the
    columns of a CSV file: sizes such as N are inferred from its rows, `X.1 … X.K` columns make a
    matrix), a path to a .csv or .json file, or a list of these.
    """
    arrays: list = []
    columns: list | None = None
    files: list[str] = []
    items = data if isinstance(data, (list, tuple)) else [data]
    for item in items:
        if item is None:
            continue
        if isinstance(item, (str, os.PathLike)):
            files.append(os.fspath(item))
        elif _is_dataframe(item):
            if columns is not None:
                raise DataError("give at most one DataFrame (its columns bind as a CSV file's)")
            columns = _frame_columns(item)
        elif isinstance(item, dict):
            for key, value in item.items():
                if not isinstance(key, str):
                    raise DataError(f"data keys must be strings, got {key!r}")
                arr = _numeric(key, value)
                arrays.append((key, list(arr.shape), arr.tobytes()))
        else:
            raise DataError(
                f"data must be a dict of arrays and scalars, a pandas DataFrame, a file path or a "
                f"list of these; got {type(item).__name__}"
            )
    return arrays, columns, files


def observed(data: Any, names: list[str]) -> dict[str, np.ndarray]:
    """The declared data variables found in `data`, as numpy arrays (for ArviZ's observed_data)."""
    out: dict[str, np.ndarray] = {}
    items = data if isinstance(data, (list, tuple)) else [data]
    for item in items:
        if item is None:
            continue
        if isinstance(item, (str, os.PathLike)):
            path = os.fspath(item)
            try:
                if path.lower().endswith(".json"):
                    import json

                    with open(path) as f:
                        item = json.load(f)
                else:
                    import pandas as pd

                    item = pd.read_csv(path)
            except Exception:
                continue
        if _is_dataframe(item):
            for c in item.columns:
                if str(c) in names and getattr(item[c].dtype, "kind", "O") in "biuf":
                    out[str(c)] = item[c].to_numpy()
        elif isinstance(item, dict):
            for k, v in item.items():
                if k in names:
                    try:
                        out[k] = np.asarray(v, dtype=float) if not np.isscalar(v) else np.asarray(v)
                    except (TypeError, ValueError):
                        pass
    return out
