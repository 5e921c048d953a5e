"""The EM chapter's page module (benchsel_lib.book.pages.em) and the figures only that chapter draws."""
from __future__ import annotations

import io
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book import plotting
from benchsel_lib.book.pages import em


def _conv(**rows) -> pd.DataFrame:
    """Convergence rows (matrix -> overrides of a converged plain run), as the page builds them."""
    base = {"M": 100, "N": 50, "observed": 0.7, "eps_psd": 1e-6, "tol": 1e-6, "max_iter": 500, "iterations": 300,
            "converged": True, "first_change": 0.1, "squarem": 70, "squarem_converged": True, "max_diff": 1e-4,
            "loglik_rising_at_end": True, "loglik_decreases": 0}
    return pd.DataFrame([{"matrix": name, **base, **r} for name, r in rows.items()]).set_index("matrix")


def _ablation(**overrides) -> dict:
    a = {"alpha": 0.46, "k90_shrink": 44, "k90_noshrink": 4, "mineig_none": 7e-12, "mineig_1e3": 1e-3,
         "mineig_shrink": 0.49, "mineig_shrink_min": 0.46, "cond_none": 4e12, "cond_1e3": 4e4, "cond_shrink": 48.0,
         "corr_ref": 0.98, "corr_shrink": 0.55, "corr_noshrink": 0.996}
    return {**a, **overrides}


def _verdicts(rows) -> dict:
    return {c.claim: c.verdict for c in rows}


def test_scientific_numbers_read_as_written_and_stay_on_one_line():
    assert em.sci(5e-4) == "5\u00a0×\u00a010⁻⁴"
    assert em.sci(1e-6) == "10⁻⁶"
    assert em.sci(7.34e-12) == "7.3\u00a0×\u00a010⁻¹²"
    assert em.sci(math.inf) == "unbounded"
    assert em.value(0.4581) == "0.458" and em.value(47.35) == "47.4" and em.value(4.4e12).endswith("10¹²")
    with pytest.raises(ValueError):
        em.sci(float("nan"))


def test_a_singular_unfloored_covariance_is_called_unbounded_instead_of_quoting_inf():
    assert "4.4\u00a0×\u00a010¹²" in em._unfloored_sentence(4.4e12)
    singular = em._unfloored_sentence(math.inf)
    assert "singular" in singular and "unbounded" in singular and "inf" not in singular.replace("unbounded", "")


def test_iteration_counts_are_judged_against_the_paper_and_a_run_cap_is_not_run():
    rows = em.claims(convergence=_conv(mmlu={"iterations": 2, "squarem": 2}, mteb={"iterations": 305},
                                       merged={"iterations": 290, "tol": 5e-4}),
                     ablation=_ablation(), max_iter=None, quick=False)
    v = _verdicts(rows)
    assert v["MMLU (fully observed): EM iterations"] == "reproduced"
    assert v["MTEB (23% missing): EM iterations"] == "reproduced"
    assert v["Merged (69% missing): EM iterations"] == "not reproduced"  # 16 off the paper's 274
    capped = em.claims(convergence=_conv(mteb={"iterations": 25, "converged": False}), ablation=_ablation(),
                       max_iter=25, quick=True)
    v = _verdicts(capped)
    assert v["MTEB (23% missing): EM iterations"] == "not run"
    assert v["MMLU (fully observed): EM iterations"] == "not run"  # not in this run
    mteb = next(c for c in capped if c.claim.startswith("MTEB"))
    assert "25 iterations" in mteb.why and mteb.run == "—"


def test_a_configuration_cap_that_stops_em_before_its_tolerance_is_not_reproduced():
    rows = em.claims(convergence=_conv(merged={"iterations": 1000, "converged": False, "tol": 5e-4}),
                     ablation=_ablation(), max_iter=None, quick=False)
    merged = next(c for c in rows if c.claim.startswith("Merged"))
    assert merged.verdict == "not reproduced" and merged.run == "1000 (cap)"


def test_the_floor_and_shrinkage_claims_follow_the_ablation():
    v = _verdicts(em.claims(convergence=_conv(mteb={}), ablation=_ablation(), max_iter=None, quick=False))
    assert v["A floor of 10⁻³ stops eigenvalue collapse"] == "reproduced"
    assert v["Shrinkage bounds the eigenvalues (M < N)"] == "reproduced"
    assert v["Shrinkage dampens correlations"] == "reproduced"
    no_collapse = _ablation(mineig_none=0.05, corr_shrink=0.97, cond_shrink=5e3)
    v = _verdicts(em.claims(convergence=_conv(mteb={}), ablation=no_collapse, max_iter=None, quick=False))
    assert v["A floor of 10⁻³ stops eigenvalue collapse"] == "partly"
    assert v["Shrinkage bounds the eigenvalues (M < N)"] == "not reproduced"
    assert v["Shrinkage dampens correlations"] == "not reproduced"


def test_the_claims_note_names_what_was_not_run_and_why():
    conv = _conv(mteb={"iterations": 25, "converged": False, "squarem": 25, "squarem_converged": False})
    rows = em.claims(convergence=conv, ablation=_ablation(), max_iter=25, quick=True)
    note = em._claims_note(rows, conv, max_iter=25, quick=True)
    assert "iteration counts on MTEB were not run: quick mode caps EM at 25 iterations" in note
    assert "MMLU and Merged were not in this run" in note
    assert "this run stops at" not in note  # no converged run to quote a tolerance for


