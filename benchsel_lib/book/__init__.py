"""Helpers of the book's notebooks.

* :mod:`.notebook` -- parameter checks and quick mode;
* :mod:`.prose` -- sentences written from a run's results (numbers that refuse NaN, the run line, glue);
* :mod:`.pages` -- one module per chapter: its tables and the prose written from them;
* :mod:`.checks` -- checks of an executed notebook (errors, warnings, missing glue, nan, TeX, unrun matrices);
* :mod:`.plotting` -- the figures.
"""
from __future__ import annotations

from .notebook import (
    LABELS,
    and_join,
    check_parameters,
    dataset_label,
    matrix_shape,
    quick,
)

__all__ = ["LABELS", "and_join", "check_parameters", "dataset_label", "matrix_shape", "quick"]
