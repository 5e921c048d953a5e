"""Tests for the offline predictors (method/completion.py) and the optional TabImpute V2 adapter (method/tabimpute.py)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from _synthetic import low_rank_scores

from benchsel_lib.method import completion
from benchsel_lib.method.completion import BenchPressBlend, KNNImputer, SoftImpute
from benchsel_lib.method.tabimpute import (
    TABIMPUTE_ENV,
    TABIMPUTE_FILENAME,
    MissingWeightsError,
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
    pred = imp.fit(train).predict(query)
    assert pred.shape == query.shape and np.isfinite(pred).all()
    assert r2(pred, truth, hidden) > 0.3  # the column mean (predicting 0) scores ~0
    np.testing.assert_array_equal(pred[~hidden], query[~hidden])  # observed entries pass through
    assert isinstance(imp.name, str) and imp.name


@pytest.mark.parametrize("make", OFFLINE)
def test_offline_imputer_is_deterministic(make):
    train, query, _, _ = low_rank_problem(3)
    a = make().fit(train).predict(query)
    b = make().fit(train.copy()).predict(query.copy())
    np.testing.assert_array_equal(a, b)


def test_offline_imputers_do_not_modify_inputs():
    train, query, _, _ = low_rank_problem(4)
    t0, q0 = train.copy(), query.copy()
    for imp in (SoftImpute(rank=2), KNNImputer(), BenchPressBlend()):
        imp.fit(train).predict(query)
    np.testing.assert_array_equal(train, t0)
    np.testing.assert_array_equal(query, q0)


def test_rank2_softimpute_recovers_noiseless_low_rank_matrix_almost_exactly():
    train, query, truth, hidden = low_rank_problem(5, noise=0.0)
    pred = SoftImpute(rank=2, shrinkage=0.0, tol=1e-12, max_iter=2000).fit(train).predict(query)
    assert r2(pred, truth, hidden) > 0.99


def test_benchpress_blend_uses_given_correlation_and_blend_weights():
    train, query, truth, hidden = low_rank_problem(6)
    corr = np.corrcoef(np.nan_to_num(train).T)
    with_cov = BenchPressBlend().fit(train, cov=corr).predict(query)
    assert r2(with_cov, truth, hidden) > 0.3
    svd_only = BenchPressBlend(blend=0.0).fit(train).predict(query)
    np.testing.assert_allclose(svd_only, SoftImpute(rank=2, shrinkage=0.0).fit(train).predict(query))
    ridge_only = BenchPressBlend(blend=1.0).fit(train).predict(query)
    assert not np.allclose(ridge_only, svd_only)


def pattern_problem(seed: int = 0, m: int = 40, n: int = 8, train_missing: float = 0.25):
    """Random rank-2 instance whose query rows share a few observation patterns (as in the CV protocol).

    The query has 4 patterns, each on several rows, plus a row with nothing
    observed and a row with everything observed; one training row is empty.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m + 14, 2)) @ rng.normal(size=(2, n)) + 0.5 * rng.normal(size=(m + 14, n))
    X = (X - X[:m].mean(axis=0)) / X[:m].std(axis=0)
    train, query = X[:m].copy(), X[m:].copy()
    train[rng.random(train.shape) < train_missing] = np.nan
    train[3] = np.nan
    patterns = [rng.permutation(n)[:size] for size in (1, 3, 4, 6)]
    for i in range(12):
        hide = np.ones(n, dtype=bool)
        hide[patterns[i % 4]] = False
        query[i, hide] = np.nan
    query[12] = np.nan  # nothing observed: the SVD completion alone
    return train, query  # query[13]: everything observed, passed through


def reference_pairwise_corr(train: np.ndarray, min_overlap: int) -> np.ndarray:
    n = train.shape[1]
    corr = np.full((n, n), np.nan)
    for a in range(n):
        for b in range(n):
            both = ~np.isnan(train[:, a]) & ~np.isnan(train[:, b])
            if both.sum() >= max(min_overlap, 3):
                x, y = train[both, a], train[both, b]
                if x.std() > 0 and y.std() > 0:
                    corr[a, b] = np.clip(np.corrcoef(x, y)[0, 1], -1.0, 1.0)
    return corr


