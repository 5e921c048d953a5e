"""Helpers of the book's notebooks.

* :mod:`.notebook` -- parameter checks and quick mode;
* :mod:`.prose` -- sentences written from a run's results (numbers that refuse NaN, the run line, glue);
* :mod:`.pages` -- one module per chapter: its tables and the prose written from them;
* :mod:`.claims` -- the claims table that opens each chapter reproducing the paper (claim, numbers, verdict);
* :mod:`.tables` -- tables as the reader sees them (every row, no index, no ``nan`` or ``-0.00``);
* :mod:`.checks` -- checks of an executed notebook (errors, warnings, missing glue, nan, TeX, unrun matrices);
* :mod:`.site` -- checks of the rendered pages (repeated sentences, code names in prose, cut tables, claims);
* :mod:`.plotting` -- the figures.
"""
from __future__ import annotations

from .claims import Claim, claims_table, failures, not_run, verdict
from .notebook import (
    LABELS,
    and_join,
    check_parameters,
    dataset_label,
    matrix_shape,
    quick,
)
from .tables import table

__all__ = ["LABELS", "Claim", "and_join", "check_parameters", "claims_table", "dataset_label", "failures",
           "matrix_shape", "not_run", "quick", "table", "verdict"]
