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
    # score-matrix type and data layer
    "ScoreMatrix": "matrix",
    "load_matrix": "data",
    "load_source": "data",
    "load_csv": "data",
    "from_frame": "data",
    "resolve_data_dir": "data",
    "data_path": "data",
    "MANIFEST": "data",
    "DATASETS": "data",
    "SOURCES": "data",
    "load_mmlu": "mmlu",
    "read_openllm_v1_results": "mmlu",
    "build_merged": "canonical",
    "load_benchpress_json": "data",
    "load_npz": "data",
    "AUXILIARY_COLUMNS": "data",
    "fetch_all": "data",
    "verify_all": "data",
    "verify_file": "data",
    "MMLU_SUBJECTS": "mmlu",
    "mmlu_candidates": "mmlu",
    "normalize_model_name": "mmlu",
    "merged_discrepancies": "canonical",
    "table_datasets": "canonical",
    "table_canonical": "canonical",
    "table_unmatched": "canonical",
    "overlap_network": "canonical",
    "load_canonical_mapping": "canonical",
    "COLLECTIONS": "canonical",
    # estimation
    "Standardizer": "estimation",
    "fit_standardizer": "estimation",
    "pairwise_covariance": "estimation",
    "em_covariance": "estimation",
    "em_settings": "estimation",
    "estimate_correlation": "estimation",
    "cov_to_corr": "estimation",
    "EMResult": "estimation",
    "CorrelationEstimate": "estimation",
    # selection
    "select": "selection",
    "Selection": "selection",
    "log_det": "selection",
    "mutual_information": "selection",
    # imputation
    "conditional_impute": "imputation",
    "impute_missing": "imputation",
    "GaussianImputer": "imputation",
    # evaluation
    "cross_validate": "evaluation",
    "fold_assignments": "evaluation",
    "summarize_cv": "evaluation",
    "correlation_cache": "evaluation",
    "tie_break_band": "evaluation",
    "first_pick_band": "evaluation",
    "variant_range": "evaluation",
    # diagnostics and transforms
    "eigenspectrum": "diagnostics",
    "shapiro_wilk_table": "diagnostics",
    "mardia_test": "diagnostics",
    "Eigenspectrum": "diagnostics",
    "cholesky_residual_trace": "diagnostics",
    "spectral_comparison": "diagnostics",
    "adjust_pvalues": "diagnostics",
    "MardiaResult": "diagnostics",
    "selection_positions": "diagnostics",
    "selection_summary": "diagnostics",
    "positions_from_cv": "diagnostics",
    "selections_by_tolerance": "diagnostics",
    "SoftImpute": "imputers",
    "KNNImputer": "imputers",
    "BenchPressBlend": "imputers",
    "TabImputeV2Imputer": "imputers",
    "MissingWeightsError": "imputers",
    "find_tabimpute_checkpoint": "imputers",
    "ConditionalResult": "imputation",
    "Imputer": "imputation",
    "cv_splits": "evaluation",
    "calibration_table": "evaluation",
    "top_residuals": "evaluation",
    "extrapolation_check": "evaluation",
    "predict_scores": "predict",
    "Predictor": "predict",
    "parse_scores": "predict",
    "compare_em_settings": "estimation",
    "em_recovery_study": "estimation",
    "logit_transform": "transforms",
    "inverse_logit_transform": "transforms",
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
