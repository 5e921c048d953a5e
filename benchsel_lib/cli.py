"""The ``benchsel`` command: select benchmarks, predict a new model's scores, cross-validate.

Each subcommand (``datasets``, ``select``, ``predict``, ``cv``; ``benchsel
<command> --help`` shows examples) checks its arguments, all before any long
work, builds from them a :class:`~benchsel_lib.method.pipeline.Pipeline`
(``cv``: the pipelines and the cross-validation protocol of Section 5.1),
calls it and prints the result as a table, CSV or JSON. The options speak
the Python API's words; the older spellings still work, hidden from
``--help`` (:class:`_Old`). Bad input is one line on stderr, never a
traceback; notes and warnings are ``benchsel: ...`` lines, each said once,
with any value over 200 characters cut. :func:`main` returns the exit
status (its docstring lists them), so the command can be driven from Python
and tests; ``python -m benchsel_lib.cli`` works like the console script.
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
import textwrap
import threading
import warnings
from dataclasses import dataclass
from functools import partial

#: BLAS thread variables the command sets to 1 unless the user set them.
BLAS_THREAD_VARS: tuple[str, ...] = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
if "numpy" not in sys.modules:  # the console script / python -m: numpy (BLAS) is not loaded yet
    # One BLAS thread, for the reason _MAIN_EPILOG gives (select --axis models on MTEB: 13 s with one thread,
    # 197 s with two). Imported after numpy (tests, notebooks) this does nothing.
    for _var in BLAS_THREAD_VARS:
        os.environ.setdefault(_var, "1")
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import numpy as np
import pandas as pd

from . import __version__
from ._names import name_positions, suggest_names, unknown_name_error
from .data import DATASETS, load_csv, load_matrix
from .data.loaders import parse_number, read_csv_rows
from .method.correlation import Correlation, em_too_costly
from .method.pipeline import PAPER_OBJECTIVES, Pipeline, PipelineSearch, ScaleWarning, check_given, parse_pipeline
from .method.candidates import DEFAULT_MIN_OBSERVED
from .method.choice import DEFAULT_RULE
from .method.selection import COST_AWARE, too_thin, within_budget
from .protocol.cv import DEFAULT_K_MAX, cross_validate
from .protocol.splits import cv_splits
from .protocol.summaries import coverage_column, summarize_cv
from .protocol.sweep import SweepError, dask_backend

__all__ = ["main", "build_parser", "parse_scores", "DEFAULT_MIN_OBSERVED"]

#: ``select --objective``: the paper's three and Section 2's total residual variance
_OBJECTIVES = (*PAPER_OBJECTIVES, "trace")
#: ``--inflation inner`` on fewer training rows than this says the factor is noisy.
_FEW_ROWS = 30


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
  benchsel cv --data mteb --pipelines entropy,mi,random --k-max 15 --folds 10

Each command takes --format table|csv|json; see 'benchsel <command> --help'.
Data: the built-in matrices (mteb, merged, mmlu, benchpress) or your own CSV
(first column model names, header row benchmark names, empty/NA for missing;
comma, semicolon or tab delimited, detected from the header row; UTF-8 text).
The command runs BLAS on one thread (the matrices are small, and several BLAS
threads on a busy machine made EM many times slower); set OPENBLAS_NUM_THREADS
or OMP_NUM_THREADS to change that.
"""

