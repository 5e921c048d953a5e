"""The ``benchsel`` command: select benchmarks, predict a new model's scores, cross-validate.

The command only parses and formats: every subcommand builds a
:class:`~benchsel_lib.method.pipeline.Pipeline` and calls it.

Subcommands (``benchsel <command> --help`` shows examples for each):

* ``benchsel datasets`` -- the built-in matrices with shape and observed fraction;
* ``benchsel select`` -- the recommended pipeline's selection (``Pipeline.auto``),
  or the paper's greedy entropy / MI / random selection (``Pipeline.paper``,
  Algorithms 1-2) with mandatory benchmarks (Section 6, "Safety and fairness
  coverage"), a cost budget (Krause-Guestrin modified greedy, Appendix B) and
  the model-selection dual ``--axis models`` (Section 6, "Future work");
* ``benchsel predict`` -- the benchmarks a new model has not run, predicted
  from the ones it has, with intervals in the original units: the recommended
  predictor with split-conformal intervals, or the Gaussian conditional mean
  (Eqs. cond-mean / cond-var) with Gaussian intervals, optionally rescaled by a
  variance-inflation factor, given or fitted by inner cross-validation
  (``--inflate none|auto|F``);
* ``benchsel cv`` -- the paper's cross-validation protocol (Section 5.1) of
  named pipelines, with interval coverage (``--levels``) and the inner-fold
  variance inflation of ``Pipeline.paper(inflation="inner")``
  (``--variance-inflation inner``).

The command uses one BLAS thread unless ``OPENBLAS_NUM_THREADS`` /
``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` are set (see ``BLAS_THREAD_VARS``).

Every subcommand accepts ``--format table|csv|json``. Bad input (unknown
dataset or benchmark, malformed values, missing files, binary or mis-delimited
CSV files, out-of-range options, an ``--out`` that cannot be written) ends with
exit status 2 and one line ``benchsel: error: ...`` on stderr, never a
traceback; the checks run before any long work. On big or wide matrices the
pipelines choose, before the work, a path that fits (the recommended
pipeline's inner search on seeded subsamples, the floored pairwise correlation
where EM would take too long); ``select`` and ``predict`` say so in one line
each, ``benchsel: ...`` on stderr. ``cv --out`` writes its table
all or nothing (a temporary file in the same folder, renamed into place): when
that write fails after the cross-validation (a full disk, a file-size limit)
no partial file is left, the summary is still printed and the exit status is
1. Long work (``cv``) shows a progress bar on stderr only when stderr is a
terminal. Ctrl-C ends the command with ``benchsel: interrupted`` (exit status
130) and SIGTERM the same way with ``benchsel: terminated`` (143): the worker
processes of ``--jobs`` are stopped and no temporary file is left. Warnings
(a data problem, a cache repair, a score that looks 100 times off), also those
raised in worker processes, are ``benchsel: warning: ...`` lines, each said
once; a value or a name longer than 200 characters is cut in every message.

``main(argv)`` returns the exit status, so the command can be driven from
Python and tests; ``python -m benchsel_lib.cli`` works like the console script.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import secrets
import signal
import sys
import threading
import warnings

#: BLAS thread variables the command sets to 1 unless the user set them.
BLAS_THREAD_VARS: tuple[str, ...] = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
if "numpy" not in sys.modules:  # the console script / python -m: numpy (BLAS) is not loaded yet
    # One BLAS thread: every matrix here is small (a few hundred columns at most), and a
    # multi-threaded OpenBLAS on a busy machine made EM 10-100x slower (select --axis
    # models on MTEB: 13 s with one thread, 197 s with two). Set the variables
    # yourself to use more threads. Imported after numpy (tests, notebooks) this does nothing.
    for _var in BLAS_THREAD_VARS:
        os.environ.setdefault(_var, "1")
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Any, NoReturn, TextIO

import numpy as np
import pandas as pd

from . import __version__
from ._names import name_positions, suggest_names, unknown_name_error
from .data import DATASETS, load_csv, load_matrix
from .data.loaders import parse_number, read_csv_rows
from .method.correlation import Correlation, em_too_costly
from .method.pipeline import (
    PAPER_OBJECTIVES,
    Pipeline,
    ScaleWarning,
    check_given,
    parse_pipeline,
)
from .method.candidates import DEFAULT_MIN_OBSERVED
from .method.choice import DEFAULT_RULE
from .method.search import PipelineSearch
from .method.selection import COST_AWARE, too_thin, within_budget
from .protocol.cv import DEFAULT_K_MAX, cross_validate
from .protocol.splits import cv_splits
from .protocol.summaries import coverage_column, summarize_cv
from .protocol.sweep import SweepError, dask_backend

__all__ = ["main", "build_parser", "parse_scores", "DEFAULT_MIN_OBSERVED"]

#: ``select --objective``: the paper's three and Section 2's total residual variance
_OBJECTIVES = (*PAPER_OBJECTIVES, "trace")
#: ``--inflate auto`` on fewer training rows than this says the factor is noisy.
_FEW_ROWS = 30
_FORMATS = ("table", "csv", "json")


class UsageError(ValueError):
    """Bad command-line input (reported as one line, exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors become :class:`UsageError` (one line, no usage dump)."""

    def error(self, message: str) -> NoReturn:  # noqa: D102
        raise UsageError(f"{message} (see '{self.prog} --help')")


# ----------------------------------------------------------------- parsing
_MAIN_EPILOG = """\
examples:
  benchsel datasets
  benchsel select --data mteb -k 5 --objective mi
  benchsel predict --data mteb --scores "ArguAna=0.552,SciFact=0.701"
  benchsel cv --data mteb --methods entropy,mi,random --k-max 15 --folds 10

Each command takes --format table|csv|json; see 'benchsel <command> --help'.
Data: the built-in matrices (mteb, merged, mmlu, benchpress) or your own CSV
(first column model names, header row benchmark names, empty/NA for missing;
comma, semicolon or tab delimited, detected from the header row; UTF-8 text).
The command runs BLAS on one thread (the matrices are small, and several BLAS
threads on a busy machine made EM many times slower); set OPENBLAS_NUM_THREADS
or OMP_NUM_THREADS to change that.
"""

_DATASETS_EPILOG = """\
examples:
  benchsel datasets
  benchsel datasets --format json
"""

_SELECT_EPILOG = """\
examples:
  benchsel select --data mteb -k 5
  benchsel select --data mteb -k 10 --nested           # any first j: the choice for j
  benchsel select --data merged -k 8 --objective mi --min-observed 10
  benchsel select --data mteb -k 5 --objective trace   # least total residual variance
  benchsel select --data mteb -k 5 --require SciFact --require "STS12"
  benchsel select --data mteb --costs costs.csv --budget 10
  benchsel select --data my_scores.csv -k 3 --format csv
  benchsel select --data mteb -k 5 --axis models      # reference models

Columns: gain = the objective's marginal gain of the step (entropy: 1/2 log of
the residual variance; MI: Eq. mi-gain; random and trace: the entropy gain of
the pick), residual_fraction = tr(residual
covariance) / tr(covariance) after the step, logdet = log det of the selected
block, mi = I(X_A; X_rest). The correlation is estimated on the whole matrix
(--estimator auto: pairwise when fully observed, else EM, Appendix G).

--costs is a CSV with columns benchmark,cost (header row); benchmarks missing
from it take --default-cost (an error when that is not given). With --budget
the Krause-Guestrin modified greedy runs (cost-effective greedy vs best single
benchmark, Appendix B) and the output says which strategy won; -k then caps the
number of picks (default: no cap).
"""

_PREDICT_EPILOG = """\
examples:
  benchsel predict --data mteb --scores "ArguAna=0.552,SciFact=0.701"
  benchsel predict --data mteb --scores "ArguAna=0.552" --level 0.8 --format csv
  benchsel predict --data benchpress --scores "GPQA Diamond=71" --transform logit
  benchsel predict --data mteb --scores-file new_model.csv
  benchsel predict --data mteb --scores "ArguAna=0.552" --inflate auto
  benchsel predict --data mteb --scores "ArguAna=0.552" --inflate 1.3

--scores-file takes either a two-column CSV "benchmark,score" (one new model)
or a CSV like the data (first column model name, header = benchmark names,
one row per new model, empty cells = not run).

The prediction is the Gaussian conditional mean given the scores you supply,
in the benchmark's original units; [lower, upper] is the central --level
interval of the conditional distribution (Eq. cond-var, ridge 1e-2), mapped
through the inverse logit with --transform logit. Given values must be finite
and within the training range widened by 10 (floored) standard deviations; one
that looks 100 times off (below the lowest 1% of the benchmark's scores while
x 100 it lies in their range, or the reverse) draws a warning naming the likely
slip, an error with --strict.

