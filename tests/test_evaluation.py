"""Tests of the Section 5.1 cross-validation protocol, one rule at a time.

All runs use the paper's pipelines with a pairwise correlation (:func:`_paper`), so the checks do
not depend on EM.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.data import ScoreMatrix
from benchsel_lib.method.correlation import estimate_correlation
from benchsel_lib.method.gaussian import GaussianPredictor
from benchsel_lib.method.pipeline import Pipeline
from benchsel_lib.method.predictors import r2_from_sums
from benchsel_lib.protocol.cv import cross_validate, kept_columns
from benchsel_lib.protocol.splits import cv_splits, fold_assignments
from benchsel_lib.protocol.summaries import (
    calibration_table,
    summarize_cv,
    top_residuals,
)
from benchsel_lib.studies.extrapolation import extrapolation_check


def _toy(M: int = 30, N: int = 6, *, seed: int = 0, missing: float = 0.0, rank: int = 2) -> ScoreMatrix:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(M, rank)) @ rng.normal(size=(rank, N)) + 0.3 * rng.normal(size=(M, N))
    X = 50 + 10 * X
    if missing:
        mask = rng.random(X.shape) < missing
        mask[:, 0] = False  # keep every row non-empty
        X[mask] = np.nan
    return ScoreMatrix(X, [f"m{i}" for i in range(M)], [f"b{j}" for j in range(N)], "toy")


def _paper(*objectives: str, **options) -> list[Pipeline]:
    """The paper's pipelines for ``objectives`` with a pairwise correlation estimate (and ``options``)."""
    return [Pipeline.paper(objective=o, estimator="pairwise", **options) for o in objectives]


def _hand_fold(X, train, val, sel, *, ridge=1e-2, clip=10.0, unreached="skip", entries=None):
    """Independent computation of one fold at one k (Section 5.1).

    Training standard deviations use the n - 1 denominator; a validation model
    that observes none of the selected benchmarks is skipped (``"skip"``, the
    paper's numbers) or predicted by the training mean (``"mean"``).  A dict
    ``entries`` receives ``(model, benchmark) -> (squared residual, z^2)`` of
    every scored entry.
    """
    Xtr = X[train]
    mu = np.nanmean(Xtr, axis=0)
    sd = np.maximum(np.nanstd(Xtr, axis=0, ddof=1), 0.01 * (np.abs(mu) + 1))
    R = estimate_correlation(Xtr, method="pairwise").corr
    N = X.shape[1]
    unsel = [j for j in range(N) if j not in sel]
    ss_res = ss_tot = 0.0
    n_eval = 0
    for i in val:
        z = np.clip((X[i] - mu) / sd, -clip, clip)
        A = [j for j in sel if not np.isnan(X[i, j])]  # observed selected only
        if not A and unreached == "skip":
            continue
        for t in unsel:
            if np.isnan(X[i, t]):
                continue  # evaluate observed unselected entries only
            if A:
                w = np.linalg.solve(R[np.ix_(A, A)] + ridge * np.eye(len(A)), R[A, t])
                pred = float(z[A] @ w)
            else:
                pred = 0.0
            ss_res += (z[t] - pred) ** 2
            ss_tot += z[t] ** 2
            n_eval += 1
            if entries is not None:
                entries[(i, t)] = ((z[t] - pred) ** 2, z[t] ** 2)
    return (1 - ss_res / ss_tot if n_eval else np.nan), ss_res, ss_tot, n_eval


def _name_idx(sel_names):
    return [int(s[1:]) for s in sel_names]


def test_folds_are_balanced_partition_and_deterministic():
    for M, K in [(23, 10), (30, 7), (11, 11)]:
        lab = fold_assignments(M, K, 3)
        sizes = np.bincount(lab, minlength=K)
        assert sizes.sum() == M and sizes.max() - sizes.min() <= 1
        np.testing.assert_array_equal(lab, fold_assignments(M, K, 3))
    assert not np.array_equal(fold_assignments(40, 10, 0), fold_assignments(40, 10, 1))
    with pytest.raises(ValueError, match="n_folds"):
        fold_assignments(5, 6, 0)


