"""Benchmark names are turned into positions by one lookup, so every entry point refuses a bad name alike."""
from __future__ import annotations

import numpy as np
import pytest
from _synthetic import low_rank_scores

from benchsel_lib import Pipeline, ScoreMatrix, Selector, select
from benchsel_lib._names import name_positions

NAMES = ["alpha", "beta", "gamma", "delta"]


def test_name_positions_are_the_indices_in_the_given_order():
    assert name_positions(["gamma", "alpha"], NAMES) == [2, 0]
    assert name_positions("delta", NAMES) == [3]
    assert name_positions([], NAMES) == []
    assert name_positions(["beta", "beta"], NAMES, unique=False) == [1, 1]
    # a split may lack a name; "skip" leaves it out and keeps the others' order
    assert name_positions(["delta", "omega", "beta"], NAMES, missing="skip") == [3, 1]


@pytest.mark.parametrize(("wanted", "options", "message"), [
    (["alpa"], {}, "unknown benchmark 'alpa'; did you mean 'alpha'?"),
    (["zzz"], {}, "unknown benchmark 'zzz' (4 benchmarks in the matrix)"),
    (["zzz"], {"role": "mandatory"}, "unknown mandatory benchmark 'zzz' (4 benchmarks in the matrix)"),
    (["m9"], {"what": "model"}, "unknown model 'm9' (4 models in the matrix)"),
    (["beta", "beta"], {}, "benchmark 'beta' is given more than once"),
    (["beta", "beta"], {"role": "revealed"}, "revealed benchmark 'beta' is given more than once"),
    (["beta"], {"missing": "maybe"}, "missing must be 'error' or 'skip', got 'maybe'"),
])
def test_name_positions_refuse_a_bad_name_with_a_message_that_names_it(wanted, options, message):
    with pytest.raises(ValueError) as err:
        name_positions(wanted, NAMES, **options)
    assert str(err.value) == message


def test_every_entry_point_refuses_a_misspelt_benchmark_with_the_same_words():
    X = 50 + 10 * low_rank_scores(0, 30, 4)
    m = ScoreMatrix(scores=X, models=[f"m{i}" for i in range(30)], benchmarks=NAMES, source="synthetic")
    R = np.corrcoef(X, rowvar=False)
    said = "benchmark 'alpa'; did you mean 'alpha'?"
    cases = [
        (lambda: m.benchmark_index(["alpa"]), f"unknown {said}"),
        (lambda: m.subset(benchmarks=["beta", "alpa"]), f"unknown {said}"),
        (lambda: select(R, 2, names=NAMES, initial=["alpa"]), f"unknown mandatory {said}"),
        (lambda: select(R, 2, names=NAMES, exclude=["alpa"]), f"unknown excluded {said}"),
        (lambda: Pipeline(k=2, selector=Selector("mi", initial=("alpa",))).fit(m), f"unknown mandatory {said}"),
        (lambda: Pipeline.paper(k=2).fit(m, revealed=["alpa"]), f"unknown revealed {said}"),
        (lambda: Pipeline.paper(k=2).fit(m, revealed=["beta"]).predict({"alpa": 50.0}), f"unknown {said}"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError) as err:
            call()
        assert str(err.value) == message
