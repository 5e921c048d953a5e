"""Big and wide matrices: the path a pipeline chooses for the matrix's size, announced in one line.

The thresholds (search budget and subsample floors, EM's limits, batch sizes)
are monkeypatched low so that small matrices exercise the big-matrix paths;
with the shipped thresholds the paper's shapes and small matrices keep the
full path and their results.
"""
from __future__ import annotations

import logging

import numpy as np
import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib.cli import main
from benchsel_lib.method import completion, correlation, plan
from benchsel_lib.method.completion import BenchPressBlend, KNNImputer
from benchsel_lib.method.correlation import (
    Correlation,
    em_too_costly,
    floored_pairwise_correlation,
)
from benchsel_lib.method.pipeline import Pipeline
from benchsel_lib.method.inner_search import SearchSettings, pipeline_path
from benchsel_lib.method.plan import plan_search

#: the paper's matrices (models x benchmarks)
PAPER_SHAPES = {"mteb": (263, 56), "merged": (118, 114), "benchpress": (83, 49), "mmlu": (234, 57)}


@pytest.fixture
def small_search(monkeypatch):
    """Search thresholds under which a matrix of a hundred models or twenty benchmarks is big."""
    monkeypatch.setattr(plan, "SEARCH_BUDGET", 1.0)
    monkeypatch.setattr(plan, "SEARCH_MIN_MODELS", 40)
    monkeypatch.setattr(plan, "SEARCH_MIN_BENCHMARKS", 8)


def _write_csv(path, X: np.ndarray) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("model," + ",".join(f"b{j}" for j in range(X.shape[1])) + "\n")
        fh.writelines(f"m{i}," + ",".join("" if np.isnan(x) else f"{x:.6f}" for x in row) + "\n"
                      for i, row in enumerate(X))
    return str(path)


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("benchsel: ")]


