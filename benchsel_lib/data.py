"""Data layer: find, fetch, verify and load the score matrices.

Every file the project uses is listed in the package manifest
(``benchsel_lib/manifest.json``: name relative to the data directory, size,
SHA-256 digest and public source URL). Data files are never committed; they
are looked up at run time and verified before use.

Data directory resolution
-------------------------
For a file ``name`` the directories are tried in this order:

1. an explicit ``data_dir`` argument, else the environment variable
   ``BENCHSEL_DATA_DIR`` -- when either is given it is the *only* directory
   searched, and a missing file is downloaded into it;
2. the project's data cache ``<project root>/data`` (the project root is the
   parent of the ``benchsel_lib`` package directory), used when the file is
   there;
3. the offline mirror ``<project root>/../shared/data``, used when the file is
   there;
4. otherwise the file is downloaded from its manifest URL into the project's
   data cache (2).

The download URL is the manifest URL, or ``<base>/<name>`` when a mirror base
URL is given (``base_url=`` or the environment variable ``BENCHSEL_DATA_URL``;
``file://`` and ``http://`` URLs work, which the tests use). Every file is
checked against its manifest size and SHA-256 digest before it is returned; a
mismatch raises ``ValueError`` naming the file and both digests. Verified
digests are cached per process (keyed by path, size and modification time),
so a file is hashed once.

Loaders
-------
:func:`load_matrix` returns the experiment matrices of the paper (``DATASETS``:
``mteb``, ``merged``, ``benchpress``, ``mmlu``) and :func:`load_source` the
per-leaderboard tables (``SOURCES``). npz files are read with
``allow_pickle=False``; entries with mask ``O == 0`` become ``NaN``.
:func:`load_csv` / :func:`from_frame` read a user's own matrix (models as rows,
benchmarks as columns). Command line: ``python -m benchsel_lib.data fetch|verify``.
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .matrix import ScoreMatrix

__all__ = [
    "AUXILIARY_COLUMNS",
    "DATASETS",
    "MANIFEST",
    "MISSING_MARKERS",
    "PROJECT_ROOT",
    "SOURCES",
    "data_path",
    "fetch_all",
    "from_frame",
    "load_benchpress_json",
    "load_csv",
    "load_matrix",
    "load_npz",
    "load_source",
    "resolve_data_dir",
    "verify_all",
    "verify_file",
]

PACKAGE_DIR = Path(__file__).resolve().parent
#: Project root: the parent of the package directory.
PROJECT_ROOT = PACKAGE_DIR.parent
CACHE_DIR = PROJECT_ROOT / "data"
SHARED_DIR = PROJECT_ROOT.parent / "shared" / "data"
ENV_DATA_DIR = "BENCHSEL_DATA_DIR"
ENV_DATA_URL = "BENCHSEL_DATA_URL"


def _read_manifest() -> dict[str, dict[str, Any]]:
    with open(PACKAGE_DIR / "manifest.json", encoding="utf-8") as fh:
        return json.load(fh)["files"]


#: name -> {"size", "sha256", "url", "description", "license"} for every data file.
MANIFEST: dict[str, dict[str, Any]] = _read_manifest()


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
    "mmlu": "mmlu_sources/ (built by benchsel_lib.mmlu.load_mmlu)",
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

# (resolved path, size, mtime_ns) -> verified sha256
_VERIFIED: dict[tuple[str, int, int], str] = {}


# ---------------------------------------------------------------- resolution
def _manifest_entry(name: str) -> dict[str, Any]:
    entry = MANIFEST.get(name)
    if entry is None:
        raise ValueError(f"{name!r} is not a data file in the manifest; known files: {', '.join(sorted(MANIFEST))}")
    return entry


def _explicit_dir(data_dir: str | os.PathLike[str] | None) -> Path | None:
    if data_dir is not None:
        return Path(data_dir).expanduser()
    env = os.environ.get(ENV_DATA_DIR)
    return Path(env).expanduser() if env else None


def _candidate_dirs(data_dir: str | os.PathLike[str] | None) -> list[Path]:
    explicit = _explicit_dir(data_dir)
    return [explicit] if explicit is not None else [CACHE_DIR, SHARED_DIR]


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None, *, name: str | None = None) -> Path:
    """Return the data directory that serves ``name`` (see the module docstring for the order).

    Parameters
    ----------
    data_dir : path, optional
        Explicit directory; overrides ``BENCHSEL_DATA_DIR`` and disables the
        fallbacks.
    name : str, optional
        A manifest file name (e.g. ``"mteb.matrix.npz"``). Without it the
        first directory holding *any* manifest file is returned.

    Returns
    -------
    pathlib.Path
        The explicit / environment directory if given; else the project cache
        or the shared mirror, whichever holds the file first; else the project
        cache (the download target). Complexity O(number of manifest files).
    """
    dirs = _candidate_dirs(data_dir)
    if len(dirs) == 1:
        return dirs[0]
    names = [name] if name is not None else list(MANIFEST)
    for d in dirs:
        if any((d / n).is_file() for n in names):
            return d
    return CACHE_DIR


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_file(path: str | os.PathLike[str], name: str) -> Path:
    """Check ``path`` against the manifest size and SHA-256 of ``name``; return the path.

    Raises
    ------
    ValueError
        On a size or digest mismatch; the message names the file, the
        expected and the actual digest.

    Notes
    -----
    O(file size) on the first call per (path, size, mtime); O(1) afterwards.
    """
    entry = _manifest_entry(name)
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if _VERIFIED.get(key) == entry["sha256"]:
        return path
    actual = _sha256(path)
    if actual != entry["sha256"] or st.st_size != entry["size"]:
        raise ValueError(
            f"data file {name!r} at {path} failed verification: expected sha256 {entry['sha256']} "
            f"({entry['size']} bytes), actual sha256 {actual} ({st.st_size} bytes)"
        )
    _VERIFIED[key] = actual
    return path


def _download_url(name: str, base_url: str | None) -> str:
    base = base_url if base_url is not None else os.environ.get(ENV_DATA_URL)
    if base:
        return base.rstrip("/") + "/" + urllib.parse.quote(name)
    return _manifest_entry(name)["url"]


def _download(name: str, target_dir: Path, base_url: str | None, timeout: float) -> Path:
    url = _download_url(name, base_url)
    dest = target_dir / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".part-", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310
            shutil.copyfileobj(resp, out)
        verify_file(tmp, name)
        os.replace(tmp, dest)
    except (urllib.error.URLError, OSError) as exc:
        raise FileNotFoundError(
            f"data file {name!r} is not in {target_dir} and could not be downloaded from {url}: {exc}. "
            f"Set {ENV_DATA_DIR} to a directory holding the files (e.g. ../shared/data) or connect to the network."
        ) from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return verify_file(dest, name)


def data_path(
    name: str,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    download: bool = True,
    base_url: str | None = None,
    timeout: float = 60.0,
) -> Path:
    """Return a verified local path of the manifest file ``name``, downloading it if needed.

    Parameters
    ----------
    name : str
        File name relative to the data directory, e.g. ``"mteb.matrix.npz"``
        or ``"mmlu_sources/sloth_data_v1.csv"``.
    data_dir : path, optional
        Explicit data directory (see the module docstring for the order).
    download : bool
        Download a missing file (default). With ``False`` a missing file raises.
    base_url : str, optional
        Mirror base URL (``<base_url>/<name>``); default ``BENCHSEL_DATA_URL``
        or the manifest URL.
    timeout : float
        Network timeout in seconds.

    Raises
    ------
    ValueError
        Unknown name, or size / digest mismatch (naming expected and actual digest).
    FileNotFoundError
        The file is in no directory and cannot be downloaded.
    """
    _manifest_entry(name)
    dirs = _candidate_dirs(data_dir)
    for d in dirs:
        if (d / name).is_file():
            return verify_file(d / name, name)
    target = dirs[0] if len(dirs) == 1 else CACHE_DIR
    if not download:
        raise FileNotFoundError(
            f"data file {name!r} not found in {', '.join(map(str, dirs))} (download disabled)"
        )
    return _download(name, target, base_url, timeout)


def fetch_all(*, data_dir: str | os.PathLike[str] | None = None, base_url: str | None = None) -> list[Path]:
    """Make every manifest file available and verified (downloading missing ones); return their paths."""
    return [data_path(n, data_dir=data_dir, base_url=base_url) for n in MANIFEST]


def verify_all(*, data_dir: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Verify every manifest file without downloading; return name -> ``"ok"`` or the error message."""
    report: dict[str, str] = {}
    for n in MANIFEST:
        try:
            data_path(n, data_dir=data_dir, download=False)
            report[n] = "ok"
        except (ValueError, FileNotFoundError) as exc:
            report[n] = str(exc)
    return report


