"""Tests for Gaussian conditional prediction (Eqs. cond-mean, cond-var; method/gaussian.py)."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel_lib.method.base import Predictor
from benchsel_lib.method.gaussian import (
    GaussianPredictor,
    conditional_impute,
    impute_missing,
)


def _spd(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n + 3))
    return A @ A.T / n


def test_conditional_impute_equals_explicit_formula_with_ridge():
    C = _spd(6, 0)
    mu = np.arange(6.0)
    obs, tgt = [4, 0, 2], [1, 3, 5]
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 3))
    ridge = 0.3
    res = conditional_impute(C, mu, x, obs, ridge=ridge)
    inv = np.linalg.inv(C[np.ix_(obs, obs)] + ridge * np.eye(3))
    mean = mu[tgt] + (x - mu[obs]) @ (C[np.ix_(tgt, obs)] @ inv).T
    cov = C[np.ix_(tgt, tgt)] - C[np.ix_(tgt, obs)] @ inv @ C[np.ix_(obs, tgt)]
    np.testing.assert_array_equal(res.target_idx, tgt)
    np.testing.assert_allclose(res.mean, mean, rtol=1e-10)
    np.testing.assert_allclose(res.cov, cov, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.var, np.diag(cov), rtol=1e-10)


def test_conditional_impute_explicit_targets_and_no_observation():
    C = _spd(4, 2)
    res = conditional_impute(C, 1.0, np.empty((3, 0)), [], target_idx=[2, 0])
    np.testing.assert_allclose(res.mean, np.ones((3, 2)))
    np.testing.assert_allclose(res.cov, C[np.ix_([2, 0], [2, 0])])
    res1 = conditional_impute(C, 0.0, [1.0], [1], target_idx=[3])
    assert res1.mean.shape == (1, 1)
    assert res1.mean[0, 0] == pytest.approx(C[3, 1] / (C[1, 1] + 1e-2))


def test_impute_missing_pattern_grouping_equals_per_row_loop():
    C = _spd(5, 3)
    mu = np.array([0.5, -1.0, 0.0, 2.0, 1.0])
    rng = np.random.default_rng(4)
    X = rng.normal(size=(12, 5))
    X[rng.random(X.shape) < 0.4] = np.nan
    X[0] = np.nan  # a row with no observation
    X[1] = rng.normal(size=5)  # a fully observed row
    X[2] = X[3] = X[4]  # repeated pattern
    filled, var = impute_missing(C, mu, X, ridge=1e-2)
    for i in range(X.shape[0]):
        o = np.flatnonzero(~np.isnan(X[i]))
        t = np.flatnonzero(np.isnan(X[i]))
        np.testing.assert_array_equal(filled[i, o], X[i, o])
        assert np.all(var[i, o] == 0)
        if t.size:
            r = conditional_impute(C, mu, X[i, o], o, ridge=1e-2)
            np.testing.assert_allclose(filled[i, t], r.mean[0], rtol=1e-10)
            np.testing.assert_allclose(var[i, t], r.var, rtol=1e-10)
    np.testing.assert_allclose(filled[0], mu)
    np.testing.assert_allclose(var[0], np.diag(C))


def test_conditional_variance_is_calibrated_on_true_gaussian():
    C = _spd(5, 5)
    rng = np.random.default_rng(6)
    Y = rng.multivariate_normal(np.zeros(5), C, size=4000)
    res = conditional_impute(C, 0.0, Y[:, [0, 3]], [0, 3], ridge=0.0)
    z = (Y[:, res.target_idx] - res.mean) / res.std
    np.testing.assert_allclose(z.var(axis=0), 1.0, atol=0.08)


def test_bad_inputs_raise_value_error():
    C = _spd(3, 7)
    with pytest.raises(ValueError, match="columns but observed_idx"):
        conditional_impute(C, 0.0, np.ones((2, 3)), [0, 1])
    with pytest.raises(ValueError, match="out of range"):
        conditional_impute(C, 0.0, [1.0], [5])
    with pytest.raises(ValueError, match="repeated"):
        conditional_impute(C, 0.0, [1.0, 2.0], [1, 1])
    with pytest.raises(ValueError, match="mean has length"):
        conditional_impute(C, np.zeros(2), [1.0], [0])
    with pytest.raises(ValueError, match="NaN"):
        conditional_impute(C, 0.0, [np.nan], [0])
    with pytest.raises(ValueError, match="ridge"):
        conditional_impute(C, 0.0, [1.0], [0], ridge=-1.0)
    with pytest.raises(ValueError, match="square"):
        conditional_impute(np.ones((2, 3)), 0.0, [1.0], [0])
    with pytest.raises(ValueError, match="columns but cov"):
        impute_missing(C, 0.0, np.ones((2, 4)))
    with pytest.raises(ValueError, match="ridge"):
        GaussianPredictor(ridge=-0.1)


def test_gaussian_predictor_implements_protocol_and_keeps_revealed_values():
    C = _spd(4, 8)
    R = C / np.sqrt(np.outer(np.diag(C), np.diag(C)))
    imp = GaussianPredictor(ridge=1e-2)
    assert isinstance(imp, Predictor)
    q = np.array([[0.5, np.nan, np.nan, -1.0], [np.nan] * 4])
    unused = np.full((1, 4), np.nan)  # with cov given, the training rows only fix the number of benchmarks
    out = imp.fit(unused, cov=R).predict(q)
    assert out.shape == q.shape
    assert out[0, 0] == 0.5 and out[0, 3] == -1.0
    np.testing.assert_allclose(out[1], 0.0)  # nothing revealed -> training mean (0)
    r = conditional_impute(R, 0.0, [[0.5, -1.0]], [0, 3])
    np.testing.assert_allclose(out[0, [1, 2]], r.mean[0])


def test_gaussian_predictor_estimates_correlation_when_not_given():
    rng = np.random.default_rng(9)
    z = rng.normal(size=(200, 1))
    train = np.hstack([z, z + 0.1 * rng.normal(size=(200, 1)), rng.normal(size=(200, 1))])
    train = (train - train.mean(0)) / train.std(0)
    out = GaussianPredictor().fit(train).predict(np.array([[1.0, np.nan, np.nan]]))
    assert out[0, 1] == pytest.approx(0.98, abs=0.05)
    assert abs(out[0, 2]) < 0.2