# ------------------------------------------------------------------ nothing moves on the paper's and small matrices
@pytest.mark.parametrize("name", sorted(PAPER_SHAPES))
def test_paper_shapes_keep_the_full_path(name):
    m, N = PAPER_SHAPES[name]
    for rows in (m, m - m // 10, max(3, m // 10)):  # the whole matrix, 10% and 90% holdout training splits
        assert not em_too_costly(rows, N)
        for k, n_ks in ((5, 1), (15, 15)):
            assert plan_search(rows, N, k=k, n_ks=n_ks, observed=0.3).full
            assert plan_search(rows, N, k=k, selectors=["given"], observed=0.3).full


def test_small_matrices_give_the_results_of_the_full_search():
    X = low_rank_scores(3, m=80, n=10, missing=0.2, standardize=True)
    planned = pipeline_path(X, 3, settings=SearchSettings(seed=1))
    full = pipeline_path(X, 3, settings=SearchSettings(seed=1, budget=None))
    for a, b in zip(planned, full, strict=True):
        assert (a.selector, a.predictor, a.selection, a.weights, a.quantiles) == \
               (b.selector, b.predictor, b.selection, b.weights, b.quantiles)
        assert np.array_equal(a.scale, b.scale) and np.array_equal(a.conformal, b.conformal)
        assert a.scores.equals(b.scores) and a.plan is None
    matrix = as_matrix(X)
    assert Pipeline.auto(k=3).fit(matrix).notes_ == []
    assert Pipeline.paper(k=3).fit(matrix).notes_ == []


def test_batched_blend_and_knn_match_one_batch(monkeypatch):
    tr = low_rank_scores(7, m=150, n=30, missing=0.4, standardize=True)
    query = low_rank_scores(8, m=40, n=30, missing=0.8, standardize=True)
    obs = (~np.isnan(tr)).astype(float)
    assert (obs.T @ obs).min() >= 6  # so min_overlap 5 and 6 give the same correlations (and separate memos)
    one = BenchPressBlend(min_overlap=5).fit(tr).predict(query)
    tr_knn = low_rank_scores(9, m=2000, n=60, missing=0.4, standardize=True)
    q_knn = low_rank_scores(10, m=100, n=60, missing=0.7, standardize=True)
    knn_one = KNNImputer().fit(tr_knn).predict(q_knn)
    monkeypatch.setattr(completion, "FIT_BATCH", 100)  # batches of two fits
    monkeypatch.setattr(completion, "KNN_BATCH", 500)  # blocks of 33 query rows
    batched = BenchPressBlend(min_overlap=6).fit(tr).predict(query)
    assert np.array_equal(one, batched)  # each fit's numbers as in one batch
    np.testing.assert_allclose(KNNImputer().fit(tr_knn).predict(q_knn), knn_one, rtol=0, atol=1e-12)


# ------------------------------------------------------------------ a subsample of the models
def test_model_subsample_is_chosen_announced_and_the_final_selection_uses_every_model(small_search, monkeypatch,
                                                                                    caplog):
    monkeypatch.setattr(plan, "SEARCH_MIN_BENCHMARKS", 100)  # every benchmark: the models alone are subsampled
    X = low_rank_scores(4, m=120, n=12, missing=0.2)
    matrix = as_matrix(X)
    with caplog.at_level(logging.INFO, logger="benchsel_lib"):
        pipe = Pipeline.auto(k=3).fit(matrix)
    assert len(pipe.notes_) == 1
    note = pipe.notes_[0]
    assert "\n" not in note and "subsample of 40 of the 120 models (seed 0)" in note
    assert [r.getMessage() for r in caplog.records] == pipe.notes_  # logged once, when it was planned
    rec = pipe.choice_
    assert rec.plan == note
    assert rec.scores["n_eval"].max() <= 40 * 12  # the inner cross-validation saw the subsample only
    # the recommended selection is the chosen selector's selection on every model
    sel = next(s for s in pipe.component("selector") if s.label == rec.selector)
    z = pipe.scaling_.transform(X)
    order = sel.select(pipe.correlation_, 3, names=matrix.benchmarks, counts=(~np.isnan(z)).sum(axis=0),
                       n_models=120, train=z, seed=0, missing_initial="skip").order
    assert rec.selection == list(order[:3])
    pred = pipe.predict({b: float(np.nanmean(matrix.scores[:, j])) for j, b in enumerate(matrix.benchmarks)
                         if b in pipe.selected})
    assert len(pred) == 9 and np.isfinite(pred[["mean", "lower", "upper"]].to_numpy()).all()


def test_subsamples_are_deterministic(small_search):
    a = plan_search(5000, 30, k=3, seed=7, keep=[29])
    b = plan_search(5000, 30, k=3, seed=7, keep=[29])
    c = plan_search(5000, 30, k=3, seed=8, keep=[29])
    assert np.array_equal(a.rows, b.rows) and np.array_equal(a.columns, b.columns)
    assert not np.array_equal(a.rows, c.rows)
    assert a.rows.size == 40 and np.all(np.diff(a.rows) > 0) and a.rows.max() < 5000
    assert a.columns.size == 8 and np.all(np.diff(a.columns) > 0) and 29 in a.columns
    X = low_rank_scores(5, m=120, n=12, missing=0.3)
    fits = [Pipeline.auto(k=3, seed=2).fit(as_matrix(X)) for _ in range(2)]
    assert fits[0].notes_ == fits[1].notes_ and "seed 2" in fits[0].notes_[0]
    assert fits[0].choice_.name == fits[1].choice_.name and fits[0].selected == fits[1].selected
    assert np.array_equal(fits[0].choice_.scale, fits[1].choice_.scale)


# ------------------------------------------------------------------ a subsample of the benchmarks, a costly selector left out
def test_benchmark_subsample_keeps_mandatory_ones_and_leaves_out_a_costly_strategy(small_search, monkeypatch):
    monkeypatch.setattr(plan, "SELECTION_BUDGET", 1e4)  # MI's per-step factorizations (2e4 here) are over it
    X = low_rank_scores(5, m=30, n=20)
    matrix = as_matrix(X)
    pipe = Pipeline.auto(k=3, selectors=("mi", "entropy", "random"), initial=["b17"]).fit(matrix)
    assert len(pipe.notes_) == 1
    note = pipe.notes_[0]
    assert "subsample of 8 of the 20 benchmarks" in note and "mi left out of the candidates" in note
    rec = pipe.choice_
    assert rec.selector in ("entropy", "random") and "mi" not in set(rec.scores["selector"])
    assert rec.selection[0] == 17 and len(set(rec.selection)) == 3  # chosen on all 20 benchmarks, mandatory first
    assert rec.scale.shape == (20,) and np.isfinite(rec.scale).all() and (rec.scale > 0).all()
    planned = plan_search(30, 20, k=3, selectors=("mi", "entropy", "random"), keep=[17])
    assert 17 in planned.columns and planned.left_out == ("mi",)
    pred = pipe.predict({b: 0.0 for b in pipe.selected})
    assert len(pred) == 17 and np.isfinite(pred[["mean", "lower", "upper"]].to_numpy()).all()


# ------------------------------------------------------------------ EM replaced where it would take too long
def test_em_replaced_by_the_floored_pairwise_correlation(monkeypatch):
    X = low_rank_scores(6, m=8, n=15)  # complete, fewer models than benchmarks
    general = floored_pairwise_correlation(X)  # 15 benchmarks: the eigendecomposition route
    assert Correlation("auto").resolved(X) == "em" and Correlation("auto").note(X) is None
    monkeypatch.setattr(correlation, "EM_WIDE_BENCHMARKS", 10)
    assert Correlation("auto").resolved(X) == "pairwise-floored"
    np.testing.assert_allclose(floored_pairwise_correlation(X), general, atol=1e-12)  # the low-rank route
    pipe = Pipeline.paper(k=3).fit(as_matrix(X))
    assert len(pipe.notes_) == 1 and "eigenvalues floored at 0.0001" in pipe.notes_[0]
    R = pipe.correlation_
    assert np.array_equal(R, R.T) and np.all(np.diag(R) == 1.0) and np.linalg.eigvalsh(R).min() > 0
    auto = Pipeline.auto(k=3).fit(as_matrix(low_rank_scores(6, m=12, n=15)))
    assert any("eigenvalues floored" in n for n in auto.notes_)  # the inner correlation's EM too


def test_huge_benchmark_count_replaces_em_also_with_many_models(monkeypatch):
    X = low_rank_scores(9, m=60, n=15, missing=0.2)
    monkeypatch.setattr(correlation, "EM_MAX_BENCHMARKS", 12)
    assert Correlation("auto").resolved(X) == "pairwise-floored"
    assert "that many benchmarks" in Correlation("fast").note(X)
    assert Correlation("pairwise").note(X) is None and Correlation("em").note(X) is None


# ------------------------------------------------------------------ the command says so on stderr, one line each
def test_cli_select_and_predict_announce_the_path(small_search, tmp_path, capsys):
    X = low_rank_scores(4, m=120, n=12, missing=0.2) * 10 + 50
    csv = _write_csv(tmp_path / "big.csv", X)
    assert main(["select", "--data", csv, "-k", "3"]) == 0
    notes = _notes(capsys.readouterr().err)
    assert len(notes) == 1 and notes[0].startswith("benchsel: the inner search on 120 models x 12 benchmarks")
    assert main(["predict", "--data", csv, "--scores", "b0=50,b1=52"]) == 0
    notes = _notes(capsys.readouterr().err)
    assert len(notes) == 1 and "the final fit uses every model" in notes[0]


def test_cli_gaussian_select_announces_the_floored_correlation(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(correlation, "EM_WIDE_BENCHMARKS", 10)
    csv = _write_csv(tmp_path / "wide.csv", low_rank_scores(6, m=8, n=15) * 10 + 50)
    assert main(["select", "--data", csv, "-k", "3", "--pipeline", "paper"]) == 0
    captured = capsys.readouterr()
    notes = _notes(captured.err)
    assert len(notes) == 1 and "using the pairwise correlation with eigenvalues floored" in notes[0]
    assert "correlation: pairwise-floored" in captured.out


def test_a_search_cut_to_its_budget_scores_only_the_sizes_asked_for(small_search):
    X = low_rank_scores(5, m=120, n=10, missing=0.2, standardize=True)
    cut = pipeline_path(X, 4, ks=[4], settings=SearchSettings(seed=1))
    assert cut[0].plan is not None and set(cut[0].scores["k"]) == {4}
    best = cut[0].scores.sort_values("r2", ascending=False).iloc[0]
    assert (cut[0].selector, cut[0].predictor) == (best["selector"], best["predictor"])
    full = pipeline_path(X, 4, ks=[4], settings=SearchSettings(seed=1, budget=None))  # the monotone rule looks back at every smaller size
    assert full[0].plan is None and set(full[0].scores["k"]) == {1, 2, 3, 4}


def test_a_nested_search_cut_to_its_budget_keeps_one_selector_over_the_sizes_asked_for(small_search):
    X = low_rank_scores(5, m=120, n=10, missing=0.2, standardize=True)
    cut = pipeline_path(X, 4, ks=[2, 4], settings=SearchSettings(seed=1, choice="nested"))
    assert cut[0].plan is not None and set(cut[0].scores["k"]) == {2, 4}
    assert [r.k for r in cut] == [2, 4] and cut[0].selector == cut[1].selector
    assert cut[0].selection == cut[1].selection[:2]
