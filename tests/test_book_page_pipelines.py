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
    cells = table["auto − method"].tolist() + table["auto − method, same entries"].tolist()
    assert "0.000 ± 0.004" in cells and not any(str(c).startswith("-0.000") for c in cells)


def test_the_comparison_table_opens_each_size_with_the_recommended_pipeline_and_gives_both_scorings():
    peers = pd.concat([_peers(k=5), _peers(k=10)], ignore_index=True)
    shared = _shared(peers, (0.01, -0.01, np.nan, 0.0), n_shared=(100, 90, 0, 80))
    shared.loc[2, "diff_se"] = np.nan
    t = page.comparison_table(peers, shared=shared)
    assert list(t["method"]) == [page.AUTO, "mi+knn", "Gaussian + MI (the paper)"] * 2
    assert list(t["k"]) == [5, 5, 5, 10, 10, 10]
    assert t.loc[1, "auto − method"] == "+0.010 ± 0.004"
    assert t.loc[4, "auto − method, same entries"] == "none shared"
    assert t["same entries"].dtype == "Int64" and t["same entries"].isna().sum() == 2
    assert "auto − method, same entries" not in page.comparison_table(peers).columns


def test_tally_counts_clear_wins_and_losses_and_the_comparisons_without_a_shared_entry():
    df = pd.DataFrame(dict(diff=[0.1, -0.05, -0.001, np.nan], diff_se=[0.01, 0.01, 0.01, np.nan]))
    t = page.tally(df)
    assert (t["n"], t["none"], t["at_or_above"], t["better"], t["worse"]) == (3, 1, 1, 1, 1)
    assert list(t["worse_rows"]["diff"]) == [-0.05]


def test_the_peers_passage_says_why_the_recommended_pipeline_loses_only_on_the_same_entries():
    peers = _peers()
    text = page.peers_passage(peers, shared=_shared(peers, (-0.007, 0.0)))
    assert text.count("in the protocol's R²") == 2 and text.count("on the same entries") == 2
    assert "below by as much in 0." in text and "Scored on the same entries" in text
    assert "(0.900 against 0.907, -0.007 ± 0.002, on 100 shared entries) on the same entries" in text
    assert "In all of these it is ahead in the protocol's R², so its lead there on MMLU comes from" in text
    behind = page.peers_passage(peers.assign(diff=[-0.02, 0.02], diff_se=0.004, peer_r2=[0.97, 0.93]))
    assert "It is clearly below `mi+knn` on MMLU at *k* = 5 (0.950 against 0.970, -0.020 ± 0.004) in the " \
           "protocol's R²." in behind
    none = page.peers_passage(peers, shared=_shared(peers, (np.nan, np.nan)))
    assert "No held-out entry is scored by both methods in any of the 2 comparisons." in none
    assert page.peers_passage(peers.iloc[:0]) == ""


def test_the_answer_recommends_the_pipeline_only_when_no_method_is_clearly_above_it():
    choices = pd.DataFrame(dict(matrix="MMLU", k=[5, 10], choice=["entropy-obs+stack"] * 2, folds=[9, 10],
                                of=10))
    peers = _peers()
    text = page.answer(peers, _shared(peers, (-0.007, 0.0)), choices, datasets=["mmlu"], ks=[5])
    assert text.startswith("Use the recommended pipeline.")
    assert "the paper's Gaussian + MI and 1 re-implemented published method in 2 of 2 comparisons" in text
    assert "clearly below in 1 of 2, on MMLU (named below)." in text
    assert "`entropy-obs+stack` on MMLU (19 of 20 choices)" in text
    worse = page.answer(peers.assign(diff=[-0.02, 0.02]), None, choices, datasets=["mmlu"], ks=[5])
    assert worse.startswith("It depends on the matrix")
    for diffs in ([-0.001, 0.02], [0.001, 0.002]):  # below one, or above none, by two standard errors
        level = page.answer(peers.assign(diff=diffs), None, choices, datasets=["mmlu"], ks=[5])
        assert level.startswith("The recommended pipeline, or one of the methods it cannot be told apart from.")


