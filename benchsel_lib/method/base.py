"""What every predictor shares: the protocol, the checks of its inputs, revealed entries passed through.

A predictor answers "I ran these benchmarks, predict the rest" in standardized
space: ``predict(train, query, *, cov=None)`` receives the training rows
(NaN where missing) and the query rows with only their revealed entries, and
returns a prediction for every entry (revealed ones passed through).
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "Imputer",
    "check_train_query",
    "pass_through",
]


@runtime_checkable
class Imputer(Protocol):
    """What :func:`~benchsel_lib.evaluation.cross_validate` needs from an imputer.

    ``predict(train, query, *, cov=None)`` receives the training rows
    ``train`` (m, N) standardized with the training means/stds (``NaN`` where
    missing; all observed entries are context) and the query rows ``query``
    (v, N) in the same space with ``NaN`` for every hidden entry (in CV only
    the selected benchmarks a validation model has are revealed), plus the
    training correlation ``cov``. It returns (v, N) predictions in
    standardized space; only the hidden entries are scored.

    An imputer may also define ``predict_distribution(train, query, *,
    cov=None) -> (mean, var)`` to provide predictive variances; the CV
    protocol then reports interval coverage for it.

    An imputer whose prediction for a query row depends only on that row and
    the training data (not on the other query rows) may set the class
    attribute ``rowwise = True``; callers may then stack many queries into
    one call (the inner cross-validation of :mod:`benchsel_lib.recommend`
    does).  Transductive imputers, such as an SVD completion of the stacked
    ``[train; query]`` matrix, leave it unset.
    """

    name: str

    def predict(self, train: np.ndarray, query: np.ndarray, *, cov: np.ndarray | None = None) -> np.ndarray:
        ...


def check_train_query(train: Any, query: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        tr = np.array(train, dtype=float)
        qu = np.array(query, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("train and query must be numeric arrays") from None
    if tr.ndim != 2:
        raise ValueError(f"train must be 2-D (models x benchmarks), got shape {tr.shape}")
    if qu.ndim == 1:
        qu = qu[None, :]
    if qu.ndim != 2:
        raise ValueError(f"query must be 2-D (models x benchmarks), got shape {qu.shape}")
    if tr.shape[0] < 1:
        raise ValueError("train has no rows (training models)")
    if tr.shape[1] == 0:
        raise ValueError("train has no benchmark columns")
    if qu.shape[1] != tr.shape[1]:
        raise ValueError(f"query has {qu.shape[1]} columns but train has {tr.shape[1]}")
    if np.isinf(tr).any() or np.isinf(qu).any():
        raise ValueError("train/query contain infinite values (use NaN for missing)")
    return tr, qu


def pass_through(pred: np.ndarray, query: np.ndarray) -> np.ndarray:
    obs = ~np.isnan(query)
    pred = np.array(pred, dtype=float)
    pred[obs] = query[obs]
    return pred
