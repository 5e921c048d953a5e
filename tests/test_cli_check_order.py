"""Which error ``benchsel`` reports when a command line has several problems: the first check that fails.

The checks run in a fixed order (options that need no data, the data, the
options checked against the data, then the files); these tests pin that
order, so that the same bad command line always gets the same one line.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.cli import main


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A folder with a 24 x 6 scores matrix and a few scores files."""
    path = tmp_path_factory.mktemp("order")
    rng = np.random.default_rng(0)
    scores = 1 / (1 + np.exp(-(rng.normal(size=(24, 2)) @ rng.normal(size=(2, 6)))))
    pd.DataFrame(scores, index=[f"m{i}" for i in range(24)], columns=[f"b{j}" for j in range(6)]).to_csv(
        path / "scores.csv")
    (path / "bad_pairs.csv").write_text("benchmark,score\nb0,abc\n")
    (path / "two_models.csv").write_text("model,b0,b1\nnewA,0.6,0.4\nnewB,0.5,0.3\n")
    return path


def error_line(capsys, argv: list[str]) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchsel: error: "), err
    return lines[0].removeprefix("benchsel: error: ")


@pytest.mark.parametrize(
    ("argv", "starts"),
    [
        # the recommended predictor's scores are read before the data
        (["predict", "--data", "{d}/missing.csv", "--scores-file", "{d}/bad_pairs.csv"], "scores file "),
        (["predict", "--data", "{d}/missing.csv", "--scores-file", "{d}/bad_pairs.csv", "--seed", "-1"],
         "scores file "),
        # the Gaussian pipeline's options and data come before its scores
        (["predict", "--data", "{d}/missing.csv", "--scores-file", "{d}/bad_pairs.csv", "--pipeline", "paper"],
         "data file not found: "),
        (["predict", "--data", "{d}/missing.csv", "--scores-file", "{d}/bad_pairs.csv", "--pipeline", "paper",
          "--seed", "-1"], "--inner-folds and --seed are for --inflation inner"),
        (["predict", "--data", "{d}/scores.csv", "--scores-file", "{d}/two_models.csv", "--seed", "1"],
         "--inner-folds and --seed are for --inflation inner"),
        (["predict", "--data", "{d}/missing.csv", "--scores", "b0=0.5", "--level", "2", "--pipeline", "auto",
          "--scaling", "logit"], "--level must be strictly between 0 and 1, got 2"),
        # select: the pipeline's options, then the data, then the other options
        (["select", "--data", "{d}/missing.csv", "-k", "3", "--pipeline", "paper", "--nested"],
         "--nested is an option of --pipeline auto"),
        (["select", "--data", "{d}/missing.csv", "-k", "3", "--seed", "-1"], "data file not found: "),
        (["select", "--data", "{d}/scores.csv", "--budget", "3", "--default-cost", "2", "--seed", "-1"],
         "--default-cost needs --costs"),
        (["select", "--data", "{d}/scores.csv", "-k", "9", "--seed", "-1"], "--seed must be >= 0, got -1"),
        (["select", "--data", "{d}/scores.csv", "-k", "9", "--require", "bX", "--min-observed", "-1"],
         "-k 9 is out of range: "),
        (["select", "--data", "{d}/scores.csv", "--budget", "3", "--min-observed", "100"],
         "no benchmarks are left after --min-observed 100; lower --min-observed"),
        # cv: --out, the data, then the options in the order of --help
        (["cv", "--data", "{d}/missing.csv", "--pipelines", "bogus"], "data file not found: "),
        (["cv", "--data", "{d}/scores.csv", "--pipelines", "bogus", "--holdouts", "x"], "unknown pipeline 'bogus'"),
        (["cv", "--data", "{d}/scores.csv", "--k-max", "2", "--seed", "-1", "--folds", "99"],
         "--folds 99 is out of range: "),
        (["cv", "--data", "{d}/scores.csv", "--k-max", "2", "--inner-folds", "3", "--jobs", "0"],
         "--inner-folds is for --inflation inner"),
    ],
)
def test_the_first_failing_check_is_the_one_reported(capsys, folder, argv, starts):
    line = error_line(capsys, [a.format(d=folder) for a in argv])
    assert line.startswith(starts), line
