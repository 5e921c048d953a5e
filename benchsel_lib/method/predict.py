"""Predict a new model's missing benchmark scores, with intervals, in the original units.

This is the practitioner's side of the paper: "I ran these benchmarks, predict
the rest". A :class:`Predictor` is fitted once on a score matrix (standardize
with the column means and standard deviations, estimate the correlation with
:func:`benchsel_lib.estimation.estimate_correlation`, optionally in logit
space) and then predicts any number of new models from whatever scores they
have. Each prediction is the Gaussian conditional distribution of the
unobserved benchmarks given the observed ones (Eqs. cond-mean and cond-var of
Section 3), computed in standardized space by
:func:`benchsel_lib.imputation.conditional_impute` with the CV protocol's
ridge (Section 5.1), and mapped back to the original units:

* mean: ``mu_j + s_j * m_j`` and standard deviation ``s_j * sqrt(C_jj)``,
  where ``(mu_j, s_j)`` are the training mean / std of benchmark ``j`` and
  ``(m, C)`` the standardized conditional mean / covariance;
* interval: the central ``level`` interval ``mean +- z * sd`` with
  ``z = Phi^{-1}((1 + level) / 2)``;
* with ``transform="logit"`` (Appendix K) the same is done in logit space and
  the prediction and both interval endpoints are mapped through the inverse
  transform ``sigmoid(f) * s_max`` (monotone, so the interval keeps its
  coverage); the reported ``sd`` is then the delta-method approximation
  ``s_max * sigmoid'(f) * sd_f``.

The mean is zero in standardized space (the training mean), exactly as in the
CV protocol, so the calibration measured by ``cross_validate(levels=...)``
applies to these intervals.

Variance inflation (``inflation=``): the conditional variance can be multiplied
by a factor ``s`` (interval half-widths and ``sd`` by ``sqrt(s)``), either given
or, with ``inflation="auto"``, fitted on the training matrix by the inner
cross-validation of ``cross_validate(variance_inflation="inner")``: the models
are split into ``inner_folds`` folds, the correlation is re-estimated without
each fold, the fold's models are predicted from *the benchmarks given to the
new model* (each inner model from those it has observed), and ``s`` is the
mean squared standardized residual ``r^2 / var`` of its observed other
benchmarks, so that ``mean(r^2 / (s var)) = 1`` on held-out models. Cost:
``inner_folds`` extra correlation estimates (:meth:`Predictor.inflation_factors`).

Input rules for given scores (``ValueError`` otherwise): every name must be a
benchmark of the matrix (close matches are suggested); each benchmark at most
once; every value finite and inside the plausible range
``[min_j - 10 s_j, max_j + 10 s_j]`` where ``min_j, max_j`` are the smallest /
largest observed training score of benchmark ``j`` and
``s_j = max(std_j, 0.01 (|mean_j| + 1))`` its (floored) standard deviation in
the original units. The range rule catches unit mistakes (a percentage given
for a [0, 1] benchmark) without rejecting genuinely strong new models.
"""
from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import norm

from .._checks import check_int
from ..data import ScoreMatrix
from .correlation import estimate_correlation
from .gaussian import conditional_impute
from .scaling import logit_transform, model_space

__all__ = [
    "Predictor",
    "predict_scores",
    "check_given",
    "parse_scores",
    "suggest_names",
    "RANGE_SDS",
    "check_inflation",
    "unknown_name_error",
    "check_level",
]


#: Given scores must lie within this many (floored) standard deviations of the
#: observed training range of their benchmark.
RANGE_SDS: float = 10.0


_TRANSFORMS = (None, "logit")


def suggest_names(name: str, names: Sequence[str], *, n: int = 3) -> list[str]:
    """Close matches of ``name`` among ``names`` (case-insensitive difflib ratio >= 0.6).

    O(len(names) * len(name)^2) in the worst case (difflib), negligible here.
    """
    lowered = {s.lower(): s for s in names}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.6)
    # a substring match ("arc" -> "ARC-Challenge") helps when difflib finds nothing
    if not hits:
        hits = [k for k in lowered if name.lower() in k][:n]
    return [lowered[h] for h in hits]


