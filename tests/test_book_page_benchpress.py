"""Chapter 8's page module: the claims of Appendix I, the captions, the tables and the scope of the run."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book.pages import benchpress as page

HOLDOUTS = (0.1, 0.2, 0.5, 0.9)
#: (method, holdout) -> mean R^2 at every k: chosen so that each claim has a known verdict
LEVELS = {("entropy", 0.1): 0.22, ("random", 0.1): 0.24, ("mi", 0.1): -0.11, ("entropy", 0.2): 0.1,
          ("random", 0.2): 0.12, ("entropy", 0.5): -0.3, ("random", 0.5): 0.1, ("entropy", 0.9): 0.02,
          ("random", 0.9): 0.03}


def _cv(*, k_max: int = 15, n_folds: int = 10, holdouts=HOLDOUTS) -> pd.DataFrame:
    """Per-fold R^2 around the levels; MI is negative in 4 folds at 10% holdout."""
    rows = []
    for (m, h), level in LEVELS.items():
        if h not in holdouts:
            continue
        for f in range(n_folds):
            shift = (-0.5 if f < 4 else 1 / 3) if m == "mi" else (0.05 if f % 2 else -0.05)
            for k in range(1, k_max + 1):
                rows.append({"method": m, "holdout": h, "fold": f, "k": k, "r2": level + shift})
    return pd.DataFrame(rows)


def _summary(cv: pd.DataFrame) -> pd.DataFrame:
    g = cv.groupby(["method", "holdout", "k"])["r2"]
    return pd.DataFrame({"r2_mean": g.mean(), "r2_sd": g.std(), "n_scored": g.size()}).reset_index()


def test_the_claims_compare_the_early_run_with_the_papers_numbers():
    cv = _cv()
    rows = {r.claim: r for r in page.claim_rows({"early": _summary(cv)}, {"early": cv}, holdouts=HOLDOUTS, k_max=15,
                                                n_folds=10)}
    assert len(rows) == 9
    assert rows["Entropy at k = 5, 10% holdout"].verdict == "reproduced"
    assert rows["Entropy at k = 15, 10% holdout"].verdict == "reproduced"  # 0.22 against 0.25
    assert rows["MI at k = 5, 10% holdout"].run == "-0.11"
    neg = rows["MI unstable: negative R² on several folds at k = 5"]
    assert neg.verdict == "reproduced" and neg.run.startswith("4 of 10 folds")
    assert rows["50% holdout: negative R² at k = 15"].verdict == "reproduced"
    assert rows["90% holdout: essentially uninformative at k = 15"].verdict == "reproduced"
    assert rows["Random competitive with entropy at every holdout"].verdict == "reproduced"
    assert rows["Entropy and random comparable at k = 5"].run == "0.22 and 0.24"


def test_claims_the_run_cannot_check_are_not_run_with_the_reason():
    cv = _cv(k_max=5, holdouts=(0.1, 0.2))
    rows = {r.claim: r for r in page.claim_rows({"early": _summary(cv)}, {"early": cv}, holdouts=[0.1, 0.2],
                                                k_max=5, n_folds=10)}
    assert rows["Entropy at k = 15, 10% holdout"].verdict == "not run"
    assert "stops at k = 5" in rows["Entropy at k = 15, 10% holdout"].why
    assert "no 50% holdout" in rows["50% holdout: negative R² at k = 15"].why
    assert rows["Entropy at k = 5, 10% holdout"].verdict == "reproduced"
    released = page.claim_rows({"released": _summary(cv)}, {"released": cv}, holdouts=[0.1], k_max=5, n_folds=10)
    assert {r.verdict for r in released} == {"not run"}
    assert all("early configuration" in r.why for r in released)


def test_an_entropy_value_off_the_paper_is_explained_by_the_first_picks_rounding_range():
    cv = _cv()
    cv.loc[cv["method"] == "entropy", "r2"] -= 0.2
    curves = pd.DataFrame({"noise_q05": 0.02, "noise_q95": 0.26}, index=pd.Index(range(1, 16), name="k"))
    study = SimpleNamespace(draws=np.zeros((5, 15)), curves=curves)
    rows = page.claim_rows({"early": _summary(cv)}, {"early": cv}, holdouts=HOLDOUTS, k_max=15, n_folds=10,
                           first_pick=study)
    assert rows[1].verdict == "not reproduced" and "drawn at random gives 0.02 to 0.26" in rows[1].why


def test_the_fold_table_counts_folds_from_one_and_names_the_methods():
    t = page.fold_table(_cv(k_max=5), holdout=0.1, k=5)
    assert list(t.columns) == ["fold", "entropy", "MI", "random"] and t["fold"].tolist() == list(range(1, 11))
    assert t["MI"].iloc[0] == pytest.approx(-0.61)


def test_the_r2_axis_shows_every_mean_curve_and_zero():
    s = _summary(_cv(k_max=3))
    lo, hi = page.r2_limits(s, methods=("entropy", "random"))
    assert lo < -0.3 and 0.24 < hi < 0.5
    lo, hi = page.r2_limits(s, methods=("mi",), holdout=0.1)
    assert lo < -0.11 and hi > 0
    with pytest.raises(ValueError, match="no R"):
        page.r2_limits(s, methods=("lasso",))


def test_rules_with_the_same_first_pick_in_every_fold_are_named_as_coinciding():
    picks = pd.DataFrame({"auto": ["a", "b"], "argmax": ["c", "c"], "index": ["c", "c"], "n_top": [2, 3]})
    curves = pd.DataFrame({"paper": np.nan, "auto": [0.1, 0.2], "argmax": [0.3, 0.3], "index": [0.3, 0.301]},
                          index=pd.Index([1, 2], name="k"))
    study = SimpleNamespace(picks=picks, curves=curves, sources={"auto": "cv", "argmax": "cv", "index": "cv"})
    (group, gap), = page.coinciding_rules(study)
    assert group == ["argmax", "index"] and gap == pytest.approx(0.001)


def test_the_scope_and_the_left_out_studies_are_said_in_words_without_parameter_names():
    s = _summary(_cv(k_max=5))
    table = page.config_table({"early": s}, holdout=0.1, k=5)
    assert table.set_index("method").loc["mi", "paper"] == -0.11
    rows = page.claim_rows({"early": s}, {"early": _cv(k_max=5)}, holdouts=HOLDOUTS, k_max=5, n_folds=10)
    prose = page.prose(rows=rows, table=table, spread=page.spread_table({}, holdout=0.1, k=5), configs=["early"],
                       holdout=0.1, holdouts=list(HOLDOUTS), k_table=5, k_max=5, n_folds=10, seed=42, scheme="paper",
                       estimator="auto", n_draws=2000)
    assert "the paper's own 10 folds (seed 42)" in prose["scope_md"] and "2,000 draws" in prose["scope_md"]
    assert "leaves out the public code's configuration and repeats" in prose["others_md"]
    text = " ".join(prose.passages.values())
    for name in ("spread_seeds", "configs", "first_pick_draws", "k_table", "$"):
        assert name not in text


def test_the_first_pick_figure_keeps_coinciding_curves_apart_by_style_and_marker_positions():
    from benchsel_lib.book.plotting import plot_first_pick

    ks = pd.Index(range(1, 7), name="k")
    same = [0.1, 0.2, 0.25, 0.3, 0.3, 0.31]
    curves = pd.DataFrame({"paper": np.nan, "auto": np.linspace(0, 0.2, 6), "argmax": same, "index": same,
                           "noise_q05": 0.0, "noise_median": 0.15, "noise_q95": 0.3}, index=ks)
    study = SimpleNamespace(curves=curves, draws=np.random.default_rng(0).uniform(0, 0.3, (50, 6)))
    ax = plot_first_pick(study, k=3).axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    a, i = lines['tie rule "argmax"'], lines['tie rule "index"']
    assert a.get_linestyle() != i.get_linestyle() and a.get_marker() != i.get_marker()
    assert a.get_markevery() != i.get_markevery()


def test_the_r2_axis_of_figures_13_and_14_takes_the_limits_it_is_given():
    from benchsel_lib.book.plotting import plot_cv_curves, plot_entropy_vs_mi

    s = _summary(_cv(k_max=3)).assign(residual_fraction_mean=0.5, logdet_mean=-1.0, mi_mean=1.0)
    fig = plot_cv_curves(s, r2_ylim=(-0.5, 0.4))
    assert all(fig.axes[i * 3].get_ylim() == (-0.5, 0.4) for i in range(len(HOLDOUTS)))
    assert plot_entropy_vs_mi(s, holdout=0.1, r2_ylim=(-0.2, 0.3)).axes[0].get_ylim() == (-0.2, 0.3)
    assert plot_entropy_vs_mi(s, holdout=0.1).axes[0].get_ylim() != (-0.2, 0.3)
