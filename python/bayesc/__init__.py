"""bayesc from Python: compile a `.bayes` model, fit it to numpy or pandas data with the same
library as the `bayesc` command line (same draws for the same seed), and hand the posterior to
ArviZ.

    import bayesc
    model = bayesc.Model("examples/labour/model.bayes")
    fit = model.fit(data="examples/labour/labour.csv", method="nuts", seed=1)
    print(fit.summary())

Errors raise `ModelError` (the model, with its source span), `DataError` (the data, naming the
key and element), `OptionError` (a fit option, with the CLI's message) or `FitError`.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from . import _bayesc
from ._bayesc import DataError, FitError, ModelError, OptionError, __version__
from ._data import observed, to_sources

__all__ = ["Model", "Fit", "ModelError", "DataError", "FitError", "OptionError", "__version__"]

_NAME = re.compile(r"^(?P<base>[^\[]+)(?:\[(?P<idx>[0-9, ]+)\])?$")

# Programs compiled in this process, by (name, text, folder): a model unpickled in a worker
# (Ray, multiprocessing) is compiled once per process however many tasks use it.
_PROGRAMS: dict[tuple[str, str, str | None], Any] = {}


def _program(name: str, text: str, folder: str | None) -> Any:
    key = (name, text, folder)
    prog = _PROGRAMS.get(key)
    if prog is None:
        prog = _bayesc._Program(name, text, folder)
        _PROGRAMS[key] = prog
    return prog


def _option_words(method: str | None, seed: int | None, options: Mapping[str, Any]) -> list[str]:
    """Keyword options as `bayesc fit` command-line words: `max_iter=100` → `--max-iter 100`,
    `diagonal=True` → `--diagonal` (False and None leave the option out)."""
    words: list[str] = []
    if method is not None:
        words += ["--method", str(method)]
    if seed is not None:
        words += ["--seed", str(int(seed))]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            words.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                words += [flag, str(v)]
        else:
            words += [flag, str(value)]
    return words


def _group(names: list[str]) -> list[tuple[str, tuple[int, ...], list[tuple[int, tuple[int, ...]]]]]:
    """Groups column names `beta[1]`, `Sigma[2,1]` by variable: (name, shape, [(column,
    0-based index)]) in order of first appearance."""
    order: list[str] = []
    cols: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
    for j, n in enumerate(names):
        m = _NAME.match(n)
        base = m.group("base") if m else n
        idx = tuple(int(i) - 1 for i in m.group("idx").split(",")) if m and m.group("idx") else ()
        if base not in cols:
            order.append(base)
            cols[base] = []
        cols[base].append((j, idx))
    out = []
    for base in order:
        entries = cols[base]
        rank = len(entries[0][1])
        shape = tuple(max(e[1][k] for e in entries) + 1 for k in range(rank))
        out.append((base, shape, entries))
    return out


def _as_theta(theta: Any) -> bytes:
    return np.ascontiguousarray(theta, dtype=np.float64).ravel().tobytes()


class Model:
    """A `.bayes` model, parsed and checked; optionally bound to data.

    `Model(path)` reads a model file (`include` lines resolve in its folder, then the stdlib);
    `Model(code=...)` takes the text itself (`include` lines resolve in the current folder).
    `data` binds data at once (needed by `log_density` and friends; `fit` can take its own).

    Raises `ModelError` carrying bayesc's diagnostic (file:line:column, the source line with the
    span underlined, and how to fix it), `OSError` when the file cannot be read, `DataError` for
    `data` that do not fit the model.
    """

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        code: str | None = None,
        data: Any = None,
        name: str | None = None,
    ) -> None:
        if (path is None) == (code is None):
            raise TypeError("give a model file path or code=..., not both")
        if path is not None:
            p = Path(path)
            text = p.read_text()
            self._source = (name or str(path), text, str(p.parent))
        else:
            self._source = (name or "<code>", code, None)
        self._program = _program(*self._source)
        self._bound: Any = None
        self._data: Any = None
        if data is not None:
            self._bind(data)

    def __reduce__(self) -> tuple:
        # Pickled as its source (not its compiled form or data): unpickling compiles it, once
        # per process (see `_PROGRAMS`).
        return (_from_source, self._source)

    def __repr__(self) -> str:
        return f"bayesc.Model({self._source[0]!r})"

    @property
    def name(self) -> str:
        """The model's name in messages (its path, or `<code>`)."""
        return self._source[0]

    @property
    def code(self) -> str:
        """The model's text."""
        return self._source[1]

    @property
    def warnings(self) -> list[str]:
        """The semantic checks' warnings (e.g. a parameter without a prior), as the CLI prints them."""
        return list(self._program.warnings())

    @property
    def data_names(self) -> list[str]:
        """The names of the `data` block's variables."""
        return list(self._program.data_names())

    def _bind(self, data: Any) -> Any:
        arrays, columns, files = to_sources(data)
        bound = self._program.bind(arrays, columns, files)
        self._bound, self._data = bound, data
        return bound

    def _bound_model(self) -> Any:
        if self._bound is None:
            if self.data_names:
                raise DataError(
                    f"the model declares data ({', '.join(self.data_names)}); bind it first with "
                    "bayesc.Model(..., data=...) or model.fit(data=...)"
                )
            self._bind(None)
        return self._bound

    # ---- fitting -------------------------------------------------------------------------

    def fit(
        self,
        data: Any = None,
        method: str | None = None,
        seed: int | None = None,
        *,
        threads: int | None = None,
        progress: bool = True,
        **options: Any,
    ) -> "Fit":
        """Fits the model as `bayesc fit` does and returns a `Fit`.

        `data`: a dict of numpy arrays and scalars (bound as a JSON data file's keys), a pandas
        DataFrame (bound as a CSV file's columns), a .csv/.json path, or a list of these; None
        uses the data given to `Model(...)`. `method` is any of `bayesc fit --method` (default,
        as the CLI's, `qbvi`); `seed` makes the fit reproducible (the same draws as
        `bayesc fit --seed` on the same data). `**options` are the CLI's options with `_` for `-`
        (`chains=4, samples=1000, warmup=1000, adapt_delta=0.9, max_iter=5000, diagonal=True`, …);
        one that is unknown or does not apply to the method raises `OptionError` with the CLI's
        message. `threads` sizes the thread pool of this fit (default: one per core; the draws do
        not depend on it). The GIL is released while fitting; Ctrl-C stops the fit at its next
        iteration and returns what it made (`fit.interrupted` is then True, with a warning).
        The progress bar shows only when standard error is a terminal (not in a notebook's log).
        """
        if data is not None:
            bound = self._bind(data)
        else:
            bound = self._bound_model()
        used = self._data
        words = _option_words(method, seed, options)
        raw = bound.fit(words, threads, progress)
        fit = Fit(raw, self, used)
        if raw.interrupted:
            warnings.warn(
                "the fit was interrupted (Ctrl-C): its draws are those made before the stop",
                RuntimeWarning,
                stacklevel=2,
            )
        return fit

    # ---- the log density -------------------------------------------------------------------

    @property
    def dim(self) -> int:
        """d, the number of unconstrained parameters (needs the data bound)."""
        return self._bound_model().dim()

    @property
    def parameter_names(self) -> list[str]:
        """Constrained parameter names in Stan's order (`alpha`, `beta[1]`, …, `Sigma[2,1]`)."""
        return list(self._bound_model().parameter_names())

    def log_density(self, theta: Any, *, jacobian: bool = True) -> float:
        """The log density at unconstrained `theta` (length d), up to a constant, with the
        Jacobian adjustment of the constraining transforms (what the samplers target), or
        without it (`jacobian=False`). Raises ValueError where it cannot be evaluated."""
        return self._bound_model().log_density(_as_theta(theta), jacobian)

    def log_density_grad(self, theta: Any, *, jacobian: bool = True) -> tuple[float, np.ndarray]:
        """The log density and its gradient (reverse mode) at unconstrained `theta`."""
        lp, g = self._bound_model().log_density_grad(_as_theta(theta), jacobian)
        return lp, np.frombuffer(g, dtype=np.float64).copy()

    def constrain(
        self,
        theta: Any,
        *,
        include_tp: bool = False,
        include_gq: bool = False,
        seed: int = 0,
    ) -> dict[str, np.ndarray]:
        """Unconstrained `theta` → the constrained parameters (and, if asked, transformed
        parameters and generated quantities, drawn with `seed`), as a dict of arrays."""
        b = self._bound_model()
        flat = np.frombuffer(b.constrain(_as_theta(theta), include_tp, include_gq, seed), dtype=np.float64)
        names = list(b.draw_names())[: len(flat)]
        out = {}
        for base, shape, entries in _group(names):
            a = np.empty(shape)
            for j, idx in entries:
                a[idx] = flat[j]
            out[base] = a
        return out

    def unconstrain(self, values: Any) -> np.ndarray:
        """Constrained parameters → unconstrained theta. `values` is a dict of arrays by
        parameter name, or a flat array in the order of `parameter_names`. Raises ValueError for
        a value outside its declared support."""
        b = self._bound_model()
        if isinstance(values, Mapping):
            names = list(b.parameter_names())
            flat = np.empty(len(names))
            for base, shape, entries in _group(names):
                if base not in values:
                    raise ValueError(f"missing the value of parameter `{base}`")
                v = np.asarray(values[base], dtype=np.float64)
                if v.shape != shape:
                    raise ValueError(f"parameter `{base}` has shape {shape}, got {v.shape}")
                for j, idx in entries:
                    flat[j] = v[idx]
            values = flat
        return np.frombuffer(b.unconstrain(_as_theta(values)), dtype=np.float64).copy()


