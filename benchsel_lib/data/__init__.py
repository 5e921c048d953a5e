"""The data layer: the score-matrix type, the data files and their digests, MMLU, canonicalization.

* :mod:`.matrix` -- :class:`ScoreMatrix`, the one score-matrix type (NaN = missing);
* :mod:`.sources` -- the manifest of data files, the data directory and SHA-256 checks;
* :mod:`.loaders` -- the paper's matrices, the per-leaderboard sources, a user's CSV;
* :mod:`.mmlu` -- the per-subject MMLU matrix rebuilt from public files;
* :mod:`.canonical` -- canonical model names, the Merged matrix and the landscape tables.
"""
from __future__ import annotations

from .loaders import (
    AUXILIARY_COLUMNS,
    DATASETS,
    MISSING_MARKERS,
    SOURCES,
    from_frame,
    load_benchpress_json,
    load_csv,
    load_matrix,
    load_npz,
    load_source,
)
from .matrix import ColumnProblem, ScoreMatrix, ScoreWarning, column_problems
from .sources import (
    MANIFEST,
    PROJECT_ROOT,
    data_path,
    fetch_all,
    resolve_data_dir,
    verify_all,
    verify_file,
)

__all__ = [
    "AUXILIARY_COLUMNS",
    "ColumnProblem",
    "DATASETS",
    "MANIFEST",
    "MISSING_MARKERS",
    "PROJECT_ROOT",
    "SOURCES",
    "ScoreMatrix",
    "ScoreWarning",
    "column_problems",
    "data_path",
    "fetch_all",
    "from_frame",
    "load_benchpress_json",
    "load_csv",
    "load_matrix",
    "load_npz",
    "load_source",
    "resolve_data_dir",
    "verify_all",
    "verify_file",
]