def test_squarem_is_reported_beside_plain_em_only_where_both_converged():
    conv = _conv(mteb={"iterations": 305, "squarem": 67, "max_diff": 9e-4},
                 merged={"iterations": 274, "squarem": 86, "max_diff": 0.031, "tol": 5e-4},
                 benchpress={"iterations": 1000, "converged": False})
    text = " ".join(em._squarem_sentences(conv))
    assert "On MTEB SQUAREM reaches the point where plain EM stops after 305 iterations in 67 EM updates" in text
    assert "On Merged SQUAREM stops after 86 updates" in text and "depends on the path" in text
    assert "On BenchPress plain EM or SQUAREM stops at the iteration cap" in text


def test_a_fully_observed_matrix_is_explained_once_not_also_as_a_squarem_comparison():
    conv = _conv(mmlu={"M": 234, "observed": 1.0, "iterations": 2, "squarem": 2, "first_change": 1 / 234})
    assert "1/234" in em._mmlu_sentence(conv)
    assert em._squarem_sentences(conv) == []


def test_the_configuration_table_shows_a_pair_only_where_the_configurations_differ():
    merged = SimpleNamespace(shape=(118, 114), observed_fraction=0.311)
    mteb = SimpleNamespace(shape=(263, 56), observed_fraction=0.773)
    t = em.configs_table({"merged": merged, "mteb": mteb})
    row = t[(t["Matrix"] == "Merged") & (t["Holdout"] == "0%")].iloc[0]
    assert row["Floor"] == "10⁻³\u00a0/\u00a010⁻⁶"  # released heavy regime, early light
    assert (t.loc[t["Matrix"] == "MTEB", "Floor"].str.contains("/") == False).all()  # noqa: E712
    text = em._configs_passage(t)
    assert "floors of the two configurations differ in 1 of the 8 rows (Merged at holdout 0%)" in text
    assert "MMLU is not listed" in text


def test_the_ablation_table_shows_every_fit_and_the_reference_without_an_index():
    ablation = pd.DataFrame([{"n_iter": 57, "converged": True, "min_eigenvalue": 7e-12, "condition_number": 4e12,
                              "k90": 4, "p": 0.99}], index=["no floor, no shrinkage"])
    t = em.ablation_table(ablation, ["p"], [0.98], n_models=263)
    assert list(t["Fit"]) == ["no floor, no shrinkage", "all 263 models (reference)"]
    assert t.loc[0, "Components for 90%"] == "4" and t.loc[0, "Smallest eigenvalue"].endswith("10⁻¹²")
    assert t.loc[1, "Pair 1"] == 0.98


def test_spectra_that_differ_by_more_than_a_twentieth_of_a_decade_do_not_coincide():
    a = np.array([10.0, 1.0, 0.5])
    assert em.spectra_coincide([a, a * 1.05])
    assert not em.spectra_coincide([a, a * 1.5])


def test_the_recovery_passages_compare_em_with_the_pairwise_estimate_at_each_missing_fraction():
    rows = [{"missing_fraction": f, "estimator": e, "observed_fraction": 1 - f, "corr_error": c, "mean_error": c / 2,
             "n_iter": 10} for f, c_em, c_pw in ((0.0, 0.1, 0.1), (0.3, 0.12, 0.2), (0.6, 0.15, 0.3))
            for e, c in (("em", c_em), ("pairwise", c_pw))]
    summary = em.recovery_summary(pd.DataFrame(rows))
    p = em._recovery_passages(summary, n_models=100, n_benchmarks=20, rank=3, reps=1, max_iter=50)
    assert "(one draw)" in p["recovery_caption"]
    assert "smaller one at every fraction with entries missing" in p["recovery_md"]
    shown = em.recovery_table(summary)
    assert list(shown["Missing"]) == ["0%", "30%", "60%"] and not shown.isna().any().any()


def _fit(rel, ll):
    return SimpleNamespace(rel_change=np.asarray(rel, dtype=float), loglik=np.asarray(ll, dtype=float))


def test_the_em_convergence_legend_names_each_fit_once_and_the_tolerances_once():
    fits = {"MTEB": _fit([1e-1, 1e-3, 1e-6], [-3, -2, -1.5]), "Merged": _fit([1e-1, 1e-3, 4e-4], [-5, -4, -3.9])}
    fig = plotting.plot_em_convergence(fits, tol={"MTEB": 1e-6, "Merged": 5e-4})
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["MTEB", "Merged", "tolerance (dashed, in the fit's colour)"]
    dashed = sorted(line.get_ydata()[0] for line in fig.axes[0].get_lines() if line.get_linestyle() == "--")
    assert dashed == [1e-6, 5e-4]


def test_eigenvalue_lines_take_the_styles_given_and_refuse_unknown_names():
    fig = plotting.plot_eigenvalues({"a": [3.0, 1.0], "b": [2.0, 0.5]}, styles={"b": {"linestyle": "--",
                                                                                      "color": "C2"}})
    a, b = fig.axes[0].get_lines()
    assert a.get_linestyle() == "-" and b.get_linestyle() == "--" and b.get_color() == "C2"
    with pytest.raises(ValueError, match="not in spectra"):
        plotting.plot_eigenvalues({"a": [1.0]}, styles={"c": {}})


def test_a_log_axis_spanning_less_than_a_decade_labels_its_minor_ticks():
    t = pd.DataFrame({"k": [1, 2, 3], "eigen_tail_fraction": [0.5, 0.4, 0.3],
                      "cholesky_residual_fraction": [0.55, 0.45, 0.35]})
    fig = plotting.plot_spectral_comparison({"Merged": t})
    fig.savefig(io.BytesIO(), format="png")
    ax = fig.axes[0]
    labels = [lab.get_text() for lab in ax.get_yticklabels(minor=True) + ax.get_yticklabels()
              if lab.get_text() and ax.get_ylim()[0] <= lab.get_position()[1] <= ax.get_ylim()[1]]
    assert len(labels) >= 2, labels
