"""Chapter 6's page module: the claims of Figures 9-11, the captions and the MMLU explanation."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book.pages import stability as page
from benchsel_lib.method.selection import select
from benchsel_lib.protocol.splits import cv_splits
from benchsel_lib.studies.diagnostics import selection_summary


def _positions(orders: list[list[str]]) -> pd.DataFrame:
    """Selection positions of one order per fold."""
    return pd.DataFrame([{"benchmark": b, "fold": f, "position": i + 1}
                         for f, order in enumerate(orders) for i, b in enumerate(order)])


def _run(orders: dict[tuple[str, str], list[list[str]]], *, top: int):
    positions = {key: _positions(o) for key, o in orders.items()}
    n_folds = len(next(iter(orders.values())))
    stability = {key: selection_summary(p, top=top, n_folds=n_folds) for key, p in positions.items()}
    return positions, stability, n_folds


def _filler(n: int, prefix: str = "x") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def test_the_claims_give_the_papers_verdicts_and_skip_what_the_run_did_not_compute():
    merged_mi = [["arena_hard/score", "helm/NarrativeQA", *_filler(13)] for _ in range(8)]
    merged_mi += [["arena_hard/score", *_filler(14)] for _ in range(2)]
    mmlu_mi = [["miscellaneous", *_filler(14)] for _ in range(4)] + [["other", "miscellaneous", *_filler(13)]
                                                                     for _ in range(6)]
    positions, stability, n_folds = _run({("merged", "mi"): merged_mi, ("mmlu", "mi"): mmlu_mi}, top=15)
    rows = {r.claim: r for r in page.claim_rows(positions, stability, n_folds=n_folds, top=15, k_max=15)}
    first = rows["Merged MI: arena_hard/score first"]
    assert (first.run, first.verdict) == ("10/10", "reproduced")
    assert rows["Merged MI: helm/NarrativeQA in the top 15"].verdict == "reproduced"
    misc = rows["MMLU MI: miscellaneous first"]
    assert (misc.run, misc.verdict) == ("4/10", "not reproduced") and "other first in 6" in misc.why
    assert rows["MTEB entropy: SummEval second"].verdict == "not run"
    assert "MTEB was not in this run" in rows["MTEB entropy: SummEval second"].why
    assert rows["MMLU entropy: nearly all top-15 picks stable"].verdict == "not run"


def test_claims_about_the_first_15_picks_are_not_run_when_the_run_counts_fewer():
    orders = [["arena_hard/score", "helm/NarrativeQA", "c"] for _ in range(3)]
    positions, stability, n_folds = _run({("merged", "mi"): orders}, top=3)
    rows = {r.claim: r for r in page.claim_rows(positions, stability, n_folds=n_folds, top=3, k_max=3)}
    assert rows["Merged MI: helm/NarrativeQA in the top 15"].verdict == "not run"
    assert "first 3 picks, not 15" in rows["Merged MI: helm/NarrativeQA in the top 15"].why
    assert rows["Merged MI: arena_hard/score first"].verdict == "reproduced"


def test_merged_entropy_is_partly_reproduced_when_another_benchmark_is_as_stable_as_musr():
    orders = [["open_llm/MUSR", "open_llm/GPQA", *_filler(13, f"f{f}_")] for f in range(10)]
    positions, stability, n_folds = _run({("merged", "entropy"): orders}, top=15)
    row = page.claim_rows(positions, stability, n_folds=n_folds, top=15, k_max=15)[5]
    assert row.claim.startswith("Merged entropy") and row.verdict == "partly"
    assert row.run == "open_llm/MUSR, open_llm/GPQA"


def test_the_mmlu_reason_names_the_gap_between_the_leading_gains():
    orders = [["a", *_filler(14)] for _ in range(5)] + [["miscellaneous", *_filler(14)] for _ in range(5)]
    positions, stability, n_folds = _run({("mmlu", "mi"): orders}, top=15)
    gains = pd.DataFrame({"benchmark": ["a", "miscellaneous"], "whole matrix": [2.84, 2.82], "lowest": [2.8, 2.8],
                          "highest": [2.9, 3.0], "first in folds": [5, 5]})
    rows = page.claim_rows(positions, stability, n_folds=n_folds, top=15, k_max=15, gains=gains, n_models=234)
    assert rows[1].why == "234 models, not 5,452: top gains 0.02 apart"


def test_the_first_step_gains_lead_to_mi_s_first_pick_in_every_split():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3)) @ rng.normal(size=(3, 7)) + 0.8 * rng.normal(size=(80, 7))
    names = [f"b{j}" for j in range(7)]
    splits = cv_splits(80, n_folds=4, holdout=0.1, seed=1)
    gains = page.first_step_gains(X, names, splits, n_candidates=7)
    assert gains["first in folds"].sum() == 4
    for _, tr, _ in splits:
        pick = names[select(np.corrcoef(X[tr], rowvar=False), 1, objective="mi").order[0]]
        assert gains.set_index("benchmark").loc[pick, "first in folds"] >= 1
    assert (gains["lowest"] <= gains["highest"]).all() and gains["whole matrix"].is_monotonic_decreasing
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="complete"):
        page.first_step_gains(X, names, splits)


def test_a_caption_states_the_first_pick_and_the_benchmarks_stable_in_every_fold():
    orders = [["a", "b", "c"], ["a", "c", "b"], ["a", "b", "d"]]
    positions, stability, n_folds = _run({("mteb", "mi"): orders}, top=2)
    caption = page.figure_caption("mteb", "mi", positions["mteb", "mi"], stability["mteb", "mi"], n_folds=3, top=2)
    assert caption.startswith("**MTEB, MI.** `a` is first in all 3 folds")
    assert "no other benchmark is among the first 2 in every fold" in caption
    orders = [["a", "b"], ["b", "a"], ["c", "a"]]
    positions, stability, _ = _run({("mteb", "mi"): orders}, top=2)
    caption = page.figure_caption("mteb", "mi", positions["mteb", "mi"], stability["mteb", "mi"], n_folds=3, top=2)
    assert "is first in 1 of 3 folds (3 distinct first picks)" in caption
    assert "only `a` is among the first 2 in every fold" in caption


def test_the_passages_explain_failures_and_say_when_the_folds_are_not_the_papers():
    orders = [["x", "miscellaneous", "c"] for _ in range(3)]
    positions, stability, n_folds = _run({("mmlu", "entropy"): orders, ("mmlu", "mi"): orders}, top=3)
    rows = page.claim_rows(positions, stability, n_folds=n_folds, top=3, k_max=3)
    prose = page.prose(rows=rows, positions=positions, stability=stability, gains=None, tolerance=None,
                       datasets=["mmlu"], tolerance_dataset="merged", tie_break="argmax", n_models={"mmlu": 234},
                       holdout=0.2, n_folds=3, k_max=3, top=3, seed=1, scheme="nested")
    assert "far fewer models" in prose["failures_md"]
    assert "other folds than the paper's" in prose["failures_md"] and "3 folds at 20% holdout" in prose["failures_md"]
    assert "seed 1 by this book's nested scheme" in prose["run_md"]
    assert "plain argmax" in prose["tie_md"] and "did not repeat the fits" in prose["tolerance_md"]
    text = " ".join(prose.passages.values())
    assert "$" not in text and "nan" not in text.lower().split() and "k_max" not in text


def test_the_tolerance_table_puts_the_loosest_tolerance_first():
    by_tol = pd.DataFrame({"tol": [5e-4, 1e-6, 5e-4, 1e-6], "fold": [0, 0, 1, 1],
                           "selected": [("a",), ("a",), ("a",), ("b",)], "em_iterations": [100, 900, 150, 1000]})
    picks, iters = page.tolerance_table(by_tol)
    assert list(picks.columns) == [5e-4, 1e-6] and picks.loc[1, 1e-6] == "b"
    assert iters.loc[1e-6, "max"] == 1000


def test_hubs_are_the_benchmarks_correlated_with_many_others():
    from types import SimpleNamespace

    rng = np.random.default_rng(1)
    common = rng.normal(size=(200, 1))
    X = np.hstack([common + 0.3 * rng.normal(size=(200, 4)), rng.normal(size=(200, 2))])  # b0-b3 hubs, b4-b5 not
    m = SimpleNamespace(scores=X, benchmarks=[f"b{j}" for j in range(6)])
    positions = {("mmlu", "entropy"): _positions([["b4", "b5", "b0", "b1", "b2"]] * 2),
                 ("mmlu", "mi"): _positions([["b0", "b1", "b2", "b3", "b4"]] * 2)}
    hubs = page.hub_table({"mmlu": m}, positions)
    row = hubs.iloc[0]
    assert row["entropy"] < row["all"] < row["MI"]
    stability = {k: selection_summary(p, top=5, n_folds=2) for k, p in positions.items()}
    rows = {r.claim: r for r in page.claim_rows(positions, stability, n_folds=2, top=5, k_max=5, hubs=hubs)}
    assert rows["MMLU: entropy picks outliers, MI hubs"].verdict == "reproduced"
    assert rows["MTEB: entropy picks outliers, MI hubs"].verdict == "not run"
    flipped = hubs.assign(entropy=hubs["MI"], MI=hubs["entropy"])
    rows = page.claim_rows(positions, stability, n_folds=2, top=5, k_max=5, hubs=flipped)
    assert rows[-2].verdict == "not reproduced"


def test_a_figure_caption_is_displayed_as_markdown_from_the_glued_passage():
    from benchsel_lib.book.prose import PageProse

    shown = page.caption(PageProse(["mmlu"], {"caption_mmlu_mi": "**MMLU, MI.** `a` is first."}), "mmlu", "mi")
    assert shown._repr_markdown_() == "**MMLU, MI.** `a` is first."
    with pytest.raises(KeyError):
        page.caption(PageProse(["mmlu"], {}), "mmlu", "entropy")
