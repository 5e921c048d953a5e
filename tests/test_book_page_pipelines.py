"""benchsel_lib.book.pages.pipelines (chapter 12) and the figure functions it uses."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book import plotting
from benchsel_lib.book.pages import pipelines as page


def _peers(matrix="MMLU", diffs=(0.01, 0.02), ses=(0.004, 0.004), k=5):
    return pd.DataFrame(dict(matrix=matrix, k=k, peer=["mi+knn", "mi"][:len(diffs)], reference_r2=0.95,
                             peer_r2=[0.95 - d for d in diffs], diff=list(diffs), diff_se=list(ses),
                             n_cells=10))


def _shared(peers, diffs, n_shared=(100, 100)):
    return peers.assign(reference_r2=0.9, peer_r2=[0.9 - d for d in diffs], diff=list(diffs),
                        diff_se=0.002, n_shared=list(n_shared)[:len(peers)], n_own=120)


def test_a_difference_that_rounds_to_zero_is_written_without_a_sign():
    table = page.comparison_table(_peers(diffs=(-0.0001, 0.02)), shared=_shared(_peers(diffs=(-0.0001, 0.02)),
                                                                         (-0.0002, 0.01)))
    cells = table["auto − pipeline"].tolist() + table["auto − pipeline, same entries"].tolist()
    assert "0.000 ± 0.004" in cells and not any(str(c).startswith("-0.000") for c in cells)


def test_the_comparison_table_opens_each_size_with_the_recommended_pipeline_and_gives_both_scorings():
    peers = pd.concat([_peers(k=5), _peers(k=10)], ignore_index=True)
    shared = _shared(peers, (0.01, -0.01, np.nan, 0.0), n_shared=(100, 90, 0, 80))
    shared.loc[2, "diff_se"] = np.nan
    t = page.comparison_table(peers, shared=shared)
    assert list(t["pipeline"]) == [page.AUTO, "mi+knn", "Gaussian + MI (the paper)"] * 2
    assert list(t["k"]) == [5, 5, 5, 10, 10, 10]
    assert t.loc[1, "auto − pipeline"] == "+0.010 ± 0.004"
    assert t.loc[4, "auto − pipeline, same entries"] == "none shared"
    assert t["same entries"].dtype == "Int64" and t["same entries"].isna().sum() == 2
    assert "auto − pipeline, same entries" not in page.comparison_table(peers).columns


def _runs():
    rows = []
    for name, low in (("MTEB", 0.6), ("BenchPress", -0.2)):
        for m, base in (("auto", 0.8), ("mi", low), ("a+b", 0.7), ("c+d", 0.7), ("e+f", 0.5)):
            for fold in range(3):
                for k in (1, 2, 5):
                    rows.append(dict(matrix=name, pipeline=m, fold=fold, k=k, r2=base + 0.01 * k))
    return {n: g for n, g in pd.DataFrame(rows).groupby("matrix", sort=False)}


def test_separated_curves_keep_their_values_but_not_their_markers_or_positions():
    fig = plotting.plot_pipeline_curves(_runs(), separate=True, one_legend=True, common=False)
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    others = [ln.get_marker() for label, ln in lines.items() if label not in ("auto", "mi")]
    assert len(set(others)) == len(others) and "o" not in others
    np.testing.assert_allclose(lines["a+b"].get_ydata(), lines["c+d"].get_ydata())
    assert np.all(np.abs(lines["a+b"].get_xdata() - lines["c+d"].get_xdata()) > 0)
    assert np.all(np.abs(lines["a+b"].get_xdata() - [1, 2, 5]) <= 0.15)
    assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["auto", "mi", "a+b", "c+d", "e+f"]
    fig.savefig(io.BytesIO(), format="png")


def test_reliability_gaps_set_close_lines_side_by_side():
    cal = pd.DataFrame([dict(dataset="X", pipeline=m, k=5, nominal=q, coverage=q + d)
                        for m, d in (("entropy", 0.01), ("mi", 0.012), ("random", 0.05)) for q in (0.5, 0.9)])
    fig = plotting.plot_reliability(cal, gap=True, dodge=0.01)
    lines = [ln for ln in fig.axes[0].get_lines() if ln.get_label() != "ideal"]
    np.testing.assert_allclose(lines[0].get_ydata(), [0.01, 0.01])  # drawn as the gap to the nominal level
    assert lines[0].get_xdata()[0] != lines[1].get_xdata()[0]  # side by side
    with pytest.raises(ValueError, match="dodge"):
        plotting.plot_reliability(cal, dodge=-1)


def test_the_choices_are_counted_over_the_folds_of_each_size():
    df = pd.DataFrame(dict(pipeline="auto", fold=range(4), k=[5, 5, 10, 10],
                           choice=["a+stack", "b+ridge", "a+stack", "a+stack"]))
    t = page.choice_table({"M": df}, ks=[5, 10])
    assert list(t.itertuples(index=False, name=None)) == [("M", 5, "a+stack", 1, 2), ("M", 5, "b+ridge", 1, 2),
                                                          ("M", 10, "a+stack", 2, 2)]
    assert page.favourite(t) == {"M": ("a+stack", 3, 4)}


def test_tally_counts_clear_wins_and_losses_and_leaves_out_comparisons_without_a_shared_entry():
    df = pd.DataFrame(dict(diff=[0.1, -0.05, -0.001, np.nan], diff_se=[0.01, 0.01, 0.01, np.nan]))
    t = page.tally(df)
    assert (t["n"], t["at_or_above"], t["better"], t["worse"]) == (3, 1, 1, 1)
    assert list(t["worse_rows"]["diff"]) == [-0.05]


def test_the_gain_and_grid_tables_write_differences_with_their_standard_errors():
    gains = pd.DataFrame(dict(matrix=["A"], k0=5, k1=10, r2_k0=0.5, r2_k1=0.52, gain=0.02, gain_se=0.01,
                              gain_common=np.nan, gain_common_se=np.nan))
    t = page.gain_table(gains)
    assert list(t.iloc[0]) == ["A", "5 → 10", 0.5, 0.52, "+0.020 ± 0.010", "—"]
    summary = pd.DataFrame(dict(matrix="A", k=[5, 10], reference=[0.6, 0.7], baseline=0.5,
                                best_fixed=["mi+ridge", "lasso+ridge"], best_fixed_r2=[0.65, 0.69],
                                diff=[-0.05, 0.01], diff_se=0.01))
    assert list(page.grid_table(summary)["auto − best"]) == ["-0.050 ± 0.010", "+0.010 ± 0.010"]


def test_r2_at_gives_every_methods_mean_and_standard_error_best_first():
    t = page.r2_at(_runs()["MTEB"], 2)
    assert list(t["pipeline"]) == [page.AUTO, "a+b", "c+d", page.PAPER, "e+f"]
    np.testing.assert_allclose(t["R²"], [0.82, 0.72, 0.72, 0.62, 0.52])
    np.testing.assert_allclose(t["se"], 0.0, atol=1e-12)


def test_the_explorer_panel_draws_one_bar_per_method():
    fig = page.r2_panel(_runs()["BenchPress"], 5, title="BenchPress")
    assert len(fig.axes[0].patches) == 5 and fig.axes[0].get_title() == "BenchPress, k = 5"
    assert fig.axes[0].get_xlim()[0] < -0.15  # the negative R² of the paper's pipeline stays in view
    fig.savefig(io.BytesIO(), format="png")


def test_not_drawn_names_the_methods_a_panel_leaves_out():
    runs = _runs()
    fig = plotting.plot_pipeline_curves(runs, n_top=1, separate=True, one_legend=True, common=False)
    assert page.not_drawn(fig, runs) == {"MTEB": ["c+d", "e+f"], "BenchPress": ["c+d", "e+f"]}
