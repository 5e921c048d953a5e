"""Tests for benchsel_lib.imputers: offline imputers and the optional TabImpute V2 adapter."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from benchsel_lib.imputers import (
    TABIMPUTE_ENV,
    TABIMPUTE_FILENAME,
    BenchPressBlend,
    KNNImputer,
    MissingWeightsError,
    SoftImpute,
    TabImputeV2Imputer,
    find_tabimpute_checkpoint,
)


def low_rank_problem(seed: int = 0, m: int = 80, v: int = 20, n: int = 12, rank: int = 2, noise: float = 0.1):
    """Standardized noisy low-rank matrix; training rows 20% missing; query rows reveal 3 columns."""
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(m + v, rank))
    V = rng.normal(size=(n, rank))
    X = U @ V.T + noise * rng.normal(size=(m + v, n))
    X = (X - X[:m].mean(axis=0)) / X[:m].std(axis=0)
    train = X[:m].copy()
    train[rng.random(train.shape) < 0.2] = np.nan
    truth = X[m:].copy()
    hidden = np.ones_like(truth, dtype=bool)
    revealed = rng.choice(n, size=3, replace=False)
    hidden[:, revealed] = False
    query = truth.copy()
    query[hidden] = np.nan
    return train, query, truth, hidden


def r2(pred: np.ndarray, truth: np.ndarray, hidden: np.ndarray) -> float:
    """R^2 in standardized space; predicting 0 (the training mean) is the baseline."""
    return 1.0 - float(((pred[hidden] - truth[hidden]) ** 2).sum() / (truth[hidden] ** 2).sum())


OFFLINE = [
    pytest.param(lambda: SoftImpute(), id="softimpute-default"),
    pytest.param(lambda: SoftImpute(rank=2, shrinkage=0.0), id="softimpute-hard-rank2"),
    pytest.param(lambda: SoftImpute(rank=None, shrinkage=2.0), id="softimpute-nuclear"),
    pytest.param(lambda: KNNImputer(n_neighbors=10), id="knn"),
    pytest.param(lambda: KNNImputer(n_neighbors=5, weights="uniform"), id="knn-uniform"),
    pytest.param(lambda: BenchPressBlend(), id="benchpress"),
]


@pytest.mark.parametrize("make", OFFLINE)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_offline_imputer_beats_column_mean_on_low_rank_matrix(make, seed):
    train, query, truth, hidden = low_rank_problem(seed)
    imp = make()
    pred = imp.predict(train, query)
    assert pred.shape == query.shape and np.isfinite(pred).all()
    assert r2(pred, truth, hidden) > 0.3  # the column mean (predicting 0) scores ~0
    np.testing.assert_array_equal(pred[~hidden], query[~hidden])  # observed entries pass through
    assert isinstance(imp.name, str) and imp.name


@pytest.mark.parametrize("make", OFFLINE)
def test_offline_imputer_is_deterministic(make):
    train, query, _, _ = low_rank_problem(3)
    a = make().predict(train, query)
    b = make().predict(train.copy(), query.copy())
    np.testing.assert_array_equal(a, b)


def test_offline_imputers_do_not_modify_inputs():
    train, query, _, _ = low_rank_problem(4)
    t0, q0 = train.copy(), query.copy()
    for imp in (SoftImpute(rank=2), KNNImputer(), BenchPressBlend()):
        imp.predict(train, query)
    np.testing.assert_array_equal(train, t0)
    np.testing.assert_array_equal(query, q0)


def test_rank2_softimpute_recovers_noiseless_low_rank_matrix_almost_exactly():
    train, query, truth, hidden = low_rank_problem(5, noise=0.0)
    pred = SoftImpute(rank=2, shrinkage=0.0, tol=1e-12, max_iter=2000).predict(train, query)
    assert r2(pred, truth, hidden) > 0.99


def test_benchpress_blend_uses_given_correlation_and_blend_weights():
    train, query, truth, hidden = low_rank_problem(6)
    corr = np.corrcoef(np.nan_to_num(train).T)
    with_cov = BenchPressBlend().predict(train, query, cov=corr)
    assert r2(with_cov, truth, hidden) > 0.3
    svd_only = BenchPressBlend(blend=0.0).predict(train, query)
    np.testing.assert_allclose(svd_only, SoftImpute(rank=2, shrinkage=0.0).predict(train, query))
    ridge_only = BenchPressBlend(blend=1.0).predict(train, query)
    assert not np.allclose(ridge_only, svd_only)


def test_knn_falls_back_to_training_mean_without_observations():
    train, query, _, _ = low_rank_problem(7)
    query[0] = np.nan
    pred = KNNImputer().predict(train, query)
    np.testing.assert_array_equal(pred[0], 0.0)


def test_knn_with_exact_duplicate_row_returns_its_values():
    rng = np.random.default_rng(0)
    train = rng.normal(size=(30, 4))
    query = train[[7]].copy()
    query[0, 2:] = np.nan
    pred = KNNImputer(n_neighbors=1).predict(train, query)
    np.testing.assert_allclose(pred[0], train[7])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: SoftImpute(rank=0), "rank"),
        (lambda: SoftImpute(rank=None, shrinkage=0.0), "rank or a positive shrinkage"),
        (lambda: SoftImpute(rank=2, shrinkage=-1.0), "shrinkage"),
        (lambda: KNNImputer(n_neighbors=0), "n_neighbors"),
        (lambda: KNNImputer(weights="gaussian"), "weights"),
        (lambda: BenchPressBlend(blend=2.0), "blend"),
        (lambda: SoftImpute(rank=2).predict(np.zeros((3, 4)), np.zeros((1, 5))), "columns"),
        (lambda: KNNImputer().predict(np.zeros((3, 4, 1)), np.zeros((1, 4))), "2-D"),
        (lambda: KNNImputer().predict(np.zeros((3, 4)), np.full((1, 4), np.inf)), "infinite"),
        (lambda: BenchPressBlend().predict(np.zeros((3, 4)), np.zeros((1, 4)), cov=np.eye(3)), "cov"),
    ],
)
def test_imputers_reject_bad_input_with_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------ TabImpute V2 adapter
@pytest.fixture
def no_tabimpute_weights(monkeypatch, tmp_path):
    """An environment with no checkpoint: variable unset, empty hub caches."""
    monkeypatch.delenv(TABIMPUTE_ENV, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_tabimpute_missing_weights_error_names_file_and_remedies(no_tabimpute_weights):
    with pytest.raises(MissingWeightsError) as info:
        TabImputeV2Imputer()
    msg = str(info.value)
    assert TABIMPUTE_FILENAME in msg and "Tabimpute/TabImpute" in msg
    assert "checkpoint_path" in msg and TABIMPUTE_ENV in msg and "hub cache" in msg
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, ValueError)


def test_tabimpute_missing_explicit_or_env_path_is_named(no_tabimpute_weights, monkeypatch):
    bogus = no_tabimpute_weights / "nope.ckpt"
    with pytest.raises(MissingWeightsError, match="nope.ckpt"):
        TabImputeV2Imputer(checkpoint_path=bogus)
    monkeypatch.setenv(TABIMPUTE_ENV, str(bogus))
    with pytest.raises(MissingWeightsError, match=TABIMPUTE_ENV):
        find_tabimpute_checkpoint()


def test_tabimpute_checkpoint_found_in_env_and_hub_cache(no_tabimpute_weights, monkeypatch):
    tmp = no_tabimpute_weights
    snap = tmp / "hub" / "models--Tabimpute--TabImpute" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / TABIMPUTE_FILENAME).write_bytes(b"x")
    refs = tmp / "hub" / "models--Tabimpute--TabImpute" / "refs"
    refs.mkdir()
    (refs / "main").write_text("abc123")
    assert find_tabimpute_checkpoint() == snap / TABIMPUTE_FILENAME
    other = tmp / "mine.ckpt"
    other.write_bytes(b"y")
    monkeypatch.setenv(TABIMPUTE_ENV, str(other))
    assert find_tabimpute_checkpoint() == other
    assert find_tabimpute_checkpoint(snap / TABIMPUTE_FILENAME) == snap / TABIMPUTE_FILENAME
    imp = TabImputeV2Imputer(other, max_context_rows=5, seed=1)  # construction does not import torch
    assert list(imp.context_rows(4)) == [0, 1, 2, 3]
    rows = imp.context_rows(50)
    assert len(rows) == 5 and len(set(rows)) == 5 and list(rows) == sorted(rows)
    np.testing.assert_array_equal(rows, TabImputeV2Imputer(other, max_context_rows=5, seed=1).context_rows(50))


_HAS_TORCH = importlib.util.find_spec("torch") is not None
_HAS_TABIMPUTE = importlib.util.find_spec("tabimpute") is not None


@pytest.fixture(scope="module")
def random_v2_checkpoint(tmp_path_factory):
    """A TabImpute V2 checkpoint with random weights (the real architecture, ~270 MB in bfloat16)."""
    torch = pytest.importorskip("torch", reason="torch not installed: pip install 'benchsel[tabimpute]'")
    pytest.importorskip("tabimpute", reason="tabimpute not installed: pip install 'benchsel[tabimpute]'")
    from tabimpute.model.model import TabImputeModel

    torch.manual_seed(0)
    # the architecture tabimpute.tabimpute_v2.TabImputeV2 builds
    model = TabImputeModel(
        embedding_size=1024, num_attention_heads=32, mlp_hidden_size=1024, num_layers=12, num_cls=12, num_outputs=5000
    ).to(torch.bfloat16)
    path = tmp_path_factory.mktemp("tabimpute") / TABIMPUTE_FILENAME
    torch.save({"model": model.state_dict()}, path)
    return path


@pytest.mark.skipif(not (_HAS_TORCH and _HAS_TABIMPUTE), reason="optional extra [tabimpute] (torch, tabimpute) not installed")
def test_tabimpute_adapter_runs_on_tiny_matrix_with_random_weight_checkpoint(random_v2_checkpoint):
    # random weights only exercise the code path (loading, context subsampling, batching); never use for results
    rng = np.random.default_rng(0)
    train = rng.normal(size=(12, 5))
    train[rng.random(train.shape) < 0.2] = np.nan
    query = rng.normal(size=(2, 5))
    query[:, 2:] = np.nan
    imp = TabImputeV2Imputer(random_v2_checkpoint, device="cpu", max_context_rows=8, batch_size=1, seed=0)
    pred = imp.predict(train, query)  # two batches of one row, 8 of 12 training rows as context
    assert pred.shape == (2, 5) and np.isfinite(pred).all()
    np.testing.assert_array_equal(pred[:, :2], query[:, :2])
    assert imp.name == "tabimpute-v2"
    np.testing.assert_array_equal(pred[1:], imp.predict(train, query[1:]))  # same batch -> same numbers


@pytest.mark.skipif(not (_HAS_TORCH and _HAS_TABIMPUTE), reason="optional extra [tabimpute] (torch, tabimpute) not installed")
def test_tabimpute_adapter_refuses_checkpoint_without_v2_weights(tmp_path):
    import torch

    path = tmp_path / "empty.ckpt"
    torch.save({"model": {}}, path)
    imp = TabImputeV2Imputer(path, device="cpu")
    with pytest.raises(ValueError, match="random weights"):
        imp.predict(np.zeros((3, 2)), np.full((1, 2), np.nan))
