"""The EM E-step in chunks: same estimates as one pass, memory O(M N + N^2) whatever the patterns."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from test_estimation import _brute_em_step, _random_spd

from benchsel_lib.data import load_matrix
from benchsel_lib.method import em as estimation
from benchsel_lib.method.correlation import estimate_correlation
from benchsel_lib.method.em import em_covariance


def _patterned(M: int, N: int, *, missing: float, seed: int, repeats: int = 1) -> np.ndarray:
    """Low-rank data where (nearly) every row has its own pattern; ``repeats`` copies of each pattern."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(M, 3)) @ rng.normal(size=(3, N)) + 0.5 * rng.normal(size=(M, N))
    base = rng.random((M // repeats + 1, N)) < missing
    mask = np.repeat(base, repeats, axis=0)[:M]
    mask[np.arange(M), rng.integers(0, N, M)] = False  # every row observes something
    mask[: M // 20] = False  # a few complete rows
    mask[M // 20: M // 10] = rng.random((M // 10 - M // 20, N)) < 0.1  # rows with few missing (precision form)
    X[mask] = np.nan
    return X


def _tiny_chunks(monkeypatch, elems: int = 64) -> None:
    monkeypatch.setattr(estimation, "_CHUNK_ELEMS", elems)
    monkeypatch.setattr(estimation, "_CHUNK_N2", 0)


@pytest.mark.parametrize("repeats", [1, 3])
def test_a_chunked_e_step_matches_the_per_row_brute_force(monkeypatch, repeats):
    X = _patterned(90, 9, missing=0.6, seed=repeats, repeats=repeats)
    rng = np.random.default_rng(0)
    mu0, S0 = np.nanmean(X, axis=0), _random_spd(9, rng)
    _tiny_chunks(monkeypatch)
    plan = estimation._make_plan(~np.isnan(X))
    assert sum(len(g.chunks) for g in plan.groups) > len(plan.groups)  # really cut into chunks
    r = em_covariance(X, max_iter=1, tol=1e-300, shrinkage=None, eps_psd=None, init=(mu0, S0))
    mu1, S1, ll0 = _brute_em_step(X, mu0, S0)
    np.testing.assert_allclose(r.mean, mu1, atol=1e-12)
    np.testing.assert_allclose(r.cov, S1, atol=1e-12)
    assert r.loglik[0] == pytest.approx(ll0, rel=1e-12)


def test_chunk_size_does_not_change_a_converged_estimate(monkeypatch):
    X = _patterned(400, 20, missing=0.65, seed=5)
    one = em_covariance(X, max_iter=300, tol=5e-4, eps_psd=1e-3)
    _tiny_chunks(monkeypatch, 500)
    many = em_covariance(X, max_iter=300, tol=5e-4, eps_psd=1e-3)
    assert one.n_iter == many.n_iter
    np.testing.assert_allclose(many.cov, one.cov, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", ["merged", "benchpress", "mteb"])
@pytest.mark.parametrize("context", ["cv", "full"])
def test_chunked_estimates_equal_one_pass_estimates_on_the_paper_matrices(monkeypatch, shared_data_dir, name,
                                                                          context):
    X = np.asarray(load_matrix(name, data_dir=shared_data_dir).scores, dtype=float)
    kw = dict(method="em", config="released", context=context, std_floor="relative")
    monkeypatch.setattr(estimation, "_CHUNK_ELEMS", 1 << 40)  # every bucket in one pass
    whole = estimate_correlation(X, **kw)
    _tiny_chunks(monkeypatch, 2000)
    chunked = estimate_correlation(X, **kw)
    assert whole.em.n_iter == chunked.em.n_iter
    np.testing.assert_allclose(chunked.corr, whole.corr, rtol=0, atol=1e-10)


def test_the_plan_and_one_e_step_take_memory_linear_in_m_times_n():
    M, N = 3000, 60
    X = _patterned(M, N, missing=0.5, seed=2)
    obs = ~np.isnan(X)
    tracemalloc.start()
    plan = estimation._make_plan(obs)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    X0 = np.where(obs, X, 0.0)
    estimation._e_step(X0, obs, plan, np.nanmean(X, axis=0), _random_spd(N, np.random.default_rng(1)))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert plan.n_patterns > 0.9 * M  # nearly every row its own pattern
    # a pattern stack would be M * (N/2)^2 * 8 bytes = 21.6 MB; the plan holds O(M N) indices
    assert held < 40 * M * N
    chunk = 8 * max(estimation._CHUNK_ELEMS, estimation._CHUNK_N2 * N * N)
    assert peak < 6 * chunk + 80 * M * N
