"""EM studies used by notebook 02: settings comparison and synthetic recovery."""
import numpy as np
import pytest

from benchsel_lib.studies.em import (
    compare_em_settings,
    condition_number,
    em_recovery_study,
)


def _low_rank(m=40, n=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 2)) @ rng.standard_normal((2, n)) + 0.3 * rng.standard_normal((m, n))
    X[rng.random((m, n)) < 0.2] = np.nan
    X[:, 0] = np.where(np.isnan(X[:, 0]), 0.0, X[:, 0])
    return X


def test_compare_em_settings_reports_one_row_per_setting_with_floor_respected():
    X = _low_rank()
    tab, fits = compare_em_settings(X, {"floor": {"eps_psd": 1e-3, "shrinkage": None, "max_iter": 50},
                                        "shrunk": {"eps_psd": 1e-3, "shrinkage": 0.5, "max_iter": 50}},
                                    pairs=[(0, 1)])
    assert list(tab.index) == ["floor", "shrunk"] and set(fits) == {"floor", "shrunk"}
    assert tab.loc["floor", "min_eigenvalue"] >= 1e-3 * (1 - 1e-9)
    assert tab.loc["shrunk", "shrinkage"] == 0.5
    assert -1.0 <= tab.loc["floor", "corr[0,1]"] <= 1.0


def test_condition_number_is_unbounded_for_an_eigenvalue_that_is_zero_to_rounding():
    w = np.array([1e-3, 0.5, 2.0])
    assert condition_number(w) == pytest.approx(2000.0)
    assert condition_number(w[::-1]) == pytest.approx(2000.0)  # any order
    for tiny in (-3.4e-13, 0.0, 1e-15, 2.0 * 3 * np.finfo(float).eps):  # either sign: rounding decides it
        assert condition_number([tiny, 0.5, 2.0]) == np.inf
    assert condition_number([-1.0, -0.5]) == np.inf  # nothing positive
    with pytest.raises(ValueError, match="finite"):
        condition_number([np.nan, 1.0])


def test_compare_em_settings_calls_a_rank_deficient_fit_singular_whatever_the_sign_of_its_smallest_eigenvalue():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 10))  # 6 models, 10 benchmarks: rank <= 6
    tab, _ = compare_em_settings(X, {"none": {"eps_psd": None, "shrinkage": None, "max_iter": 20},
                                     "floor": {"eps_psd": 1e-3, "shrinkage": None, "max_iter": 20}})
    assert abs(tab.loc["none", "min_eigenvalue"]) < 1e-10 and tab.loc["none", "condition_number"] == np.inf
    assert np.isfinite(tab.loc["floor", "condition_number"])


def test_compare_em_settings_rejects_bad_input():
    with pytest.raises(ValueError, match="settings"):
        compare_em_settings(_low_rank(), {})
    with pytest.raises(ValueError, match="out of range"):
        compare_em_settings(_low_rank(), {"a": {"max_iter": 5}}, pairs=[(0, 99)])


def test_em_recovery_beats_pairwise_mean_under_mar_missingness():
    df = em_recovery_study(n_models=150, n_benchmarks=8, rank=2, missing_fractions=(0.0, 0.5), n_reps=1,
                           seed=1, max_iter=200)
    assert set(df["estimator"]) == {"em", "pairwise"} and len(df) == 4
    full = df[df["missing_fraction"] == 0.0].set_index("estimator")
    assert full.loc["em", "observed_fraction"] == 1.0
    half = df[df["missing_fraction"] == 0.5].set_index("estimator")
    assert 0.4 < 1 - half.loc["em", "observed_fraction"] < 0.6
    assert half.loc["em", "mean_error"] < half.loc["pairwise", "mean_error"]


def test_em_recovery_rejects_bad_fractions():
    with pytest.raises(ValueError, match="missing_fractions"):
        em_recovery_study(missing_fractions=(1.2,))
    with pytest.raises(ValueError, match="mechanism"):
        em_recovery_study(mechanism="mnar")
