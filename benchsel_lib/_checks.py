"""Input checks shared by the pipeline modules.

Every check raises ``ValueError`` with a message that names the problem, so
that bad input never surfaces as a traceback from deep inside NumPy.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._names import unknown_name_error
from .data.matrix import ScoreMatrix, check_bool

__all__ = [
    "as_float_array",
    "check_blocks",
    "check_bool",
    "check_covariance",
    "check_data_matrix",
    "check_int",
    "check_k",
    "check_ks",
    "check_level",
    "check_matrix",
    "check_nonnegative",
    "resolve_indices",
]


def as_float_array(value: object, message: str, *, copy: bool = False) -> np.ndarray:
    """``value`` as a float array (a new one with ``copy``); ``ValueError(message)`` if it is not numeric. O(size)."""
    try:
        return (np.array if copy else np.asarray)(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(message) from None


def check_covariance(cov: object, *, name: str = "cov", sym_tol: float = 1e-8) -> np.ndarray:
    """Return ``cov`` as a float (N, N) array; raise if not square, symmetric and finite."""
    arr = as_float_array(cov, f"{name} must be a numeric square matrix")
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square (N, N) matrix, got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite entries")
    scale = max(1.0, float(np.abs(arr).max()))
    asym = float(np.abs(arr - arr.T).max())
    if asym > sym_tol * scale:
        raise ValueError(f"{name} is not symmetric (max |C - C^T| = {asym:.3g})")
    if (np.diag(arr) < 0).any():
        raise ValueError(f"{name} has a negative diagonal entry (not a covariance)")
    return (arr + arr.T) / 2.0


def check_data_matrix(X: object, *, name: str = "X", min_rows: int = 2, allow_empty: bool = False) -> np.ndarray:
    """Return ``X`` as a float (M, N) array with NaN for missing entries.

    Raises if ``X`` is not 2-D, holds infinities, has fewer than ``min_rows``
    rows, or (unless ``allow_empty``) has a row or column with no observed value.
    """

    if isinstance(X, ScoreMatrix):
        X = X.scores
    arr = as_float_array(X, f"{name} must be a numeric (models x benchmarks) array", copy=True)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (models x benchmarks), got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} has no rows (models)" if arr.shape[0] == 0 else
                         f"{name} needs at least {min_rows} models (rows), got {arr.shape[0]}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has no benchmark columns")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains infinite values (use NaN for missing)")
    if allow_empty:
        return arr
    obs = ~np.isnan(arr)
    empty_cols = np.flatnonzero(~obs.any(axis=0))
    if empty_cols.size:
        raise ValueError(f"{name} has all-missing column(s) at index {empty_cols[:10].tolist()}")
    empty_rows = np.flatnonzero(~obs.any(axis=1))
    if empty_rows.size:
        raise ValueError(f"{name} has all-missing row(s) at index {empty_rows[:10].tolist()}")
    return arr


def check_matrix(matrix: object) -> ScoreMatrix:
    """``matrix`` if it is a ScoreMatrix whose every model and benchmark has a score; else ValueError naming the problem."""
    if not isinstance(matrix, ScoreMatrix):
        raise ValueError(f"matrix must be a ScoreMatrix, got {type(matrix).__name__}")
    return matrix.require_observed()


def check_int(value: object, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` as an int ``>= minimum``; raise (naming ``name``) for anything else, booleans included."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < minimum:
        what = {1: "a positive integer", 0: "a non-negative integer"}.get(minimum, f"an integer >= {minimum}")
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return int(value)


def check_nonnegative(value: object, name: str) -> float:
    """Return ``value`` as a finite float ``>= 0``; raise (naming ``name``) for anything else, booleans included."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    if not ok or not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    return float(value)


def check_k(k: object, n: int, *, name: str = "k") -> int:
    """Return ``k`` as an int in ``1..n``; raise otherwise."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {k!r}")
    if not 1 <= int(k) <= n:
        raise ValueError(f"{name}={k} is out of range: it must be between 1 and {n}")
    return int(k)


def _sizes(values: object, k_max: float) -> tuple[int, ...] | None:
    """``values`` (one int or a sequence) as sorted distinct subset sizes in ``1..k_max``; None if one is not."""
    given = [values] if np.isscalar(values) else list(values)  # type: ignore[call-overload]
    if not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and 1 <= k <= k_max for k in given):
        return None
    return tuple(sorted({int(k) for k in given}))


def check_ks(ks: object, k_max: int) -> tuple[int, ...] | None:
    """Subset sizes ``ks`` (one int or a non-empty sequence, each in ``1..k_max``) sorted without repeats.

    None stays None (every size); anything else raises ``ValueError`` naming the range.  O(len(ks)).
    """
    if ks is None:
        return None
    sizes = _sizes(ks, k_max)
    if not sizes:
        raise ValueError(f"ks={ks!r} is out of range: give subset sizes in 1..k_max={k_max}")
    return sizes


def check_blocks(blocks: object) -> tuple[int, ...]:
    """Block sizes (``blocks`` of :func:`~benchsel_lib.method.inner_search.pipeline_path`: one int or a sequence,
    possibly empty, each >= 1) sorted without repeats; ``ValueError`` naming ``blocks`` otherwise.  O(len(blocks)).
    """
    sizes = _sizes(blocks, np.inf)
    if sizes is None:
        raise ValueError(f"blocks={blocks!r}: give subset sizes >= 1")
    return sizes


def resolve_indices(
    items: Sequence[int | str] | None, n: int, names: Sequence[str] | None, *, role: str = ""
) -> list[int]:
    """Map benchmark names or integer positions to positions in ``0..n-1``.

    Names need ``names``; unknown names (with close matches, as
    :func:`~benchsel_lib._names.name_positions` words them), out-of-range
    positions and repeats raise ``ValueError``.  ``role`` qualifies the
    benchmarks in messages ("mandatory", "excluded").
    """
    what = f"{role} benchmark" if role else "benchmark"
    if items is None:
        return []
    if isinstance(items, (str, int, np.integer)):
        items = [items]  # type: ignore[list-item]
    lookup = {s: i for i, s in enumerate(names)} if names is not None else None
    out: list[int] = []
    for it in items:
        if isinstance(it, str):
            if lookup is None:
                raise ValueError(f"{what} {it!r} is a name, but no benchmark names were given")
            if it not in lookup:
                raise unknown_name_error(it, names, role=role)
            idx = lookup[it]
        elif isinstance(it, (int, np.integer)) and not isinstance(it, bool):
            idx = int(it)
            if not 0 <= idx < n:
                raise ValueError(f"{what} index {idx} is out of range 0..{n - 1}")
        else:
            raise ValueError(f"{what} must be benchmark names or integer indices, got {it!r}")
        if idx in out:
            raise ValueError(f"{what} {it!r} is given more than once")
        out.append(idx)
    return out


def check_level(level: object) -> float:
    """An interval level strictly between 0 and 1, as a float; anything else raises ValueError naming it."""
    if isinstance(level, (str, bytes, bool, np.bool_)):
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    try:
        value = float(level)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"level must be a number in (0, 1), got {level!r}") from None
    if not 0.0 < value < 1.0:
        raise ValueError(f"level={value} is out of range: it must be strictly between 0 and 1 (e.g. 0.9)")
    return value
