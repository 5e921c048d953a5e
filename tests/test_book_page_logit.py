"""The logit chapter's page module (benchsel_lib.book.pages.logit)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from benchsel_lib.book.claims import claims_table
from benchsel_lib.book.pages import logit

SETTINGS = dict(k=5, holdout=0.1, folds=10, seed=42, scheme="paper", configs={"benchpress": "early"})


def _spec(k90: int) -> SimpleNamespace:
    return SimpleNamespace(n_components=lambda level: k90 if level == 0.9 else k90 + 3)


def _summary(values: dict) -> pd.DataFrame:
    """(matrix, space) -> MI's R² at k = 5."""
    return pd.DataFrame([{"dataset": n, "space": s, "pipeline": "mi", "k": 5, "r2_mean": v}
                         for (n, s), v in values.items()])


PAPER = {(n, s): v for n, pair in logit.PAPER_TABLE5.items() for s, v in zip(("raw", "logit"), pair)}


def _claims(values=None, raw=None, lg=None, names=tuple(logit.PAPER_TABLE5), off=None):
    raw = {"mmlu": 2, "mteb": 6, "merged": 8, "benchpress": 8, **(raw or {})}
    lg = {"mmlu": 2, "mteb": 8, "merged": 10, "benchpress": 9, **(lg or {})}
    values = {**PAPER, **(values or {})}
    summary = _summary({key: v for key, v in values.items() if key[0] in names})
    return {c.claim: c for c in logit.claims(summary, spec_raw={n: _spec(raw[n]) for n in names},
                                             spec_logit={n: _spec(lg[n]) for n in names}, settings=SETTINGS,
                                             off=off)}


def test_the_paper_numbers_reproduce_every_claim():
    rows = _claims()
    assert {c.verdict for c in rows.values()} == {"reproduced"}
    assert rows["The logit transform improves no matrix"].run == "0 of 4"


def test_a_pair_takes_the_worse_verdict_of_its_two_numbers():
    rows = _claims(values={("mteb", "logit"): 0.67, ("merged", "raw"): 0.30}, raw={"mmlu": 1}, lg={"merged": 13})
    assert rows["MI R² at k = 5, raw → logit: MTEB"].verdict == "partly"
    assert rows["MI R² at k = 5, raw → logit: Merged"].verdict == "not reproduced"
    assert rows["MMLU: components for 90%, raw → logit"].verdict == "partly"
    assert rows["Merged: components for 90%, raw → logit"].verdict == "not reproduced"


def test_a_logit_gain_beyond_the_r2_tolerance_counts_as_an_improvement():
    rows = _claims(values={("benchpress", "logit"): 0.08})
    bp = rows["MI R² at k = 5, raw → logit: BenchPress"]
    assert bp.verdict == "not reproduced" and bp.why == "logit − raw +0.19, paper -0.11"
    none = rows["The logit transform improves no matrix"]
    assert (none.run, none.verdict, none.why) == ("1 of 4", "partly", "logit higher on BenchPress")
    small = _claims(values={("mmlu", "logit"): 0.93})["The logit transform improves no matrix"]
    assert small.verdict == "reproduced"


def test_a_matrix_left_out_or_a_run_off_the_papers_settings_is_not_run():
    rows = _claims(names=("mteb",))
    assert rows["MI R² at k = 5, raw → logit: Merged"].verdict == "not run"
    assert rows["MMLU: components for 90%, raw → logit"].why == "MMLU was not in this run"
    assert rows["The logit transform improves no matrix"].run == "0 of 1"
    off = _claims(off="run at k = 3")
    assert off["MI R² at k = 5, raw → logit: MTEB"].verdict == "not run"
    assert off["The logit transform improves no matrix"].verdict == "not run"


def test_keys_carry_the_cv_and_em_settings():
    rows = _claims()
    assert rows["MI R² at k = 5, raw → logit: BenchPress"].key == (
        "benchpress-mi-r2-raw-logit[config=early, folds=10, holdout=0.1, k=5, scheme=paper, seed=42]")
    assert rows["MTEB: components for 90%, raw → logit"].key == "mteb-components-raw-logit[config=released, level=0.9]"


def test_claims_never_show_a_missing_value():
    for rows in (_claims(), _claims(names=("benchpress",)), _claims(off="run at k = 3")):
        md = claims_table(list(rows.values())).markdown()
        assert "nan" not in md.lower() and "None" not in md


def test_the_clipping_table_counts_negative_columns_and_both_ends():
    m = SimpleNamespace(scores=np.array([[1.0, -0.5], [0.5, 2.0], [np.nan, 1.0]]))
    t = logit.clipping_table({"mteb": m})
    row = t.iloc[0]
    assert row["Columns with negative scores"] == 1 and row["Entries at the floor"] == 1
    assert row["Entries at the ceiling"] == 2 and row["Observed entries"] == 5


def test_table5_shows_the_paper_columns_only_at_the_papers_settings():
    summary = _summary(PAPER)
    at = logit.table5(summary, ["mteb"], k=5, paper=True)
    assert list(at.columns) == ["Matrix", "Raw, paper", "Logit, paper", "Raw, here", "Logit, here", "Logit − raw"]
    assert np.isclose(at["Logit − raw"].iloc[0], -0.04)
    assert "Raw, paper" not in logit.table5(summary, ["mteb"], k=5, paper=False).columns


def test_the_components_table_pairs_raw_and_logit_counts():
    t = logit.components_table({"benchpress": _spec(8)}, {"benchpress": _spec(9)}, [0.9], {"benchpress": "EM (early)"})
    assert t.iloc[0].to_dict() == {"Matrix": "BenchPress", "90%, raw → logit": "8 → 9", "Paper, 90%": "not given",
                                   "Estimate": "EM (early)"}
