"""The ``benchsel`` options speak the Python API's words; the old spellings still work, deprecated.

``--pipeline auto|paper`` (``Pipeline.auto`` / ``Pipeline.paper``), ``cv
--pipelines``, ``--scaling standard|logit``, ``--inflation`` and ``cv
--config``. Each old spelling (``--method``, ``--methods``, ``--transform``,
``--inflate``, ``--variance-inflation``, ``--em-config``) sets the new option,
its value in the new words, gives the same output and says in one line on
stderr what to write instead.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.cli import build_parser, main


@pytest.fixture(scope="module")
def scores_csv(tmp_path_factory) -> Path:
    """A 30 x 5 low-rank score matrix in (0, 1) with a few missing entries."""
    rng = np.random.default_rng(3)
    x = 1 / (1 + np.exp(-(rng.normal(size=(30, 2)) @ rng.normal(size=(2, 5)) + 0.3 * rng.normal(size=(30, 5)))))
    x[rng.random(x.shape) < 0.08] = np.nan
    df = pd.DataFrame(x, index=[f"m{i}" for i in range(30)], columns=[f"b{j}" for j in range(5)])
    path = tmp_path_factory.mktemp("vocabulary") / "scores.csv"
    df.to_csv(path, index_label="model")
    return path


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` and what it wrote on stdout and stderr."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


SELECT = ["select", "-k", "2", "--estimator", "pairwise", "--format", "json"]
PREDICT = ["predict", "--scores", "b0=0.4,b1=0.6", "--estimator", "pairwise", "--format", "json"]
CV = ["cv", "--folds", "3", "--k-max", "2", "--seed", "1", "--estimator", "pairwise", "--format", "json"]

#: (command, old options, the same in the new words, the line the old spelling says on stderr)
SPELLINGS = [
    (SELECT, ["--method", "gaussian"], ["--pipeline", "paper"], "--method gaussian is deprecated; use --pipeline paper"),
    (SELECT, ["--method", "auto"], ["--pipeline", "auto"], "--method is deprecated; use --pipeline"),
    (PREDICT, ["--method", "gaussian"], ["--pipeline", "paper"], "--method gaussian is deprecated; use --pipeline paper"),
    (PREDICT, ["--transform", "logit"], ["--scaling", "logit"], "--transform is deprecated; use --scaling"),
    (PREDICT, ["--pipeline", "paper", "--transform", "none"], ["--pipeline", "paper", "--scaling", "standard"],
     "--transform none is deprecated; use --scaling standard"),
    (PREDICT, ["--inflate", "auto"], ["--inflation", "inner"], "--inflate auto is deprecated; use --inflation inner"),
    (PREDICT, ["--inflate", "2"], ["--inflation", "2"], "--inflate is deprecated; use --inflation"),
    (CV, ["--methods", "entropy,random"], ["--pipelines", "entropy,random"], "--methods is deprecated; use --pipelines"),
    (CV, ["--pipelines", "mi", "--transform", "logit"], ["--pipelines", "mi", "--scaling", "logit"],
     "--transform is deprecated; use --scaling"),
    (CV, ["--pipelines", "mi", "--transform", "none"], ["--pipelines", "mi", "--scaling", "standard"],
     "--transform none is deprecated; use --scaling standard"),
    (CV, ["--pipelines", "entropy", "--variance-inflation", "inner"], ["--pipelines", "entropy", "--inflation", "inner"],
     "--variance-inflation is deprecated; use --inflation"),
    (CV, ["--pipelines", "entropy", "--em-config", "early"], ["--pipelines", "entropy", "--config", "early"],
     "--em-config is deprecated; use --config"),
]


@pytest.mark.parametrize(("command", "old", "new", "said"), SPELLINGS, ids=[" ".join(s[1]) for s in SPELLINGS])
def test_an_old_spelling_gives_the_same_output_and_says_what_to_use(capsys, scores_csv, command, old, new, said):
    argv = [*command, "--data", scores_csv]
    code, out_new, err_new = run(capsys, [*argv, *new])
    assert code == 0 and err_new == ""
    code, out_old, err_old = run(capsys, [*argv, *old])
    assert code == 0
    assert out_old == out_new
    assert err_old.splitlines() == [f"benchsel: {said}"]


@pytest.mark.parametrize(
    ("argv", "dest", "value"),
    [
        (["select", "--data", "x.csv", "--method", "gaussian"], "pipeline", "paper"),
        (["predict", "--data", "x.csv", "--scores", "a=1", "--method", "gaussian"], "pipeline", "paper"),
        (["predict", "--data", "x.csv", "--scores", "a=1", "--transform", "none"], "scaling", "standard"),
        (["predict", "--data", "x.csv", "--scores", "a=1", "--inflate", "auto"], "inflation", "inner"),
        (["predict", "--data", "x.csv", "--scores", "a=1", "--inflate", "1.5"], "inflation", 1.5),
        (["cv", "--data", "x.csv", "--methods", "mi,random"], "pipelines", "mi,random"),
        (["cv", "--data", "x.csv", "--transform", "none"], "scaling", "standard"),
        (["cv", "--data", "x.csv", "--variance-inflation", "inner"], "inflation", "inner"),
        (["cv", "--data", "x.csv", "--em-config", "early"], "config", "early"),
    ],
)
def test_an_old_spelling_sets_the_new_option_in_the_new_words(capsys, argv, dest, value):
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    assert "is deprecated" in capsys.readouterr().err


def test_the_json_output_names_its_fields_as_the_options_are(capsys, scores_csv):
    code, out, _ = run(capsys, [*CV, "--data", scores_csv, "--pipelines", "entropy", "--scaling", "logit",
                                "--inflation", "inner", "--config", "early"])
    assert code == 0
    doc = json.loads(out)
    assert (doc["pipelines"], doc["scaling"], doc["inflation"], doc["config"]) == (["entropy"], "logit", "inner", "early")
    assert not {"methods", "transform", "variance_inflation", "em_config"} & set(doc)
    code, out, _ = run(capsys, [*PREDICT, "--data", scores_csv, "--inflation", "inner"])
    assert code == 0 and json.loads(out)["inflation_mode"] == "inner"
    code, out, _ = run(capsys, [*PREDICT, "--data", scores_csv, "--pipeline", "paper", "--scaling", "standard"])
    doc = json.loads(out)
    assert code == 0 and doc["scaling"] == "standard" and "transform" not in doc


NEW = {"select": ["--pipeline"], "predict": ["--pipeline", "--scaling", "--inflation"],
       "cv": ["--pipelines", "--scaling", "--inflation", "--config"]}
OLD = {"select": ["--method"], "predict": ["--method", "--transform", "--inflate"],
       "cv": ["--methods", "--transform", "--variance-inflation", "--em-config"]}


def _mentions(option: str, text: str) -> int:
    """How often ``text`` names ``option`` as a whole word (``--method`` is not in ``--methods``)."""
    return len(re.findall(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text))


@pytest.mark.parametrize("command", ["select", "predict", "cv"])
def test_help_lists_the_new_options_and_mentions_the_old_ones_once(capsys, command):
    code, out, _ = run(capsys, [command, "--help"])
    assert code == 0
    options, _, epilog = out.partition("\nexamples:\n")
    for option in NEW[command]:
        assert _mentions(option, options) >= 2, option  # in the usage line and in the options list
    for option in OLD[command]:
        assert _mentions(option, options) == 0, option
        assert _mentions(option, epilog) == 1, option
    assert "Deprecated spellings" in epilog


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["select", "-k", "2", "--pipeline", "gaussian"], "argument --pipeline: invalid choice: 'gaussian'"),
        (["predict", "--scores", "b0=0.5", "--pipeline", "recommended"], "argument --pipeline: invalid choice:"),
        (["predict", "--scores", "b0=0.5", "--scaling", "none"], "argument --scaling: invalid choice: 'none'"),
        (["predict", "--scores", "b0=0.5", "--inflation", "auto"],
         "argument --inflation: invalid value 'auto': expected none, inner or a number > 0"),
        (["predict", "--scores", "b0=0.5", "--inflation", "0"], "argument --inflation: invalid value '0'"),
        (["cv", "--inflation", "auto"], "argument --inflation: invalid choice: 'auto'"),
        (["cv", "--scaling", "log"], "argument --scaling: invalid choice: 'log'"),
        (["cv", "--config", "late"], "argument --config: invalid choice: 'late'"),
    ],
)
def test_a_bad_value_of_a_new_option_is_refused_with_argparses_message(capsys, scores_csv, argv, message):
    code, out, err = run(capsys, [argv[0], "--data", scores_csv, *argv[1:]])
    assert code == 2 and out == ""
    assert err.splitlines() == [err.strip()] and err.startswith(f"benchsel: error: {message}"), err


def test_an_unknown_name_in_pipelines_is_refused_naming_the_option(capsys, scores_csv):
    code, out, err = run(capsys, ["cv", "--data", scores_csv, "--pipelines", "entropy,magic"])
    assert code == 2 and out == ""
    assert err.startswith("benchsel: error: unknown pipeline 'magic' in --pipelines")


def test_errors_name_the_new_options_also_when_the_old_spelling_was_used(capsys, scores_csv):
    code, _, err = run(capsys, ["select", "--data", scores_csv, "-k", "2", "--method", "gaussian", "--nested"])
    assert code == 2
    assert err.splitlines() == ["benchsel: --method gaussian is deprecated; use --pipeline paper",
                                "benchsel: error: --nested is an option of --pipeline auto (the paper's greedy "
                                "selections are nested already)"]
