"""Revealing more benchmarks does not make the recommended pipeline worse, on the four built-in matrices.

The paper's protocol (Section 5.1, seed 42: the paper's own folds, 10 % holdout) scores R^2 at each k over the
entries that size scores, so k = 5 and k = 10 are not scored on the same entries: the extra benchmarks leave the
targets, and models that observe none of the smaller selection but one of the larger enter the score (on the
sparse Merged matrix, scores on benchmarks that two or three training models observe, which standardize to many
training SDs); ``k_gain``'s ``only_r2_k0`` and ``only_r2_k1`` measure both.  Two checks follow:

* on the same entries (``r2_common``: those that both sizes score), the recommended pipeline is at least as good
  with ten revealed benchmarks as with five, in the mean over the ten folds;
* in the protocol's R^2, the mean over the folds of R^2(k = 10) - R^2(k = 5) is not below zero by more than two
  standard errors of that paired difference.

A pipeline that ignored the extra benchmarks badly, or chose a worse predictor for them, fails the first.
20 to 40 s per matrix on two cores.
"""
from __future__ import annotations

import pytest

from benchsel_lib import Pipeline, cross_validate, load_matrix
from benchsel_lib.studies.pipelines import k_gain


@pytest.mark.parametrize("name", ["mteb", "merged", "benchpress", "mmlu"])
def test_recommended_pipeline_is_not_worse_with_ten_benchmarks_than_with_five(name):
    df = cross_validate(load_matrix(name), [Pipeline.auto()], holdouts=(0.1,), k_max=10, n_folds=10, seed=42,
                        scheme="paper", ks=(5, 10), progress=False, n_jobs=2)
    gain = k_gain(df.assign(seed=42), k0=5, k1=10)
    assert gain["n_cells"] == 10
    assert gain["gain_common"] >= 0, gain
    assert gain["gain"] >= -2 * gain["gain_se"], gain
