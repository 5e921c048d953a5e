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
    out = rc.every_model_r2(df, ks=[3, 1], methods=["random", "entropy"])
    assert list(zip(out["k"], out["method"])) == [(3, "random"), (3, "entropy"), (1, "random"), (1, "entropy")]
    means = df.groupby(["k", "method"])[["r2", "r2_all", "reach"]].mean()
    for r in out.itertuples(index=False):
        assert r.r2 == means.loc[(r.k, r.method), "r2"] and r.r2_all == means.loc[(r.k, r.method), "r2_all"]
        assert r.reach == means.loc[(r.k, r.method), "reach"] and r.n_cells == 8
    with pytest.raises(ValueError, match="not scored"):
        rc.every_model_r2(df, ks=[4])


def test_block_split_pools_both_scorings_over_seeds_and_folds_to_the_rows_sums(run):
    matrix, df = run
    inside = rc.mmlu_block(matrix.benchmarks)
    out = rc.block_split(df, inside, ks=[1, 3]).set_index(["k", "method"])
    for tag in ("", "_all"):
        sums = df.groupby(["k", "method"])[[f"ss_res{tag}", f"ss_tot{tag}", f"n_eval{tag}"]].sum()
        total = 1 - sums[f"ss_res{tag}"] / sums[f"ss_tot{tag}"]
        np.testing.assert_allclose(out[f"r2{tag}"], total.loc[out.index], rtol=1e-12)
        np.testing.assert_array_equal(out[f"n{tag}_inside"] + out[f"n{tag}_outside"],
                                      sums.loc[out.index, f"n_eval{tag}"])
        w = out[f"share{tag}_inside"]
        np.testing.assert_allclose(out[f"r2{tag}"], w * out[f"r2{tag}_inside"] + (1 - w) * out[f"r2{tag}_outside"],
                                   rtol=1e-10)
    # every held-out model: at least the protocol's entries, inside and outside
    assert (out["n_all_inside"] >= out["n_inside"]).all() and (out["n_all_outside"] >= out["n_outside"]).all()


def test_every_model_table_and_passage_say_where_the_leader_changes():
    every = pd.DataFrame(dict(matrix="Merged", k=5, method=["auto", "anchors+ridge", "mi"], r2=[0.65, 0.61, 0.51],
                              r2_all=[0.33, 0.58, 0.39], reach=[0.33, 0.86, np.nan], n_cells=10))
    t = page.every_model_table(every)
    assert list(t.columns) == ["k", "method", "R², protocol", "R², every held-out model", "reach"]
    assert list(t["method"]) == [page.AUTO, "anchors+ridge", "Gaussian + MI (the paper)"]
    assert list(t["reach"]) == ["33%", "86%", "—"]
    text = page.every_model_passage(every)
    assert "lowest reach is 33%, on Merged at *k* = 5" in text and "0.650" in text and "0.330" in text
    assert "highest R² in 1 of 1 (matrix, k) cell in the protocol's scoring and in 0 over every" in text
    assert "`anchors+ridge` instead of the recommended pipeline" in text
    full = every.assign(reach=1.0, r2_all=every["r2"])
    assert "reaches every held-out model" in page.every_model_passage(full)
    assert "leader changes" not in page.every_model_passage(full)


def test_block_table_and_passage_give_the_recommended_pipelines_parts():
    split = pd.DataFrame(dict(k=5, method=["auto", "mi"], r2=[0.68, 0.61], r2_inside=[0.82, 0.78],
                              r2_outside=[0.45, 0.42], share_inside=[0.62, 0.52], n_inside=[1624, 1662],
                              n_outside=[826, 1722], r2_all=[0.44, 0.50], r2_all_inside=[0.82, 0.77],
                              r2_all_outside=[0.19, 0.29], share_all_inside=[0.41, 0.43], n_all_inside=[1624, 1719],
                              n_all_outside=[2397, 2297]))
    t = page.block_table(split)
    assert list(t["method"]) == [page.AUTO, "Gaussian + MI (the paper)"]
    assert t["MMLU share of the protocol's SS_tot"].tolist() == ["62%", "52%"]
    assert "every model, outside MMLU" in t.columns
    text = page.block_passage(split, sizes=(57, 31, 118), own_run=True)
    assert text.startswith("57 of Merged's benchmarks are MMLU subjects, which 31 of its 118 models ran.")
    assert "0.820 inside the block, which holds 62%" in text and "outside the block is 0.190" in text
    assert "in 2 of 2 (method, k) rows" in text and "alone on Merged" in text
    assert "does not split" in page.block_passage(None)


def test_the_page_glues_the_every_model_and_block_passages_when_given_and_records_merged():
    peers = pd.DataFrame(dict(matrix="MMLU", k=5, peer=["mi"], reference_r2=0.95, peer_r2=0.94, diff=0.01,
                              diff_se=0.004, n_cells=10))
    every = pd.DataFrame(dict(matrix="MMLU", k=5, method=["auto", "mi"], r2=[0.95, 0.94], r2_all=[0.95, 0.94],
                              reach=1.0, n_cells=10))
    split = pd.DataFrame(dict(k=5, method=["auto"], r2=0.7, r2_inside=0.8, r2_outside=0.5, share_inside=0.6,
                              n_inside=10, n_outside=5, r2_all=0.5, r2_all_inside=0.8, r2_all_outside=0.2,
                              share_all_inside=0.4, n_all_inside=10, n_all_outside=20))
    kw = dict(datasets=["mmlu"], peers=peers, shared=None, choices=pd.DataFrame(dict(
        matrix="MMLU", k=[5], choice=["a+stack"], folds=[3], of=3)), coverage=pd.DataFrame(dict(
            matrix="MMLU", nominal=[0.9], coverage=[0.9])), optimism=pd.DataFrame(dict(
                matrix="MMLU", k=[5], inner_r2=[0.9], r2=[0.9], optimism=[0.0], optimism_se=0.01)),
        gains=None, curves={"MMLU": pd.DataFrame({1: [0.9, 0.8]}, index=["auto", "mi"])}, coinciding=[],
        scope_text="This run.", ks=[5])
    out = page.prose(**kw, every=every, block=split, block_sizes=(57, 31, 118), block_own_run=True)
    assert {"every_md", "block_md"} <= set(out.passages) and out.matrices == ["mmlu", "merged"]
    assert "31 of its 118 models" in out["block_md"] and "reaches every held-out model" in out["every_md"]
    assert all("$" not in text for text in out.passages.values())
    off = page.prose(**kw, every=every)
    assert off.matrices == ["mmlu"] and "does not split" in off["block_md"]
