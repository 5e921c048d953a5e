"""Cross-validation scores every size up to k_max for every pipeline, and says so when a pipeline sets its own k."""
from __future__ import annotations

import warnings

import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib.method.pipeline import Pipeline
from benchsel_lib.protocol.cv import cross_validate


def _matrix():
    return as_matrix(low_rank_scores(3, m=30, n=6, noise=0.3))


def test_a_pipelines_own_k_is_named_as_unused_with_the_sizes_scored():
    with pytest.warns(UserWarning, match=r"'mi' has k=3, which cross-validation does not use: it scores every size "
                                         r"1..k_max=4 for every pipeline; pass ks=\[3\]"):
        df = cross_validate(_matrix(), [Pipeline.paper(3, objective="mi")], k_max=4, n_folds=3, progress=False)
    assert sorted(df["k"].unique()) == [1, 2, 3, 4]


def test_a_pipeline_with_the_default_k_draws_no_such_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        cross_validate(_matrix(), [Pipeline.paper(objective="mi")], k_max=3, n_folds=3, progress=False)