def reference_benchpress(train, query, svd, *, cov=None, n_predictors=5, ridge=1.0, blend=0.5, min_rows=5,
                         min_overlap=5):
    """BenchPressBlend's documented recipe, one (query row, missing target) pair at a time."""
    if cov is None:
        corr = reference_pairwise_corr(train, min_overlap)
    else:
        d = np.sqrt(np.diag(cov))
        corr = cov / np.outer(d, d)
        observed = ~np.isnan(train)
        counts = observed.T.astype(int) @ observed.astype(int)
        corr = np.where(counts >= min_overlap, corr, np.nan)
    pred = svd.copy()
    for i in range(query.shape[0]):
        obs = [c for c in range(query.shape[1]) if not np.isnan(query[i, c])]
        for j in range(query.shape[1]):
            if not np.isnan(query[i, j]) or not obs:
                continue
            ranked = sorted((c for c in obs if np.isfinite(corr[j, c])), key=lambda c: (-abs(corr[j, c]), c))
            cols = ranked[:n_predictors]
            while cols:  # drop the weakest predictor while too few training models observe all of them and j
                rows = [r for r in range(train.shape[0]) if not np.isnan(train[r, [j, *cols]]).any()]
                if len(rows) >= min_rows:
                    break
                cols = cols[:-1]
            if not cols:
                continue
            A, y = train[np.ix_(rows, cols)], train[rows, j]
            # ridge with an unpenalized intercept: least squares on the centred data, augmented by sqrt(ridge) I
            Ac = A - A.mean(axis=0)
            aug_A = np.vstack([Ac, np.sqrt(ridge) * np.eye(len(cols))])
            aug_y = np.concatenate([y - y.mean(), np.zeros(len(cols))])
            beta = np.linalg.lstsq(aug_A, aug_y, rcond=None)[0]
            ridge_pred = y.mean() + (query[i, cols] - A.mean(axis=0)) @ beta
            pred[i, j] = blend * ridge_pred + (1.0 - blend) * svd[i, j]
    return pred


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(
    "params",
    [{}, {"n_predictors": 2, "min_rows": 18, "blend": 0.3}, {"ridge": 0.1, "min_overlap": 25}],
    ids=["default", "few-rows", "high-overlap"],
)
@pytest.mark.parametrize("with_cov", [False, True], ids=["pairwise", "cov"])
def test_benchpress_grouped_prediction_matches_per_pair_reference(seed, params, with_cov):
    train, query = pattern_problem(seed, train_missing=0.35 if params.get("min_rows") else 0.25)
    cov = np.corrcoef(np.nan_to_num(train[[r for r in range(len(train)) if r != 3]]).T) * 2.0 if with_cov else None
    imp = BenchPressBlend(**params).fit(train, cov=cov)
    pred = imp.predict(query)
    svd = SoftImpute(rank=2, shrinkage=0.0).fit(train).predict(query)  # its own test: against a plain SVD loop
    expected = reference_benchpress(train, query, svd, cov=cov, **params)
    np.testing.assert_allclose(pred, expected, rtol=0, atol=1e-10)
    assert not np.allclose(pred[:12], svd[:12])  # the ridge part is used
    np.testing.assert_array_equal(pred[12], svd[12])
    np.testing.assert_array_equal(pred[13], query[13])
    # a second call on the same training rows (reusing its cached fits) and a reordered query agree too
    order = np.random.default_rng(seed).permutation(query.shape[0])
    again = imp.predict(query[order])
    svd_again = SoftImpute(rank=2, shrinkage=0.0).fit(train).predict(query[order])
    np.testing.assert_allclose(again, reference_benchpress(train, query[order], svd_again, cov=cov, **params),
                               rtol=0, atol=1e-10)


def test_benchpress_ranking_and_predicting_in_small_batches_gives_the_same_predictions(monkeypatch):
    import benchsel_lib.method.completion as completion

    train, query = pattern_problem(0, train_missing=0.25)
    whole = BenchPressBlend().fit(train).predict(query)
    monkeypatch.setattr(completion, "RANK_BATCH", 1)  # one observation pattern at a time
    monkeypatch.setattr(completion, "ENTRY_BATCH", 1)  # one (row, target) entry at a time
    np.testing.assert_array_equal(BenchPressBlend().fit(train).predict(query), whole)


def reference_svd_complete(Z, *, rank, shrinkage, max_iter, tol, init=None):
    """Plain iterative SVD completion with numpy's full SVD (the documented iteration)."""
    mask = ~np.isnan(Z)
    filled = np.where(mask, Z, 0.0 if init is None else init)
    for n_iter in range(1, max_iter + 1):
        U, s, Vt = np.linalg.svd(filled, full_matrices=False)
        keep = s > 1e-12 * max(s[0], 1e-300)
        if rank is not None:
            keep[rank:] = False
        fit = (U[:, keep] * np.maximum(s[keep] - shrinkage, 0.0)) @ Vt[keep]
        new = np.where(mask, Z, fit)
        delta, denom = np.sum((new - filled) ** 2), max(np.sum(filled**2), 1e-300)
        filled = new
        if delta / denom < tol:
            break
    return fit, n_iter


