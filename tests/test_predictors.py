"""Tests for the predictors (method/predictors.py, method/regression.py): closed-form LOO ridge, the per-target ridge predictor, the stack's weights, out-of-fold predictions."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from _reference import ridge_loo
from _synthetic import low_rank_scores

from benchsel_lib.method.predictors import (
    PREDICTORS,
    make_predictor,
    nnls_weights,
)
from benchsel_lib.method.folds import InnerFolds
from benchsel_lib.method.regression import RidgePredictor, ridge_loo_batch
from benchsel_lib.method.scaling import Scaling


def _plain_ridge(A: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, float]:
    """Ridge with an unpenalized intercept by the normal equations."""
    am, ym = A.mean(axis=0), y.mean()
    Ac = A - am
    beta = np.linalg.solve(Ac.T @ Ac + alpha * np.eye(A.shape[1]), Ac.T @ (y - ym))
    return beta, ym - am @ beta


_low_rank = partial(low_rank_scores, m=60, n=10, noise=0.3, missing=0.2, standardize=True)


def test_the_reference_ridge_loo_is_the_explicit_leave_one_out_loop():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(15, 3))
    y = A @ np.array([1.0, -0.5, 0.2]) + 0.3 * rng.normal(size=15)
    alphas = (0.1, 1.0, 10.0)
    beta, b0, alpha, mse = ridge_loo(A, y, alphas=alphas)
    explicit = []
    for a in alphas:
        errs = []
        for i in range(15):
            keep = np.arange(15) != i
            bb, cc = _plain_ridge(A[keep], y[keep], a)
            errs.append(y[i] - cc - A[i] @ bb)
        explicit.append(np.mean(np.square(errs)))
    assert alpha == alphas[int(np.argmin(explicit))]
    assert mse == pytest.approx(min(explicit), rel=1e-10)
    bb, cc = _plain_ridge(A, y, alpha)
    np.testing.assert_allclose(beta, bb, rtol=1e-10, atol=1e-12)
    assert b0 == pytest.approx(cc, rel=1e-10, abs=1e-12)


def test_ridge_loo_batch_equals_one_fit_per_target():
    X = _low_rank(2, m=50, n=8, missing=0.3)
    F, J = [0, 1, 2], [3, 4, 5, 6, 7]
    batch = ridge_loo_batch(X, F, J)
    obs = ~np.isnan(X)
    for t, j in enumerate(J):
        rows = obs[:, j] & obs[:, F].all(axis=1)
        beta, b0, alpha, mse = ridge_loo(X[np.ix_(rows, F)], X[rows, j])
        np.testing.assert_allclose(batch["beta"][t], beta, atol=1e-10)
        assert batch["intercept"][t] == pytest.approx(b0, abs=1e-10)
        assert batch["alpha"][t] == alpha
        assert batch["mse"][t] == pytest.approx(mse, rel=1e-9)
        assert batch["n"][t] == rows.sum()


def test_ridge_predictor_matches_reference_per_target_fit():
    X = _low_rank(3, m=70, n=9, missing=0.15)
    train, query = X[:60], X[60:].copy()
    query[:, 3:] = np.nan
    query[0, 1] = np.nan
    pred = RidgePredictor().fit(train).predict(query)
    obs = ~np.isnan(train)
    counts = obs.sum(axis=0)
    for i in range(query.shape[0]):
        rev = np.flatnonzero(~np.isnan(query[i]))
        order = rev[np.argsort(-counts[rev], kind="stable")].tolist()
        for j in range(9):
            if j in rev:
                assert pred[i, j] == query[i, j]
                continue
            cols = list(order)
            while cols:
                rows = obs[:, j] & obs[:, cols].all(axis=1)
                if rows.sum() >= max(8, len(cols) + 2):
                    break
                cols = cols[:-1]
            beta, b0, _, _ = ridge_loo(train[np.ix_(rows, cols)], train[rows, j], alphas=RidgePredictor().alphas)
            assert pred[i, j] == pytest.approx(b0 + query[i, cols] @ beta, abs=1e-9)


def test_ridge_predictor_falls_back_to_training_mean_without_enough_rows():
    train = _low_rank(4, m=6, n=5, missing=0.0)  # 6 rows < min_rows 8
    query = np.full((2, 5), np.nan)
    query[:, 0] = [0.5, -1.0]
    pred = RidgePredictor().fit(train).predict(query)
    np.testing.assert_array_equal(pred[:, 1:], 0.0)
    assert np.isfinite(pred).all()


def test_ridge_predictor_beats_mean_on_low_rank_data():
    X = _low_rank(5, m=120, n=10, missing=0.1)
    train, truth = X[:100], X[100:]
    query = np.where(np.arange(10)[None, :] < 3, truth, np.nan)
    pred = RidgePredictor().fit(train).predict(query)
    ev = ~np.isnan(truth) & np.isnan(query)
    r2 = 1 - np.sum((pred - truth)[ev] ** 2) / np.sum(truth[ev] ** 2)
    assert r2 > 0.5


def test_nnls_weights_are_nonnegative_and_match_brute_force():
    rng = np.random.default_rng(6)
    t = rng.normal(size=200)
    cols = [t + 0.3 * rng.normal(size=200), -t + rng.normal(size=200), 0.5 * t + 0.5 * rng.normal(size=200)]
    w = nnls_weights(cols, t)
    assert (w >= 0).all()
    assert w[1] == 0.0  # the anti-correlated column gets no weight
    C = np.column_stack(cols)
    best = np.inf
    grid = np.linspace(0, 1.5, 31)
    for a in grid:
        for c in grid:
            best = min(best, np.sum((C[:, [0, 2]] @ [a, c] - t) ** 2))
    assert np.sum((C @ w - t) ** 2) <= best + 1e-9


def _oof(X, revealed, predictors, *, n_folds, seed):
    """The search's out-of-fold predictions of ``predictors`` for one given revealed set, and its scored mask."""
    from benchsel_lib.method.oof import out_of_fold

    k = len(revealed)
    out = out_of_fold(X, InnerFolds(n_folds, seed).folds(X.shape[0]), select=lambda s, itr, Ri, n: {k: list(revealed)},
                      selectors=("given",), predictors=predictors, sizes=[k], unreached="skip")
    return {p: out.preds[("given", p, k)] for p in predictors}, out.masks[("given", k)]


