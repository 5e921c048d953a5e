"""Every held-out model counts: the reach and the all-models R^2 beside the protocol's R^2."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.data import ScoreMatrix
from benchsel_lib.method.pipeline import Pipeline
from benchsel_lib.protocol.cv import cross_validate
from benchsel_lib.protocol.splits import cv_splits
from benchsel_lib.protocol.summaries import ScoredEntries, block_r2, summarize_cv

NEW = ["reach", "n_reached", "r2_all", "n_eval_all", "ss_res_all", "ss_tot_all"]


def _sparse(seed: int = 3, m: int = 40, n: int = 8, missing: float = 0.5) -> ScoreMatrix:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n)) + 2.0 * rng.normal(size=(m, 1))
    X[rng.random(X.shape) < missing] = np.nan
    X[~(~np.isnan(X)).any(axis=1), 0] = 1.0  # every model observes something
    return ScoreMatrix(X, [f"m{i}" for i in range(m)], [f"b{j}" for j in range(n)])


def _cv(matrix: ScoreMatrix, pipelines, **kw) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cross_validate(matrix, pipelines, progress=False, **kw)


def test_reach_is_the_hand_count_of_held_out_models_that_ran_the_selected_benchmark():
    # 12 models, 3 benchmarks; only models 0, 1, 2 and 7 ran b0, which the pipeline always selects first
    X = np.arange(36, dtype=float).reshape(12, 3) % 7 + np.linspace(0, 1, 12)[:, None]
    X[[3, 4, 5, 6, 8, 9, 10, 11], 0] = np.nan
    matrix = ScoreMatrix(X, [f"m{i}" for i in range(12)], ["b0", "b1", "b2"])
    df = _cv(matrix, [Pipeline.paper(objective="entropy", initial=("b0",))], k_max=1, n_folds=3, seed=5)
    ran = {0, 1, 2, 7}
    for fold, _, val in cv_splits(12, n_folds=3, holdout=0.1, seed=5, scheme="nested"):
        row = df[df["fold"] == fold].iloc[0]
        assert row["selected"] == ("b0",)
        hand = sum(int(i) in ran for i in val)
        assert row["n_reached"] == hand
        assert row["reach"] == hand / len(val)
        assert row["n_val"] == len(val)


def test_reach_counts_the_models_observing_any_selected_benchmark():
    matrix = _sparse()
    X = np.asarray(matrix.scores)
    df = _cv(matrix, ["entropy", "random"], k_max=3, n_folds=4, seed=2)
    val_of = {f: va for f, _, va in cv_splits(X.shape[0], n_folds=4, holdout=0.1, seed=2, scheme="nested")}
    for row in df.itertuples(index=False):
        cols = [matrix.benchmarks.index(b) for b in row.selected]
        hand = int((~np.isnan(X[np.ix_(val_of[row.fold], cols)])).any(axis=1).sum())
        assert row.n_reached == hand and row.reach == pytest.approx(hand / row.n_val, abs=0)


@pytest.mark.parametrize("pipelines", [["entropy", "random"], ["lasso+ridge"]])
def test_r2_all_is_the_r2_of_the_mean_rule_on_the_same_folds(pipelines):
    matrix = _sparse()
    skip = _cv(matrix, pipelines, k_max=3, n_folds=4, seed=1)
    mean = _cv(matrix, pipelines, k_max=3, n_folds=4, seed=1, unreached="mean")
    assert (skip["reach"] < 1).any()  # some held-out model ran no selected benchmark
    np.testing.assert_array_equal(skip["r2_all"], mean["r2"])
    np.testing.assert_array_equal(skip["ss_res_all"], mean["ss_res"])
    np.testing.assert_array_equal(skip["n_eval_all"], mean["n_eval"])
    np.testing.assert_array_equal(mean["r2_all"], mean["r2"])  # under the mean rule both are the same R^2
    np.testing.assert_array_equal(skip["reach"], mean["reach"])  # the reach does not depend on the rule


def test_protocol_r2_skips_unreached_models_and_keeps_its_sums():
    matrix = _sparse()
    df = _cv(matrix, ["entropy"], k_max=3, n_folds=4, seed=1, keep_entries=True)
    plain = _cv(matrix, ["entropy"], k_max=3, n_folds=4, seed=1)
    pd.testing.assert_frame_equal(df.drop(columns="entries"), plain)
    for row in df.itertuples(index=False):
        e: ScoredEntries = row.entries
        assert row.r2 == pytest.approx(1 - e.sq_residual.sum() / e.sq_truth.sum(), rel=1e-12)
        assert row.n_eval == e.index.size and row.n_eval_all == e.index.size + e.unreached.index.size
        every = e.every()
        assert every.sq_residual.sum() == pytest.approx(row.ss_res_all, rel=1e-12)
        assert every.sq_truth.sum() == pytest.approx(row.ss_tot_all, rel=1e-12)
        assert np.all(np.diff(every.index) > 0)
        # an unreached model is predicted by the training mean (0): its squared residual is its squared truth
        np.testing.assert_allclose(e.unreached.sq_residual, e.unreached.sq_truth, rtol=1e-12)


def test_unreached_entries_are_empty_under_the_mean_rule():
    df = _cv(_sparse(), ["entropy"], k_max=2, n_folds=3, seed=0, unreached="mean", keep_entries=True)
    assert all(e.unreached.index.size == 0 for e in df["entries"])


def test_summarize_cv_carries_the_mean_reach_and_the_all_models_r2():
    df = _cv(_sparse(), ["entropy", "random"], k_max=2, n_folds=4, seed=1)
    s = summarize_cv(df).set_index(["pipeline", "k"])
    by = df.groupby(["pipeline", "k"])
    np.testing.assert_allclose(s["reach_mean"], by["reach"].mean(), rtol=0, atol=0)
    np.testing.assert_allclose(s["r2_all_mean"], by["r2_all"].mean(), rtol=0, atol=0)
    np.testing.assert_allclose(s["r2_mean"], by["r2"].mean(), rtol=0, atol=0)


@pytest.mark.parametrize("every", [False, True])
def test_block_split_pools_to_the_total(every):
    matrix = _sparse(n=9)
    df = _cv(matrix, ["entropy", "random"], k_max=3, n_folds=4, seed=1, keep_entries=True)
    inside = np.array([b in ("b0", "b3", "b4", "b8") for b in matrix.benchmarks])
    out = block_r2(df, inside, every=every).set_index(["pipeline", "holdout", "k"])
    tag = "_all" if every else ""
    sums = df.groupby(["pipeline", "holdout", "k"])[[f"ss_res{tag}", f"ss_tot{tag}", f"n_eval{tag}"]].sum()
    np.testing.assert_allclose(out["ss_res"], sums[f"ss_res{tag}"], rtol=1e-12)
    np.testing.assert_allclose(out["ss_tot"], sums[f"ss_tot{tag}"], rtol=1e-12)
    np.testing.assert_array_equal(out["n"], sums[f"n_eval{tag}"])
    np.testing.assert_allclose(out["ss_res_inside"] + out["ss_res_outside"], out["ss_res"], rtol=1e-12)
    np.testing.assert_allclose(out["ss_tot_inside"] + out["ss_tot_outside"], out["ss_tot"], rtol=1e-12)
    np.testing.assert_array_equal(out["n_inside"] + out["n_outside"], out["n"])
    np.testing.assert_allclose(out["r2"], 1 - out["ss_res"] / out["ss_tot"], rtol=1e-12)
    # the whole R^2 is the inside and outside R^2 weighted by their share of SS_tot
    w = out["tot_share_inside"]
    np.testing.assert_allclose(out["r2"], w * out["r2_inside"] + (1 - w) * out["r2_outside"], rtol=1e-10)


def test_block_split_refuses_a_mask_of_the_wrong_length_and_frames_without_entries():
    matrix = _sparse()
    df = _cv(matrix, ["entropy"], k_max=1, n_folds=3, seed=0, keep_entries=True)
    with pytest.raises(ValueError, match="benchmarks"):
        block_r2(df, np.ones(3, dtype=bool))
    with pytest.raises(ValueError, match="keep_entries"):
        block_r2(df.drop(columns="entries"), np.ones(8, dtype=bool))
    with pytest.raises(ValueError, match="True/False"):
        block_r2(df, [1, 0, 1])