@pytest.mark.parametrize(
    "rank, shrinkage", [(3, 1.0), (2, 0.0), (None, 2.0), (5, 0.5)], ids=["default", "hard2", "nuclear", "rank5"]
)
@pytest.mark.parametrize("shape", [(40, 8), (10, 16)], ids=["tall", "wide"])
def test_softimpute_matches_plain_svd_iteration(rank, shrinkage, shape):
    train, query = pattern_problem(4, m=shape[0], n=shape[1])
    train[:, 0] = np.nan if shape[0] < shape[1] else train[:, 0]  # wide: a column with nothing observed
    imp = SoftImpute(rank=rank, shrinkage=shrinkage, tol=1e-9, max_iter=500)
    pred = imp.fit(train).predict(query)
    kw = dict(rank=rank, shrinkage=shrinkage, max_iter=500, tol=1e-9)
    train_fit, _ = reference_svd_complete(train, **kw)
    fit, n_iter = reference_svd_complete(np.vstack([train, query]), init=np.vstack([train_fit, np.zeros_like(query)]),
                                         **kw)
    expected = np.where(np.isnan(query), fit[train.shape[0]:], query)
    np.testing.assert_allclose(pred, expected, rtol=0, atol=1e-9)
    assert imp.n_iter_ == n_iter


def test_knn_falls_back_to_training_mean_without_observations():
    train, query, _, _ = low_rank_problem(7)
    query[0] = np.nan
    pred = KNNImputer().fit(train).predict(query)
    np.testing.assert_array_equal(pred[0], 0.0)


def test_knn_with_exact_duplicate_row_returns_its_values():
    rng = np.random.default_rng(0)
    train = rng.normal(size=(30, 4))
    query = train[[7]].copy()
    query[0, 2:] = np.nan
    pred = KNNImputer(n_neighbors=1).fit(train).predict(query)
    np.testing.assert_allclose(pred[0], train[7])


def _reference_knn(train, query, k, weights):
    """One entry at a time: nan-Euclidean distances by loops, donors by sorting (distance, row)."""
    out = np.where(np.isnan(query), 0.0, query)
    for i, q in enumerate(query):
        qo = ~np.isnan(q)
        dist = []
        for r, t in enumerate(train):
            common = qo & ~np.isnan(t)
            if common.sum() == 0:
                dist.append(np.inf)
            else:
                dist.append(np.sqrt(np.sum((q[common] - t[common]) ** 2) * qo.sum() / common.sum()))
        for j in np.flatnonzero(~qo):
            donors = sorted((dist[r], r) for r in range(len(train)) if not np.isnan(train[r, j]) and np.isfinite(dist[r]))
            donors = donors[:k]
            if not donors:
                continue
            w = [1.0 if weights == "uniform" else 1.0 / max(d, 1e-6) for d, _ in donors]
            out[i, j] = sum(wi * train[r, j] for wi, (_, r) in zip(w, donors)) / sum(w)
    return out


@pytest.mark.parametrize("train_missing", [0.4, 0.0])
@pytest.mark.parametrize("weights", ["distance", "uniform"])
@pytest.mark.parametrize("k", [1, 3, 50])
def test_knn_matches_an_entry_by_entry_reference(k, weights, train_missing):
    rng = np.random.default_rng(11)
    # scores on a grid of halves: squared distances are exact, so equal distances are exact ties
    train = np.round(2 * rng.normal(size=(25, 7))) / 2
    train[rng.random(train.shape) < train_missing] = np.nan
    query = np.round(2 * rng.normal(size=(9, 7))) / 2
    query[rng.random(query.shape) < 0.6] = np.nan
    got = KNNImputer(n_neighbors=k, weights=weights).fit(train).predict(query)
    np.testing.assert_allclose(got, _reference_knn(train, query, k, weights), rtol=0, atol=1e-12)


def test_knn_donors_of_a_complete_training_matrix_are_the_general_donors_bit_for_bit():
    rng = np.random.default_rng(5)
    train = np.round(2 * rng.normal(size=(40, 6))) / 2  # exact ties among the distances
    dist = np.abs(rng.normal(size=(9, 40)))
    dist[:, ::7] = dist[:, [3]]  # more ties
    dist[4] = np.inf  # a query row without a common column
    tm = np.ones_like(train, dtype=bool)
    for k in (1, 5, 40):
        fast = completion._nearest_donors(dist, tm, train, k)
        general = completion._observing_donors(dist, tm, train, k)
        for a, b in zip(fast, general):
            assert a.flags.c_contiguous and a.shape == (9, 6, k)
            np.testing.assert_array_equal(a, b)