def _from_source(name: str, text: str, folder: str | None) -> Model:
    m = Model.__new__(Model)
    m._source = (name, text, folder)
    m._program = _program(name, text, folder)
    m._bound = None
    m._data = None
    return m


_STAT_NAMES = {
    "lp__": "lp",
    "accept_stat__": "acceptance_rate",
    "stepsize__": "step_size",
    "treedepth__": "tree_depth",
    "n_leapfrog__": "n_steps",
    "divergent__": "diverging",
    "energy__": "energy",
}


class Fit:
    """The result of `Model.fit`: draws, summary, diagnostics, ArviZ and Stan-CSV output."""

    def __init__(self, raw: Any, model: Model, data: Any) -> None:
        self._raw = raw
        self._model = model
        self._data = data
        self._draws: dict[str, np.ndarray] | None = None

    def __repr__(self) -> str:
        return self.report()

    @property
    def method(self) -> str:
        """The method's name (`nuts`, `qbvi`, …)."""
        return self._raw.method

    @property
    def seed(self) -> int:
        """The seed the fit ran with."""
        return self._raw.seed

    @property
    def seconds(self) -> float:
        """Wall time of the algorithm, seconds."""
        return self._raw.seconds

    @property
    def interrupted(self) -> bool:
        """Whether Ctrl-C stopped the fit before it finished (its draws are then those made)."""
        return self._raw.interrupted

    @property
    def names(self) -> list[str]:
        """The draws' column names (`alpha`, `beta[1]`, …) as in the CLI's files."""
        return list(self._raw.names())

    def draws_array(self) -> np.ndarray:
        """All draws as one array of shape (chains, draws, columns), columns as `names`."""
        buf, c, n, k = self._raw.draws()
        return np.frombuffer(buf, dtype=np.float64).reshape(c, n, k)

    @property
    def draws(self) -> dict[str, np.ndarray]:
        """Draws by variable: `draws["beta"]` has shape (chains, draws, 7); a variational fit has
        one chain. Parameters, transformed parameters and generated quantities."""
        if self._draws is None:
            flat = self.draws_array()
            out = {}
            for base, shape, entries in _group(self.names):
                a = np.empty(flat.shape[:2] + shape)
                for j, idx in entries:
                    a[(slice(None), slice(None)) + idx] = flat[:, :, j]
                out[base] = a
            self._draws = out
        return self._draws

    @property
    def sample_stats(self) -> dict[str, np.ndarray]:
        """MCMC sampler statistics with Stan's names (`lp__`, `divergent__`, …), each
        (chains, draws); empty for other methods."""
        c, n = self.draws_array().shape[:2]
        return {
            name: np.frombuffer(b, dtype=np.float64).reshape(c, n) for name, b in self._raw.sample_stats()
        }

    def summary(self) -> "Any":
        """The CLI's posterior summary as a pandas DataFrame indexed by name, with its columns:
        mean, sd, 5%, 50%, 95% and, for MCMC, MCSE, ESS_bulk, ESS_tail, R_hat."""
        import pandas as pd

        rows = self._raw.summary_rows()
        cols = ["mean", "sd", "5%", "50%", "95%", "MCSE", "ESS_bulk", "ESS_tail", "R_hat"]
        if not self._raw.is_mcmc:
            cols = cols[:5]
        data = [[np.nan if v is None else v for v in r[1 : 1 + len(cols)]] for r in rows]
        return pd.DataFrame(data, index=pd.Index([r[0] for r in rows], name="name"), columns=cols)

    def summary_text(self) -> str:
        """The summary table exactly as `bayesc fit` prints it."""
        return self._raw.summary_text()

    def report(self) -> str:
        """Everything `bayesc fit` prints: settings line, convergence, summary table, diagnostics."""
        return self._raw.report()

    @property
    def diagnostics(self) -> dict[str, Any]:
        """The method's diagnostics. MCMC: per-chain `divergences`, `max_treedepth_hits`,
        `e_bfmi`, `step_size`, `mean_accept_stat`, `n_gradients`, and the CLI's `warnings`;
        approximations: PSIS `khat`, `psis_ess`, `elbo` and the `elbo_trace`
        (iteration, ELBO, smoothed ELBO)."""
        return dict(self._raw.diagnostics())

    def save(self, path: str | os.PathLike) -> list[str]:
        """Writes the draws in Stan's CSV layout as `bayesc fit --output PATH` does (MCMC: one
        file per chain, `PATH_1.csv` …, readable by ArviZ, cmdstanpy and `bayesc summary`);
        returns the files written."""
        return list(self._raw.save(os.fspath(path)))

    def to_arviz(self, log_likelihood: str | Mapping[str, str] | None = "log_lik") -> "Any":
        """The fit as an `arviz.InferenceData`: `posterior` (every quantity but the log
        likelihood), `sample_stats` (MCMC: ArviZ's names lp, acceptance_rate, step_size,
        tree_depth, n_steps, diverging, energy), `observed_data` (the data variables the model
        declares) and `log_likelihood` when the model has a generated quantity named by
        `log_likelihood` (default `log_lik`; a dict maps observed names to such quantities, e.g.
        {"y": "log_lik"}), so that `arviz.loo` and `arviz.waic` work."""
        import arviz as az

        draws = dict(self.draws)
        ll_map = {log_likelihood: log_likelihood} if isinstance(log_likelihood, str) else dict(log_likelihood or {})
        ll = {obs: draws.pop(q) for obs, q in ll_map.items() if q in draws}
        stats = {}
        for name, v in self.sample_stats.items():
            key = _STAT_NAMES.get(name, name)
            stats[key] = v.astype(bool) if key == "diverging" else (v.astype(np.int64) if key in ("tree_depth", "n_steps") else v)
        obs = observed(self._data, self._model.data_names) if self._data is not None else {}
        return az.from_dict(
            posterior=draws,
            sample_stats=stats or None,
            log_likelihood=ll or None,
            observed_data=obs or None,
        )
