"""Extrapolation: train on the weaker models, predict the strongest ones."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._checks import check_int, check_matrix
from .._random import check_seed, rng
from ..data import ScoreMatrix
from ..method.scaling import PROTOCOL_CLIP, fit_standardizer
from ..protocol.cv import CVProtocol, check_pipelines, split_rows
from ..protocol.splits import split_seeds
from ..protocol.summaries import Records

__all__ = [
    "extrapolation_check",
]


def extrapolation_check(
    matrix: ScoreMatrix,
    pipelines: Any = ("entropy",),
    *,
    k: int = 5,
    quantile: float = 0.8,
    levels: Sequence[float] = (0.5, 0.8, 0.9, 0.95),
    clip: float = PROTOCOL_CLIP,
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
    pipelines : Pipeline, name or sequence of them
        As in :func:`~benchsel_lib.protocol.cv.cross_validate`.
    k : int
        Largest subset size; rows for ``1..k``.
    quantile : float
        In (0, 1): the training set holds the models below this quantile.
    seed : int
        Seed of the random control split and the pipelines' random streams.
    levels, clip
        As in :func:`~benchsel_lib.protocol.cv.cross_validate`.

    Returns
    -------
    DataFrame with the :func:`cross_validate` columns plus ``split``
    (``"top"`` or ``"random"``) and ``quantile``; coverage columns for
    ``levels``. Cost: two correlation estimates.
    """
    check_matrix(matrix)
    pipes = check_pipelines(pipelines)
    k = check_int(k, "k")
    seed = check_seed(seed)
    if not 0.0 < float(quantile) < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {quantile!r}")
    X = np.asarray(matrix.scores, dtype=float)
    strength = np.nanmean(fit_standardizer(X, std_floor="relative").transform(X), axis=1)
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
    protocol = CVProtocol(k_max=k, levels=tuple(float(v) for v in levels), clip=float(clip))
    common = dict(pipelines=pipes, protocol=protocol, seeds=split_seeds(seed, 0, float("nan"), "nested"), fold=0)
    for split, tr, va in (("top", train, top), ("random", r_train, r_val)):
        r, t = split_rows(X, matrix.models, matrix.benchmarks, tr, va,
                          meta={"split": split, "quantile": float(quantile), "holdout": np.nan}, **common)
        rows.extend(r)
        tops.extend(t)
    df = pd.DataFrame(rows)
    df.attrs["top_residuals"] = Records(tops)
    return df
