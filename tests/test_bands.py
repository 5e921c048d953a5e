"""Bands over greedy variants: shared correlations, tie-break rules, forced first picks, figures.

All CV runs use the paper's pipelines with a pairwise correlation estimate
(:func:`_paper`) on small synthetic matrices, so the tests do not depend on EM
and take well under a second each.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import benchsel_lib as bs  # noqa: E402
from benchsel_lib.book import plotting  # noqa: E402
from benchsel_lib.data import ScoreMatrix, ScoreWarning  # noqa: E402
from benchsel_lib.method import correlation as correlation_module  # noqa: E402
from benchsel_lib.method.pipeline import Pipeline  # noqa: E402
from benchsel_lib.protocol.cache import correlation_cache  # noqa: E402
from benchsel_lib.protocol.cv import cross_validate  # noqa: E402
from benchsel_lib.protocol.splits import cv_splits  # noqa: E402
from benchsel_lib.protocol.summaries import summarize_cv  # noqa: E402
from benchsel_lib.studies.bands import first_pick_band, tie_break_band, variant_range  # noqa: E402

CV = dict(k_max=4, n_folds=3, seed=0, progress=False)


def _paper(*objectives: str, **options) -> list[Pipeline]:
    """The paper's pipelines for ``objectives`` with a pairwise correlation estimate (and ``options``)."""
    return [Pipeline.paper(objective=o, estimator="pairwise", **options) for o in objectives]


def _entropy(**options) -> Pipeline:
    """The base pipeline of the bands: the paper's entropy pipeline with a pairwise correlation estimate."""
    return _paper("entropy", **options)[0]


def _blocks(M: int = 30, *, seed: int = 0, missing: float = 0.0) -> ScoreMatrix:
    """Two blocks of three benchmarks: a0..a2 follow factor 1, c0..c2 factor 2 (nearly uncorrelated)."""
    rng = np.random.default_rng(seed)
    f = rng.normal(size=(M, 2))
    cols = [f[:, 0] + 0.2 * rng.normal(size=M) for _ in range(3)]
    cols += [f[:, 1] + 0.2 * rng.normal(size=M) for _ in range(3)]
    X = 50 + 10 * np.column_stack(cols)
    if missing:
        mask = rng.random(X.shape) < missing
        mask[:, 0] = False  # keep every row non-empty
        X[mask] = np.nan
    return ScoreMatrix(X, [f"m{i}" for i in range(M)], ["a0", "a1", "a2", "c0", "c1", "c2"], "blocks")


@pytest.fixture
def count_estimates(monkeypatch):
    """Count the correlation estimates actually computed (no disk cache)."""
    monkeypatch.delenv("BENCHSEL_CACHE_DIR", raising=False)
    calls = {"n": 0}
    plain = correlation_module.estimate_correlation

    def counting(*args, **kwargs):
        calls["n"] += 1
        return plain(*args, **kwargs)

    monkeypatch.setattr(correlation_module, "estimate_correlation", counting)
    return calls


# --------------------------------------------------------------------------- correlation_cache
def test_correlation_cache_gives_results_identical_to_uncached_runs(count_estimates):
    m = _blocks(missing=0.2)
    plain = cross_validate(m, _paper("entropy", "mi", "random"), **CV)
    with correlation_cache():
        cached = cross_validate(m, _paper("entropy", "mi", "random"), **CV)
        again = cross_validate(m, _paper("entropy", "mi", "random"), **CV)
    pd.testing.assert_frame_equal(plain, cached)
    pd.testing.assert_frame_equal(plain, again)


def test_correlation_cache_estimates_each_split_once(count_estimates):
    m = _blocks(missing=0.2)
    with correlation_cache() as cache:
        cross_validate(m, _paper("entropy"), **CV)
        assert count_estimates["n"] == 3 and len(cache) == 3  # one per fold
        cross_validate(m, _paper("mi", "random", tie_break="index"), **CV)
        cross_validate(m, _paper("entropy", min_observed=2), **CV)
        assert count_estimates["n"] == 3 and len(cache) == 3
        cross_validate(m, _paper("entropy"), holdouts=(0.5,), **CV)
        assert count_estimates["n"] == 6 and len(cache) == 6  # other training sets: new entries


def test_correlation_cache_is_reentrant_and_removed_on_exit(count_estimates):
    m = _blocks()
    with correlation_cache() as outer:
        with correlation_cache() as inner:
            assert inner is outer
            cross_validate(m, _paper("entropy"), **CV)
        cross_validate(m, _paper("entropy"), **CV)  # the outer cache is still active
        assert count_estimates["n"] == 3 and len(outer) == 3
    cross_validate(m, _paper("entropy"), **CV)  # outside: estimated again
    assert count_estimates["n"] == 6


