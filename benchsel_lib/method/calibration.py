"""Calibration of predictive intervals: split-conformal scales from inner cross-validation residuals."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "CONFORMAL_SHRINK",
    "conformal_scales",
]


CONFORMAL_SHRINK = 10.0  # pseudo-count of the pooled residual variance in each benchmark's scale


def conformal_scales(res: np.ndarray, mask: np.ndarray, levels: Sequence[float]) -> tuple[np.ndarray, dict[float, float]]:
    """Per-benchmark scales and conformal multipliers from inner-CV residuals (``res`` scored where ``mask``)."""
    r2 = np.where(mask, res, 0.0) ** 2
    n_j = mask.sum(axis=0)
    pooled = float(r2.sum() / max(mask.sum(), 1)) if mask.any() else 1.0
    pooled = pooled if pooled > 0 else 1.0
    scale = np.sqrt((r2.sum(axis=0) + CONFORMAL_SHRINK * pooled) / (n_j + CONFORMAL_SHRINK))
    scores = np.sort((np.abs(res) / scale[None, :])[mask])
    n = scores.size
    q = {}
    for lev in levels:
        if n == 0:
            q[float(lev)] = float("inf")
            continue
        rank = int(math.ceil((n + 1) * float(lev)))
        q[float(lev)] = float(scores[min(rank, n) - 1]) if rank <= n else float(scores[-1])
    return scale, q
