"""The out-of-fold engine: folds, held-out rows, the loop, and the protocol and calibration that run on it."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel_lib.method.folds import Fold, InnerFolds, InterleavedFolds, cross_fit, run_folds
from benchsel_lib.method.oof import HeldOut
from benchsel_lib.method.predictors import scored_entries
from benchsel_lib.protocol.splits import CVSplits, cv_splits


def _partition_checks(folds, m):
    held = np.concatenate([f.held for f in folds])
    assert np.array_equal(np.sort(held), np.arange(m))  # every row held out exactly once
    for f in folds:
        assert np.array_equal(np.sort(np.concatenate([f.train, f.held])), np.arange(m))
        assert not np.intersect1d(f.train, f.held).size
        assert np.array_equal(f.train, np.sort(f.train)) and np.array_equal(f.held, np.sort(f.held))


@pytest.mark.parametrize("m, k", [(10, 2), (23, 5), (7, 7)])
def test_inner_folds_partition_the_rows_into_balanced_folds(m, k):
    folds = InnerFolds(k, 4).folds(m)
    _partition_checks(folds, m)
    sizes = [f.held.size for f in folds]
    assert max(sizes) - min(sizes) <= 1 and [f.index for f in folds] == list(range(k))


def test_inner_folds_repeat_for_a_seed_and_differ_between_seeds():
    a, b, c = (InnerFolds(4, s).held_out(40) for s in (1, 1, 2))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_inner_folds_without_a_stream_draw_from_the_seed_itself():
    # the variance inflation's folds: numpy's own permutation of the seed, cut into balanced chunks
    expected = [np.sort(c) for c in np.array_split(np.random.default_rng(7).permutation(31), 3)]
    got = InnerFolds(3, 7, stream=None).held_out(31)
    assert all(np.array_equal(x, y) for x, y in zip(got, expected))
    seq = np.random.SeedSequence(5, spawn_key=(3, 2))
    again = [np.sort(c) for c in np.array_split(np.random.default_rng(seq).permutation(31), 3)]
    assert all(np.array_equal(x, y) for x, y in zip(InnerFolds(3, seq, stream=None).held_out(31), again))


def test_interleaved_folds_hold_out_row_i_in_fold_i_mod_k():
    folds = InterleavedFolds(3).folds(11)
    _partition_checks(folds, 11)
    for f in folds:
        assert (f.held % 3 == f.index).all() and not (f.train % 3 == f.index).any()


def test_the_sparse_objectives_strength_is_chosen_on_interleaved_folds():
    from benchsel_lib.method.sparse import held_out_risk, multi_target_lasso_path, pairwise_correlation, sparse_order

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3)) @ rng.normal(size=(3, 8)) + 0.5 * rng.normal(size=(40, 8))
    Z = (X - X.mean(0)) / X.std(0, ddof=1)
    res = sparse_order(np.corrcoef(Z, rowvar=False), Z, 4, n_folds=4)
    fold = np.arange(40) % 4  # by hand: row i in fold i mod 4, the path fit on the other folds
    kw = dict(features=np.ones(8, dtype=bool), unpenalized=[], tol=1e-7, max_iter=100)
    risk = sum(held_out_risk(pairwise_correlation(Z[fold == f]),
                             multi_target_lasso_path(pairwise_correlation(Z[fold != f]), res.lambdas, **kw))
               for f in range(4)) / 4
    np.testing.assert_allclose(res.cv_risk, risk, rtol=1e-12, atol=1e-14)


def test_inner_folds_refuse_fewer_than_two_folds():
    with pytest.raises(ValueError, match="n_folds"):
        InnerFolds(1, 0)


def _toy_held(unreached):
    v = np.array([[1.0, 2.0, np.nan, 4.0],
                  [np.nan, 5.0, 6.0, np.nan],   # observes no revealed benchmark of sel = [0, 3]
                  [7.0, np.nan, 8.0, 9.0]])
    return HeldOut.of(v, unreached=unreached)


class _Spy:
    """A predictor that records the query rows it is handed and predicts 0 (the training mean)."""

    name = "spy"

    def predict(self, query):
        self.seen = query.copy()
        return np.zeros_like(query)


def test_held_out_rows_reveal_only_their_observed_selected_scores():
    held, spy = _toy_held("skip"), _Spy()
    mean, var = held.predict(spy, np.array([0, 3]), np.array([1, 2]))
    assert mean.shape == (3, 2) and var is None
    q = spy.seen
    expected = np.array([[1.0, np.nan, np.nan, 4.0], [np.nan] * 4, [7.0, np.nan, np.nan, 9.0]])
    np.testing.assert_array_equal(q, expected)
    np.testing.assert_array_equal(held.reached(np.array([0, 3])), [True, False, True])


@pytest.mark.parametrize("unreached", ["skip", "mean"])
def test_held_out_scored_entries_follow_the_protocols_unreached_rule(unreached):
    held, sel = _toy_held(unreached), np.array([0, 3])
    E = held.scored(sel)
    # never a revealed column, never an unobserved entry
    assert not E[:, sel].any() and not (E & ~held.observed).any()
    # the row that observes no revealed benchmark is scored only under "mean"
    assert E[1].any() == (unreached == "mean")
    np.testing.assert_array_equal(E[[0, 2]][:, [1, 2]], [[True, False], [False, True]])
    T = np.array([1, 2])
    np.testing.assert_array_equal(held.scored(sel, targets=T), E[:, T])
    np.testing.assert_array_equal(held.scored(sel, targets=T), scored_entries(held.observed, sel, T, unreached))


def test_cross_fit_gives_each_fold_its_result_in_fold_order_with_any_runner():
    folds = InnerFolds(3, 0).folds(12)

    def unit(fold):
        return int(fold.held.sum())

    serial = list(cross_fit(folds, unit))
    assert [f.index for f, _ in serial] == [0, 1, 2]
    assert [r for _, r in serial] == [int(f.held.sum()) for f in folds]

    def backwards(jobs):  # a runner that works in another order and returns results in the jobs' order
        done = {id(f): u(f) for f, u in reversed(list(jobs))}
        return [done[id(f)] for f, _ in jobs]

    assert [r for _, r in cross_fit(folds, unit, run=backwards)] == [r for _, r in serial]


def test_run_folds_runs_each_unit_when_its_result_is_asked_for():
    ran = []
    jobs = [(Fold(np.arange(1), np.arange(1, 2), i), lambda f: ran.append(f.index) or f.index) for i in range(3)]
    results = run_folds(jobs)
    assert ran == []
    assert next(results) == 0 and ran == [0]
    assert list(results) == [1, 2] and ran == [0, 1, 2]


@pytest.mark.parametrize("scheme", ["nested", "paper"])
def test_protocol_splits_are_the_protocols_folds_holdout_by_holdout(scheme):
    folds = CVSplits(5, (0.1, 0.4), 3, scheme).folds(40)
    expected = [(h, f, tr, va) for h in (0.1, 0.4) for f, tr, va in cv_splits(40, n_folds=5, holdout=h, seed=3,
                                                                              scheme=scheme)]
    assert len(folds) == len(expected) == 10
    for fold, (h, f, tr, va) in zip(folds, expected):
        assert fold.meta["holdout"] == h and fold.index == f
        assert np.array_equal(fold.train, tr) and np.array_equal(fold.held, va)


def test_cross_validation_runs_its_splits_through_the_engine(monkeypatch):
    from benchsel_lib import Pipeline, cross_validate
    from benchsel_lib.data import ScoreMatrix
    from benchsel_lib.protocol import cv as cv_module

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2)) @ rng.normal(size=(2, 6)) + 0.3 * rng.normal(size=(30, 6))
    m = ScoreMatrix(X, [f"m{i}" for i in range(30)], [f"b{j}" for j in range(6)], source="toy")
    seen = []
    real = cv_module.run_folds

    def spy(jobs, *, run=None):
        if run is not None:  # the protocol's call, with the sweep as runner (each cell runs its own jobs serially)
            seen.extend((f.meta["holdout"], f.index, f.train.copy(), f.held.copy()) for f, _ in jobs)
        return real(jobs, run=run)

    monkeypatch.setattr(cv_module, "run_folds", spy)
    df = cross_validate(m, Pipeline.paper(objective="entropy", estimator="pairwise"), holdouts=(0.1, 0.5), k_max=2,
                        n_folds=3, seed=2, n_jobs=1, progress=False)
    expected = CVSplits(3, (0.1, 0.5), 2, "nested").folds(30)
    assert [(h, f) for h, f, _, _ in seen] == [(x.meta["holdout"], x.index) for x in expected]
    for (_, _, tr, va), x in zip(seen, expected):
        assert np.array_equal(tr, x.train) and np.array_equal(va, x.held)
    for (h, f), part in df.groupby(["holdout", "fold"]):
        x = next(x for x in expected if x.meta["holdout"] == h and x.index == f)
        assert (part["n_train"] == x.train.size).all() and (part["n_val"] == x.held.size).all()
