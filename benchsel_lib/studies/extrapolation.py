"""Extrapolation: train on the weaker models, predict the strongest ones."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._random import check_seed, rng
from ..data import ScoreMatrix
from ..method.base import Imputer
from ..method.scaling import standardize
from ..protocol.cv import check_common, split_rows
from ..protocol.summaries import Records

__all__ = [
    "extrapolation_check",
]


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
    matrix, methods, levels, imputer = check_common(
        matrix, methods, k, ridge, clip, transform, levels, imputer, min_observed, None
    )
    seed = check_seed(seed)
    if not 0.0 < float(quantile) < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {quantile!r}")
    X = np.asarray(matrix.scores, dtype=float)
    m_all, s_all = standardize(X)
    strength = np.nanmean((X - m_all) / s_all, axis=1)
    thr = float(np.quantile(strength, quantile))
    top = np.flatnonzero(strength >= thr)
    train = np.flatnonzero(strength < thr)
    if train.size < 2 or top.size < 1:
        raise ValueError(f"quantile {quantile} leaves {train.size} training and {top.size} test models")
    perm = rng(seed, 4).permutation(X.shape[0])
    r_val = np.sort(perm[: top.size])
    r_train = np.sort(perm[top.size:])
    rows: list[dict[str, Any]] = []
    tops: list[dict[str, Any]] = []
    common = dict(methods=methods, k_max=int(k), estimator=estimator, config=config, transform=transform,
                  imputer=imputer, tie_break=tie_break, min_observed=min_observed, ridge=ridge, clip=clip,
                  levels=levels, variance_inflation=None, inner_folds=3, seed=seed, fold=0)
    for split, tr, va in (("top", train, top), ("random", r_train, r_val)):
        r, t = split_rows(X, matrix.models, matrix.benchmarks, tr, va,
                           meta={"split": split, "quantile": float(quantile), "holdout": np.nan}, **common)
        rows.extend(r)
        tops.extend(t)
    df = pd.DataFrame(rows)
    df.attrs["top_residuals"] = Records(tops)
    return df
