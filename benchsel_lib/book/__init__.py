"""Helpers of the book's notebooks.

* :mod:`.notebook` -- parameter checks and quick mode;
* :mod:`.prose` -- numbers in sentences (refusing NaN), the run line;
* :mod:`.pages` -- one module per chapter: its tables, its claims and the checks of its sentences;
* :mod:`.claims` -- the claims table that opens each chapter reproducing the paper, and the one verdict rule;
* :mod:`.show` -- computed Markdown in place, and the notes of sentences a run does not bear out;
* :mod:`.tables` -- tables as the reader sees them (every row, no index, no ``nan`` or ``-0.00``);
* :mod:`.checks` -- checks of an executed notebook (errors, warnings, placeholders Jupyter shows raw, the claims
  table, hidden cells, nan);
* :mod:`.site` -- checks of the rendered pages (repeated sentences, code names in prose, cut tables, claims);
* :mod:`.plotting` -- the figures.
"""
from __future__ import annotations

from .claims import TOLERANCES, Claim, claims_table, not_run, quantity, verdict
from .notebook import (
    LABELS,
    METHODS,
    Bounded,
    Choice,
    Choices,
    Count,
    Flag,
    Folds,
    Fraction,
    Holdout,
    Holdouts,
    IntList,
    Levels,
    Matrices,
    Matrix,
    MatrixChoices,
    Methods,
    NoneOr,
    Rule,
    SubsetSize,
    SubsetSizes,
    and_join,
    check_parameters,
    dataset_label,
    matrix_shape,
    quick,
)
from .show import holds, markdown
from .tables import table

__all__ = ["LABELS", "METHODS", "TOLERANCES", "Bounded", "Choice", "Choices", "Claim", "Count", "Flag", "Folds",
           "Fraction", "Holdout", "Holdouts", "IntList", "Levels", "Matrices", "Matrix", "MatrixChoices", "Methods",
           "NoneOr", "Rule", "SubsetSize", "SubsetSizes", "and_join", "check_parameters", "claims_table",
           "dataset_label", "holds", "markdown", "matrix_shape", "not_run", "quantity", "quick", "table", "verdict"]
