"""benchsel: submodular benchmark selection.

Pick the few benchmarks worth running and predict the rest, following
*Submodular Benchmark Selection* (Smola, 2026).

The top level holds the names most users need: the score matrix and its
loaders, the data files, the :class:`Pipeline` and its steps, its search over
candidates, and the cross-validation protocol with its summaries.  Everything
else comes from the subpackage that defines it:

* :mod:`benchsel_lib.data` -- the score-matrix type, the data files and their
  digests, MMLU, canonical model names (``from benchsel_lib.data import
  load_source``);
* :mod:`benchsel_lib.method` -- the :class:`Pipeline` and its steps: scaling,
  correlation estimate (pairwise, EM), selection (entropy, MI, random, ...),
  predictors, calibration, and the search that chooses among candidates;
* :mod:`benchsel_lib.protocol` -- the paper's cross-validation protocol,
  sweeps over processes or a Dask cluster, the estimate cache, summaries;
* :mod:`benchsel_lib.studies` -- the book's experiments and diagnostics
  (``from benchsel_lib.studies.diagnostics import eigenspectrum``);
* :mod:`benchsel_lib.book` -- notebook helpers and figures;
* :mod:`benchsel_lib.explore` -- explorers: controls over precomputed panels,
  live in Jupyter and on the static site (:func:`explorer`);
* :mod:`benchsel_lib.cli` -- the ``benchsel`` command.

Top-level names are imported lazily, so ``import benchsel_lib`` stays fast and
a module is loaded only when one of its names is first used.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # data
    "ScoreMatrix": "data.matrix",
    "ScoreWarning": "data.matrix",
    "load_matrix": "data.loaders",
    "load_csv": "data.loaders",
    "from_frame": "data.loaders",
    "DATASETS": "data.loaders",
    "resolve_data_dir": "data.sources",
    "fetch_all": "data.sources",
    "verify_all": "data.sources",
    # the method: the pipeline, its search and its steps
    "Pipeline": "method.pipeline",
    "PipelineSearch": "method.pipeline",
    "Grid": "method.candidates",
    "CandidateSpace": "method.candidates",
    "clone": "method.pipeline",
    "ScaleWarning": "method.pipeline",
    "Scaling": "method.scaling",
    "Correlation": "method.correlation",
    "estimate_correlation": "method.correlation",
    "Selector": "method.selectors",
    "select": "method.selection",
    "GaussianPredictor": "method.gaussian",
    "make_predictor": "method.predictors",
    "GaussianIntervals": "method.calibration",
    "Conformal": "method.calibration",
    # the protocol
    "cross_validate": "protocol.cv",
    "cv_grid": "protocol.cv",
    "summarize_cv": "protocol.summaries",
    "calibration_table": "protocol.summaries",
    # notebooks
    "explorer": "explore",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'benchsel_lib' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