def test_benchpress_blend_ridge_fits_match_one_fit_at_a_time():
    train = low_rank_scores(12, m=30, n=8, noise=0.4, missing=0.45)
    tm = ~np.isnan(train)
    blend = BenchPressBlend(min_rows=6, ridge=0.7)
    keys = [(0, (1, 2, 3)), (4, (5,)), (7, (6, 5, 4, 3, 2)), (3, (0, 1, 2, 4, 5, 6, 7)), (2, (1, 0))]
    use, parts = blend._ridge_fits(train, tm, keys)
    got = [None] * len(keys)
    for p, (idx, cols, beta, a_mean, y_mean) in parts.items():
        for t, i in enumerate(idx.tolist()):
            assert use[i] == p
            got[i] = (cols[t], beta[t], a_mean[t], y_mean[t])
    for (j, preds), fit in zip(keys, got):
        cols = list(preds)
        while cols and (tm[:, j] & tm[:, cols].all(axis=1)).sum() < 6:
            cols = cols[:-1]
        if not cols:
            assert fit is None
            continue
        rows = tm[:, j] & tm[:, cols].all(axis=1)
        A, y = train[np.ix_(rows, cols)], train[rows, j]
        Ac = A - A.mean(axis=0)
        beta = np.linalg.solve(Ac.T @ Ac + 0.7 * np.eye(len(cols)), Ac.T @ (y - y.mean()))
        assert list(fit[0]) == cols
        np.testing.assert_allclose(fit[1], beta, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fit[2], A.mean(axis=0), rtol=1e-12, atol=1e-14)
        assert fit[3] == pytest.approx(y.mean(), abs=1e-13)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: SoftImpute(rank=0), "rank"),
        (lambda: SoftImpute(rank=None, shrinkage=0.0), "rank or a positive shrinkage"),
        (lambda: SoftImpute(rank=2, shrinkage=-1.0), "shrinkage"),
        (lambda: KNNImputer(n_neighbors=0), "n_neighbors"),
        (lambda: KNNImputer(weights="gaussian"), "weights"),
        (lambda: BenchPressBlend(blend=2.0), "blend"),
        (lambda: SoftImpute(rank=2).fit(np.zeros((3, 4))).predict(np.zeros((1, 5))), "columns"),
        (lambda: KNNImputer().fit(np.zeros((3, 4, 1))).predict(np.zeros((1, 4))), "2-D"),
        (lambda: KNNImputer().fit(np.zeros((3, 4))).predict(np.full((1, 4), np.inf)), "infinite"),
        (lambda: BenchPressBlend().fit(np.zeros((3, 4)), cov=np.eye(3)).predict(np.zeros((1, 4))), "cov"),
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
    pred = imp.fit(train).predict(query)  # two batches of one row, 8 of 12 training rows as context
    assert pred.shape == (2, 5) and np.isfinite(pred).all()
    np.testing.assert_array_equal(pred[:, :2], query[:, :2])
    assert imp.name == "tabimpute-v2"
    np.testing.assert_array_equal(pred[1:], imp.predict(query[1:]))  # same batch -> same numbers


@pytest.mark.skipif(not (_HAS_TORCH and _HAS_TABIMPUTE), reason="optional extra [tabimpute] (torch, tabimpute) not installed")
def test_tabimpute_adapter_refuses_checkpoint_without_v2_weights(tmp_path):
    import torch

    path = tmp_path / "empty.ckpt"
    torch.save({"model": {}}, path)
    imp = TabImputeV2Imputer(path, device="cpu")
    with pytest.raises(ValueError, match="random weights"):
        imp.fit(np.zeros((3, 2))).predict(np.full((1, 2), np.nan))


def test_benchpress_blend_without_ridge_handles_collinear_predictors():
    rng = np.random.default_rng(13)
    base = rng.normal(size=(12, 1))
    train = np.hstack([base, base, 2 * base, rng.normal(size=(12, 1))])  # three collinear columns
    query = train[:3].copy()
    query[:, 3] = np.nan
    pred = BenchPressBlend(ridge=0.0, min_rows=3, min_overlap=3).fit(train).predict(query)
    assert np.isfinite(pred).all()