--inflate rescales the intervals: the conditional variance is multiplied by a
factor F (half-widths and sd by sqrt(F); F > 1 widens, F < 1 narrows). A number is used as given (e.g. the
inflation_mean that 'benchsel cv --variance-inflation inner' reports); 'auto'
fits F for the benchmarks you gave, on the data, by the library's inner
cross-validation (Pipeline.paper(inflation="inner")): --inner-folds
folds of the training models (seed --seed), correlation re-estimated without
each fold, held-out models predicted from the given benchmarks, F = mean of
r^2 / var (so it can come out below 1 where the plain intervals are too
wide; with few models it is noisy). The output says which factor was used.
Default: none (F = 1).
"""

_CV_EPILOG = """\
examples:
  benchsel cv --data mteb --methods entropy,mi,random --k-max 15 --folds 10 --seed 42
  benchsel cv --data merged --holdouts 0.1,0.5 --k-max 10 --out results.csv
  benchsel cv --data my_scores.csv --folds 5 --k-max 5 --format json
  benchsel cv --data mmlu --k-max 5 --levels 0.5,0.9
  benchsel cv --data mteb --k-max 5 --variance-inflation inner
  benchsel cv --data merged --k-max 5 --seed 42 --scheme paper      # the paper's own folds
  benchsel cv --data benchpress --k-max 5 --seed 42 --scheme paper --em-config early
  benchsel cv --data merged --holdouts 0.1,0.25,0.5,0.75 --jobs 2
  benchsel cv --data merged --scheduler tcp://10.0.0.5:8786

Prints mean and sd of R^2 (standardized space, Section 5.1) per method,
holdout and k; --out writes the full per-fold table (one row per method,
holdout, fold and k; .json for JSON, anything else CSV), whole or not at all:
a temporary file in the same folder is renamed into place, and if that write
fails (a full disk) no file is left, the summary is still printed and the
exit status is 1.

--levels adds interval coverage: the fraction of held-out scores inside the
central Gaussian interval at each nominal level (columns cov_50 etc.).
--variance-inflation inner also fits, on each fold's training models only, a
variance factor per method and k (--inner-folds inner folds) and reports the
coverage after it (cov_50_cal etc.) and the factor (inflation); it implies
--levels 0.5,0.8,0.9,0.95 unless --levels is given.

