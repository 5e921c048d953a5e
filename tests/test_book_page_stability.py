"""Chapter 6's page module: the claims of Figures 9-11 under the book's one verdict rule, and the chapter's tables."""
from __future__ import annotations

import numpy as np
import pandas as pd

from benchsel_lib.book.pages import stability as page
from benchsel_lib.protocol.splits import cv_splits
from benchsel_lib.studies.diagnostics import selection_summary

SETTINGS = dict(holdout=0.1, folds=10, seed=42, scheme="paper", tie_break="auto")


def _positions(orders: list[list[str]]) -> pd.DataFrame:
    """Selection positions of one order per fold."""
    return pd.DataFrame([{"benchmark": b, "fold": f, "position": i + 1}
                         for f, order in enumerate(orders) for i, b in enumerate(order)])


def _claims(orders, *, top=15, hubs=None):
    positions = {key: _positions(o) for key, o in orders.items()}
    n_folds = len(next(iter(orders.values())))
    stability = {key: selection_summary(p, top=top, n_folds=n_folds) for key, p in positions.items()}
    hubs = pd.DataFrame(columns=["matrix", "entropy", "MI", "all"]) if hubs is None else hubs
    rows = page.claims(positions=positions, stability=stability, hubs=hubs, n_folds=n_folds, top=top,
                       n_models={"mmlu": 234}, settings=SETTINGS)
    return {r.claim: r for r in rows}


def _fill(n: int, prefix: str = "x") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def test_a_share_of_folds_reproduces_partly_or_not_by_the_share_rule():
    def merged_mi(n_first):
        return [["arena_hard/score", *_fill(14)] for _ in range(n_first)] + \
            [["other", "arena_hard/score", *_fill(13)] for _ in range(10 - n_first)]
    verdicts = [_claims({("merged", "mi"): merged_mi(n)})["Merged MI: arena_hard/score first"].verdict for n in (10, 8, 5)]
    assert verdicts == ["reproduced", "partly", "not reproduced"]
    row = _claims({("merged", "mi"): merged_mi(8)})["Merged MI: arena_hard/score first"]
    assert row.run == "8 of 10 folds" and "other (2)" in row.why and "seed=42" in row.key


def test_mmlu_rows_that_fail_name_the_smaller_matrix():
    mmlu_mi = [["miscellaneous", *_fill(14)] for _ in range(4)] + [["other", "miscellaneous", *_fill(13)] for _ in range(6)]
    row = _claims({("mmlu", "mi"): mmlu_mi})["MMLU MI: miscellaneous first"]
    assert row.verdict == "not reproduced" and "234 of the paper's 5,452 models" in row.why
    assert _claims({("mmlu", "mi"): mmlu_mi})["MMLU MI: first 9 picks the same in every fold"].run == "8 of 9"


def test_the_mean_position_is_graded_as_a_position():
    def orders(at):
        return [[*_fill(at - 1), "MassiveIntentClassification", *_fill(15 - at, "y")] for _ in range(10)]
    key = "MTEB MI: MassiveIntentClassification's mean position"
    assert [_claims({("mteb", "mi"): orders(p)})[key].verdict for p in (3, 4, 5)] == ["reproduced", "partly",
                                                                                       "not reproduced"]


def test_only_musr_stable_is_a_count_in_both_directions():
    base = [["open_llm/MUSR", "open_llm/GPQA", *_fill(13, f"f{f}-")] for f in range(10)]
    row = _claims({("merged", "entropy"): base})["Merged entropy: only MUSR in the top 15 of every fold"]
    assert (row.run, row.verdict) == ("2 of 15", "partly")


def test_claims_not_computed_are_not_run_with_the_reason():
    rows = _claims({("mteb", "entropy"): [["a", "SummEval", *_fill(13)] for _ in range(10)]}, top=5)
    assert rows["MMLU MI: miscellaneous first"].why == "MMLU was not in this run"
    assert rows["MTEB entropy: SummEval second"].verdict == "reproduced"
    assert rows["MMLU: entropy picks outliers, MI hubs"].verdict == "not run"
    rows = _claims({("mmlu", "entropy"): [_fill(5) for _ in range(3)]}, top=5)
    assert rows["MMLU entropy: top-15 picks in every fold"].why == "this run counts the first 5 picks, not 15"
    assert all(r.verdict == "not run" or "nan" not in r.run for r in rows.values())


def test_hub_rows_check_both_halves_of_the_caption():
    orders = {("mmlu", "mi"): [["a"] for _ in range(2)]}
    hubs = pd.DataFrame({"matrix": ["MMLU", "MTEB"], "entropy": [0.7, 0.4], "MI": [0.9, 0.5], "all": [0.8, 0.6]})
    rows = _claims(orders, hubs=hubs)
    assert rows["MMLU: entropy picks outliers, MI hubs"].verdict == "reproduced"
    assert rows["MTEB: entropy picks outliers, MI hubs"].verdict == "not reproduced"


class _Matrix:
    def __init__(self, scores):
        self.scores, self.benchmarks = scores, [f"b{j}" for j in range(scores.shape[1])]


def test_hub_table_compares_the_early_picks_with_all_benchmarks():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(200, 1))
    X = np.hstack([z + 0.1 * rng.normal(size=(200, 3)), rng.normal(size=(200, 1))])  # b3 is an outlier
    pos = {("m", "entropy"): _positions([["b3"]]), ("m", "mi"): _positions([["b0"]])}
    t = page.hub_table({"m": _Matrix(X)}, pos, first=1).iloc[0]
    assert t["entropy"] < t["all"] < t["MI"]


def test_fold_order_lists_both_methods_with_their_counts():
    pos = {"entropy": _positions([["a", "b"], ["b", "a"]]), "mi": _positions([["c", "a"], ["c", "b"]])}
    st = {m: selection_summary(p, top=1, n_folds=2) for m, p in pos.items()}
    t = page.fold_order(pos, st, 1)
    assert t["entropy"].tolist() == ["b", "a"] and t["mi"].tolist() == ["c", "b"]
    assert t["mi: folds in top"].tolist() == [2, 0]


def test_first_step_gains_lead_with_the_best_predicted_benchmark():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(300, 1))
    X = np.hstack([z + 0.2 * rng.normal(size=(300, 1)), z + 0.5 * rng.normal(size=(300, 2)), rng.normal(size=(300, 1))])
    g = page.first_step_gains(X, ["hub", "p", "q", "noise"], cv_splits(300, n_folds=3, holdout=0.1, seed=0))
    assert g["benchmark"].iloc[0] == "hub" and g["first in folds"].iloc[0] == 3
    assert (g["lowest"] <= g["highest"]).all()
