"""Loaders: the paper's matrices, the per-leaderboard sources, and a user's own matrix.

:func:`load_matrix` returns the experiment matrices of the paper (``DATASETS``:
``mteb``, ``merged``, ``benchpress``, ``mmlu``) and :func:`load_source` the
per-leaderboard tables (``SOURCES``). npz files are read with
``allow_pickle=False``; entries with mask ``O == 0`` become ``NaN``.
:func:`load_csv` / :func:`from_frame` read a user's own matrix (models as rows,
benchmarks as columns); :func:`read_csv_rows` is the CSV reader underneath
(UTF-8 text, delimiter detected among ``CSV_DELIMITERS``, binary files refused
with a message naming the file). Files are found and verified by
:mod:`benchsel_lib.data.sources`.
"""
from __future__ import annotations

import codecs
import csv
import io
import itertools
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .matrix import ScoreMatrix, check_bool
from .mmlu import load_mmlu
from .sources import data_path

__all__ = [
    "AUXILIARY_COLUMNS",
    "CSV_DELIMITERS",
    "DATASETS",
    "MISSING_MARKERS",
    "SOURCES",
    "from_frame",
    "load_benchpress_json",
    "load_csv",
    "parse_number",
    "load_matrix",
    "load_npz",
    "load_source",
    "read_csv_rows",
]


@dataclass(frozen=True)
class _Entry:
    file: str
    description: str
    auxiliary: tuple[str, ...] = ()


#: Experiment matrices of the paper (Section 5, Table 1): name -> file / description.
DATASETS: dict[str, str] = {
    "mteb": "mteb.matrix.npz",
    "merged": "merged.matrix.npz",
    "benchpress": "benchpress.matrix.npz",
    "mmlu": "mmlu_sources/ (built by benchsel_lib.data.mmlu.load_mmlu)",
}

_SOURCES: dict[str, _Entry] = {
    "open_llm": _Entry("open_llm.npz", "Open LLM Leaderboard v2"),
    "helm": _Entry("helm.npz", "HELM Lite"),
    "alpaca_eval": _Entry(
        "alpaca_eval.npz",
        "AlpacaEval 2",
        ("standard_error", "n_wins", "n_wins_base", "n_draws", "n_total", "avg_length", "lc_standard_error"),
    ),
    "arena_hard": _Entry("arena_hard.npz", "Arena-Hard-Auto", ("rating_q025", "rating_q975", "avg_tokens")),
    "livebench": _Entry("livebench.npz", "LiveBench"),
    "wildbench": _Entry("wildbench.npz", "WildBench"),
    "mt_bench": _Entry("mt_bench.npz", "MT-Bench"),
    "bigcode": _Entry("bigcode.npz", "BigCodeBench"),
    "bigbench": _Entry("bigbench.npz", "BIG-Bench Lite (omitted from the paper)"),
    "mteb_raw": _Entry("mteb.npz", "MTEB before dropping single-observation models"),
}

#: Per-leaderboard sources: name -> npz file.
SOURCES: dict[str, str] = {k: v.file for k, v in _SOURCES.items()}

#: Auxiliary count / uncertainty / length columns per source (excluded by default;
#: Section 5: "we keep score-like quantities and drop auxiliary count, uncertainty,
#: and length fields"). Sources not listed have none.
AUXILIARY_COLUMNS: dict[str, tuple[str, ...]] = {k: v.auxiliary for k, v in _SOURCES.items() if v.auxiliary}

#: Cell values read as missing in CSV files (compared after stripping, case-insensitively).
MISSING_MARKERS: frozenset[str] = frozenset({"", "na", "n/a", "nan", "null", "none"})

#: Field separators :func:`read_csv_rows` detects when none is given, in order of preference on a tie.
CSV_DELIMITERS: tuple[str, ...] = (",", ";", "\t")
#: Rows after the header that the delimiter detection checks for a consistent field count.
_DETECT_ROWS = 20
_DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
#: Leading bytes (none of them text) of binary formats a CSV path is sometimes confused with.
_BINARY_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a zip archive, e.g. .npz or .xlsx"),
    (b"\x93NUMPY", "a NumPy .npy array"),
    (b"\x89HDF", "an HDF5 file"),
    (b"\x1f\x8b", "a gzip-compressed file"),
    (b"\xd0\xcf\x11\xe0", "an Office file, e.g. .xls"),
)