# -------------------------------------------------------------------- loaders
def load_npz(path: str | os.PathLike[str], *, source: str = "") -> ScoreMatrix:
    """Read an npz score matrix (``B``, ``O``, ``model_names``, ``benchmark_names``).

    Loaded with ``allow_pickle=False``; entries with ``O == 0`` become ``NaN``.
    O(M N).
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
        :func:`benchsel_lib.mmlu.load_mmlu` (the paper's 5,452 x 57 matrix is
        not public); the others are the released npz matrices.
    data_dir : path, optional
        Data directory (see :func:`resolve_data_dir`).

    Returns
    -------
    ScoreMatrix
        MTEB 263 x 56, Merged 118 x 114, BenchPress 83 x 49 (Table 1 / Appendix D).
    """
    if name not in DATASETS:
        raise _unknown("dataset", name, list(DATASETS))
    if name == "mmlu":
        from .mmlu import load_mmlu

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
    include_auxiliary : bool
        Keep the auxiliary count / uncertainty / length columns listed in
        ``AUXILIARY_COLUMNS`` (dropped by default, as in Section 5).
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


def _parse_cell(cell: str, model: str, column: str, line: int) -> float:
    if _is_missing(cell):
        return np.nan
    try:
        value = float(cell)
    except ValueError:
        raise ValueError(f"non-numeric value {cell!r} in row {model!r}, column {column!r} (line {line})") from None
    if np.isinf(value):
        raise ValueError(f"infinite value {cell!r} in row {model!r}, column {column!r} (line {line})")
    return value


