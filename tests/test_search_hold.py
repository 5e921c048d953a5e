"""A held candidate (``keep_blocks="hold"``): above a block, the block's choice predicting from its benchmarks only."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib.method.correlation import inner_correlation
from benchsel_lib.method.pipeline import Pipeline, clone
from benchsel_lib.method.predictors import make_predictor
from benchsel_lib.method.search import held_query, pipeline_path

_data = partial(low_rank_scores, m=40, n=10, noise=0.5, missing=0.1, standardize=True)
_KW = dict(seed=1, levels=(), strategies=("mi", "entropy-obs", "random"), predictors=("gaussian", "ridge"))
_NOISE_KW = dict(seed=1, levels=(), strategies=("mi",), predictors=("gaussian", "ridge"))


def _four_related_and_eight_noise(seed: int = 1, m: int = 60) -> np.ndarray:
    """Four benchmarks driven by one factor, then eight of pure noise (standardized columns).

    Mutual information picks two related benchmarks first; past them it can only add noise, which a
    predictor conditioned on it fits to no avail: where the held candidate is for.
    """
    rng = np.random.default_rng(seed)
    related = rng.normal(size=(m, 1)) @ rng.uniform(0.8, 1.2, size=(1, 4)) + 0.3 * rng.normal(size=(m, 4))
    X = np.hstack([related, rng.normal(size=(m, 8))])
    return (X - X.mean(axis=0)) / X.std(axis=0)


def test_a_held_candidate_only_adds_rows_above_the_block_with_the_entries_of_its_strategy():
    X = _data(30)
    kept = pipeline_path(X, 7, blocks=(3,), keep_blocks="always", **_KW)
    held = pipeline_path(X, 7, blocks=(3,), keep_blocks="hold", **_KW)
    label = f"{held[2].strategy}@3"
    scores = held[-1].scores
    mine = scores[scores["strategy"] == label]
    assert sorted(set(mine["k"])) == [4, 5, 6, 7]  # above the block only
    others = scores[scores["strategy"] != label].reset_index(drop=True)
    assert others.equals(kept[-1].scores.reset_index(drop=True))  # the other candidates' scores unchanged
    base = scores[scores["strategy"] == held[2].strategy].set_index(["predictor", "k"])["n_eval"]
    assert (mine.set_index(["predictor", "k"])["n_eval"] == base.loc[mine.set_index(["predictor", "k"]).index]).all()


def test_where_the_benchmarks_past_the_block_are_noise_the_held_choice_ignores_them():
    X = _four_related_and_eight_noise()
    recs = {r.k: r for r in pipeline_path(X, 5, ks=[2, 5], blocks=(2,), keep_blocks="hold", **_NOISE_KW)}
    block, rec = recs[2], recs[5]
    assert set(block.selection) <= {0, 1, 2, 3}
    assert rec.strategy == "mi@2" and rec.conditioned == list(block.selection)
    assert list(rec.selection[:2]) == list(block.selection) and len(rec.selection) == 5
    # its predictions: the chosen predictor fit on the training rows, conditioned on the block's two benchmarks
    rng = np.random.default_rng(7)
    query = np.full((6, X.shape[1]), np.nan)
    query[:, rec.selection] = rng.normal(size=(6, 5))
    targets = np.setdiff1d(np.arange(X.shape[1]), rec.selection)
    direct = make_predictor(rec.predictor).fit(X, cov=inner_correlation(X)).predict(held_query(query, block.selection))
    out = rec.predict(X, query)
    np.testing.assert_allclose(out[:, targets], np.asarray(direct)[:, targets], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(out[:, rec.selection], query[:, rec.selection])  # revealed entries pass through
    moved = query.copy()
    moved[:, rec.selection[2:]] += 3.0  # the benchmarks past the block do not move a held prediction
    np.testing.assert_array_equal(rec.predict(X, moved)[:, targets], out[:, targets])


def test_without_the_held_candidate_the_same_search_conditions_on_the_noise():
    # the contrast that makes the test above meaningful: keeping the block alone, the choice at k = 5 uses
    # every revealed benchmark, and its inner R^2 is below the held candidate's
    X = _four_related_and_eight_noise()
    kept = pipeline_path(X, 5, ks=[5], blocks=(2,), keep_blocks="always", **_NOISE_KW)[0]
    held = pipeline_path(X, 5, ks=[5], blocks=(2,), keep_blocks="hold", **_NOISE_KW)[0]
    assert kept.conditioned is None and held.conditioned is not None
    assert held.inner_r2 > kept.inner_r2


def test_a_fitted_pipeline_with_a_held_choice_predicts_a_new_model_from_the_block_only():
    M = as_matrix(_four_related_and_eight_noise())
    pipe = Pipeline.auto(k=5, blocks=(2,), keep_blocks="hold", selectors=("mi",), predictors=("gaussian", "ridge"),
                         seed=1)
    assert clone(pipe).keep_blocks == "hold"
    pipe.fit(M)
    assert pipe.choice_.conditioned is not None
    chosen = [M.benchmarks[j] for j in pipe.path_.steps[-1].selected]
    given = dict(zip(chosen, [0.5, -0.2, 1.0, 0.3, -0.7]))
    base = pipe.predict(given, level=0.8)
    assert len(base) == M.shape[1] - 5 and np.isfinite(base.to_numpy()).all()
    past = dict(given, **{b: given[b] + 2.0 for b in chosen[2:]})
    np.testing.assert_array_equal(pipe.predict(past, level=0.8)["mean"], base["mean"])
    first = dict(given, **{chosen[0]: given[chosen[0]] + 2.0})
    assert not np.allclose(pipe.predict(first, level=0.8)["mean"], base["mean"])


@pytest.mark.parametrize("blocks", [(2, 4), (3,)])
def test_held_choices_are_determined_by_the_seed(blocks):
    X = _four_related_and_eight_noise(seed=3)
    a = pipeline_path(X, 7, blocks=blocks, keep_blocks="hold", **_NOISE_KW)
    b = pipeline_path(X, 7, blocks=blocks, keep_blocks="hold", **_NOISE_KW)
    assert [(r.name, r.selection, r.conditioned, r.inner_r2) for r in a] == \
        [(r.name, r.selection, r.conditioned, r.inner_r2) for r in b]
    for r in a:
        if r.conditioned is not None:  # held: the benchmarks it conditions on start its selection
            assert list(r.selection[:len(r.conditioned)]) == list(r.conditioned)