# -------------------------------------------------------------------- loaders
def load_npz(path: str | os.PathLike[str], *, source: str = "") -> ScoreMatrix:
    """Read an npz score matrix (``B``, ``O``, ``model_names``, ``benchmark_names``).

    Loaded with ``allow_pickle=False``; entries with ``O == 0`` become ``NaN``.
    O(M N).

    Parameters
    ----------
    path : str or path-like
        The npz file. It is read as given: no manifest check (the loaders
        pass paths that :func:`~benchsel_lib.data.sources.data_path` verified).
    source : str
        Description stored in ``ScoreMatrix.source`` (default: the file name).

    Returns
    -------
    ScoreMatrix
        ``B`` where ``O != 0``, else ``NaN``; rows named by ``model_names``,
        columns by ``benchmark_names``.

    Raises
    ------
    ValueError
        The file lacks one of the four arrays, ``B`` and ``O`` differ in
        shape, the names do not match the shape or repeat, or ``B`` holds an
        infinite value (as :class:`ScoreMatrix` checks); an object array
        (which would need pickle) also raises ``ValueError``.
    OSError
        The file cannot be read.
    """
    with np.load(path, allow_pickle=False) as z:
        missing = [k for k in ("B", "O", "model_names", "benchmark_names") if k not in z.files]
        if missing:
            raise ValueError(f"{path}: npz file lacks array(s) {missing}")
        B = np.asarray(z["B"], dtype=float)
        O = np.asarray(z["O"], dtype=float)
        if B.shape != O.shape:
            raise ValueError(f"{path}: B {B.shape} and O {O.shape} differ in shape")
        scores = np.where(O != 0, B, np.nan)
        return ScoreMatrix(scores, list(z["model_names"]), list(z["benchmark_names"]), source or Path(path).name)


def _unknown(kind: str, name: object, known: Sequence[str]) -> ValueError:
    return ValueError(f"unknown {kind} {name!r}; known: {', '.join(known)}")


def load_matrix(name: str, *, data_dir: str | os.PathLike[str] | None = None) -> ScoreMatrix:
    """Load one of the paper's experiment matrices (``DATASETS``).

    Parameters
    ----------
    name : {"mteb", "merged", "benchpress", "mmlu"}
        ``mmlu`` is rebuilt from the mirrored per-subject sources by
        :func:`benchsel_lib.data.mmlu.load_mmlu` (the paper's 5,452 x 57 matrix is
        not public); the others are the released npz matrices.
    data_dir : path, optional
        Data directory (see :func:`~benchsel_lib.data.sources.resolve_data_dir`).

    Returns
    -------
    ScoreMatrix
        MTEB 263 x 56, Merged 118 x 114, BenchPress 83 x 49 (Table 1 / Appendix D).

    Raises
    ------
    ValueError
        An unknown ``name`` (listing the known ones), or a file that fails its
        size / digest check or is malformed.
    FileNotFoundError
        The file is not available and cannot be downloaded.

    Notes
    -----
    Complexity O(M N) to read an npz matrix, plus O(file size) to hash it on
    its first use in a process; ``mmlu`` costs its rebuild
    (:func:`~benchsel_lib.data.mmlu.load_mmlu`: O(rows x 57 + rows log rows)
    over the source rows).
    """
    if name not in DATASETS:
        raise _unknown("dataset", name, list(DATASETS))
    if name == "mmlu":
        return load_mmlu(data_dir=data_dir)
    file = DATASETS[name]
    return load_npz(data_path(file, data_dir=data_dir), source=f"{name} ({file})")


def load_source(
    name: str,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    include_auxiliary: bool = False,
) -> ScoreMatrix:
    """Load a per-leaderboard table (``SOURCES``).

    Parameters
    ----------
    name : str
        One of ``open_llm, helm, alpaca_eval, arena_hard, livebench, wildbench,
        mt_bench, bigcode, bigbench, mteb_raw``.
    data_dir : path, optional
        Data directory (see :func:`~benchsel_lib.data.sources.resolve_data_dir`).
    include_auxiliary : bool
        Keep the auxiliary count / uncertainty / length columns listed in
        ``AUXILIARY_COLUMNS`` (dropped by default, as in Section 5).

    Returns
    -------
    ScoreMatrix
        The source's table, its ``source`` naming the leaderboard and file.

    Raises
    ------
    ValueError
        An unknown ``name`` (listing the known ones), or a file that fails its
        size / digest check or is malformed.
    FileNotFoundError
        The file is not available and cannot be downloaded.

    Notes
    -----
    Complexity O(M N) to read the matrix (and to drop the auxiliary columns),
    plus O(file size) to hash it on its first use in a process.
    """
    entry = _SOURCES.get(name)
    if entry is None:
        raise _unknown("source", name, list(_SOURCES))
    m = load_npz(data_path(entry.file, data_dir=data_dir), source=f"{entry.description} ({entry.file})")
    if include_auxiliary or not entry.auxiliary:
        return m
    keep = [b for b in m.benchmarks if b not in entry.auxiliary]
    return m.subset(benchmarks=keep)