--jobs N runs the (holdout, fold) splits in N local processes (one BLAS
thread each); --scheduler ADDRESS runs them on every worker of a running Dask
cluster (needs the [cluster] extra: pip install 'benchsel[cluster]'). The
numbers are the same, bit for bit, however the splits are run.
"""


def parse_scores(text: str | Iterable[str], *, what: str = "benchmark") -> list[tuple[str, float]]:
    """Parse ``"BENCH=VALUE,BENCH=VALUE"`` into ``[(name, value), ...]`` (order kept, duplicates kept).

    Names may contain spaces, ``=`` (the value is after the *last* ``=``) and
    commas (a comma-separated piece without ``=`` is joined to the next one).
    Several strings (a repeated ``--scores`` option) are concatenated.
    Values must parse as floats; a non-numeric value raises ``ValueError``.
    Duplicates are checked by :func:`check_given`, not here. O(len(text)).

    Parameters
    ----------
    text : str or iterable of str
        The ``--scores`` text(s).
    what : str
        What the names are, for the messages: ``"benchmark"`` (default) or
        ``"model"`` (``--axis models``).

    Returns
    -------
    list of (str, float)
        The (name, value) pairs in the order given.

    Raises
    ------
    ValueError
        A piece without ``=``, a missing name or a non-numeric value.
    """
    texts = [text] if isinstance(text, str) else list(text)
    key = "BENCH" if what == "benchmark" else what.upper()
    items: list[tuple[str, float]] = []
    for t in texts:
        pending, last = "", ""
        for piece in t.split(","):
            if "=" not in piece:
                _decimal_comma(last, piece, what)
                if piece.strip():
                    pending += piece + ","
                last = ""
                continue
            piece = pending + piece
            pending = ""
            name, _, raw = piece.rpartition("=")
            name, raw = name.strip(), raw.strip()
            if not name:
                raise ValueError(f"missing {what} name before '=' in {piece.strip()!r}")
            try:
                value = parse_number(raw)
            except ValueError:
                raise ValueError(f"value {raw!r} for {what} {name!r} is not a number") from None
            items.append((name, value))
            last = piece.strip()
        if pending.strip():
            raise ValueError(f"expected {key}=VALUE, got {pending.rstrip(',').strip()!r}")
    if not items:
        raise ValueError(f"no scores given (expected \"{key}=VALUE,{key}=VALUE,...\")")
    return items


def _decimal_comma(previous: str, piece: str, what: str) -> None:
    """Refuse ``NAME=0`` followed by the piece ``6``: ``NAME=0,6`` is a decimal comma, not two entries."""
    head, _, whole = previous.rpartition("=")
    if whole.strip().lstrip("+-").isdigit() and piece.strip().isdigit():
        raise ValueError(f"{previous + ',' + piece.strip()!r} looks like a decimal comma in the value of {what} "
                         f"{head.strip()!r}: write {previous}.{piece.strip()} (a comma separates the scores)")


def _is_number(text: str) -> bool:
    try:
        parse_number(text)
    except ValueError:
        return False
    return True


def _int(text: str) -> int:
    try:
        if "_" in text:  # int() reads "1_0" as 10: a typo, not a number
            raise ValueError(text)
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    return value


def _float(text: str) -> float:
    try:
        value = parse_number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    return value


def _inflate(text: str) -> str | float:
    """``--inflate``: 'none', 'auto' or a finite variance factor > 0."""
    t = text.strip().lower()
    if t in ("none", "auto"):
        return t
    try:
        value = parse_number(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: expected none, auto or a number > 0") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: the factor must be a finite number > 0")
    return value


def _common(fmt: bool = True) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    if fmt:
        p.add_argument("--format", choices=_FORMATS, default="table", help="output format (default: table)")
    p.add_argument("--data-dir", default=None,
                   help="directory with the data files (default: BENCHSEL_DATA_DIR, data/, ../shared/data)")
    return p


def _data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, metavar="NAME|PATH.csv",
                   help="built-in matrix (mteb, merged, mmlu, benchpress) or a CSV file")
    p.add_argument("--estimator", choices=("auto", "pairwise", "em"), default="auto",
                   help="correlation estimator (default: auto)")


def build_parser() -> argparse.ArgumentParser:
    """The ``benchsel`` argument parser (subcommands datasets, select, predict, cv)."""
    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="benchsel",
        description="Pick the few benchmarks worth running, and predict the rest (submodular benchmark selection).",
        epilog=_MAIN_EPILOG,
        formatter_class=fmt,
    )
    parser.add_argument("--version", action="version", version=f"benchsel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="command", parser_class=_Parser)

    p = sub.add_parser("datasets", parents=[_common()], help="list the built-in score matrices",
                       description="List the built-in score matrices with their shape and observed fraction.",
                       epilog=_DATASETS_EPILOG, formatter_class=fmt)
    p.set_defaults(func=_cmd_datasets)

    p = sub.add_parser("select", parents=[_common()], help="select benchmarks (or reference models) greedily",
                       description="Greedy benchmark selection: entropy (pivoted Cholesky, Algorithm 1), "
                       "mutual information (Algorithm 2), random, or the total residual variance (Section 2), "
                       "with mandatory benchmarks and cost budgets.",
                       epilog=_SELECT_EPILOG, formatter_class=fmt)
    _data_args(p)
    p.add_argument("-k", type=_int, default=None, help="number of benchmarks to select (required unless --budget)")
    p.add_argument("--method", choices=("auto", "gaussian"), default=None,
                   help="'auto' (default): the pipeline chosen by inner cross-validation on the matrix's models; "
                   "'gaussian': the paper's greedy on the Gaussian model (default when --objective, --costs, "
                   "--budget or --axis models is given)")
    p.add_argument("--objective", choices=_OBJECTIVES, default=None,
                   help="selection objective of --method gaussian (default: entropy; trace: each step reveals "
                   "the benchmark that lowers the summed residual variance of the rest most; no --budget)")
    p.add_argument("--require", action="extend", nargs="+", default=[], metavar="NAME",
                   help="mandatory benchmark(s), selected first (repeatable)")
    p.add_argument("--costs", default=None, metavar="COSTS.csv", help="per-benchmark costs (CSV: benchmark,cost)")
    p.add_argument("--default-cost", type=_float, default=None, metavar="C",
                   help="cost of benchmarks missing from --costs")
    p.add_argument("--budget", type=_float, default=None, metavar="B", help="total cost budget (modified greedy)")
    p.add_argument("--seed", type=_int, default=0, help="seed for --objective random (default: 0)")
    p.add_argument("--min-observed", type=_int, default=None, metavar="N",
                   help="skip candidates observed for fewer than N models "
                   f"(default: min({DEFAULT_MIN_OBSERVED}, #models); 0 = keep all; "
                   "the recommended pipeline's entropy-obs keeps its own 30%%)")
    p.add_argument("--axis", choices=("benchmarks", "models"), default="benchmarks",
                   help="'models' selects reference models instead (the transposed matrix)")
    p.add_argument("--nested", action="store_true",
                   help="--method auto with one selection strategy for every size (choice 'nested'): the first j "
                   "benchmarks are its selection of j, so they can be run in order and stopped at any point")
    p.set_defaults(func=_cmd_select)

    p = sub.add_parser("predict", parents=[_common()], help="predict a new model's other scores with intervals",
                       description="Predict the benchmarks a new model has not run from the ones it has, with "
                       "central intervals from the Gaussian conditional distribution, in the original units.",
                       epilog=_PREDICT_EPILOG, formatter_class=fmt)
    _data_args(p)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--scores", action="append", metavar='"BENCH=VALUE,..."', help="the new model's scores")
    g.add_argument("--scores-file", metavar="FILE.csv", help="CSV with the new model's scores (see below)")
    p.add_argument("--method", choices=("auto", "gaussian"), default=None,
                   help="'auto' (default): the predictor chosen by inner cross-validation for the given benchmarks, "
                   "with conformal intervals; 'gaussian': the paper's conditional mean (default with --transform, "
                   "--inflate, --axis models or a several-model --scores-file)")
    p.add_argument("--level", type=_float, default=0.9, help="interval coverage in (0, 1) (default: 0.9)")
    p.add_argument("--transform", choices=("none", "logit"), default="none", help="fit in logit space (Appendix K)")
    p.add_argument("--axis", choices=("benchmarks", "models"), default="benchmarks",
                   help="'models': give a new benchmark's scores on some models, predict the other models")
    p.add_argument("--inflate", type=_inflate, default="none", metavar="none|auto|F",
                   help="multiply the conditional variance by F > 0, or fit F ('auto'); default: none")
    p.add_argument("--inner-folds", type=_int, default=None, metavar="N",
                   help="inner folds for --inflate auto (default: 3)")
    p.add_argument("--seed", type=_int, default=None, help="seed for --inflate auto (default: 0)")
    p.add_argument("--strict", action="store_true",
                   help="refuse a score that looks 100 times off (a fraction given for a percentage, or the reverse) "
                   "instead of warning about it")
    p.set_defaults(func=_cmd_predict)

    p = sub.add_parser("cv", parents=[_common()], help="cross-validate selection + imputation (Section 5.1)",
                       description="The paper's 10-fold cross-validation protocol: R^2 of Gaussian imputation "
                       "from the selected benchmarks, per method, holdout fraction and k.",
                       epilog=_CV_EPILOG, formatter_class=fmt)
    _data_args(p)
    p.add_argument("--methods", default="entropy,mi,random",
                   help="comma-separated objectives (entropy, mi, random: Gaussian imputation), "
                   "'auto' (the recommended pipeline) or STRATEGY+PREDICTOR pipelines, e.g. lasso+ridge "
                   "(default: entropy,mi,random)")
    p.add_argument("--holdouts", default="0.1", help="comma-separated holdout fractions in (0, 1) (default: 0.1)")
    p.add_argument("--k-max", type=_int, default=None,
                   help="largest subset size (default: 15, at most #benchmarks - 1)")
    p.add_argument("--folds", type=_int, default=None, help="number of folds (default: 10, at most #models)")
    p.add_argument("--seed", type=_int, default=42, help="seed (default: 42)")
    p.add_argument("--scheme", choices=("nested", "paper"), default="nested",
                   help="fold streams: 'paper' = the paper's code release (with --seed 42 its own folds); "
                   "'nested' = training sets nested across holdouts (default)")
    p.add_argument("--em-config", choices=("released", "early"), default="released",
                   help="EM configuration (default: released; the paper's BenchPress numbers come from 'early')")
    p.add_argument("--transform", choices=("none", "logit"), default="none", help="logit-space pipeline (Appendix K)")
    p.add_argument("--min-observed", type=_int, default=None, metavar="N",
                   help="skip candidates observed for fewer than N training models (default: none for the paper's "
                   f"pipelines and named pairs, as in the paper's protocol; {DEFAULT_MIN_OBSERVED} for auto; "
                   "0: none for every method)")
    p.add_argument("--levels", default=None, metavar="L1,L2,...",
                   help="nominal interval levels in (0, 1) for coverage columns (e.g. 0.5,0.8,0.9,0.95)")
    p.add_argument("--variance-inflation", choices=("none", "inner"), default="none",
                   help="'inner': fit a variance factor on each fold's training models and report calibrated coverage")
    p.add_argument("--inner-folds", type=_int, default=None, metavar="N",
                   help="inner folds for --variance-inflation inner (default: 3)")
    p.add_argument("--out", default=None, metavar="FILE", help="write the full per-fold table here (.csv or .json)")
    p.add_argument("--jobs", type=_int, default=1, metavar="N",
                   help="local worker processes over the splits (default: 1, serial)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the splits on a Dask cluster, e.g. tcp://host:8786 (needs the [cluster] extra)")
    p.set_defaults(func=_cmd_cv)
    return parser


# ------------------------------------------------------------------ inputs
def _load(data: str, *, data_dir: str | None, axis: str = "benchmarks"):
    """A built-in matrix by name or a user CSV by path (transposed for --axis models)."""
    if data in DATASETS:
        matrix = load_matrix(data, data_dir=data_dir)
    else:
        path = Path(data)
        looks_like_path = path.suffix.lower() in {".csv", ".tsv", ".txt"} or os.sep in data or path.exists()
        if not looks_like_path:
            close = suggest_names(data, list(DATASETS))
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise UsageError(
                f"unknown dataset {data!r}{hint} (built-in: {', '.join(DATASETS)}; or give a path to a CSV file)"
            )
        if path.is_dir():
            raise UsageError(f"--data {data} is a folder; give a CSV file")
        if not path.is_file():
            raise UsageError(f"data file not found: {data}")
        matrix = load_csv(path)  # delimiter detected: comma, semicolon or tab
    if axis == "models":
        matrix = matrix.transpose().drop_empty()
    rows, cols = ("models", "benchmarks") if axis == "benchmarks" else ("benchmarks", "models")
    if matrix.shape[0] < 2:  # before any column check: with one row every column is constant
        raise UsageError(f"{data} has {matrix.shape[0]} {rows[:-1]} (x {matrix.shape[1]} {cols}): every command needs "
                         f"at least 2 {rows}, to see how the {cols} vary together")
    return matrix


def _what(axis: str) -> str:
    return "model" if axis == "models" else "benchmark"


def _read_costs(path: str, names: Sequence[str], default: float | None, what: str) -> np.ndarray:
    """Per-candidate costs from a ``benchmark,cost`` CSV (header row required)."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"costs file {path} is a folder; give a CSV file")
    if not p.is_file():
        raise UsageError(f"costs file not found: {path}")
    rows = [r for r in read_csv_rows(p)[0] if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise UsageError(f"costs file {path}: expected a header row and one '{what},cost' row per {what}")
    if len(rows[0]) == 2 and _is_number(rows[0][1]):
        raise UsageError(f"costs file {path}: the first line {','.join(rows[0])!r} looks like a cost, but it is read "
                         f"as the header; add a header row '{what},cost'")
    pos = {n: j for j, n in enumerate(names)}
    costs = np.full(len(names), np.nan)
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != 2:
            raise UsageError(f"costs file {path}, line {line}: expected 2 fields ({what},cost), got {len(row)}")
        name, raw = row[0].strip(), row[1].strip()
        if name not in pos:
            err = unknown_name_error(name, names, what)
            raise UsageError(f"costs file {path}, line {line}: {err}")
        try:
            value = parse_number(raw)
        except ValueError:
            raise UsageError(f"costs file {path}, line {line}: cost {raw!r} for {name!r} is not a number") from None
        if not (math.isfinite(value) and value > 0):
            raise UsageError(f"costs file {path}, line {line}: cost of {name!r} must be a positive finite number, "
                             f"got {raw}")
        if not np.isnan(costs[pos[name]]):
            raise UsageError(f"costs file {path}, line {line}: {what} {name!r} is listed twice")
        costs[pos[name]] = value
    missing = [names[j] for j in np.flatnonzero(np.isnan(costs))]
    if missing:
        if default is None:
            shown = ", ".join(map(repr, missing[:5])) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise UsageError(f"costs file {path} has no cost for {len(missing)} {what}(s): {shown}; "
                             "add them or pass --default-cost")
        costs[np.isnan(costs)] = default
    return costs


def _read_scores_file(path: str) -> tuple[list[tuple[str, float]] | None, Any]:
    """Read ``--scores-file``: (pairs, None) for a benchmark,score file, else (None, DataFrame)."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"scores file {path} is a folder; give a CSV file")
    if not p.is_file():
        raise UsageError(f"scores file not found: {path}")
    rows = [r for r in read_csv_rows(p)[0] if any(c.strip() for c in r)]
    if not rows:
        raise UsageError(f"scores file {path} is empty")
    head = [h.strip().lower() for h in rows[0]]
    if len(head) == 2 and head[0] in {"benchmark", "name", "model"} and head[1] in {"score", "value"}:
        pairs: list[tuple[str, float]] = []
        for line, row in enumerate(rows[1:], start=2):
            if len(row) != 2:
                raise UsageError(f"scores file {path}, line {line}: expected 2 fields, got {len(row)}")
            raw = row[1].strip()
            try:
                value = parse_number(raw) if raw.lower() not in {"", "na", "nan"} else float("nan")
            except ValueError:
                raise UsageError(f"scores file {path}, line {line}: value {raw!r} for {row[0].strip()!r} "
                                 "is not a number") from None
            pairs.append((row[0].strip(), value))
        if not pairs:
            raise UsageError(f"scores file {path} lists no scores")
        return pairs, None
    m = load_csv(p, allow_empty=True)
    return None, m.to_frame()


def _check_frame(frame: Any, matrix: Any, what: str = "benchmark", *, strict: bool = False) -> None:
    """Validate a many-row scores table (names, duplicates, values) without fitting."""
    row_what = "model" if what == "benchmark" else "benchmark"
    for i in range(frame.shape[0]):
        row = [(str(c), v) for c, v in zip(frame.columns, frame.iloc[i].to_numpy(dtype=float))]
        try:
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always", ScaleWarning)
                given = check_given(row, matrix, what=what, skip_missing=True, strict=strict)
        except ValueError as exc:
            raise ValueError(f"{row_what} {str(frame.index[i])!r}: {exc}") from None
        for w in said:  # each warning names the model it is about
            warnings.warn(f"{row_what} {str(frame.index[i])!r}: {w.message}", w.category, stacklevel=2)
        if not given:
            raise ValueError(f"{row_what} {str(frame.index[i])!r}: no scores given (every entry is empty)")


def _parse_list(text: str, what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UsageError(f"--{what} is empty")
    dup = sorted({t for t in items if items.count(t) > 1})
    if dup:
        raise UsageError(f"--{what} lists {', '.join(dup)} twice")
    return items


def _parse_fractions(text: str, what: str, item: str, example: str) -> list[float]:
    """``--what`` as distinct numbers strictly between 0 and 1."""
    values: list[float] = []
    for t in _parse_list(text, what):
        try:
            value = parse_number(t)
        except ValueError:
            raise UsageError(f"{item} {t!r} (--{what}) is not a number") from None
        if not 0.0 < value < 1.0:
            raise UsageError(f"{item} {t} is out of range (--{what}): it must be strictly between 0 and 1 ({example})")
        if value in values:
            raise UsageError(f"--{what} lists {value:g} twice")
        values.append(value)
    return values


# ----------------------------------------------------------------- outputs
def _fmt_num(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else ""
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if x != 0 and (abs(x) >= 1e6 or abs(x) < 1e-4):
            return f"{x:.3e}"
        return f"{x:.4f}"
    return str(x)


def _table(df) -> str:
    """Plain fixed-width text table (numbers right-aligned, text left-aligned)."""
    cols = list(df.columns)
    cells = [[_fmt_num(v) for v in df[c].tolist()] for c in cols]
    numeric = [df[c].dtype.kind in "fiu" for c in cols]
    widths = [max([len(str(c))] + [len(v) for v in col]) for c, col in zip(cols, cells)]
    def line(vals: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(vals, widths, numeric)).rstrip()
    out = [line([str(c) for c in cols]), line(["-" * w for w in widths])]
    out += [line([col[i] for col in cells]) for i in range(len(df))]
    return "\n".join(out)


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return [_jsonable(v) for v in x.tolist()]
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return None if not math.isfinite(float(x)) else float(x)
    return x


def _records(df) -> list[dict[str, Any]]:
    return [_jsonable(r) for r in df.to_dict(orient="records")]


def _emit(df, fmt: str, *, meta: dict[str, Any], header: Sequence[str] = (), footer: Sequence[str] = (),
          key: str = "rows", stdout: TextIO | None = None) -> None:
    """Write ``df`` as a table (with header/footer lines), CSV (rows only) or JSON (meta + rows)."""
    out = stdout or sys.stdout
    if fmt == "csv":
        df.to_csv(out, index=False, lineterminator="\n")
    elif fmt == "json":
        out.write(json.dumps({**_jsonable(meta), key: _records(df)}, indent=2) + "\n")
    else:
        text = [*header, _table(df), *footer]
        out.write("\n".join(text) + "\n")


def _describe(matrix, data: str, axis: str = "benchmarks") -> str:
    m, n = matrix.shape
    what = "models" if axis == "benchmarks" else "benchmarks"
    cols = "benchmarks" if axis == "benchmarks" else "models"
    return f"{data}: {m} {what} x {n} {cols}, {100 * matrix.observed_fraction:.1f}% observed"


def _note(text: str) -> None:
    print(f"benchsel: {text}", file=sys.stderr)


def _slow_em_note(matrix, estimator: str, what: str) -> None:
    """Say on stderr when the correlation estimate is an EM over many columns (the slow case).

    Where the "auto" rule replaces EM by the floored pairwise correlation
    (EM would take too long) the pipeline says so itself (:class:`_LibraryNotes`).
    """
    m, n = matrix.shape
    method = Correlation(estimator).resolved(matrix.scores) if estimator == "auto" else estimator
    if estimator == "em" and em_too_costly(m, n):
        _note(f"EM on {m} {'models' if what == 'benchmark' else 'benchmarks'} x {n} {what}s can take very long "
              "(O(N^3) work per iteration); --estimator auto uses the floored pairwise correlation here")
    elif method == "em" and n > 150 and not matrix.observed.all():
        _note(f"EM on {n} {what}s with missing entries can take tens of seconds; --estimator pairwise is much faster")


class _LibraryNotes(logging.Handler):
    """Prints the library's notes (level INFO under ``benchsel_lib``) as ``benchsel: ...`` lines on stderr.

    The pipelines log, before the work, the choices they make because of a
    matrix's size (EM replaced by the floored pairwise correlation, a search
    run on subsamples); ``select`` and ``predict`` show them as they come.
    """

    def emit(self, record: logging.LogRecord) -> None:  # noqa: D102
        _note(record.getMessage())


@contextmanager
def _library_notes() -> Iterator[None]:
    """Show the library's notes on stderr inside the block (:class:`_LibraryNotes`)."""
    logger = logging.getLogger("benchsel_lib")
    handler, level = _LibraryNotes(logging.INFO), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Show warnings inside the block as one line each, ``benchsel: warning: ...`` on stderr.

    The library reports data problems (a constant column, mixed 0-1 and
    0-100 scales: :class:`~benchsel_lib.data.matrix.ScoreWarning`) and cache
    repairs (:class:`~benchsel_lib.protocol.cache.CacheWarning`) as warnings;
    a command line shows the message, not the source line that raised it,
    and each message once (the warnings of parallel workers arrive here too,
    :mod:`~benchsel_lib.protocol.sweep`).
    """
    said: set[str] = set()

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        text = _cut(" ".join(str(message).split()))
        if text not in said:
            said.add(text)
            _note(f"warning: {text}")

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


# ---------------------------------------------------------------- commands
def _cmd_datasets(args: argparse.Namespace) -> int:
    rows = []
    for name in DATASETS:
        m = load_matrix(name, data_dir=args.data_dir)
        rows.append({"name": name, "models": m.shape[0], "benchmarks": m.shape[1],
                     "observed_fraction": round(m.observed_fraction, 4), "source": m.source})
    df = pd.DataFrame(rows)
    _emit(df, args.format, meta={}, key="datasets",
          footer=["", "Use any of these with --data NAME, or pass --data PATH.csv for your own matrix."])
    return 0


def _cmd_select(args: argparse.Namespace) -> int:
    paper_only = (args.objective is not None or args.costs is not None or args.budget is not None
                  or args.axis == "models")
    if args.method is None:
        args.method = "gaussian" if paper_only else "auto"
    if args.method == "auto" and paper_only:
        raise UsageError("--objective, --costs, --budget and --axis models are options of --method gaussian")
    if args.nested and args.method != "auto":
        raise UsageError("--nested is an option of --method auto (the paper's greedy selections are nested already)")
    if args.objective is None:
        args.objective = "entropy"
    if args.budget is not None and args.objective not in COST_AWARE:
        raise UsageError(f"--objective {args.objective} has no cost-aware form; with --budget use "
                         f"{', '.join(o for o in COST_AWARE if o in _OBJECTIVES)}")
    matrix = _load(args.data, data_dir=args.data_dir, axis=args.axis)
    what = _what(args.axis)
    names = list(matrix.benchmarks)
    n_cand = len(names)
    # --- options
    if args.budget is None and args.costs is not None:
        raise UsageError("--costs needs --budget")
    if args.default_cost is not None and args.costs is None:
        raise UsageError("--default-cost needs --costs")
    if args.default_cost is not None and not (math.isfinite(args.default_cost) and args.default_cost > 0):
        raise UsageError(f"--default-cost must be a positive number, got {args.default_cost:g}")
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    if args.budget is not None and not (math.isfinite(args.budget) and args.budget > 0):
        raise UsageError(f"--budget must be a positive number, got {args.budget:g}")
    if args.k is None:
        if args.budget is None:
            raise UsageError("-k is required (or give --budget)")
        k = n_cand
    else:
        k = args.k
        if not 1 <= k <= n_cand:
            raise UsageError(f"-k {k} is out of range: {args.data} has {n_cand} {what}s, choose 1..{n_cand}")
        if k == n_cand and args.method == "auto":
            raise UsageError(f"-k {k} leaves nothing to predict: {args.data} has {n_cand} {what}s and --method auto "
                             f"chooses its selection by how well it predicts the rest; choose 1..{n_cand - 1} "
                             "(--method gaussian ranks them all)")
    twice = next((b for i, b in enumerate(args.require) if b in args.require[:i]), None)
    if twice is not None:
        raise UsageError(f"--require lists {what} {twice!r} twice")
    require = name_positions(args.require, names, what=what)  # column indices of --require
    if len(require) > k:
        raise UsageError(f"--require names {len(require)} {what}s but -k is {k}")
    costs = None
    if args.costs is not None:
        costs = _read_costs(args.costs, names, args.default_cost, what)
    elif args.budget is not None:
        costs = np.ones(n_cand)
    if costs is not None and require and not within_budget(costs[require].sum(), args.budget):
        raise UsageError(f"the required {what}s cost {costs[require].sum():g}, more than --budget {args.budget:g}")
    # --- thinly observed candidates (their correlations are noise)
    counts = matrix.observed.sum(axis=0)
    if args.min_observed is None:
        min_obs = min(DEFAULT_MIN_OBSERVED, matrix.shape[0])
    else:
        if args.min_observed < 0:
            raise UsageError(f"--min-observed must be >= 0, got {args.min_observed}")
        min_obs = args.min_observed
    thin = np.flatnonzero(too_thin(counts, min_obs, mandatory=require)).tolist()
    available = n_cand - len(thin)
    if args.k is not None and k > available:
        raise UsageError(f"-k {k} is larger than the {available} {what}s left after --min-observed {min_obs}; "
                         "lower -k or --min-observed")
    if available == 0:
        raise UsageError(f"no {what}s are left after --min-observed {min_obs}; lower --min-observed")
    if costs is not None and (args.k is None or k > len(require)):
        cand = [j for j in range(n_cand) if j not in require and j not in thin]
        if not cand or not within_budget(costs[require].sum() + costs[cand].min(), args.budget):
            raise UsageError(f"no {what} is affordable within --budget {args.budget:g}"
                             + (f" after the required {what}s" if require else "")
                             + (f" (cheapest candidate: {costs[cand].min():g})" if cand else ""))
    if thin:  # after the checks, so that an error stays one line
        shown = (", ".join(f"{names[j]} ({counts[j]})" for j in thin[:8])
                 + (f" and {len(thin) - 8} more" if len(thin) > 8 else ""))
        _note(f"excluding {len(thin)} candidate {what}(s) observed for fewer than {min_obs} "
              f"{'models' if what == 'benchmark' else 'benchmarks'} (--min-observed): {shown}")
    k = min(k, available)
    if args.method == "auto":  # its own correlation estimates, inside the inner cross-validation
        return _select_auto(args, matrix, k, require, min_obs, thin)
    # --- the paper's pipeline: estimate and select
    _slow_em_note(matrix, args.estimator, what)
    pipe = Pipeline.paper(
        k if args.k is not None or costs is None else None, objective=args.objective, estimator=args.estimator,
        initial=[names[j] for j in require], min_observed=min_obs if min_obs > 0 else None,
        costs=None if costs is None else dict(zip(names, costs.tolist())), budget=args.budget, seed=args.seed,
    ).fit(matrix)
    sel = pipe.selection_
    estimator = pipe.component("correlation").resolved(matrix.scores)
    order = list(sel.order)
    steps = len(order)
    df = pd.DataFrame({
        "step": np.arange(1, steps + 1),
        what: [names[j] for j in order],
        "required": [j in require for j in order],
    })
    if costs is not None:
        df["cost"] = costs[order]
    df["gain"] = np.asarray(sel.gains, dtype=float)[:steps]
    df["residual_fraction"] = np.asarray(sel.residual_fraction, dtype=float)[:steps]
    df["logdet"] = np.asarray(sel.logdet, dtype=float)[:steps]
    if sel.mi is not None:
        df["mi"] = np.asarray(sel.mi, dtype=float)[:steps]
    df["n_observed"] = counts[order].astype(int)
    if not require:
        df = df.drop(columns="required")
    meta: dict[str, Any] = {
        "data": args.data, "axis": args.axis, "shape": list(matrix.shape),
        "observed_fraction": matrix.observed_fraction, "objective": args.objective,
        "estimator": estimator, "k": args.k, "min_observed": min_obs, "seed": args.seed,
        "required": [names[j] for j in require], "excluded": [names[j] for j in thin],
    }
    header = [
        _describe(matrix, args.data, args.axis),
        f"objective: {args.objective}   correlation: {estimator}   "
        f"{'reference models' if what == 'model' else 'benchmarks'} selected: {steps}",
        "",
    ]
    footer = []
    reach, meta["reach"] = _reach_line(matrix, order, what)
    if steps:
        footer.append("")
        footer.append(f"residual variance after {steps} pick(s): "
                      f"{100 * df['residual_fraction'].iloc[-1]:.1f}% of the total")
    footer.append(reach)
    if args.budget is not None:
        total = float(costs[order].sum())
        strategy = {"cost-effective": "cost-effective greedy",
                    "singleton": "best single " + what}.get(sel.strategy, sel.strategy)
        meta.update(budget=args.budget, total_cost=total, strategy=sel.strategy)
        footer.append(f"budget {args.budget:g}: {strategy} won (modified greedy, Appendix B); total cost {total:g}")
        if args.objective != "entropy":
            footer.append("note: the 1/2(1-1/e) budget guarantee holds for shifted entropy; "
                          "for mi/random this is a heuristic")
    _emit(df, args.format, meta=meta, header=header, footer=footer, key="selection")
    return 0


def _as_table(pred: pd.DataFrame) -> pd.DataFrame:
    """A prediction frame of :meth:`Pipeline.predict` as the command's table (``predicted``, ``n_train``)."""
    out = pred.reset_index().rename(columns={"mean": "predicted", "n_observed": "n_train"})
    out.attrs = dict(pred.attrs)
    return out


