"""The paper's two objectives, apart from the greedy that maximizes them (Sections 2-4, Appendix C).

A set :math:`A` of revealed benchmarks of a Gaussian with covariance
:math:`\\Sigma` is scored by its entropy :math:`H(X_A)` (marginal gain
:math:`\\tfrac12\\log(2\\pi e\\,\\sigma^2_{j|A})`, Eq. schur-entropy,
Algorithm 1) or its mutual information with the rest (Eq. mi-formula; gain
:math:`\\tfrac12[\\log\\sigma^2_{j|A} + \\log P_{jj}]`, :math:`P` the
complement's precision, Eq. mi-gain, Algorithm 2).  Both read the conditional
variances from one incremental pivoted Cholesky (:class:`PivotedCholesky`);
the optimizer (:mod:`~benchsel_lib.method.selection`) asks an objective for
gains and knows none of the formulas.  Section 2's third objective, the total
residual variance, is minimized by :func:`residual_trace_greedy`.

Conditional variances are clamped at ``variance_floor(S) = 1e-12 *
max(diag(S))`` before a logarithm; a pivot at or below it counts as
explained.  Each gain has a vector form (``numpy.log``, the eager greedy) and
a one-candidate form (``math.log``, the lazy greedy and the gains along an
order), which may differ in the last bit.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
from scipy.linalg import lapack

from .._checks import check_covariance, resolve_indices
from .lowrank import LowRankCorrelation

__all__ = ["LOG_2PIE", "variance_floor", "PivotedCholesky", "Objective", "EntropyGain", "MutualInformationGain",
           "entropy_gain", "mi_gain", "gains_along", "entropy_gains_along", "complement_precision_diag", "trace_order",
           "residual_traces", "residual_trace_greedy", "log_det", "mutual_information", "tie_threshold", "first_tied"]

#: :math:`\\log(2\\pi e)`, the constant of a Gaussian's entropy
LOG_2PIE = math.log(2.0 * math.pi * math.e)

#: relative variance floor (times max(diag(cov)))
_VAR_RTOL = 1e-12

#: a complement Cholesky pivot below this (times max diag of the block) triggers the eigen fallback
_PIVOT_RTOL = 1e-12


def variance_floor(S: np.ndarray) -> float:
    """The floor of every conditional variance, ``1e-12 * max(diag(S))``. O(N)."""
    return _VAR_RTOL * float(S.diagonal().max())


def tie_threshold(best: float, tol: float) -> float:
    """The tie rule of every greedy: a key at or above ``best - tol * max(1, |best|)`` ties with ``best``. O(1)."""
    return best - tol * max(1.0, abs(best))


def first_tied(values: np.ndarray, tol: float) -> int:
    """Position of the first value tied (:func:`tie_threshold`) with the largest of ``values``. O(n)."""
    return int(np.flatnonzero(values >= tie_threshold(float(values.max()), tol))[0])


class PivotedCholesky:
    """Incremental (pivoted) Cholesky state of Algorithm 1.

    ``L[j, s]`` is the Cholesky row entry of benchmark ``j`` for the ``s``-th
    pivot; ``d[j]`` the residual diagonal :math:`\\sigma^2_{j|A}`.  ``add`` is
    the eager :math:`O(tN)` column update; ``refresh`` brings a single row up to
    date (used by lazy greedy, :math:`O(t^2)` worst case per row).  ``S`` may
    be a :class:`~benchsel_lib.method.lowrank.LowRankCorrelation`: only its
    diagonal and one column per pivot (:math:`O(N r)` each) are read.
    """

    def __init__(self, S: np.ndarray, kmax: int, floor: float) -> None:
        n = S.shape[0]
        self.S = S
        self.floor = floor
        self.L = np.zeros((n, max(kmax, 1)))
        self.d = S.diagonal().copy()
        self.filled = np.zeros(n, dtype=int)
        self.selected = np.zeros(n, dtype=bool)
        self.order: list[int] = []
        self.pivots: list[float] = []

    @property
    def t(self) -> int:
        """Number of pivots selected so far. O(1)."""
        return len(self.order)

    def add(self, p: int) -> None:
        """Select ``p`` and update every row (eager column update). :math:`O(tN)`."""
        t, S, L = self.t, self.S, self.L
        dp = float(self.d[p])
        if dp > self.floor:
            col = (S[:, p] - L[:, :t] @ L[p, :t]) / math.sqrt(dp)
            col[self.selected] = 0.0
            col[p] = math.sqrt(dp)
            self.d -= col * col
        else:
            col = np.zeros(S.shape[0])
        L[:, t] = col
        self.filled[:] = t + 1
        self._record(p, dp)

    def refresh(self, j: int) -> float:
        """Bring row ``j`` up to date with all pivots so far; return ``d[j]``. :math:`O(t^2)` worst case."""
        S, L = self.S, self.L
        for s in range(int(self.filled[j]), self.t):
            a = self.order[s]
            piv = L[a, s]
            if piv > 0.0:
                ell = (S[j, a] - L[j, :s] @ L[a, :s]) / piv
                L[j, s] = ell
                self.d[j] -= ell * ell
        self.filled[j] = self.t
        return float(self.d[j])

    def add_lazy(self, p: int) -> None:
        """Select ``p`` after ``refresh(p)``; other rows are updated on demand. Cost: that of :meth:`refresh`."""
        dp = self.refresh(p)
        t = self.t
        self.L[p, t] = math.sqrt(dp) if dp > self.floor else 0.0
        self.filled[p] = t + 1
        self._record(p, dp)

    def _record(self, p: int, dp: float) -> None:
        self.d[p] = 0.0
        self.selected[p] = True
        self.order.append(int(p))
        self.pivots.append(dp)


def entropy_gain(variance: np.ndarray | float, *, log: Callable = np.log) -> np.ndarray | float:
    """Entropy gain :math:`\\tfrac12\\log(2\\pi e\\,\\sigma^2_{j|A})` of floored variances (Eq. schur-entropy).

    ``log=math.log`` for one candidate. O(1) per candidate.
    """
    return 0.5 * (LOG_2PIE + log(variance))


def mi_gain(variance: np.ndarray | float, precision: np.ndarray | float, *, log: Callable = np.log
            ) -> np.ndarray | float:
    """MI gain :math:`\\tfrac12[\\log\\sigma^2_{j|A} + \\log P_{jj}]` (Eq. mi-gain) of floored conditional variances.

    ``precision`` is the diagonal entry of the complement's precision,
    :math:`P_{jj} = 1/\\sigma^2_{j|\\bar A \\setminus j}`; ``log=math.log`` for one
    candidate. O(1) per candidate.
    """
    return 0.5 * (log(variance) + log(precision))


def complement_precision_diag(S: np.ndarray, comp: np.ndarray, floor: float) -> np.ndarray:
    """Diagonal of :math:`(\\Sigma_{\\bar A\\bar A})^{-1}` from a fresh factorization.

    Fresh Cholesky of the complement block (LAPACK ``potrf``) and the inverse of L
    (``trtri``), i.e. :math:`P_{vv} = \\|(L^{-1})_{:,v}\\|^2` (Eq. prec-diag-chol).
    When the factorization fails or a pivot falls below ``_PIVOT_RTOL`` times
    the block's largest diagonal, an eigendecomposition with eigenvalues
    clamped at ``floor`` is used instead (Appendix C).  Cost :math:`O(|\\bar A|^3)`;
    for a :class:`~benchsel_lib.method.lowrank.LowRankCorrelation` of rank
    ``r`` the Woodbury identity instead, :math:`O(|\\bar A| r^2)`.
    """
    if isinstance(S, LowRankCorrelation):
        return S.complement_precision_diag(comp)
    block = S.take(comp, axis=0).take(comp, axis=1)
    scale = float(block.diagonal().max()) if block.size else 0.0
    if scale > 0.0:
        # block is symmetric, so its transpose is a Fortran-ordered copy LAPACK may overwrite
        c, info = lapack.dpotrf(block.copy().T, lower=1, clean=1, overwrite_a=1)
        if info == 0:
            piv = c.diagonal()
            if float((piv * piv).min()) > _PIVOT_RTOL * scale:
                # L^{-1} by a triangular inverse (cheaper than potri); upper triangle stays zero
                linv, _ = lapack.dtrtri(c, lower=1, overwrite_c=1)  # cannot fail: every pivot is positive
                p = np.einsum("ij,ij->j", linv, linv)
                if np.isfinite(p).all() and (p > 0).all():
                    return p
    w, V = np.linalg.eigh(block)
    return (V * V) @ (1.0 / np.maximum(w, floor))


class Objective(Protocol):
    """What the greedy asks of an objective: the gains of candidates given the pivots of a :class:`PivotedCholesky`.

    ``key_is_variance``: without costs the greedy may rank by the surrogate
    (a quantity increasing in the gain) and break ties relative to it.
    ``lazy_rows``: whether the lazy greedy may leave the Cholesky rows of
    unevaluated candidates stale.
    """

    name: str
    key_is_variance: bool
    lazy_rows: bool
    S: np.ndarray
    floor: float

    def prepare(self, state: PivotedCholesky) -> None:
        """Work shared by every candidate of one step (once per step). Entropy: O(1); MI: :math:`O(|\\bar A|^3)`."""

    def gains(self, state: PivotedCholesky, cands: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gains of ``cands`` (their rows up to date) and their surrogate keys, vector form. O(len(cands) log N)."""

    def gain(self, state: PivotedCholesky, j: int) -> tuple[float, float]:
        """Gain of one candidate and its surrogate key; brings its row up to date first. :math:`O(t^2)` worst case."""