def load_benchpress_json(
    path: str | os.PathLike[str] | None = None, *, data_dir: str | os.PathLike[str] | None = None
) -> ScoreMatrix:
    """Build the BenchPress matrix from ``benchpress.json``.

    Rows follow the order of ``models`` and columns that of ``benchmarks``,
    named by their display ``name``; ``scores`` entries refer to them by
    ``model_id`` / ``benchmark_id``. A (model, benchmark) pair listed more than
    once takes the *last* listed score (this reproduces ``benchpress.matrix.npz``).
    ``row_info`` holds the model metadata (id, provider, release date, ...).
    O(number of scores).

    Parameters
    ----------
    path : str or path-like, optional
        The JSON file, read as given. Default: the manifest file
        ``benchpress.json`` (verified, downloaded if missing).
    data_dir : str or path-like, optional
        Data directory of the default file (see
        :func:`~benchsel_lib.data.sources.resolve_data_dir`); ignored when
        ``path`` is given.

    Returns
    -------
    ScoreMatrix
        Models x benchmarks, ``NaN`` where no score (or a ``null`` score) is
        listed; ``row_info`` is a DataFrame of the ``models`` records indexed
        by model name.

    Raises
    ------
    ValueError
        The document lacks the ``models``, ``benchmarks`` or ``scores`` list,
        a score refers to an unknown model or benchmark id, or the names
        repeat; for the default file also a size / digest mismatch.
    FileNotFoundError
        The file is not available (and, for the default, cannot be
        downloaded).
    """
    if path is None:
        path = data_path("benchpress.json", data_dir=data_dir)
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    for key in ("models", "benchmarks", "scores"):
        if key not in doc:
            raise ValueError(f"{path}: BenchPress JSON lacks the {key!r} list")
    mid = {m["id"]: i for i, m in enumerate(doc["models"])}
    bid = {b["id"]: j for j, b in enumerate(doc["benchmarks"])}
    X = np.full((len(mid), len(bid)), np.nan)
    for s in doc["scores"]:
        if s["model_id"] not in mid or s["benchmark_id"] not in bid:
            raise ValueError(f"{path}: score refers to unknown model/benchmark id {s['model_id']!r}/{s['benchmark_id']!r}")
        if s["score"] is not None:
            X[mid[s["model_id"]], bid[s["benchmark_id"]]] = float(s["score"])
    names = [m["name"] for m in doc["models"]]
    info = pd.DataFrame(doc["models"], index=names)
    return ScoreMatrix(X, names, [b["name"] for b in doc["benchmarks"]], "BenchPress (benchpress.json)", info)


# ------------------------------------------------------------ user matrices
def _is_missing(cell: str) -> bool:
    return cell.strip().lower() in MISSING_MARKERS


def parse_number(text: str) -> float:
    """``float(text)`` without Python's digit separators: ``"1_0"`` is a typo, not 10. O(len(text)).

    Raises
    ------
    ValueError
        Text that is not a number (with an underscore, too).
    """
    if "_" in text:
        raise ValueError(f"could not convert string to float: {text!r}")
    return float(text)


def _parse_cell(cell: str, model: str, column: str, line: int) -> float:
    if _is_missing(cell):
        return np.nan
    try:
        value = parse_number(cell)
    except ValueError:
        raise ValueError(f"non-numeric value {cell!r} in row {model!r}, column {column!r} (line {line})") from None
    if np.isinf(value):
        raise ValueError(f"infinite value {cell!r} in row {model!r}, column {column!r} (line {line})")
    return value


