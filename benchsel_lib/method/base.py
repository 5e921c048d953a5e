"""The predictor protocol: fit on training rows, predict the unrevealed scores of query rows, in standardized
space (Section 5.1: predicting 0 is predicting the training mean); :class:`BasePredictor` implements it.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._checks import as_float_array, check_covariance, check_data_matrix
from .lowrank import LowRankCorrelation, as_correlation_matrix

__all__ = ["Component", "Predictor", "BasePredictor", "check_train", "check_train_query", "check_rows", "pass_through",
           "NotFittedError"]


class NotFittedError(ValueError):
    """A predictor or pipeline was used before ``fit``."""


class Component:
    """A pipeline step as scikit-learn sees it: a frozen dataclass whose fields are its parameters.

    ``get_params`` lists its fields (``selector__tie_break`` in a pipeline's ``get_params(deep=True)``);
    ``sklearn.base.clone`` shares it (a frozen value needs no copy). O(number of fields).
    """

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The dataclass fields set by the constructor, by name. O(number of fields)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}  # type: ignore[arg-type]

    def __sklearn_clone__(self) -> Component:
        return self


@runtime_checkable
class Predictor(Protocol):
    """What a pipeline needs from a predictor.

    A structural protocol (``runtime_checkable``: ``isinstance`` checks only that ``name``, ``fit`` and
    ``predict`` exist).  Arrays are standardized (Section 5.1), NaN where missing.

    Attributes
    ----------
    name : str
        Label of the predictor in tables.

    Optional: ``predict_distribution(query) -> (mean, var)`` (variance 0 at revealed
    entries; needed by the Gaussian intervals, Eq. cond-var), and ``rowwise = True`` when a query row's
    prediction depends only on that row and the training rows (callers may then stack queries).

    Notes
    -----
    The CV protocol and the search call ``fit`` once per training split and ``predict`` once per revealed
    set with every query row in one call, so per-query work should be vectorized.  ``fit`` of a
    :class:`BasePredictor` is O(m N + N^2); the Gaussian predictor's ``predict`` is
    O(G k^3 + G k^2 N + v k N) for ``G`` reveal patterns over ``k`` revealed benchmarks
    (:func:`~benchsel_lib.method.gaussian.conditional_moments`).
    """

    name: str

    def fit(self, train: np.ndarray, *, cov: np.ndarray | None = None) -> Predictor:
        """Fit on the training rows.

        Parameters
        ----------
        train : ndarray (m, N)
            Training rows in standardized space, NaN where missing.
        cov : ndarray (N, N) or None
            The training correlation (Eq. pairwise-cov or EM, Appendix G) for predictors that use one
            (which may estimate it when None).

        Returns
        -------
        Predictor
            ``self`` by convention.

        Raises
        ------
        ValueError
            On malformed input (:func:`check_train`).

        Notes
        -----
        Cost: the predictor's (see the class's Notes).
        """
        ...

    def predict(self, query: np.ndarray) -> np.ndarray:
        """Predict every entry of ``query``.

        Parameters
        ----------
        query : ndarray (v, N)
            Query rows in standardized space, NaN at every hidden entry.

        Returns
        -------
        ndarray (v, N)
            A prediction for every entry, the revealed entries passed through (:func:`pass_through`).

        Raises
        ------
        NotFittedError
            When called before ``fit``.

        Notes
        -----
        Cost: the predictor's (see the class's Notes).
        """
        ...


def check_train(train: Any) -> np.ndarray:
    """``train`` (m, N) as a float array with at least one row and column, NaN for missing. O(m N).

    ``ValueError`` for non-numeric input, not 2-D, no row or column, or infinite values.
    """
    return check_data_matrix(train, name="train", min_rows=1, allow_empty=True)


def check_train_query(train: Any, query: Any) -> tuple[np.ndarray, np.ndarray]:
    """``train`` (m, N) and ``query`` (v, N) as float arrays; a 1-D query is one row. O((m + v) N).

    ``ValueError`` as :func:`check_train`, or for a query not numeric, not 1-D or 2-D, with other columns
    than ``train`` or infinite values.
    """
    tr = check_train(train)
    qu = check_rows(query, "query")
    if qu.shape[1] != tr.shape[1]:
        raise ValueError(f"query has {qu.shape[1]} columns but train has {tr.shape[1]}")
    return tr, qu


def check_rows(X: Any, name: str) -> np.ndarray:
    """``X`` (v, N) as a new float array, a 1-D ``X`` as one row; ``ValueError`` naming ``name`` otherwise. O(v N).

    Refused: non-numeric input, more than two dimensions, infinite values (NaN marks a missing entry).
    """
    arr = as_float_array(X, f"{name} must be a numeric (models x benchmarks) array", copy=True)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 1-D or 2-D (models x benchmarks), got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains infinite values (use NaN for missing)")
    return arr


def pass_through(pred: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``pred`` with the revealed (non-NaN) entries of ``query`` put back. O(v N)."""
    obs = ~np.isnan(query)
    pred = np.array(pred, dtype=float)
    pred[obs] = query[obs]
    return pred


class BasePredictor:
    """``fit`` stores the training rows and correlation; ``predict`` hands them to ``_predict(train, query, cov)``
    (arrays checked), which subclasses implement."""

    name: str = "predictor"
    rowwise: bool = False
    #: the parameters that ``repr`` shows, as ``name=value`` in this order
    _repr_params: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{p}={getattr(self, p)!r}' for p in self._repr_params)})"

    def fit(self, train: Any, *, cov: Any = None) -> BasePredictor:
        """Remember the training rows and the correlation (finite, symmetric N x N); return self. O(m N + N^2)."""
        self.train_ = check_train(train)
        if cov is not None and not isinstance(cov, LowRankCorrelation):  # a wide matrix's factored one is kept so
            check_covariance(cov)  # square, symmetric, finite: checked, while the given values are kept as they are
        self.cov_ = None if cov is None else as_correlation_matrix(cov)
        if self.cov_ is not None and self.cov_.shape[0] != self.train_.shape[1]:
            raise ValueError(f"cov is {self.cov_.shape[0]} x {self.cov_.shape[0]} but train has "
                             f"{self.train_.shape[1]} benchmark columns")
        return self

    def _fitted(self) -> np.ndarray:
        tr = getattr(self, "train_", None)
        if tr is None:
            raise NotFittedError(f"{type(self).__name__} is not fitted: call fit(train) first")
        return tr

    def predict(self, query: Any) -> np.ndarray:
        """Predict every entry of ``query`` (v, N), revealed entries passed through. O((m + v) N) plus ``_predict``."""
        tr, qu = check_train_query(self._fitted(), query)
        return self._predict(tr, qu, self.cov_)

    def _predict(self, train: np.ndarray, query: np.ndarray, cov: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError
