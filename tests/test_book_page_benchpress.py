"""benchsel_lib.book.pages.benchpress: chapter 8's claims and tables, from hand-made cross-validation results."""
from __future__ import annotations

import pandas as pd
import pytest

from benchsel_lib.book.pages import benchpress as page

HOLDOUTS = [0.1, 0.2, 0.5, 0.9]


def _cv(values: dict, *, folds: int = 10, k_max: int = 15) -> pd.DataFrame:
    """``cross_validate``-like rows: ``values[(method, holdout)]`` is the R² of every fold at every k (or a list)."""
    rows = []
    for (m, h), v in values.items():
        per_fold = v if isinstance(v, list) else [v] * folds
        rows += [{"pipeline": m, "holdout": h, "fold": f, "k": k, "r2": r}
                 for f, r in enumerate(per_fold) for k in range(1, k_max + 1)]
    return pd.DataFrame(rows)


def _summary(cv: pd.DataFrame) -> pd.DataFrame:
    g = cv.groupby(["pipeline", "holdout", "k"])["r2"]
    return pd.DataFrame({"r2_mean": g.mean(), "r2_sd": g.std(), "n_scored": g.count()}).reset_index()


def _paper_like(changes: dict | None = None) -> pd.DataFrame:
    vals = {("entropy", h): 0.21 for h in HOLDOUTS} | {("random", h): 0.24 for h in HOLDOUTS} | {
        ("mi", h): [-0.11 + d for d in (-0.6, -0.5, -0.4, 0.25, 0.25, 0.25, 0.2, 0.2, 0.2, 0.15)] for h in HOLDOUTS}
    vals[("entropy", 0.5)], vals[("entropy", 0.9)], vals[("random", 0.9)] = -0.3, 0.0, 0.0
    return _cv(vals | (changes or {}))


def _claims(cv, **kw):
    opts = dict(holdouts=HOLDOUTS, k_max=15, n_folds=10, seed=42, scheme="paper") | kw
    return {r.claim: r for r in page.claims(_summary(cv) if cv is not None else None, cv, **opts)}


def test_a_run_at_the_papers_numbers_reproduces_the_levels_and_the_instability():
    rows = _claims(_paper_like({("entropy", 0.1): 0.25}))
    assert rows["Random at k = 5, 10% holdout"].verdict == "reproduced"
    assert rows["MI at k = 5, 10% holdout"].verdict == "reproduced"
    assert rows["Entropy at k = 15, 10% holdout"].verdict == "reproduced"
    assert rows["MI unstable: negative R² on several folds, k = 5"].verdict == "reproduced"
    assert rows["50% holdout: negative R² at k = 15"].verdict == "reproduced"


def test_entropy_off_by_a_little_is_partly_and_by_much_is_not_reproduced():
    assert _claims(_paper_like({("entropy", 0.1): 0.15}))["Entropy at k = 5, 10% holdout"].verdict == "partly"
    row = _claims(_paper_like({("entropy", 0.1): 0.05}))["Entropy at k = 5, 10% holdout"]
    assert row.verdict == "not reproduced" and "tie" in row.why


def test_random_ahead_of_entropy_does_not_reproduce_comparable():
    row = _claims(_paper_like({("entropy", 0.1): 0.10}))["Entropy and random comparable at k = 5"]
    assert row.verdict == "not reproduced" and "-0.14" in row.run and "random ahead" in row.why


def test_random_competitive_is_checked_at_every_holdout_and_fails_when_entropy_leads_at_one():
    ok = _claims(_paper_like())["Random competitive with entropy at every holdout"]
    assert ok.verdict == "reproduced" and all(h in ok.run for h in ("10%", "20%", "50%", "90%"))
    lead = _claims(_paper_like({("entropy", 0.2): 0.5}))["Random competitive with entropy at every holdout"]
    assert lead.verdict == "not reproduced"


def test_the_50_percent_collapse_names_randoms_score_on_the_same_splits():
    row = _claims(_paper_like())["50% holdout: negative R² at k = 15"]
    assert row.run == "entropy -0.30" and row.why == "random 0.24 on the same splits"
    assert _claims(_paper_like({("entropy", 0.5): 0.2}))["50% holdout: negative R² at k = 15"].verdict \
        == "not reproduced"


def test_rows_the_run_cannot_check_are_not_run_with_the_reason_and_no_missing_value():
    rows = _claims(_paper_like(), holdouts=[0.2], k_max=4)
    assert rows["Entropy at k = 15, 10% holdout"].verdict == "not run"
    assert "10% holdout" in rows["Entropy at k = 5, 10% holdout"].why
    assert rows["90% holdout: essentially uninformative at k = 15"].verdict == "not run"
    none = _claims(None)
    assert all(r.verdict == "not run" and "early" in r.why for r in none.values())


def test_the_levels_share_their_keys_with_chapter_9():
    from benchsel_lib.book.pages import imputers

    row = _claims(_paper_like())["Entropy at k = 5, 10% holdout"]
    run = dict(k=5, holdout=0.1, folds=10, seed=42, scheme="paper")
    assert row.key == imputers.key("benchpress", "entropy", config="early", **run)
    assert row.key != _claims(_paper_like(), n_folds=3)["Entropy at k = 5, 10% holdout"].key


def test_the_fold_table_counts_folds_from_one_and_names_the_methods():
    t = page.fold_table(_paper_like(), holdout=0.1, k=5)
    assert list(t.columns) == ["fold", "entropy", "MI", "random"] and t["fold"].tolist() == list(range(1, 11))


def test_negative_folds_and_leads_count_per_method_and_holdout():
    cv = _paper_like()
    assert page.negative_folds(cv, holdout=0.1, k=5) == {"entropy": 0, "mi": 3, "random": 0}
    lead = page.leads(_summary(cv))
    assert lead.loc[0.1] == pytest.approx(-0.03) and lead.loc[0.5] == pytest.approx(-0.54)


def test_the_first_pick_reference_applies_only_on_the_papers_folds_and_em():
    assert page.first_pick_reference(k_max=15, holdout=0.1, seed=42, scheme="paper", estimator="auto",
                                     n_folds=10) == {5: 0.21, 15: 0.25}
    assert page.first_pick_reference(k_max=15, holdout=0.1, seed=1, scheme="paper", estimator="auto",
                                     n_folds=10) is None
    assert page.first_pick_reference(k_max=4, holdout=0.1, seed=42, scheme="paper", estimator="auto",
                                     n_folds=10) == {}


def test_figure_13_draws_one_panel_per_holdout_with_its_own_r2_axis():
    from benchsel_lib.book.plotting import plot_r2_by_holdout

    cv = _paper_like()
    fig = plot_r2_by_holdout(_summary(cv), folds=cv)
    assert len(fig.axes) == 4 and fig.axes[0].get_ylim() != fig.axes[2].get_ylim()
