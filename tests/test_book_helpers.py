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
    (dict(choices={"config": (["early", "released"], ["early", "released"])}),
     r"config takes one value of \['early', 'released'\], got \['early', 'released'\]"),
    (dict(multi_choices={"tie_breaks": ("auto", ["auto", "mi"])}), r"tie_breaks must be a list, got 'auto'"),
    (dict(multi_choices={"tie_breaks": ([], ["auto", "mi"])}), r"tie_breaks is empty"),
    (dict(multi_choices={"tie_breaks": (["mi", "mi"], ["auto", "mi"])}), r"tie_breaks lists 'mi' more than once"),
    (dict(methods=["mi", "mi"]), r"methods lists 'mi' more than once"),
    (dict(levels=[]), r"levels is empty"),
    (dict(levels=[0.9, 0.9]), r"levels lists 0.9 more than once"),
    (dict(holdouts=[0.1, 0.1]), r"holdouts lists 0.1 more than once"),
    (dict(flags={"quick": "false"}), r"quick must be True or False, got 'false' \(papermill reads -p quick True"),
    (dict(fractions={"alpha": "0.05"}), r"alpha='0.05' is out of range: it must be a number strictly between 0 and 1"),
    (dict(bounded={"top": (16, 1, 15, ", at most k_max")}), r"top=16 is out of range: choose 1..15, at most k_max"),
    (dict(bounded={"top": (0, 1, 15)}), r"top must be a positive integer, got 0"),
    (dict(int_lists={"ks": (5, 1, 10)}), r"ks must be a list, got 5"),
    (dict(int_lists={"ks": ([], 1, 10)}), r"ks is empty; give one or more integers in 1..10"),
    (dict(int_lists={"ks": ([5, 12], 1, 10)}), r"ks\[1\]=12 is out of range: choose 1..10"),
    (dict(int_lists={"ks": ([5, 5], 1, 10)}), r"ks lists 5 more than once"),
    (dict(datasets=["merged"], also_run=["mteb"], k_max=60), r"k_max=60 is out of range.*56 benchmarks"),
    (dict(datasets=["mteb"], also_run=["benchpress"], n_folds=100), r"n_folds=100 is out of range.*83 models"),
    (dict(also_run=["mtbe"]), r"matrix='mtbe' is not a known matrix"),
    (dict(datasets=["benchpress"], k_max={"k_show": [1, 49]}), r"k_show\[1\]=49 is out of range.*at most 48"),
    (dict(k_max={"k_show": []}), r"k_show is empty; give one or more subset sizes"),
    (dict(k_max={"k_show": [2, 2]}), r"k_show lists 2 more than once"),
])
def test_bad_parameters_are_named_in_the_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        book.check_parameters(**kwargs)


def test_list_parameters_may_be_empty_only_where_allowed_and_shapes_are_the_matrices():
    book.check_parameters(int_lists={"spread_seeds": ([], 0, None, True)}, flags={"quick": False},
                          multi_choices={"configs": (["early"], ["early", "released"])})
    assert book.matrix_shape("benchpress") == (83, 49)
    with pytest.raises(ValueError, match="'nope' is not a known matrix"):
        book.matrix_shape("nope")


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