def test_out_of_fold_predictions_never_use_the_predicted_rows(monkeypatch):
    from benchsel_lib.method.predictors import PREDICTORS

    X = _low_rank(8, m=40, n=6, missing=0.0)

    class Spy:
        name = "spy"
        seen: list[np.ndarray] = []

        def fit(self, train, *, cov=None):
            Spy.seen.append(train.copy())
            return self

        def predict(self, query):
            return np.zeros_like(query)

    monkeypatch.setitem(PREDICTORS, "spy", Spy)
    preds, mask = _oof(X, [0, 1], ("spy",), n_folds=4, seed=0)
    assert len(Spy.seen) == 4
    for tr in Spy.seen:
        assert tr.shape[0] == 30
    assert not mask[:, [0, 1]].any() and mask[:, 2:].all()


@pytest.mark.parametrize("name", ["gaussian", "ridge", "knn", "blend"])
def test_out_of_fold_predictions_do_not_see_a_rows_held_out_score_through_the_callers_standardization(name):
    # The caller standardizes on all its rows (as the CV protocol does with its training models); each inner
    # fold re-standardizes on its own training rows, so changing a row's held-out score moves none of the
    # predictions for that row's fold, in raw units.
    rng = np.random.default_rng(12)
    raw = 50.0 + 8.0 * low_rank_scores(12, m=40, n=6, noise=0.3, missing=0.3)
    revealed = [0, 1]

    def oof_raw(X):
        m, s = np.nanmean(X, axis=0), np.nanstd(X, axis=0, ddof=1)
        preds, mask = _oof((X - m) / s, revealed, (name,), n_folds=4, seed=3)
        return preds[name] * s + m, mask

    before, mask = oof_raw(raw)
    i = int(np.flatnonzero(mask.sum(axis=1) >= 2)[0])
    j = int(np.flatnonzero(mask[i])[0])
    changed = raw.copy()
    changed[i, j] += 3.0 * rng.choice([-1.0, 1.0])
    after, _ = oof_raw(changed)
    fold = next(rows for rows in InnerFolds(4, 3).held_out(40) if i in rows)
    np.testing.assert_allclose(after[fold][mask[fold]], before[fold][mask[fold]], rtol=0, atol=1e-9)
    assert not np.allclose(after[mask], before[mask])  # the other folds did train on the changed score


