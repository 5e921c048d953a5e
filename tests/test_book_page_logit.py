"""benchsel_lib.book.pages.logit: chapter 10's claims, tables and text, from synthetic results."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from benchsel_lib.book.pages import logit as page

DATASETS = ["mmlu", "mteb", "merged", "benchpress"]
LABEL = {"mmlu": "MMLU", "mteb": "MTEB", "merged": "Merged", "benchpress": "BenchPress"}


def _summary(mi: dict, *, k: int = 5, methods=("mi",)) -> pd.DataFrame:
    """``page.summarize``-like rows: ``mi[(matrix, space)]`` is the R² of every method at ``k``."""
    return pd.DataFrame([{"dataset": LABEL[n], "space": sp, "method": m, "holdout": 0.1, "k": k, "r2_mean": v,
                          "r2_sd": 0.1} for (n, sp), v in mi.items() for m in methods])


def _paper(**logit) -> dict:
    """Table 5 as this run's, with some logit values changed."""
    out = {}
    for n, (raw, lg) in page.PAPER_TABLE5.items():
        out[(n, "raw")], out[(n, "logit")] = raw, logit.get(n, lg)
    return out


class Spec:
    """An eigenspectrum stand-in: ``n_components`` from a table, ``residual`` from a list."""

    def __init__(self, k90: int, residual=(0.5, 0.3, 0.2, 0.1, 0.05)):
        self.k90, self.residual = k90, np.asarray(residual)

    def n_components(self, level):
        return self.k90


def _spectra(counts: dict) -> tuple[dict, dict]:
    return ({n: Spec(a) for n, (a, _) in counts.items()},
            {n: Spec(b, residual=(0.6, 0.4, 0.3, 0.2, 0.1)) for n, (_, b) in counts.items()})


def test_table_5_rows_are_reproduced_when_the_numbers_and_directions_match():
    raw, lg = _spectra({**page.PAPER_K90, "benchpress": (8, 9)})
    rows = page.claims(_summary(_paper()), spec_raw=raw, spec_logit=lg, datasets=DATASETS, methods=["mi"], k=5,
                       holdout=0.1, n_folds=10)
    assert [r.verdict for r in rows] == ["reproduced"] * 6
    assert rows[0].run == "MMLU 2 → 2, MTEB 6 → 8, Merged 8 → 10"
    assert rows[-1].claim == "Logit transform improves no matrix" and rows[-1].run == "0 of 4"


def test_a_reversed_direction_is_not_reproduced_and_named():
    raw, lg = _spectra({**page.PAPER_K90, "benchpress": (8, 9)})
    rows = {r.claim: r for r in page.claims(_summary(_paper(benchpress=0.08)), spec_raw=raw, spec_logit=lg,
                                            datasets=DATASETS, methods=["mi"], k=5, holdout=0.1, n_folds=10)}
    bp = rows["MI R², raw → logit, BenchPress"]
    assert bp.verdict == "not reproduced" and bp.why == "logit higher here (+0.19), lower in the paper"
    assert rows["Logit transform improves no matrix"].why == "logit higher on BenchPress (+0.19)"
    same_way = rows["MI R², raw → logit, Merged"]
    assert same_way.verdict == "reproduced"


def test_the_component_counts_say_which_matrix_differs():
    raw, lg = _spectra({"mmlu": (1, 2), "mteb": (6, 8), "merged": (8, 10)})
    row = page.claims(_summary(_paper()), spec_raw=raw, spec_logit=lg, datasets=["mmlu", "mteb", "merged"],
                      methods=["mi"], k=5, holdout=0.1, n_folds=10)[0]
    assert row.verdict == "partly"
    assert row.why == "MMLU 1 → 2, not 2 → 2 (smaller MMLU, ch. 1); MTEB and Merged as in the paper"


