"""The EM estimate of mean and covariance under missing scores (Appendix G, Section 3).

* :func:`em_covariance` -- the EM algorithm of Appendix G with Ledoit-Wolf
  shrinkage and PSD projection for rank-deficient / sparse matrices.
* :func:`em_settings` -- the settings of the paper's two configurations.

Rows are grouped by missingness pattern; each pattern uses the cheaper of two
exact forms: the *observed-block form* (Cholesky of ``Sigma_oo``, Eqs.
em-emean, em-ecov as written) or the *precision form* (with ``P = Sigma^{-1}``
the conditional covariance of the missing block is ``inv(P_mm)`` and the mean
``mu_m - inv(P_mm) P_mo (x_o - mu_o)``). Patterns are bucketed by padded block
size and inverted with one LAPACK ``potrf`` + ``potri`` pair each; observed-
block rows contribute ``n Sigma - Sigma (sum_i K_i) Sigma`` to the correction
(``K_i``: ``inv(Sigma_oo)`` scattered into N x N). Per iteration
``O(M N^2 + N^3 + sum_p s_p^3)`` instead of ``O(M N^3)``.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import scipy.linalg as _sla
from scipy.linalg import lapack as _lapack

from .._checks import check_data_matrix, check_int
from .covariance import observed_mean, pairwise_covariance

__all__ = ["EMResult", "em_covariance", "em_settings", "CV_TOL", "FULL_TOL", "psd_floor", "shrink"]


LOG_2PI = float(np.log(2.0 * np.pi))


def psd_floor(
    S: np.ndarray, eps: float, *, certify: bool = True, spectrum: bool = False
) -> np.ndarray | tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """Clamp the eigenvalues of symmetric ``S`` below ``eps`` up to ``eps``.

    A Cholesky test of ``S - eps I`` (skipped with ``certify=False``) returns
    ``S`` itself when nothing needs clamping. With ``spectrum=True`` returns
    ``(out, (max(w, eps), V))``, the second item None when the test passed.
    O(N^3) with a small constant.
    """
    N = S.shape[0]
    if certify:
        _, info = _lapack.dpotrf(S - eps * np.eye(N), lower=1, clean=0)
        if info == 0:
            return (S, None) if spectrum else S
    w, V = _sla.eigh(S, driver="evd", check_finite=False)
    low = w < eps
    n_low = int(low.sum())
    out = S
    if 0 < 2 * n_low <= N:
        Vl = V[:, low]
        out = S + (Vl * (eps - w[low])) @ Vl.T
    elif n_low:  # most eigenvalues on the floor: eps I + V_high diag(w_high - eps) V_high^T
        Vh = V[:, ~low]
        out = (Vh * (w[~low] - eps)) @ Vh.T
        out[np.diag_indices(N)] += eps
    if out is not S:
        out = (out + out.T) / 2.0
    return (out, (np.maximum(w, eps), V)) if spectrum else out


def shrink(S: np.ndarray, alpha: float) -> np.ndarray:
    """Linear shrinkage ``(1 - alpha) S + alpha (tr(S)/N) I`` (Ledoit-Wolf form). O(N^2); O(1) for ``alpha <= 0``."""
    if alpha <= 0.0:
        return S
    N = S.shape[0]
    return (1.0 - alpha) * S + alpha * (np.trace(S) / N) * np.eye(N)


_BUCKET_COST = 1.5e5  # modelled per-bucket overhead of the E-step, in s^3 flop units
#: most elements of one chunk's stack of s x s blocks (or ``_CHUNK_N2`` N^2 when bigger)
_CHUNK_ELEMS = 1 << 20
_CHUNK_N2 = 4


@dataclass
class _Group:
    """Patterns padded to one block size ``s`` (both kinds), processed in chunks. Memory O(R s + G s)."""

    idx: np.ndarray  # (G, s) block indices; pads point to distinct dummy indices >= N
    n: np.ndarray  # (G,) number of rows per pattern
    offset: np.ndarray  # (G,) 0 for observed-block patterns, Na*Na for precision-form ones
    rows: np.ndarray  # (R,) rows in these patterns, sorted by pattern
    rpos: np.ndarray  # (R,) position of each row's pattern within the group (non-decreasing)
    flat_rows: np.ndarray  # (R, s) flat indices rows*Na + idx[rpos] into an (M, Na) array
    flat_src: np.ndarray  # (R, s) flat_rows, offset by M*Na for precision-form rows ([D, DP] stacked)
    upper: np.ndarray  # (s, s) bool, upper triangle incl. diagonal
    chunks: list[tuple[int, int, int, int]]  # (p0, p1, r0, r1): patterns and rows of each chunk
    one_row: bool  # every pattern has exactly one row (rpos is the identity)


@dataclass
class _Plan:
    groups: list[_Group]
    n_pad: int  # number of dummy indices
    n_obs_per_row: np.ndarray  # (M,)
    n_patterns: int
    obs_rows: np.ndarray  # rows of observed-block patterns
    mis_rows: np.ndarray  # rows of precision-form patterns
    uses_P: np.ndarray  # (M,) float: 1 for precision-form and complete rows, else 0
    sign: np.ndarray  # (M,) +1 observed-block, -1 precision form, 0 complete rows
    p_rows: np.ndarray  # rows that need P d_i (precision-form and complete rows)
    chunk_elems: int  # the block budget of one chunk (elements)


def _chunks(n: np.ndarray, s: int, budget: int) -> list[tuple[int, int, int, int]]:
    """Cut a group's patterns (row counts ``n``) into chunks of at most ``budget`` block elements. O(G)."""
    per = max(1, budget // max(s * s, 1))
    G = n.size
    starts = np.concatenate([[0], np.cumsum(n.astype(np.int64))])
    return [(p0, min(p0 + per, G), int(starts[p0]), int(starts[min(p0 + per, G)])) for p0 in range(0, G, per)]


def _bucket_sizes(size_of: dict[int, int]) -> list[tuple[int, list[int]]]:
    """Partition patterns into padded buckets minimizing ``sum_b n_b s_b^3 + _BUCKET_COST`` (DP, O(K^2))."""
    cnt = Counter(size_of.values())
    sizes = sorted(cnt)
    K = len(sizes)
    best = [0.0] + [np.inf] * K
    cut = [0] * (K + 1)
    for j in range(1, K + 1):
        smax = sizes[j - 1]
        n_in = 0
        for i in range(j, 0, -1):
            n_in += cnt[sizes[i - 1]]
            c = best[i - 1] + n_in * float(smax) ** 3 + _BUCKET_COST
            if c < best[j]:
                best[j], cut[j] = c, i - 1
    bounds = []
    j = K
    while j > 0:
        bounds.append((sizes[cut[j]], sizes[j - 1]))
        j = cut[j]
    return [(hi, sorted(p for p, s in size_of.items() if lo <= s <= hi)) for lo, hi in sorted(bounds)]


def _make_plan(obs: np.ndarray) -> _Plan:
    """Group the rows by missingness pattern, choose a form per pattern and bucket them. O(M N log M)."""
    M, N = obs.shape
    chunk_elems = max(_CHUNK_ELEMS, _CHUNK_N2 * N * N)
    keys, inverse, counts = np.unique(obs, axis=0, return_inverse=True, return_counts=True)
    inverse = np.asarray(inverse).reshape(-1)
    n_obs_pat = keys.sum(axis=1)
    pat_full = n_obs_pat == N
    pat_is_mis = (~pat_full) & (n_obs_pat >= N - n_obs_pat)
    size_of = {p: int(n_obs_pat[p] if not pat_is_mis[p] else N - n_obs_pat[p])
               for p in np.flatnonzero(~pat_full).tolist()}
    buckets = _bucket_sizes(size_of)
    n_pad = max((s - size_of[p] for s, pats in buckets for p in pats), default=0)
    Na = N + n_pad
    order = np.argsort(inverse, kind="stable")  # rows sorted by pattern
    row_start = np.concatenate([[0], np.cumsum(counts)])
    row_mis = pat_is_mis[inverse]
    row_full = pat_full[inverse]
    groups: list[_Group] = []
    for s, pats in buckets:
        pats_a = np.asarray(pats, dtype=np.intp)
        G = pats_a.size
        idx = np.empty((G, s), dtype=np.intp)
        for g, p in enumerate(pats):
            real = np.flatnonzero(~keys[p] if pat_is_mis[p] else keys[p])
            idx[g, : real.size] = real
            idx[g, real.size :] = N + np.arange(s - real.size)
        n = counts[pats_a]
        rows = np.concatenate([order[row_start[p]:row_start[p + 1]] for p in pats])
        rpos = np.repeat(np.arange(G, dtype=np.intp), n)
        flat_rows = rows[:, None] * Na + idx[rpos]
        groups.append(
            _Group(
                idx=idx,
                n=n.astype(float),
                offset=np.where(pat_is_mis[pats_a], Na * Na, 0).astype(np.intp),
                rows=rows,
                rpos=rpos,
                flat_rows=flat_rows,
                flat_src=flat_rows + (row_mis[rows] * (M * Na))[:, None],
                upper=np.triu(np.ones((s, s), dtype=bool)),
                chunks=_chunks(n, s, chunk_elems),
                one_row=bool((n == 1).all()),
            )
        )
    obs_rows = np.flatnonzero(~row_mis & ~row_full)
    mis_rows = np.flatnonzero(row_mis)
    p_rows = np.flatnonzero(row_mis | row_full)
    sign = np.where(row_full, 0.0, np.where(row_mis, -1.0, 1.0))
    return _Plan(groups, n_pad, obs.sum(axis=1), int(keys.shape[0]), obs_rows, mis_rows,
                 (row_mis | row_full).astype(float), sign, p_rows, int(chunk_elems))


class _NotPD(Exception):
    pass


def _batched_inv_logdet(A: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverses of a stack of SPD blocks (overwritten) and their log-determinants; potrf + potri per block."""
    G, s, _ = A.shape
    diag = np.empty((G, s))
    potrf, potri = _lapack.dpotrf, _lapack.dpotri
    for g, Ag in enumerate(A):
        c, info = potrf(Ag.T, lower=1, clean=0, overwrite_a=1)
        if info != 0:
            raise _NotPD
        diag[g] = c.diagonal()
        c, info = potri(c, lower=1, overwrite_c=1)
        if info != 0:
            raise _NotPD
        if not np.may_share_memory(c, Ag):  # LAPACK wrapper copied after all (a copy is a fresh buffer)
            Ag[...] = c.T
    if not (np.isfinite(diag).all() and (diag > 0).all()):
        raise _NotPD
    Q = np.where(upper, A, A.transpose(0, 2, 1))
    if not np.isfinite(Q).all():
        raise _NotPD
    return Q, 2.0 * np.log(diag).sum(axis=1)


def _solve_blocks(plan: _Plan, SPflat: np.ndarray, DDflat: np.ndarray, M: int,
                  Na: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """The E-step's per-pattern solves, group by group and chunk by chunk (may raise ``_NotPD``).

    ``SPflat`` and ``DDflat`` are the flattened stacks [Sigma_a, P_a] and [D, DP] of :func:`_e_step` (``Na``
    columns with the padding).  Returns ``V`` (row i: ``Q g_i`` scattered, flattened), ``g_i^T Q g_i`` and the
    block log-determinant of each row, and the inverses weighted by their row counts, scattered into a
    flattened stack like ``SPflat`` (None without groups).  O(sum over patterns of s^3, plus s^2 a row).
    """
    NN = Na * Na
    V = np.zeros(M * Na)  # row i: Q g_i scattered (K_i d_i, resp. inv(P_mm) (P d_i)_m)
    qv = np.zeros(M)
    ld_row = np.zeros(M)
    scatter = np.zeros(2 * NN) if plan.groups else None
    for g in plan.groups:
        for p0, p1, r0, r1 in g.chunks:
            ix = g.idx[p0:p1]
            blocks = ix[:, :, None] * Na + ix[:, None, :] + g.offset[p0:p1, None, None]  # (c, s, s)
            Q, ld = _batched_inv_logdet(SPflat[blocks], g.upper)
            scatter += np.bincount(blocks.reshape(-1), weights=(Q * g.n[p0:p1, None, None]).reshape(-1),
                                   minlength=2 * NN)
            step = r1 - r0 if g.one_row else max(1, plan.chunk_elems // g.idx.shape[1] ** 2)
            for a in range(r0, r1, step):  # rows in sub-chunks: the gathered Q stays within the budget
                b = min(a + step, r1)
                gv = DDflat[g.flat_src[a:b]]
                Qr = Q if g.one_row else Q[g.rpos[a:b] - p0]
                v = np.matmul(Qr, gv[:, :, None])[:, :, 0]
                rows = g.rows[a:b]
                qv[rows] = np.einsum("rs,rs->r", v, gv)
                ld_row[rows] = ld if g.one_row else ld[g.rpos[a:b] - p0]
                V[g.flat_rows[a:b]] = v
    return V, qv, ld_row, scatter


def _e_step(
    X0: np.ndarray,
    obs: np.ndarray,
    plan: _Plan,
    mu: np.ndarray,
    S: np.ndarray,
    spec: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """One E-step: completed matrix (Eq. em-emean), ``sum_i C_i`` (Eq. em-ecov), log-likelihood; may raise ``_NotPD``."""
    M, N = X0.shape
    Na = N + plan.n_pad
    NN = Na * Na
    # stacked [D, DP]: D = x - mu (0 where missing), DP row i = P d_i
    DD = np.zeros((2, M, Na))
    D = DD[0]
    D[:, :N] = np.where(obs, X0 - mu, 0.0)
    SP = np.zeros((2, Na, Na))  # stacked [Sigma_a, P_a]
    SP[0, :N, :N] = S
    pad = np.arange(N, Na)  # unit diagonal at the padding (none without it)
    SP[:, pad, pad] = 1.0
    logdet_S = 0.0
    dPd = np.zeros(M)  # d_i^T P d_i of the rows that need P, 0 for the others
    if plan.p_rows.size:  # precision-form or complete rows need P = Sigma^{-1}
        if spec is not None:  # S = V diag(w) V^T from the PSD floor (all w >= eps > 0)
            w, V = spec
            P = (V / w) @ V.T
            P = (P + P.T) / 2.0
            logdet_S = float(np.log(w).sum())
        else:
            L, info = _lapack.dpotrf(S, lower=1, clean=1)
            if info != 0:
                raise _NotPD
            logdet_S = 2.0 * float(np.log(np.diag(L)).sum())
            Pl, info = _lapack.dpotri(L, lower=1)
            if info != 0:
                raise _NotPD
            P = Pl + Pl.T  # L was factorized with clean=1: Pl's strict upper triangle is zero
            P[np.diag_indices(N)] = np.diagonal(Pl)
        SP[1, :N, :N] = P
        pr = plan.p_rows
        DPr = D[pr, :N] @ P
        DD[1, pr, :N] = DPr
        dPd[pr] = np.einsum("ij,ij->i", DPr, D[pr, :N])

    V, qv, ld_row, scatter = _solve_blocks(plan, SP.reshape(-1), DD.reshape(-1), M, Na)
    V = V.reshape(M, Na)[:, :N]
    Xc = X0.copy()
    corr = np.zeros((N, N))
    orow, mrow = plan.obs_rows, plan.mis_rows
    if orow.size:
        Xc[orow] = np.where(obs[orow], X0[orow], mu + V[orow] @ S)
        K = scatter[:NN].reshape(Na, Na)[:N, :N]
        corr += float(orow.size) * S - S @ K @ S
    if mrow.size:
        Xc[mrow] = np.where(obs[mrow], X0[mrow], mu - V[mrow])
        corr += scatter[NN:].reshape(Na, Na)[:N, :N]
    corr = (corr + corr.T) / 2.0
    quad = plan.sign * qv + plan.uses_P * dPd
    logdet = ld_row + plan.uses_P * logdet_S
    ll = -0.5 * float((plan.n_obs_per_row * LOG_2PI + logdet + quad).sum())
    return Xc, corr, ll


def _em_map(X0, obs, plan, mu, S, ridge, spec=None):
    """E-step + M-step (Eqs. em-mstep-mu, em-mstep-sigma), with a ridge fallback."""
    M, N = X0.shape
    scale = max(float(np.trace(S)) / N, np.finfo(float).tiny)
    r = 0.0
    while True:
        try:
            # the floor's spectrum describes S itself, not the ridged S + r I
            Xc, corr, ll = _e_step(X0, obs, plan, mu, *((S, spec) if r == 0.0 else (S + r * np.eye(N), None)))
            break
        except _NotPD:
            r = ridge * scale if r == 0.0 else r * 10.0
            if r > scale:
                raise np.linalg.LinAlgError("covariance is numerically singular; EM cannot proceed") from None
    mu_new = Xc.mean(axis=0)
    R = Xc - mu_new
    S_new = (R.T @ R + corr) / M
    S_new = (S_new + S_new.T) / 2.0
    return mu_new, S_new, ll, Xc


@dataclass(frozen=True)
class EMResult:
    """Result of :func:`em_covariance`.

    Attributes
    ----------
    mean : np.ndarray (N,)
        Estimated mean ``mu``.
    cov : np.ndarray (N, N)
        Estimated covariance (after the post-hoc shrinkage when it applies).
    n_iter : int
        Number of EM updates (E-step + M-step) performed.
    converged : bool
        Whether the relative Frobenius change fell below ``tol``.
    loglik : np.ndarray (n_iter,)
        Observed-data log-likelihood ``sum_i log N(x_{i,o}; mu_o, Sigma_oo)``
        of the parameters entering each iteration.
    rel_change : np.ndarray (n_iter,)
        ``||Sigma^{t+1} - Sigma^t||_F / ||Sigma^t||_F`` per iteration.
    completed : np.ndarray (M, N)
        The data with missing entries replaced by their conditional means
        under the returned ``(mean, cov)`` (Eq. em-emean).
    shrinkage : float
        Ledoit-Wolf intensity used (0 when none).
    eps_psd : float or None
        PSD floor applied after each M-step (None: not applied).
    snapshots : tuple of (tol, mean, cov, n_iter, converged)
        For each entry of ``snapshot_tols`` of :func:`em_covariance`: the
        result a run with that (looser) tolerance returns, ``cov`` after the
        post-hoc shrinkage.
    """

    mean: np.ndarray
    cov: np.ndarray
    n_iter: int
    converged: bool
    loglik: np.ndarray
    rel_change: np.ndarray
    completed: np.ndarray
    shrinkage: float
    eps_psd: float | None
    n_patterns: int = field(default=0)
    snapshots: tuple[tuple[float, np.ndarray, np.ndarray, int, bool], ...] = field(default=())


def em_covariance(
    X: np.ndarray,
    *,
    max_iter: int = 1000,
    tol: float = 1e-6,
    shrinkage: Literal["auto"] | float | None = "auto",
    eps_psd: float | None = 1e-3,
    init: Literal["pairwise"] | tuple[np.ndarray, np.ndarray] = "pairwise",
    ridge: float = 1e-10,
    accelerate: Literal["squarem"] | None = None,
    snapshot_tols: Sequence[float] = (),
) -> EMResult:
    """EM estimate of a Gaussian mean and covariance under missingness (Appendix G).

    Parameters
    ----------
    X : array_like of shape (M, N)
        Scores (usually standardized) with NaN for missing entries; missing
        values are treated as missing at random.
    max_iter : int
        Maximum number of EM iterations.
    tol : float
        Stop when ``||Sigma^{t+1} - Sigma^t||_F / ||Sigma^t||_F < tol``.
    shrinkage : "auto", float or None
        Ledoit-Wolf linear shrinkage ``Sigma <- (1 - a) Sigma + a (tr Sigma / N) I``
        applied to the initial estimate and once more after convergence.
        ``"auto"`` uses ``a = (N - M) / N`` when ``M < N`` and no shrinkage
        otherwise (Appendix G, "Rank deficiency and sparsity"); a float in
        [0, 1) is used as given; None disables it.
    eps_psd : float or None
        Eigenvalue floor of the PSD projection applied after every M-step
        (None: no projection, plain EM). The initial pairwise estimate is
        always projected, with floor ``eps_psd`` or, when None,
        ``1e-6 * tr(Sigma)/N``.
    init : "pairwise" or (mean, cov)
        Initialization: the pairwise estimate of Eq. (pairwise-cov) with the
        mean of Eq. (mean-missing), or a warm start ``(mean, cov)`` (then no
        initial shrinkage or projection other than the PSD floor).
    ridge : float
        Relative ridge (times ``tr(Sigma)/N``) added, and increased tenfold
        until it succeeds, when a Cholesky factorization fails.
    accelerate : "squarem" or None
        None: plain EM iterations. ``"squarem"``: SQUAREM extrapolation
        (Varadhan and Roland, 2008, scheme S3) between EM updates, an
        extrapolated point kept only where it does not lower the
        log-likelihood; it stops by the plain iteration's rule.
    snapshot_tols : sequence of float
        Looser tolerances (each ``>= tol``) whose results, bit for bit those
        of a run with that tolerance, are recorded on the way
        (``EMResult.snapshots``). Plain iteration only.

    Returns
    -------
    EMResult

    Notes
    -----
    E-step: Eqs. (em-emean), (em-ecov); M-step: Eqs. (em-mstep-mu) and
    (em-mstep-sigma), i.e. ``Sigma = (1/M) Bc^T Bc + (1/M) sum_i C_i`` with the
    conditional-covariance correction. Without shrinkage and projection every
    iteration cannot decrease the observed-data log-likelihood (tested).

    Rows are grouped by missingness pattern (module docstring). Per iteration
    ``O(M N s + N^3 + sum_p s_p^3)`` time, ``O(M N + N^2 + N sum_p s_p)``
    memory, where ``s_p = min(|observed_p|, |missing_p|)``.
    """
    A = check_data_matrix(X, min_rows=2)
    M, N = A.shape
    alpha, snap_tols = _check_em_options(M, N, max_iter=max_iter, tol=tol, eps_psd=eps_psd, ridge=ridge,
                                         shrinkage=shrinkage, accelerate=accelerate, snapshot_tols=snapshot_tols)
    obs = ~np.isnan(A)
    mu, S, floor = _em_start(A, init, eps_psd=eps_psd, alpha=alpha)
    plan = _make_plan(obs)
    run = _EMRun(np.where(obs, A, 0.0), obs, plan, ridge=ridge, eps_psd=eps_psd, max_iter=max_iter, tol=tol,
                 snap_tols=snap_tols)
    if accelerate is None:  # plain EM updates until the relative change falls below tol or max_iter are made
        converged, spec = False, None
        while not run.done and not converged:
            mu, S, _, converged, spec = run.step(mu, S, spec)
    else:
        mu, S, converged = _iterate_squarem(run, mu, S, floor)
    S = shrink(S, alpha)
    _, _, _, Xc = _em_map(run.X0, obs, plan, mu, S, ridge)
    return EMResult(
        mean=mu,
        cov=S,
        n_iter=len(run.lls),
        converged=converged,
        loglik=np.asarray(run.lls),
        rel_change=np.asarray(run.changes),
        completed=Xc,
        shrinkage=float(alpha),
        eps_psd=eps_psd,
        n_patterns=plan.n_patterns,
        snapshots=tuple((t, m_, shrink(S_, alpha), n_, c_) for t, (m_, S_, n_, c_) in run.snaps.items()),
    )


def _check_em_options(M: int, N: int, *, max_iter: int, tol: float, eps_psd: float | None, ridge: float,
                      shrinkage: Any, accelerate: Any, snapshot_tols: Sequence[float]) -> tuple[float, list[float]]:
    """Check :func:`em_covariance`'s options; return the shrinkage weight and the snapshot tolerances. O(1)."""
    check_int(max_iter, "max_iter")
    for name, value in (("tol", tol), ("eps_psd", eps_psd), ("ridge", ridge)):
        if not (name == "eps_psd" and value is None) and not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive number{' or None' * (name == 'eps_psd')}, got {value!r}")
    alpha = _shrinkage_weight(shrinkage, M, N)
    if accelerate not in (None, "squarem"):
        raise ValueError(f"unknown accelerate {accelerate!r}: use 'squarem' or None")
    snap_tols = [float(t) for t in snapshot_tols]
    for t in snap_tols:
        if not (np.isfinite(t) and t >= tol):
            raise ValueError(f"snapshot_tols must be finite and >= tol={tol!r}, got {t!r}")
    if snap_tols and accelerate is not None:
        raise ValueError("snapshot_tols needs the plain iteration (accelerate=None)")
    return alpha, snap_tols


def _shrinkage_weight(shrinkage: Any, M: int, N: int) -> float:
    """The Ledoit-Wolf weight of :func:`em_covariance`'s ``shrinkage`` ("auto": ``(N - M) / N`` if ``M < N``). O(1)."""
    if shrinkage is None:
        return 0.0
    if isinstance(shrinkage, str):
        if shrinkage != "auto":
            raise ValueError(f"unknown shrinkage {shrinkage!r}: use 'auto', a float in [0, 1) or None")
        return (N - M) / N if M < N else 0.0
    alpha = float(shrinkage)
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"shrinkage must be in [0, 1), got {shrinkage!r}")
    return alpha


def _em_start(A: np.ndarray, init: Any, *, eps_psd: float | None, alpha: float
              ) -> tuple[np.ndarray, np.ndarray, float]:
    """The starting ``(mean, cov)`` and its PSD floor (Appendix G, "Initialization"). O(M N^2 + N^3)."""
    N = A.shape[1]
    pairwise = isinstance(init, str)
    if pairwise:
        if init != "pairwise":
            raise ValueError(f"unknown init {init!r}: use 'pairwise' or a (mean, cov) tuple")
        mu = observed_mean(A)
        S = pairwise_covariance(A, mean=mu)
    else:
        try:
            mu = np.asarray(init[0], dtype=float).copy()
            S = np.asarray(init[1], dtype=float).copy()
        except (TypeError, IndexError, ValueError):
            raise ValueError("init must be 'pairwise' or a (mean, cov) tuple") from None
        if mu.shape != (N,) or S.shape != (N, N) or not (np.isfinite(mu).all() and np.isfinite(S).all()):
            raise ValueError(f"init (mean, cov) must be finite with shapes ({N},) and ({N}, {N})")
        S = (S + S.T) / 2.0
    floor = eps_psd if eps_psd is not None else 1e-6 * max(float(np.trace(S)) / N, np.finfo(float).tiny)
    S = psd_floor(S, floor)
    return mu, shrink(S, alpha) if pairwise else S, floor


class _EMRun:
    """The EM updates of one :func:`em_covariance` run and their trace (log-likelihoods, changes, snapshots)."""

    def __init__(self, X0: np.ndarray, obs: np.ndarray, plan: Any, *, ridge: float, eps_psd: float | None,
                 max_iter: int, tol: float, snap_tols: list[float]) -> None:
        self.X0, self.obs, self.plan = X0, obs, plan
        self.ridge, self.eps_psd, self.max_iter, self.tol, self.snap_tols = ridge, eps_psd, max_iter, tol, snap_tols
        self.lls: list[float] = []
        self.changes: list[float] = []
        self.snaps: dict[float, tuple[np.ndarray, np.ndarray, int, bool]] = {}
        self.floor_active = False  # was the PSD floor binding in the previous update?

    @property
    def done(self) -> bool:
        """Whether ``max_iter`` updates were made. O(1)."""
        return len(self.lls) >= self.max_iter

    def step(self, mu_in: np.ndarray, S_in: np.ndarray, spec_in: Any
             ) -> tuple[np.ndarray, np.ndarray, float, bool, Any]:
        """One EM update F(theta); records the trace; returns the converged flag and S's spectrum."""
        mu_out, S_out, ll, _ = _em_map(self.X0, self.obs, self.plan, mu_in, S_in, self.ridge, spec_in)
        spec_out = None
        if self.eps_psd is not None:
            S_floor, spec_out = psd_floor(S_out, self.eps_psd, certify=not self.floor_active, spectrum=True)
            self.floor_active = S_floor is not S_out
            S_out = S_floor
        norm = float(np.linalg.norm(S_in))
        rel = float(np.linalg.norm(S_out - S_in)) / (norm if norm > 0 else 1.0)
        self.lls.append(ll)
        self.changes.append(rel)
        for t in self.snap_tols:  # where a run with the looser tolerance t stops
            if t not in self.snaps and (rel < t or len(self.lls) >= self.max_iter):
                self.snaps[t] = (mu_out, S_out, len(self.lls), rel < t)
        return mu_out, S_out, ll, rel < self.tol, spec_out


def _iterate_squarem(run: _EMRun, mu: np.ndarray, S: np.ndarray, floor: float
                     ) -> tuple[np.ndarray, np.ndarray, bool]:
    """SQUAREM (Varadhan & Roland 2008, scheme S3) on theta = (mu, Sigma), with a log-likelihood safeguard."""
    step_max, m_step = 1.0, 4.0
    converged, spec = False, None
    while not run.done and not converged:
        mu1, S1, ll0, converged, spec1 = run.step(mu, S, spec)
        if converged or run.done:
            return mu1, S1, converged
        mu2, S2, _, converged, spec2 = run.step(mu1, S1, spec1)
        if converged or run.done:
            return mu2, S2, converged
        rm, rS = mu1 - mu, S1 - S
        vm, vS = (mu2 - mu1) - rm, (S2 - S1) - rS
        sr = float(np.sqrt(np.sum(rm**2) + np.sum(rS**2)))
        sv = float(np.sqrt(np.sum(vm**2) + np.sum(vS**2)))
        a = sr / sv if sv > 0 else 1.0
        a = max(1.0, min(step_max, a))
        ok = False  # whether the extrapolated point is kept; a = 1 keeps the plain double step
        if a > 1.0:
            mu_x = mu + 2.0 * a * rm + a * a * vm
            S_x = S + 2.0 * a * rS + a * a * vS
            S_x, spec_x = psd_floor((S_x + S_x.T) / 2.0, floor, spectrum=True)
            try:
                mu_n, S_n, ll_x, converged, spec_n = run.step(mu_x, S_x, spec_x)
                ok = np.isfinite(ll_x) and ll_x >= ll0 - 1e-8 * abs(ll0)
            except np.linalg.LinAlgError:
                pass
        if ok:
            mu, S, spec = mu_n, S_n, spec_n
        else:
            converged = False
            mu, S, spec = mu2, S2, spec2
        if a == step_max:  # longer steps next time after a kept point or a plain double step, shorter after a failure
            step_max = step_max * m_step if ok or a == 1.0 else max(1.0, step_max / m_step)
    return mu, S, converged


def em_settings(
    n_models: int,
    n_benchmarks: int,
    observed_fraction: float,
    *,
    config: Literal["released", "early"] = "released",
    context: Literal["full", "cv"] = "full",
    accelerate: Literal["auto", "squarem"] | None = "auto",
) -> dict:
    """EM settings of the paper's two configurations (Appendix G and its code release).

    Tolerances and iteration caps come from the code release
    (``smolix/benchmark-selection``); ``tol = 5e-4`` with the ``1e-3`` floor
    reproduces the 274 iterations on Merged of Appendix G and Section 5.2's
    spectrum.

    Parameters
    ----------
    n_models, n_benchmarks : int
        Size (M, N) of the (training) matrix.
    observed_fraction : float
        Fraction of observed entries in [0, 1].
    config : {"released", "early"}
        * ``"released"`` -- the later configuration. *Heavy regime* when
          ``M < N`` *or* fewer than 50% of the entries are observed: PSD
          floor ``1e-3``, at most 1000 iterations; otherwise floor ``1e-6``
          and at most 500 iterations.
        * ``"early"`` -- the earlier configuration: heavy regime only when
          ``M < N`` (floor ``1e-3``), else floor ``1e-6`` (also for sparse
          matrices); at most 500 iterations in cross-validation splits, and
          1000 (heavy) / 500 for a full-matrix estimate. The paper's
          BenchPress numbers without the logit transform (entropy 0.21, MI
          -0.11, random 0.24 at k = 5) come from this configuration.
    context : {"full", "cv"}
        What the estimate is for. ``"cv"`` -- a cross-validation training
        split (Section 5.1): tolerance ``5e-4`` in both regimes. ``"full"``
        -- a whole matrix (eigenspectrum, selection on all models,
        prediction): tolerance ``5e-4`` in the heavy regime and ``1e-6`` in
        the light one (MTEB then converges in about 300 iterations, as
        Appendix G says).
    accelerate : {"auto", "squarem"} or None
        Acceleration passed to :func:`em_covariance`. ``"auto"`` uses SQUAREM
        only where EM runs to its fixpoint (tolerance ``1e-6``); None: plain.

    Returns
    -------
    dict
        ``max_iter``, ``tol``, ``eps_psd``, ``shrinkage`` (the Ledoit-Wolf
        intensity ``(N - M)/N`` when ``M < N``, else None) and
        ``accelerate``, ready to pass to :func:`em_covariance`.

    Notes
    -----
    Complexity O(1).
    """
    M, N = (check_int(v, name) for name, v in (("n_models", n_models), ("n_benchmarks", n_benchmarks)))
    if not (0.0 <= float(observed_fraction) <= 1.0):
        raise ValueError(f"observed_fraction must be in [0, 1], got {observed_fraction!r}")
    if context not in ("full", "cv"):
        raise ValueError(f"unknown context {context!r}: use 'full' or 'cv'")
    if config == "released":
        heavy = M < N or float(observed_fraction) < 0.5
        max_iter = 1000 if heavy else 500
    elif config == "early":
        heavy = M < N
        max_iter = 500 if context == "cv" else (1000 if heavy else 500)
    else:
        raise ValueError(f"unknown config {config!r}: use 'released' or 'early'")
    tol = CV_TOL if (heavy or context == "cv") else FULL_TOL
    if accelerate not in ("auto", "squarem", None):
        raise ValueError(f"unknown accelerate {accelerate!r}: use 'auto', 'squarem' or None")
    return {
        "max_iter": max_iter,
        "tol": tol,
        "eps_psd": 1e-3 if heavy else 1e-6,
        "shrinkage": (N - M) / N if M < N else None,
        "accelerate": ("squarem" if tol <= FULL_TOL else None) if accelerate == "auto" else accelerate,
    }


#: EM tolerance (relative Frobenius change) of cross-validation splits and heavy-regime estimates
CV_TOL: float = 5e-4
#: EM tolerance of a light-regime full-matrix estimate
FULL_TOL: float = 1e-6
