"""benchsel_lib.book: the parameter checks and prose helpers the notebooks call first."""
from __future__ import annotations

import pytest

from benchsel_lib import book


def test_known_parameters_pass():
    book.check_parameters(datasets=["mmlu", "benchpress"], k_max=15, n_folds=10, holdouts=[0.1, 0.9],
                          holdout=0.5, seed=0, methods=["entropy", "mi", "random"], levels=[0.9],
                          dataset={"perfold_dataset": "merged"},
                          choices={"config": ("released", ["early", "released"])})


@pytest.mark.parametrize("kwargs, message", [
    (dict(datasets=["mmlu", "nope"]), r"'nope' is not a known matrix"),
    (dict(datasets="mmlu"), r"datasets must be a list"),
    (dict(datasets=[]), r"datasets is empty"),
    (dict(datasets=["mteb", "mteb"]), r"more than once"),
    (dict(dataset={"perfold_dataset": "mtbe"}), r"perfold_dataset='mtbe' is not a known matrix"),
    (dict(datasets=["benchpress"], k_max=49), r"k_max=49 is out of range.*49 benchmarks.*at most 48"),
    (dict(datasets=["mmlu"], k_max={"k_table": 0}), r"k_table must be a positive integer"),
    (dict(k_max=2.5), r"k_max must be a positive integer"),
    (dict(n_folds=1), r"n_folds must be an integer >= 2"),
    (dict(datasets=["benchpress"], n_folds=84), r"n_folds=84 is out of range.*83 models"),
    (dict(holdouts=[0.1, 1.0]), r"holdouts entry 1.0 is out of range"),
    (dict(holdouts=[]), r"holdouts is empty"),
    (dict(holdout=0), r"holdout 0 is out of range"),
    (dict(seed=-1), r"seed must be a non-negative integer"),
    (dict(seed=True), r"seed must be a non-negative integer"),
    (dict(methods=["entropy", "greedy"]), r"'greedy' is not a selection method"),
    (dict(levels=[0.9, 95]), r"levels entry 95 is out of range"),
    (dict(choices={"config": ("paper", ["early", "released"])}), r"config='paper' is not allowed"),
])
def test_bad_parameters_are_named_in_the_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        book.check_parameters(**kwargs)


def test_k_max_may_reach_one_less_than_the_smallest_matrix():
    book.check_parameters(datasets=["benchpress", "mmlu"], k_max=48)
    with pytest.raises(ValueError, match="at most 48"):
        book.check_parameters(datasets=["benchpress", "mmlu"], k_max=49)


def test_quick_caps_what_was_passed_instead_of_replacing_it():
    assert book.quick(15, 5) == 5 and book.quick(3, 5) == 3
    assert book.quick(["benchpress", "mteb"], 1) == ["benchpress"]
    assert book.quick([0.1], 2) == [0.1]
    with pytest.raises(ValueError, match="caps integers and lists"):
        book.quick("mmlu", 1)


def test_and_join_and_labels():
    assert book.and_join([]) == "" and book.and_join(["MMLU"]) == "MMLU"
    assert book.and_join(["MMLU", "MTEB"]) == "MMLU and MTEB"
    assert book.and_join(["a", "b", "c"]) == "a, b and c"
    assert book.dataset_label("benchpress") == "BenchPress" and book.dataset_label("own") == "own"