def _cmd_predict(args: argparse.Namespace) -> int:
    if not (0.0 < args.level < 1.0):
        raise UsageError(f"--level must be strictly between 0 and 1, got {args.level:g}")
    paper_only = args.transform != "none" or args.inflate != "none" or args.axis == "models"
    if args.method == "auto" and paper_only:
        raise UsageError("--transform, --inflate and --axis models are options of --method gaussian")
    if args.method != "gaussian" and not paper_only:
        pairs0, frame0 = (parse_scores(args.scores), None) if args.scores else _read_scores_file(args.scores_file)
        if frame0 is not None and frame0.shape[0] == 1:
            pairs0, frame0 = [(str(c), float(v)) for c, v in frame0.iloc[0].items()], None
        if frame0 is None:
            return _predict_auto(args, pairs0)
        if args.method == "auto":
            raise UsageError("--method auto predicts one model at a time: give one model's scores "
                             "(or use --method gaussian for a several-model file)")
    auto = args.inflate == "auto"
    if not auto and (args.inner_folds is not None or args.seed is not None):
        raise UsageError("--inner-folds and --seed are for --inflate auto")
    seed = 0 if args.seed is None else args.seed
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    inflation: str | float = 1.0 if args.inflate == "none" else "inner" if args.inflate == "auto" else args.inflate
    matrix = _load(args.data, data_dir=args.data_dir, axis=args.axis)
    what = _what(args.axis)
    rows_what = "models" if what == "benchmark" else "benchmarks"
    inner_folds = min(3, matrix.shape[0]) if args.inner_folds is None else args.inner_folds  # never one not passed
    if auto and not 2 <= inner_folds <= matrix.shape[0]:
        raise UsageError(f"--inner-folds {inner_folds} is out of range: choose 2..{matrix.shape[0]} "
                         f"({args.data} has {matrix.shape[0]} {rows_what})")
    pairs, frame = ((parse_scores(args.scores, what=what), None) if args.scores
                    else _read_scores_file(args.scores_file))
    transform = None if args.transform == "none" else args.transform
    if frame is not None and frame.shape[0] == 1:  # a one-model file: same output as --scores
        pairs = [(str(c), float(v)) for c, v in frame.iloc[0].items()]
        frame = None
    # validate the input before the (possibly slow) correlation estimate
    if frame is None:
        if not check_given(pairs, matrix, what=what, skip_missing=args.scores_file is not None, strict=args.strict):
            raise UsageError("no scores given (every entry is empty)")
    else:
        _check_frame(frame, matrix, what, strict=args.strict)
    _slow_em_note(matrix, args.estimator, what)
    pipe = Pipeline.paper(objective="mi", estimator=args.estimator, logit=transform == "logit", inflation=inflation,
                          inner_folds=inner_folds, seed=seed)
    first = [n for n, v in pairs if not math.isnan(float(v))] if frame is None else \
        [c for c in frame.columns if frame[c].notna().iloc[0]]
    pipe.fit(matrix, revealed=[str(b) for b in first])
    estimator = pipe.component("correlation").resolved(pipe.scaling_.values(matrix.scores))
    lo_pct, hi_pct = 50 * (1 - args.level), 50 * (1 + args.level)
    header = [_describe(matrix, args.data, args.axis)]
    if frame is None:
        df = _as_table(pipe.predict(pairs, level=args.level, skip_missing=args.scores_file is not None,
                                    strict=args.strict))
        used = df.attrs["used"]
        ignored = df.attrs["ignored"]
        meta = {"data": args.data, "axis": args.axis, "level": args.level, "transform": transform,
                "estimator": estimator, "used": used, "ignored": ignored}
        given_line = f"conditioned on {len(used)} given score(s): " + ", ".join(f"{k}={v:g}" for k, v in used.items())
        factors: dict[str, float] = {"": df.attrs["inflation"]}
        meta["inflation"] = df.attrs["inflation"]
    else:
        with warnings.catch_warnings():  # said above, with the model's name (_check_frame)
            warnings.simplefilter("ignore", ScaleWarning)
            df = _as_table(pipe.predict(frame, level=args.level, strict=args.strict))
        used = df.attrs["used"]
        meta = {"data": args.data, "axis": args.axis, "level": args.level, "transform": transform,
                "estimator": estimator, "used": used}
        given_line = "conditioned on: " + "; ".join(f"{m}: {len(u)} score(s) ({', '.join(u)})" for m, u in used.items())
        ignored = []
        factors = df.attrs["inflation"]
        meta["inflation"] = factors
    meta["inflation_mode"] = {"none": "none", "auto": "auto"}.get(str(args.inflate), "given")
    if auto:
        meta.update(inner_folds=inner_folds, seed=seed)
    infl_line = None
    if args.inflate != "none":
        how = (f"auto: inner {inner_folds}-fold CV on the {matrix.shape[0]} training {rows_what}, seed {seed}"
               + (f"; noisy with so few {rows_what}" if matrix.shape[0] < _FEW_ROWS else "")
               if auto else "given")
        values = sorted(set(factors.values()))
        if len(values) == 1:
            f = values[0]
            infl_line = f"variance inflation: {f:.4g} ({how}); interval half-widths x {math.sqrt(f):.4g}"
        else:
            infl_line = (f"variance inflation ({how}, one per set of given scores): "
                         + ", ".join(f"{m} {f:.4g}" for m, f in factors.items()))
    df = df.rename(columns={"benchmark": what}) if what != "benchmark" else df
    header += [given_line, f"interval: central {100 * args.level:g}% ({lo_pct:g}%..{hi_pct:g}%) of the Gaussian "
               f"conditional distribution; correlation: {estimator}"
               + ("; logit space" if transform else "")]
    if infl_line:
        header.append(infl_line)
    header.append("")
    footer = [f"(ignored empty entries: {', '.join(ignored)})"] if ignored else []
    if args.format == "csv":  # keep stdout a clean table; say what was used on stderr
        _note(given_line)
        if infl_line:
            _note(infl_line)
    _emit(df, args.format, meta=meta, header=header, footer=footer, key="predictions")
    return 0