def _duplicates(names: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    return sorted({n for n in names if n in seen or seen.add(n)})  # type: ignore[func-returns-value]


def load_csv(path: str | os.PathLike[str], *, delimiter: str = ",", allow_empty: bool = False) -> ScoreMatrix:
    """Read a score matrix from CSV: header row of benchmark names, then one row per model.

    The first column holds the model names (its header is ignored); the other
    cells are numbers or missing markers (``MISSING_MARKERS``: empty, ``NA``,
    ``nan``, ...), which become ``NaN``.

    Parameters
    ----------
    path : path
        CSV file.
    delimiter : str
        Field separator (``"\\t"`` for TSV).
    allow_empty : bool
        Accept rows / columns without any observation (rejected by default).

    Raises
    ------
    ValueError
        Ragged rows (naming the line), non-numeric cells (naming row and
        column), duplicate model or benchmark names, an empty matrix, or a
        row / column with no observation. O(M N).
    """
    path = Path(path)
    with open(path, newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.reader(fh, delimiter=delimiter))
    while rows and not any(c.strip() for c in rows[-1]):
        rows.pop()
    if not rows:
        raise ValueError(f"{path}: file is empty (no header row)")
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

    Raises
    ------
    ValueError
        Not a DataFrame, empty, non-numeric cells (naming row and column),
        duplicate names, or a row / column with no observation (unless
        ``allow_empty``). O(M N).
    """
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"expected a pandas DataFrame, got {type(df).__name__}")
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


# ------------------------------------------------------------------------ CLI
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchsel_lib.data fetch|verify [--data-dir DIR]``; returns the exit status."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchsel_lib.data", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["fetch", "verify"])
    parser.add_argument("--data-dir", default=None, help="explicit data directory")
    parser.add_argument("--base-url", default=None, help="mirror base URL for downloads")
    args = parser.parse_args(argv)
    failed = 0
    for n in MANIFEST:
        try:
            p = data_path(n, data_dir=args.data_dir, download=args.command == "fetch", base_url=args.base_url)
            print(f"ok      {n}  ({p})")
        except (ValueError, FileNotFoundError) as exc:
            failed += 1
            print(f"FAILED  {n}: {exc}", file=sys.stderr)
    print(f"{len(MANIFEST) - failed}/{len(MANIFEST)} data files verified")
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