def unknown_name_error(name: str, names: Sequence[str], what: str = "benchmark") -> ValueError:
    close = suggest_names(name, names)
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else f" ({len(names)} {what}s in the matrix)"
    return ValueError(f"unknown {what} {name!r}{hint}")


def parse_scores(text: str | Iterable[str]) -> list[tuple[str, float]]:
    """Parse ``"BENCH=VALUE,BENCH=VALUE"`` into ``[(name, value), ...]`` (order kept, duplicates kept).

    Names may contain spaces, ``=`` (the value is after the *last* ``=``) and
    commas (a comma-separated piece without ``=`` is joined to the next one).
    Several strings (a repeated ``--scores`` option) are concatenated.
    Values must parse as floats; a non-numeric value raises ``ValueError``.
    Duplicates are checked by :func:`check_given`, not here. O(len(text)).
    """
    texts = [text] if isinstance(text, str) else list(text)
    items: list[tuple[str, float]] = []
    for t in texts:
        pending = ""
        for piece in t.split(","):
            if "=" not in piece:
                if piece.strip():
                    pending += piece + ","
                continue
            piece = pending + piece
            pending = ""
            name, _, raw = piece.rpartition("=")
            name, raw = name.strip(), raw.strip()
            if not name:
                raise ValueError(f"missing benchmark name before '=' in {piece.strip()!r}")
            try:
                value = float(raw)
            except ValueError:
                raise ValueError(f"value {raw!r} for benchmark {name!r} is not a number") from None
            items.append((name, value))
        if pending.strip():
            raise ValueError(f"expected BENCH=VALUE, got {pending.rstrip(',').strip()!r}")
    if not items:
        raise ValueError("no scores given (expected \"BENCH=VALUE,BENCH=VALUE,...\")")
    return items


