"""Many fits of one model over a Ray cluster: simulation-based calibration, K-fold
cross-validation, one model per group, prior sweeps.

    import ray, bayesc, bayesc.ray
    ray.init()                                    # or ray.init(address="auto") on a cluster
    model = bayesc.Model("model.bayes")
    summaries = bayesc.ray.fit_many(model, datasets, method="nuts", seed=1)

Each task fits one data set. The model travels to the workers as its source text and is
compiled once per worker process (`bayesc.Model` unpickles through a per-process cache), so
a worker running 50 tasks parses and checks the model once. What comes back is chosen by
`result`: the summary DataFrame (default), the `arviz.InferenceData`, the draws dict, or the
value of a function applied to the fit on the worker (e.g. SBC ranks), which keeps the
transfer small.

Pointing at a real cluster: start a head node (`ray start --head --port 6379`) and workers
(`ray start --address HEAD_IP:6379`) on machines that have bayesc installed
(`pip install ./python`), then call `ray.init(address="auto")` (or `address="HEAD_IP:6379"`,
or set `RAY_ADDRESS`) before `fit_many`. Nothing else changes.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from . import Fit, Model

__all__ = ["fit_many", "fit_remote"]


def _result(fit: Fit, result: str | Callable[[Fit], Any]) -> Any:
    if callable(result):
        return result(fit)
    if result == "summary":
        return fit.summary()
    if result == "arviz":
        return fit.to_arviz()
    if result == "draws":
        return fit.draws
    if result == "fit_text":
        return fit.report()
    raise ValueError(f"result must be 'summary', 'arviz', 'draws', 'fit_text' or a function, got {result!r}")


def _fit_one(
    model: Model,
    data: Any,
    method: str | None,
    seed: int | None,
    threads: int | None,
    options: dict[str, Any],
    result: str | Callable[[Fit], Any],
) -> Any:
    """One task: fit `model` (compiled once per worker by the unpickling cache) to `data`."""
    fit = model.fit(data=data, method=method, seed=seed, threads=threads, progress=False, **options)
    return _result(fit, result)


_REMOTE: dict[float, Any] = {}


def fit_remote(num_cpus: float = 1) -> Any:
    """The Ray remote function behind `fit_many` (one task per data set, `num_cpus` each)."""
    import ray

    if num_cpus not in _REMOTE:
        _REMOTE[num_cpus] = ray.remote(num_cpus=num_cpus)(_fit_one)
    return _REMOTE[num_cpus]


def fit_many(
    model: Model,
    datasets: Iterable[Any],
    method: str | None = "nuts",
    seed: int | Sequence[int] | None = 1,
    *,
    result: str | Callable[[Fit], Any] = "summary",
    threads: int = 1,
    num_cpus: float | None = None,
    **options: Any,
) -> list[Any]:
    """Fits `model` to each data set over Ray and returns the results in the order of
    `datasets`.

    `datasets`: the `data=` of each fit (dicts of arrays, DataFrames, file paths). `seed`: one
    seed for all fits or one per data set. `threads`: threads per fit (default 1, so that a
    2-core node runs two fits side by side rather than one fit's chains); each task asks Ray for
    `num_cpus` (default `threads`) CPUs. `result`: what each task returns (see the module
    docstring). `**options`: `Model.fit`'s options (`chains`, `samples`, `warmup`, …).
    Starts a local Ray instance when none is running (`ray.init()`).

    Errors: the first task's exception (ModelError, DataError, OptionError, FitError), re-raised
    by `ray.get`.
    """
    import ray

    if not ray.is_initialized():
        ray.init()
    datasets = list(datasets)
    seeds = list(seed) if isinstance(seed, (list, tuple)) else [seed] * len(datasets)
    if len(seeds) != len(datasets):
        raise ValueError(f"{len(seeds)} seeds for {len(datasets)} data sets")
    remote = fit_remote(num_cpus if num_cpus is not None else threads)
    model_ref = ray.put(model)
    refs = [
        remote.remote(model_ref, d, method, s, threads, options, result)
        for d, s in zip(datasets, seeds)
    ]
    return ray.get(refs)
