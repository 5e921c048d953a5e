"""Checks of a new model's given scores against the training matrix.

Every name must be a benchmark of the matrix (close matches are suggested), given once; every value finite
and inside ``[min_j - 10 s_j, max_j + 10 s_j]`` (``s_j = max(std_j, 0.01 (|mean_j| + 1))``, original units),
which catches unit mistakes without rejecting strong new models.  A value inside that range that still
looks 100 times off (:func:`scale_slip`) draws a :class:`ScaleWarning` (``strict=True``: a ``ValueError``).
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .._checks import check_bool, check_matrix
from .._names import name_positions
from ..data import ScoreMatrix, ScoreWarning

__all__ = ["ScaleWarning", "check_given", "column_ranges", "scale_slip", "RANGE_SDS", "SCALE_QUANTILE", "SCALE_GAP"]

#: Given scores must lie within this many (floored) standard deviations of the
#: observed training range of their benchmark.
RANGE_SDS: float = 10.0
#: A positive given score below this quantile of its benchmark's (non-negative) observed scores is reported
#: as 100 times too small when x 100 it lies in the observed range (:func:`scale_slip`) ...
SCALE_QUANTILE: float = 0.01
#: ... and one at least this factor above the largest as 100 times too large when / 100 it lies there.
SCALE_GAP: float = 10.0

class ScaleWarning(ScoreWarning):
    """A given score whose size suggests the wrong scale (a fraction given for a percentage, or the reverse);
    ``strict=True`` or ``warnings.simplefilter("error", ScaleWarning)`` makes it an error."""


def column_ranges(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Allowed [low, high] per column: observed range widened by :data:`RANGE_SDS` floored stds. O(M N)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column observed once has no spread: floored below
        mean = np.nanmean(X, axis=0)
        n = (~np.isnan(X)).sum(axis=0)
        std = np.where(n > 1, np.nanstd(X, axis=0, ddof=1) if X.shape[0] > 1 else 0.0, 0.0)
    std = np.maximum(np.nan_to_num(std), 0.01 * (np.abs(mean) + 1.0))
    return np.nanmin(X, axis=0) - RANGE_SDS * std, np.nanmax(X, axis=0) + RANGE_SDS * std


def scale_slip(value: float, column: np.ndarray) -> str | None:
    """The likely unit slip behind a given score, or None when its size is plausible. O(M).

    Parameters
    ----------
    value : float
        The given score (original units).
    column : ndarray, shape (M,)
        The benchmark's training scores (NaN = missing).

    Returns
    -------
    str or None
        On a benchmark with non-negative observed scores: for a positive value below their lowest
        :data:`SCALE_QUANTILE` whose value x 100 lies in the observed range, or :data:`SCALE_GAP` times
        above the largest whose value / 100 does, what it looks like (``"0.71 x 100 = 71 lies in the
        observed range: a fraction given for a percentage?"``); likewise a value above 1 (up to 100) on a
        benchmark observed within [0, 1], or below 1 on one observed at least 1.  None otherwise.
    """
    seen = column[np.isfinite(column)]
    if not (math.isfinite(value) and value > 0) or seen.size < 2:  # no factor of 100 explains zero or less
        return None
    lo, hi = float(seen.min()), float(seen.max())
    if lo < 0:  # not a fraction or a percentage
        return None
    if value < np.quantile(seen, SCALE_QUANTILE) and lo <= 100 * value <= hi:
        kind = "a fraction given for a percentage" if hi > 1 else "100 times too small"
        return f"{value:g} x 100 = {100 * value:g} lies in the observed range: {kind}?"
    if value >= SCALE_GAP * hi and lo <= value / 100 <= hi:
        kind = "a percentage given for a fraction" if hi <= 1 else "100 times too large"
        return f"{value:g} / 100 = {value / 100:g} lies in the observed range: {kind}?"
    if hi <= 1 + 1e-9 < value <= 100:  # 1 + 1e-9: a top score of 1 written as 0.95 + 0.05
        return f"{value:g} is above 1 while every observed score lies in [0, 1]: a percentage given for a fraction?"
    if value < 1 <= lo:
        return f"{value:g} is below 1 while every observed score is at least 1: a fraction given for a percentage?"
    return None


def _check_size(value: float, name: str, what: str, column: np.ndarray, *, allowed: tuple[float, float],
                strict: bool) -> None:
    """Refuse a value outside ``allowed``; warn (or refuse, ``strict``) about a scale slip (:func:`scale_slip`)."""
    slip = scale_slip(value, column)
    lo, hi = np.nanmin(column), np.nanmax(column)
    observed = f"observed range {lo:.4g}..{hi:.4g}"
    if not allowed[0] <= value <= allowed[1]:
        raise ValueError(
            f"value {value:g} for {what} {name!r} is out of range: allowed [{allowed[0]:.4g}, {allowed[1]:.4g}] "
            f"(the {observed} +- {RANGE_SDS:g} sd); "
            + (slip or "wrong units?")
        )
    if slip is not None:
        where = (f"{'below' if value < lo else 'above'} its {observed}" if not lo <= value <= hi else
                 f"among the {'lowest' if value < np.nanmedian(column) else 'highest'} {100 * SCALE_QUANTILE:g} % "
                 f"of its training scores ({observed})")
        text = f"value {value:g} for {what} {name!r} is {where}; {slip}"
        if strict:
            raise ValueError(text)
        warnings.warn(text, ScaleWarning, stacklevel=4)


def check_given(
    given: Mapping[str, float] | Iterable[tuple[str, float]],
    matrix: ScoreMatrix,
    *,
    skip_missing: bool = False,
    ranges: tuple[np.ndarray, np.ndarray] | None = None,
    what: str = "benchmark",
    strict: bool = False,
) -> dict[str, float]:
    """Validate given scores against ``matrix`` and return them as an ordered dict.

    Parameters
    ----------
    given : mapping or iterable of (name, value)
        The new model's scores, in original units.
    matrix : ScoreMatrix
    skip_missing : bool
        Drop NaN values ("not run") instead of rejecting them.
    ranges : (low, high), optional
        Precomputed allowed ranges per benchmark (:func:`column_ranges`).
    what : str
        What the matrix's columns are, for messages (``"model"`` for a transposed matrix).
    strict : bool
        Refuse a value of implausible size (:func:`scale_slip`) instead of warning.

    Raises
    ------
    ValueError
        Unknown benchmark (with close matches), a benchmark given twice, a non-finite value, a value outside
        the plausible range, or with ``strict`` one of implausible size. O(|given| (N + M)).
    """
    check_matrix(matrix)
    check_bool(strict, "strict")
    if isinstance(given, Mapping):
        items = list(given.items())
    elif isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise ValueError(f"give the scores as a mapping {what} -> score or as ({what}, score) pairs, got {given!r}")
    else:
        items = list(given)
        for it in items:
            if isinstance(it, (str, bytes)) or not isinstance(it, Sequence) or len(it) != 2:
                raise ValueError(f"given scores must be ({what}, score) pairs, got {it!r}")
    pairs = [(str(n), v) for n, v in items]
    names = matrix.benchmarks
    # names first: unknown and duplicate names before any value problem
    cols = name_positions([name for name, _ in pairs], names, what=what)
    low, high = ranges if ranges is not None else column_ranges(np.asarray(matrix.scores, dtype=float))
    out: dict[str, float] = {}
    for (name, value), j in zip(pairs, cols):
        if isinstance(value, (bool, np.bool_)):
            raise ValueError(f"value {value!r} for {what} {name!r} is not a number")
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"value {value!r} for {what} {name!r} is not a number") from None
        if math.isnan(value) and skip_missing:
            continue
        if not math.isfinite(value):
            raise ValueError(f"value {value!r} for {what} {name!r} is not finite")
        _check_size(value, name, what, np.asarray(matrix.scores[:, j], dtype=float), allowed=(low[j], high[j]),
                    strict=strict)
        out[name] = value
    return out