def _column_ranges(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Allowed [low, high] per column: observed range widened by RANGE_SDS floored stds."""
    with np.errstate(all="ignore"):
        mean = np.nanmean(X, axis=0)
        n = (~np.isnan(X)).sum(axis=0)
        std = np.where(n > 1, np.nanstd(X, axis=0, ddof=1) if X.shape[0] > 1 else 0.0, 0.0)
    std = np.maximum(np.nan_to_num(std), 0.01 * (np.abs(mean) + 1.0))
    return np.nanmin(X, axis=0) - RANGE_SDS * std, np.nanmax(X, axis=0) + RANGE_SDS * std


def check_given(
    given: Mapping[str, float] | Iterable[tuple[str, float]],
    matrix: ScoreMatrix,
    *,
    skip_missing: bool = False,
    ranges: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, float]:
    """Validate given scores against ``matrix`` and return them as an ordered dict.

    Parameters
    ----------
    given : mapping or iterable of (name, value)
        The new model's scores, in original units. Pairs allow the duplicate
        check (a mapping cannot hold duplicates).
    matrix : ScoreMatrix
        The training matrix the scores refer to.
    skip_missing : bool
        Drop NaN values (an empty cell in a scores file means "not run")
        instead of rejecting them.
    ranges : (low, high), optional
        Precomputed allowed ranges per benchmark (saves the O(M N) pass).

    Raises
    ------
    ValueError
        Unknown benchmark (with close matches), a benchmark given twice, a
        non-finite value, or a value outside the plausible range (module
        docstring). O(|given| N).
    """
    pairs = [(str(n), v) for n, v in (given.items() if isinstance(given, Mapping) else given)]
    names = matrix.benchmarks
    pos = {b: j for j, b in enumerate(names)}
    seen: set[str] = set()
    for name, _ in pairs:  # names first: unknown and duplicate names before any value problem
        if name not in pos:
            raise unknown_name_error(name, names)
        if name in seen:
            raise ValueError(f"benchmark {name!r} is given more than once")
        seen.add(name)
    low, high = ranges if ranges is not None else _column_ranges(np.asarray(matrix.scores, dtype=float))
    out: dict[str, float] = {}
    for name, value in pairs:
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"value {value!r} for benchmark {name!r} is not a number") from None
        if math.isnan(value) and skip_missing:
            continue
        if not math.isfinite(value):
            raise ValueError(f"value {value!r} for benchmark {name!r} is not finite")
        j = pos[name]
        if not low[j] <= value <= high[j]:
            raise ValueError(
                f"value {value:g} for benchmark {name!r} is out of range: the training scores span "
                f"{np.nanmin(matrix.scores[:, j]):.4g}..{np.nanmax(matrix.scores[:, j]):.4g}, "
                f"allowed [{low[j]:.4g}, {high[j]:.4g}] (observed range +- {RANGE_SDS:g} sd); wrong units?"
            )
        out[name] = value
    return out


def check_inflation(inflation: float | str) -> float | str:
    """Validate a variance-inflation argument: ``"auto"`` or a finite number > 0 (returned as float).

    Raises
    ------
    ValueError
        Anything else (a string other than "auto", zero, a negative or non-finite number).
    """
    if isinstance(inflation, str):
        if inflation == "auto":
            return inflation
        raise ValueError(f"unknown inflation {inflation!r}; expected 'auto' or a number > 0")
    if isinstance(inflation, bool):
        raise ValueError(f"inflation must be 'auto' or a number > 0, got {inflation!r}")
    try:
        value = float(inflation)
    except (TypeError, ValueError):
        raise ValueError(f"inflation must be 'auto' or a number > 0, got {inflation!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"inflation must be a finite number > 0 (a variance factor), got {inflation!r}")
    return value


def check_level(level: float) -> float:
    try:
        level = float(level)
    except (TypeError, ValueError):
        raise ValueError(f"level must be a number in (0, 1), got {level!r}") from None
    if not 0.0 < level < 1.0:
        raise ValueError(f"level={level} is out of range: it must be strictly between 0 and 1 (e.g. 0.9)")
    return level


@dataclass(frozen=True, eq=False)
class Predictor:
    """A fitted Gaussian score model that predicts new models' missing scores.

    Build it with :meth:`Predictor.fit`; the correlation is estimated once
    (O(M N^2) pairwise, or the EM cost of Appendix G) and each prediction then
    costs one conditional solve, O(|A|^3 + |A| T + T^2 |A|) for ``|A|`` given
    and ``T`` predicted benchmarks.

    Attributes
    ----------
    matrix : ScoreMatrix
        The training matrix (original units).
    corr : ndarray (N, N)
        Training correlation of the (transformed) standardized scores.
    mean, std : ndarray (N,)
        Training means / standard deviations (of the transformed scores when a
        transform is used) that map standardized values back.
    transform : {None, "logit"}
    smax : ndarray (N,) or None
        Per-benchmark training maxima of the logit transform (Appendix K).
    method : str
        Covariance estimator actually used ("pairwise" or "em").
    ridge : float
        Ridge added to the conditioning block (the CV protocol's 1e-2).
    estimator, config : str
        The ``estimator`` / ``config`` arguments of :meth:`fit` (reused by the
        inner fits of :meth:`inflation_factors`).
    """

    matrix: ScoreMatrix
    corr: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    transform: str | None = None
    smax: np.ndarray | None = None
    method: str = ""
    ridge: float = 1e-2
    estimator: str = "auto"
    config: str = "released"
    _low: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    _high: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    # ------------------------------------------------------------------ fit
    @classmethod
    def fit(
        cls,
        matrix: ScoreMatrix,
        *,
        transform: str | None = None,
        estimator: str = "auto",
        config: str = "released",
        ridge: float = 1e-2,
    ) -> Predictor:
        """Standardize ``matrix`` and estimate its correlation once.

        Parameters
        ----------
        matrix : ScoreMatrix
            Training scores (models x benchmarks, NaN where missing); every
            benchmark needs an observed score.
        transform : {None, "logit"}
            Work in logit space (Appendix K): scores are divided by the
            training maximum of their benchmark, clipped to [1e-3, 1 - 1e-3]
            and logit-transformed before standardization.
        estimator : {"auto", "pairwise", "em"}
            Passed to :func:`~benchsel_lib.estimation.estimate_correlation`
            (Section 5.1's rule for "auto").
        config : {"released", "early"}
            EM settings (Appendix G).
        ridge : float
            Ridge for the conditional solves (Section 5.1 uses 1e-2).
        """

        if not isinstance(matrix, ScoreMatrix):
            raise ValueError(f"matrix must be a ScoreMatrix, got {type(matrix).__name__}")
        if transform not in _TRANSFORMS:
            raise ValueError(f"unknown transform {transform!r}; choose None or 'logit'")
        if not (isinstance(ridge, (int, float)) and math.isfinite(ridge) and ridge >= 0):
            raise ValueError(f"ridge must be a finite number >= 0, got {ridge!r}")
        matrix.require_observed()
        X = np.array(matrix.scores, dtype=float)
        smax = None
        if transform == "logit":

            X, smax = logit_transform(X)
            smax = np.asarray(smax, dtype=float)
        est = estimate_correlation(X, method=estimator, config=config)
        low, high = _column_ranges(np.asarray(matrix.scores, dtype=float))
        return cls(
            matrix=matrix,
            corr=np.asarray(est.corr, dtype=float),
            mean=np.asarray(est.mean, dtype=float),
            std=np.asarray(est.std, dtype=float),
            transform=transform,
            smax=smax,
            method=str(getattr(est, "method", estimator)),
            ridge=float(ridge),
            estimator=str(estimator),
            config=str(config),
            _low=low,
            _high=high,
        )

    # -------------------------------------------------------------- helpers
    @property
    def _ranges(self) -> tuple[np.ndarray, np.ndarray] | None:
        return None if self._low is None else (self._low, self._high)

    @property
    def benchmarks(self) -> tuple[str, ...]:
        """Benchmark names (columns of the training matrix)."""
        return self.matrix.benchmarks

    def _to_standard(self, values: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Original units -> standardized (transformed) space for columns ``cols``."""
        v = np.asarray(values, dtype=float)
        if self.transform == "logit":

            v, _ = logit_transform(v.reshape(-1, len(cols)), smax=self.smax[cols])
        return (v - self.mean[cols]) / self.std[cols]

    def _conditional(self, z_obs: np.ndarray, obs: np.ndarray, tgt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Standardized conditional mean (n, T) and marginal sds (T,) of targets ``tgt``.

        With nothing given (``obs`` empty) this is the marginal N(0, corr).
        """

        res = conditional_impute(
            self.corr, np.zeros(len(self.benchmarks)), z_obs, obs, ridge=self.ridge, target_idx=tgt
        )
        mean = np.asarray(res.mean, dtype=float).reshape(z_obs.shape[0], tgt.size)
        var = np.clip(np.diag(np.asarray(res.cov, dtype=float)), 0.0, None)
        return mean, np.sqrt(var)

    def _to_original(
        self, m: np.ndarray, sd: np.ndarray, tgt: np.ndarray, q: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Map standardized mean / sd of ``tgt`` to (predicted, lower, upper, sd) in original units."""
        mu, s = self.mean[tgt], self.std[tgt]
        f = mu + s * m
        f_sd = s * sd
        lo, hi = f - q * f_sd, f + q * f_sd
        if self.transform == "logit":
            smax = self.smax[tgt]
            p = expit(f)
            return p * smax, expit(lo) * smax, expit(hi) * smax, smax * p * (1.0 - p) * f_sd
        return f, lo, hi, np.broadcast_to(f_sd, f.shape).copy()

    # ---------------------------------------------------------- inflation
    def inflation_factors(
        self,
        patterns: Sequence[Sequence[str]],
        *,
        inner_folds: int = 3,
        seed: int = 0,
    ) -> list[float]:
        """Variance-inflation factors for conditioning on each set of given benchmarks.

        The inner cross-validation of ``cross_validate(variance_inflation="inner")``
        (:func:`benchsel_lib.evaluation._inflation`) run on the whole training
        matrix, with each pattern in place of a selection: the training models
        are split into ``inner_folds`` random folds (seeded); per fold the
        correlation is re-estimated on the other folds (same estimator, config
        and transform as :meth:`fit`), each held-out model is predicted from the
        pattern's benchmarks it has observed (ridge ``self.ridge``), and the
        factor is the mean of ``r^2 / var`` over its observed other benchmarks.

        Parameters
        ----------
        patterns : sequence of sequences of str
            Sets of given benchmark names (matrix names; order is irrelevant).
            An empty set gets factor 1 (nothing is conditioned on).
        inner_folds : int
            Number of inner folds, ``2 <= inner_folds <= #models``.
        seed : int
            Non-negative seed of the fold assignment.

        Returns
        -------
        list of float
            One factor per pattern (1.0 where no held-out entry could be
            evaluated). Cost: ``inner_folds`` correlation estimates plus
            ``O(inner_folds * sum_p |p| * M N |p|^2)`` conditional solves.
        """


        M = self.matrix.shape[0]
        if isinstance(inner_folds, bool) or not isinstance(inner_folds, (int, np.integer)) or not 2 <= inner_folds <= M:
            raise ValueError(
                f"inner_folds must be an integer between 2 and the number of models ({M}), got {inner_folds!r}"
            )
        check_int(seed, "seed", minimum=0)
        idx: list[np.ndarray] = []
        for names in patterns:
            names = [str(n) for n in names]
            for n in names:
                if n not in self.benchmarks:
                    raise unknown_name_error(n, self.benchmarks)
            idx.append(np.asarray(sorted(set(self.matrix.benchmark_index(names))), dtype=int))
        from types import SimpleNamespace

        from ..protocol.cv import (
            inflation_factors,  # (temporary: the pipeline replaces this class)
        )

        sels = {p: SimpleNamespace(order=o) for p, o in enumerate(idx) if o.size}
        if not sels:
            return [1.0] * len(idx)
        X = np.asarray(self.matrix.scores, dtype=float)
        space = model_space(X, X[:0], self.transform, 10.0)
        k_max = max(o.size for o in idx)
        fac = inflation_factors(
            space, self.corr, sels, k_max, estimator=self.estimator, config=self.config, ridge=self.ridge, imputer=None,
            gaussian=True, inner_folds=int(inner_folds), rng=np.random.default_rng(int(seed)),
        )
        return [float(fac[p][o.size - 1]) if p in fac else 1.0 for p, o in enumerate(idx)]

    def _resolve_inflation(self, inflation: float | str, names: Sequence[str], inner_folds: int, seed: int) -> float:
        inflation = check_inflation(inflation)
        if inflation == "auto":
            return self.inflation_factors([names], inner_folds=inner_folds, seed=seed)[0]
        return float(inflation)

    # -------------------------------------------------------------- predict
    def predict(
        self,
        given: Mapping[str, float] | Iterable[tuple[str, float]],
        *,
        level: float = 0.9,
        skip_missing: bool = False,
        inflation: float | str = 1.0,
        inner_folds: int = 3,
        seed: int = 0,
    ) -> pd.DataFrame:
        """Predict every benchmark not in ``given`` for one new model.

        Parameters
        ----------
        given : mapping or iterable of (name, value)
            Observed scores of the new model in original units (checked by
            :func:`check_given`).
        level : float in (0, 1)
            Nominal coverage of the central interval.
        skip_missing : bool
            Ignore NaN values in ``given`` (reported in ``attrs["ignored"]``).
        inflation : float > 0 or "auto"
            Variance-inflation factor ``s``: the conditional variance is
            multiplied by ``s`` (``sd`` and the interval half-width by
            ``sqrt(s)``). ``"auto"`` fits it for the given benchmarks with
            :meth:`inflation_factors` (``inner_folds``, ``seed``). Default 1
            (the plain Gaussian interval).
        inner_folds, seed : int
            Used only with ``inflation="auto"``.

        Returns
        -------
        pandas.DataFrame
            One row per predicted benchmark (matrix order): ``benchmark,
            predicted, lower, upper, sd, n_train`` (``n_train``: training
            models with that benchmark observed). ``attrs`` holds ``used``
            (the given scores conditioned on, a dict), ``ignored`` (names
            skipped as missing), ``level``, ``transform``, ``method`` and
            ``inflation`` (the factor used).
        """
        level = check_level(level)
        check_inflation(inflation)
        pairs = list(given.items()) if isinstance(given, Mapping) else list(given)
        used = check_given(pairs, self.matrix, skip_missing=skip_missing, ranges=self._ranges)
        ignored = [str(n) for n, _ in pairs if str(n) not in used]
        obs = np.asarray(self.matrix.benchmark_index(list(used)), dtype=int)
        tgt = np.setdiff1d(np.arange(len(self.benchmarks)), obs)
        if tgt.size == 0:
            raise ValueError("nothing to predict: every benchmark of the matrix was given")
        factor = self._resolve_inflation(inflation, list(used), inner_folds, seed)
        z = self._to_standard(np.array(list(used.values()), dtype=float)[None, :], obs)
        m, sd = self._conditional(z, obs, tgt)
        df = self._table(m[0], sd * math.sqrt(factor), tgt, float(norm.ppf(0.5 + level / 2)))
        df.attrs.update(
            used=dict(used), ignored=ignored, level=level, transform=self.transform, method=self.method,
            inflation=factor,
        )
        return df

    def _table(self, m: np.ndarray, sd: np.ndarray, tgt: np.ndarray, q: float) -> pd.DataFrame:
        """Prediction rows of targets ``tgt`` in original units (central interval ``+- q sd``)."""
        pred, lo, hi, s = self._to_original(m, sd, tgt, q)
        return pd.DataFrame(
            {
                "benchmark": [self.benchmarks[j] for j in tgt],
                "predicted": pred,
                "lower": lo,
                "upper": hi,
                "sd": s,
                "n_train": self.matrix.observed.sum(axis=0)[tgt].astype(int),
            }
        )

    def predict_frame(
        self,
        scores: pd.DataFrame | ScoreMatrix,
        *,
        level: float = 0.9,
        inflation: float | str = 1.0,
        inner_folds: int = 3,
        seed: int = 0,
    ) -> pd.DataFrame:
        """Predict many new models at once (rows of ``scores``; NaN = not given).

        Rows with the same set of given benchmarks share one conditional solve
        (the conditional covariance does not depend on the values, Eq.
        cond-var), so k patterns cost k solves, not one per model.
        ``inflation``, ``inner_folds`` and ``seed`` are as in :meth:`predict`;
        with ``"auto"`` one factor is fitted per pattern (one set of inner
        correlation estimates serves all patterns).

        Returns
        -------
        pandas.DataFrame
            Long format ``model, benchmark, predicted, lower, upper, sd,
            n_train`` with the rows of :meth:`predict` for each model;
            ``attrs["used"]`` maps model -> dict of the scores conditioned on,
            ``attrs["inflation"]`` model -> factor used.
        """
        level = check_level(level)
        check_inflation(inflation)
        frame = scores.to_frame() if isinstance(scores, ScoreMatrix) else scores
        if not isinstance(frame, pd.DataFrame) or frame.shape[0] == 0:
            raise ValueError("scores must be a non-empty DataFrame (models x benchmarks) or ScoreMatrix")
        cols = [str(c) for c in frame.columns]
        for dup in {c for c in cols if cols.count(c) > 1}:
            raise ValueError(f"benchmark {dup!r} is given more than once")
        for c in cols:
            if c not in self.benchmarks:
                raise unknown_name_error(c, self.benchmarks)
        used_all: dict[str, dict[str, float]] = {}
        values = frame.apply(pd.to_numeric, errors="coerce")
        bad = values.isna() & frame.notna()
        if bad.to_numpy().any():
            i, j = np.argwhere(bad.to_numpy())[0]
            raise ValueError(f"value {frame.iat[i, j]!r} for benchmark {cols[j]!r} (model {frame.index[i]!r}) is not a number")
        # validate every row, then group rows by their pattern of given benchmarks
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, model in enumerate(frame.index):
            row = list(zip(cols, values.iloc[i].to_numpy(dtype=float)))
            used_all[str(model)] = check_given(row, self.matrix, skip_missing=True, ranges=self._ranges)
            groups.setdefault(tuple(used_all[str(model)]), []).append(i)
        q = float(norm.ppf(0.5 + level / 2))
        parts = [None] * frame.shape[0]
        if inflation == "auto":
            fitted = self.inflation_factors(list(groups), inner_folds=inner_folds, seed=seed)
            factors = dict(zip(groups, fitted))
        else:
            factors = {names: float(inflation) for names in groups}
        infl_used: dict[str, float] = {}
        for names, rows in groups.items():
            obs = np.asarray(self.matrix.benchmark_index(list(names)) if names else [], dtype=int)
            tgt = np.setdiff1d(np.arange(len(self.benchmarks)), obs)
            if tgt.size == 0:
                raise ValueError(f"nothing to predict for model {str(frame.index[rows[0]])!r}: every benchmark was given")
            raw = np.array([[used_all[str(frame.index[i])][n] for n in names] for i in rows], dtype=float)
            z = self._to_standard(raw, obs) if names else np.zeros((len(rows), 0))
            m, sd = self._conditional(z.reshape(len(rows), obs.size), obs, tgt)
            sd = sd * math.sqrt(factors[names])
            for r, i in enumerate(rows):
                infl_used[str(frame.index[i])] = factors[names]
                parts[i] = self._table(m[r], sd, tgt, q)
                parts[i].insert(0, "model", str(frame.index[i]))
        out = pd.concat(parts, ignore_index=True)
        out.attrs.update(used=used_all, level=level, transform=self.transform, method=self.method,
                         inflation=infl_used)
        return out


def predict_scores(
    matrix: ScoreMatrix,
    given: Mapping[str, float] | Iterable[tuple[str, float]],
    *,
    level: float = 0.9,
    transform: str | None = None,
    estimator: str = "auto",
    config: str = "released",
    ridge: float = 1e-2,
    inflation: float | str = 1.0,
    inner_folds: int = 3,
    seed: int = 0,
) -> pd.DataFrame:
    """Predict a new model's unobserved scores from the ones it has (Eqs. cond-mean, cond-var).

    One-shot convenience for ``Predictor.fit(matrix, ...).predict(given,
    level=level)``; fit a :class:`Predictor` once to predict many models.

    Parameters
    ----------
    matrix : ScoreMatrix
        Training scores in original units.
    given : mapping or iterable of (name, value)
        The new model's observed scores (names must be benchmarks of
        ``matrix``; see the module docstring for the range rule).
    level : float in (0, 1)
        Nominal coverage of the central interval (0.9 = 5%..95%).
    transform : {None, "logit"}
        Fit and predict in logit space (Appendix K).
    estimator : {"auto", "pairwise", "em"}
        Covariance estimator (Section 5.1 / Appendix G).
    config : {"released", "early"}
        EM settings.
    ridge : float
        Conditioning ridge (1e-2 as in the CV protocol).
    inflation : float > 0 or "auto"
        Variance-inflation factor (see :meth:`Predictor.predict`); ``"auto"``
        fits it by inner cross-validation (``inner_folds``, ``seed``).

    Returns
    -------
    pandas.DataFrame
        ``benchmark, predicted, lower, upper, sd, n_train`` for every
        benchmark not given, in original units; ``attrs["used"]`` lists the
        given scores conditioned on.

    Examples
    --------
    >>> from benchsel_lib import load_matrix, predict_scores    # doctest: +SKIP
    >>> predict_scores(load_matrix("mteb"), {"ArguAna": 0.55, "SciFact": 0.70})  # doctest: +SKIP
    """
    pairs = list(given.items()) if isinstance(given, Mapping) else list(given)
    check_level(level)
    check_inflation(inflation)
    if isinstance(matrix, ScoreMatrix):
        check_given(pairs, matrix)  # fail fast, before the correlation estimate
    return Predictor.fit(matrix, transform=transform, estimator=estimator, config=config, ridge=ridge).predict(
        pairs, level=level, inflation=inflation, inner_folds=inner_folds, seed=seed
    )
