"""benchsel: submodular benchmark selection.

A small library that follows the pipeline of *Submodular Benchmark Selection*
(Smola, 2026): load a score matrix -> estimate mean and covariance (pairwise or
EM under missingness) -> select benchmarks greedily (entropy = pivoted
Cholesky, mutual information, random) -> impute the rest with the Gaussian
conditional mean -> evaluate with the paper's 10-fold CV protocol -> diagnose.

Public names are imported lazily, so ``import benchsel_lib`` stays fast and a
module is loaded only when one of its names is first used.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "ScoreMatrix": "data.matrix",
    "load_matrix": "data.loaders",
    "load_source": "data.loaders",
    "load_csv": "data.loaders",
    "from_frame": "data.loaders",
    "resolve_data_dir": "data.sources",
    "data_path": "data.sources",
    "MANIFEST": "data.sources",
    "DATASETS": "data.loaders",
    "SOURCES": "data.loaders",
    "load_mmlu": "data.mmlu",
    "read_openllm_v1_results": "data.mmlu",
    "build_merged": "data.canonical",
    "load_benchpress_json": "data.loaders",
    "load_npz": "data.loaders",
    "AUXILIARY_COLUMNS": "data.loaders",
    "fetch_all": "data.sources",
    "verify_all": "data.sources",
    "verify_file": "data.sources",
    "MMLU_SUBJECTS": "data.mmlu",
    "mmlu_candidates": "data.mmlu",
    "normalize_model_name": "data.mmlu",
    "merged_discrepancies": "data.canonical",
    "table_datasets": "data.canonical",
    "table_canonical": "data.canonical",
    "table_unmatched": "data.canonical",
    "overlap_network": "data.canonical",
    "load_canonical_mapping": "data.canonical",
    "COLLECTIONS": "data.canonical",
    "Standardizer": "method.scaling",
    "fit_standardizer": "method.scaling",
    "pairwise_covariance": "method.covariance",
    "em_covariance": "method.em",
    "em_settings": "method.em",
    "CV_TOL": "method.em",
    "FULL_TOL": "method.em",
    "estimate_correlation": "method.correlation",
    "cov_to_corr": "method.covariance",
    "EMResult": "method.em",
    "CorrelationEstimate": "method.correlation",
    "select": "method.selection",
    "Selection": "method.selection",
    "log_det": "method.selection",
    "mutual_information": "method.selection",
    "conditional_impute": "method.gaussian",
    "impute_missing": "method.gaussian",
    "GaussianImputer": "method.gaussian",
    "cross_validate": "protocol.cv",
    "fold_assignments": "protocol.splits",
    "summarize_cv": "protocol.summaries",
    "correlation_cache": "protocol.cache",
    "tie_break_band": "studies.bands",
    "first_pick_band": "studies.bands",
    "variant_range": "studies.bands",
    "eigenspectrum": "studies.diagnostics",
    "shapiro_wilk_table": "studies.diagnostics",
    "mardia_test": "studies.diagnostics",
    "Eigenspectrum": "studies.diagnostics",
    "cholesky_residual_trace": "studies.diagnostics",
    "spectral_comparison": "studies.diagnostics",
    "adjust_pvalues": "studies.diagnostics",
    "MardiaResult": "studies.diagnostics",
    "selection_positions": "studies.diagnostics",
    "selection_summary": "studies.diagnostics",
    "positions_from_cv": "studies.diagnostics",
    "selections_by_tolerance": "studies.em",
    "SoftImpute": "method.completion",
    "KNNImputer": "method.completion",
    "BenchPressBlend": "method.completion",
    "TabImputeV2Imputer": "method.tabimpute",
    "MissingWeightsError": "method.tabimpute",
    "find_tabimpute_checkpoint": "method.tabimpute",
    "ConditionalResult": "method.gaussian",
    "Imputer": "method.base",
    "cv_splits": "protocol.splits",
    "calibration_table": "protocol.summaries",
    "top_residuals": "protocol.summaries",
    "extrapolation_check": "studies.extrapolation",
    "cv_grid": "protocol.cv",
    "Cell": "protocol.sweep",
    "SweepError": "protocol.sweep",
    "run_sweep": "protocol.sweep",
    "dask_backend": "protocol.sweep",
    "local_cluster": "protocol.sweep",
    "predict_scores": "method.predict",
    "Predictor": "method.predict",
    "parse_scores": "method.predict",
    "compare_em_settings": "studies.em",
    "em_recovery_study": "studies.em",
    "logit_transform": "method.scaling",
    "inverse_logit_transform": "method.scaling",
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