# --------------------------------------------------------------------------- tie_break_band
def test_tie_break_band_has_one_variant_per_rule():
    rules = ("auto", "argmax", "index", "mi")
    band = tie_break_band(_blocks(), tie_breaks=rules, pipeline=_entropy(), **CV)
    assert list(band["variant"].unique()) == list(rules)
    assert all(sorted(g["k"]) == [1, 2, 3, 4] for _, g in band.groupby("variant"))
    assert set(band["pipeline"]) == {"entropy"} and (band["n_folds"] == 3).all()


def test_tie_break_band_variant_matches_a_plain_run_with_that_rule():
    m = _blocks(missing=0.1)
    band = tie_break_band(m, tie_breaks=("index",), pipeline=_entropy(), **CV)
    plain = summarize_cv(cross_validate(m, _paper("entropy", tie_break="index"), **CV))
    np.testing.assert_allclose(band["r2_mean"].to_numpy(), plain["r2_mean"].to_numpy())


@pytest.mark.parametrize("bad", ["pipelines", "tie_break", "return_details"])
def test_tie_break_band_rejects_options_it_sets_itself(bad):
    value = {"pipelines": _paper("mi"), "tie_break": "index", "return_details": True}[bad]
    with pytest.raises(ValueError, match=bad):
        tie_break_band(_blocks(), pipeline=_entropy(), **{bad: value}, **CV)


def test_tie_break_band_rejects_empty_rules():
    with pytest.raises(ValueError, match="empty"):
        tie_break_band(_blocks(), tie_breaks=(), pipeline=_entropy(), **CV)


# --------------------------------------------------------------------------- Pipeline.paper(initial=...)
def test_cross_validate_initial_forces_the_first_pick_of_every_method():
    df = cross_validate(_blocks(), _paper("entropy", "mi", "random", initial=("c1",)), **CV)
    assert all(sel[0] == "c1" for sel in df["selected"])
    assert (df["n_forced"] == 1).all()
    assert {label: p.selector.initial for label, p in df.attrs["pipelines"].items()} == {
        "entropy": ("c1",), "mi": ("c1",), "random": ("c1",)}


def test_cross_validate_initial_keeps_the_given_order():
    df = cross_validate(_blocks(), _paper("entropy", initial=["c1", "a2"]), **CV)
    assert all(sel[:2] == ("c1", "a2") for sel in df.loc[df["k"] >= 2, "selected"])


def test_cross_validate_without_initial_has_no_forced_column():
    assert "n_forced" not in cross_validate(_blocks(), _paper("entropy"), **CV).columns


@pytest.mark.parametrize("initial, match", [(("nope",), "unknown mandatory benchmark 'nope'"),
                                            ((4,), "unknown mandatory benchmark '4'"),
                                            (("a0", "a0"), "twice"), (("a0", "a1", "a2", "c0", "c1"), "k_max")])
def test_cross_validate_rejects_bad_initial(initial, match):
    with pytest.raises(ValueError, match=match):
        cross_validate(_blocks(), _paper("entropy", initial=initial), **CV)


@pytest.mark.filterwarnings("ignore:benchmark 'c2' is constant")  # said once below, on the first run
def test_forced_pick_without_training_scores_is_skipped_in_that_split():
    m = _blocks()
    X = np.array(m.scores)
    X[:, 5] = np.nan
    X[7, 5] = 55.0  # c2 observed by one model only
    m = ScoreMatrix(X, m.models, m.benchmarks, "thin")
    with pytest.warns(ScoreWarning, match="benchmark 'c2' is constant"):  # one observation
        df = cross_validate(m, _paper("entropy", initial=("c2",)), **CV)
    lone = next(f for f, tr, va in cv_splits(m.shape[0], n_folds=3, seed=0) if 7 in va)
    inside = df[df["fold"] == lone]
    assert (inside["n_forced"] == 0).all() and (inside["n_dropped"] == 1).all()
    assert not any("c2" in sel for sel in inside["selected"])
    others = df[df["fold"] != lone]
    assert (others["n_forced"] == 1).all() and all(sel[0] == "c2" for sel in others["selected"])
    # where c2 is the only pick, no validation model observes it: nobody is scored (the paper's rule)
    unscored = (df["fold"] != lone) & (df["k"] == 1)
    assert (df.loc[unscored, "n_eval"] == 0).all() and df.loc[unscored, "r2"].isna().all()
    assert np.isfinite(df.loc[~unscored, "r2"]).all()
    # predicting those models by the training mean instead scores them
    mean = cross_validate(m, _paper("entropy", initial=("c2",)), unreached="mean", **CV)
    assert np.isfinite(mean["r2"]).all() and (mean.loc[unscored, "n_eval"] > 0).all()


