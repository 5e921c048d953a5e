"""The paper's cross-validation protocol (Section 5.1) and prediction diagnostics.

Protocol (Section 5.1, with the settings of the paper's code release), implemented by
:func:`cross_validate`:

1. The ``M`` models are randomly permuted and split into ``K`` balanced folds
   (sizes differ by at most one; :func:`fold_assignments`). Each fold is the
   validation set once, so the validation set is always ~M/K models; the
   holdout fraction only shrinks the training set.
2. From the pool (the other folds) a training set of ``round((1 - p) M)``
   models is drawn by a second permutation (capped at the pool size, so at
   ``p = 10%`` with ``K = 10`` it *is* the pool). One permutation of the pool
   per fold is used for every holdout, so training sets are nested across
   holdouts (less noise when comparing holdouts).
3. Scores are standardized with the training means and standard deviations
   (``fit_standardizer(std_floor="relative")``: ``n - 1`` denominator, std
   floored at ``0.01 (|mean| + 1)``). Benchmarks with fewer than ``min_train_observed``
   (default 1) observed training scores cannot be standardized; they are left
   out of that split (neither selectable nor evaluated) and counted in
   ``n_dropped``.
4. The correlation is estimated from the training rows only
   (:func:`~benchsel_lib.estimation.estimate_correlation` with ``method=estimator``,
   ``config=config`` and ``context="cv"``: EM stops when the relative change
   of Sigma falls below ``5e-4``); one estimate per (holdout, fold) is shared
   by all selection methods.
5. Each method selects on the training correlation (one greedy run of length
   ``k_max``; greedy selections are nested, so its prefixes give every
   ``k``). The random baseline draws a fresh permutation per fold.
   ``residual_fraction``, ``logdet`` and ``mi`` are those of the selection on
   the training correlation.
6. Standardized validation scores are clipped to ``[-clip, clip]``. Each
   validation model is conditioned only on the selected benchmarks it has
   observed (Eq. cond-mean with mean 0, ridge ``1e-2`` on the observed block),
   and only its observed unselected entries are evaluated. A model that
   observes none of the selected benchmarks is not scored at that ``k``
   (``unconditioned="skip"``, as in the paper's numbers; ``"mean"`` scores
   it with the training mean instead).
7. ``r2 = 1 - SS_res / SS_tot`` over all evaluated entries of the fold, with
   ``SS_tot = sum z^2`` (predicting 0 = predicting the training mean);
   ``rmse = sqrt(SS_res / n_eval)``.

With ``transform="logit"`` (Appendix K) the correlation, selection and
imputation run on logit scores (``smax`` fitted on the training rows), the
predictions are mapped back to raw units and ``r2`` is computed in raw-score
space standardized with the training statistics.

Random streams are derived from ``seed`` with :class:`numpy.random.SeedSequence`
and fixed spawn keys: ``(0,)`` fold permutation, ``(1, fold)`` training
subsample, ``(2, fold)`` random selection, ``(3, fold)`` inner folds of the
variance inflation. ``scheme="paper"`` replaces the first three by the
streams of the paper's code release (:func:`cv_splits`), so seed 42 gives
the paper's own folds. The same seed always gives the same DataFrame.
"""
from __future__ import annotations

import functools
import hashlib
import os
import socket
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri

from ._validation import check_int
from .imputation import GaussianImputer, Imputer
from .matrix import ScoreMatrix
from .transforms import inverse_logit_transform, logit_transform

__all__ = [
    "fold_assignments",
    "cv_splits",
    "cross_validate",
    "cv_grid",
    "summarize_cv",
    "calibration_table",
    "top_residuals",
    "extrapolation_check",
    "correlation_cache",
    "tie_break_band",
    "first_pick_band",
    "variant_range",
]

_METHODS = ("entropy", "mi", "random")
_N_TOP = 3


class _Records(tuple):
    """Read-only sequence of records (dicts) kept in ``DataFrame.attrs``.

    pandas deep-copies ``attrs`` in nearly every operation on a frame
    (indexing, sorting, groupby, merge, concat); a deep copy of thousands of
    small dicts made pandas calls on CV frames take milliseconds each, and
    :func:`first_pick_band` spent most of its time there. Deep-copying this
    sequence returns the sequence itself, so the records are shared, not
    copied: treat them as read-only. ``a + b`` concatenates.
    """

    __slots__ = ()

    def __deepcopy__(self, memo: dict) -> _Records:
        return self

    def __add__(self, other: Sequence[dict]) -> _Records:  # type: ignore[override]
        return _Records(tuple(self) + tuple(other))


# --------------------------------------------------------------------------- seeds
def _check_seed(seed: object) -> int:
    return check_int(seed, "seed", minimum=0)


def _rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key)))


def _int_seed(seed: int, *key: int) -> int:
    return int(np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key)).generate_state(1)[0])


def fold_assignments(n_models: int, n_folds: int, seed: int) -> np.ndarray:
    """Assign models to ``n_folds`` balanced folds after a random permutation (Section 5.1).

    Parameters
    ----------
    n_models : int
        Number of models ``M`` (>= 2).
    n_folds : int
        Number of folds ``K``, ``2 <= K <= M``.
    seed : int
        Non-negative seed; the permutation uses the stream
        ``SeedSequence(seed, spawn_key=(0,))``.

    Returns
    -------
    ndarray of shape (M,)
        Fold label in ``0..K-1`` of each model. Fold sizes differ by at most 1
        (the permuted models are cut into ``K`` contiguous chunks with
        :func:`numpy.array_split`). Cost O(M).
    """
    if isinstance(n_models, bool) or not isinstance(n_models, (int, np.integer)) or n_models < 2:
        raise ValueError(f"n_models must be an integer >= 2, got {n_models!r}")
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) or not 2 <= n_folds <= n_models:
        raise ValueError(f"n_folds must be an integer between 2 and n_models={n_models}, got {n_folds!r}")
    perm = _rng(_check_seed(seed), 0).permutation(int(n_models))
    labels = np.empty(int(n_models), dtype=int)
    for f, chunk in enumerate(np.array_split(perm, int(n_folds))):
        labels[chunk] = f
    return labels


def _n_train(holdout: float, n_models: int) -> int:
    """``round((1 - p) M)`` with halves rounded up (the paper's nearest-integer bracket)."""
    return int(np.floor((1.0 - holdout) * n_models + 0.5 + 1e-9))


def _run_task(X, models, benchmarks, h, f, train, val, kw):
    tm: dict[str, float] = {}
    r, t = _split_rows(X, models, benchmarks, train, val, fold=f, meta={"holdout": h}, timings=tm, **kw)
    return r, t, tm


SCHEMES = ("nested", "paper")