_SELECT_EPILOG = """\
examples:
  benchsel select --data mteb -k 5
  benchsel select --data mteb -k 5 --pipeline paper    # the paper's greedy (entropy)
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
  benchsel predict --data benchpress --scores "GPQA Diamond=71" --scaling logit
  benchsel predict --data mteb --scores-file new_model.csv
  benchsel predict --data mteb --scores "ArguAna=0.552" --inflation inner
  benchsel predict --data mteb --scores "ArguAna=0.552" --inflation 1.3

--scores-file takes either a two-column CSV "benchmark,score" (one new model)
or a CSV like the data (first column model name, header = benchmark names,
one row per new model, empty cells = not run).

The prediction is the Gaussian conditional mean given the scores you supply,
in the benchmark's original units; [lower, upper] is the central --level
interval of the conditional distribution (Eq. cond-var, ridge 1e-2), mapped
through the inverse logit with --scaling logit. Given values must be finite
and within the training range widened by 10 (floored) standard deviations; one
that looks 100 times off (below the lowest 1% of the benchmark's scores while
x 100 it lies in their range, or the reverse) draws a warning naming the likely
slip, an error with --strict.

--inflation rescales the intervals: the conditional variance is multiplied by a
factor F (half-widths and sd by sqrt(F); F > 1 widens, F < 1 narrows). A number is used as given (e.g. the
inflation_mean that 'benchsel cv --inflation inner' reports); 'inner'
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
  benchsel cv --data mteb --pipelines entropy,mi,random --k-max 15 --folds 10 --seed 42
  benchsel cv --data merged --holdouts 0.1,0.5 --k-max 10 --out results.csv
  benchsel cv --data my_scores.csv --folds 5 --k-max 5 --format json
  benchsel cv --data mmlu --k-max 5 --levels 0.5,0.9
  benchsel cv --data mteb --k-max 5 --inflation inner
  benchsel cv --data merged --k-max 5 --seed 42 --scheme paper      # the paper's own folds
  benchsel cv --data benchpress --k-max 5 --seed 42 --scheme paper --config early
  benchsel cv --data merged --holdouts 0.1,0.25,0.5,0.75 --jobs 2
  benchsel cv --data merged --scheduler tcp://10.0.0.5:8786

Prints mean and sd of R^2 (standardized space, Section 5.1) per pipeline,
holdout and k; --out writes the full per-fold table (one row per pipeline,
holdout, fold and k; .json for JSON, anything else CSV), whole or not at all:
a temporary file in the same folder is renamed into place, and if that write
fails (a full disk) no file is left, the summary is still printed and the
exit status is 1.

--levels adds interval coverage: the fraction of held-out scores inside the
central Gaussian interval at each nominal level (columns cov_50 etc.).
--inflation inner also fits, on each fold's training models only, a
variance factor per pipeline and k (--inner-folds inner folds) and reports the
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


def _int(text: str) -> int:
    if "_" not in text:  # int() reads "1_0" as 10: a typo, not a number
        with suppress(ValueError):
            return int(text)
    raise argparse.ArgumentTypeError(f"invalid integer {text!r}")


def _float(text: str) -> float:
    try:
        return parse_number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None


def _variance_factor(text: str, words: Sequence[str]) -> str | float:
    """One of ``words`` (lower-cased) or a finite variance factor > 0; anything else is an ArgumentTypeError."""
    t = text.strip().lower()
    if t in words:
        return t
    try:
        value = parse_number(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: expected {', '.join(words)} "
                                         "or a number > 0") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: the factor must be a finite number > 0")
    return value


class _Deprecated(argparse.Action):
    """The action of an old spelling (:class:`_Old`, the action's ``const``): it stores the value, in the new words
    where they changed, in the new option's destination and says on stderr what to write instead."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:  # noqa: D102
        old = option_string or self.option_strings[0]
        value = self.const.renamed.get(values, values) if isinstance(values, str) else values
        _note(f"{old} {values} is deprecated; use {self.const.new} {value}" if value != values
              else f"{old} is deprecated; use {self.const.new}")
        setattr(namespace, self.dest, value)


class _Old(NamedTuple):
    """A hidden deprecated spelling ``old`` of the option ``new``, declared in an option table after it."""

    old: str
    new: str
    renamed: dict[str, str] = {}  # old values and their new names
    extra: dict[str, Any] = {}  # more of add_argument's arguments: the old type


#: One option of an option table: ``add_argument``'s flags and keyword arguments.
_Spec = tuple[tuple[str, ...], dict[str, Any]]


def _opt(*flags: str, **kwargs: Any) -> _Spec:
    return flags, kwargs


_COMMON: list[_Spec] = [
    _opt("--format", choices=("table", "csv", "json"), default="table", help="output format (default: table)"),
    _opt("--data-dir", help="directory with the data files (default: BENCHSEL_DATA_DIR, data/, ../shared/data)"),
]
_DATA: list[_Spec] = [
    _opt("--data", required=True, metavar="NAME|PATH.csv",
         help="built-in matrix (mteb, merged, mmlu, benchpress) or a CSV file"),
    _opt("--estimator", choices=("auto", "pairwise", "em"), default="auto",
         help="correlation estimator (default: auto)"),
]
_INNER_FOLDS = _opt("--inner-folds", type=_int, metavar="N", help="inner folds for --inflation inner (default: 3)")

_SELECT_OPTIONS: list[_Spec | _Old] = [
    _opt("-k", type=_int, help="number of benchmarks to select (required unless --budget)"),
    _opt("--pipeline", choices=("auto", "paper"),
         help="'auto' (default): the recommended pipeline (Pipeline.auto), chosen by inner cross-validation on the "
         "matrix's models; 'paper': the paper's greedy on the Gaussian model (Pipeline.paper; default when "
         "--objective, --costs, --budget or --axis models is given)"),
    _Old("--method", "--pipeline", {"gaussian": "paper"}),
    _opt("--objective", choices=_OBJECTIVES,
         help="selection objective of --pipeline paper (default: entropy; trace: each step reveals "
         "the benchmark that lowers the summed residual variance of the rest most; no --budget)"),
    _opt("--require", action="extend", nargs="+", default=[], metavar="NAME",
         help="mandatory benchmark(s), selected first (repeatable)"),
    _opt("--costs", metavar="COSTS.csv", help="per-benchmark costs (CSV: benchmark,cost)"),
    _opt("--default-cost", type=_float, metavar="C", help="cost of benchmarks missing from --costs"),
    _opt("--budget", type=_float, metavar="B", help="total cost budget (modified greedy)"),
    _opt("--seed", type=_int, default=0, help="seed for --objective random (default: 0)"),
    _opt("--min-observed", type=_int, metavar="N",
         help="skip candidates observed for fewer than N models "
         f"(default: min({DEFAULT_MIN_OBSERVED}, #models); 0 = keep all; "
         "the recommended pipeline's entropy-obs keeps its own 30%%)"),
    _opt("--axis", choices=("benchmarks", "models"), default="benchmarks",
         help="'models' selects reference models instead (the transposed matrix)"),
    _opt("--nested", action="store_true",
         help="--pipeline auto with one selector for every size (choice 'nested'): the first j "
         "benchmarks are its selection of j, so they can be run in order and stopped at any point"),
]

_PREDICT_OPTIONS: list[_Spec | _Old | list[_Spec]] = [
    [_opt("--scores", action="append", metavar='"BENCH=VALUE,..."', help="the new model's scores"),
     _opt("--scores-file", metavar="FILE.csv", help="CSV with the new model's scores (see below)")],
    _opt("--pipeline", choices=("auto", "paper"),
         help="'auto' (default): the recommended pipeline (Pipeline.auto), its predictor chosen by inner "
         "cross-validation for the given benchmarks, with conformal intervals; 'paper': the paper's Gaussian "
         "conditional mean (Pipeline.paper; default with --scaling logit, --inflation, --axis models or a "
         "several-model --scores-file)"),
    _opt("--level", type=_float, default=0.9, help="interval coverage in (0, 1) (default: 0.9)"),
    _opt("--scaling", choices=("standard", "logit"), default="standard",
         help="'logit': fit in logit space (Appendix K) (default: standard)"),
    _opt("--axis", choices=("benchmarks", "models"), default="benchmarks",
         help="'models': give a new benchmark's scores on some models, predict the other models"),
    _opt("--inflation", type=partial(_variance_factor, words=("none", "inner")), default="none",
         metavar="none|inner|F",
         help="multiply the conditional variance by F > 0, or fit F on inner folds ('inner'); default: none"),
    _INNER_FOLDS,
    _opt("--seed", type=_int, help="seed for --inflation inner (default: 0)"),
    _opt("--strict", action="store_true",
         help="refuse a score that looks 100 times off (a fraction given for a percentage, or the reverse) "
         "instead of warning about it"),
    _Old("--method", "--pipeline", {"gaussian": "paper"}),
    _Old("--transform", "--scaling", {"none": "standard"}),
    _Old("--inflate", "--inflation", {"auto": "inner"},
         {"type": partial(_variance_factor, words=("none", "auto", "inner"))}),
]

_CV_OPTIONS: list[_Spec | _Old] = [
    _opt("--pipelines", default="entropy,mi,random", metavar="LIST",
         help="comma-separated pipelines: the paper's objectives (entropy, mi, random: Gaussian imputation), "
         "'auto' (the recommended pipeline) or SELECTOR+PREDICTOR, e.g. lasso+ridge (default: entropy,mi,random)"),
    _opt("--holdouts", default="0.1", help="comma-separated holdout fractions in (0, 1) (default: 0.1)"),
    _opt("--k-max", type=_int, help="largest subset size (default: 15, at most #benchmarks - 1)"),
    _opt("--folds", type=_int, help="number of folds (default: 10, at most #models)"),
    _opt("--seed", type=_int, default=42, help="seed (default: 42)"),
    _opt("--scheme", choices=("nested", "paper"), default="nested",
         help="fold streams: 'paper' = the paper's code release (with --seed 42 its own folds); "
         "'nested' = training sets nested across holdouts (default)"),
    _opt("--config", choices=("released", "early"), default="released",
         help="the correlation's EM configuration, Correlation(estimator, config) (default: "
         "released; the paper's BenchPress numbers come from 'early')"),
    _opt("--scaling", choices=("standard", "logit"), default="standard",
         help="'logit': logit-space pipelines (Appendix K) (default: standard)"),
    _opt("--min-observed", type=_int, metavar="N",
         help="skip candidates observed for fewer than N training models (default: none for the paper's "
         f"pipelines and named pairs, as in the paper's protocol; {DEFAULT_MIN_OBSERVED} for auto; "
         "0: none for every pipeline)"),
    _opt("--levels", metavar="L1,L2,...",
         help="nominal interval levels in (0, 1) for coverage columns (e.g. 0.5,0.8,0.9,0.95)"),
    _opt("--inflation", choices=("none", "inner"), default="none",
         help="'inner': calibrated coverage, see below (default: none)"),
    _INNER_FOLDS,
    _opt("--out", metavar="FILE", help="write the full per-fold table here (.csv or .json)"),
    _opt("--jobs", type=_int, default=1, metavar="N",
         help="local worker processes over the splits (default: 1, serial)"),
    _opt("--scheduler", metavar="ADDRESS",
         help="run the splits on a Dask cluster, e.g. tcp://host:8786 (needs the [cluster] extra)"),
    _Old("--methods", "--pipelines"),
    _Old("--transform", "--scaling", {"none": "standard"}),
    _Old("--variance-inflation", "--inflation"),
    _Old("--em-config", "--config"),
]

#: name: (summary, description, epilog, options after --format and --data-dir)
_COMMANDS: dict[str, tuple[str, str, str, list]] = {
    "datasets": ("list the built-in score matrices",
                 "List the built-in score matrices with their shape and observed fraction.",
                 "examples:\n  benchsel datasets\n  benchsel datasets --format json\n", []),
    "select": ("select benchmarks (or reference models) greedily",
               "Greedy benchmark selection: entropy (pivoted Cholesky, Algorithm 1), mutual information "
               "(Algorithm 2), random, or the total residual variance (Section 2), with mandatory benchmarks and "
               "cost budgets.", _SELECT_EPILOG, [*_DATA, *_SELECT_OPTIONS]),
    "predict": ("predict a new model's other scores with intervals",
                "Predict the benchmarks a new model has not run from the ones it has, with central intervals "
                "from the Gaussian conditional distribution, in the original units.", _PREDICT_EPILOG,
                [*_DATA, *_PREDICT_OPTIONS]),
    "cv": ("cross-validate selection + imputation (Section 5.1)",
           "The paper's 10-fold cross-validation protocol: R^2 of Gaussian imputation from the selected "
           "benchmarks, per pipeline, holdout fraction and k.", _CV_EPILOG, [*_DATA, *_CV_OPTIONS]),
}


def build_parser() -> argparse.ArgumentParser:
    """The ``benchsel`` argument parser (subcommands datasets, select, predict, cv).

    Returns
    -------
    argparse.ArgumentParser
        The parser; the arguments of a subcommand carry ``func``, the function that runs it.
    """
    parser = _Parser(
        prog="benchsel",
        description="Pick the few benchmarks worth running, and predict the rest (submodular benchmark selection).",
        epilog=_MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"benchsel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="command", parser_class=_Parser)
    funcs = {"datasets": _cmd_datasets, "select": _cmd_select, "predict": _cmd_predict, "cv": _cmd_cv}
    for name, (summary, description, epilog, options) in _COMMANDS.items():
        p = sub.add_parser(name, help=summary, description=description, epilog=epilog,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        _add_options(p, [*_COMMON, *options])
        p.set_defaults(func=funcs[name])
    return parser


def _add_options(p: argparse.ArgumentParser, options: Sequence[_Spec | _Old | list[_Spec]]) -> None:
    """Add the ``options`` to ``p`` in their order (a list: a required mutually exclusive group); end its epilog
    with a paragraph on the deprecated spellings among them."""
    actions: dict[str, argparse.Action] = {}
    old = []
    for spec in options:
        if isinstance(spec, _Old):
            new = actions[spec.new]
            kwargs = dict(spec.extra)
            if new.choices is not None and "type" not in kwargs:
                kwargs["choices"] = tuple(dict.fromkeys([*new.choices, *spec.renamed]))
            p.add_argument(spec.old, dest=new.dest, action=_Deprecated, const=spec,
                           default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)
            values = ", ".join(f"{a}: {b}" for a, b in spec.renamed.items())
            old.append(f"{spec.old} for {spec.new}" + (f" ({values})" if values else ""))
            continue
        group = p.add_mutually_exclusive_group(required=True) if isinstance(spec, list) else p
        for flags, kwargs in spec if isinstance(spec, list) else [spec]:
            actions[flags[0]] = group.add_argument(*flags, **kwargs)
    if old:
        text = "Deprecated spellings, still accepted with a note on stderr: " + ", ".join(old) + "."
        p.epilog += "\n" + textwrap.fill(text, width=79, break_on_hyphens=False) + "\n"


# ------------------------------------------------------------------ inputs
def _load(data: str, *, data_dir: str | None, axis: str = "benchmarks") -> Any:
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
        matrix = load_csv(_csv_file(data, "--data", "data file"))  # delimiter: comma, semicolon or tab
    if axis == "models":
        matrix = matrix.transpose().drop_empty()
    rows, cols = ("models", "benchmarks") if axis == "benchmarks" else ("benchmarks", "models")
    if matrix.shape[0] < 2:  # before any column check: with one row every column is constant
        raise UsageError(f"{data} has {matrix.shape[0]} {rows[:-1]} (x {matrix.shape[1]} {cols}): every command needs "
                         f"at least 2 {rows}, to see how the {cols} vary together")
    return matrix


#: what a column is for each ``--axis``, and what the rows are when the columns are that
_WHAT = {"benchmarks": "benchmark", "models": "model"}
_ROWS_OF = {"benchmark": "models", "model": "benchmarks"}


def _csv_file(path: str, option: str, label: str) -> Path:
    """``path``, given as ``option`` (the ``label`` file), if it is a file; else a UsageError."""
    if Path(path).is_dir():
        raise UsageError(f"{option} {path} is a folder; give a CSV file")
    if not Path(path).is_file():
        raise UsageError(f"{label} not found: {path}")
    return Path(path)


def _csv_rows(path: str, label: str) -> list[list[str]]:
    """The non-blank rows of the ``label`` file (``"costs"``, ``"scores"``) at ``path``, a CSV file."""
    p = _csv_file(path, f"{label} file", f"{label} file")
    return [r for r in read_csv_rows(p)[0] if any(c.strip() for c in r)]


def _pair_rows(rows: list[list[str]], path: str, label: str, *, fields: str = "", names: Sequence[str] | None = None,
               what: str = "benchmark") -> Iterator[tuple[str, str, str, float]]:
    """Each row after the header of the ``label`` file (``"costs"``, ``"scores"``) at ``path`` as (where, name,
    value text, value), checked: two fields (``fields``: what they are, for the message), a ``what`` among
    ``names`` (None: any name) and a number (in a scores file an empty or NA value is NaN: not run)."""
    word = "cost" if label == "costs" else "value"
    known = None if names is None else set(names)
    for line, row in enumerate(rows[1:], start=2):
        where = f"{label} file {path}, line {line}"
        if len(row) != 2:
            raise UsageError(f"{where}: expected 2 fields{fields}, got {len(row)}")
        name, raw = row[0].strip(), row[1].strip()
        if known is not None and name not in known:
            raise UsageError(f"{where}: {unknown_name_error(name, names, what)}")
        try:
            value = float("nan") if label == "scores" and raw.lower() in {"", "na", "nan"} else parse_number(raw)
        except ValueError:
            raise UsageError(f"{where}: {word} {raw!r} for {name!r} is not a number") from None
        yield where, name, raw, value


def _is_number(text: str) -> bool:
    try:
        parse_number(text)
    except ValueError:
        return False
    return True


def _first_few(items: Sequence[str], n: int) -> str:
    """The first ``n`` of ``items`` joined by commas, and how many more there are."""
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


def _read_costs(path: str, names: Sequence[str], default: float | None, what: str) -> np.ndarray:
    """Per-candidate costs from a ``benchmark,cost`` CSV (header row required); ``default`` for those it omits."""
    rows = _csv_rows(path, "costs")
    if len(rows) < 2:
        raise UsageError(f"costs file {path}: expected a header row and one '{what},cost' row per {what}")
    if len(rows[0]) == 2 and _is_number(rows[0][1]):
        raise UsageError(f"costs file {path}: the first line {','.join(rows[0])!r} looks like a cost, but it is "
                         f"read as the header; add a header row '{what},cost'")
    pos = {n: j for j, n in enumerate(names)}
    costs = np.full(len(names), np.nan)
    for where, name, raw, value in _pair_rows(rows, path, "costs", fields=f" ({what},cost)", names=names, what=what):
        if not (math.isfinite(value) and value > 0):
            raise UsageError(f"{where}: cost of {name!r} must be a positive finite number, got {raw}")
        if not np.isnan(costs[pos[name]]):
            raise UsageError(f"{where}: {what} {name!r} is listed twice")
        costs[pos[name]] = value
    missing = [names[j] for j in np.flatnonzero(np.isnan(costs))]
    if missing and default is None:
        raise UsageError(f"costs file {path} has no cost for {len(missing)} {what}(s): "
                         f"{_first_few(list(map(repr, missing)), 5)}; add them or pass --default-cost")
    if missing:
        costs[np.isnan(costs)] = default
    return costs


def _read_given(args: argparse.Namespace, what: str) -> tuple[list[tuple[str, float]] | None, Any]:
    """``--scores`` or ``--scores-file`` (``benchmark,score`` rows, an empty or NA score: not run; or a table like
    the data): (pairs, None) for one new model, (None, DataFrame) for several."""
    if args.scores:
        return parse_scores(args.scores, what=what), None
    path = args.scores_file
    rows = _csv_rows(path, "scores")
    if not rows:
        raise UsageError(f"scores file {path} is empty")
    head = [h.strip().lower() for h in rows[0]]
    if not (len(head) == 2 and head[0] in {"benchmark", "name", "model"} and head[1] in {"score", "value"}):
        frame = load_csv(Path(path), allow_empty=True).to_frame()
        if frame.shape[0] == 1:  # a one-model file: same output as --scores
            return [(str(c), float(v)) for c, v in frame.iloc[0].items()], None
        return None, frame
    pairs = [(name, value) for _, name, _, value in _pair_rows(rows, path, "scores")]
    if not pairs:
        raise UsageError(f"scores file {path} lists no scores")
    return pairs, None


def _check_frame(frame: Any, matrix: Any, args: argparse.Namespace) -> None:
    """Validate a many-row scores table (names, duplicates, values, at least one score a row) without fitting."""
    for i in range(frame.shape[0]):
        row = [(str(c), v) for c, v in zip(frame.columns, frame.iloc[i].to_numpy(dtype=float))]
        name = f"{_ROWS_OF[args.what][:-1]} {str(frame.index[i])!r}"
        try:
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always", ScaleWarning)
                _checked_scores(row, matrix, args)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
        for w in said:  # each warning names the model it is about
            warnings.warn(f"{name}: {w.message}", w.category, stacklevel=2)


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


# ------------------------------------------------------------------ checks
def _check_at_least(value: int | None, least: int, option: str) -> None:
    """An integer option (None: not given) is at least ``least``."""
    if value is not None and value < least:
        raise UsageError(f"{option} must be >= {least}, got {value}")


def _check_positive(value: float | None, option: str) -> None:
    """A number option (None: not given) is finite and positive."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise UsageError(f"{option} must be a positive number, got {value:g}")


def _in_range(option: str, value: int, low: int, high: int, why: str, *, why_first: bool = False) -> int:
    """``value`` of ``option`` if it is in ``low..high``; else a UsageError that says ``why`` the range is so."""
    if not low <= value <= high:
        choose = f"choose {low}..{high}"
        raise UsageError(f"{option} {value} is out of range: "
                         + (f"{why}, {choose}" if why_first else f"{choose} ({why})"))
    return value


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
    if isinstance(x, (np.ndarray, np.generic)):  # NumPy arrays and scalars as Python lists and scalars
        x = x.tolist()
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, float):
        return None if not math.isfinite(x) else x
    return x


def _emit(df: pd.DataFrame, fmt: str, *, meta: dict[str, Any], header: Sequence[str] = (),
          footer: Sequence[str] = (), key: str = "rows", notes: Sequence[str] = ()) -> None:
    """Write ``df`` on stdout as a table (with header/footer lines), CSV (rows only; the ``notes`` said on stderr)
    or JSON (meta + rows)."""
    if fmt == "csv":
        for line in notes:
            _note(line)
        df.to_csv(sys.stdout, index=False, lineterminator="\n")
    elif fmt == "json":
        sys.stdout.write(json.dumps(_jsonable({**meta, key: df.to_dict(orient="records")}), indent=2) + "\n")
    else:
        sys.stdout.write("\n".join([*header, _table(df), *footer]) + "\n")


def _describe(matrix, data: str, axis: str = "benchmarks") -> str:
    m, n = matrix.shape
    what = _WHAT[axis]
    return f"{data}: {m} {_ROWS_OF[what]} x {n} {what}s, {100 * matrix.observed_fraction:.1f}% observed"


def _note(text: str) -> None:
    print(f"benchsel: {text}", file=sys.stderr)


def _slow_em_note(matrix, estimator: str, what: str) -> None:
    """Say on stderr when the correlation estimate is an EM over many columns (the slow case); where the "auto"
    rule replaces EM by the floored pairwise correlation the pipeline says so itself (:func:`_library_notes`)."""
    m, n = matrix.shape
    method = Correlation(estimator).resolved(matrix.scores) if estimator == "auto" else estimator
    if estimator == "em" and em_too_costly(m, n):
        _note(f"EM on {m} {'models' if what == 'benchmark' else 'benchmarks'} x {n} {what}s can take very long "
              "(O(N^3) work per iteration); --estimator auto uses the floored pairwise correlation here")
    elif method == "em" and n > 150 and not matrix.observed.all():
        _note(f"EM on {n} {what}s with missing entries can take tens of seconds; --estimator pairwise is much faster")


@contextmanager
def _library_notes() -> Iterator[None]:
    """Show the library's notes (level INFO under ``benchsel_lib``: the choices the pipelines make, before the
    work, because of a matrix's size) inside the block as ``benchsel: ...`` lines on stderr."""
    logger = logging.getLogger("benchsel_lib")
    handler, level = logging.Handler(logging.INFO), logger.level
    handler.emit = lambda record: _note(record.getMessage())  # type: ignore[method-assign]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Show warnings inside the block (data problems, cache repairs, also those of parallel workers) as one line
    each, ``benchsel: warning: ...`` on stderr, each message once."""
    said: set[str] = set()

    def show(message: Warning | str, *_: Any, **__: Any) -> None:  # showwarning's other arguments: unused
        text = _cut(" ".join(str(message).split()))
        if text not in said:
            said.add(text)
            _note(f"warning: {text}")

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


# ---------------------------------------------------------------- commands
def _cmd_datasets(args: argparse.Namespace) -> int:
    """``benchsel datasets``: the built-in matrices with their shape and observed fraction."""
    matrices = {name: load_matrix(name, data_dir=args.data_dir) for name in DATASETS}
    df = pd.DataFrame([{"name": name, "models": m.shape[0], "benchmarks": m.shape[1],
                        "observed_fraction": round(m.observed_fraction, 4), "source": m.source}
                       for name, m in matrices.items()])
    _emit(df, args.format, meta={}, key="datasets",
          footer=["", "Use any of these with --data NAME, or pass --data PATH.csv for your own matrix."])
    return 0


def _fit_recommended(pipe: Pipeline, matrix: Any, **fit: Any) -> Pipeline:
    """``pipe.fit(matrix, **fit)``, without the warning that repeats the search's note (when the inner search
    cannot run, the command prints its reason, the choice's note); every other warning is shown as it would be."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe.fit(matrix, **fit)
    note = pipe.choice_.note if pipe.choice_ is not None else ""
    shown: dict = {}  # the warnings registry of the re-emitted warnings: each shown as often as before
    for w in caught:
        if not (note and str(w.message).endswith(note)):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, registry=shown)
    return pipe


def _recommend_lines(pipe: PipelineSearch) -> tuple[list[str], list[dict[str, Any]]]:
    """What the search chose and the inner-CV R^2 of every candidate at its k (its ``cv_results_``), as lines and
    as JSON records."""
    rec = pipe.choice_
    table = pipe.cv_results_
    at = table[table["k"] == rec.k]
    cands = ", ".join(f"{r.selector}+{r.predictor} {r.r2:.3f}" for r in at.itertuples())
    how = (f"chosen by inner cross-validation on the matrix's models; R^2 {rec.inner_r2:.3f}"
           if np.isfinite(rec.inner_r2) else "not chosen by inner cross-validation: see the note")
    lines = [f"pipeline: {rec.name} ({how})"]
    if rec.weights:
        lines.append("stack weights: " + ", ".join(f"{n} {w:.3f}" for n, w in rec.weights.items()))
    if cands:
        lines.append(f"inner-CV R^2 at k={rec.k}: {cands}")
    if rec.note:
        lines.append(f"note: {rec.note}")
    return lines, _jsonable(at.to_dict(orient="records"))


# ------------------------------------------------------------------ select
@dataclass(frozen=True)
class _Candidates:
    """The columns ``benchsel select`` picks from, checked against the matrix (column positions)."""

    names: tuple[str, ...]
    counts: np.ndarray  # observed entries per column
    k: int  # how many to pick, at most the candidates left
    require: tuple[int, ...]
    thin: tuple[int, ...]  # excluded by --min-observed
    min_observed: int
    costs: np.ndarray | None

    def named(self, columns: Iterable[int]) -> list[str]:
        return [self.names[j] for j in columns]


def _cmd_select(args: argparse.Namespace) -> int:
    """``benchsel select``: the recommended pipeline's selection, or the paper's greedy one (the checks of the
    pipeline's options before the data is loaded, the others after)."""
    paper_only = (args.objective is not None or args.costs is not None or args.budget is not None
                  or args.axis == "models")
    args.pipeline = args.pipeline or ("paper" if paper_only else "auto")
    if args.pipeline == "auto" and paper_only:
        raise UsageError("--objective, --costs, --budget and --axis models are options of --pipeline paper")
    if args.nested and args.pipeline != "auto":
        raise UsageError("--nested is an option of --pipeline auto (the paper's greedy selections are nested "
                         "already)")
    args.objective = args.objective or "entropy"
    if args.budget is not None and args.objective not in COST_AWARE:
        raise UsageError(f"--objective {args.objective} has no cost-aware form; with --budget use "
                         f"{', '.join(o for o in COST_AWARE if o in _OBJECTIVES)}")
    matrix = _load(args.data, data_dir=args.data_dir, axis=args.axis)
    for option, other in (("costs", "budget"), ("default_cost", "costs")):  # each needs the other
        if getattr(args, option) is not None and getattr(args, other) is None:
            raise UsageError(f"--{option.replace('_', '-')} needs --{other}")
    _check_positive(args.default_cost, "--default-cost")
    _check_at_least(args.seed, 0, "--seed")
    _check_positive(args.budget, "--budget")
    args.what = _WHAT[args.axis]
    cands = _candidates(args, matrix)
    if args.pipeline == "auto":  # its own correlation estimates, inside the inner cross-validation
        return _select_auto(args, cands, matrix)
    return _select_paper(args, cands, matrix)


def _candidates(args: argparse.Namespace, matrix: Any) -> _Candidates:
    """The candidate columns of ``matrix``: ``-k``, ``--require``, ``--costs`` and ``--min-observed``, checked."""
    names = list(matrix.benchmarks)
    what = args.what
    k = _select_size(args, len(names))
    twice = next((b for i, b in enumerate(args.require) if b in args.require[:i]), None)
    if twice is not None:
        raise UsageError(f"--require lists {what} {twice!r} twice")
    require = name_positions(args.require, names, what=what)
    if len(require) > k:
        raise UsageError(f"--require names {len(require)} {what}s but -k is {k}")
    costs = None  # 1 each with --budget alone
    if args.costs is not None:
        costs = _read_costs(args.costs, names, args.default_cost, what)
    elif args.budget is not None:
        costs = np.ones(len(names))
    if costs is not None and require and not within_budget(costs[require].sum(), args.budget):
        raise UsageError(f"the required {what}s cost {costs[require].sum():g}, more than --budget {args.budget:g}")
    _check_at_least(args.min_observed, 0, "--min-observed")
    min_obs = min(DEFAULT_MIN_OBSERVED, matrix.shape[0]) if args.min_observed is None else args.min_observed
    counts = matrix.observed.sum(axis=0)  # thinly observed candidates: their correlations are noise
    thin = np.flatnonzero(too_thin(counts, min_obs, mandatory=require)).tolist()
    available = len(names) - len(thin)
    if args.k is not None and k > available:
        raise UsageError(f"-k {k} is larger than the {available} {what}s left after --min-observed {min_obs}; "
                         "lower -k or --min-observed")
    if available == 0:
        raise UsageError(f"no {what}s are left after --min-observed {min_obs}; lower --min-observed")
    if args.k is None or k > len(require):
        _check_affordable(costs, require, thin, args.budget, what)
    if thin:  # said after the checks, so that an error stays one line
        _note(f"excluding {len(thin)} candidate {what}(s) observed for fewer than {min_obs} {_ROWS_OF[what]} "
              f"(--min-observed): {_first_few([f'{names[j]} ({counts[j]})' for j in thin], 8)}")
    return _Candidates(names=tuple(names), counts=counts, k=min(k, available), require=tuple(require),
                       thin=tuple(thin), min_observed=min_obs, costs=costs)


def _select_size(args: argparse.Namespace, n_cand: int) -> int:
    """How many to pick: ``-k`` (checked against the ``n_cand`` candidates), or every candidate under ``--budget``."""
    if args.k is None:
        if args.budget is None:
            raise UsageError("-k is required (or give --budget)")
        return n_cand
    _in_range("-k", args.k, 1, n_cand, f"{args.data} has {n_cand} {args.what}s", why_first=True)
    if args.k == n_cand and args.pipeline == "auto":  # its choice is by how well it predicts the rest
        raise UsageError(f"-k {args.k} leaves nothing to predict: {args.data} has {n_cand} {args.what}s and "
                         f"--pipeline auto chooses its selection by how well it predicts the rest; choose "
                         f"1..{n_cand - 1} (--pipeline paper ranks them all)")
    return args.k


def _check_affordable(costs: np.ndarray | None, require: list[int], thin: list[int], budget: float | None,
                      what: str) -> None:
    """A candidate fits ``--budget`` beside the ``--require`` columns (no costs: no budget to fit)."""
    if costs is None:
        return
    cand = [j for j in range(len(costs)) if j not in require and j not in thin]
    if not cand or not within_budget(costs[require].sum() + costs[cand].min(), budget):
        raise UsageError(f"no {what} is affordable within --budget {budget:g}"
                         + (f" after the required {what}s" if require else "")
                         + (f" (cheapest candidate: {costs[cand].min():g})" if cand else ""))


def _select_auto(args: argparse.Namespace, cands: _Candidates, matrix: Any) -> int:
    """``benchsel select`` with the recommended pipeline (``Pipeline.auto``)."""
    choice = "nested" if args.nested else DEFAULT_RULE
    pipe = _fit_recommended(Pipeline.auto(cands.k, seed=args.seed, initial=cands.named(cands.require),
                                          min_observed=cands.min_observed or None, choice=choice), matrix)
    rec = pipe.choice_
    order = rec.selection
    lines, scores = _recommend_lines(pipe)
    if args.nested:
        lines.insert(1, f"--nested: {rec.selector} at every size, so the first j steps are its selection of j")
    reach, reached = _reach_line(matrix, order, "benchmark")
    lines.append(reach)
    meta = {"data": args.data, "pipeline": "auto", "choice": choice, "chosen": rec.name,
            "selector": rec.selector, "predictor": rec.predictor, "inner_r2": rec.inner_r2, "k": cands.k,
            "seed": args.seed, "scores": scores, "weights": rec.weights, "note": rec.note,
            "min_observed": cands.min_observed, "required": cands.named(cands.require),
            "excluded": cands.named(cands.thin), "reach": reached}
    _emit(_steps(cands, order, "benchmark"), args.format, meta=meta, header=[_describe(matrix, args.data), *lines, ""],
          key="selection", notes=lines)
    return 0


def _select_paper(args: argparse.Namespace, cands: _Candidates, matrix: Any) -> int:
    """``benchsel select`` with the paper's greedy on the Gaussian model (``Pipeline.paper``)."""
    what, costs = args.what, cands.costs
    _slow_em_note(matrix, args.estimator, what)
    pipe = Pipeline.paper(cands.k if args.k is not None or costs is None else None, objective=args.objective,
                          estimator=args.estimator, initial=cands.named(cands.require),
                          min_observed=cands.min_observed or None, budget=args.budget, seed=args.seed,
                          costs=None if costs is None else dict(zip(cands.names, costs.tolist()))).fit(matrix)
    sel = pipe.selection_
    estimator = pipe.component("correlation").resolved(matrix.scores)
    df = _steps(cands, list(sel.order), what, {"gain": sel.gains, "residual_fraction": sel.residual_fraction,
                                               "logdet": sel.logdet, "mi": sel.mi})
    reach, reached = _reach_line(matrix, list(sel.order), what)
    meta = {"data": args.data, "axis": args.axis, "shape": list(matrix.shape),
            "observed_fraction": matrix.observed_fraction, "objective": args.objective,
            "estimator": estimator, "k": args.k, "min_observed": cands.min_observed, "seed": args.seed,
            "required": cands.named(cands.require), "excluded": cands.named(cands.thin), "reach": reached}
    footer = []
    if len(df):
        footer += ["", f"residual variance after {len(df)} pick(s): "
                   f"{100 * df['residual_fraction'].iloc[-1]:.1f}% of the total"]
    footer.append(reach)
    if args.budget is not None:  # the modified greedy's outcome
        total = float(costs[list(sel.order)].sum())
        strategy = {"cost-effective": "cost-effective greedy",
                    "singleton": "best single " + what}.get(sel.strategy, sel.strategy)
        meta.update(budget=args.budget, total_cost=total, strategy=sel.strategy)
        footer.append(f"budget {args.budget:g}: {strategy} won (modified greedy, Appendix B); total cost {total:g}")
        if args.objective != "entropy":
            footer.append("note: the 1/2(1-1/e) budget guarantee holds for shifted entropy; "
                          "for mi/random this is a heuristic")
    header = [_describe(matrix, args.data, args.axis), f"objective: {args.objective}   correlation: {estimator}   "
              f"{'reference models' if what == 'model' else 'benchmarks'} selected: {len(df)}", ""]
    _emit(df, args.format, meta=meta, header=header, footer=footer, key="selection")
    return 0


def _steps(cands: _Candidates, order: Sequence[int], what: str, per_step: dict[str, Any] | None = None
           ) -> pd.DataFrame:
    """The selection ``order``, one row per step: the pick, whether it was required, its cost (with costs), the
    ``per_step`` values (the paper's greedy: gain, residual fraction, log det and, where not None, MI) and the
    number of rows that observe it."""
    df = pd.DataFrame({"step": np.arange(1, len(order) + 1), what: cands.named(order)})
    if cands.require:
        df["required"] = [j in cands.require for j in order]
    if cands.costs is not None:
        df["cost"] = cands.costs[order]
    for column, values in (per_step or {}).items():
        if values is not None:
            df[column] = np.asarray(values, dtype=float)[:len(order)]
    df["n_observed"] = cands.counts[order].astype(int)
    return df


def _reach_line(matrix: Any, order: Sequence[int], what: str) -> tuple[str, dict[str, Any]]:
    """The share of the matrix's rows that observe at least one selected ``what`` column, as a line and as JSON."""
    m = matrix.shape[0]
    ran = int(np.asarray(matrix.observed)[:, list(order)].any(axis=1).sum())
    pct = f"{100 * ran / m:.0f}%"  # m >= 2: _load refuses fewer rows
    line = (f"reach: {ran} of {m} models ({pct}) ran at least one selected benchmark" if what == "benchmark"
            else f"reach: {ran} of {m} benchmarks ({pct}) were run by at least one selected model")
    return line, {"reached": ran, "of": m, "share": ran / m}


# ----------------------------------------------------------------- predict
def _cmd_predict(args: argparse.Namespace) -> int:
    """``benchsel predict``: the recommended predictor for one new model, else the Gaussian conditional mean
    (the scores the recommended predictor may take read before the data, the Gaussian pipeline's after)."""
    if not (0.0 < args.level < 1.0):
        raise UsageError(f"--level must be strictly between 0 and 1, got {args.level:g}")
    pairs, frame = _given_first(args)
    paper = pairs is None  # Pipeline.paper: the Gaussian conditional mean
    if paper and args.inflation != "inner" and (args.inner_folds is not None or args.seed is not None):
        raise UsageError("--inner-folds and --seed are for --inflation inner")
    args.seed = 0 if args.seed is None else args.seed
    _check_at_least(args.seed, 0, "--seed")
    args.what = _WHAT[args.axis]
    args.skip_missing = args.scores_file is not None  # a scores file: an empty entry is a benchmark not run
    matrix = _load(args.data, data_dir=args.data_dir, axis=args.axis)
    if not paper:
        return _predict_auto(args, matrix, pairs)
    inner_folds = _inner_folds(args, matrix, 3, check=args.inflation == "inner")
    if frame is None:
        pairs, frame = _read_given(args, args.what)
    return _predict_paper(args, matrix, pairs, frame, inner_folds)


def _given_first(args: argparse.Namespace) -> tuple[list[tuple[str, float]] | None, Any]:
    """The given scores, read first where the recommended predictor (one new model) may take them; (None, None)
    where it may not."""
    paper_only = args.scaling != "standard" or args.inflation != "none" or args.axis == "models"
    if args.pipeline == "auto" and paper_only:
        raise UsageError("--scaling logit, --inflation and --axis models are options of --pipeline paper")
    if args.pipeline == "paper" or paper_only:
        return None, None
    pairs, frame = _read_given(args, "benchmark")
    if frame is not None and args.pipeline == "auto":
        raise UsageError("--pipeline auto predicts one model at a time: give one model's scores "
                         "(or use --pipeline paper for a several-model file)")
    return pairs, frame


def _inner_folds(args: argparse.Namespace, matrix: Any, default: int, *, check: bool = True) -> int:
    """``--inner-folds`` (``default``, never more than the training rows, when not given), checked to be between 2
    and the number of training rows."""
    m = matrix.shape[0]
    n = min(default, m) if args.inner_folds is None else args.inner_folds
    return _in_range("--inner-folds", n, 2, m, f"{args.data} has {m} {_ROWS_OF[args.what]}") if check else n


def _checked_scores(pairs: Sequence[tuple[str, float]], matrix: Any, args: argparse.Namespace) -> dict[str, float]:
    """The given scores checked against ``matrix`` (:func:`check_given`), at least one."""
    scores = check_given(list(pairs), matrix, what=args.what, skip_missing=args.skip_missing, strict=args.strict)
    if not scores:
        raise UsageError("no scores given (every entry is empty)")
    return scores


def _given_line(used: dict[str, float]) -> str:
    """The line that says which scores the prediction is conditioned on."""
    return f"conditioned on {len(used)} given score(s): " + ", ".join(f"{k}={v:g}" for k, v in used.items())


def _predict_auto(args: argparse.Namespace, matrix: Any, pairs: Sequence[tuple[str, float]]) -> int:
    """``benchsel predict`` with the recommended predictor and conformal intervals (``Pipeline.auto``)."""
    inner = _inner_folds(args, matrix, 5)
    scores = _checked_scores(pairs, matrix, args)
    pipe = _fit_recommended(Pipeline.auto(k=len(scores), seed=args.seed, search_folds=inner), matrix,
                            revealed=list(scores))
    pred = pipe.predict(scores, level=args.level, strict=args.strict)
    out = pred[["mean", "lower", "upper", "n_observed"]].rename(columns={"mean": "predicted"})
    out = out.rename_axis("benchmark").reset_index()
    interval = "interval: none (no inner cross-validation residuals to calibrate it: see the note)"
    if np.isfinite(out[["lower", "upper"]].to_numpy()).any():
        interval = (f"interval: {100 * args.level:g}% split-conformal from the inner-CV residuals of the chosen "
                    "predictor")
    lines, inner_scores = _recommend_lines(pipe)
    lines.insert(0, _given_line(scores))
    rec = pipe.choice_
    meta = {"data": args.data, "pipeline": "auto", "chosen": rec.name, "inner_r2": rec.inner_r2,
            "scores": inner_scores, "weights": rec.weights, "note": rec.note, "level": args.level,
            "used": scores, "inner_folds": inner, "seed": args.seed}
    _emit(out, args.format, meta=meta, header=[_describe(matrix, args.data), *lines, interval, ""],
          key="predictions", notes=lines)
    return 0


def _predict_paper(args: argparse.Namespace, matrix: Any, pairs: Sequence[tuple[str, float]] | None, frame: Any,
                   inner_folds: int) -> int:
    """``benchsel predict`` with the paper's Gaussian conditional mean (``Pipeline.paper``) for one new model
    (``pairs``) or a table of them (``frame``)."""
    what = args.what
    if frame is None:  # the given scores, before the (possibly slow) correlation estimate
        _checked_scores(pairs, matrix, args)
        revealed = [str(n) for n, v in pairs if not math.isnan(float(v))]
    else:
        _check_frame(frame, matrix, args)
        revealed = [str(c) for c in frame.columns if frame[c].notna().iloc[0]]  # of the first new model
    _slow_em_note(matrix, args.estimator, what)
    pipe = Pipeline.paper(objective="mi", estimator=args.estimator, logit=args.scaling == "logit",
                          inflation=1.0 if args.inflation == "none" else args.inflation, inner_folds=inner_folds,
                          seed=args.seed)
    pipe.fit(matrix, revealed=revealed)
    estimator = pipe.component("correlation").resolved(pipe.scaling_.values(matrix.scores))
    table, given_line, factors = _gaussian_predictions(pipe, args, pairs, frame)
    infl = _inflation_lines(args, factors, inner_folds, matrix.shape[0])
    lo_pct, hi_pct = 50 * (1 - args.level), 50 * (1 + args.level)
    header = [_describe(matrix, args.data, args.axis), given_line,
              f"interval: central {100 * args.level:g}% ({lo_pct:g}%..{hi_pct:g}%) of the Gaussian conditional "
              f"distribution; correlation: {estimator}" + ("; logit space" if args.scaling == "logit" else ""),
              *infl, ""]
    ignored = table.attrs["ignored"] if frame is None else None  # empty entries skipped
    meta = {"data": args.data, "axis": args.axis, "level": args.level, "scaling": args.scaling,
            "estimator": estimator, "used": table.attrs["used"], **({} if frame is not None else {"ignored": ignored}),
            "inflation": table.attrs["inflation"],
            "inflation_mode": str(args.inflation) if args.inflation in ("none", "inner") else "given"}
    if args.inflation == "inner":
        meta.update(inner_folds=inner_folds, seed=args.seed)
    footer = [f"(ignored empty entries: {', '.join(ignored)})"] if ignored else []
    if what != "benchmark":
        table = table.rename(columns={"benchmark": what})
    _emit(table, args.format, meta=meta, header=header, footer=footer, key="predictions", notes=[given_line, *infl])
    return 0


def _gaussian_predictions(pipe: Pipeline, args: argparse.Namespace, pairs: Sequence[tuple[str, float]] | None,
                          frame: Any) -> tuple[pd.DataFrame, str, dict[str, float]]:
    """The Gaussian pipeline's predictions as the command's table (``predicted``, ``n_train``), the line that says
    what they are conditioned on, and the variance factor per set of given scores."""
    if frame is None:
        pred = pipe.predict(list(pairs), level=args.level, skip_missing=args.skip_missing, strict=args.strict)
    else:
        with warnings.catch_warnings():  # said before, with the model's name (_check_frame)
            warnings.simplefilter("ignore", ScaleWarning)
            pred = pipe.predict(frame, level=args.level, strict=args.strict)
    table = pred.reset_index().rename(columns={"mean": "predicted", "n_observed": "n_train"})
    table.attrs = dict(pred.attrs)
    used = table.attrs["used"]
    if frame is None:
        return table, _given_line(used), {"": table.attrs["inflation"]}
    line = "conditioned on: " + "; ".join(f"{m}: {len(u)} score(s) ({', '.join(u)})" for m, u in used.items())
    return table, line, table.attrs["inflation"]


def _inflation_lines(args: argparse.Namespace, factors: dict[str, float], inner_folds: int, rows: int) -> list[str]:
    """The line that says which variance factor was used (no line without ``--inflation``)."""
    if args.inflation == "none":
        return []
    rows_what = _ROWS_OF[args.what]
    how = "given"
    if args.inflation == "inner":  # the output calls a fitted factor "auto"
        how = (f"auto: inner {inner_folds}-fold CV on the {rows} training {rows_what}, seed {args.seed}"
               + (f"; noisy with so few {rows_what}" if rows < _FEW_ROWS else ""))
    values = sorted(set(factors.values()))
    if len(values) == 1:
        f = values[0]
        return [f"variance inflation: {f:.4g} ({how}); interval half-widths x {math.sqrt(f):.4g}"]
    return [f"variance inflation ({how}, one per set of given scores): "
            + ", ".join(f"{m} {f:.4g}" for m, f in factors.items())]


# ---------------------------------------------------------------------- cv
def _cmd_cv(args: argparse.Namespace) -> int:
    """``benchsel cv``: the cross-validation protocol over the named pipelines."""
    out_path = None if args.out is None else _check_out(args.out)  # before the data and the work
    matrix = _load(args.data, data_dir=args.data_dir)
    loo_note = _check_cv(args, matrix)
    if loo_note:  # after every check, so that an error stays one line
        _note(loo_note)
    pipelines = [Pipeline.from_name(m, estimator=args.estimator, config=args.config, logit=args.scaling == "logit",
                                    min_observed=args.min_observed, inflation="inner" if args.inner else 1.0,
                                    inner_folds=args.inner_folds)
                 for m in args.pipelines]
    run = dict(pipelines=pipelines, holdouts=args.holdouts, k_max=args.k_max, n_folds=args.folds, seed=args.seed,
               scheme=args.scheme, progress=None, levels=args.levels)
    try:
        df = _run_cv(matrix, run, jobs=args.jobs, scheduler=args.scheduler)
    except SweepError as exc:  # a failed split or a dead worker: not bad input, but one line too
        print(f"benchsel: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    status = 0 if out_path is None else _write_out(df, out_path, args.out)
    summary, table = summarize_cv(df), args.format == "table"  # text: R^2 per k, coverage with --levels
    header = [_describe(matrix, args.data), f"R^2 (mean +- sd over {args.folds} folds), seed {args.seed}",
              *_EVERY_MODEL_NOTE, ""]
    footer = ["", "interval coverage (mean over folds; nominal level in the column name"
              + ("; _cal: after the variance inflation fitted on inner folds of each training set)" if args.inner
                 else ")"), "", _table(_cv_coverage(summary, args.levels, args.holdouts))
              ] if args.levels and table else []
    _emit(_cv_wide(summary, args.holdouts) if table else _beside_r2(summary), args.format,
          meta=_cv_meta(args, matrix.shape), header=header, footer=footer, key="summary")
    return status


def _check_cv(args: argparse.Namespace, matrix: Any) -> str | None:
    """Check ``benchsel cv``'s options against ``matrix``, in the order of ``--help``, and put in ``args`` their
    parsed values and defaults (``inner``: ``--inflation inner``); return the note on a leave-one-out default."""
    args.pipelines = _cv_pipeline_names(args.pipelines)
    args.holdouts = tuple(_parse_fractions(args.holdouts, "holdouts", "holdout", "0.1 = 10%"))
    m, n = matrix.shape
    if n < 2 or m < 2:
        raise UsageError(f"{args.data} has {m} model(s) x {n} benchmark(s); cross-validation needs at least 2 of each")
    if args.k_max is None:  # the paper's 15, capped; never all n benchmarks (nothing left to predict)
        args.k_max = min(DEFAULT_K_MAX, n - 1)
    _in_range("--k-max", args.k_max, 1, n - 1, f"{args.data} has {n} benchmarks", why_first=True)
    loo_note = None
    if args.folds is None:  # the paper's 10, capped (leave-one-out) for fewer models
        args.folds = min(10, m)
        if args.folds < 10:
            loo_note = f"{args.data} has only {m} models: using --folds {m} (leave-one-out)"
    _in_range("--folds", args.folds, 2, m, f"{args.data} has {m} models")
    _check_at_least(args.seed, 0, "--seed")
    _check_at_least(args.min_observed, 0, "--min-observed")
    args.inner = args.inflation == "inner"
    args.levels = () if args.levels is None else tuple(_parse_fractions(args.levels, "levels", "level", "0.9 = 90%"))
    if args.inner and not args.levels:
        args.levels = (0.5, 0.8, 0.9, 0.95)
    if not args.inner and args.inner_folds is not None:
        raise UsageError("--inner-folds is for --inflation inner")
    args.inner_folds = 3 if args.inner_folds is None else args.inner_folds
    if args.inner:
        smallest = min(len(tr) for h in args.holdouts for _, tr, _ in cv_splits(
            m, n_folds=args.folds, holdout=h, seed=args.seed, scheme=args.scheme))
        _in_range("--inner-folds", args.inner_folds, 2, smallest, f"the smallest training set has {smallest} models")
    _check_at_least(args.jobs, 1, "--jobs")
    if args.scheduler is not None and args.jobs != 1:
        raise UsageError("--jobs is for local processes; with --scheduler every worker of the cluster is used")
    return loo_note


def _cv_pipeline_names(text: str) -> tuple[str, ...]:
    """``--pipelines``: distinct names of the paper's objectives or of pipelines."""
    names = _parse_list(text, "pipelines")
    for name in (n for n in names if n not in PAPER_OBJECTIVES):
        try:
            parse_pipeline(name)
        except ValueError as exc:
            raise UsageError(f"unknown pipeline {name!r} in --pipelines; choose from {', '.join(PAPER_OBJECTIVES)}, "
                             f"auto or SELECTOR+PREDICTOR ({exc})") from None
    return tuple(names)


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


def _check_out(out: str) -> Path:
    """The ``--out`` target, checked before any work (not a folder, in a writable folder, writable if it exists),
    with symbolic links resolved: the file :func:`_write_atomic` replaces."""
    target = Path(out).resolve()
    folder = target.parent
    problem = ("it is a folder" if Path(out).is_dir()
               else "the folder does not exist" if not folder.exists()
               else f"{folder} is not a folder" if not folder.is_dir()
               else f"the folder {folder} is not writable" if not os.access(folder, os.W_OK | os.X_OK)
               else "it exists and is not a regular file" if target.exists() and not target.is_file()
               else "the file is not writable" if target.exists() and not os.access(target, os.W_OK)
               else None)
    if problem is not None:
        raise UsageError(f"cannot write --out {out}: {problem}")
    probe = _temp_name(target)  # what the permission bits do not tell (a read-only mount, a special folder)
    try:
        open(probe, "x").close()  # noqa: SIM115 - created only to be removed
    except OSError as exc:
        raise UsageError(f"cannot write --out {out}: {exc.strerror or _one_line(exc)}") from None
    with suppress(OSError):
        os.unlink(probe)
    return target


def _temp_name(target: Path) -> Path:
    """A fresh hidden name next to ``target`` for its temporary file."""
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")


def _write_atomic(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` all or nothing: a temporary file in the same folder, renamed into place
    (removed, and ``target`` left as it was, when the write fails or is interrupted)."""
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


def _floors(names: Sequence[str], min_observed: int | None) -> dict[str, int]:
    """Each pipeline's ``--min-observed`` as :meth:`Pipeline.from_name` applies it (0: every benchmark a candidate)."""
    if min_observed is not None:
        return {m: int(min_observed) for m in names}
    return {m: DEFAULT_MIN_OBSERVED if m == "auto" else 0 for m in names}


def _write_out(df: Any, target: Path, out: str) -> int:
    """Write the per-fold table to ``--out`` (``target``, checked before): JSON records for ``.json``, else CSV;
    the exit status: 1 when it failed."""
    full = df.copy()
    if "selected" in full.columns:
        full["selected"] = [";".join(map(str, s)) if isinstance(s, (tuple, list)) else s for s in full["selected"]]
    if out.lower().endswith(".json"):
        text = json.dumps(_jsonable(full.to_dict(orient="records")), indent=1) + "\n"
    else:
        text = full.to_csv(index=False, lineterminator="\n")
    try:
        _write_atomic(target, text)
    except OSError as exc:  # the results exist, the file does not: say so, print the summary, exit 1
        print(f"benchsel: error: cannot write --out {out}: {exc.strerror or _one_line(exc)}", file=sys.stderr)
        return 1
    _note(f"wrote {len(df)} rows (pipeline, holdout, fold, k) to {out}")
    return 0


def _cv_meta(args: argparse.Namespace, shape: tuple[int, int]) -> dict[str, Any]:
    """The JSON fields of ``benchsel cv`` beside the summary, named as the options are: ``pipelines``,
    ``config``, ``scaling`` and ``inflation`` (``none`` or ``inner``)."""
    return {"data": args.data, "shape": list(shape), "pipelines": list(args.pipelines),
            "holdouts": list(args.holdouts), "k_max": args.k_max, "folds": args.folds,
            "seed": args.seed, "scheme": args.scheme, "config": args.config,
            "scaling": args.scaling, "min_observed": _floors(args.pipelines, args.min_observed),
            "levels": list(args.levels), "inflation": "inner" if args.inner else "none",
            **({"inner_folds": args.inner_folds} if args.inner else {})}


def _cv_coverage(summary, levels: Sequence[float], holdouts: Sequence[float]):
    """One row per (pipeline, [holdout,] k): mean coverage per level (and calibrated, inflation factor)."""
    cols = ["pipeline"] + (["holdout"] if len(holdouts) > 1 else []) + ["k"]
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
    """Rows k; per (pipeline, holdout) the protocol's R^2 (``mean +- sd``), the all-models R^2 and the reach (means)."""
    wide = pd.DataFrame({"k": sorted(summary["k"].unique())})
    every = {"r2_all_mean", "reach_mean"} <= set(summary.columns)
    for (pipeline, holdout), part in summary.groupby(["pipeline", "holdout"], sort=False):
        label = pipeline if len(holdouts) == 1 else f"{pipeline} ({100 * holdout:g}%)"
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
    """Inside the block, SIGTERM raises :class:`_Terminated` (once; a second one kills at once), so that the
    worker processes are stopped and ``--out``'s temporary file is removed as on Ctrl-C."""
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
            with suppress(OSError):
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
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
