"""benchsel_lib.book: the parameter checks and prose helpers the notebooks call first."""
from __future__ import annotations

import pytest

from benchsel_lib import book


def _check(**declared):
    """``name=(rule, value)`` pairs, checked in order as one notebook's parameters."""
    book.check_parameters({name: rule for name, (rule, _) in declared.items()},
                          {name: value for name, (_, value) in declared.items()})


def test_known_parameters_pass():
    _check(datasets=(book.Matrices(), ["mmlu", "benchpress"]), k_max=(book.SubsetSize(), 15),
           n_folds=(book.Folds(), 10), holdouts=(book.Holdouts(), [0.1, 0.9]), holdout=(book.Holdout(), 0.5),
           seed=(book.Count(), 0), methods=(book.Methods(), ["entropy", "mi", "random"]),
           levels=(book.Levels(), [0.9]), perfold_dataset=(book.Matrix(), "merged"),
           config=(book.Choice("early", "released"), "released"), tol=(book.NoneOr(book.Fraction()), None),
           em_configs=(book.MatrixChoices("early", "released"), {"benchpress": "early"}))


@pytest.mark.parametrize("declared, message", [
    (dict(datasets=(book.Matrices(), ["mmlu", "nope"])), r"'nope' is not a known matrix"),
    (dict(datasets=(book.Matrices(), "mmlu")), r"datasets must be a list"),
    (dict(datasets=(book.Matrices(), [])), r"datasets is empty"),
    (dict(datasets=(book.Matrices(), ["mteb", "mteb"])), r"more than once"),
    (dict(perfold_dataset=(book.Matrix(), "mtbe")), r"perfold_dataset='mtbe' is not a known matrix"),
    (dict(datasets=(book.Matrices(), ["benchpress"]), k_max=(book.SubsetSize(), 49)),
     r"k_max=49 is out of range.*49 benchmarks.*at most 48"),
    (dict(datasets=(book.Matrices(), ["mmlu"]), k_table=(book.SubsetSize(), 0)),
     r"k_table must be a positive integer"),
    (dict(k_max=(book.SubsetSize(), 2.5)), r"k_max must be a positive integer"),
    (dict(n_folds=(book.Folds(), 1)), r"n_folds must be an integer >= 2"),
    (dict(datasets=(book.Matrices(), ["benchpress"]), n_folds=(book.Folds(), 84)),
     r"n_folds=84 is out of range.*83 models"),
    (dict(holdouts=(book.Holdouts(), [0.1, 1.0])), r"holdouts entry 1.0 is out of range"),
    (dict(holdouts=(book.Holdouts(), [])), r"holdouts is empty"),
    (dict(holdout=(book.Holdout(), 0)), r"holdout 0 is out of range"),
    (dict(seed=(book.Count(), -1)), r"seed must be a non-negative integer"),
    (dict(seed=(book.Count(), True)), r"seed must be a non-negative integer"),
    (dict(methods=(book.Methods(), ["entropy", "greedy"])), r"'greedy' is not a selection method"),
    (dict(levels=(book.Levels(), [0.9, 95])), r"levels entry 95 is out of range"),
    (dict(config=(book.Choice("early", "released"), "paper")), r"config='paper' is not allowed"),
    (dict(config=(book.Choice("early", "released"), ["early", "released"])),
     r"config takes one value of \['early', 'released'\], got \['early', 'released'\]"),
    (dict(tie_breaks=(book.Choices("auto", "mi"), "auto")), r"tie_breaks must be a list, got 'auto'"),
    (dict(tie_breaks=(book.Choices("auto", "mi"), [])), r"tie_breaks is empty"),
    (dict(tie_breaks=(book.Choices("auto", "mi"), ["mi", "mi"])), r"tie_breaks lists 'mi' more than once"),
    (dict(methods=(book.Methods(), ["mi", "mi"])), r"methods lists 'mi' more than once"),
    (dict(levels=(book.Levels(), [])), r"levels is empty"),
    (dict(levels=(book.Levels(), [0.9, 0.9])), r"levels lists 0.9 more than once"),
    (dict(holdouts=(book.Holdouts(), [0.1, 0.1])), r"holdouts lists 0.1 more than once"),
    (dict(quick=(book.Flag(), "false")),
     r"quick must be True or False, got 'false' \(papermill reads -p quick True"),
    (dict(alpha=(book.Fraction(), "0.05")),
     r"alpha='0.05' is out of range: it must be a number strictly between 0 and 1"),
    (dict(tol=(book.NoneOr(book.Fraction()), 2)),
     r"tol=2 is out of range: it must be a number strictly between 0 and 1"),
    (dict(top=(book.Bounded(1, 15, ", at most k_max"), 16)), r"top=16 is out of range: choose 1..15, at most k_max"),
    (dict(top=(book.Bounded(1, 15), 0)), r"top must be a positive integer, got 0"),
    (dict(ks=(book.IntList(min=1, max=10), 5)), r"ks must be a list, got 5"),
    (dict(ks=(book.IntList(min=1, max=10), [])), r"ks is empty; give one or more integers in 1..10"),
    (dict(ks=(book.IntList(min=1, max=10), [5, 12])), r"ks\[1\]=12 is out of range: choose 1..10"),
    (dict(ks=(book.IntList(min=1, max=10), [5, 5])), r"ks lists 5 more than once"),
    (dict(datasets=(book.Matrices(), ["merged"]), also=(book.Matrices(also=True), ["mteb"]),
          k_max=(book.SubsetSize(), 60)),
     r"k_max=60 is out of range.*56 benchmarks"),
    (dict(datasets=(book.Matrices(), ["mteb"]), also=(book.Matrices(also=True), ["benchpress"]),
          n_folds=(book.Folds(), 100)), r"n_folds=100 is out of range.*83 models"),
    (dict(first_pick_datasets=(book.Matrices(also=True), ["mteb", "mtbe"])),
     r"first_pick_datasets\[1\]='mtbe' is not a known matrix"),
    (dict(datasets=(book.Matrices(), ["benchpress"]), k_show=(book.SubsetSizes(), [1, 49])),
     r"k_show\[1\]=49 is out of range.*at most 48"),
    (dict(k_show=(book.SubsetSizes(), [])), r"k_show is empty; give one or more subset sizes"),
    (dict(k_show=(book.SubsetSizes(), [2, 2])), r"k_show lists 2 more than once"),
    (dict(em_configs=(book.MatrixChoices("early", "released"), {"mtbe": "early"})),
     r"em_configs key 'mtbe'='mtbe' is not a known matrix"),
    (dict(em_configs=(book.MatrixChoices("early", "released"), {"mteb": "late"})),
     r"em_configs\['mteb'\]='late' is not allowed"),
    (dict(calib_ks=((book.IntList(min=1), book.SubsetSizes()), [])),
     r"calib_ks is empty; give one or more integers >= 1"),
])
def test_bad_parameters_are_named_in_the_error(declared, message):
    with pytest.raises(ValueError, match=message):
        _check(**declared)


def test_list_parameters_may_be_empty_only_where_allowed_and_shapes_are_the_matrices():
    _check(spread_seeds=(book.IntList(min=0, may_be_empty=True), []), quick=(book.Flag(), False),
           configs=(book.Choices("early", "released"), ["early"]), first_pick_datasets=(book.Matrices(also=True), []))
    assert book.matrix_shape("benchpress") == (83, 49)
    with pytest.raises(ValueError, match="'nope' is not a known matrix"):
        book.matrix_shape("nope")


def test_k_max_may_reach_one_less_than_the_smallest_matrix():
    _check(datasets=(book.Matrices(), ["benchpress", "mmlu"]), k_max=(book.SubsetSize(), 48))
    with pytest.raises(ValueError, match="at most 48"):
        _check(datasets=(book.Matrices(), ["benchpress", "mmlu"]), k_max=(book.SubsetSize(), 49))


def test_rules_are_small_frozen_values():
    assert book.Choice("bh", "bonferroni") == book.Choice("bh", "bonferroni")
    assert book.Bounded(1, None) == book.Bounded(1, None, "") and book.Count(min=1) != book.Count()
    with pytest.raises(AttributeError):
        book.Count().min = 3  # type: ignore[misc]


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
