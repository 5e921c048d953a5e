"""The EM chapter's page module: its claims follow the fits they are given, under the book's one verdict rule."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book.pages import em
from benchsel_lib.data import ScoreMatrix

PAIRS = ["a and b", "c and d"]


def _conv(**rows) -> pd.DataFrame:
    base = {"M": 100, "N": 50, "observed": 0.7, "eps_psd": 1e-6, "tol": 1e-6, "max_iter": 500, "iterations": 300,
            "converged": True, "squarem": 70, "squarem_converged": True, "max_diff": 1e-4, "loglik_decreases": 0}
    return pd.DataFrame([{"matrix": name, **base, **r} for name, r in rows.items()]).set_index("matrix")


def _ablation(changes: dict | None = None) -> pd.DataFrame:
    rows = {}
    for name, eps, on in em.ABLATION:
        rows[name] = {"eps_psd": eps, "shrinkage": 0.46 if on else 0.0, "n_iter": 50, "converged": True,
                      "min_eigenvalue": 0.45 if on else (eps or 1e-11), "condition_number": 48.0 if on else 4e4,
                      "k90": 40 if on else 4, "k95": 45 if on else 6, "a and b": 0.55 if on else 0.99,
                      "c and d": 0.5 if on else 0.9}
    for (name, col), v in (changes or {}).items():
        rows[name][col] = v
    return pd.DataFrame.from_dict(rows, orient="index")


def _claims(conv=None, ablation=None, quick=False):
    conv = _conv(mmlu={"observed": 1.0, "iterations": 2}, mteb={}, merged={"iterations": 274, "tol": 5e-4}) \
        if conv is None else conv
    rows = em.claims(convergence=conv, ablation=_ablation() if ablation is None else ablation, pair_names=PAIRS,
                     config="released", quick=quick)
    return {c.claim: c for c in rows}


def test_iteration_counts_near_the_paper_reproduce_and_far_ones_do_not():
    assert _claims()["MTEB: plain EM iterations"].verdict == "reproduced"
    conv = _conv(mteb={"iterations": 345}, merged={"iterations": 600})
    rows = _claims(conv)
    assert rows["MTEB: plain EM iterations"].verdict == "partly"
    assert rows["Merged: plain EM iterations"].verdict == "not reproduced"


def test_mmlu_within_three_iterations_reproduces():
    assert _claims()["MMLU: plain EM iterations"].verdict == "reproduced"
    assert _claims(_conv(mmlu={"iterations": 9}))["MMLU: plain EM iterations"].verdict == "not reproduced"


def test_a_matrix_left_out_or_capped_is_not_run():
    rows = _claims(_conv(mteb={"converged": False, "iterations": 25, "max_iter": 25}), quick=True)
    assert rows["Merged: plain EM iterations"].verdict == "not run"
    assert rows["MTEB: plain EM iterations"].verdict == "not run" and "quick mode" in rows["MTEB: plain EM iterations"].why


def test_the_floor_claim_fails_when_the_floor_does_not_hold():
    assert _claims()["A floor of 10⁻³ stops eigenvalue collapse"].verdict == "reproduced"
    broken = _ablation({("floor 10⁻³, no shrinkage", "min_eigenvalue"): 1e-5})
    assert _claims(ablation=broken)["A floor of 10⁻³ stops eigenvalue collapse"].verdict == "not reproduced"


def test_shrinkage_conditioning_is_graded_by_the_condition_number():
    ill = _ablation({("floor 10⁻³, shrinkage", "condition_number"): 1.1e3})
    assert _claims()["Shrinkage makes the covariance well-conditioned"].verdict == "reproduced"
    assert _claims(ablation=ill)["Shrinkage makes the covariance well-conditioned"].verdict == "partly"


def test_dampening_counts_the_pairs_that_shrinkage_lowers():
    raised = _ablation({("floor 10⁻³, shrinkage", "c and d"): 0.95, ("floor 10⁻³, shrinkage", "a and b"): 0.995})
    assert _claims()["Shrinkage dampens correlations"].verdict == "reproduced"
    assert _claims(ablation=raised)["Shrinkage dampens correlations"].verdict == "not reproduced"


def test_claims_never_show_a_missing_value_and_iteration_rows_carry_keys():
    for c in _claims().values():
        assert "nan" not in f"{c.paper} {c.run} {c.why}".lower()
    assert _claims()["MTEB: plain EM iterations"].key.startswith("em-iterations[")


def test_sci_writes_numbers_as_a_reader_does():
    assert em.sci(5e-4) == "5\u00a0×\u00a010⁻⁴" and em.sci(1e-6) == "10⁻⁶" and em.sci(47.4) == "47.4"
    assert em.sci(1e3) == "1,000" and em.sci(float("inf")) == "unbounded"
    with pytest.raises(ValueError):
        em.sci(float("nan"))


def test_tables_mark_capped_runs_and_show_no_missing_value():
    conv = _conv(mteb={"converged": False, "iterations": 500})
    table = em.convergence_table(conv)
    assert table.loc[0, "Plain EM"] == "500 (cap)" and not table.isna().any().any()
    abl = em.ablation_table(_ablation(), PAIRS, [0.98, 0.9])
    assert len(abl) == len(em.ABLATION) + 1 and abl.iloc[-1]["Fit"] == "all models (reference)"


def test_the_configs_table_shows_both_configurations_where_they_differ():
    scores = np.where(np.random.default_rng(0).random((40, 10)) < 0.3, 1.0, np.nan)
    scores[:, 0] = 1.0
    m = ScoreMatrix(scores=scores, models=[f"m{i}" for i in range(40)], benchmarks=[f"b{j}" for j in range(10)],
                    source="synthetic")
    table = em.configs_table({"merged": m}, holdouts=(0.0,))
    assert "/" in table.loc[0, "Floor"]


def test_the_recovery_table_has_a_row_per_missing_fraction():
    rec = pd.DataFrame([{"missing_fraction": f, "estimator": e, "corr_error": 0.1, "mean_error": 0.05, "n_iter": 10}
                        for f in (0.0, 0.3) for e in ("em", "pairwise")])
    assert list(em.recovery_table(rec)["Missing"]) == [0.0, 0.3]
