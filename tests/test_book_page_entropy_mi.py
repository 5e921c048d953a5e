"""benchsel_lib.book.pages.entropy_mi: the claims, tables and prose of chapter 5 (Section 5.4, Figures 5-7)."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from benchsel_lib.book import plotting
from benchsel_lib.book.pages import entropy_mi as page

PARAMETERS = ("first_pick_datasets", "n_first_picks", "first_pick_ks", "spread_seeds", "tie_breaks", "k_max")
KS = range(1, 16)


def _summary(mi=None, entropy=None, *, mi_resid=None, ks=KS):
    """A CV summary of entropy, MI and random; ``mi`` / ``entropy`` map k to an R^2 that overrides the default."""
    rows = []
    for meth in ("entropy", "mi", "random"):
        for k in ks:
            r2 = {"entropy": 0.6, "mi": 0.62, "random": 0.58}[meth] + 0.02 * k
            r2 = {"mi": mi or {}, "entropy": entropy or {}}.get(meth, {}).get(k, r2)
            resid = {"entropy": 0.5, "mi": 0.45 if mi_resid is None else mi_resid, "random": 0.6}[meth] / k
            rows.append({"method": meth, "holdout": 0.1, "k": k, "r2_mean": r2, "r2_sd": 0.05,
                         "residual_fraction_mean": resid,
                         "mi_mean": {"entropy": 1.0, "mi": 2.0, "random": 0.5}[meth] * k})
    return pd.DataFrame(rows)


def _cv(gains, *, n_folds=4, ks=KS):
    """Per-fold rows of entropy and MI: MI's R^2 minus entropy's is ``gains[k][fold]`` (0 where not given)."""
    rows = []
    for fold in range(n_folds):
        for k in ks:
            g = gains.get(k, [0.0] * n_folds)[fold]
            rows.append({"method": "entropy", "holdout": 0.1, "fold": fold, "k": k, "r2": 0.5,
                         "selected": ("central",) + tuple(f"e{j}" for j in range(1, k))})
            rows.append({"method": "mi", "holdout": 0.1, "fold": fold, "k": k, "r2": 0.5 + g,
                         "selected": ("hub",) + tuple(f"m{j}" for j in range(1, k))})
    return pd.DataFrame(rows)


def _band(first_column=-0.3, ks=KS):
    rows = []
    for rule, d in (("auto", 0.0), ("argmax", first_column), ("index", first_column), ("mi", 0.0)):
        for k in ks:
            rows.append({"variant": rule, "holdout": 0.1, "k": k, "r2_mean": 0.6 + 0.02 * k + (d if k < 4 else 0)})
    return pd.DataFrame(rows)


def test_the_gain_table_gives_the_mean_the_fold_range_and_the_folds_where_mi_is_ahead():
    table = page.gain_table({"mteb": _cv({1: [0.1, -0.02, 0.04, 0.0]})}, k_max=3)
    row = table.iloc[0]
    assert list(table["k"]) == [1, 2, 3]
    assert row["MI − entropy"] == "+0.030" and row["over folds"] == "-0.02 to +0.10"
    assert row["folds MI ahead"] == "2 of 4"
    assert table.iloc[1]["MI − entropy"] == "0.000" and table.iloc[1]["over folds"] == "0.00 to 0.00"


def test_mi_ahead_at_small_k_is_partly_reproduced_when_some_cells_are_not_positive_and_names_them():
    ahead = {k: [0.02, 0.01, 0.03, 0.0] for k in range(1, 6)}
    behind = {**ahead, 1: [-0.3, -0.2, 0.1, -0.1], 2: [-0.1, 0.0, 0.0, -0.05]}
    rows = {c.claim: c for c in page.claims({"mmlu": _summary(), "merged": _summary()},
                                            {"mmlu": _cv(ahead), "merged": _cv(behind)},
                                            {"mmlu": _band(), "merged": _band()}, pd.DataFrame(columns=_GAP_COLUMNS),
                                            k_max=15, holdout=0.1)}
    row = rows["MI ahead of entropy at small k, on every matrix"]
    assert row.run == "8 of 10 (matrix, k)" and row.verdict == "partly"
    assert row.why == "entropy level or ahead at Merged k = 1, 2"
    all_ahead = page.claims({"mmlu": _summary()}, {"mmlu": _cv(ahead)}, {"mmlu": _band()},
                            pd.DataFrame(columns=_GAP_COLUMNS), k_max=15, holdout=0.1)
    assert {c.claim: c for c in all_ahead}["MI ahead of entropy at small k, on every matrix"].verdict == "reproduced"


_GAP_COLUMNS = ["matrix", "k", "resid. entropy", "resid. MI", "resid. trace", "R² entropy", "R² MI", "R² trace"]


def test_the_surrogate_gap_needs_entropy_lower_in_residual_variance_and_mi_clearly_higher_in_r2():
    s = _summary(mi={k: 0.6 + 0.02 * k + 0.001 for k in KS}, mi_resid=0.55)  # MI ahead by a hair only
    trace = {"mmlu": s.assign(method=s["method"].replace({"entropy": "trace"}))}
    gap = page.gap_table({"mmlu": s}, trace, k_max=15)
    assert list(gap["k"]) == [1, 2, 3, 4, 5]
    rows = {c.claim: c for c in page.claims({"mmlu": s}, {"mmlu": _cv({})}, {"mmlu": _band()}, gap, k_max=15,
                                            holdout=0.1)}
    assert rows["Surrogate gap: entropy less residual variance, yet MI better R²"].run == "holds in 0 of 5 (matrix, k)"
    s = _summary(mi={k: 0.6 + 0.02 * k + 0.05 for k in KS}, mi_resid=0.55)
    gap = page.gap_table({"mmlu": s}, trace, k_max=15)
    rows = {c.claim: c for c in page.claims({"mmlu": s}, {"mmlu": _cv({})}, {"mmlu": _band()}, gap, k_max=15,
                                            holdout=0.1)}
    row = rows["Surrogate gap: entropy less residual variance, yet MI better R²"]
    assert row.run == "holds in 5 of 5 (matrix, k)" and row.verdict == "reproduced"


def test_a_reversed_gap_says_so_and_gives_the_first_column_rules_gap_beside_it():
    s = _summary(mi={15: 0.55}, entropy={15: 0.58})
    rows = {c.claim: c for c in page.claims({"merged": s}, {"merged": _cv({})}, {"merged": _band()},
                                            pd.DataFrame(columns=_GAP_COLUMNS), k_max=15, holdout=0.1)}
    row = rows["Merged, k = 15: MI 0.59 against entropy 0.55"]
    assert row.verdict == "not reproduced" and row.run == "-0.03 (MI 0.55, entropy 0.58)"
    assert row.why.startswith("reversed")
    level = _summary(mi={1: 0.9}, entropy={1: 0.902})
    rows = {c.claim: c for c in page.claims({"mmlu": level}, {"mmlu": _cv({})}, {"mmlu": _band()},
                                            pd.DataFrame(columns=_GAP_COLUMNS), k_max=15, holdout=0.1)}
    row = rows["MMLU, k = 1: MI ahead, 0.83 against 0.65"]
    # MI 0.90 against 0.32 for entropy's first-column rule at k = 1
    assert row.run == "0.00 (MI 0.90, entropy 0.90)" and row.why == "no gap; first-column tie rule +0.58"


def test_the_crossover_is_the_size_from_which_entropy_stays_at_or_above_mi():
    s = _summary(entropy={k: 0.62 + 0.02 * k for k in range(9, 16)})
    assert page.crossover(s) == 9
    assert np.isnan(page.crossover(_summary()))
    rows = {c.claim: c for c in page.claims({"mteb": s}, {"mteb": _cv({})}, {"mteb": _band()},
                                            pd.DataFrame(columns=_GAP_COLUMNS), k_max=15, holdout=0.1)}
    assert rows["MTEB: entropy overtakes for k ≥ 10"].verdict == "reproduced"
    assert rows["MTEB: entropy overtakes for k ≥ 10"].run == "k = 9"


def test_claims_of_matrices_sizes_or_a_holdout_the_run_left_out_are_not_run_rows():
    rows = page.claims({"mteb": _summary(ks=range(1, 6))}, {"mteb": _cv({}, ks=range(1, 6))},
                       {"mteb": _band(ks=range(1, 6))}, pd.DataFrame(columns=_GAP_COLUMNS), k_max=5, holdout=0.1)
    by = {c.claim: c for c in rows}
    assert by["MMLU, k = 1: MI ahead, 0.83 against 0.65"].why == "MMLU was not in this run"
    assert by["MTEB: entropy overtakes for k ≥ 10"].why == "this run stops at k = 5"
    assert by["Merged: MI clearly ahead at large k"].verdict == "not run"
    other = page.claims({"mteb": _summary()}, {"mteb": _cv({})}, {"mteb": _band()},
                        pd.DataFrame(columns=_GAP_COLUMNS), k_max=15, holdout=0.2)
    assert all(c.verdict == "not run" for c in other)
    assert {c.why for c in other} >= {"this run holds out 20%, the paper 10%"}


def test_the_first_pick_figure_is_cut_only_when_a_forced_pick_falls_far_below_the_curves():
    s = _summary()
    band = pd.DataFrame([{"variant": v, "holdout": 0.1, "k": k, "r2_mean": r}
                         for v, r1 in (("good", 0.5), ("mt_bench/math", -10.7)) for k, r in ((1, r1), (5, 0.6))])
    floor = page.readable_floor(s, band)
    assert floor == pytest.approx(-0.1)
    assert page.readable_floor(s, band.assign(r2_mean=0.5)) is None
    fig = plotting.plot_entropy_vs_mi(s, holdout=0.1)
    plotting.add_variant_band(fig, band, holdout=0.1, clip_below=floor, label="range over forced first picks")
    ax = fig.axes[0]
    assert ax.get_ylim()[0] == pytest.approx(-0.1)
    assert any("mt_bench/math: -10.7" in t.get_text() for t in ax.texts)


def test_first_pick_sizes_keep_the_tables_sizes_and_none_scores_every_size():
    assert page.first_pick_sizes([1, 2, 3, 5, 10, 15], 15) == [1, 2, 3, 5, 10, 15]
    assert page.first_pick_sizes([2, 10], 4) == [1, 2, 4]
    assert page.first_pick_sizes(None, 15) is None


def test_the_page_prose_names_no_parameter_and_explains_each_failure():
    s_mmlu = _summary(mi={1: 0.9}, entropy={1: 0.902})
    s_merged = _summary(mi={15: 0.55}, entropy={15: 0.58})
    summary = {"mmlu": s_mmlu, "merged": s_merged}
    cv = {"mmlu": _cv({}), "merged": _cv({15: [0.1, -0.1, 0.05, -0.2]})}
    band = {"mmlu": _band(), "merged": _band()}
    trace = {n: s.assign(method=s["method"].replace({"entropy": "trace"})) for n, s in summary.items()}
    gap = page.gap_table(summary, trace, k_max=15)
    rows = page.claims(summary, cv, band, gap, k_max=15, holdout=0.1)
    fp = pd.DataFrame([{"variant": v, "holdout": 0.1, "k": k, "r2_mean": r, "method": "entropy", "metric": "r2_mean"}
                       for v, r1 in (("good", 0.5), ("mt_bench/math", -10.7))
                       for k, r in ((1, r1), (5, 0.6), (15, 0.7))])
    first_pick = {"merged": fp}
    table = page.first_pick_table(summary, first_pick, k_max=15)
    prose = page.prose(claims_rows=rows, summary=summary, cv=cv, band=band, gains=page.gain_table(cv, k_max=15),
                       gap=gap, first_pick=first_pick, first_picks=table, observed={"merged": {"mt_bench/math": 3}},
                       n_models={"mmlu": 234, "merged": 118}, floors={"merged": -0.2}, datasets=["mmlu", "merged"],
                       first_pick_datasets=["merged"], holdout=0.1, k_max=15, n_folds=4, seed=42, scheme="paper",
                       estimator="auto", n_first_picks=None, first_pick_ks=[1, 5, 15], quick=False)
    text = " ".join(prose.passages.values())
    assert not any(p in text for p in PARAMETERS) and "-0.00" not in text and not re.search(r"\bnan\b", text)
    assert "**Small k.**" in prose["failures_md"] and "**Merged at k = 15.**" in prose["failures_md"]
    assert "MTEB was not run" in prose["run_md"]
    assert "only 3 of the 118 models have a score on it" in prose["first_pick_md"]
    assert "cut at -0.2: `mt_bench/math` at k = 1 (R² -10.7)" in prose["first_pick_caption"]


def test_add_variant_band_without_a_floor_keeps_the_whole_band_in_view():
    fig = plotting.plot_entropy_vs_mi(_summary(), holdout=0.1)
    band = pd.DataFrame([{"variant": "x", "holdout": 0.1, "k": 1, "r2_mean": -3.0},
                         {"variant": "x", "holdout": 0.1, "k": 2, "r2_mean": 0.5}])
    plotting.add_variant_band(fig, band, holdout=0.1)
    assert fig.axes[0].get_ylim()[0] <= -3.0 and not fig.axes[0].texts
    assert isinstance(fig, Figure)