# --------------------------------------------------------------------------- first_pick_band
def test_first_pick_band_starts_every_selection_with_the_forced_benchmark():
    band, folds = first_pick_band(_blocks(), return_folds=True, pipeline=_entropy(), **CV)
    assert list(band["variant"].unique()) == ["a0", "a1", "a2", "c0", "c1", "c2"]
    assert all(sel[0] == v for v, sel in zip(folds["variant"], folds["selected"]))
    assert (band["n_forced_folds"] == 3).all()
    # known structure: after a pick in one block, entropy's next pick comes from the other block
    two = folds[folds["k"] == 2]
    assert all(sel[0][0] != sel[1][0] for sel in two["selected"])


def test_first_pick_band_has_one_variant_per_pick_and_k():
    band = first_pick_band(_blocks(), picks=["c0", 1], pipeline=_entropy(), **CV)
    assert list(band["variant"].unique()) == ["c0", "a1"]
    assert len(band) == 2 * CV["k_max"]
    assert band.attrs["picks"] == ("c0", "a1")


def test_first_pick_band_forcing_the_default_first_pick_reproduces_the_default_run():
    m = _blocks(missing=0.1)
    plain = cross_validate(m, _paper("entropy"), **CV)
    _, folds = first_pick_band(m, return_folds=True, pipeline=_entropy(), **CV)
    for f, g in plain.groupby("fold"):
        first = g.loc[g["k"] == 1, "selected"].iloc[0][0]  # the default rule's pick in this fold
        forced = folds[(folds["variant"] == first) & (folds["fold"] == f)]
        assert list(forced["selected"]) == list(g["selected"])
        np.testing.assert_allclose(forced["r2"].to_numpy(), g["r2"].to_numpy())


def test_first_pick_band_seeded_sample_is_deterministic():
    m = _blocks()
    a = first_pick_band(m, n_picks=3, pipeline=_entropy(), **CV)
    b = first_pick_band(m, n_picks=3, pipeline=_entropy(), **CV)
    pd.testing.assert_frame_equal(a, b)
    assert a["variant"].nunique() == 3
    samples = {first_pick_band(m, n_picks=3, pipeline=_entropy(), **{**CV, "seed": s, "k_max": 1}).attrs["picks"]
               for s in range(8)}
    assert len(samples) > 1 and all(list(s) == sorted(s, key=m.benchmarks.index) for s in samples)


def test_first_pick_band_samples_from_the_given_picks():
    band = first_pick_band(_blocks(), picks=["a0", "c0", "c2"], n_picks=2, pipeline=_entropy(), **CV)
    assert set(band["variant"]) < {"a0", "c0", "c2"} and band["variant"].nunique() == 2


@pytest.mark.parametrize("kwargs, match", [
    (dict(picks=[]), "picks is empty"),
    (dict(picks=["a0", "zz"]), "unknown first-pick benchmark 'zz'"),
    (dict(picks=[6]), "out of range"),
    (dict(picks=["a0", 0]), "first-pick benchmark 0 is given more than once"),
    (dict(n_picks=0), "n_picks"),
    (dict(n_picks=7), "n_picks"),
    (dict(picks=["a0", "a1"], n_picks=3), "between 1 and 2"),
    (dict(n_picks=True), "n_picks"),
    (dict(pipelines=("mi",)), "pipelines"),
    (dict(initial=("a0",)), "initial"),
    (dict(n_jobs=0), "n_jobs"),
    (dict(seed=-1), "seed"),
])
def test_first_pick_band_rejects_bad_input(kwargs, match):
    cv = {k: v for k, v in CV.items() if k not in kwargs}
    with pytest.raises(ValueError, match=match):
        first_pick_band(_blocks(), pipeline=_entropy(), **kwargs, **cv)


def test_first_pick_band_rejects_a_non_matrix():
    with pytest.raises(ValueError, match="ScoreMatrix"):
        first_pick_band(np.zeros((4, 3)), pipeline=_entropy(), **CV)


def test_first_pick_band_estimates_each_split_once(count_estimates):
    first_pick_band(_blocks(), pipeline=_entropy(), **CV)
    assert count_estimates["n"] == 3


