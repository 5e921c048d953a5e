"""Independent references the tests compare the library with (scikit-learn's implementations)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.linear_model import RidgeCV

DEFAULT_ALPHAS = tuple(float(a) for a in np.logspace(-2, 4, 13))


def ridge_loo(A: np.ndarray, y: np.ndarray, *,
              alphas: Sequence[float] = DEFAULT_ALPHAS) -> tuple[np.ndarray, float, float, float]:
    """One target's ridge with the strength chosen by exact leave-one-out error: scikit-learn's ``RidgeCV``.

    Returns the coefficients, the intercept, the chosen strength and its mean
    squared leave-one-out residual (``-best_score_``).
    """
    fit = RidgeCV(alphas=np.array(alphas, dtype=float)).fit(np.asarray(A, dtype=float), np.asarray(y, dtype=float))
    return np.asarray(fit.coef_, dtype=float), float(fit.intercept_), float(fit.alpha_), float(-fit.best_score_)
