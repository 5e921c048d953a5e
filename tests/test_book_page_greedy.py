"""benchsel_lib.book.pages.greedy: the claims and tables of chapter 4 (Section 5.3, Figures 2-4)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from benchsel_lib.book.pages import greedy


def _summary(levels=None, holdouts=(0.1, 0.5, 0.9), ks=range(1, 16), random_shift=-0.01, resid_shift=0.05):
    """A CV summary: entropy's R² as ``levels[(holdout, k)]`` (else a rising curve), random ``random_shift`` off."""
    rows = []
    for h in holdouts:
        for meth in ("entropy", "random"):
            for k in ks:
                r2 = (levels or {}).get((h, k), 0.5 + 0.02 * k)
                rnd = meth == "random"
                rows.append({"pipeline": meth, "holdout": h, "k": k, "r2_mean": r2 + (random_shift if rnd else 0.0),
                             "r2_sd": 0.05, "residual_fraction_mean": 0.8 / k + (resid_shift if rnd else 0.0),
                             "logdet_mean": -0.5 * (k - 1) * (2 if rnd else 1)})
    return pd.DataFrame(rows)


def _band(holdout=0.1, ks=range(1, 16)):
    return pd.DataFrame([{"variant": v, "holdout": holdout, "k": k, "r2_mean": 0.5 + 0.02 * k - d}
                         for v, d in (("auto", 0.0), ("argmax", 0.1)) for k in ks])


def _claims(summary, **kw):
    opts = dict(k_max=15, n_models={"mmlu": 234}, folds=10, seed=42, scheme="paper", holdouts=[0.1, 0.5, 0.9])
    return greedy.claims(summary, **{**opts, **kw})


def _row(rows, start):
    return next(r for r in rows if r.claim.startswith(start))


def test_an_r2_level_is_reproduced_partly_or_not_under_the_books_one_rule():
    for value, expected in ((0.74, "reproduced"), (0.78, "partly"), (0.90, "not reproduced")):
        row = _row(_claims({"mteb": _summary({(0.1, 5): value})}), "MTEB, k = 5")
        assert row.verdict == expected


def test_an_mmlu_level_off_the_paper_names_the_smaller_matrix_and_shares_its_key():
    row = _row(_claims({"mmlu": _summary({(0.1, 5): 0.94})}), "MMLU, k = 5: entropy")
    assert row.verdict == "partly" and "234 of the paper's 5,452" in row.why
    assert row.key == greedy.r2_key("mmlu", "entropy", k=5, holdout=0.1, folds=10, seed=42, scheme="paper")


def test_rows_of_a_matrix_size_or_holdout_the_run_lacks_are_not_run_and_never_show_a_missing_value():
    rows = _claims({"mmlu": _summary(ks=range(1, 6), holdouts=(0.1,))}, k_max=5, holdouts=[0.1])
    assert _row(rows, "MTEB, k = 5").verdict == "not run"
    assert _row(rows, "MMLU, k = 15").why == "this run stops at k = 5"
    assert _row(rows, "MMLU, k = 10: entropy R², 90%").verdict == "not run"
    assert _row(rows, "Entropy: less residual").verdict == "not run"
    assert all("nan" not in (r.run + r.why).lower() for r in rows)


def test_the_structure_claim_is_checked_at_every_holdout_and_fails_where_random_leaves_less_residual_variance():
    good = _summary()
    bad = _summary(resid_shift=-0.01)
    summary = {"mteb": good, "merged": pd.concat([good[good["holdout"] != 0.5], bad[bad["holdout"] == 0.5]])}
    rows = [r for r in _claims(summary) if r.claim.startswith("Entropy: less residual")]
    assert [r.verdict for r in rows] == ["reproduced", "not reproduced", "reproduced"]
    assert "Merged 14" in rows[1].why


def test_random_ahead_in_r2_is_reported_as_random_ahead_not_as_entropy_ahead():
    row = _row(_claims({"merged": _summary(random_shift=0.05)}), "Random stays close")
    assert row.verdict == "partly" and "random ahead by 0.05" in row.why and "-0.05" in row.run


def test_r2_table_gives_entropy_the_tie_rule_range_random_and_the_papers_number():
    t = greedy.r2_table({"merged": _summary()}, {"merged": _band()}, holdout=0.1, ks=[1, 15])
    assert list(t.columns) == ["matrix", "k", "entropy", "tie rules", "random", "paper"]
    assert t.loc[1, "paper"] == 0.55 and np.isnan(t.loc[0, "paper"]) and t.loc[1, "tie rules"] == "0.70 to 0.80"


def test_holdout_table_has_one_column_per_holdout():
    t = greedy.holdout_table({"mmlu": _summary()}, ks=[5, 10])
    assert list(t.columns) == ["matrix", "k", "10% held out", "50% held out", "90% held out"] and len(t) == 2


def test_structure_wins_and_r2_gaps_measure_entropy_against_random():
    assert greedy.structure_wins(_summary(), 0.1) == (14, 14)
    assert abs(greedy.r2_gaps({"mteb": _summary()}, 0.1)["mteb"] - 0.01) < 1e-9
