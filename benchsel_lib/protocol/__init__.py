"""The evaluation protocol of Section 5.1, for any pipeline.

* :mod:`.splits` -- folds and training sets (the paper's two random layouts);
* :mod:`.cv` -- :func:`cross_validate` and :func:`cv_grid`: fit on every split's training rows, score the rest;
* :mod:`.sweep` -- independent cells on joblib (local processes or Dask);
* :mod:`.cache` -- training-correlation estimates shared in a process and on disk;
* :mod:`.summaries` -- means over folds, interval coverage, largest residuals, R^2 by block.
"""
from __future__ import annotations

from .cv import cross_validate, cv_grid
from .splits import cv_splits
from .summaries import block_r2, calibration_table, summarize_cv, top_residuals

__all__ = ["cross_validate", "cv_grid", "cv_splits", "summarize_cv", "calibration_table", "top_residuals", "block_r2"]