@pytest.mark.parametrize("holdout", [0.1, 0.2, 0.5, 0.9])
def test_training_set_is_rounded_fraction_sampled_from_pool(holdout):
    M, K = 23, 10
    lab = fold_assignments(M, K, 5)
    for f, tr, va in cv_splits(M, n_folds=K, holdout=holdout, seed=5):
        pool = np.flatnonzero(lab != f)
        np.testing.assert_array_equal(va, np.flatnonzero(lab == f))
        assert set(tr) <= set(pool) and not set(tr) & set(va)
        expected = min(int(np.floor((1 - holdout) * M + 0.5)), pool.size)
        assert tr.size == expected
        if holdout == 0.1:
            np.testing.assert_array_equal(tr, pool)  # at p = 10% the training set is the pool
    # the training subsample is a prefix of one pool permutation: nested across holdouts
    small = cv_splits(M, n_folds=K, holdout=0.9, seed=5)
    big = cv_splits(M, n_folds=K, holdout=0.5, seed=5)
    for (_, a, _), (_, b, _) in zip(small, big):
        assert set(a) <= set(b)


def test_n_train_column_and_validation_size():
    m = _toy(23)
    df = cross_validate(m, _paper("entropy"), holdouts=(0.1, 0.5), k_max=2, seed=1)
    for (h, f), g in df.groupby(["holdout", "fold"]):
        assert (g.n_train == min(int(np.floor((1 - h) * 23 + 0.5)), 23 - g.n_val.iloc[0])).all()
    assert set(df.n_val) <= {2, 3}


def _missing_entries_run():
    """A toy matrix with 30 % missing scores, its CV rows (entropy and random, k = 1..4) and its splits."""
    m = _toy(30, 6, seed=2, missing=0.3)
    df = cross_validate(m, _paper("entropy", "random"), k_max=4, seed=4)
    return m.scores, df, cv_splits(30, n_folds=10, holdout=0.1, seed=4)


def test_hand_computed_fold_with_missing_entries():
    """Conditioning only on observed selected, evaluation only on observed unselected, ridge, R^2."""
    X, df, splits = _missing_entries_run()
    checked = 0
    for _, row in df.iterrows():
        f, tr, va = splits[int(row.fold)]
        sel = _name_idx(row.selected)
        r2, ss_res, ss_tot, n_eval = _hand_fold(X, tr, va, sel)
        assert row.n_eval == n_eval
        assert row.ss_tot == pytest.approx(ss_tot, rel=1e-10)
        assert row.ss_res == pytest.approx(ss_res, rel=1e-8)
        assert row.r2 == pytest.approx(r2, rel=1e-8, abs=1e-10)
        assert row.rmse == pytest.approx(np.sqrt(ss_res / n_eval), rel=1e-8)
        checked += 1
    assert checked == len(df) == 2 * 10 * 4


def test_same_entries_r2_is_scored_on_the_entries_every_size_scores():
    """``r2_common``: R^2 at each k over the entries scored at every size of the fold, by hand."""
    X, df, splits = _missing_entries_run()
    narrower = 0
    for (method, fold), g in df.groupby(["pipeline", "fold"]):
        _, tr, va = splits[int(fold)]
        per_k = {}
        for row in g.itertuples():
            per_k[row.k] = {}
            _hand_fold(X, tr, va, _name_idx(row.selected), entries=per_k[row.k])
        common = set.intersection(*(set(e) for e in per_k.values()))
        tot = sum(per_k[1][e][1] for e in common)
        for row in g.itertuples():
            assert row.n_common == len(common)
            assert row.r2_common == pytest.approx(1 - sum(per_k[row.k][e][0] for e in common) / tot, rel=1e-8)
            assert row.ss_tot_common == pytest.approx(tot, rel=1e-10)
            assert row.ss_res_common == pytest.approx(sum(per_k[row.k][e][0] for e in common), rel=1e-8)
        narrower += len(common) < g.n_eval.max()
    assert narrower > 0  # the missing entries make some sizes score entries that others do not
    one = cross_validate(_toy(30, 6, seed=2, missing=0.3), _paper("entropy"), k_max=4, ks=[3], seed=4)
    np.testing.assert_allclose(one.r2_common, one.r2)  # one size: its own entries
    np.testing.assert_array_equal(one.n_common, one.n_eval)


