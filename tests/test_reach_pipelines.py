"""Chapter 12's R^2 over every held-out model, the reach and the R^2 inside and outside a block of benchmarks."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book.pages import pipelines as page
from benchsel_lib.data import ScoreMatrix
from benchsel_lib.protocol.cv import cross_validate
from benchsel_lib.studies import pipelines as rc


@pytest.fixture(scope="module")
def run() -> tuple[ScoreMatrix, pd.DataFrame]:
    """Two seeds of entropy and random on a sparse 40 x 8 matrix whose first three columns few models ran."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 8)) + 2.0 * rng.normal(size=(40, 1))
    X[rng.random(X.shape) < 0.3] = np.nan
    X[12:, :3] = np.nan  # the block: models 0-11 only
    X[~(~np.isnan(X)).any(axis=1), 4] = 0.5
    names = ["mmlu/anatomy", "mmlu/virology", "mmlu/sociology", "helm/MMLU", "open_llm/MMLU-PRO", "b5", "b6", "b7"]
    matrix = ScoreMatrix(X, [f"m{i}" for i in range(40)], names)
    frames = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in (0, 1):
            df = cross_validate(matrix, ["entropy", "random"], k_max=3, n_folds=4, seed=seed, keep_entries=True,
                                progress=False)
            frames.append(df.assign(seed=seed))
    return matrix, pd.concat(frames, ignore_index=True)


def test_mmlu_block_is_the_mmlu_subject_columns_only():
    names = ["mmlu/anatomy", "helm/MMLU", "anatomy", "open_llm/MMLU-PRO", "other/anatomy", "mmlu/not_a_subject"]
    assert rc.mmlu_block(names).tolist() == [True, False, True, False, False, False]


def test_block_sizes_count_the_block_and_the_models_that_ran_it(run):
    matrix, _ = run
    X = np.asarray(matrix.scores)
    assert rc.block_sizes(matrix, rc.mmlu_block(matrix.benchmarks)) == (
        3, int((~np.isnan(X[:12, :3])).any(axis=1).sum()), 40)
    with pytest.raises(ValueError, match="8 benchmarks"):
        rc.block_sizes(matrix, [True, False])


def test_every_model_r2_is_the_mean_over_the_cells_of_each_scoring(run):
    _, df = run
    out = rc.every_model_r2(df, ks=[3, 1], pipelines=["random", "entropy"])
    assert list(zip(out["k"], out["pipeline"])) == [(3, "random"), (3, "entropy"), (1, "random"), (1, "entropy")]
    means = df.groupby(["k", "pipeline"])[["r2", "r2_all", "reach"]].mean()
    for r in out.itertuples(index=False):
        assert r.r2 == means.loc[(r.k, r.pipeline), "r2"] and r.r2_all == means.loc[(r.k, r.pipeline), "r2_all"]
        assert r.reach == means.loc[(r.k, r.pipeline), "reach"] and r.n_cells == 8
    with pytest.raises(ValueError, match="not scored"):
        rc.every_model_r2(df, ks=[4])


def test_block_split_pools_both_scorings_over_seeds_and_folds_to_the_rows_sums(run):
    matrix, df = run
    inside = rc.mmlu_block(matrix.benchmarks)
    out = rc.block_split(df, inside, ks=[1, 3]).set_index(["k", "pipeline"])
    for tag in ("", "_all"):
        sums = df.groupby(["k", "pipeline"])[[f"ss_res{tag}", f"ss_tot{tag}", f"n_eval{tag}"]].sum()
        total = 1 - sums[f"ss_res{tag}"] / sums[f"ss_tot{tag}"]
        np.testing.assert_allclose(out[f"r2{tag}"], total.loc[out.index], rtol=1e-12)
        np.testing.assert_array_equal(out[f"n{tag}_inside"] + out[f"n{tag}_outside"],
                                      sums.loc[out.index, f"n_eval{tag}"])
        w = out[f"share{tag}_inside"]
        np.testing.assert_allclose(out[f"r2{tag}"], w * out[f"r2{tag}_inside"] + (1 - w) * out[f"r2{tag}_outside"],
                                   rtol=1e-10)
    # every held-out model: at least the protocol's entries, inside and outside
    assert (out["n_all_inside"] >= out["n_inside"]).all() and (out["n_all_outside"] >= out["n_outside"]).all()


def test_every_model_table_gives_both_r2_and_the_reach():
    every = pd.DataFrame(dict(matrix="Merged", k=5, pipeline=["auto", "anchors+ridge", "mi"], r2=[0.65, 0.61, 0.51],
                              r2_all=[0.33, 0.58, 0.39], reach=[0.33, 0.86, np.nan], n_cells=10))
    t = page.every_model_table(every)
    assert list(t.columns) == ["k", "pipeline", "R², protocol", "R², every held-out model", "reach"]
    assert list(t["pipeline"]) == [page.AUTO, "anchors+ridge", "Gaussian + MI (the paper)"]
    assert list(t["reach"]) == ["33%", "86%", "—"]