class EntropyGain:
    """The entropy objective of Algorithm 1: the gain of ``j`` is :math:`\\tfrac12\\log(2\\pi e\\,\\sigma^2_{j|A})`.

    The surrogate key is the floored conditional variance itself, so the
    greedy step is the pivot of pivoted Cholesky (Algorithm 1's
    :math:`\\arg\\max_j d_j`). O(1) per candidate, nothing per step.
    """

    name = "entropy"
    key_is_variance = True
    lazy_rows = True

    def __init__(self, S: np.ndarray, floor: float) -> None:
        self.S, self.floor = S, floor

    def prepare(self, state: PivotedCholesky) -> None:
        """Nothing to share across the candidates of a step for the entropy objective. O(1)."""

    def gains(self, state: PivotedCholesky, cands: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Entropy gains of ``cands``; the keys are their floored variances ``d``. O(len(cands))."""
        dv = np.maximum(state.d[cands], self.floor)
        return entropy_gain(dv), dv

    def gain(self, state: PivotedCholesky, j: int) -> tuple[float, float]:
        """Entropy gain of ``j`` once its row is refreshed: :math:`O(t^2)` worst case, O(1) if up to date."""
        dj = max(state.refresh(j), self.floor)
        return entropy_gain(dj, log=math.log), dj


class MutualInformationGain:
    """The MI objective of Algorithm 2: the gain of ``j`` is :math:`\\tfrac12[\\log\\sigma^2_{j|A} + \\log P_{jj}]`.

    ``prepare`` factorizes the complement afresh at every step
    (:func:`complement_precision_diag`, :math:`O(|\\bar A|^3)`, Appendix C);
    a gain is then O(log N).  The surrogate key is the gain.  The rows stay
    eager: the complement's factorization costs more than updating them.
    """

    name = "mi"
    key_is_variance = False
    lazy_rows = False

    def __init__(self, S: np.ndarray, floor: float) -> None:
        self.S, self.floor = S, floor
        self._comp = np.zeros(0, dtype=int)
        self._P = np.zeros(0)
        self._step: tuple[int, int] | None = None

    def prepare(self, state: PivotedCholesky) -> None:
        """Factorize the complement afresh: :func:`complement_precision_diag`, :math:`O(|\\bar A|^3)` (Appendix C)."""
        self._comp = np.flatnonzero(~state.selected)
        self._P = complement_precision_diag(self.S, self._comp, self.floor)
        self._step = (id(state), state.t)

    def _precision(self, state: PivotedCholesky) -> np.ndarray:
        if self._step != (id(state), state.t):
            raise RuntimeError("MutualInformationGain: call prepare(state) at every step before asking for gains")
        return self._P

    def gains(self, state: PivotedCholesky, cands: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """MI gains of ``cands`` (Eq. mi-gain) from ``d`` and the prepared :math:`P_{jj}`. O(len(cands) log N)."""
        pc = self._precision(state)[np.searchsorted(self._comp, cands)]
        g = mi_gain(np.maximum(state.d[cands], self.floor), pc)
        return g, g

    def gain(self, state: PivotedCholesky, j: int) -> tuple[float, float]:
        """MI gain of ``j`` (Eq. mi-gain): O(log N), plus its row's refresh (:math:`O(t^2)` worst case)."""
        pj = self._precision(state)[int(np.searchsorted(self._comp, j))]
        g = mi_gain(max(state.refresh(j), self.floor), pj, log=math.log)
        return g, g


def gains_along(objective: Objective, order: Sequence[int]) -> np.ndarray:
    """The objective's marginal gain of each benchmark of ``order`` given those before it (one-candidate form).

    :math:`O(k)` steps of ``prepare`` (MI: :math:`O(kN^3)`) and eager
    :math:`O(tN)` Cholesky updates.
    """
    state = PivotedCholesky(objective.S, len(order), objective.floor)
    out = np.empty(len(order))
    for s, p in enumerate(order):
        objective.prepare(state)
        out[s] = objective.gain(state, p)[0]
        state.add(p)
    return out


def _clamped_cholesky_logpivots(S: np.ndarray, floor: float) -> np.ndarray:
    """Log of the Cholesky pivots of non-empty ``S`` in its order (LAPACK, or pivots clamped at ``floor``). O(N^3)."""
    n = S.shape[0]
    c, info = lapack.dpotrf(S, lower=1, clean=0, overwrite_a=0)
    if info == 0:
        piv = c.diagonal() ** 2
        if float(piv.min()) > floor:
            return np.log(piv)
    A = S.copy()
    out = np.empty(n)
    for i in range(n):
        p = A[i, i]
        out[i] = math.log(max(p, floor))
        if p > floor:
            col = A[i + 1 :, i] / math.sqrt(p)
            A[i + 1 :, i + 1 :] -= np.outer(col, col)
    return out


def pivot_along(S: np.ndarray, order: Sequence[int], floor: float) -> tuple[PivotedCholesky, np.ndarray]:
    """Pivoted Cholesky along ``order``: its state, and the residual trace after each pivot. O(k^2 N)."""
    state = PivotedCholesky(S, len(order), floor)
    resid = np.empty(len(order))
    for s, p in enumerate(order):
        state.add(p)
        resid[s] = float(np.maximum(state.d[~state.selected], 0.0).sum())
    return state, resid


def entropy_gains_along(S: np.ndarray, order: Sequence[int], floor: float) -> np.ndarray:
    """The entropy gain of each benchmark of ``order`` given those before it (vector form). O(k^2 N)."""
    state, _ = pivot_along(S, order, floor)
    return entropy_gain(np.maximum(np.asarray(state.pivots, dtype=float), floor))


def residual_traces(cov: object, order: Sequence[int]) -> np.ndarray:
    """Residual trace :math:`\\operatorname{tr}(\\Sigma_{\\bar A_t|A_t})` after each pivot of ``order``.

    By Lemma 1(b) it is :math:`\\operatorname{tr}(\\Sigma - L_t L_t^\\top)` over
    the benchmarks not yet pivoted (negative rounding clipped at 0); a pivot
    at or below :func:`variance_floor` updates nothing.  ``cov``: a symmetric
    PSD covariance; ``order``: distinct pivots.  O(k^2 N) for ``k = len(order)``.
    """
    S = check_covariance(cov)
    pivots = [int(i) for i in order]
    if len(set(pivots)) != len(pivots) or any(not 0 <= i < S.shape[0] for i in pivots):
        raise ValueError(f"order must list distinct indices in 0..{S.shape[0] - 1}")
    return pivot_along(S, pivots, variance_floor(S))[1]


def residual_trace_greedy(
    S: np.ndarray,
    k: int,
    *,
    initial: Sequence[int] = (),
    candidates: np.ndarray | None = None,
    floor: float | None = None,
    tie_tol: float = 1e-10,
) -> list[int]:
    """Greedy minimization of the total residual variance :math:`\\operatorname{tr}(\\Sigma_{\\bar A|A})` (Section 2).

    After the mandatory ``initial`` benchmarks, each step adds the candidate
    ``j`` that lowers the summed conditional variance of the unselected
    benchmarks most, by :math:`\\sum_{t\\notin A} R_{tj}^2 / R_{jj}` with
    :math:`R = \\Sigma_{\\bar A\\bar A|A}` (the squared error of Eq. cond-mean).
    The objective is neither submodular nor supermodular: no guarantee.  A
    candidate at or below ``floor`` (default :func:`variance_floor`) lowers
    nothing; ties (:func:`tie_threshold` with ``tie_tol``) go to the lowest
    index.  ``S`` is checked by the caller; ``candidates`` (bool, default all)
    are those the greedy may add.  Returns the mandatory benchmarks, then the
    picks (fewer than ``k`` when the candidates run out), nested in ``k``.
    O(k N^2) time, O(N^2) memory.
    """
    R = np.asarray(S, dtype=float)
    R = (R + R.T) / 2.0
    fl = variance_floor(R) if floor is None else float(floor)
    avail = np.ones(R.shape[0], dtype=bool) if candidates is None else np.asarray(candidates, dtype=bool).copy()
    order: list[int] = []

    def reveal(p: int) -> None:
        nonlocal R
        d = R[p, p]
        if d > fl:
            R = R - np.outer(R[:, p], R[p, :]) / d
        R[p, :] = 0.0
        R[:, p] = 0.0
        order.append(int(p))
        avail[p] = False

    for p in initial:
        reveal(int(p))
    while len(order) < k and avail.any():
        cands = np.flatnonzero(avail)
        d = R[cands, cands]
        live = d > fl
        score = np.zeros(cands.size)
        score[live] = (R[:, cands[live]] ** 2).sum(axis=0) / d[live]
        reveal(int(cands[first_tied(score, tie_tol)]))
    return order


def trace_order(S: np.ndarray, order: Sequence[int], floor: float) -> dict[str, np.ndarray]:
    """Pivoted Cholesky along a fixed order: entropy gains, residual fraction, logdet and MI after each step.

    :math:`O(k^2 N)`, plus for :math:`I_t` (Eq. mi-formula) one clamped
    Cholesky of :math:`\\Sigma` in the order [complement, reversed order],
    whose leading blocks are the complements :math:`\\bar A_t`,
    :math:`O(N^3)`; a :class:`~benchsel_lib.method.lowrank.LowRankCorrelation`
    of rank ``r`` uses the matrix determinant lemma, :math:`O(N r^2 + k r^3)`.
    """
    n, k = S.shape[0], len(order)
    state, resid = pivot_along(S, order, floor)
    piv = np.maximum(np.asarray(state.pivots, dtype=float), floor)
    logdet = np.cumsum(np.log(piv))
    if isinstance(S, LowRankCorrelation):
        dets = S.logdets_removing(order)
        comp_logdet, logdet_all = dets[1:], float(dets[0])
    else:
        perm = np.concatenate([np.setdiff1d(np.arange(n), order), np.asarray(order[::-1], dtype=int)])
        csum = np.concatenate([[0.0], np.cumsum(_clamped_cholesky_logpivots(S[np.ix_(perm, perm)], floor))])
        comp_logdet, logdet_all = csum[n - 1 - np.arange(k)], float(csum[n])
    # 0 once the complement is empty; fmax, as max(0.0, x), gives 0 for a NaN
    mi = np.where(np.arange(k) == n - 1, 0.0, np.fmax(0.0, 0.5 * (logdet + comp_logdet - logdet_all)))
    return {"gains": entropy_gain(piv), "residual_fraction": resid / float(S.trace()), "logdet": logdet, "mi": mi}


def log_det(cov: object, idx: Sequence[int | str], *, names: Sequence[str] | None = None) -> float:
    """Brute-force :math:`\\log\\det\\Sigma_{AA}` via ``numpy.linalg.slogdet`` (a reference), :math:`O(|A|^3)`.

    ``idx``: distinct positions or, with ``names``, benchmark names.  0 for an
    empty ``idx``, ``-inf`` for a singular block; ``ValueError`` for a
    malformed ``cov`` or ``idx``.
    """
    S = check_covariance(cov)
    ix = resolve_indices(list(idx), S.shape[0], names)
    if not ix:
        return 0.0
    sign, val = np.linalg.slogdet(S[np.ix_(ix, ix)])
    return float(val) if sign > 0 else -math.inf


def mutual_information(cov: object, idx: Sequence[int | str], *, names: Sequence[str] | None = None) -> float:
    """Brute-force :math:`I(X_A; X_{\\bar A})` (Eq. mi-formula) from three :func:`log_det`, :math:`O(N^3)`.

    Arguments and errors as :func:`log_det`; 0 when ``A`` or its complement is
    empty; no variance floor, so a singular ``cov`` may give inf or NaN.
    """
    S = check_covariance(cov)
    n = S.shape[0]
    ix = resolve_indices(list(idx), n, names)
    if not ix or len(ix) == n:
        return 0.0
    return 0.5 * (log_det(S, ix) + log_det(S, sorted(set(range(n)) - set(ix))) - log_det(S, list(range(n))))
