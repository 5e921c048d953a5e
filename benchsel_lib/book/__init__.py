"""Helpers of the book's notebooks (:mod:`.notebook`) and its figures (:mod:`.plotting`)."""
from __future__ import annotations

from .notebook import (
    LABELS,
    and_join,
    check_parameters,
    dataset_label,
    glue_not_run,
    quick,
    run_note,
)

__all__ = ["LABELS", "and_join", "check_parameters", "dataset_label", "glue_not_run", "quick", "run_note"]
