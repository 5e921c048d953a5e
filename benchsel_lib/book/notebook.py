"""Helpers for the book's notebooks: parameter checks and text that follows the parameters.

Every notebook is re-run by readers through papermill with parameters of
their own (another subset of matrices, another seed, fewer folds, a larger
``k_max``). Its first code cell after the parameters calls
:func:`check_parameters`, so that a bad value stops the run at once with a
message that names the parameter, instead of a traceback from deep inside a
cross-validation loop twenty minutes later.

:func:`quick` gives the cheaper parameter set of a notebook's ``quick`` mode
(continuous-integration smoke runs) by capping the parameters that were
passed rather than replacing them, so ``quick=True`` combined with other
parameters still runs those parameters, only smaller.

:func:`and_join` and :func:`dataset_label` are the smallest pieces of the
prose that :mod:`benchsel_lib.book.prose` and :mod:`benchsel_lib.book.pages`
write from a run's results.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .._checks import check_int
from ..data import DATASETS, load_matrix

__all__ = ["LABELS", "and_join", "check_parameters", "dataset_label", "matrix_shape", "quick"]

#: Display names of the experiment matrices (``benchsel_lib.data.DATASETS``).
LABELS: dict[str, str] = {"mmlu": "MMLU", "mteb": "MTEB", "merged": "Merged", "benchpress": "BenchPress"}


def dataset_label(name: str) -> str:
    """Display name of a matrix (``"merged"`` -> ``"Merged"``); unknown names are returned as given.

    Parameters
    ----------
    name : str
        A key of ``benchsel_lib.data.DATASETS`` (or any other name).

    Returns
    -------
    str
        ``LABELS[name]`` (:data:`LABELS`), else ``name`` itself.

    Notes
    -----
    Complexity O(1).
    """
    return LABELS.get(name, name)


def and_join(items: Iterable[Any]) -> str:
    """``["a"]`` -> ``"a"``, ``["a", "b"]`` -> ``"a and b"``, ``["a", "b", "c"]`` -> ``"a, b and c"``.

    Parameters
    ----------
    items : iterable
        The words, each converted with ``str``; consumed once.

    Returns
    -------
    str
        The words joined by ``", "`` with ``" and "`` before the last (no
        serial comma); ``""`` for no items.

    Notes
    -----
    Complexity O(total length of the words).
    """
    words = [str(i) for i in items]
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _is_int(x: object) -> bool:

    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _shape(name: str) -> tuple[int, int]:

    return load_matrix(name).shape


def matrix_shape(name: str) -> tuple[int, int]:
    """(models, benchmarks) of a built-in matrix, for a notebook's own bounds; an unknown name raises ValueError.

    Parameters
    ----------
    name : str
        A key of ``benchsel_lib.data.DATASETS`` (``"mteb"``, ``"merged"``,
        ``"benchpress"``, ``"mmlu"``).

    Returns
    -------
    tuple of (int, int)
        ``(M, N)`` of the loaded matrix.

    Raises
    ------
    ValueError
        An unknown ``name`` (listing the known ones), or a data file that
        fails its check (:func:`~benchsel_lib.data.load_matrix`).
    FileNotFoundError
        The data file is not available and cannot be downloaded.

    Notes
    -----
    Complexity: one :func:`~benchsel_lib.data.load_matrix` call each time
    (nothing is cached here), O(M N) for an npz matrix and the rebuild for
    ``"mmlu"``.
    """
    if name not in DATASETS:
        raise ValueError(f"{name!r} is not a known matrix; choose from {list(DATASETS)}")
    return _shape(name)


def _as_list(value: Any, what: str) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{what} must be a list, got {value!r}")
    return list(value)


def _distinct(values: list[Any], what: str) -> None:
    dup = [v for i, v in enumerate(values) if v in values[:i]]
    if dup:
        raise ValueError(f"{what} lists {dup[0]!r} more than once")


def _check_range(value: Any, param: str, low: int, high: int | None, why: str = "") -> None:
    check_int(value, param, minimum=low)
    if high is not None and value > high:
        raise ValueError(f"{param}={value} is out of range: choose {low}..{high}{why}")


def check_parameters(
    *,
    datasets: Sequence[str] | None = None,
    also_run: Sequence[str] | None = None,
    dataset: str | Mapping[str, str] | None = None,
    k_max: int | Mapping[str, int] | None = None,
    n_folds: int | None = None,
    holdouts: Sequence[float] | None = None,
    holdout: float | None = None,
    seed: int | None = None,
    methods: Sequence[str] | None = None,
    levels: Sequence[float] | None = None,
    counts: Mapping[str, int] | None = None,
    bounded: Mapping[str, tuple[Any, ...]] | None = None,
    int_lists: Mapping[str, tuple[Any, ...]] | None = None,
    fractions: Mapping[str, Any] | None = None,
    flags: Mapping[str, Any] | None = None,
    choices: Mapping[str, tuple[Any, Sequence[Any]]] | None = None,
    multi_choices: Mapping[str, tuple[Any, Sequence[Any]]] | None = None,
) -> None:
    """Check a notebook's parameters; raise ``ValueError`` naming the first bad one.

    Parameters
    ----------
    datasets : list of str, optional
        Matrices the notebook runs; each must be one of
        ``benchsel_lib.data.DATASETS`` (``mmlu``, ``mteb``, ``merged``,
        ``benchpress``), none twice, at least one.
    also_run : list of str, optional
        Further matrices the notebook runs with the same ``k_max`` and
        ``n_folds`` (a per-fold view, a forced-first-pick band); each must be
        known, and they count in the bounds below.
    dataset : str or mapping, optional
        Single-matrix parameters: one name, or ``{parameter name: value}``
        for several (``{"perfold_dataset": "merged"}``); same rule.
    k_max : int or mapping, optional
        Largest subset size, ``1 <= k_max <= N - 1`` for the smallest
        number of benchmarks ``N`` among ``datasets`` and ``also_run`` (one
        benchmark must be left to predict). A mapping ``{parameter name:
        value}`` checks several (``{"k_max": 15, "k_table": 5}``); a value
        that is a list of sizes (``{"k_show": [1, 5, 10]}``) must hold at
        least one, none twice, each within the same bound.
    n_folds : int, optional
        Cross-validation folds, ``2 <= n_folds <= M`` for the smallest number
        of models ``M`` among ``datasets`` and ``also_run``.
    holdouts : list of float, optional
        Holdout fractions, each in ``(0, 1)``, none twice; ``holdout``
        checks a single one.
    seed : int, optional
        Non-negative integer.
    methods : list of str, optional
        Selection methods, each of ``"entropy"``, ``"mi"``, ``"random"``,
        at least one, none twice.
    levels : list of float, optional
        Nominal interval levels, each in ``(0, 1)``, at least one, none twice.
    counts : mapping, optional
        ``{parameter name: value}`` for any other count (draws, repeats),
        each a non-negative integer.
    bounded : mapping, optional
        ``{parameter name: (value, low, high[, why])}``: an integer in
        ``low..high`` (``high`` None: no upper bound); ``why`` is added to
        the message (``", at most k_max"``).
    int_lists : mapping, optional
        ``{parameter name: (value, low, high[, allow_empty])}``: a list of
        distinct integers in ``low..high``, not empty unless ``allow_empty``.
    fractions : mapping, optional
        ``{parameter name: value}``: each a number strictly between 0 and 1.
    flags : mapping, optional
        ``{parameter name: value}``: each ``True`` or ``False``. Papermill
        reads ``-p quick False`` as a boolean, but ``-p quick false`` as the
        string ``"false"``, which Python would take for true.
    choices : mapping, optional
        ``{parameter name: (value, allowed values)}`` for a single-valued
        enumerated parameter (``{"config": (config, ["early", "released"])}``).
    multi_choices : mapping, optional
        ``{parameter name: (value, allowed values)}`` for a list-valued one:
        a list of allowed values, at least one, none twice.

    Raises
    ------
    ValueError
        With the parameter's name, its value and the allowed range.

    Notes
    -----
    Matrix shapes come from :func:`benchsel_lib.data.load_matrix` (the
    files are small; cost well under a second per matrix).
    """

    known = list(DATASETS)

    def check_name(param: str, value: Any) -> None:
        if not isinstance(value, str) or value not in DATASETS:
            raise ValueError(f"{param}={value!r} is not a known matrix; choose from {known}")

    for param, value in (flags or {}).items():
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{param} must be True or False, got {value!r} (papermill reads -p {param} True "
                             "as a boolean, lowercase true as a string)")
    shapes: list[tuple[int, int]] = []
    if datasets is not None:
        names = _as_list(datasets, "datasets")
        if not names:
            raise ValueError(f"datasets is empty; choose one or more of {known}")
        for name in names:
            check_name("datasets entry", name)
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"datasets lists {dup} more than once")
        shapes = [_shape(n) for n in names]
    if dataset is not None:
        for param, value in (dataset.items() if isinstance(dataset, Mapping) else [("dataset", dataset)]):
            check_name(param, value)
    if also_run is not None:
        for name in _as_list(also_run, "also_run"):
            check_name("matrix", name)
            shapes.append(_shape(name))
    if k_max is not None:
        n_min = min((s[1] for s in shapes), default=None)
        sizes: list[tuple[str, Any]] = []
        for param, value in (k_max.items() if isinstance(k_max, Mapping) else [("k_max", k_max)]):
            if isinstance(value, (list, tuple)):
                if not value:
                    raise ValueError(f"{param} is empty; give one or more subset sizes")
                _distinct(list(value), param)
                sizes += [(f"{param}[{i}]", v) for i, v in enumerate(value)]
            else:
                sizes.append((param, value))
        for param, value in sizes:
            check_int(value, param)
            if n_min is not None and value > n_min - 1:
                raise ValueError(
                    f"{param}={value} is out of range: the smallest matrix run here has {n_min} benchmarks, "
                    f"so {param} can be at most {n_min - 1} (one benchmark must be left to predict)"
                )
    if n_folds is not None:
        m_min = min((s[0] for s in shapes), default=None)
        check_int(n_folds, "n_folds", minimum=2)
        if m_min is not None and n_folds > m_min:
            raise ValueError(f"n_folds={n_folds} is out of range: the smallest matrix run here has {m_min} models")
    fracs: list[tuple[str, Any]] = []
    if holdouts is not None:
        hs = _as_list(holdouts, "holdouts")
        if not hs:
            raise ValueError("holdouts is empty; give one or more fractions in (0, 1), e.g. [0.1]")
        fracs = [("holdouts entry", h) for h in hs]
    if holdout is not None:
        fracs.append(("holdout", holdout))
    for param, h in fracs:
        if isinstance(h, bool) or not isinstance(h, (int, float)) or not 0.0 < float(h) < 1.0:
            raise ValueError(f"{param} {h!r} is out of range: a holdout fraction must be in (0, 1)")
    if holdouts is not None:
        _distinct(list(holdouts), "holdouts")
    for param, value in (fractions or {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not 0.0 < float(value) < 1.0:
            raise ValueError(f"{param}={value!r} is out of range: it must be a number strictly between 0 and 1")
    if seed is not None:
        check_int(seed, "seed", minimum=0)
    for param, value in (counts or {}).items():
        check_int(value, param, minimum=0)
    for param, spec in (bounded or {}).items():
        value, low, high, *why = spec
        _check_range(value, param, low, high, why[0] if why else "")
    for param, spec in (int_lists or {}).items():
        value, low, high, *empty = spec
        values = _as_list(value, param)
        if not values and not (empty and empty[0]):
            span = f">= {low}" if high is None else f"in {low}..{high}"
            raise ValueError(f"{param} is empty; give one or more integers {span}")
        for i, v in enumerate(values):
            _check_range(v, f"{param}[{i}]", low, high)
        _distinct(values, param)
    if methods is not None:
        allowed = ["entropy", "mi", "random"]
        ms = _as_list(methods, "methods")
        if not ms:
            raise ValueError(f"methods is empty; choose one or more of {allowed}")
        for m in ms:
            if m not in allowed:
                raise ValueError(f"methods entry {m!r} is not a selection method; choose from {allowed}")
        _distinct(ms, "methods")
    if levels is not None:
        lvs = _as_list(levels, "levels")
        if not lvs:
            raise ValueError("levels is empty; give one or more nominal levels in (0, 1), e.g. [0.9]")
        for lv in lvs:
            if isinstance(lv, bool) or not isinstance(lv, (int, float)) or not 0.0 < float(lv) < 1.0:
                raise ValueError(f"levels entry {lv!r} is out of range: a nominal level must be in (0, 1)")
        _distinct(lvs, "levels")
    for param, (value, allowed_values) in (choices or {}).items():
        if isinstance(value, (list, tuple, set, dict)):
            raise ValueError(f"{param} takes one value of {list(allowed_values)}, got {value!r}")
        if value not in allowed_values:
            raise ValueError(f"{param}={value!r} is not allowed; choose from {list(allowed_values)}")
    for param, (value, allowed_values) in (multi_choices or {}).items():
        values = _as_list(value, param)
        if not values:
            raise ValueError(f"{param} is empty; choose one or more of {list(allowed_values)}")
        for v in values:
            if isinstance(v, (list, dict)) or v not in allowed_values:
                raise ValueError(f"{param} entry {v!r} is not allowed; choose from {list(allowed_values)}")
        _distinct(values, param)


def quick(value: Any, cap: Any) -> Any:
    """The cheaper value of a parameter in a notebook's ``quick`` mode.

    Integers are capped (``quick(15, 5) == 5``, ``quick(3, 5) == 3``);
    lists are cut to their first ``cap`` entries (``quick(["mmlu", "mteb"],
    1) == ["mmlu"]``), so a reader's own choice survives ``quick=True``,
    only smaller.

    Parameters
    ----------
    value : int or list
        The parameter's value (an integer, booleans excluded, or a list).
    cap : int
        The largest integer, or the number of list entries kept.

    Returns
    -------
    int or list
        ``min(value, cap)`` for an integer; ``value[:cap]`` (a new list) for
        a list.

    Raises
    ------
    ValueError
        ``value`` is neither an integer nor a list (a tuple or a bool included).

    Notes
    -----
    Complexity O(1) for an integer, O(cap) for a list.
    """
    if isinstance(value, list):
        return value[: int(cap)]
    if _is_int(value):
        return min(value, cap)
    raise ValueError(f"quick() caps integers and lists, got {value!r}")