def test_kept_entries_are_the_scored_entries_with_their_residuals_and_change_no_number():
    """``keep_entries``: each row's scored entries, squared residuals and truths, by hand; the rest is as without."""
    m = _toy(30, 6, seed=2, missing=0.3)
    X, splits = m.scores, cv_splits(30, n_folds=10, holdout=0.1, seed=4)
    df = cross_validate(m, _paper("entropy", "random"), k_max=4, seed=4, keep_entries=True)
    plain = cross_validate(m, _paper("entropy", "random"), k_max=4, seed=4)
    pd.testing.assert_frame_equal(df.drop(columns="entries"), plain)
    N = X.shape[1]
    for row in df.itertuples():
        _, tr, va = splits[int(row.fold)]
        entries = {}
        _hand_fold(X, tr, va, _name_idx(row.selected), entries=entries)
        keys = sorted(i * N + t for i, t in entries)
        np.testing.assert_array_equal(row.entries.index, keys)
        want = np.array([entries[divmod(int(e), N)] for e in row.entries.index]).reshape(-1, 2)
        np.testing.assert_allclose(row.entries.sq_residual, want[:, 0], rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(row.entries.sq_truth, want[:, 1], rtol=1e-10)
    with pytest.raises(ValueError, match="keep_entries must be True or False"):
        cross_validate(m, _paper("entropy"), k_max=2, keep_entries="yes")


@pytest.mark.filterwarnings("ignore:benchmark 'b0' is constant")  # every observed score of b0 is 50 here
def test_model_without_selected_scores_is_skipped_or_predicted_by_the_mean():
    """The two readings of "condition only on selected benchmarks observed" (Section 5.1)."""
    m = _toy(30, 6, seed=2, missing=0.5)
    X = np.array(m.scores)
    X[:, 0] = np.nan
    X[::2, 0] = 50.0  # keep every row non-empty through the other columns
    X[np.isnan(X).all(axis=1), 1] = 50.0
    m = ScoreMatrix(X, m.models, m.benchmarks, "toy")
    splits = cv_splits(30, n_folds=10, holdout=0.1, seed=4)
    seen = {"skip": 0, "mean": 0}
    for rule in ("skip", "mean"):
        df = cross_validate(m, _paper("entropy", "random"), k_max=3, seed=4, unreached=rule)
        assert df.attrs["unreached"] == rule
        for _, row in df.iterrows():
            f, tr, va = splits[int(row.fold)]
            sel = _name_idx(row.selected)
            r2, ss_res, ss_tot, n_eval = _hand_fold(X, tr, va, sel, unreached=rule)
            assert row.n_eval == n_eval and row.ss_res == pytest.approx(ss_res, rel=1e-8)
            seen[rule] += int(any(np.isnan(X[i, sel]).all() for i in va))
    assert seen["skip"] > 0 and seen["mean"] > 0  # the rule was exercised
    with pytest.raises(ValueError, match="unreached"):
        cross_validate(m, _paper("entropy"), k_max=2, unreached="zero")


def test_n_eval_counted_by_hand():
    X = np.array(
        [[1.0, 2.0, 3.0, 4.0], [2.0, np.nan, 1.0, 3.0], [3.0, 1.0, np.nan, np.nan], [4.0, 5.0, 2.0, 1.0],
         [0.5, 1.0, 2.5, 3.0], [2.5, 2.0, 1.5, np.nan], [1.5, 0.5, 2.0, 2.5], [3.5, 4.0, 1.0, 0.5]]
    )
    m = ScoreMatrix(X, [f"m{i}" for i in range(8)], ["b0", "b1", "b2", "b3"])
    df = cross_validate(m, _paper("entropy"), k_max=2, n_folds=4, seed=0)
    for _, row in df.iterrows():
        _, tr, va = cv_splits(8, n_folds=4, seed=0)[int(row.fold)]
        sel = _name_idx(row.selected)
        unsel = [j for j in range(4) if j not in sel]
        scored = [i for i in va if not np.isnan(X[i, sel]).all()]  # models observing a selected benchmark
        assert row.n_eval == int((~np.isnan(X[np.ix_(scored, unsel)])).sum())


def test_ridge_value_is_used():
    m = _toy(30, 5, seed=3)
    df_a = cross_validate(m, _paper("entropy", ridge=0.5), k_max=3)
    df_b = cross_validate(m, _paper("entropy"), k_max=3)
    splits = cv_splits(30, n_folds=10, holdout=0.1, seed=0)
    for df, ridge in ((df_a, 0.5), (df_b, 1e-2)):
        for _, row in df.iterrows():
            _, tr, va = splits[int(row.fold)]
            assert row.r2 == pytest.approx(_hand_fold(m.scores, tr, va, _name_idx(row.selected), ridge=ridge)[0])
    assert not np.allclose(df_a.r2, df_b.r2)


def test_validation_scores_are_clipped_at_10():
    m0 = _toy(30, 5, seed=6)
    X = np.array(m0.scores)
    lab = fold_assignments(30, 10, 0)
    i = int(np.flatnonzero(lab == 0)[0])
    X[i, :] = 1e6  # a wildly out-of-range validation model
    m = ScoreMatrix(X, m0.models, m0.benchmarks)
    df = cross_validate(m, _paper("entropy"), k_max=2)
    _, tr, va = cv_splits(30, n_folds=10, seed=0)[0]
    for _, row in df[df.fold == 0].iterrows():
        r2, ss_res, ss_tot, n_eval = _hand_fold(X, tr, va, _name_idx(row.selected), clip=10.0)
        assert row.ss_tot == pytest.approx(ss_tot)
        assert row.r2 == pytest.approx(r2)
        # the outlier contributes exactly 10^2 per evaluated entry
        assert ss_tot > 100 * (5 - row.k) - 1e-9
    df5 = cross_validate(m, _paper("entropy"), k_max=2, clip=5.0)
    assert not np.allclose(df5[df5.fold == 0].ss_tot, df[df.fold == 0].ss_tot)


def test_standardization_uses_training_statistics_only():
    m0 = _toy(30, 5, seed=7)
    X = np.array(m0.scores)
    _, tr, va = cv_splits(30, n_folds=10, seed=0)[0]
    X[va[0], 3] += 25.0  # change a validation value
    m1 = ScoreMatrix(X, m0.models, m0.benchmarks)
    a = cross_validate(m0, _paper("entropy", "mi"), k_max=3)
    b = cross_validate(m1, _paper("entropy", "mi"), k_max=3)
    fa, fb = a[a.fold == 0], b[b.fold == 0]
    # training-side quantities of fold 0 are unchanged ...
    for col in ("residual_fraction", "logdet", "mi", "selected", "n_train"):
        assert list(fa[col]) == list(fb[col])
    # ... while the fold's validation metrics see the change
    assert not np.allclose(fa.ss_tot, fb.ss_tot)
    # other folds (where the model is in training) do change
    assert not (a[a.fold != 0].residual_fraction.values == b[b.fold != 0].residual_fraction.values).all()


def test_r2_is_one_minus_ssres_over_sum_of_squares():
    df = cross_validate(_toy(30, 6, seed=8), _paper("entropy", "random"), k_max=3)
    np.testing.assert_allclose(df.r2, 1 - df.ss_res / df.ss_tot)


class _ZeroPredictor:
    name = "zero"

    def fit(self, train, *, cov=None):
        return self

    def predict(self, query):
        return np.zeros_like(query)


class _Wrapped:
    """Not a GaussianPredictor instance: forces the generic predictor path."""

    name = "wrapped-gaussian"

    def __init__(self, ridge):
        self._g = GaussianPredictor(ridge=ridge)

    def fit(self, train, *, cov=None):
        self._g.fit(train, cov=cov)
        return self

    def predict(self, query):
        return self._g.predict(query)


def test_custom_predictor_predicting_training_mean_has_r2_zero():
    df = cross_validate(_toy(30, 5), _paper("random", predictor=_ZeroPredictor()), k_max=2, levels=(0.9,))
    np.testing.assert_allclose(df.r2, 0.0, atol=1e-12)
    assert df.cov_90.isna().all()
    with pytest.raises(ValueError, match="implement fit/predict"):
        cross_validate(_toy(30, 5), _paper("entropy", "random", predictor=object()))


def test_vectorized_gaussian_path_equals_generic_predictor_path():
    m = _toy(40, 7, seed=9, missing=0.35)
    fast = cross_validate(m, _paper("entropy", "random", ridge=0.05), k_max=5)
    slow = cross_validate(m, _paper("entropy", "random", predictor=_Wrapped(0.05)), k_max=5)
    np.testing.assert_allclose(fast.r2, slow.r2, rtol=1e-9)
    assert list(fast.n_eval) == list(slow.n_eval)


def test_random_baseline_fresh_permutation_per_fold_and_determinism():
    m = _toy(40, 10, seed=10)
    df = cross_validate(m, _paper("random"), k_max=5, seed=11)
    firsts = df[df.k == 5].selected.tolist()
    assert len(set(firsts)) > 5  # differs across folds
    again = cross_validate(m, _paper("random"), k_max=5, seed=11)
    pd.testing.assert_frame_equal(df, again)
    other = cross_validate(m, _paper("random"), k_max=5, seed=12)
    assert df[df.k == 5].selected.tolist() != other[other.k == 5].selected.tolist()
    # one run of length k_max: the selections are nested in k
    for _, g in df.groupby("fold"):
        sels = g.sort_values("k").selected.tolist()
        assert all(sels[i] == sels[i + 1][: i + 1] for i in range(len(sels) - 1))


def test_same_seed_same_dataframe_all_methods():
    m = _toy(30, 6, seed=13, missing=0.2)
    a = cross_validate(m, _paper("entropy", "mi", "random"), holdouts=(0.1, 0.5), k_max=3)
    b = cross_validate(m, _paper("entropy", "mi", "random"), holdouts=(0.1, 0.5), k_max=3)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs["top_residuals"] == b.attrs["top_residuals"]
    assert list(a.columns[:4]) == ["pipeline", "holdout", "fold", "k"]
    for col in ("r2", "rmse", "residual_fraction", "logdet", "mi", "selected", "n_eval", "n_train"):
        assert col in a.columns


def test_pandas_operations_share_the_top_residual_records_instead_of_deep_copying_them():
    # pandas deep-copies DataFrame.attrs in nearly every operation; the records must not be copied each time
    import copy

    m = _toy(30, 6, seed=13, missing=0.2)
    a = cross_validate(m, _paper("entropy", "random"), holdouts=(0.1,), k_max=3)
    recs = a.attrs["top_residuals"]
    assert len(recs) > 0 and all(isinstance(r, dict) for r in recs)
    assert copy.deepcopy(a.attrs)["top_residuals"] is recs
    derived = a.sort_values("r2")[list(a.columns[:6])].reset_index(drop=True)
    assert derived.attrs["top_residuals"] is recs
    both = recs + a.attrs["top_residuals"]
    assert len(both) == 2 * len(recs) and copy.deepcopy(both) is both
    pd.testing.assert_frame_equal(top_residuals(a), pd.DataFrame(list(recs)))


def test_min_observed_filters_with_training_counts():
    m0 = _toy(30, 6, seed=14)
    X = np.array(m0.scores)
    X[2:, 5] = np.nan  # b5 observed for 2 models only
    m = ScoreMatrix(X, m0.models, m0.benchmarks)
    df = cross_validate(m, _paper("entropy", "mi", "random", min_observed=3), k_max=5)
    assert all("b5" not in s for s in df.selected)
    full = cross_validate(m, _paper("random"), k_max=5)
    assert any("b5" in s for s in full.selected)


def test_k_max_that_leaves_nothing_to_predict_is_refused_and_the_default_is_capped():
    m = _toy(30, 6, seed=14)
    with pytest.raises(ValueError, match=r"k_max=6 is out of range: the matrix has 6 benchmarks, choose 1..5"):
        cross_validate(m, _paper("entropy"), k_max=6)
    with pytest.raises(ValueError, match="k_max=99"):
        cross_validate(m, _paper("entropy"), k_max=99)
    df = cross_validate(m, _paper("entropy"), n_folds=3)  # the paper's 15, capped at 6 - 1
    assert df["k"].max() == 5 and df.attrs["k_max"] == 5 and df["r2"].notna().all()


def test_top_residuals_list_largest_contributors_per_fold():
    m = _toy(30, 6, seed=15, missing=0.2)
    df, det = cross_validate(m, _paper("entropy"), k_max=3, return_details=True)
    pd.testing.assert_frame_equal(det, top_residuals(df))
    assert {"pipeline", "holdout", "fold", "k", "rank", "model", "benchmark", "sq_residual", "share"} <= set(det.columns)
    for (f, k), g in det.groupby(["fold", "k"]):
        assert list(g["rank"]) == [1, 2, 3]
        assert (np.diff(g.sq_residual.to_numpy()) <= 0).all()
        row = df[(df.fold == f) & (df.k == k)].iloc[0]
        assert g.sq_residual.sum() <= row.ss_res + 1e-9
        assert g.share.iloc[0] == pytest.approx(g.sq_residual.iloc[0] / row.ss_res)
        # selected benchmarks never appear as residual contributors
        assert not set(g.benchmark) & set(row.selected)


def test_logit_transform_scores_r2_in_raw_standardized_space():
    m = _toy(30, 5, seed=16)
    raw = cross_validate(m, _paper("entropy"), k_max=3)
    lg = cross_validate(m, _paper("entropy", logit=True), k_max=3)
    # where both pipelines select the same benchmarks, the truth (raw-space standardized
    # validation scores) and hence SS_tot and n_eval are identical
    same = np.array([a == b for a, b in zip(lg.selected, raw.selected)])
    assert same.sum() >= 10
    np.testing.assert_allclose(lg.ss_tot[same], raw.ss_tot[same])
    assert list(lg.n_eval[same]) == list(raw.n_eval[same])
    # hand computation of one fold in logit space, r2 in raw standardized space
    from benchsel_lib.method.scaling import inverse_logit_transform, logit_transform

    X = m.scores
    _, tr, va = cv_splits(30, n_folds=10, seed=0)[0]
    row = lg[(lg.fold == 0) & (lg.k == 2)].iloc[0]
    sel = _name_idx(row.selected)
    F, smax = logit_transform(X[tr])
    Fv, _ = logit_transform(X[va], smax=smax)
    mf, sf = F.mean(0), np.maximum(F.std(0), 0.01 * (np.abs(F.mean(0)) + 1))
    mr, sr = X[tr].mean(0), np.maximum(X[tr].std(0), 0.01 * (np.abs(X[tr].mean(0)) + 1))
    R = estimate_correlation(F, method="pairwise").corr
    T = [j for j in range(5) if j not in sel]
    W = np.linalg.solve(R[np.ix_(sel, sel)] + 1e-2 * np.eye(2), R[np.ix_(sel, T)])
    zf = np.clip((Fv - mf) / sf, -10, 10)
    pred_raw = inverse_logit_transform((zf[:, sel] @ W) * sf[T] + mf[T], smax[T])
    zp = (pred_raw - mr[T]) / sr[T]
    zt = np.clip((X[va][:, T] - mr[T]) / sr[T], -10, 10)
    assert row.r2 == pytest.approx(1 - ((zt - zp) ** 2).sum() / (zt**2).sum(), rel=1e-9)
    assert lg.r2.notna().all() and not np.allclose(lg.r2, raw.r2)
    with pytest.raises(ValueError, match="logit must be True or False"):
        cross_validate(m, _paper("entropy", logit="log"))
    with pytest.raises(ValueError, match="unknown scaling 'log'"):
        cross_validate(m, Pipeline(scaling="log", correlation="pairwise", selector="entropy"))


def test_coverage_is_nominal_when_the_gaussian_model_is_true():
    rng = np.random.default_rng(17)
    N = 6
    L = rng.normal(size=(N, N))
    C = L @ L.T / N + 0.5 * np.eye(N)
    Y = rng.multivariate_normal(np.zeros(N), C, size=1500)
    m = ScoreMatrix(Y, [f"m{i}" for i in range(1500)], [f"b{j}" for j in range(N)])
    levels = (0.5, 0.8, 0.9, 0.95)
    df = cross_validate(m, _paper("entropy", inflation="inner"), k_max=3, n_folds=5, levels=levels)
    cal = calibration_table(df)
    assert len(cal) == 3 * len(levels)
    assert np.abs(cal.gap).max() < 0.03
    assert np.abs(cal.gap_cal).max() < 0.03
    np.testing.assert_allclose(df.mean_sq_z, 1.0, atol=0.15)
    np.testing.assert_allclose(df.inflation, 1.0, atol=0.1)


def test_variance_inflation_fixes_overconfident_intervals():
    # heavy-tailed, heteroscedastic scores: Gaussian intervals are too narrow for some rows;
    # a ridge that is too large shrinks predictions and distorts variances -> the inflation adapts
    rng = np.random.default_rng(18)
    f = rng.normal(size=(600, 1))
    Y = f @ np.ones((1, 5)) + 0.4 * rng.standard_t(2.5, size=(600, 5))
    m = ScoreMatrix(Y, [f"m{i}" for i in range(600)], [f"b{j}" for j in range(5)])
    df = cross_validate(m, _paper("entropy", inflation="inner"), k_max=2, n_folds=5, levels=(0.5, 0.9))
    cal = calibration_table(df)
    assert (cal.coverage_cal.notna()).all()
    assert (df.inflation > 1.0).all()  # residuals larger than the conditional variance predicts
    sub = cal[cal.nominal == 0.9]
    assert (np.abs(sub.gap_cal) <= np.abs(sub.gap) + 0.02).all() or (sub.coverage_cal >= sub.coverage).all()


def test_summarize_cv_mean_and_sd_per_method_holdout_k():
    df = cross_validate(_toy(30, 6), _paper("entropy", "random"), holdouts=(0.1, 0.5), k_max=3)
    s = summarize_cv(df)
    assert len(s) == 2 * 2 * 3 and (s.n_folds == 10).all()
    g = df[(df.pipeline == "entropy") & (df.holdout == 0.5) & (df.k == 2)]
    r = s[(s.pipeline == "entropy") & (s.holdout == 0.5) & (s.k == 2)].iloc[0]
    assert r.r2_mean == pytest.approx(g.r2.mean()) and r.r2_sd == pytest.approx(g.r2.std(ddof=1))


def test_model_selection_dual_runs_on_the_transpose():
    m = _toy(30, 12, seed=19)
    df = cross_validate(m.transpose(), _paper("entropy", "random"), k_max=4, n_folds=4)
    assert set(df.n_val) == {3}  # benchmarks are the held-out rows
    assert all(s[0].startswith("m") for s in df.selected)  # reference models are selected
    assert df.r2.notna().all()


def test_extrapolation_check_reports_top_and_random_split():
    m = _toy(50, 6, seed=20)
    df = extrapolation_check(m, _paper("entropy", "random"), k=3)
    assert set(df.split) == {"top", "random"}
    top = df[df.split == "top"]
    assert (top.n_val == 10).all() and (top.n_train == 40).all()
    assert {"r2", "cov_90"} <= set(df.columns)


def test_bad_arguments_raise_value_error():
    m = _toy(20, 4)
    with pytest.raises(ValueError, match="unknown pipeline 'greedy'"):
        cross_validate(m, ("greedy",))
    with pytest.raises(ValueError, match="unknown selection objective"):
        cross_validate(m, _paper("gready"))
    with pytest.raises(ValueError, match="holdout"):
        cross_validate(m, holdouts=(1.0,))
    with pytest.raises(ValueError, match="seed"):
        cross_validate(m, seed=-1)
    with pytest.raises(ValueError, match="k_max"):
        cross_validate(m, k_max=0)
    with pytest.raises(ValueError, match="levels"):
        cross_validate(m, _paper("entropy", "random"), levels=(1.5,))
    with pytest.raises(ValueError, match="ScoreMatrix"):
        cross_validate(np.ones((5, 5)))
    with pytest.raises(ValueError, match="coverage columns"):
        calibration_table(cross_validate(m, _paper("entropy", "random"), k_max=1))


def test_parallel_workers_give_the_same_frame():
    m = _toy(30, 6, seed=21, missing=0.2)
    a = cross_validate(m, _paper("entropy", "random"), holdouts=(0.1, 0.5), k_max=3)
    b = cross_validate(m, _paper("entropy", "random"), holdouts=(0.1, 0.5), k_max=3, n_jobs=2)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs["top_residuals"] == b.attrs["top_residuals"]
    assert set(a.attrs["timings"]) >= {"correlation", "selection", "imputation+metrics"}


def test_a_split_drops_the_benchmarks_too_few_training_models_observe():
    m = _toy(30, 6, seed=3)
    X = np.array(m.scores, dtype=float)
    X[8:, 5] = np.nan  # b5: eight models observe it
    thin = ScoreMatrix(X, m.models, m.benchmarks, "toy")
    assert kept_columns(X, 8).tolist() == [0, 1, 2, 3, 4, 5]
    assert kept_columns(X, 9).tolist() == [0, 1, 2, 3, 4]
    assert kept_columns(np.full((3, 2), np.nan), 0).size == 0  # a column no model observes is never kept
    df = cross_validate(thin, _paper("entropy"), k_max=3, n_folds=5, seed=1, min_train_observed=7)
    assert set(df["n_dropped"]) == {0, 1}  # these folds keep b5 in some folds and drop it in others
    for f, train, _ in cv_splits(30, n_folds=5, seed=1):
        dropped = int((~np.isnan(X[train, 5])).sum() < 7)
        rows = df[df["fold"] == f]
        assert (rows["n_dropped"] == dropped).all()
        if dropped:
            assert not any("b5" in sel for sel in rows["selected"])


def test_the_r2_of_scored_entries_is_one_minus_the_ratio_of_sums_and_nan_when_nothing_is_scored():
    assert r2_from_sums(1.0, 4.0) == 0.75 and r2_from_sums(6.0, 4.0) == -0.5
    assert np.isnan(r2_from_sums(0.0, 0.0))