def test_the_scope_says_what_the_run_covers_and_what_the_full_study_adds():
    full = {"datasets": ["mteb", "merged", "benchpress", "mmlu"], "pairs": 30,
            "aside": ["BIG-bench", "BigCode", "WildBench"]}
    text = page.scope(datasets=["benchpress", "mmlu"], seeds=[42], n_folds=10, ks=[5, 10], k_max=10, n_peers=8,
                      n_pairs=0, aside=[], full=full, quick=False)
    assert "on BenchPress and MMLU, on the paper's folds (10 folds), with 1 to 10 benchmarks revealed" in text
    assert ("adds MTEB and Merged, the grid of 30 fixed (selection, predictor) pairs and 3 leaderboards kept aside "
            "(BIG-bench, BigCode and WildBench).") in text
    other = page.scope(datasets=["mteb", "merged", "benchpress", "mmlu"], seeds=[1], n_folds=3, ks=[3], k_max=3,
                       n_peers=2, n_pairs=30, aside=full["aside"], full=full, quick=True, estimator="pairwise")
    assert "the paper's fold layout drawn with seed 1 (3 folds)" in other and "It is the full study." in other
    assert "quick run" in other and "`pairwise`" in other


def _runs():
    rows = []
    for name, low in (("MTEB", 0.6), ("BenchPress", -0.2)):
        for m, base in (("auto", 0.8), ("mi", low), ("a+b", 0.7), ("c+d", 0.7), ("e+f", 0.5)):
            for fold in range(3):
                for k in (1, 2, 5):
                    rows.append(dict(matrix=name, method=m, fold=fold, k=k, r2=base + 0.01 * k))
    return {n: g for n, g in pd.DataFrame(rows).groupby("matrix", sort=False)}


def test_the_curve_caption_counts_where_the_pipeline_leads_and_names_coinciding_and_clipped_lines():
    fig = plotting.plot_pipeline_curves(_runs(), separate=True, one_legend=True, clip=True, common=False)
    means = page.curve_means(fig)
    assert list(means) == ["MTEB", "BenchPress"]
    np.testing.assert_allclose(means["MTEB"].loc["auto"].to_numpy(), [0.81, 0.82, 0.85])
    groups = plotting.coinciding_lines(fig)
    assert groups == [("MTEB", ["a+b", "c+d"]), ("BenchPress", ["a+b", "c+d"])]
    clipped = page.clipped_lines(fig)
    assert [(t, lab) for t, lab, _, _ in clipped] == [("BenchPress", "mi")]
    text = page.curve_caption(means, groups, clipped=clipped)
    assert "at 3 of 3 sizes on MTEB and at 3 of 3 sizes on BenchPress" in text
    assert "MTEB: a+b and c+d; BenchPress: a+b and c+d." in text
    assert "the paper's Gaussian + MI on BenchPress (R² -0.19 to -0.15)" in text
    assert "No two lines coincide" in page.curve_caption(means, [])


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


def test_coinciding_lines_ignore_the_ideal_line_and_lines_that_part_anywhere():
    cal = pd.DataFrame([dict(dataset="X", method=m, k=5, nominal=q, coverage=q + d)
                        for m, d in (("entropy", 0.01), ("mi", 0.012), ("random", 0.05)) for q in (0.5, 0.9)])
    fig = plotting.plot_reliability(cal, gap=True, dodge=0.01)
    assert plotting.coinciding_lines(fig) == [("X", ["Entropy (greedy), k=5", "MI (greedy), k=5"])]
    lines = [ln for ln in fig.axes[0].get_lines() if ln.get_label() != "ideal"]
    np.testing.assert_allclose(lines[0].get_ydata(), [0.01, 0.01])  # drawn as the gap to the nominal level
    assert lines[0].get_xdata()[0] != lines[1].get_xdata()[0]  # side by side
    with pytest.raises(ValueError, match="dodge"):
        plotting.plot_reliability(cal, dodge=-1)


def test_the_gain_passage_names_the_scoring_of_each_fall():
    gains = pd.DataFrame(dict(matrix=["A", "B"], k0=5, k1=10, r2_k0=0.5, r2_k1=[0.52, 0.49], gain=[0.02, -0.01],
                              gain_se=0.01, gain_common=[0.01, 0.005], gain_common_se=0.004))
    text = page.gain_passage(gains)
    assert "falls in the protocol's R² on B, and on the same entries (those every size of the fold scores)" not in text
    assert "falls in the protocol's R² on B, nor on the same entries" in text
    assert "Where it falls only in the protocol's R²" in text
    assert list(page.gain_table(gains)["k"]) == ["5 → 10", "5 → 10"]
    assert "single subset size" in page.gain_passage(None)


