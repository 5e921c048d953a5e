"""The one score-matrix type used everywhere in benchsel.

A :class:`ScoreMatrix` holds an (M, N) float array of scores of M models on N
benchmarks, with ``NaN`` for missing entries, the model and benchmark names,
and a short description of where the numbers come from.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._names import name_positions

__all__ = ["ColumnProblem", "ScoreMatrix", "ScoreWarning", "column_problems"]


def _positions(values: Sequence[int], n: int, arg: str, what: str) -> np.ndarray:
    """``values`` as an int array of positions in ``[0, n)``; ``ValueError`` naming ``arg`` otherwise."""
    arr = np.asarray(values)
    if arr.size == 0:
        return np.zeros(0, dtype=int)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"{arg} must be a sequence of integer positions, got {values!r}")
    bad = arr[(arr < 0) | (arr >= n)]
    if bad.size:
        raise ValueError(f"{arg} position {int(bad[0])} is out of range: the matrix has {n} {what} (0 to {n - 1})")
    return arr.astype(int, copy=False)


def check_bool(value: object, name: str) -> bool:
    """``value`` as a bool if it is one (numpy's too); anything else, a truthy string included, raises ValueError.

    It lives here, at the bottom of the package, so that the data layer's
    loaders and the shared checks (:mod:`benchsel_lib._checks`, which hands it
    on) use the one check. O(1).
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _as_names(names: Iterable[Any], what: str) -> tuple[str, ...]:
    if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise ValueError(f"{what} names must be a sequence of names, got {names!r}")
    out = tuple(str(n) for n in names)
    blank = [i for i, n in enumerate(out) if not n.strip()]
    if blank:
        raise ValueError(f"{what} names must not be empty: position(s) {blank[:10]} hold {out[blank[0]]!r}")
    seen: set[str] = set()
    dups = sorted({n for n in out if n in seen or seen.add(n)})  # type: ignore[func-returns-value]
    if dups:
        shown = ", ".join(repr(d) for d in dups[:5])
        more = f" (and {len(dups) - 5} more)" if len(dups) > 5 else ""
        raise ValueError(f"duplicate {what} names: {shown}{more}")
    return out


@dataclass(frozen=True, eq=False)
class ScoreMatrix:
    """Scores of ``M`` models on ``N`` benchmarks, ``NaN`` where missing.

    Parameters
    ----------
    scores : array_like of shape (M, N)
        Scores as floats; ``NaN`` marks a missing entry. Infinite values are
        rejected.
    models : sequence of str, length M
        Unique model names (rows).
    benchmarks : sequence of str, length N
        Unique benchmark names (columns).
    source : str, optional
        A short description of where the numbers come from.
    row_info : pandas.DataFrame, optional
        Per-model metadata indexed like ``models`` (for example the source
        file each MMLU row came from).

    Notes
    -----
    The matrix is immutable: methods return new objects. Construction checks
    the shape, the name counts, duplicate names and non-finite values; it
    does *not* reject empty rows or columns (raw leaderboard tables may have
    them) -- call :meth:`require_observed` where an analysis needs every row
    and column to have an observation.
    """

    scores: np.ndarray
    models: tuple[str, ...]
    benchmarks: tuple[str, ...]
    source: str = ""
    row_info: pd.DataFrame | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if np.iscomplexobj(self.scores):
            raise ValueError("scores must be real numbers, got complex values")
        try:
            arr = np.array(self.scores, dtype=float, copy=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"scores must be numeric: {exc}") from None
        if arr.ndim != 2:
            raise ValueError(f"scores must be a 2-D (models x benchmarks) array, got shape {arr.shape}")
        if arr.shape[0] == 0 or arr.shape[1] == 0:
            raise ValueError(f"score matrix is empty (shape {arr.shape})")
        if np.isinf(arr).any():
            i, j = np.argwhere(np.isinf(arr))[0]
            raise ValueError(f"scores contain an infinite value (row {i}, column {j})")
        models = _as_names(self.models, "model")
        benchmarks = _as_names(self.benchmarks, "benchmark")
        if len(models) != arr.shape[0]:
            raise ValueError(f"{len(models)} model names for {arr.shape[0]} rows")
        if len(benchmarks) != arr.shape[1]:
            raise ValueError(f"{len(benchmarks)} benchmark names for {arr.shape[1]} columns")
        arr.setflags(write=False)
        object.__setattr__(self, "scores", arr)
        object.__setattr__(self, "models", models)
        object.__setattr__(self, "benchmarks", benchmarks)

    # ------------------------------------------------------------------ basics
    @property
    def shape(self) -> tuple[int, int]:
        """``(M, N)``. O(1)."""
        return self.scores.shape  # type: ignore[return-value]

    @property
    def observed(self) -> np.ndarray:
        """Boolean (M, N) mask, True where a score is present. O(M N)."""
        return ~np.isnan(self.scores)

    @property
    def observed_fraction(self) -> float:
        """Fraction of observed entries, in [0, 1]. O(M N)."""
        return float(self.observed.mean())

    def observed_counts(self, axis: int = 0) -> pd.Series:
        """Observed entries per benchmark (``axis=0``) or per model (``axis=1``); another axis raises ``ValueError``.

        O(M N).
        """
        if isinstance(axis, bool) or axis not in (0, 1):
            raise ValueError(f"axis must be 0 (per benchmark) or 1 (per model), got {axis!r}")
        counts = self.observed.sum(axis=axis)
        index = self.benchmarks if axis == 0 else self.models
        return pd.Series(counts, index=list(index), name="n_observed")

    def __repr__(self) -> str:
        m, n = self.shape
        src = f", source={self.source!r}" if self.source else ""
        return f"ScoreMatrix({m} models x {n} benchmarks, {100 * self.observed_fraction:.1f}% observed{src})"

    # ------------------------------------------------------------- name lookup
    def benchmark_index(self, names: str | Sequence[str]) -> list[int]:
        """Column indices of benchmark ``names``; unknown names raise ``ValueError``. O(N + len(names))."""
        return name_positions(names, self.benchmarks, what="benchmark", unique=False)

    def model_index(self, names: str | Sequence[str]) -> list[int]:
        """Row indices of model ``names``; unknown names raise ``ValueError``. O(M + len(names))."""
        return name_positions(names, self.models, what="model", unique=False)

    # ---------------------------------------------------------------- subsets
    def subset(
        self,
        *,
        models: Sequence[str] | None = None,
        benchmarks: Sequence[str] | None = None,
    ) -> ScoreMatrix:
        """Return the sub-matrix with the given model and/or benchmark names (in that order). O(M N)."""
        rows = self.model_index(models) if models is not None else list(range(self.shape[0]))
        cols = self.benchmark_index(benchmarks) if benchmarks is not None else list(range(self.shape[1]))
        return self.take(rows=rows, cols=cols)

    def take(self, *, rows: Sequence[int] | None = None, cols: Sequence[int] | None = None) -> ScoreMatrix:
        """Return the sub-matrix with the given row / column positions.

        Positions are integers in ``[0, M)`` (rows) and ``[0, N)`` (columns);
        anything else (a float, a negative or too large position) raises
        ``ValueError``.  O(size of the result).
        """
        r = np.arange(self.shape[0]) if rows is None else _positions(rows, self.shape[0], "rows", "models")
        c = np.arange(self.shape[1]) if cols is None else _positions(cols, self.shape[1], "cols", "benchmarks")
        info = None if self.row_info is None else self.row_info.iloc[r]
        return ScoreMatrix(
            self.scores[np.ix_(r, c)],
            [self.models[i] for i in r],
            [self.benchmarks[j] for j in c],
            self.source,
            info,
        )

    def drop_empty(self, *, min_per_row: int = 1, min_per_col: int = 1) -> ScoreMatrix:
        """Drop rows with fewer than ``min_per_row`` and columns with fewer than ``min_per_col`` observations.

        Repeats until both conditions hold (dropping a row can empty a column):
        O(M N) per round, at most M + N rounds (in practice one or two).
        """
        out = self
        while True:
            obs = out.observed
            keep_r = obs.sum(axis=1) >= min_per_row
            keep_c = obs.sum(axis=0) >= min_per_col
            if keep_r.all() and keep_c.all():
                return out
            out = out.take(rows=np.flatnonzero(keep_r), cols=np.flatnonzero(keep_c))

    def require_observed(self) -> ScoreMatrix:
        """Raise ``ValueError`` naming any model or benchmark with no observed score; return ``self``. O(M N)."""
        obs = self.observed
        empty_cols = [self.benchmarks[j] for j in np.flatnonzero(~obs.any(axis=0))]
        if empty_cols:
            raise ValueError(f"benchmark column(s) with no observed score: {', '.join(map(repr, empty_cols[:10]))}")
        empty_rows = [self.models[i] for i in np.flatnonzero(~obs.any(axis=1))]
        if empty_rows:
            raise ValueError(f"model row(s) with no observed score: {', '.join(map(repr, empty_rows[:10]))}")
        return self

    def column_problems(self) -> list[ColumnProblem]:
        """Columns that look wrong: constant, or mixing 0-1 and 0-100 scales (:func:`column_problems`). O(M N)."""
        return column_problems(self.scores, self.benchmarks)

    def transpose(self) -> ScoreMatrix:
        """Benchmarks as rows and models as columns (the model-selection dual). O(M N) (a copy)."""
        return ScoreMatrix(self.scores.T, self.benchmarks, self.models, f"{self.source} (transposed)".strip())

    # ------------------------------------------------------------ conversion
    def to_frame(self) -> pd.DataFrame:
        """A DataFrame with models as the index and benchmarks as columns. O(M N) (a copy)."""
        df = pd.DataFrame(np.array(self.scores), index=list(self.models), columns=list(self.benchmarks))
        df.index.name = "model"
        return df

    @classmethod
    def from_frame(cls, df: pd.DataFrame, *, source: str = "DataFrame") -> ScoreMatrix:
        """Build from a DataFrame with models as the index and benchmarks as columns.

        Every cell must be numeric or missing (``NaN``/``None``); a non-numeric
        cell raises ``ValueError`` naming its row and column.  O(M N).
        """
        if not isinstance(df, pd.DataFrame):
            raise ValueError(f"expected a pandas DataFrame, got {type(df).__name__}")
        if df.shape[0] == 0 or df.shape[1] == 0:
            raise ValueError(f"score matrix is empty (shape {df.shape})")
        values = np.empty(df.shape, dtype=float)
        for j, col in enumerate(df.columns):
            series = df.iloc[:, j]
            converted = pd.to_numeric(series, errors="coerce")
            bad = converted.isna() & series.notna()
            if bad.any():
                i = int(np.flatnonzero(bad.to_numpy())[0])
                raise ValueError(
                    f"non-numeric value {series.iloc[i]!r} in row {df.index[i]!r}, column {col!r}"
                )
            values[:, j] = converted.to_numpy(dtype=float)
        return cls(values, [str(i) for i in df.index], [str(c) for c in df.columns], source)


class ScoreWarning(UserWarning):
    """A score column looks wrong (constant, mixed scales): the message, one line, names it."""


#: a column is constant when its observed scores spread no more than this fraction of their largest magnitude
#: (about 4500 units in the last place: rounding, as in 0.1 + 0.2 beside 0.3)
CONSTANT_RTOL = 1e-12

#: a column mixes scales when its scores in (0, 1] and those above 1 are this factor apart or more
MIXED_SCALE_GAP = 20.0


@dataclass(frozen=True)
class ColumnProblem:
    """A benchmark column that looks wrong.

    Attributes
    ----------
    benchmark : str
        The column's name.
    kind : {"constant", "mixed-scale"}
        ``"constant"``: every observed score is the same value, so the column
        carries no information about the others (its standardized scores are
        all zero, yet its variance stays 1 in a correlation matrix, which makes
        it look maximally uncertain to greedy entropy). ``"mixed-scale"``: some
        scores lie in (0, 1] and the rest at least :data:`MIXED_SCALE_GAP`
        times higher, about 100 times the first group: fractions mixed with
        percentages, most likely (:func:`column_problems`).
    message : str
        One line naming the column and what was seen.
    """

    benchmark: str
    kind: str
    message: str


def column_problems(scores: np.ndarray, names: Sequence[str]) -> list[ColumnProblem]:
    """Constant columns and columns that mix 0-1 and 0-100 scales, in column order.

    Parameters
    ----------
    scores : ndarray (M, N)
        Scores in original units, NaN missing.
    names : sequence of str, length N
        Benchmark names.

    Returns
    -------
    list of ColumnProblem
        Empty when nothing looks wrong (the paper's matrices). Columns with no
        observed score are not reported here (:meth:`ScoreMatrix.require_observed`).

    Notes
    -----
    A column is constant when its observed scores are equal up to rounding
    (their spread at most :data:`CONSTANT_RTOL` of their largest magnitude).
    A column mixes scales when its positive scores split at 1 into a group in
    (0, 1] of at least two scores and a group above 1 whose smallest member is
    at least :data:`MIXED_SCALE_GAP` times the largest of the first, and the
    first group's median times 100 falls inside the range of the second: a
    0-100 benchmark on which some models were reported as fractions. Low but
    real scores (0.5 % among scores from 3 % up; 0.05 % and 0.1 % among scores
    from 30 % up) are not flagged, and neither is a single fraction, which
    cannot be told from a real low score. The mirror case, a 0-1 benchmark on
    which some models (one is enough: no fraction exceeds 1) were reported as
    percentages, is flagged when the same gap holds and the second group's
    median divided by 100 falls inside the range of the first, widened above
    by that range's spread (the best model's score, written as a percentage,
    lies just above the others' fractions); a column that
    fits both is named after the smaller group. Cost O(M N).
    """
    X = np.asarray(scores, dtype=float)
    out: list[ColumnProblem] = []
    for j, name in enumerate(names):
        v = X[:, j]
        v = v[~np.isnan(v)]
        if v.size == 0:
            continue
        if float(np.ptp(v)) <= CONSTANT_RTOL * float(np.abs(v).max()):  # equal up to rounding
            how = "the only observed score is" if v.size == 1 else f"all {v.size} observed scores are"
            out.append(ColumnProblem(str(name), "constant", f"benchmark {str(name)!r} is constant ({how} {v[0]:g})"))
            continue
        low, high = v[(v > 0) & (v <= 1)], v[v > 1]
        if not (low.size >= 2 and high.size and float(high.min()) >= MIXED_SCALE_GAP * float(low.max())):
            continue
        fractions = float(high.min()) <= 100 * float(np.median(low)) <= float(high.max())
        spread = float(np.ptp(low))  # a top score written as a percentage lies just above the fractions
        percentages = float(low.min()) <= float(np.median(high)) / 100 <= float(low.max()) + spread
        if fractions and not (percentages and high.size < low.size):
            out.append(ColumnProblem(
                str(name), "mixed-scale",
                f"benchmark {str(name)!r} mixes scales: {low.size} of {v.size} scores lie in (0, 1] "
                f"(up to {low.max():g}) and the others from {high.min():g} to {high.max():g}; "
                "fractions among percentages?"))
        elif percentages:
            some = f"{high.size} of {v.size} scores lie" if high.size > 1 else f"1 of {v.size} scores lies"
            values = f"{high.min():g} to {high.max():g}" if high.size > 1 else f"{high.min():g}"
            out.append(ColumnProblem(
                str(name), "mixed-scale",
                f"benchmark {str(name)!r} mixes scales: {some} above 1 ({values}) and the others in (0, 1] "
                f"(from {low.min():g} to {low.max():g}); percentages among fractions?"))
    return out