def cv_splits(
    n_models: int, *, n_folds: int = 10, holdout: float = 0.1, seed: int = 0, scheme: str = "nested"
) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The (fold, training indices, validation indices) triples used by :func:`cross_validate`.

    Both schemes follow Section 5.1 (a random permutation cut into ``K``
    balanced folds; from the pool of the other folds a training set of
    ``min(round((1 - holdout) M), pool size)`` models drawn by a second
    permutation); they differ only in the random streams:

    * ``"nested"`` (default) -- validation set: fold ``f`` of
      :func:`fold_assignments`; training set: a prefix of one permutation of
      the pool per fold (stream ``SeedSequence(seed, spawn_key=(1, f))``), so
      training sets are nested across holdouts (less noise when holdouts are
      compared).
    * ``"paper"`` -- the layout of the paper's code release, so that a seed
      gives the paper's own folds (its experiments use seed 42): the folds
      are ``numpy.array_split(default_rng(seed).permutation(M), K)``, and the
      training set is ``default_rng((seed, f, int(holdout * 10000)))``'s
      permutation of the pool (the other folds in fold order), truncated,
      or the whole pool when it is not larger than the target size.

    Both index arrays are returned sorted. Cost O(K M).

    Raises
    ------
    ValueError
        If ``holdout`` is outside ``[0, 1)``, ``scheme`` is unknown, or fewer
        than 2 training models remain.
    """
    seed = _check_seed(seed)
    h = float(holdout)
    if not 0.0 <= h < 1.0:
        raise ValueError(f"holdout fractions must be in [0, 1), got {holdout!r}")
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}: use one of {SCHEMES}")
    if scheme == "paper":
        fold_assignments(n_models, n_folds, seed)  # validates n_models and n_folds
        chunks = np.array_split(np.random.default_rng(seed).permutation(int(n_models)), int(n_folds))
        labels = np.empty(int(n_models), dtype=int)
        for f, chunk in enumerate(chunks):
            labels[chunk] = f
    else:
        labels = fold_assignments(n_models, n_folds, seed)
    out = []
    for f in range(int(n_folds)):
        # the paper's code rounds with Python's round() (halves to even)
        target = round((1.0 - h) * int(n_models)) if scheme == "paper" else _n_train(h, int(n_models))
        n_tr = min(target, int((labels != f).sum()))
        if n_tr < 2:
            raise ValueError(f"holdout {h} leaves {n_tr} training model(s); at least 2 are needed")
        if scheme == "paper":
            pool = np.concatenate([chunks[j] for j in range(int(n_folds)) if j != f])
            train = pool if n_tr >= pool.size else np.random.default_rng((seed, f, int(h * 10000))).permutation(pool)[:n_tr]
        else:
            pool = np.flatnonzero(labels != f)
            train = pool[_rng(seed, 1, f).permutation(pool.size)[:n_tr]]
        out.append((f, np.sort(train), np.flatnonzero(labels == f)))
    return out


def _random_stream(seed: int, fold: int, holdout: float, scheme: str) -> int | np.random.Generator:
    """Seed of the random-selection baseline of one split (module docstring; ``scheme="paper"``:
    ``default_rng((seed + 7, fold, int(holdout * 10000)))`` as in the paper's code release)."""
    if scheme == "paper":
        return np.random.default_rng((seed + 7, fold, int(holdout * 10000)))
    return _int_seed(seed, 2, fold)


# --------------------------------------------------------------------------- per-split core
@dataclass
class _Space:
    """Model-space data of one split and the map back to the evaluation space."""

    fit_train: np.ndarray  # training rows in model space (raw or logit), NaN missing
    z_train: np.ndarray  # training rows standardized in model space (clipped)
    z_val: np.ndarray  # validation rows standardized in model space (clipped), conditioning inputs
    truth: np.ndarray  # validation truth standardized in evaluation space (clipped)
    to_eval: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (values, cols) model-std -> eval-std


def _standardize(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from .estimation import fit_standardizer

    st = fit_standardizer(X, std_floor="relative")
    return np.asarray(st.mean, dtype=float), np.asarray(st.std, dtype=float)


def _make_space(Xtr: np.ndarray, Xva: np.ndarray, transform: str | None, clip: float) -> _Space:
    m_raw, s_raw = _standardize(Xtr)
    truth = np.clip((Xva - m_raw) / s_raw, -clip, clip)
    if transform is None:
        ztr = np.clip((Xtr - m_raw) / s_raw, -clip, clip)
        return _Space(Xtr, ztr, truth, truth, lambda v, cols: v)
    Ftr, smax = logit_transform(Xtr)
    Fva, _ = logit_transform(Xva, smax=smax)
    m_f, s_f = _standardize(Ftr)

    def to_eval(v: np.ndarray, cols: np.ndarray) -> np.ndarray:
        raw = inverse_logit_transform(v * s_f[cols] + m_f[cols], smax[cols])
        return (raw - m_raw[cols]) / s_raw[cols]

    return _Space(
        Ftr,
        np.clip((Ftr - m_f) / s_f, -clip, clip),
        np.clip((Fva - m_f) / s_f, -clip, clip),
        truth,
        to_eval,
    )


CACHE_ENV = "BENCHSEL_CACHE_DIR"


@functools.lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """Digest of the estimator's source: a change of the code invalidates the disk cache."""
    from . import __version__, estimation

    h = hashlib.sha256(__version__.encode())
    h.update(Path(estimation.__file__).read_bytes())
    return h.hexdigest()[:16]


#: the cache folder of the process that laid out a sweep, set in its workers while they run its cells
#: (empty: read ``BENCHSEL_CACHE_DIR``), so that workers started earlier or on other machines use it too
_CACHE_ROOT: list[str | None] = []


@contextmanager
def _cache_root(root: str | None) -> Iterator[None]:
    """Use ``root`` (None: no disk cache) as the cache folder inside the block."""
    _CACHE_ROOT.append(root)
    try:
        yield
    finally:
        _CACHE_ROOT.pop()


def _disk_cache_path(X: np.ndarray, estimator: str, config: str) -> Path | None:
    """Cache file of one training correlation, or None when the disk cache is off.

    The key is a SHA-256 of the training matrix (shape and bytes, NaN
    pattern included), the estimator, the EM configuration and the
    fingerprint of the estimation code.
    """
    root = _CACHE_ROOT[-1] if _CACHE_ROOT else os.environ.get(CACHE_ENV)
    if not root:
        return None
    h = hashlib.sha256()
    h.update(repr((X.shape, str(X.dtype), estimator, config, _code_fingerprint())).encode())
    h.update(X.tobytes())
    return Path(root) / f"corr-{h.hexdigest()[:32]}.npy"


def _correlation(X: np.ndarray, estimator: str, config: str) -> np.ndarray:
    """Training correlation of one split (protocol step 4), optionally cached on disk.

    When the environment variable ``BENCHSEL_CACHE_DIR`` names a directory,
    each estimate is stored there (``.npy``, loaded with
    ``allow_pickle=False``) and reused by later runs and other processes
    (the book build sets it, so notebooks that repeat a split pay for EM
    once). Results are bit-identical to an uncached run; delete the
    directory to recompute.
    """
    from .estimation import estimate_correlation

    X = np.ascontiguousarray(X, dtype=float)
    path = _disk_cache_path(X, estimator, config)
    lock = None
    if path is not None:
        R = _cache_load(path, X.shape[1])
        if R is not None:
            return R
        lock = _cache_lock(path)
        if lock is None:  # another process computed it meanwhile
            R = _cache_load(path, X.shape[1])
            if R is not None:
                return R
    try:
        with _lock_heartbeat(lock):
            est = estimate_correlation(X, method=estimator, config=config, context="cv", std_floor="relative")
        R = np.asarray(est.corr, dtype=float)
        R = (R + R.T) / 2.0
        if path is not None:
            try:
                fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
                with os.fdopen(fd, "wb") as fh:
                    np.save(fh, R, allow_pickle=False)
                os.replace(tmp, path)  # atomic: readers see a complete file or none
            except OSError:
                pass  # a read-only or full cache directory only costs the recomputation
    finally:
        if lock is not None:
            lock.unlink(missing_ok=True)
    return R


_LOCK_WAIT_S = 900.0  # longest wait for another process's estimate (then compute it here)


def _cache_load(path: Path, n: int) -> np.ndarray | None:
    """The cached (n, n) correlation at ``path``, or None (absent or unreadable)."""
    try:
        R = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    return R if R.shape == (n, n) and np.isfinite(R).all() else None


_LOCK_BEAT_S = 30.0  # a computing process touches its lock this often (other machines see it alive)


def _lock_owner() -> str:
    return f"{socket.gethostname()} {os.getpid()}"


def _lock_is_stale(lock: Path) -> bool:
    """A lock whose owner is a dead process on this machine, or not touched for ``_LOCK_WAIT_S``."""
    try:
        age = time.time() - lock.stat().st_mtime
        owner = lock.read_text().split()
    except OSError:
        return False
    if age > _LOCK_WAIT_S:
        return True
    if len(owner) == 2 and owner[0] == socket.gethostname() and owner[1].isdigit():
        try:
            os.kill(int(owner[1]), 0)
        except ProcessLookupError:
            return True
        except OSError:  # alive under another user
            return False
    return False


def _cache_lock(path: Path) -> Path | None:
    """Claim the computation of ``path`` across processes and machines sharing the cache folder.

    Returns the lock file when this process should compute the estimate, or
    None after waiting for another process that held the lock (the caller
    then reads the file, or computes it if that process failed). The lock
    (created with ``O_EXCL``) names its owner (host and process id) and is
    touched every ``_LOCK_BEAT_S`` seconds while the estimate is computed
    (:func:`_lock_heartbeat`); a lock whose owner died on this machine, or
    that nobody touched for ``_LOCK_WAIT_S``, is stale and removed. Locks are
    held only while computing, so two processes cannot wait on each other;
    the estimate itself is written to a temporary file and renamed
    (``os.replace``), so a reader sees a complete file or none.
    """
    lock = path.with_suffix(".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    deadline = time.monotonic() + _LOCK_WAIT_S
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            with os.fdopen(fd, "w") as fh:
                fh.write(_lock_owner())
            if path.exists():  # written by the process that held the lock before
                lock.unlink(missing_ok=True)
                return None
            return lock
        except FileExistsError:
            if _lock_is_stale(lock):  # a lock left behind by a killed process
                lock.unlink(missing_ok=True)
                continue
        except OSError:
            return None
        if path.exists() or time.monotonic() > deadline:
            return None
        time.sleep(0.05)


@contextmanager
def _lock_heartbeat(lock: Path | None) -> Iterator[None]:
    """Touch ``lock`` every ``_LOCK_BEAT_S`` seconds inside the block (a long EM stays visibly alive)."""
    if lock is None:
        yield
        return
    import threading

    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(_LOCK_BEAT_S):
            try:
                os.utime(lock)
            except OSError:
                return

    t = threading.Thread(target=beat, name="benchsel-cache-lock", daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()


def _pattern_groups(pat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique rows of a boolean (v, k) pattern matrix and the inverse map (bit-packed when k <= 62)."""
    v, k = pat.shape
    if k <= 62:
        codes = pat.astype(np.int64) @ (np.int64(1) << np.arange(k, dtype=np.int64))
        uc, first, inv = np.unique(codes, return_index=True, return_inverse=True)
        return pat[first], inv.reshape(-1)
    keys, inv = np.unique(pat, axis=0, return_inverse=True)
    return keys, inv.reshape(-1)


def _gauss_predict(
    R: np.ndarray, Zv: np.ndarray, Ov: np.ndarray, sel: np.ndarray, T: np.ndarray, ridge: float
) -> tuple[np.ndarray, np.ndarray]:
    """Conditional means/variances of columns ``T`` for every validation row.

    Rows are grouped by which selected benchmarks they observe (pattern
    ``A_g``); each group needs ``(R_{A_g A_g} + ridge I)^{-1} R_{A_g T}`` (Eqs.
    cond-mean, cond-var, mean 0). All groups are solved in one batched call:
    for group ``g`` the system is embedded in ``|sel| x |sel|`` by putting the
    identity on the unobserved selected positions and zero right-hand sides
    there, which leaves the weights of the observed positions unchanged and
    makes the others exactly 0. Cost O(G k^3 + G k^2 |T| + v k |T|) for ``G``
    distinct patterns.
    """
    v = Zv.shape[0]
    k = sel.size
    dR = np.diag(R)[T]
    if v == 0:
        return np.zeros((0, T.size)), np.zeros((0, T.size))
    pat = Ov[:, sel]
    keys, inv = _pattern_groups(pat)
    Rss = R[np.ix_(sel, sel)] + ridge * np.eye(k)
    RsT = R[np.ix_(sel, T)]
    km = keys.astype(float)  # (G, k)
    S = Rss[None, :, :] * km[:, :, None] * km[:, None, :]
    S += np.eye(k)[None, :, :] * (1.0 - km)[:, :, None]
    B = RsT[None, :, :] * km[:, :, None]  # (G, k, T)
    W = np.linalg.solve(S, B)
    xs = np.where(pat, Zv[:, sel], 0.0)  # (v, k)
    pred = np.einsum("rk,rkt->rt", xs, W[inv])
    red = np.einsum("gkt,gkt->gt", B, W)  # explained variance per group
    var = dR[None, :] - red[inv]
    return pred, np.maximum(var, 1e-12)


def _imputer_predict(
    imputer: Any, R: np.ndarray, Ztr: np.ndarray, Zv: np.ndarray, Ov: np.ndarray, sel: np.ndarray, T: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    query = np.full_like(Zv, np.nan)
    query[:, sel] = np.where(Ov[:, sel], Zv[:, sel], np.nan)
    if hasattr(imputer, "predict_distribution"):
        mean, var = imputer.predict_distribution(Ztr, query, cov=R)
        mean, var = np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
    else:
        mean, var = np.asarray(imputer.predict(Ztr, query, cov=R), dtype=float), None
    if mean.shape != Zv.shape:
        raise ValueError(f"imputer {getattr(imputer, 'name', imputer)!r} returned shape {mean.shape}, expected {Zv.shape}")
    return mean[:, T], (None if var is None else np.maximum(var[:, T], 1e-12))


def _predict(
    imputer: Any, gaussian: bool, R: np.ndarray, Ztr: np.ndarray, Zv: np.ndarray, Ov: np.ndarray,
    sel: np.ndarray, T: np.ndarray, ridge: float,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Predictions (and variances, None if the imputer gives none) of targets ``T`` from ``sel``."""
    if gaussian:
        return _gauss_predict(R, Zv, Ov, sel, T, ridge)
    return _imputer_predict(imputer, R, Ztr, Zv, Ov, sel, T)


def _prefixes(sels: dict[str, Any], k_eff: int, N: int) -> Iterator[tuple[str, Any, int, np.ndarray, np.ndarray]]:
    """``(method, selection, k, selected, targets)`` for every greedy prefix ``k = 1..k_eff``.

    Greedy selections are nested, so the first ``k`` of one run of length
    ``k_eff`` is the selection of size ``k``; the targets are the rest.
    """
    for m, S in sels.items():
        order = np.asarray(S.order, dtype=int)
        for k in range(1, min(k_eff, order.size) + 1):
            sel = order[:k]
            mask = np.ones(N, dtype=bool)
            mask[sel] = False
            yield m, S, k, sel, np.flatnonzero(mask)


UNCONDITIONED = ("skip", "mean")


def _evaluated(Ov: np.ndarray, sel: np.ndarray, T: np.ndarray, unconditioned: str) -> np.ndarray:
    """Which (validation row, target) entries are scored (protocol step 6).

    Observed unselected entries are scored. Under ``unconditioned="skip"``
    (the paper's numbers) a row that observes none of the selected
    benchmarks ``sel`` is not scored at all; under ``"mean"`` it is scored
    with its prediction, the training mean. O(v |T|).
    """
    E = Ov[:, T]
    if unconditioned == "skip":
        E = E & Ov[:, sel].any(axis=1)[:, None]
    return E


def _interval_hits(
    space: _Space, pred: np.ndarray, sd: np.ndarray, T: np.ndarray, truth: np.ndarray, levels: Sequence[float]
) -> list[np.ndarray]:
    """For each level, a bool array: is the truth inside the central Gaussian interval?

    The interval ``pred +- q sd`` is built in the model's standardized space
    and mapped to the evaluation space (monotone per column, so for the logit
    transform this is the interval mapped through the inverse transform).
    """
    out = []
    for lev in levels:
        q = float(ndtri(0.5 + lev / 2.0))
        lo = space.to_eval(pred - q * sd, T)
        hi = space.to_eval(pred + q * sd, T)
        out.append((truth >= lo) & (truth <= hi))
    return out


def _select(R: np.ndarray, k: int, method: str, *, seed: int, names: list[str], tie_break: Any,
            min_observed: int | None, counts: np.ndarray, initial: Sequence[int] = ()) -> Any:
    from .selection import select

    kwargs: dict[str, Any] = dict(method=method, names=names, observed_counts=counts, initial=list(initial))
    if method == "random":
        kwargs["seed"] = seed
    if tie_break is not None:
        kwargs["tie_break"] = tie_break
    if min_observed is not None:
        kwargs["min_observed"] = min_observed
    return select(R, k, **kwargs)


def _split_rows(
    X: np.ndarray,
    models: Sequence[str],
    benchmarks: Sequence[str],
    train: np.ndarray,
    val: np.ndarray,
    *,
    methods: Sequence[str],
    k_max: int,
    estimator: str,
    config: str,
    transform: str | None,
    imputer: Any,
    tie_break: Any,
    min_observed: int | None,
    ridge: float,
    clip: float,
    levels: Sequence[float],
    variance_inflation: str | None,
    inner_folds: int,
    seed: int,
    fold: int,
    meta: dict[str, Any],
    min_train_observed: int = 1,
    timings: dict[str, float] | None = None,
    initial: Sequence[str] = (),
    scheme: str = "nested",
    unconditioned: str = "skip",
    ks: Sequence[int] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run every method on one (train, validation) split; return result rows and top-residual records.

    ``initial`` (benchmark names) are forced first picks; those left out of
    this split (too few training scores) are skipped, and rows then carry
    ``n_forced`` = how many were applied. ``unconditioned`` is the rule for
    validation models that observe none of the selected benchmarks (see
    :func:`cross_validate`).
    """
    tm = timings if timings is not None else {}
    t0 = time.perf_counter()
    Xtr_full = X[train]
    cnt_full = (~np.isnan(Xtr_full)).sum(axis=0)
    cols = np.flatnonzero(cnt_full >= max(min_train_observed, 1))
    n_dropped = X.shape[1] - cols.size
    Xtr = Xtr_full[:, cols]
    keep_tr = (~np.isnan(Xtr)).any(axis=1)
    Xtr = Xtr[keep_tr]
    Xva = X[np.ix_(val, cols)]
    names = [benchmarks[j] for j in cols]
    vnames = [models[i] for i in val]
    N = cols.size
    counts = (~np.isnan(Xtr)).sum(axis=0)
    space = _make_space(Xtr, Xva, transform, clip)
    t1 = time.perf_counter()
    R = _correlation(space.fit_train, estimator, config)
    t2 = time.perf_counter()
    tm["standardize"] = tm.get("standardize", 0.0) + (t1 - t0)
    tm["correlation"] = tm.get("correlation", 0.0) + (t2 - t1)
    Ov = ~np.isnan(Xva)
    Zv = space.z_val
    gaussian = isinstance(imputer, GaussianImputer)
    g_ridge = imputer.ridge if gaussian else ridge

    col_of = {b: i for i, b in enumerate(names)}
    init = [col_of[b] for b in initial if b in col_of]  # forced picks present in this split
    forced = np.zeros(N, dtype=bool)
    forced[init] = True
    n_cand = N if min_observed is None else int(((counts >= min_observed) | forced).sum())
    k_eff = min(k_max, N, max(n_cand, 0))
    rows: list[dict[str, Any]] = []
    tops: list[dict[str, Any]] = []
    if k_eff < 1:
        return rows, tops
    pipes = [m for m in methods if m not in _METHODS]  # "auto" and "strategy+predictor" pipelines
    methods = [m for m in methods if m in _METHODS]
    sels = {
        m: _select(R, k_eff, m, seed=_random_stream(seed, fold, meta["holdout"], scheme), names=names,
                   tie_break=tie_break,
                   min_observed=min_observed, counts=counts, initial=init)
        for m in methods
    }
    t3 = time.perf_counter()
    tm["selection"] = tm.get("selection", 0.0) + (t3 - t2)
    infl: dict[str, np.ndarray] = {}
    if levels and variance_inflation:
        infl = _inflation(space, R, sels, k_eff, estimator=estimator, config=config, ridge=g_ridge,
                          imputer=imputer, gaussian=gaussian, inner_folds=inner_folds,
                          rng=_rng(seed, 3, fold), unconditioned=unconditioned)
    t4 = time.perf_counter()
    tm["inflation"] = tm.get("inflation", 0.0) + (t4 - t3)
    for m, S, k, sel, T in _prefixes(sels, k_eff, N):
        if ks is not None and k not in ks:
            continue
        mi_arr = getattr(S, "mi", None)
        pred, var = _predict(imputer, gaussian, R, space.z_train, Zv, Ov, sel, T, g_ridge)
        E = _evaluated(Ov, sel, T, unconditioned)
        truth = space.truth[:, T]
        pe = space.to_eval(pred, T)
        res2 = np.where(E, (truth - pe) ** 2, 0.0)
        ss_res = float(res2.sum())
        ss_tot = float(np.where(E, truth**2, 0.0).sum())
        n_eval = int(E.sum())
        row: dict[str, Any] = dict(meta)
        row.update(
            method=m,
            fold=fold,
            k=k,
            r2=(1.0 - ss_res / ss_tot) if n_eval and ss_tot > 0 else np.nan,
            rmse=float(np.sqrt(ss_res / n_eval)) if n_eval else np.nan,
            residual_fraction=float(S.residual_fraction[k - 1]),
            logdet=float(S.logdet[k - 1]),
            mi=float(mi_arr[k - 1]) if mi_arr is not None and len(mi_arr) >= k else np.nan,
            selected=tuple(names[j] for j in sel),
            n_eval=n_eval,
            n_train=int(Xtr.shape[0]),
            n_val=int(len(val)),
            n_dropped=int(n_dropped),
            ss_res=ss_res,
            ss_tot=ss_tot,
        )
        if len(initial):
            row["n_forced"] = len(init)
        if levels:
            if var is None:
                for lev in levels:
                    row[_cov_col(lev)] = np.nan
                row["mean_sq_z"] = np.nan
            else:
                sd = np.sqrt(var)
                hits = _interval_hits(space, pred, sd, T, truth, levels)
                for lev, h in zip(levels, hits):
                    row[_cov_col(lev)] = float(h[E].mean()) if n_eval else np.nan
                # standardized residual in the model's space (logit space for transform="logit")
                zres = (space.z_val[:, T] - pred) / sd
                row["mean_sq_z"] = float(np.mean(zres[E] ** 2)) if n_eval else np.nan
                if m in infl:
                    s = float(infl[m][k - 1])
                    row["inflation"] = s
                    hits = _interval_hits(space, pred, sd * np.sqrt(s), T, truth, levels)
                    for lev, h in zip(levels, hits):
                        row[_cov_col(lev) + "_cal"] = float(h[E].mean()) if n_eval else np.nan
        rows.append(row)
        if n_eval:
            flat = res2.ravel()
            nt = min(_N_TOP, flat.size)
            top = np.argpartition(flat, flat.size - nt)[flat.size - nt:]
            top = top[np.argsort(flat[top])[::-1]]
            for rank, t in enumerate(top):
                if flat[t] <= 0 and rank > 0:
                    break
                i, jj = divmod(int(t), T.size)
                tops.append(dict(meta, method=m, fold=fold, k=k, rank=rank + 1, model=vnames[i],
                                 benchmark=names[int(T[jj])], sq_residual=float(flat[t]),
                                 share=float(flat[t] / ss_res) if ss_res > 0 else np.nan))
    if pipes:
        from .recommend import split_rows as _pipeline_rows

        base = dict(meta, fold=fold, n_train=int(Xtr.shape[0]), n_val=int(len(val)), n_dropped=int(n_dropped))
        if len(initial):
            base["n_forced"] = len(init)
        for m in pipes:
            rows.extend(_pipeline_rows(
                m, z_train=space.z_train, z_val=Zv, truth=space.truth, to_eval=space.to_eval, R=R, k_max=k_eff,
                seed=_int_seed(seed, 6, fold), initial=init, min_observed=min_observed, levels=levels,
                unconditioned=unconditioned, names=names, base=base, ks=ks))
    tm["imputation+metrics"] = tm.get("imputation+metrics", 0.0) + (time.perf_counter() - t4)
    return rows, tops


def _cov_col(level: float) -> str:
    pct = 100.0 * level
    return f"cov_{int(round(pct))}" if abs(pct - round(pct)) < 1e-9 else f"cov_{pct:g}".replace(".", "_")


def _inflation(
    space: _Space, R_outer: np.ndarray, sels: dict[str, Any], k_eff: int, *, estimator: str, config: str,
    ridge: float, imputer: Any, gaussian: bool, inner_folds: int, rng: np.random.Generator,
    unconditioned: str = "skip",
) -> dict[str, np.ndarray]:
    """Variance-inflation factors fitted on the training rows only (inner cross-validation).

    The training rows are split into ``inner_folds`` folds; for each, the
    correlation is re-estimated on the other inner folds (same estimator;
    benchmarks with < 2 inner-training scores get an identity row/column),
    and, for the *outer* selection prefix of each ``k``, the squared
    standardized residuals ``r^2 / var`` of the inner validation rows are
    collected. The factor is their mean, so that after scaling the
    conditional variances by it the mean squared standardized residual is 1.
    Cost: ``inner_folds`` extra correlation estimates per split.
    """
    m_tr = space.fit_train.shape[0]
    labels = np.empty(m_tr, dtype=int)
    for f, chunk in enumerate(np.array_split(rng.permutation(m_tr), inner_folds)):
        labels[chunk] = f
    N = R_outer.shape[0]
    sums = {m: np.zeros(k_eff) for m in sels}
    cnts = {m: np.zeros(k_eff) for m in sels}
    for f in range(inner_folds):
        tr = labels != f
        va = labels == f
        Xin = space.fit_train[tr]
        c = (~np.isnan(Xin)).sum(axis=0)
        ok = np.flatnonzero(c >= 2)
        Xin = Xin[:, ok]
        Xin = Xin[(~np.isnan(Xin)).any(axis=1)]
        if Xin.shape[0] < 2 or ok.size == 0:
            continue
        Rin = np.eye(N)
        Rin[np.ix_(ok, ok)] = _correlation(Xin, estimator, config)
        Zv = space.z_train[va]
        Ov = ~np.isnan(Zv)
        for m, _, k, sel, T in _prefixes(sels, k_eff, N):
            pred, var = _predict(imputer, gaussian, Rin, space.z_train[tr], Zv, Ov, sel, T, ridge)
            if var is None:
                continue
            E = _evaluated(Ov, sel, T, unconditioned)
            z2 = ((Zv[:, T] - pred) ** 2 / var)[E]
            sums[m][k - 1] += z2.sum()
            cnts[m][k - 1] += z2.size
    return {m: np.where(cnts[m] > 0, sums[m] / np.maximum(cnts[m], 1), 1.0) for m in sels}


# --------------------------------------------------------------------------- public API
def _check_common(
    matrix: object, methods: Sequence[str], k_max: int, ridge: float, clip: float, transform: str | None,
    levels: Sequence[float], imputer: Any, min_observed: int | None, variance_inflation: str | None,
) -> tuple[ScoreMatrix, tuple[str, ...], tuple[float, ...], Any]:
    if not isinstance(matrix, ScoreMatrix):
        raise ValueError(f"matrix must be a ScoreMatrix, got {type(matrix).__name__}")
    matrix.require_observed()
    if isinstance(methods, str):
        methods = (methods,)
    methods = tuple(methods)
    if not methods:
        raise ValueError("methods is empty")
    for m in methods:
        if m not in _METHODS:
            try:
                from .recommend import parse_pipeline

                parse_pipeline(m)
            except ValueError as exc:
                raise ValueError(f"unknown selection method {m!r}; expected one of {_METHODS}, 'auto' or "
                                 f"'STRATEGY+PREDICTOR' ({exc})") from None
    if len(set(methods)) != len(methods):
        raise ValueError(f"methods lists a method twice: {methods}")
    check_int(k_max, "k_max")
    if not np.isfinite(ridge) or ridge < 0:
        raise ValueError(f"ridge must be a non-negative number, got {ridge!r}")
    if not np.isfinite(clip) or clip <= 0:
        raise ValueError(f"clip must be a positive number, got {clip!r}")
    if transform not in (None, "logit"):
        raise ValueError(f"unknown transform {transform!r}; expected None or 'logit'")
    levels = tuple(float(lv) for lv in levels)
    for lv in levels:
        if not 0.0 < lv < 1.0:
            raise ValueError(f"coverage levels must be in (0, 1), got {lv!r}")
    if imputer is None:
        imputer = GaussianImputer(ridge=ridge)
    elif not isinstance(imputer, Imputer):
        raise ValueError(f"imputer must implement the Imputer protocol (name, predict), got {type(imputer).__name__}")
    if min_observed is not None and (
        isinstance(min_observed, bool) or not isinstance(min_observed, (int, np.integer)) or min_observed < 0
    ):
        raise ValueError(f"min_observed must be a non-negative integer or None, got {min_observed!r}")
    if variance_inflation not in (None, False, "inner"):
        raise ValueError(f"unknown variance_inflation {variance_inflation!r}; expected None or 'inner'")
    return matrix, methods, levels, imputer


# --------------------------------------------------------------------------- cells and grids
@dataclass
class _CVPlan:
    """A validated :func:`cross_validate` call: its splits (``tasks``) and per-split options (``kw``)."""

    X: np.ndarray
    models: list[str]
    benchmarks: list[str]
    tasks: list[tuple[float, int, np.ndarray, np.ndarray]]  # (holdout, fold, train, val)
    kw: dict[str, Any]
    attrs: dict[str, Any]
    label: str


def _run_split_group(
    X: np.ndarray, models: Sequence[str], benchmarks: Sequence[str],
    members: Sequence[tuple[float, int, np.ndarray, np.ndarray, dict[str, Any]]], cache_root: str | None = None,
) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, float]]]:
    """One sweep cell: every run on one (train, validation) split, sharing its correlation estimate.

    ``cache_root`` is the disk-cache folder of the process that laid out the
    sweep (None: no disk cache), used here whatever this worker's environment.
    """
    with _cache_root(cache_root), correlation_cache():
        return [_run_task(X, models, benchmarks, h, f, tr, va, kw) for h, f, tr, va, kw in members]


def _split_cells(plans: Sequence[_CVPlan]) -> tuple[list[Any], list[list[tuple[int, int]]]]:
    """Sweep cells for the splits of ``plans``; runs on the same matrix and rows share one cell.

    Returns the cells and, per cell, the ``(plan, task)`` index of each of its
    members. The cost estimate (training rows x N^2, ten times more where EM
    runs on missing entries, times the runs in the cell) only orders the
    submission.
    """
    from .sweep import Cell

    groups: dict[tuple, list[tuple[int, int]]] = {}
    digests: dict[int, str] = {}
    for p, plan in enumerate(plans):
        key = id(plan.X)
        if key not in digests:
            digests[key] = hashlib.sha256(repr(plan.X.shape).encode() + plan.X.tobytes()).hexdigest()
        for t, (h, f, tr, va) in enumerate(plan.tasks):
            g = (digests[key], tr.tobytes(), va.tobytes())
            groups.setdefault(g, []).append((p, t))
    cells, index = [], []
    root = _CACHE_ROOT[-1] if _CACHE_ROOT else (os.environ.get(CACHE_ENV) or None)
    for members in groups.values():
        p0, t0 = members[0]
        plan = plans[p0]
        h, f, tr, va = plan.tasks[t0]
        sparse = bool(np.isnan(plan.X[tr]).any())
        cost = float(tr.size) * plan.X.shape[1] ** 2 * (10.0 if sparse else 1.0) * (1.0 + 0.2 * (len(members) - 1))
        runs = [(plans[p].tasks[t][0], plans[p].tasks[t][1], plans[p].tasks[t][2], plans[p].tasks[t][3],
                 plans[p].kw) for p, t in members]
        label = f"{plan.label} holdout={h:g} fold={f}" + (f" ({len(members)} runs)" if len(members) > 1 else "")
        cells.append(Cell(label, _run_split_group, (plan.X, plan.models, plan.benchmarks, runs, root), cost=cost))
        index.append(members)
    return cells, index


def _cv_frame(plan: _CVPlan, collected: Sequence[tuple[list, list, dict]]) -> pd.DataFrame:
    """The :func:`cross_validate` frame of one plan from its per-split results (in task order)."""
    rows: list[dict[str, Any]] = []
    tops: list[dict[str, Any]] = []
    timings: dict[str, float] = {}
    for r, t, tm in collected:
        rows.extend(r)
        tops.extend(t)
        for key, val_ in tm.items():
            timings[key] = timings.get(key, 0.0) + val_
    df = pd.DataFrame(rows)
    if len(df):
        order = ["method", "holdout", "fold", "k"]
        df = df[order + [c for c in df.columns if c not in order]]
        df = df.sort_values(["method", "holdout", "fold", "k"], kind="stable").reset_index(drop=True)
    df.attrs.update(plan.attrs)
    df.attrs["timings"] = timings
    df.attrs["top_residuals"] = _Records(tops)
    return df


def _run_plans(plans: Sequence[_CVPlan], *, n_jobs: int | None, progress: bool | None) -> list[pd.DataFrame]:
    """Run the splits of every plan as one sweep (:func:`~benchsel_lib.sweep.run_sweep`); one frame per plan."""
    from .sweep import run_sweep

    cells, index = _split_cells(plans)
    results = run_sweep(cells, n_jobs=n_jobs, progress=progress, desc="cv")
    per_plan: list[list[Any]] = [[None] * len(p.tasks) for p in plans]
    for members, res in zip(index, results):
        for (p, t), r in zip(members, res):
            per_plan[p][t] = r
    return [_cv_frame(plan, coll) for plan, coll in zip(plans, per_plan)]


def _check_n_jobs(n_jobs: object) -> None:
    from .sweep import _check_n_jobs as check

    check(n_jobs)


_GRID_EXCLUDED = ("n_jobs", "progress", "return_details")


def cv_grid(
    runs: Sequence[dict[str, Any]], *, n_jobs: int | None = None, progress: bool | None = None
) -> list[pd.DataFrame]:
    """Run several :func:`cross_validate` calls as one sweep: the grid entry point.

    Every (run, holdout, fold) split becomes a cell of one
    :func:`~benchsel_lib.sweep.run_sweep`, so the splits of several matrices,
    holdouts, methods and settings are interleaved over the workers, largest
    first. Runs on the same matrix with the same training and validation rows
    (e.g. other methods or tie-break rules with the same seed) share one cell
    and pay for the correlation estimate once.

    Parameters
    ----------
    runs : sequence of dict
        Each ``dict(matrix=..., **options)`` with the keyword options of
        :func:`cross_validate` (all but ``n_jobs``, ``progress`` and
        ``return_details``).
    n_jobs : int or None
        Workers, as in :func:`~benchsel_lib.sweep.run_sweep` (None: as
        ``joblib.parallel_config`` says; 1 = serially in this process).
    progress : bool or None
        One progress bar over all cells.

    Returns
    -------
    list of DataFrame
        ``[cross_validate(**run) for run in runs]``, bit for bit.

    Raises
    ------
    ValueError
        A run lacks ``matrix``, has an option :func:`cross_validate` does not
        take, or an option it rejects; bad ``n_jobs``.
    benchsel_lib.sweep.SweepError
        A cell failed (named in the message).
    """
    import inspect

    _check_n_jobs(n_jobs)
    allowed = set(inspect.signature(_cv_plan).parameters) - {"matrix"}
    plans = []
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or "matrix" not in run:
            raise ValueError(f"run {i} must be a dict with a 'matrix' and cross_validate options")
        opts = {k: v for k, v in run.items() if k != "matrix"}
        bad = sorted(set(opts) - allowed)
        if bad:
            where = "is set by cv_grid itself" if set(bad) & set(_GRID_EXCLUDED) else "is not an option of cross_validate"
            raise ValueError(f"run {i}: {bad[0]!r} {where}")
        plans.append(_cv_plan(run["matrix"], **opts))
    return _run_plans(plans, n_jobs=n_jobs, progress=progress)


def _cv_plan(
    matrix: ScoreMatrix,
    *,
    methods: Sequence[str] = ("entropy", "random"),
    holdouts: Sequence[float] = (0.1,),
    k_max: int = 15,
    n_folds: int = 10,
    seed: int = 0,
    estimator: str = "auto",
    config: str = "released",
    transform: str | None = None,
    imputer: Imputer | None = None,
    tie_break: Any = "auto",
    min_observed: int | None = None,
    initial: Sequence[int | str] = (),
    ridge: float = 1e-2,
    clip: float = 10.0,
    levels: Sequence[float] = (),
    variance_inflation: str | None = None,
    inner_folds: int = 3,
    min_train_observed: int = 1,
    scheme: str = "nested",
    unconditioned: str = "skip",
    ks: Sequence[int] | None = None,
) -> _CVPlan:
    """Validate the options of :func:`cross_validate` and lay out its (holdout, fold) splits."""
    matrix, methods, levels, imputer = _check_common(
        matrix, methods, k_max, ridge, clip, transform, levels, imputer, min_observed, variance_inflation
    )
    seed = _check_seed(seed)
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}: use one of {SCHEMES}")
    if unconditioned not in UNCONDITIONED:
        raise ValueError(f"unknown unconditioned rule {unconditioned!r}: use one of {UNCONDITIONED}")
    hs = tuple(float(h) for h in ([holdouts] if np.isscalar(holdouts) else holdouts))
    if not hs:
        raise ValueError("holdouts is empty")
    for h in hs:
        if not 0.0 <= h < 1.0:
            raise ValueError(f"holdout fractions must be in [0, 1), got {h!r}")
    if len(set(hs)) != len(hs):
        raise ValueError(f"holdouts lists a fraction twice: {hs}")
    check_int(inner_folds, "inner_folds", minimum=2)
    from ._validation import resolve_indices

    init_names = tuple(matrix.benchmarks[j] for j in
                       resolve_indices(initial, len(matrix.benchmarks), matrix.benchmarks, what="initial benchmark"))
    if len(init_names) > k_max:
        raise ValueError(f"initial lists {len(init_names)} benchmarks, more than k_max={k_max}")
    if ks is not None:
        ks_in = list(ks) if not np.isscalar(ks) else [ks]
        if not ks_in or not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and 1 <= k <= k_max
                                for k in ks_in):
            raise ValueError(f"ks={ks!r} is out of range: give subset sizes in 1..k_max={k_max}")
        ks = tuple(sorted({int(k) for k in ks_in}))
    X = np.asarray(matrix.scores, dtype=float)
    M = X.shape[0]
    splits = {h: cv_splits(M, n_folds=n_folds, holdout=h, seed=seed, scheme=scheme) for h in hs}
    tasks = [(h, f, tr, va) for h in hs for (f, tr, va) in splits[h]]
    kw = dict(methods=methods, k_max=int(k_max), estimator=estimator, config=config, transform=transform,
              imputer=imputer, tie_break=tie_break, min_observed=min_observed, ridge=ridge, clip=clip,
              levels=levels, variance_inflation=variance_inflation or None, inner_folds=int(inner_folds),
              seed=seed, min_train_observed=int(min_train_observed), initial=init_names, scheme=scheme,
              unconditioned=unconditioned, ks=ks)
    attrs = dict(source=matrix.source, shape=matrix.shape, seed=seed, n_folds=int(n_folds), estimator=estimator,
                 config=config, transform=transform, imputer=getattr(imputer, "name", type(imputer).__name__),
                 ridge=ridge, clip=clip, levels=levels, min_observed=min_observed, initial=init_names,
                 scheme=scheme, unconditioned=unconditioned)
    return _CVPlan(X=X, models=list(matrix.models), benchmarks=list(matrix.benchmarks), tasks=tasks, kw=kw,
                   attrs=attrs, label=str(matrix.source or "matrix"))


def cross_validate(
    matrix: ScoreMatrix,
    *,
    methods: Sequence[str] = ("entropy", "random"),
    holdouts: Sequence[float] = (0.1,),
    k_max: int = 15,
    n_folds: int = 10,
    seed: int = 0,
    estimator: str = "auto",
    config: str = "released",
    transform: str | None = None,
    imputer: Imputer | None = None,
    tie_break: Any = "auto",
    min_observed: int | None = None,
    initial: Sequence[int | str] = (),
    ridge: float = 1e-2,
    clip: float = 10.0,
    levels: Sequence[float] = (),
    variance_inflation: str | None = None,
    inner_folds: int = 3,
    min_train_observed: int = 1,
    scheme: str = "nested",
    unconditioned: str = "skip",
    ks: Sequence[int] | None = None,
    n_jobs: int | None = None,
    progress: bool | None = None,
    return_details: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """K-fold cross-validation of selection + imputation, exactly as Section 5.1.

    See the module docstring for the protocol rules. One correlation estimate
    per (holdout, fold) is shared by all methods, and one selection run of
    length ``k_max`` per method and fold serves every ``k`` (greedy
    selections are nested; the random baseline is a permutation prefix).

    Parameters
    ----------
    matrix : ScoreMatrix
        Models x benchmarks; every row and column needs an observation. For
        the model-selection dual pass ``matrix.transpose()``.
    methods : sequence of {"entropy", "mi", "random"}
    holdouts : sequence of float
        Holdout fractions ``p`` in ``[0, 1)``; training size ``round((1-p) M)``
        capped at the pool size.
    k_max : int
        Largest subset size; capped at the number of usable benchmarks (and of
        candidates when ``min_observed`` filters).
    ks : sequence of int, optional
        Report only these subset sizes (each in ``1..k_max``; default every
        ``k = 1..k_max``).  Selections still run to ``k_max`` (the greedy
        prefixes are the same); the imputation and, for pipelines, the inner
        cross-validation are skipped at the other sizes.
    n_folds : int
        ``K`` (10 in the paper).
    seed : int
        Non-negative; all random streams derive from it (module docstring).
    estimator : {"auto", "pairwise", "em"}
        Passed to ``estimate_correlation(method=...)``.
    config : {"released", "early"}
        EM settings passed to ``estimate_correlation``.
    transform : None or "logit"
        Appendix K pipeline (r2 in raw-score standardized space).
    imputer : Imputer, optional
        Default :class:`~benchsel_lib.imputation.GaussianImputer` with
        ``ridge`` (vectorized fast path). Any object with ``name`` and
        ``predict(train, query, *, cov)`` is accepted.
    tie_break, min_observed
        Passed to :func:`~benchsel_lib.selection.select`; ``min_observed``
        counts training models with the benchmark observed (None = no
        filter, the paper).
    initial : sequence of str or int
        Mandatory benchmarks (names or column indices of ``matrix``), forced
        as the first picks of every method in the given order (passed to
        ``select(initial=...)``, paper Section 6; :func:`first_pick_band`
        forces one first pick per run). A forced benchmark
        that a split leaves out (fewer than ``min_train_observed`` training
        scores, so it cannot be standardized or correlated) is skipped in
        that split and greedy runs without it; the rows then get a column
        ``n_forced`` (forced picks applied in that split). Forced picks are
        never removed by ``min_observed``. At most ``k_max`` entries.
    ridge : float
        Ridge on the conditioning block (``1e-2``).
    clip : float
        Standardized validation scores are clipped to ``[-clip, clip]``
        (both the conditioning inputs and the evaluated truth).
    levels : sequence of float
        Nominal levels for interval coverage, e.g. ``(0.5, 0.8, 0.9, 0.95)``.
        For each, column ``cov_50`` etc. holds the fraction of evaluated
        entries inside the central Gaussian interval
        ``pred +- z_{(1+L)/2} sqrt(var)`` with ``var`` the conditional
        variance (Eq. cond-var, ridge included) in standardized space (for
        ``transform="logit"`` the interval is built in logit space and mapped
        back). ``mean_sq_z`` is the mean of ``r^2 / var`` (1 when calibrated).
        Imputers without ``predict_distribution`` give NaN coverage.
    variance_inflation : None or "inner"
        A documented calibration fix: ``"inner"`` fits, per split and using
        training rows only, a factor ``s`` (``inner_folds``-fold inner CV,
        mean of ``r^2 / var`` = 1 after scaling) per method and ``k``;
        adds ``inflation`` and ``cov_50_cal`` etc. columns.
    inner_folds : int
        Inner folds for ``variance_inflation="inner"``.
    min_train_observed : int
        Benchmarks with fewer observed training scores are left out of a
        split (default 1: only benchmarks no training model has; the paper
        states no such rule).
    scheme : {"nested", "paper"}
        Random layout of folds and training sets, see :func:`cv_splits`.
        ``"paper"`` gives the paper's own folds for its seed (42) and draws
        the random baseline from ``default_rng((seed + 7, fold,
        int(holdout * 10000)))`` as its code does.
    unconditioned : {"skip", "mean"}
        What happens to a validation model that observes none of the
        selected benchmarks. Section 5.1 says each model is conditioned "only
        on selected benchmarks observed for that validation model"; for a
        model with none there is nothing to condition on, and the text admits
        two readings. ``"skip"`` (default): the model is not scored at that
        ``k``, which is how the paper's numbers are computed (its code skips
        such models). ``"mean"``: it is predicted by the training mean (0 in
        standardized space) and scored, which lowers R^2 on sparse matrices
        (Merged, BenchPress), where small selections often miss a model.
    n_jobs : int or None
        Workers over the (holdout, fold) splits, through
        :func:`~benchsel_lib.sweep.run_sweep` (joblib): ``1`` runs serially in
        this process, ``N > 1`` in ``N`` loky processes with one BLAS thread
        each, ``None`` (default) as the active ``joblib.parallel_config``
        says (serial when none is set; inside
        ``joblib.parallel_config(backend="dask")`` or
        :func:`~benchsel_lib.sweep.dask_backend` on every worker of the Dask
        cluster). Results do not depend on the backend or the number of
        workers, bit for bit: every random stream is keyed by seed, holdout
        and fold. A failing split raises
        :class:`~benchsel_lib.sweep.SweepError` naming it.
    progress : bool or None
        Progress bar (None: only in a terminal or notebook; False: silent).
    return_details : bool
        Also return the top-residual frame (see below).

    Returns
    -------
    pandas.DataFrame
        One row per (method, holdout, fold, k): ``method, holdout, fold, k,
        r2, rmse, residual_fraction, logdet, mi, selected, n_eval, n_train,
        n_val, n_dropped, ss_res, ss_tot`` (+ coverage columns).
        ``df.attrs["top_residuals"]`` is a read-only sequence of records (one per
        (method, holdout, fold, k, rank), rank 1..3) with ``model,
        benchmark, sq_residual, share`` -- the largest squared standardized
        residual contributors, so a collapsing fold is visible; see
        :func:`top_residuals`. ``df.attrs["timings"]`` holds the seconds
        spent per stage (standardize, correlation, selection, inflation,
        imputation+metrics; summed over splits and workers). With
        ``return_details=True`` a tuple ``(df, top_residuals_frame)``.

    Notes
    -----
    Cost per (holdout, fold): one correlation estimate (EM: O(iter M N^3)
    worst case), one selection per method (O(k N^2) entropy), and per ``k``
    one Cholesky + solve per distinct observed-selected pattern
    (O(k^3 + k^2 N)) plus O(v N) evaluation.
    """
    _check_n_jobs(n_jobs)
    plan = _cv_plan(
        matrix, methods=methods, holdouts=holdouts, k_max=k_max, n_folds=n_folds, seed=seed, estimator=estimator,
        config=config, transform=transform, imputer=imputer, tie_break=tie_break, min_observed=min_observed,
        initial=initial, ridge=ridge, clip=clip, levels=levels, variance_inflation=variance_inflation,
        inner_folds=inner_folds, min_train_observed=min_train_observed, scheme=scheme, unconditioned=unconditioned,
        ks=ks,
    )
    df = _run_plans([plan], n_jobs=n_jobs, progress=progress)[0]
    if return_details:
        return df, top_residuals(df)
    return df


def top_residuals(df: pd.DataFrame, *, n: int | None = None) -> pd.DataFrame:
    """The per-fold largest squared-residual contributors of a :func:`cross_validate` result.

    Parameters
    ----------
    df : DataFrame
        A result of :func:`cross_validate` (reads ``df.attrs["top_residuals"]``).
    n : int, optional
        Keep only ranks ``1..n``.

    Returns
    -------
    DataFrame with columns ``method, holdout, fold, k, rank, model, benchmark,
    sq_residual, share`` (``share`` = fraction of the fold's ``SS_res``).
    """
    recs = df.attrs.get("top_residuals")
    if recs is None:
        raise ValueError("df has no 'top_residuals' attribute (was it produced by cross_validate?)")
    out = pd.DataFrame(list(recs))
    if n is not None and len(out):
        out = out[out["rank"] <= n].reset_index(drop=True)
    return out


def summarize_cv(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation across folds per (method, holdout, k).

    Parameters
    ----------
    df : DataFrame
        Output of :func:`cross_validate`.

    Returns
    -------
    DataFrame with one row per (method, holdout, k) and columns
    ``r2_mean, r2_sd, rmse_mean, rmse_sd, residual_fraction_mean, ...``
    for every numeric metric present, plus ``n_folds`` (sd uses ``ddof=1``,
    as the paper's bands). Cost O(rows).
    """
    if not isinstance(df, pd.DataFrame) or not {"method", "holdout", "k"} <= set(df.columns):
        raise ValueError("summarize_cv needs a cross_validate DataFrame (columns method, holdout, k)")
    keys = ["method", "holdout", "k"]
    metrics = [c for c in ("r2", "rmse", "residual_fraction", "logdet", "mi", "n_eval", "mean_sq_z", "inflation")
               if c in df.columns]
    metrics += [c for c in df.columns if c.startswith("cov_")]
    g = df.groupby(keys, sort=True)
    parts = {}
    for c in metrics:
        parts[f"{c}_mean"] = g[c].mean()
        parts[f"{c}_sd"] = g[c].std(ddof=1)
    out = pd.DataFrame(parts)
    out["n_folds"] = g.size()
    out = out.reset_index()
    out.attrs = {k: v for k, v in df.attrs.items() if k != "top_residuals"}
    return out


def calibration_table(df: pd.DataFrame, *, ks: Sequence[int] | None = None) -> pd.DataFrame:
    """Empirical vs nominal interval coverage from a :func:`cross_validate` result with ``levels``.

    Parameters
    ----------
    df : DataFrame
        Output of ``cross_validate(..., levels=(...))``.
    ks : sequence of int, optional
        Keep only these subset sizes (e.g. ``(5, 10)``).

    Returns
    -------
    DataFrame in long form: ``method, holdout, k, nominal, coverage,
    coverage_sd, gap`` (= coverage - nominal), and when the result was run
    with ``variance_inflation`` also ``coverage_cal, gap_cal``. Coverage is
    the mean over folds of the per-fold fraction of evaluated entries inside
    the interval.
    """
    if not isinstance(df, pd.DataFrame):
        raise ValueError("calibration_table needs a cross_validate DataFrame")
    cols = [c for c in df.columns if c.startswith("cov_") and not c.endswith("_cal")]
    if not cols:
        raise ValueError("df has no coverage columns: run cross_validate with levels=(0.5, 0.8, 0.9, 0.95)")
    d = df if ks is None else df[df["k"].isin(list(ks))]
    out = []
    for (m, h, k), g in d.groupby(["method", "holdout", "k"], sort=True):
        for c in cols:
            nominal = float(c[4:].replace("_", ".")) / 100.0
            rec = dict(method=m, holdout=h, k=k, nominal=nominal, coverage=g[c].mean(), coverage_sd=g[c].std(ddof=1))
            rec["gap"] = rec["coverage"] - nominal
            if c + "_cal" in g.columns:
                rec["coverage_cal"] = g[c + "_cal"].mean()
                rec["gap_cal"] = rec["coverage_cal"] - nominal
            out.append(rec)
    return pd.DataFrame(out)


def extrapolation_check(
    matrix: ScoreMatrix,
    *,
    method: str | Sequence[str] = "entropy",
    k: int = 5,
    quantile: float = 0.8,
    estimator: str = "auto",
    config: str = "released",
    transform: str | None = None,
    imputer: Imputer | None = None,
    tie_break: Any = "auto",
    min_observed: int | None = None,
    ridge: float = 1e-2,
    clip: float = 10.0,
    levels: Sequence[float] = (0.5, 0.8, 0.9, 0.95),
    seed: int = 0,
) -> pd.DataFrame:
    """Train on the weaker models, predict the strongest ones (extrapolation check).

    Models are ranked by their mean standardized score (columns standardized
    with all models, ``std_floor="relative"``; mean over observed entries).
    Models below the ``quantile`` of that ranking form the training set and
    those at or above it are predicted, with the same steps as one CV split
    (training-only standardization, correlation, selection; conditioning on
    observed selected benchmarks; evaluation on observed unselected ones).
    As a control, a random split with the same sizes is evaluated the same
    way (``split="random"``), so the drop caused by extrapolation is visible.

    Parameters
    ----------
    matrix : ScoreMatrix
    method : str or sequence of str
        Selection method(s).
    k : int
        Largest subset size; rows for ``1..k``.
    quantile : float
        In (0, 1): the training set holds the models below this quantile.
    seed : int
        Seed of the random control split and the random selection.
    Other parameters as :func:`cross_validate`.

    Returns
    -------
    DataFrame with the :func:`cross_validate` columns plus ``split``
    (``"top"`` or ``"random"``) and ``quantile``; coverage columns for
    ``levels``. Cost: two correlation estimates.
    """
    methods = (method,) if isinstance(method, str) else tuple(method)
    matrix, methods, levels, imputer = _check_common(
        matrix, methods, k, ridge, clip, transform, levels, imputer, min_observed, None
    )
    seed = _check_seed(seed)
    if not 0.0 < float(quantile) < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {quantile!r}")
    X = np.asarray(matrix.scores, dtype=float)
    m_all, s_all = _standardize(X)
    strength = np.nanmean((X - m_all) / s_all, axis=1)
    thr = float(np.quantile(strength, quantile))
    top = np.flatnonzero(strength >= thr)
    train = np.flatnonzero(strength < thr)
    if train.size < 2 or top.size < 1:
        raise ValueError(f"quantile {quantile} leaves {train.size} training and {top.size} test models")
    perm = _rng(seed, 4).permutation(X.shape[0])
    r_val = np.sort(perm[: top.size])
    r_train = np.sort(perm[top.size:])
    rows: list[dict[str, Any]] = []
    tops: list[dict[str, Any]] = []
    common = dict(methods=methods, k_max=int(k), estimator=estimator, config=config, transform=transform,
                  imputer=imputer, tie_break=tie_break, min_observed=min_observed, ridge=ridge, clip=clip,
                  levels=levels, variance_inflation=None, inner_folds=3, seed=seed, fold=0)
    for split, tr, va in (("top", train, top), ("random", r_train, r_val)):
        r, t = _split_rows(X, matrix.models, matrix.benchmarks, tr, va,
                           meta={"split": split, "quantile": float(quantile), "holdout": np.nan}, **common)
        rows.extend(r)
        tops.extend(t)
    df = pd.DataFrame(rows)
    df.attrs["top_residuals"] = _Records(tops)
    return df


# --------------------------------------------------------------------------- shared correlation estimates
@contextmanager
def correlation_cache() -> Iterator[dict]:
    """Reuse the per-split training correlation across :func:`cross_validate` calls.

    Inside the ``with`` block every training correlation (step 4 of the
    protocol) is memoized by the bytes of the training matrix, the estimator
    and the EM configuration, so several CV runs on the same splits (other
    methods, tie-break rules, ``min_observed``) pay for EM once. Results are
    identical to uncached runs. Re-entrant (an inner block uses the outer
    cache). Only the calling process is cached, so it helps runs with
    ``n_jobs=1``; across processes and machines, :func:`cv_grid` puts the
    runs of one split in one cell and the disk cache (``BENCHSEL_CACHE_DIR``)
    shares estimates between cells.

    Yields
    ------
    dict
        The cache (key -> correlation matrix); memory O(splits * N^2).
    """
    global _correlation
    if getattr(_correlation, "_cache", None) is not None:
        yield _correlation._cache
        return
    plain = _correlation
    cache: dict = {}

    def cached(X: np.ndarray, estimator: str, config: str) -> np.ndarray:
        Xc = np.ascontiguousarray(X, dtype=float)
        key = (Xc.shape, Xc.tobytes(), estimator, config)
        if key not in cache:
            cache[key] = plain(Xc, estimator, config)
        return cache[key].copy()

    cached._cache = cache  # type: ignore[attr-defined]
    _correlation = cached
    try:
        yield cache
    finally:
        _correlation = plain


def tie_break_band(
    matrix: ScoreMatrix,
    *,
    tie_breaks: Sequence[str] = ("auto", "argmax", "index", "mi"),
    method: str = "entropy",
    n_jobs: int | None = None,
    **cv_kwargs: Any,
) -> pd.DataFrame:
    """Greedy CV under several tie-break rules: the band drawn around entropy's R^2.

    On a correlation matrix every first entropy gain equals ``0.5 log(2 pi e)``,
    so the first pick (and with it the sequence) is decided by the tie rule.
    This runs :func:`cross_validate` once per rule in ``tie_breaks``, all in
    one sweep (:func:`cv_grid`: the rules of one split share a cell and its
    training correlation), and returns the per-rule summary.

    Parameters
    ----------
    matrix : ScoreMatrix
    tie_breaks : sequence of {"auto", "argmax", "index", "mi"}
    method : str, default "entropy"
    n_jobs : int or None
        Workers over the splits, as in :func:`cross_validate`.
    **cv_kwargs
        Passed to :func:`cross_validate` (``holdouts, k_max, n_folds, seed,
        config, min_observed, ...``; ``methods`` and ``tie_break`` are set
        here).

    Returns
    -------
    DataFrame
        :func:`summarize_cv` rows with an extra ``variant`` column (the rule),
        usable as ``variants=`` of :func:`benchsel_lib.plotting.plot_cv_curves`.
        Cost: one CV run per rule, with EM paid once per split.
    """
    if not tie_breaks:
        raise ValueError("tie_breaks is empty")
    for bad in ("methods", "tie_break", "return_details"):
        if bad in cv_kwargs:
            raise ValueError(f"tie_break_band sets {bad!r} itself; do not pass it")
    progress = cv_kwargs.pop("progress", None)
    frames = cv_grid([dict(matrix=matrix, methods=(method,), tie_break=rule, **cv_kwargs) for rule in tie_breaks],
                     n_jobs=n_jobs, progress=progress)
    parts = []
    for rule, df in zip(tie_breaks, frames):
        s = summarize_cv(df)
        s.insert(0, "variant", rule)
        parts.append(s)
    return pd.concat(parts, ignore_index=True)


_FIRST_PICK_STREAM = 5  # spawn key of the seeded sample of first picks (keys 0-4 belong to the CV protocol)


def first_pick_band(
    matrix: ScoreMatrix,
    *,
    picks: Sequence[int | str] | None = None,
    n_picks: int | None = None,
    seed: int = 0,
    method: str = "entropy",
    return_folds: bool = False,
    n_jobs: int | None = None,
    **cv_kwargs: Any,
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Greedy CV with each candidate benchmark forced as the first pick.

    On a correlation matrix every first entropy gain equals ``0.5 log(2 pi e)``
    (Algorithm 1, Section 4), so the first pick is a tie and the greedy
    sequence that follows depends on how it is broken. Rather than a handful
    of tie-break rules (:func:`tie_break_band`), this runs the Section 5.1
    protocol once per candidate first benchmark ``b``, with ``b`` mandatory
    (``cross_validate(initial=(b,))``, i.e. ``select(initial=...)``, paper
    Section 6) and greedy continuing from it. All runs form one sweep
    (:func:`cv_grid`): the candidates of one split share a cell, so the
    training correlation is estimated once per split.

    Parameters
    ----------
    matrix : ScoreMatrix
    picks : sequence of str or int, optional
        Candidate first benchmarks (names or column indices). Default: every
        benchmark of ``matrix``.
    n_picks : int, optional
        Use a seeded sample of this many candidates (without replacement,
        kept in matrix order), drawn from ``picks`` (or all benchmarks) with
        the stream ``SeedSequence(seed, spawn_key=(5,))``. Default: all.
    seed : int
        Seed of the sample and of the CV protocol (passed to
        :func:`cross_validate`, so the folds match a default run with the same
        seed).
    method : {"entropy", "mi", "random"}, default "entropy"
        Selection method continuing after the forced pick.
    return_folds : bool
        Also return the per-fold rows (the concatenated :func:`cross_validate`
        frames with a ``variant`` column), e.g. for the per-fold R^2 range with
        :func:`variant_range` or for
        :func:`benchsel_lib.plotting.plot_fold_curves`.
    n_jobs : int or None
        Workers over the splits, as in :func:`cross_validate`.
    **cv_kwargs
        Passed to :func:`cross_validate` (``holdouts, k_max, n_folds, config,
        tie_break, min_observed, ...``). ``methods`` and ``initial`` are set
        here; ``progress`` shows one bar over the splits.

    Returns
    -------
    DataFrame or (DataFrame, DataFrame)
        :func:`summarize_cv` rows with two extra columns: ``variant`` (the
        forced benchmark's name) and ``n_forced_folds`` (folds in which it was
        applied; a forced benchmark without training scores in a split is
        skipped there, see :func:`cross_validate`). Usable as ``variants=`` of
        :func:`benchsel_lib.plotting.plot_cv_curves` and by
        :func:`benchsel_lib.plotting.add_variant_band`. With
        ``return_folds=True`` also the per-fold frame.

    Raises
    ------
    ValueError
        ``matrix`` is not a ScoreMatrix; ``picks`` is empty, names an unknown
        benchmark, an index out of range or a benchmark twice; ``n_picks`` is
        not an integer in ``1..len(picks)``; ``cv_kwargs`` sets ``methods``
        or ``initial``; or :func:`cross_validate` rejects an option.

    Notes
    -----
    Cost: one CV run per candidate, with the correlation estimate (EM) paid
    once per split: ``P`` candidates on ``N`` benchmarks add ``P`` selections
    (O(k N^2) for entropy) and ``P k_max`` conditional predictions per split.
    """
    if not isinstance(matrix, ScoreMatrix):
        raise ValueError(f"matrix must be a ScoreMatrix, got {type(matrix).__name__}")
    for bad in ("methods", "initial", "return_details"):
        if bad in cv_kwargs:
            raise ValueError(f"first_pick_band sets {bad!r} itself; do not pass it")
    seed = _check_seed(seed)
    from ._validation import resolve_indices

    names = list(matrix.benchmarks)
    if picks is None:
        pool = list(range(len(names)))
    else:
        if isinstance(picks, (str, int, np.integer)):
            picks = [picks]
        pool = resolve_indices(list(picks), len(names), names, what="first pick")
        if not pool:
            raise ValueError("picks is empty: give at least one benchmark name or index (or None for all)")
    if n_picks is not None:
        if isinstance(n_picks, bool) or not isinstance(n_picks, (int, np.integer)) or not 1 <= n_picks <= len(pool):
            raise ValueError(f"n_picks must be an integer between 1 and {len(pool)} (the candidates), got {n_picks!r}")
        chosen = _rng(seed, _FIRST_PICK_STREAM).choice(len(pool), size=int(n_picks), replace=False)
        pool = [pool[i] for i in sorted(chosen.tolist())]
    show = cv_kwargs.pop("progress", None)
    summaries, folds = [], []
    frames = cv_grid([dict(matrix=matrix, methods=(method,), initial=(names[j],), seed=seed, **cv_kwargs)
                      for j in pool], n_jobs=n_jobs, progress=show)
    for j, df in zip(pool, frames):
        s = summarize_cv(df)
        if len(df):
            applied = df.groupby(["method", "holdout", "k"])["n_forced"].sum().rename("n_forced_folds")
            s = s.merge(applied.reset_index(), on=["method", "holdout", "k"], how="left")
        else:
            s["n_forced_folds"] = pd.Series(dtype=int)
        s.insert(0, "variant", names[j])
        summaries.append(s)
        if return_folds:
            folds.append(df.assign(variant=names[j])[["variant"] + list(df.columns)])
    out = pd.concat(summaries, ignore_index=True)
    out.attrs = dict(summaries[0].attrs, initial=None, picks=tuple(names[j] for j in pool))
    if not return_folds:
        return out
    fold_df = pd.concat(folds, ignore_index=True)
    fold_df.attrs = dict(out.attrs)
    return out, fold_df


def variant_range(band: pd.DataFrame, *, k: int, metric: str | None = None) -> pd.DataFrame:
    """Spread of a metric across the variants of a band at one subset size ``k``.

    Parameters
    ----------
    band : DataFrame
        Rows with ``variant`` and ``k``: the summary of :func:`first_pick_band`
        or :func:`tie_break_band` (range of the per-variant mean R^2), or the
        per-fold frame of ``first_pick_band(..., return_folds=True)`` (range of
        the per-fold R^2 over every variant and fold).
    k : int
        Subset size.
    metric : str, optional
        Column to range over; default ``"r2_mean"`` when present, else ``"r2"``.

    Returns
    -------
    DataFrame
        One row per (method, holdout) (those present): ``k, metric, min, max,
        spread`` (= max - min), ``lo_variant``, ``hi_variant`` (the variants
        at the extremes; ``lo_fold``/``hi_fold`` too for per-fold input),
        ``n_variants``. NaN values are ignored. Cost O(rows).

    Raises
    ------
    ValueError
        Missing columns, unknown ``metric`` or no rows at ``k``.
    """
    if not isinstance(band, pd.DataFrame):
        raise ValueError(f"band must be a DataFrame, got {type(band).__name__}")
    if metric is None:
        metric = "r2_mean" if "r2_mean" in band.columns else "r2"
    missing = [c for c in ("variant", "k", metric) if c not in band.columns]
    if missing:
        raise ValueError(f"band lacks column(s) {missing} (pass first_pick_band or tie_break_band output)")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"k must be an integer, got {k!r}")
    at = band[band["k"] == int(k)]
    if at.empty:
        ks = sorted(band["k"].unique().tolist())
        raise ValueError(f"band has no rows at k={k}; it has k in {ks[0]}..{ks[-1]}" if ks else "band is empty")
    keys = [c for c in ("method", "holdout") if c in at.columns]
    groups = at.groupby(keys, sort=True) if keys else [((), at)]
    rows = []
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        vals = g[metric].astype(float)
        rec: dict[str, Any] = dict(zip(keys, key))
        rec.update(k=int(k), metric=metric, min=float(vals.min()), max=float(vals.max()))
        rec["spread"] = rec["max"] - rec["min"]
        ok = vals.notna()
        lo = g.loc[vals[ok].idxmin()] if ok.any() else None
        hi = g.loc[vals[ok].idxmax()] if ok.any() else None
        rec["lo_variant"] = None if lo is None else lo["variant"]
        rec["hi_variant"] = None if hi is None else hi["variant"]
        if "fold" in g.columns:
            rec["lo_fold"] = None if lo is None else int(lo["fold"])
            rec["hi_fold"] = None if hi is None else int(hi["fold"])
        rec["n_variants"] = int(g["variant"].nunique())
        rows.append(rec)
    return pd.DataFrame(rows)
