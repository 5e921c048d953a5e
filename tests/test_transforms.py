"""Tests for the Appendix K logit transform."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel_lib.method.scaling import inverse_logit_transform, logit_transform


def test_logit_round_trip_recovers_scores_inside_the_clip_range():
    rng = np.random.default_rng(0)
    X = rng.uniform(5, 95, size=(20, 4))
    X[3, 1] = np.nan
    F, smax = logit_transform(X)
    np.testing.assert_allclose(smax, np.nanmax(X, axis=0))
    back = inverse_logit_transform(F, smax)
    inside = X / smax < 1 - 1e-3  # the column maxima themselves are clipped to 1 - eps
    np.testing.assert_allclose(back[inside], X[inside], rtol=1e-12)
    assert np.isnan(F[3, 1]) and np.isnan(back[3, 1])


def test_logit_uses_given_training_max_and_clips_to_eps():
    X = np.array([[0.0, 2.0], [50.0, 4.0], [200.0, 1.0]])
    F, smax = logit_transform(X, smax=[100.0, 4.0], eps=1e-3)
    lo, hi = np.log(1e-3 / (1 - 1e-3)), np.log((1 - 1e-3) / 1e-3)
    assert F[0, 0] == pytest.approx(lo)  # 0 -> eps
    assert F[1, 0] == pytest.approx(0.0)  # 50/100 = 0.5 -> logit 0
    assert F[2, 0] == pytest.approx(hi)  # above the training max -> 1 - eps
    np.testing.assert_array_equal(smax, [100.0, 4.0])
    # the inverse caps predictions at the training maximum
    assert inverse_logit_transform(np.array([[50.0, 50.0]]), smax).max() <= 100.0


def test_logit_rejects_non_positive_maximum():
    with pytest.raises(ValueError, match="positive maximum"):
        logit_transform(np.array([[-1.0, 1.0], [-2.0, 2.0]]))
    with pytest.raises(ValueError, match=r"smax must be a vector of length 2 \(one per column of X\)"):
        logit_transform(np.ones((2, 2)), smax=[1.0])
    with pytest.raises(ValueError, match="eps"):
        logit_transform(np.ones((2, 2)), eps=0.7)


def test_inverse_logit_is_stable_for_large_values():
    out = inverse_logit_transform(np.array([[-800.0, 800.0, 0.0]]), [1.0, 2.0, 4.0])
    np.testing.assert_allclose(out, [[0.0, 2.0, 2.0]], atol=1e-300)
