"""benchsel: submodular benchmark selection.

Pick the few benchmarks worth running and predict the rest, following
*Submodular Benchmark Selection* (Smola, 2026). The package is laid out by
concern:

* :mod:`benchsel_lib.data` -- the score-matrix type, the data files and their
  digests, MMLU, canonical model names;
* :mod:`benchsel_lib.method` -- the :class:`Pipeline` and its steps: scaling,
  correlation estimate (pairwise, EM), selection (entropy, MI, random, ...),
  predictors, calibration;
* :mod:`benchsel_lib.protocol` -- the paper's cross-validation protocol,
  sweeps over processes or a Dask cluster, the estimate cache, summaries;
* :mod:`benchsel_lib.studies` -- the book's experiments and diagnostics;
* :mod:`benchsel_lib.book` -- notebook helpers and figures;
* :mod:`benchsel_lib.explore` -- an interactive view that a headless notebook
  run cannot stall on (:func:`explorer`);
* :mod:`benchsel_lib.cli` -- the ``benchsel`` command.

Public names are imported lazily, so ``import benchsel_lib`` stays fast and a
module is loaded only when one of its names is first used.
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
    "column_problems": "data.matrix",
    "load_matrix": "data.loaders",
    "load_source": "data.loaders",
    "load_csv": "data.loaders",
    "from_frame": "data.loaders",
    "load_npz": "data.loaders",
    "load_benchpress_json": "data.loaders",
    "DATASETS": "data.loaders",
    "SOURCES": "data.loaders",
    "AUXILIARY_COLUMNS": "data.loaders",
    "MANIFEST": "data.sources",
    "resolve_data_dir": "data.sources",
    "data_path": "data.sources",
    "fetch_all": "data.sources",
    "verify_all": "data.sources",
    "verify_file": "data.sources",
    "load_mmlu": "data.mmlu",
    "read_openllm_v1_results": "data.mmlu",
    "MMLU_SUBJECTS": "data.mmlu",
    "mmlu_candidates": "data.mmlu",
    "normalize_model_name": "data.mmlu",
    "build_merged": "data.canonical",
    "merged_discrepancies": "data.canonical",
    "table_datasets": "data.canonical",
    "table_canonical": "data.canonical",
    "table_unmatched": "data.canonical",
    "overlap_network": "data.canonical",
    "load_canonical_mapping": "data.canonical",
    "COLLECTIONS": "data.canonical",
    # the method: the pipeline and its steps
    "Pipeline": "method.pipeline",
    "clone": "method.pipeline",
    "check_given": "method.pipeline",
    "ScaleWarning": "method.pipeline",
    "Scaling": "method.scaling",
    "Standardizer": "method.scaling",
    "fit_standardizer": "method.scaling",
    "logit_transform": "method.scaling",
    "inverse_logit_transform": "method.scaling",
    "Correlation": "method.correlation",
    "CorrelationEstimate": "method.correlation",
    "estimate_correlation": "method.correlation",
    "pairwise_covariance": "method.covariance",
    "cov_to_corr": "method.covariance",
    "em_covariance": "method.em",
    "em_settings": "method.em",
    "EMResult": "method.em",
    "CV_TOL": "method.em",
    "FULL_TOL": "method.em",
    "Selector": "method.selectors",
    "SELECTORS": "method.selectors",
    "select": "method.selection",
    "Selection": "method.selection",
    "log_det": "method.objectives",
    "mutual_information": "method.objectives",
    "Predictor": "method.base",
    "PREDICTORS": "method.predictors",
    "make_predictor": "method.predictors",
    "GaussianPredictor": "method.gaussian",
    "conditional_impute": "method.gaussian",
    "conditional_moments": "method.gaussian",
    "impute_missing": "method.gaussian",
    "ConditionalResult": "method.gaussian",
    "RidgePredictor": "method.regression",
    "StackedPredictor": "method.predictors",
    "SoftImpute": "method.completion",
    "KNNImputer": "method.completion",
    "BenchPressBlend": "method.completion",
    "TabImputeV2Imputer": "method.tabimpute",
    "MissingWeightsError": "method.tabimpute",
    "find_tabimpute_checkpoint": "method.tabimpute",
    "GaussianIntervals": "method.calibration",
    "Conformal": "method.calibration",
    # the protocol
    "cross_validate": "protocol.cv",
    "cv_grid": "protocol.cv",
    "cv_splits": "protocol.splits",
    "fold_assignments": "protocol.splits",
    "summarize_cv": "protocol.summaries",
    "calibration_table": "protocol.summaries",
    "top_residuals": "protocol.summaries",
    "correlation_cache": "protocol.cache",
    "Cell": "protocol.sweep",
    "SweepError": "protocol.sweep",
    "run_sweep": "protocol.sweep",
    "dask_backend": "protocol.sweep",
    "local_cluster": "protocol.sweep",
    # the book's studies
    "eigenspectrum": "studies.diagnostics",
    "Eigenspectrum": "studies.diagnostics",
    "cholesky_residual_trace": "studies.diagnostics",
    "spectral_comparison": "studies.diagnostics",
    "adjust_pvalues": "studies.diagnostics",
    "shapiro_wilk_table": "studies.diagnostics",
    "mardia_test": "studies.diagnostics",
    "MardiaResult": "studies.diagnostics",
    "selection_positions": "studies.diagnostics",
    "selection_summary": "studies.diagnostics",
    "positions_from_cv": "studies.diagnostics",
    "selections_by_tolerance": "studies.em",
    "compare_em_settings": "studies.em",
    "em_recovery_study": "studies.em",
    "tie_break_band": "studies.bands",
    "first_pick_band": "studies.bands",
    "variant_range": "studies.bands",
    "extrapolation_check": "studies.extrapolation",
    "compare_pipelines": "studies.pipelines",
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