def test_off_the_papers_setting_the_table_rows_are_not_run_and_the_papers_columns_go():
    summary = _summary({("mteb", "raw"): 0.7, ("mteb", "logit"): 0.6}, k=3)
    raw, lg = _spectra({"mteb": (6, 8)})
    rows = {r.claim: r for r in page.claims(summary, spec_raw=raw, spec_logit=lg, datasets=["mteb"], methods=["mi"],
                                            k=3, holdout=0.2, n_folds=2)}
    assert rows["MI R², raw → logit, MTEB"].verdict == "not run"
    assert rows["MI R², raw → logit, MTEB"].why == ("k = 3, 20% holdout and 2 folds here, k = 5, 10% holdout and "
                                                    "10 folds in the paper")
    assert rows["MI R², raw → logit, MMLU"].why == "MMLU was not in this run"
    table = page.table5(summary, datasets=["mteb"], k=3, holdout=0.2, n_folds=2)
    assert list(table.columns) == ["Matrix", "raw, here", "logit, here", "logit − raw"]
    assert table["logit − raw"].round(2).tolist() == [-0.1]


def test_the_direction_text_gives_the_fold_counts_of_a_reversed_matrix():
    raw, lg = _spectra({**page.PAPER_K90, "benchpress": (8, 9)})
    text = page.prose(summary=_summary(_paper(benchpress=0.08), methods=("entropy", "mi", "random")), spec_raw=raw,
                      spec_logit=lg, clipping=pd.DataFrame({"Matrix": ["MTEB", "Merged"],
                                                            "columns with max ≤ 0": [0, 0],
                                                            "entries clipped to the floor": [3, 14]}),
                      negative={"mteb": ["BIOSSES"]}, folds={("benchpress", "raw"): (6, 10),
                                                             ("benchpress", "logit"): (4, 10)},
                      datasets=DATASETS, methods=["entropy", "mi", "random"], k_table=5, n_folds=10, holdout=0.1,
                      seed=42, scheme="paper")
    direction = text["direction_md"]
    assert "On MMLU, MTEB and Merged the logit pipeline moves R² the way the paper's does." in direction
    assert "negative on 6 of 10 folds with raw scores and 4 of 10 in logit space" in direction
    assert "The raw value matches the paper's on the same folds" in direction
    assert ("the largest loss, 0.12 on Merged, is on the matrix with the most negative scores clipped to the "
            "floor (14)") in direction
    assert text["failures_md"].startswith("Not reproduced: MI R², raw → logit, BenchPress; logit transform")
    assert "1 column on MTEB (BIOSSES)" in text["clipping_md"]
    assert "above it in 3 (BenchPress entropy, BenchPress MI, BenchPress random)" in text["curves_md"]
    assert not any("nan" in v for v in text.passages.values())


def test_the_clipping_table_counts_negative_scores_and_refused_columns():
    X = np.array([[0.5, -1.0, 0.0], [1.0, 2.0, 0.0], [np.nan, 1.0, -2.0]])
    table = page.clipping_table({"mteb": SimpleNamespace(scores=X, benchmarks=["a", "b", "c"])})
    assert table.iloc[0].to_dict() == {"Matrix": "MTEB", "columns with negative scores": 2,
                                       "entries clipped to the floor": 1, "entries at the maximum": 2,
                                       "observed entries": 8, "columns with max ≤ 0": 1}
    ok = SimpleNamespace(scores=X[:, :2], benchmarks=["a", "b"])
    assert page.negative_columns({"mteb": ok}) == {"mteb": ["b"]}


def test_negative_folds_count_the_folds_below_zero():
    df = pd.DataFrame({"method": ["mi"] * 3 + ["entropy"], "k": [5, 5, 5, 5], "r2": [-0.1, 0.2, np.nan, -1.0]})
    assert page.negative_folds([("benchpress", "raw")], [df], method="mi", k=5) == {("benchpress", "raw"): (1, 2)}


def test_the_spread_table_gives_logit_minus_raw_per_seed_and_matrix():
    spread = page.spread_table({42: _summary(_paper()), 0: _summary(_paper(mteb=0.80))}, datasets=["mteb", "merged"],
                               k=5)
    assert spread["seed"].tolist() == [42, 0]
    assert spread["MTEB"].round(2).tolist() == [-0.04, 0.04] and spread["Merged"].round(2).tolist() == [-0.12, -0.12]
