"""The eigenspectrum chapter's page module (benchsel_lib.book.pages.spectrum)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
from _synthetic import as_matrix, low_rank_scores, random_spd

import benchsel_lib as bs
from benchsel_lib.book.pages import spectrum
from benchsel_lib.method.covariance import cov_to_corr
from benchsel_lib.studies.diagnostics import spectral_comparison


def _corr(n: int = 8, seed: int = 0) -> np.ndarray:
    return cov_to_corr(random_spd(n, seed))


def _spec(k90: int, k95: int | None = None, first: float = 0.5) -> SimpleNamespace:
    counts = {0.90: k90, 0.95: k95 if k95 is not None else k90 + 2}
    return SimpleNamespace(n_components=lambda level: counts.get(level, k90 + 5), cumulative=np.array([first]),
                           eigenvalues=np.array([3.0]))


def _em(converged: bool = True, n_iter: int = 50) -> SimpleNamespace:
    return SimpleNamespace(converged=converged, n_iter=n_iter, eps_psd=1e-6, rel_change=np.array([1e-2, 1e-7]))


def _setup(names=("mmlu", "mteb", "merged"), k90=None, k95=12, capped=()):
    k90 = k90 or {"mmlu": 1, "mteb": 6, "merged": 8}
    corr = _corr()
    table = spectral_comparison(corr)
    matrices = {n: SimpleNamespace(shape=(234 if n == "mmlu" else 100, 8), observed_fraction=1.0) for n in names}
    estimates = {n: SimpleNamespace(corr=corr, em=None if n == "mmlu" else _em(converged=n not in capped))
                 for n in names}
    spectra = {n: _spec(k90[n], k95 if n == "merged" else None) for n in names}
    tables = {n: table for n in names}
    gaps = {n: spectrum.identity_gap(corr, table, [1, 2, 5]) for n in names}
    return matrices, estimates, spectra, tables, gaps


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


def test_component_counts_are_judged_exactly_and_one_off_is_partly():
    rows = spectrum.claims(**dict(zip(("matrices", "estimates", "spectra", "tables", "gaps"), _setup())),
                           k_show=[1, 2, 5], max_iter=None)
    v = _verdicts(rows)
    assert v["MMLU: components for 90%"] == "partly"
    assert v["MTEB: components for 90%"] == "reproduced"
    assert v["Merged: components for 95%"] == "reproduced"
    mmlu = next(c for c in rows if c.claim.startswith("MMLU"))
    assert mmlu.why == "234 models here, not 5,452"
    assert v["Greedy residual = pivoted-Cholesky trace"] == "reproduced"
    assert v["Eigenvalue tail ≤ greedy residual"] == "reproduced"
    far = _setup(k90={"mmlu": 2, "mteb": 9, "merged": 8}, k95=15)
    v = _verdicts(spectrum.claims(**dict(zip(("matrices", "estimates", "spectra", "tables", "gaps"), far)),
                                  k_show=[1, 2], max_iter=None))
    assert v["MMLU: components for 90%"] == "reproduced"
    assert v["MTEB: components for 90%"] == "not reproduced"
    assert v["Merged: components for 95%"] == "not reproduced"


def test_a_matrix_left_out_is_not_run_and_a_capped_em_is_named_in_the_reason():
    parts = _setup(names=("mteb",), capped=("mteb",))
    rows = spectrum.claims(**dict(zip(("matrices", "estimates", "spectra", "tables", "gaps"), parts)), k_show=[1],
                           max_iter=30)
    v = _verdicts(rows)
    assert v["MMLU: components for 90%"] == "not run" and v["Merged: components for 95%"] == "not run"
    mteb = next(c for c in rows if c.claim.startswith("MTEB"))
    assert mteb.why == "EM stopped at this run's cap of 30"
    matrices, estimates, spectra, _, _ = parts
    note = spectrum._claims_note(rows, matrices, spectra, estimates, max_iter=30, quick=True)
    assert "Quick mode caps EM at 30 iterations, so the counts on MTEB are those of estimates" in note


def test_the_estimates_table_says_how_em_ran_and_shows_no_missing_value():
    matrices = {n: SimpleNamespace(shape=(100, 10), observed_fraction=f) for n, f in (("mmlu", 1.0), ("mteb", 0.77),
                                                                                     ("benchpress", 0.34))}
    estimates = {"mmlu": SimpleNamespace(em=None, method="pairwise"),
                 "mteb": SimpleNamespace(em=_em(n_iter=67), method="em"),
                 "benchpress": SimpleNamespace(em=_em(converged=False, n_iter=1000), method="em")}
    plain = {"mmlu": None, "mteb": SimpleNamespace(em=_em(n_iter=305)), "benchpress": None}
    spectra = {n: _spec(3) for n in matrices}
    t = spectrum.estimates_table(matrices, estimates, spectra, plain)
    assert list(t["EM updates"]) == ["none (pairwise)", "SQUAREM, 67 (plain: 305)", "plain, 1000 (cap)"]
    assert list(t["Floor"]) == ["—", "10⁻⁶", "10⁻⁶"] and not t.isna().any().any()


def test_the_plain_reference_of_an_accelerated_estimate_reaches_the_same_correlation_in_more_iterations():
    m = as_matrix(low_rank_scores(1, m=80, n=8, missing=0.2))
    est = bs.estimate_correlation(m.scores, config="released", std_floor="variance")
    ref = spectrum.plain_reference(m, est, config="released", max_iter=None)
    assert ref is not None and ref.em.converged and ref.em.n_iter > est.em.n_iter
    assert np.abs(ref.corr - est.corr).max() < 1e-2
    full = as_matrix(low_rank_scores(1, m=80, n=8))
    assert spectrum.plain_reference(full, bs.estimate_correlation(full.scores, std_floor="variance"),
                                    config="released", max_iter=None) is None


def test_a_config_capped_estimate_is_described_once_with_its_smallest_change_told_apart_from_the_tolerance():
    matrix = SimpleNamespace(shape=(83, 49), observed_fraction=0.338)
    em = SimpleNamespace(converged=False, n_iter=1000, rel_change=np.array([1e-2, 5.0002e-4, 5.1e-4]))
    note = spectrum.em_note("benchpress", matrix, SimpleNamespace(em=em), config="released")
    assert "stopped at its cap of 1000 iterations" in note and "5.0002" in note and "iteration 2" in note
    assert spectrum.em_note("mteb", matrix, SimpleNamespace(em=_em()), config="released") == ""


def test_the_lemma_table_has_one_row_per_matrix_and_size_and_no_index():
    table = spectral_comparison(_corr(), names=[f"b{i}" for i in range(8)])
    t = spectrum.lemma_table({"mteb": table, "merged": table}, [1, 5, 50])
    assert list(t.columns) == ["Matrix", "k", "Greedy residual", "Eigenvalue tail", "Ratio", "k-th pick"]
    assert list(zip(t["Matrix"], t["k"])) == [("MTEB", 1), ("MTEB", 5), ("Merged", 1), ("Merged", 5)]