def test_band_functions_come_from_their_subpackage_not_the_top_level():
    from benchsel_lib.protocol import cache
    from benchsel_lib.studies import bands

    for name in ("tie_break_band", "first_pick_band", "variant_range"):
        assert name in bands.__all__ and name not in bs.__all__
    assert cache.correlation_cache is correlation_cache and "correlation_cache" in cache.__all__
    assert "correlation_cache" not in bs.__all__


# --------------------------------------------------------------------------- variant_range
def _variants() -> pd.DataFrame:
    return pd.DataFrame(dict(variant=["x", "x", "y", "y", "z", "z"], pipeline="entropy", holdout=0.1,
                             k=[1, 2, 1, 2, 1, 2], r2_mean=[0.2, 0.5, 0.4, 0.7, np.nan, 0.6]))


def test_variant_range_gives_min_max_and_the_extreme_variants():
    r = variant_range(_variants(), k=2)
    assert len(r) == 1
    row = r.iloc[0]
    assert (row["min"], row["max"], row["lo_variant"], row["hi_variant"]) == (0.5, 0.7, "x", "y")
    assert row["spread"] == pytest.approx(0.2) and row["n_variants"] == 3 and row["metric"] == "r2_mean"


def test_variant_range_ignores_nan():
    row = variant_range(_variants(), k=1).iloc[0]
    assert (row["min"], row["max"]) == (0.2, 0.4)


def test_variant_range_over_folds_names_the_extreme_fold():
    _, folds = first_pick_band(_blocks(), picks=["a0", "c0"], return_folds=True, pipeline=_entropy(), **CV)
    r = variant_range(folds, k=2).iloc[0]
    at = folds[folds["k"] == 2]
    assert r["metric"] == "r2" and r["min"] == at["r2"].min() and r["max"] == at["r2"].max()
    lo = at[(at["variant"] == r["lo_variant"]) & (at["fold"] == r["lo_fold"])]
    assert lo["r2"].iloc[0] == r["min"]


@pytest.mark.parametrize("kwargs, match", [(dict(k=9), "no rows at k=9"), (dict(k=1, metric="nope"), "nope")])
def test_variant_range_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        variant_range(_variants(), **kwargs)


# --------------------------------------------------------------------------- figures
def _fig_with_axes() -> Figure:
    fig = Figure()
    fig.add_subplot().plot([1, 2], [0.1, 0.2], label="line")
    return fig


def test_add_variant_band_adds_one_hatched_band_to_the_first_axes():
    fig = _fig_with_axes()
    out = plotting.add_variant_band(fig, _variants(), holdout=0.1, label="range")
    assert out is fig
    (poly,) = [c for c in fig.axes[0].collections if isinstance(c, PolyCollection)]
    assert poly.get_hatch() == "///" and poly.get_label() == "range"
    assert "range" in [t.get_text() for t in fig.legends[0].get_texts()]  # the legend under the panels


def test_add_variant_band_accepts_a_first_pick_band():
    band = first_pick_band(_blocks(), picks=["a0", "c0"], pipeline=_entropy(), **CV)
    fig = plotting.add_variant_band(_fig_with_axes(), band, holdout=0.1)
    assert len(fig.axes[0].collections) == 1


def test_add_variant_band_rejects_a_missing_holdout_and_a_bare_figure():
    with pytest.raises(ValueError, match="holdout"):
        plotting.add_variant_band(_fig_with_axes(), _variants(), holdout=0.5)
    with pytest.raises(ValueError, match="no axes"):
        plotting.add_variant_band(Figure(), _variants())


def test_plot_cv_curves_shades_the_first_pick_band():
    m = _blocks()
    summary = summarize_cv(cross_validate(m, _paper("entropy", "random"), **CV))
    band = first_pick_band(m, picks=["a0", "c0"], pipeline=_entropy(), **CV)
    plain = plotting.plot_cv_curves(summary)
    shaded = plotting.plot_cv_curves(summary, variants=band)
    assert len(shaded.axes[0].collections) == len(plain.axes[0].collections) + 1


def test_variant_range_without_method_or_holdout_gives_one_row_and_no_extremes_for_all_nan():
    bare = _variants().drop(columns=["pipeline", "holdout"])
    r = variant_range(bare, k=2)
    assert len(r) == 1 and list(r.columns[:2]) == ["k", "metric"]
    empty = variant_range(bare.assign(r2_mean=np.nan), k=1).iloc[0]
    assert empty["lo_variant"] is None and empty["hi_variant"] is None and empty["n_variants"] == 3