def _run_cv(matrix: Any, run: dict[str, Any], *, jobs: int, scheduler: str | None) -> Any:
    """``cross_validate`` on ``jobs`` local processes, or on the Dask scheduler at ``scheduler``."""
    with ExitStack() as stack:
        if scheduler is None:
            return cross_validate(matrix, n_jobs=jobs, **run)
        try:
            client = stack.enter_context(dask_backend(scheduler))
        except ImportError:
            raise UsageError("--scheduler needs dask.distributed: pip install 'benchsel[cluster]'") from None
        except ConnectionError as exc:
            raise UsageError(f"--scheduler: {_one_line(exc)}") from None
        _note(f"running on the Dask cluster at {scheduler} ({len(client.scheduler_info()['workers'])} workers)")
        return cross_validate(matrix, n_jobs=None, **run)


def _fit_recommended(pipe: Pipeline, matrix: Any, **fit: Any) -> Pipeline:
    """``pipe.fit(matrix, **fit)``, without the warning that repeats the search's note.

    When the inner search cannot run (too few models) the pipeline warns and
    keeps the reason as its choice's note; the command prints that note in its
    output, so the warning would say it twice.  Every other warning is shown
    as it would have been.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe.fit(matrix, **fit)
    note = pipe.choice_.note if pipe.choice_ is not None else ""
    shown: dict = {}  # the warnings registry of the re-emitted warnings: each shown as often as before
    for w in caught:
        if not (note and str(w.message).endswith(note)):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, registry=shown)
    return pipe


def _recommend_lines(pipe: PipelineSearch) -> list[str]:
    """What the search chose and the inner-CV R^2 of every candidate at its k (its ``cv_results_``)."""
    rec = pipe.choice_
    table = pipe.cv_results_
    at = table[table["k"] == rec.k]
    cands = ", ".join(f"{r.strategy}+{r.predictor} {r.r2:.3f}" for r in at.itertuples())
    how = (f"chosen by inner cross-validation on the matrix's models; R^2 {rec.inner_r2:.3f}"
           if np.isfinite(rec.inner_r2) else "not chosen by inner cross-validation: see the note")
    lines = [f"pipeline: {rec.name} ({how})"]
    if rec.weights:
        lines.append("stack weights: " + ", ".join(f"{n} {w:.3f}" for n, w in rec.weights.items()))
    if cands:
        lines.append(f"inner-CV R^2 at k={rec.k}: {cands}")
    if rec.note:
        lines.append(f"note: {rec.note}")
    return lines


def _predict_auto(args: argparse.Namespace, pairs) -> int:
    """``benchsel predict`` with the recommended predictor and conformal intervals."""
    seed = 0 if args.seed is None else args.seed
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    matrix = _load(args.data, data_dir=args.data_dir)
    inner = min(5, matrix.shape[0]) if args.inner_folds is None else args.inner_folds  # never one not passed
    if not 2 <= inner <= matrix.shape[0]:
        raise UsageError(f"--inner-folds {inner} is out of range: choose 2..{matrix.shape[0]} "
                         f"({args.data} has {matrix.shape[0]} models)")
    given = check_given(pairs, matrix, skip_missing=args.scores_file is not None, strict=args.strict)
    if not given:
        raise UsageError("no scores given (every entry is empty)")
    pipe = _fit_recommended(Pipeline.auto(k=len(given), seed=seed, search_folds=inner), matrix, revealed=list(given))
    pred = pipe.predict(given, level=args.level, strict=args.strict)
    rec = pipe.choice_
    out = pd.DataFrame({"benchmark": pred.index, "predicted": pred["mean"].to_numpy(),
                        "lower": pred["lower"].to_numpy(), "upper": pred["upper"].to_numpy(),
                        "n_observed": pred["n_observed"].to_numpy()})
    lines = _recommend_lines(pipe)
    given_line = f"conditioned on {len(given)} given score(s): " + ", ".join(f"{k}={v:g}" for k, v in given.items())
    interval = (f"interval: {100 * args.level:g}% split-conformal from the inner-CV residuals of the chosen predictor"
                if np.isfinite(out[["lower", "upper"]].to_numpy()).any() else
                "interval: none (no inner cross-validation residuals to calibrate it: see the note)")
    header = [_describe(matrix, args.data), given_line, *lines, interval, ""]
    meta = {"data": args.data, "method": "auto", "pipeline": rec.name, "inner_r2": rec.inner_r2,
            "scores": _records(pipe.cv_results_.query("k == @rec.k")), "weights": rec.weights, "note": rec.note,
            "level": args.level, "used": given, "inner_folds": inner, "seed": seed}
    if args.format == "csv":
        for line in [given_line, *lines]:
            _note(line)
    _emit(out, args.format, meta=meta, header=header, key="predictions")
    return 0


def _select_auto(args: argparse.Namespace, matrix: Any, k: int, require: list[int], min_obs: int,
                 thin: list[int]) -> int:
    """``benchsel select`` with the recommended pipeline."""
    names = list(matrix.benchmarks)
    choice = "nested" if args.nested else DEFAULT_RULE
    pipe = _fit_recommended(Pipeline.auto(k, seed=args.seed, initial=[names[j] for j in require],
                                          min_observed=min_obs if min_obs > 0 else None, choice=choice), matrix)
    rec = pipe.choice_
    order = rec.selection
    counts = matrix.observed.sum(axis=0)
    df = pd.DataFrame({"step": np.arange(1, len(order) + 1), "benchmark": [names[j] for j in order],
                       "n_observed": counts[order].astype(int)})
    if require:
        df.insert(2, "required", [j in require for j in order])
    lines = _recommend_lines(pipe)
    if args.nested:
        lines.insert(1, f"--nested: {rec.strategy} at every size, so the first j steps are its selection of j")
    reach, reached = _reach_line(matrix, order, "benchmark")
    lines.append(reach)
    header = [_describe(matrix, args.data), *lines, ""]
    meta = {"data": args.data, "method": "auto", "choice": choice, "pipeline": rec.name, "strategy": rec.strategy,
            "predictor": rec.predictor, "inner_r2": rec.inner_r2, "k": k, "seed": args.seed,
            "scores": _records(pipe.cv_results_.query("k == @rec.k")), "weights": rec.weights, "note": rec.note,
            "min_observed": min_obs, "required": [names[j] for j in require], "excluded": [names[j] for j in thin],
            "reach": reached}
    if args.format == "csv":
        for line in lines:
            _note(line)
    _emit(df, args.format, meta=meta, header=header, key="selection")
    return 0


def _check_out(out: str) -> Path:
    """The ``--out`` target, checked before any work: not a folder, in a writable folder, writable if it exists.

    Parameters
    ----------
    out : str
        The ``--out`` argument.

    Returns
    -------
    Path
        The target with symbolic links resolved (the file :func:`_write_atomic` replaces).

    Raises
    ------
    UsageError
        The path is a folder or not a regular file, its folder does not exist,
        is not a folder or is not writable (a file cannot be created there),
        or the existing file is read-only.
    """
    given = Path(out)
    if given.is_dir():
        raise UsageError(f"cannot write --out {out}: it is a folder")
    target = given.resolve()
    folder = target.parent
    if not folder.exists():
        raise UsageError(f"cannot write --out {out}: the folder does not exist")
    if not folder.is_dir():
        raise UsageError(f"cannot write --out {out}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write --out {out}: the folder {folder} is not writable")
    if target.exists():
        if not target.is_file():
            raise UsageError(f"cannot write --out {out}: it exists and is not a regular file")
        if not os.access(target, os.W_OK):
            raise UsageError(f"cannot write --out {out}: the file is not writable")
    probe = _temp_name(target)  # what the permission bits do not tell (a read-only mount, a special folder)
    made = False
    try:
        with open(probe, "x"):
            made = True
    except OSError as exc:
        raise UsageError(f"cannot write --out {out}: {exc.strerror or _one_line(exc)}") from None
    finally:
        if made:
            with suppress(OSError):
                os.unlink(probe)
    return target


def _temp_name(target: Path) -> Path:
    """A fresh hidden name next to ``target`` for its temporary file."""
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")


def _write_atomic(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` all or nothing: a temporary file in the same folder, renamed into place.

    Parameters
    ----------
    target : Path
        The file to create or replace.
    text : str
        Its new content (written as UTF-8).

    Raises
    ------
    OSError
        The write, flush or rename failed (a full disk, a file-size limit,
        ...); the temporary file is removed and ``target`` is left as it was.
    """
    tmp = _temp_name(target)
    created = False
    try:  # an interrupt (Ctrl-C, SIGTERM: a BaseException) anywhere in here leaves no temporary file
        with open(tmp, "x", encoding="utf-8", newline="") as fh:  # 0o666 minus umask
            created = True
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        if created:
            with suppress(OSError):
                os.unlink(tmp)
        raise