def test_fold_scaling_follows_the_protocol_rule_and_leaves_unobserved_columns_alone():
    x = np.array([[1.0, np.nan, 5.0], [3.0, np.nan, 5.0], [2.0, np.nan, 5.0]])
    st = Scaling().fit(x, empty="identity").standardizer
    mu, sd = st.mean, st.std
    np.testing.assert_allclose(mu, [2.0, 0.0, 5.0])
    np.testing.assert_allclose(sd, [1.0, 1.0, 0.01 * 6.0])  # ddof=1; a constant column gets the relative floor


def test_make_predictor_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown predictor 'nope'"):
        make_predictor("nope")
    assert {"gaussian", "ridge", "lowrank"} <= set(PREDICTORS) and "stack" not in PREDICTORS


@pytest.mark.parametrize("name", sorted(n for n in PREDICTORS if getattr(make_predictor(n), "rowwise", False)))
def test_rowwise_predictors_predict_each_row_as_if_it_were_alone(name):
    X = _low_rank(seed=3, m=70, n=9, missing=0.25)
    train, val = X[:50], X[50:]
    rng = np.random.default_rng(4)
    query = np.where(rng.random(val.shape) < 0.4, val, np.nan)
    from benchsel_lib.method.correlation import inner_correlation

    cov = inner_correlation(train)
    together = make_predictor(name).fit(train, cov=cov).predict(query)
    alone = np.vstack([make_predictor(name).fit(train, cov=cov).predict(query[i : i + 1]) for i in range(len(query))])
    np.testing.assert_allclose(together, alone, rtol=0, atol=1e-12)


def test_the_transductive_predictors_do_not_claim_to_be_rowwise():
    for name in ("lowrank", "blend"):
        assert not getattr(make_predictor(name), "rowwise", False)


def test_imputed_ridge_matches_a_direct_fit_on_the_mean_imputed_matrix():
    X = _low_rank(6, m=70, n=8, missing=0.3)
    train, query = X[:55], X[55:].copy()
    query[:, 3:] = np.nan
    query[0, 1] = np.nan  # a revealed benchmark this row did not run: its training mean stands in
    pred = make_predictor("imputed-ridge").fit(train).predict(query)
    obs = ~np.isnan(train)
    mean = np.array([train[obs[:, j], j].mean() for j in range(8)])
    filled = np.where(obs, train, mean)
    F = [0, 1, 2]  # every benchmark some query row reveals
    feats = np.where(np.isnan(query[:, F]), mean[F], query[:, F])
    for j in range(3, 8):
        rows = obs[:, j]
        A, y = filled[np.ix_(rows, F)], train[rows, j]
        loo = []
        for a in (0.1, 1.0, 10.0):  # RidgeCV's strengths, each scored by refitting without every row in turn
            errs = []
            for i in range(A.shape[0]):
                keep = np.arange(A.shape[0]) != i
                bb, cc = _plain_ridge(A[keep], y[keep], a)
                errs.append(y[i] - cc - A[i] @ bb)
            loo.append(np.mean(np.square(errs)))
        beta, b0 = _plain_ridge(A, y, (0.1, 1.0, 10.0)[int(np.argmin(loo))])
        np.testing.assert_allclose(pred[:, j], b0 + feats @ beta, atol=1e-9)
    np.testing.assert_array_equal(pred[:, :3][~np.isnan(query[:, :3])], query[:, :3][~np.isnan(query[:, :3])])


def test_imputed_ridge_keeps_every_training_model_and_falls_back_to_the_mean_of_thin_targets():
    X = _low_rank(7, m=40, n=6, missing=0.0)
    train = X.copy()
    train[::2, 0] = np.nan  # half the models did not run the revealed benchmark: none is dropped
    train[2:, 5] = np.nan  # two models ran benchmark 5: too few to fit
    query = np.full((1, 6), np.nan)
    query[0, 0] = 0.7
    pred = make_predictor("imputed-ridge").fit(train).predict(query)
    assert pred[0, 5] == pytest.approx(np.nanmean(train[:, 5]))
    rows = ~np.isnan(train[:, 1])
    A = np.where(np.isnan(train[:, [0]]), np.nanmean(train[:, 0]), train[:, [0]])
    fits = [ridge_loo(A[rows], train[rows, 1], alphas=(a,)) for a in (0.1, 1.0, 10.0)]
    beta, b0, _, _ = min(fits, key=lambda f: f[3])
    assert pred[0, 1] == pytest.approx(b0 + 0.7 * beta[0], abs=1e-10)
    assert not make_predictor("imputed-ridge").rowwise  # a row's features are what any row of the call reveals
