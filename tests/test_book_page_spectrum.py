"""The eigenspectrum chapter's page module (benchsel_lib.book.pages.spectrum)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
from _synthetic import random_spd

from benchsel_lib.book.claims import claims_table
from benchsel_lib.book.pages import spectrum
from benchsel_lib.method.covariance import cov_to_corr
from benchsel_lib.studies.diagnostics import eigenspectrum, spectral_comparison


def _corr(n: int = 8, seed: int = 0) -> np.ndarray:
    return cov_to_corr(random_spd(n, seed))


def _spec(k90: int, k95: int | None = None) -> SimpleNamespace:
    counts = {0.90: k90, 0.95: k95 if k95 is not None else k90 + 2}
    return SimpleNamespace(n_components=lambda level: counts.get(level, k90 + 5), cumulative=np.array([0.5]))


def _claims(names=("mmlu", "mteb", "merged"), k90=None, k95=12, table=None):
    k90 = {"mmlu": 1, "mteb": 6, "merged": 8, **(k90 or {})}
    corr = _corr()
    table = spectral_comparison(corr) if table is None else table
    return spectrum.claims(spectra={n: _spec(k90[n], k95 if n == "merged" else None) for n in names},
                           tables={n: table for n in names},
                           gaps={n: spectrum.identity_gap(corr, table, [1, 2, 5]) for n in names},
                           models={n: 234 if n == "mmlu" else 100 for n in names}, config="released", max_iter=None)


def _verdicts(rows) -> dict:
    return {c.claim: c.verdict for c in rows}


def test_the_residual_variance_after_the_greedy_picks_is_the_pivoted_cholesky_trace():
    corr = _corr(10, seed=3)
    table = spectral_comparison(corr)
    assert spectrum.identity_gap(corr, table, [1, 3, 7]) < 1e-12
    broken = table.assign(cholesky_residual=table["cholesky_residual"] + 0.5)
    assert spectrum.identity_gap(corr, broken, [1, 3, 7]) > 0.01


def test_greedy_k_is_the_first_pick_that_leaves_at_most_ten_percent():
    t = pd.DataFrame({"k": [1, 2, 3, 4], "cholesky_residual_fraction": [0.5, 0.2, 0.1, 0.05]})
    assert spectrum.greedy_k(t) == 3
    assert spectrum.greedy_k(t, level=0.99) is None


def test_same_counts_reproduce_one_off_is_partly_and_further_off_is_not_reproduced():
    v = _verdicts(_claims())
    assert v["MMLU: components for 90%"] == "partly"
    assert v["MTEB: components for 90%"] == v["Merged: components for 95%"] == "reproduced"
    assert v["Greedy residual = pivoted-Cholesky trace"] == "reproduced"
    assert v["Eigenvalue tail ≤ greedy residual at every k"] == "reproduced"
    v = _verdicts(_claims(k90={"mmlu": 2, "mteb": 9}, k95=15))
    assert v["MMLU: components for 90%"] == "reproduced"
    assert v["MTEB: components for 90%"] == v["Merged: components for 95%"] == "not reproduced"


def test_the_mmlu_reason_names_the_matrix_size_and_counts_carry_their_em_settings_in_the_key():
    rows = _claims()
    mmlu = next(c for c in rows if c.claim.startswith("MMLU"))
    assert mmlu.why == "234 of the paper's 5,452 models" and mmlu.key == "mmlu-components[level=0.9]"
    mteb = next(c for c in rows if c.claim.startswith("MTEB"))
    assert mteb.key == "mteb-components[config=released, level=0.9]"


def test_a_matrix_left_out_is_not_run_with_the_reason():
    v = {c.claim: c for c in _claims(names=("mteb",))}
    assert v["MMLU: components for 90%"].verdict == "not run"
    assert v["Merged: components for 95%"].why == "Merged was not in this run"


def test_a_greedy_residual_below_the_tail_or_falling_slowly_is_not_reproduced():
    table = spectral_comparison(_corr())
    bad = table.assign(cholesky_residual=table["eigen_tail"] * 0.5,
                       cholesky_residual_fraction=np.linspace(0.9, 0.5, len(table)))
    v = _verdicts(_claims(table=bad))
    assert v["Eigenvalue tail ≤ greedy residual at every k"] == "not reproduced"
    assert v["Greedy residual falls quickly (10% left)"] == "not reproduced"
    assert v["Greedy residual = pivoted-Cholesky trace"] == "not reproduced"


def test_claims_never_show_a_missing_value():
    for rows in (_claims(), _claims(names=("merged",))):
        md = claims_table(rows).markdown()
        assert "nan" not in md.lower() and "None" not in md


def test_the_components_table_gives_the_paper_count_beside_the_run_and_the_estimate():
    spectra = {"mmlu": eigenspectrum(_corr()), "benchpress": eigenspectrum(_corr(seed=1))}
    t = spectrum.components_table(spectra, [0.9, 0.95], {"mmlu": "pairwise (complete)", "benchpress": "EM (early)"})
    assert list(t.columns) == ["Matrix", "90%", "95%", "First component", "Estimate"]
    assert t["90%"].iloc[0].endswith("(paper: 2)") and "paper" not in t["90%"].iloc[1]
    assert not t.isna().any().any()


def test_em_text_says_how_the_correlation_was_estimated():
    assert spectrum.em_text(SimpleNamespace(em=None), "released") == "pairwise (complete)"
    capped = SimpleNamespace(em=SimpleNamespace(n_iter=1000, converged=False))
    assert spectrum.em_text(capped, "released") == "EM (released), 1000 iterations, stopped at cap"


def test_the_lemma_table_has_one_row_per_matrix_and_size_and_the_ratio_range_spans_them():
    table = spectral_comparison(_corr(), names=[f"b{i}" for i in range(8)])
    t = spectrum.lemma_table({"mteb": table, "merged": table}, [1, 5, 50])
    assert list(t.columns) == ["Matrix", "k", "Greedy residual", "Eigenvalue tail", "Ratio", "k-th pick"]
    assert list(zip(t["Matrix"], t["k"])) == [("MTEB", 1), ("MTEB", 5), ("Merged", 1), ("Merged", 5)]
    lo, hi = spectrum.ratio_range({"mteb": table}, 5)
    assert 1 <= lo <= hi