def _cv_table_text(df: Any, json_out: bool) -> str:
    """The full per-fold table of ``cv --out``: CSV, or a JSON list of records when ``json_out``."""
    full = df.copy()
    if "selected" in full.columns:
        full["selected"] = [";".join(map(str, s)) if isinstance(s, (tuple, list)) else s for s in full["selected"]]
    if json_out:
        return json.dumps(_records(full), indent=1) + "\n"
    return full.to_csv(index=False, lineterminator="\n")


def _floors(methods: Sequence[str], min_observed: int | None) -> dict[str, int]:
    """Each method's ``--min-observed`` as :meth:`Pipeline.from_name` applies it (0: every benchmark a candidate)."""
    if min_observed is not None:
        return {m: int(min_observed) for m in methods}
    return {m: DEFAULT_MIN_OBSERVED if m == "auto" else 0 for m in methods}


def _cmd_cv(args: argparse.Namespace) -> int:
    out_path = None if args.out is None else _check_out(args.out)  # before the data and the work
    matrix = _load(args.data, data_dir=args.data_dir)
    methods = _parse_list(args.methods, "methods")
    for m in methods:
        try:
            parse_pipeline(m) if m not in PAPER_OBJECTIVES else None
        except ValueError as exc:
            raise UsageError(f"unknown method {m!r} in --methods; choose from {', '.join(PAPER_OBJECTIVES)}, auto "
                             f"or STRATEGY+PREDICTOR ({exc})") from None
    holdouts = _parse_fractions(args.holdouts, "holdouts", "holdout", "0.1 = 10%")
    m, n = matrix.shape
    if n < 2 or m < 2:
        raise UsageError(f"{args.data} has {m} model(s) x {n} benchmark(s); cross-validation needs at least 2 of each")
    # k = #benchmarks would leave nothing to predict
    if args.k_max is None:  # the paper's 15, capped for small matrices
        args.k_max = min(DEFAULT_K_MAX, n - 1)
    elif not 1 <= args.k_max <= n - 1:
        raise UsageError(f"--k-max {args.k_max} is out of range: {args.data} has {n} benchmarks, choose 1..{n - 1}")
    loo_note = None
    if args.folds is None:  # the paper's 10, capped (leave-one-out) for small matrices
        args.folds = min(10, m)
        if args.folds < 10:
            loo_note = f"{args.data} has only {m} models: using --folds {m} (leave-one-out)"
    elif not 2 <= args.folds <= m:
        raise UsageError(f"--folds {args.folds} is out of range: choose 2..{m} ({args.data} has {m} models)")
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    if args.min_observed is not None and args.min_observed < 0:
        raise UsageError(f"--min-observed must be >= 0, got {args.min_observed}")
    levels = [] if args.levels is None else _parse_fractions(args.levels, "levels", "level", "0.9 = 90%")
    inflate = args.variance_inflation == "inner"
    if not inflate and args.inner_folds is not None:
        raise UsageError("--inner-folds is for --variance-inflation inner")
    if args.inner_folds is None:
        args.inner_folds = 3
    if inflate and not levels:
        levels = [0.5, 0.8, 0.9, 0.95]
    if inflate:
        n_train_min = min(min(len(tr) for _, tr, _ in cv_splits(m, n_folds=args.folds, holdout=h, seed=args.seed,
                                                                 scheme=args.scheme))
                          for h in holdouts)
        if not 2 <= args.inner_folds <= n_train_min:
            raise UsageError(f"--inner-folds {args.inner_folds} is out of range: choose 2..{n_train_min} "
                             f"(the smallest training set has {n_train_min} models)")
    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    if args.scheduler is not None and args.jobs != 1:
        raise UsageError("--jobs is for local processes; with --scheduler every worker of the cluster is used")
    transform = None if args.transform == "none" else args.transform
    if loo_note:  # after every check, so that an error stays one line
        _note(loo_note)
    pipelines = [Pipeline.from_name(m, estimator=args.estimator, config=args.em_config, logit=transform == "logit",
                                    min_observed=args.min_observed, inflation="inner" if inflate else 1.0,
                                    inner_folds=args.inner_folds) for m in methods]
    run = dict(pipelines=pipelines, holdouts=tuple(holdouts), k_max=args.k_max, n_folds=args.folds, seed=args.seed,
               scheme=args.scheme, progress=None, levels=tuple(levels))
    try:
        df = _run_cv(matrix, run, jobs=args.jobs, scheduler=args.scheduler)
    except SweepError as exc:  # a failed split or a dead worker: not bad input, but one line too
        print(f"benchsel: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    status = 0
    if out_path is not None:
        try:
            _write_atomic(out_path, _cv_table_text(df, args.out.lower().endswith(".json")))
        except OSError as exc:  # the results exist, the file does not: say so, print the summary, exit 1
            print(f"benchsel: error: cannot write --out {args.out}: {exc.strerror or _one_line(exc)}",
                  file=sys.stderr)
            status = 1
        else:
            _note(f"wrote {len(df)} rows (method, holdout, fold, k) to {args.out}")
    summary = summarize_cv(df)
    meta = {"data": args.data, "shape": [m, n], "methods": methods, "holdouts": holdouts, "k_max": args.k_max,
            "folds": args.folds, "seed": args.seed, "scheme": args.scheme, "em_config": args.em_config,
            "transform": transform, "min_observed": _floors(methods, args.min_observed),
            "levels": levels, "variance_inflation": "inner" if inflate else None}
    if inflate:
        meta["inner_folds"] = args.inner_folds
    if args.format == "table":
        wide = _cv_wide(summary, holdouts)
        header = [_describe(matrix, args.data), f"R^2 (mean +- sd over {args.folds} folds), seed {args.seed}",
                  *_EVERY_MODEL_NOTE, ""]
        text = [*header, _table(wide)]
        if levels:
            text += ["", "interval coverage (mean over folds; nominal level in the column name"
                     + ("; _cal: after the variance inflation fitted on inner folds of each training set)"
                        if inflate else ")"), "", _table(_cv_coverage(summary, levels, holdouts))]
        sys.stdout.write("\n".join(text) + "\n")
    else:
        _emit(_beside_r2(summary), args.format, meta=meta, key="summary")
    return status


def _cv_coverage(summary, levels: Sequence[float], holdouts: Sequence[float]):
    """One row per (method, [holdout,] k): mean coverage per level (and calibrated, inflation factor)."""
    cols = ["method"] + (["holdout"] if len(holdouts) > 1 else []) + ["k"]
    out = summary[cols].copy()
    if "inflation_mean" in summary.columns:
        out["inflation"] = summary["inflation_mean"]
    for lv in levels:
        c = coverage_column(lv)
        out[c] = summary[f"{c}_mean"]
        if f"{c}_cal_mean" in summary.columns:
            out[c + "_cal"] = summary[f"{c}_cal_mean"]
    return out


def _cv_wide(summary, holdouts: Sequence[float]):
    """Rows k; per (method, holdout) the protocol's R^2 (``mean +- sd``), the all-models R^2 and the reach (means)."""
    wide = pd.DataFrame({"k": sorted(summary["k"].unique())})
    every = {"r2_all_mean", "reach_mean"} <= set(summary.columns)
    for (method, holdout), part in summary.groupby(["method", "holdout"], sort=False):
        label = method if len(holdouts) == 1 else f"{method} ({100 * holdout:g}%)"
        cell = {int(r.k): f"{r.r2_mean:.3f} +- {r.r2_sd:.3f}" if np.isfinite(r.r2_sd) else f"{r.r2_mean:.3f}"
                for r in part.itertuples()}
        wide[label] = [cell.get(int(k), "-") for k in wide["k"]]
        if every:
            r2_all = {int(r.k): f"{r.r2_all_mean:.3f}" for r in part.itertuples() if np.isfinite(r.r2_all_mean)}
            reach = {int(r.k): f"{100 * r.reach_mean:.0f}%" for r in part.itertuples() if np.isfinite(r.reach_mean)}
            wide[f"{label}: all models"] = [r2_all.get(int(k), "-") for k in wide["k"]]
            wide[f"{label}: reach"] = [reach.get(int(k), "-") for k in wide["k"]]
    return wide


def _beside_r2(summary):
    """``summary`` with the all-models R^2 and the reach columns moved beside the protocol's R^2."""
    beside = [c for c in ("r2_all_mean", "r2_all_sd", "reach_mean", "reach_sd") if c in summary.columns]
    cols = [c for c in summary.columns if c not in beside]
    at = cols.index("r2_sd") + 1 if "r2_sd" in cols else len(cols)
    return summary[cols[:at] + beside + cols[at:]]


#: what the columns of ``benchsel cv`` beside the protocol's R^2 mean
_EVERY_MODEL_NOTE = ("R^2: the paper's protocol, which skips a held-out model that ran none of the selected benchmarks",
                     "all models: mean R^2 over every held-out model (one that ran none predicted by the training "
                     "mean)",
                     "reach: mean share of held-out models that ran at least one selected benchmark")


def _reach_line(matrix: Any, order: Sequence[int], what: str) -> tuple[str, dict[str, Any]]:
    """The share of the matrix's rows that observe at least one selected column, as a line and as JSON.

    ``what`` names the columns (``"benchmark"``: the rows are models). O(M k).
    """
    m = matrix.shape[0]
    ran = int(np.asarray(matrix.observed)[:, list(order)].any(axis=1).sum()) if len(order) else 0
    pct = f"{100 * ran / m:.0f}%" if m else "-"
    if what == "benchmark":
        line = f"reach: {ran} of {m} models ({pct}) ran at least one selected benchmark"
    else:
        line = f"reach: {ran} of {m} benchmarks ({pct}) were run by at least one selected model"
    return line, {"reached": ran, "of": m, "share": ran / m if m else None}


# -------------------------------------------------------------------- main
#: a word (a run without spaces) or a quoted value longer than this is cut in messages
_LONGEST = 200
_LONG = re.compile(rf"'[^'\n]{{{_LONGEST},}}'|\"[^\"\n]{{{_LONGEST},}}\"|\S{{{_LONGEST},}}")


def _cut(text: str) -> str:
    """``text`` with every quoted value or word over :data:`_LONGEST` characters cut to its first 60."""
    def short(m: re.Match[str]) -> str:
        word = m.group(0)
        quote = word[0] if word[0] in "'\"" and word[-1] == word[0] else ""
        inner = word[1:-1] if quote else word
        return f"{quote}{inner[:60]}...{quote} ({len(inner):,} characters)"
    return _LONG.sub(short, text)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return _cut(f"file not found: {exc.filename}")
    text = _cut(" ".join(str(exc).split()))
    return text or type(exc).__name__


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as Ctrl-C raises KeyboardInterrupt, so that it unwinds the same way."""


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Inside the block, SIGTERM raises :class:`_Terminated` (once; a second one kills at once).

    Unhandled, SIGTERM ends the process on the spot: the worker processes
    and their resource trackers are left running, and ``--out``'s temporary
    file stays. Raised as an interrupt it takes Ctrl-C's way out: the
    workers are stopped, the temporary file is removed, one line is said.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise _Terminated()

    before = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``benchsel`` command with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the command name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success; 2 on bad input (one line ``benchsel: error: ...`` on
        stderr, nothing computed); 1 when the work was done but could not be
        delivered (``cv --out`` could not be written, a failed split); 130
        when interrupted (Ctrl-C), 143 when terminated (SIGTERM): one line,
        worker processes stopped, no partial ``--out`` file.
    """
    with _sigterm_as_interrupt():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        if getattr(args, "data_dir", None) is not None and not Path(args.data_dir).is_dir():
            raise UsageError(f"--data-dir {args.data_dir} is not an existing folder")
        with _warnings_as_lines(), _library_notes() if args.command in ("select", "predict") else nullcontext():
            return int(args.func(args))
    except SystemExit as exc:  # --help / --version
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:  # e.g. `benchsel ... | head`
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return 0
    except (ValueError, OSError) as exc:  # bad input, an unreadable file
        print(f"benchsel: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except _Terminated:
        print("benchsel: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("benchsel: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover - python -m benchsel_lib.cli
    sys.exit(main())