def test_the_grid_passage_says_when_no_grid_ran_and_names_a_pair_clearly_above():
    assert "compares no grid" in page.grid_passage(None, 0)
    summary = pd.DataFrame(dict(matrix="A", k=[5, 10], reference=[0.6, 0.7], baseline=0.5,
                                best_fixed=["mi+ridge", "lasso+knn"], best_fixed_r2=[0.65, 0.69],
                                diff=[-0.05, 0.01], diff_se=0.01))
    text = page.grid_passage(summary, 30)
    assert "at or below the recommended pipeline in 1 of 2" in text
    assert "It is clearly above it at A, *k* = 5 (`mi+ridge` 0.650 against 0.600)." in text
    assert list(page.grid_table(summary)["auto − best"]) == ["-0.050 ± 0.010", "+0.010 ± 0.010"]


def test_the_choices_are_counted_over_the_folds_of_each_size():
    df = pd.DataFrame(dict(method="auto", fold=range(4), k=[5, 5, 10, 10],
                           choice=["a+stack", "b+ridge", "a+stack", "a+stack"]))
    t = page.choice_table({"M": df}, ks=[5, 10])
    assert list(t.itertuples(index=False, name=None)) == [("M", 5, "a+stack", 1, 2), ("M", 5, "b+ridge", 1, 2),
                                                          ("M", 10, "a+stack", 2, 2)]
    assert "`a+stack` in 3 of 4 (fold, k) cells on M" in page.choice_passage(t)


def test_the_optimism_and_coverage_passages_quote_the_largest_gap():
    opt = pd.DataFrame(dict(matrix="A", k=[5, 10], inner_r2=[0.5, 0.6], r2=[0.48, 0.5], optimism=[0.02, 0.1],
                            optimism_se=0.01))
    assert "by at most +0.100 ± 0.010 (A, *k* = 10: inner 0.600 against held-out 0.500" in page.optimism_passage(opt)
    assert "Here it does not" in page.optimism_passage(opt.assign(optimism=-0.01))
    cov = pd.DataFrame(dict(matrix="A", nominal=[0.5, 0.9], coverage=[0.52, 0.89]))
    assert "within 0.020 of the nominal level everywhere (largest gap: A at 50%, 0.520)" in page.coverage_passage(cov)


def test_the_page_glues_every_passage_without_tex():
    peers = _peers()
    choices = pd.DataFrame(dict(matrix="MMLU", k=[5], choice=["a+stack"], folds=[3], of=3))
    cov = pd.DataFrame(dict(matrix="MMLU", nominal=[0.9], coverage=[0.9]))
    opt = pd.DataFrame(dict(matrix="MMLU", k=[5], inner_r2=[0.9], r2=[0.9], optimism=[0.0], optimism_se=0.01))
    out = page.prose(datasets=["mmlu"], peers=peers, shared=None, choices=choices, coverage=cov, optimism=opt,
                     gains=None, curves={"MMLU": pd.DataFrame({1: [0.9, 0.8]}, index=["auto", "mi"])},
                     coinciding=[], scope_text="This run.", ks=[5])
    assert set(out.passages) == {"answer", "scope", "peers_md", "curve_caption", "choice_md", "optimism_md",
                                 "coverage_md", "gain_md", "grid_md", "aside_md"}
    assert all("$" not in text for text in out.passages.values()) and out.matrices == ["mmlu"]
    assert "No leaderboard was kept aside" in out["aside_md"]


def test_the_aside_passage_repeats_no_sentence_of_the_comparison_on_the_matrices():
    from benchsel_lib.book.site import sentences

    peers = _peers()
    shared = _shared(peers, (-0.007, 0.0))
    main = page.peers_passage(peers, shared=shared)
    held = {"matrix": "WildBench"}  # the same counts on a leaderboard kept aside
    aside = page.aside_passage(peers.assign(**held), shared.assign(**held),
                               pd.DataFrame(dict(nominal=[0.9], coverage=[0.92])))
    assert aside.startswith("On WildBench, against the same methods and in the protocol's R²")
    assert not set(sentences([main])) & set(sentences([aside]))
    assert aside.endswith("There the intervals' coverage is within 0.020 of the nominal level.")
    assert page.aside_passage(None, None, None) == ""
