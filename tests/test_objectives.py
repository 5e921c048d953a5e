"""Tests for benchsel_lib.method.objectives: the entropy and MI gains against brute-force log-determinants."""
from __future__ import annotations

import math

import numpy as np
import pytest
from _synthetic import random_spd

from benchsel_lib.method.objectives import (
    LOG_2PIE,
    EntropyGain,
    MutualInformationGain,
    PivotedCholesky,
    entropy_gains_along,
    gains_along,
    variance_floor,
)


def logdet(S: np.ndarray, idx) -> float:
    idx = list(idx)
    return float(np.linalg.slogdet(S[np.ix_(idx, idx)])[1]) if idx else 0.0


def brute_mi(S: np.ndarray, A) -> float:
    rest = [j for j in range(S.shape[0]) if j not in A]
    return 0.5 * (logdet(S, A) + logdet(S, rest) - logdet(S, range(S.shape[0]))) if A and rest else 0.0


ORDER = [4, 0, 7, 2, 9]


@pytest.mark.parametrize("seed", range(3))
def test_entropy_gains_along_an_order_are_differences_of_log_determinants(seed):
    S = random_spd(10, seed)
    expected = [0.5 * (LOG_2PIE + logdet(S, ORDER[: t + 1]) - logdet(S, ORDER[:t])) for t in range(len(ORDER))]
    gains = gains_along(EntropyGain(S, variance_floor(S)), ORDER)
    np.testing.assert_allclose(gains, expected, rtol=1e-10)
    np.testing.assert_allclose(entropy_gains_along(S, ORDER, variance_floor(S)), expected, rtol=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_mi_gains_along_an_order_are_differences_of_brute_force_mutual_information(seed):
    S = random_spd(10, seed)
    expected = [brute_mi(S, ORDER[: t + 1]) - brute_mi(S, ORDER[:t]) for t in range(len(ORDER))]
    gains = gains_along(MutualInformationGain(S, variance_floor(S)), ORDER)
    np.testing.assert_allclose(gains, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("objective", [EntropyGain, MutualInformationGain])
def test_vector_and_one_candidate_gains_agree_on_a_lazily_updated_state(objective):
    S = random_spd(12, 5)
    gain = objective(S, variance_floor(S))
    state = PivotedCholesky(S, 4, gain.floor)
    for p in (3, 8):
        state.add_lazy(p)  # rows of the other benchmarks stay stale until refreshed
    cands = np.array([0, 1, 5, 11])
    gain.prepare(state)
    one = [gain.gain(state, int(j)) for j in cands]
    vec, keys = gain.gains(state, cands)
    np.testing.assert_allclose(vec, [g for g, _ in one], rtol=1e-13)
    np.testing.assert_allclose(keys, [k for _, k in one], rtol=1e-13)
    # the surrogate ranks as the gain does: for entropy it is the conditional variance itself
    assert list(np.argsort(keys)) == list(np.argsort(vec))
    if objective is EntropyGain:
        A = [3, 8]
        for j, (g, v) in zip(cands, one):
            cond = S[j, j] - S[j, A] @ np.linalg.solve(S[np.ix_(A, A)], S[A, j])
            assert v == pytest.approx(cond, rel=1e-10)
            assert g == pytest.approx(0.5 * (LOG_2PIE + math.log(cond)), rel=1e-10)


def test_a_dependent_benchmark_gains_the_floor_not_minus_infinity():
    S = random_spd(6, 1)
    S[:, 5] = S[:, 4]
    S[5, :] = S[4, :]  # benchmark 5 duplicates benchmark 4: its variance given 4 is zero
    floor = variance_floor(S)
    gains = gains_along(EntropyGain(S, floor), [4, 5])
    assert gains[1] == pytest.approx(0.5 * (LOG_2PIE + math.log(floor)))
    assert np.isfinite(gains_along(MutualInformationGain(S, floor), [4, 5])).all()


def test_mi_gains_are_refused_before_the_step_is_prepared():
    S = random_spd(6, 2)
    gain = MutualInformationGain(S, variance_floor(S))
    state = PivotedCholesky(S, 2, gain.floor)
    with pytest.raises(RuntimeError, match="prepare"):
        gain.gain(state, 0)
    gain.prepare(state)
    state.add(1)  # a new step: the complement's precision is stale
    with pytest.raises(RuntimeError, match="prepare"):
        gain.gains(state, np.array([0, 2]))
