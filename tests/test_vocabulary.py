"""One name per concept: a selector, ``unreached``, ``choice``; an older keyword of cross_validate still works."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from benchsel_lib import cross_validate
from benchsel_lib.data import ScoreMatrix
from benchsel_lib.method.candidates import Grid
from benchsel_lib.method.pipeline import PipelineSearch
from benchsel_lib.protocol.cv import CVProtocol, cv_grid

CV = dict(k_max=2, n_folds=3, seed=1, progress=False)


def _sparse(seed: int = 3, m: int = 30, n: int = 6, missing: float = 0.5) -> ScoreMatrix:
    """A matrix whose held-out models often ran none of the selected benchmarks (so ``unreached`` matters)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n)) + 2.0 * rng.normal(size=(m, 1))
    X[rng.random(X.shape) < missing] = np.nan
    X[~(~np.isnan(X)).any(axis=1), 0] = 1.0  # every model observes something
    return ScoreMatrix(X, [f"m{i}" for i in range(m)], [f"b{j}" for j in range(n)])


def _quiet(run, *args, **kwargs):
    """``run(*args, **kwargs)`` with no warning shown (the matrix is small); raises if any was a FutureWarning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run(*args, **kwargs)
    assert not [w for w in caught if issubclass(w.category, FutureWarning)]
    return out


def test_cross_validate_takes_unconditioned_as_unreached_with_a_future_warning_naming_unreached():
    m = _sparse()
    new = _quiet(cross_validate, m, ["entropy"], unreached="mean", **CV)
    skip = _quiet(cross_validate, m, ["entropy"], unreached="skip", **CV)
    with pytest.warns(FutureWarning, match=r"unconditioned= is deprecated.*use unreached="):
        old = cross_validate(m, ["entropy"], unconditioned="mean", **CV)
    pd.testing.assert_frame_equal(old, new)
    assert old.attrs["unreached"] == "mean"
    assert not new["r2"].equals(skip["r2"])  # the option reached the protocol: "mean" scores other models


def test_cv_grid_takes_unconditioned_in_a_run_as_unreached_with_a_future_warning():
    m = _sparse()
    new = _quiet(cv_grid, [dict(matrix=m, pipelines=["entropy"], unreached="mean", k_max=2, n_folds=3, seed=1)],
                 progress=False)
    with pytest.warns(FutureWarning, match="use unreached="):
        old = cv_grid([dict(matrix=m, pipelines=["entropy"], unconditioned="mean", k_max=2, n_folds=3, seed=1)],
                      progress=False)
    pd.testing.assert_frame_equal(old[0], new[0])


def test_cross_validate_refuses_an_unknown_keyword_and_both_names_at_once_with_a_type_error():
    m = _sparse()
    with pytest.raises(TypeError, match="cross_validate.. got an unexpected keyword argument 'unreachable'"):
        cross_validate(m, ["entropy"], unreachable="mean", **CV)
    with pytest.raises(TypeError, match="unreached= and unconditioned="):
        cross_validate(m, ["entropy"], unreached="mean", unconditioned="mean", **CV)


def test_cross_validate_takes_the_protocol_as_one_object_or_as_its_fields_with_the_same_numbers():
    m = _sparse()
    by_fields = _quiet(cross_validate, m, ["entropy", "random"], unreached="mean", **CV)
    protocol = CVProtocol(k_max=2, n_folds=3, seed=1, unreached="mean")
    by_object = _quiet(cross_validate, m, ["entropy", "random"], protocol=protocol, progress=False)
    pd.testing.assert_frame_equal(by_object, by_fields)
    # a keyword option replaces the protocol's field
    other = _quiet(cross_validate, m, ["entropy", "random"], protocol=protocol, unreached="skip", progress=False)
    assert other.attrs["unreached"] == "skip" and not other["r2"].equals(by_fields["r2"])
    with pytest.raises(TypeError, match="options are the fields of CVProtocol: holdouts, k_max"):
        cross_validate(m, ["entropy"], protocol=protocol, n_fold=3)
    with pytest.raises(ValueError, match="protocol must be a CVProtocol, got dict"):
        cross_validate(m, ["entropy"], protocol={"n_folds": 3})


def test_a_search_names_its_candidates_selectors_in_cv_results_and_its_choice():
    m = _sparse(missing=0.1)
    search = PipelineSearch(2, candidates=Grid(("mi", "random"), ("gaussian",), stack=False), search_folds=2,
                            blocks=())
    fitted = _quiet(search.fit, m)
    table = fitted.cv_results_
    assert "selector" in table.columns and "strategy" not in table.columns
    assert set(table["selector"]) == {"mi", "random"}
    assert fitted.choice_.selector in {"mi", "random"}
    assert fitted.choice_.name == f"{fitted.choice_.selector}+{fitted.choice_.predictor}"