def _duplicates(names: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    return sorted({n for n in names if n in seen or seen.add(n)})  # type: ignore[func-returns-value]


def _binary_kind(data: bytes) -> str | None:
    """What a binary file looks like (``"a Python pickle"``, ...), or None for anything else."""
    if len(data) >= 2 and data[0] == 0x80 and 2 <= data[1] <= 5:
        return "a Python pickle"
    for magic, kind in _BINARY_SIGNATURES:
        if data.startswith(magic):
            return kind
    return None


def _decode_text(path: Path, data: bytes) -> str:
    """The text of a CSV file: UTF-8 (with or without BOM) or UTF-16 with BOM; ValueError naming ``path`` otherwise."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    kind = _binary_kind(data)
    if kind is not None:
        raise ValueError(f"{path} is not a text CSV file (it looks like {kind})")
    if b"\x00" in data:
        raise ValueError(f"{path} is not a text CSV file (it contains NUL bytes: a binary file?)")
    offset = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[offset:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not a text CSV file (byte 0x{exc.object[exc.start]:02x} at offset {offset + exc.start} "
            "is not UTF-8; save the file as UTF-8 text)"
        ) from None


def _nonblank(rows: Sequence[list[str]]) -> list[list[str]]:
    return [r for r in rows if any(c.strip() for c in r)]


def _detect_delimiter(text: str) -> str:
    """The ``CSV_DELIMITERS`` entry that splits the header into the most fields consistently.

    A candidate counts only when it splits the header into two fields or
    more; one whose first ``_DETECT_ROWS`` rows all have the header's field
    count beats one whose rows do not, then more header fields win, then the
    earlier candidate. Without any candidate the first (comma) is returned.
    O(size of the first rows).
    """
    best, best_key = CSV_DELIMITERS[0], None
    for rank, delim in enumerate(CSV_DELIMITERS):
        try:
            rows = _nonblank(list(itertools.islice(csv.reader(io.StringIO(text, newline=""), delimiter=delim),
                                                   _DETECT_ROWS + 1)))
        except csv.Error:
            continue
        if not rows or len(rows[0]) < 2:
            continue
        width = len(rows[0])
        key = (all(len(r) == width for r in rows[1:]), width, -rank)
        if best_key is None or key > best_key:
            best, best_key = delim, key
    return best


def read_csv_rows(
    path: str | os.PathLike[str], *, delimiter: str | None = None
) -> tuple[list[list[str]], str]:
    """Read a CSV file into rows of strings, detecting the delimiter unless one is given.

    Parameters
    ----------
    path : path
        A text file: UTF-8 (a byte-order mark is skipped) or UTF-16 with a
        byte-order mark.
    delimiter : str, optional
        Field separator to use. By default the one of ``CSV_DELIMITERS``
        (comma, semicolon, tab) that splits the header row into the most
        fields, consistently with the rows below it, is used (comma when none
        splits the header).

    Returns
    -------
    rows : list of list of str
        Every row as parsed (blank lines included, as empty lists).
    delimiter : str
        The delimiter used.

    Raises
    ------
    ValueError
        A binary file (a pickle, an npz/zip archive, NUL bytes, ...) or one
        that is not UTF-8 text, naming the file; a malformed CSV (the csv
        module's error, naming the file); a delimiter that is not one
        character. O(file size).
    """
    path = Path(path)
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1):
        raise ValueError(f"delimiter must be a single character, got {delimiter!r}")
    text = _decode_text(path, path.read_bytes())
    used = _detect_delimiter(text) if delimiter is None else delimiter
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=used))
    except csv.Error as exc:
        raise ValueError(f"{path}: malformed CSV ({exc})") from None
    return rows, used


def _single_column_error(path: Path, cell: str, delimiter: str, forced: bool) -> ValueError | None:
    """The error for a one-column header that looks like fields joined by another separator, else None."""
    others = "".join(d for d in CSV_DELIMITERS if d != delimiter) + "|:"
    if not (any(c in cell for c in others) or re.search(r"\S\s+\S", cell)):
        return None
    shown = cell if len(cell) <= 60 else cell[:57] + "..."
    if forced:
        name = _DELIMITER_NAMES.get(delimiter, repr(delimiter))
        return ValueError(f"{path}: the header row {shown!r} is a single column with the {name} delimiter; "
                          "is the file separated by another character? (leave delimiter unset to detect "
                          "comma, semicolon or tab)")
    return ValueError(f"{path}: the header row {shown!r} is a single column: no comma, semicolon or tab "
                      "separates its fields (the delimiter could not be detected)")


def _looks_like_scores(names: list[str]) -> bool:
    """Whether every name is a number and one at least has a fractional part (integer ids are names). O(M)."""
    try:
        values = [float(n) for n in names]
    except ValueError:
        return False
    return any(not v.is_integer() for v in values if np.isfinite(v))


def load_csv(
    path: str | os.PathLike[str], *, delimiter: str | None = None, allow_empty: bool = False
) -> ScoreMatrix:
    """Read a score matrix from CSV: header row of benchmark names, then one row per model.

    The first column holds the model names (its header is ignored); the other
    cells are numbers or missing markers (``MISSING_MARKERS``: empty, ``NA``,
    ``nan``, ...), which become ``NaN``.

    Parameters
    ----------
    path : path
        CSV file (UTF-8 text; see :func:`read_csv_rows`).
    delimiter : str, optional
        Field separator (``"\\t"`` for TSV). By default it is detected among
        comma, semicolon and tab (:func:`read_csv_rows`).
    allow_empty : bool
        Accept rows / columns without any observation (rejected by default).

    Raises
    ------
    ValueError
        A binary or non-UTF-8 file (naming the file), a header that is one
        column because the delimiter was not detected, ragged rows (naming the
        line), non-numeric cells (naming row and column), duplicate model or
        benchmark names, an empty matrix, or a row / column with no
        observation. O(M N).
    """
    check_bool(allow_empty, "allow_empty")
    path = Path(path)
    rows, used = read_csv_rows(path, delimiter=delimiter)
    while rows and not any(c.strip() for c in rows[-1]):
        rows.pop()
    if not rows:
        raise ValueError(f"{path}: file is empty (no header row)")
    if len(rows[0]) == 1:
        err = _single_column_error(path, rows[0][0].strip(), used, forced=delimiter is not None)
        if err is not None:
            raise err
    header = [h.strip() for h in rows[0]]
    benchmarks = header[1:]
    if not benchmarks or not rows[1:]:
        raise ValueError(f"{path}: score matrix is empty ({len(rows) - 1} model rows, {len(benchmarks)} benchmark columns)")
    dup = _duplicates(benchmarks)
    if dup:
        raise ValueError(f"{path}: duplicate benchmark name(s): {', '.join(map(repr, dup[:10]))}")
    models: list[str] = []
    values = np.empty((len(rows) - 1, len(benchmarks)))
    for i, row in enumerate(rows[1:]):
        line = i + 2
        if len(row) != len(header):
            raise ValueError(f"{path}: line {line} has {len(row)} fields, expected {len(header)} (ragged CSV)")
        models.append(row[0].strip())
        values[i] = [_parse_cell(c, models[-1], b, line) for c, b in zip(row[1:], benchmarks)]
    dup = _duplicates(models)
    if dup:
        raise ValueError(f"{path}: duplicate model name(s): {', '.join(map(repr, dup[:10]))}")
    if _looks_like_scores(models):
        raise ValueError(f"{path}: the first column, read as model names, holds scores ({', '.join(map(repr, models[:3]))}"
                         f", ...): the first column must name the models; add one before {header[0]!r}")
    m = ScoreMatrix(values, models, benchmarks, f"CSV {path.name}")
    return m if allow_empty else m.require_observed()


def from_frame(
    df: pd.DataFrame, *, model_column: str | None = None, source: str = "DataFrame", allow_empty: bool = False
) -> ScoreMatrix:
    """Build a :class:`ScoreMatrix` from a DataFrame with models as rows and benchmarks as columns.

    Model names come from ``model_column`` if given; else from the first
    column when the index is a default ``RangeIndex`` and that column holds
    strings (the layout of ``pandas.read_csv``); else from the index.
    String cells equal to a missing marker become ``NaN``.

    Parameters
    ----------
    df : pandas.DataFrame
        Scores, one row per model and one column per benchmark; cells are
        numbers, ``NaN``/``None`` or strings that are missing markers
        (:data:`MISSING_MARKERS`, compared after stripping, case-insensitively).
    model_column : str, optional
        Column holding the model names (removed from the benchmarks).
    source : str
        Description stored in ``ScoreMatrix.source`` (default ``"DataFrame"``).
    allow_empty : bool
        Accept rows / columns without any observation (rejected by default).

    Returns
    -------
    ScoreMatrix
        Names converted with ``str``; ``df`` itself is not modified.

    Raises
    ------
    ValueError
        Not a DataFrame, empty, non-numeric cells (naming row and column),
        duplicate names, a ``model_column`` that is not a column, or a row /
        column with no observation (unless ``allow_empty``). O(M N).
    """
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"expected a pandas DataFrame, got {type(df).__name__}")
    check_bool(allow_empty, "allow_empty")
    if model_column is None and isinstance(df.index, pd.RangeIndex) and df.shape[1] > 0:
        first = df.iloc[:, 0]
        if first.map(lambda v: isinstance(v, str)).all() and len(first) > 0:
            model_column = df.columns[0]
    if model_column is not None:
        if model_column not in df.columns:
            raise ValueError(f"model column {model_column!r} not in the DataFrame")
        df = df.set_index(model_column)
    df = df.map(lambda v: np.nan if isinstance(v, str) and _is_missing(v) else v)
    dup = _duplicates([str(c) for c in df.columns])
    if dup:
        raise ValueError(f"duplicate benchmark name(s): {', '.join(map(repr, dup[:10]))}")
    m = ScoreMatrix.from_frame(df, source=source)
    return m if allow_empty else m.require_observed()
