"""The result files of the benchmarks, which the book quotes.

A benchmark run with ``--json PATH`` writes what it measured to
``benchmarks/results/<name>.json``::

    {"command": "python benchmarks/bench_recommend.py --quick --json ...",
     "measured": "2026-12-03, commit 1a2b3c4, AMD EPYC 7763 (2 cpus, load average 1.10 at the start, 1.90 at the end)",
     "commit": "1a2b3c4...", "dirty": false,
     "values": {"mteb_k5_auto": "0.802", ...}}

Each value is text formatted as the benchmark prints it.  The book's build
(``scripts/build_book.py``) turns each file into MyST substitutions:
``{{ <name>_<key> }}`` for every value, ``{{ <name>_command }}`` and
``{{ <name>_measured }}``, with ``-`` in the file's name read as ``_``.  The
appendix pages quote them, so that every figure they print comes from a file
that a benchmark wrote.

``commit`` (the full hash of the checkout's ``HEAD``) and ``dirty`` (whether
its working tree had uncommitted changes) say on what code the figures were
measured; files written before these fields existed say it in ``measured``
only, which :func:`measured_at` reads too. :func:`staleness` tells whether a
file still describes the code of the checkout: not when it was measured with
uncommitted changes, nor at a commit whose :data:`DETERMINING_PATHS` differ
from ``HEAD``'s. The build marks the pages that quote such a file.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"
#: A key that a MyST substitution can name (a Jinja identifier).
KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
FIELDS = ("command", "measured", "values")
#: The folders whose code determines a measurement: a file measured at a commit where they differ from
#: ``HEAD`` (the result files themselves left aside) no longer describes the checkout.
DETERMINING_PATHS = ("benchsel_lib", "benchmarks")
#: Left out of the comparison: the result files, which are written after the measurement.
IGNORED_PATHS = ("benchmarks/results",)
_MEASURED_COMMIT = re.compile(r"\bcommit ([0-9a-f]{7,40})\b( with uncommitted changes)?")


def key(*parts: object) -> str:
    """A substitution key from ``parts``: joined with ``_``, every other character read as ``_``.

    >>> key("mteb", "k5", "imputed-lasso+imputed-ridge", "diff")
    'mteb_k5_imputed_lasso_imputed_ridge_diff'
    """
    text = "_".join(str(p) for p in parts if str(p) != "")
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]", "_", text)).strip("_").lower()


def signed(x: float, digits: int = 3) -> str:
    """``x`` with its sign, as the benchmarks print a difference (``+0.012``); zero reads ``+0.000``, not ``-0.000``."""
    text = f"{x:+.{digits}f}"
    return "+" + text[1:] if float(text) == 0 else text


def machine() -> str:
    """The processor's model name (from ``/proc/cpuinfo`` where there is one)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return re.sub(r"\s+", " ", line.split(":", 1)[1]).strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown processor"


def _git(args: list[str], root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)


def git_state(root: Path | None = None) -> tuple[str | None, bool]:
    """The checkout's commit (full hash) and whether its tracked files have uncommitted changes.

    The result files (:data:`IGNORED_PATHS`) do not count: a benchmark run
    after another, as ``run_all.py`` runs them, finds the file the first one
    wrote, which changes no figure of its own.

    Parameters
    ----------
    root : Path, optional
        A folder inside the git work tree (default :data:`ROOT`).

    Returns
    -------
    tuple of (str or None, bool)
        ``(None, False)`` outside a git work tree or without git.

    Notes
    -----
    Two ``git`` calls.
    """
    root = ROOT if root is None else root
    try:
        head = _git(["rev-parse", "HEAD"], root).stdout.strip()
        outside = [f":(top,exclude){path}" for path in IGNORED_PATHS]
        status = _git(["status", "--porcelain", "--untracked-files=no", "--", ":(top)", *outside], root)
        dirty = bool(status.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None, False
    return (head or None), (dirty if head else False)


def commit(root: Path | None = None) -> str:
    """The checkout's commit, and whether its working tree had changes when the benchmark ran (as text)."""
    head, dirty = git_state(ROOT if root is None else root)
    if not head:
        return "commit unknown"
    return f"commit {head[:7]}" + (" with uncommitted changes" if dirty else "")


def measured_at(data: Mapping) -> tuple[str | None, bool]:
    """The commit a result file was measured at and whether the tree was dirty.

    Reads the ``commit`` and ``dirty`` fields, or, in a file written before
    they existed, the ``measured`` text ("commit 1a2b3c4 with uncommitted
    changes").

    Parameters
    ----------
    data : mapping
        A parsed result file.

    Returns
    -------
    tuple of (str or None, bool)
        The commit (full or abbreviated hash; None when the file names
        none) and the dirty flag.
    """
    if data.get("commit"):
        return str(data["commit"]), bool(data.get("dirty", False))
    m = _MEASURED_COMMIT.search(str(data.get("measured", "")))
    if m is None:
        return None, " with uncommitted changes" in str(data.get("measured", ""))
    return m.group(1), m.group(2) is not None


def staleness(data: Mapping, root: Path | None = None, paths: tuple[str, ...] = DETERMINING_PATHS) -> str | None:
    """Why a result file no longer describes the checkout's code, or None when it does.

    Parameters
    ----------
    data : mapping
        A parsed result file.
    root : Path, optional
        The repository (a git work tree; default :data:`ROOT`).
    paths : tuple of str
        The folders (relative to ``root``) whose code determines the figures.

    Returns
    -------
    str or None
        A reason in a few words: measured with uncommitted changes, at a
        commit whose code in ``paths`` differs from ``HEAD``'s, at a commit
        this clone does not hold (a shallow clone), or at no named commit.

    Notes
    -----
    One ``git diff`` over ``paths`` (the result files in :data:`IGNORED_PATHS` left aside).
    """
    at, dirty = measured_at(data)
    if dirty:
        return "measured with uncommitted changes"
    if at is None or not re.fullmatch(r"[0-9a-f]{7,40}", at):
        return "the file names no commit"
    spec = [*paths, *(f":(exclude){p}" for p in IGNORED_PATHS)]
    try:
        res = _git(["diff", "--quiet", at, "HEAD", "--", *spec], ROOT if root is None else root)
    except (OSError, subprocess.SubprocessError):
        return "git is not available to compare its commit with this checkout"
    if res.returncode == 0:
        return None
    if res.returncode == 1:
        return f"the code in {', '.join(p + '/' for p in paths)} changed since"
    return "its commit is not in this clone"


def measured(load_start: tuple[float, ...], load_end: tuple[float, ...] | None = None) -> str:
    """``"date, commit, machine (cpus, load)"``: when, on what code and where a benchmark ran."""
    load_end = os.getloadavg() if load_end is None else load_end
    return (f"{datetime.date.today().isoformat()}, {commit()}, {machine()} ({os.cpu_count()} cpus, load average "
            f"{load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end)")


def command(argv: list[str] | None = None) -> str:
    """The command line that ran this benchmark, with the script's path relative to the repository."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]).resolve() if argv else Path("?")
    try:
        shown = str(script.relative_to(ROOT))
    except ValueError:
        shown = str(argv[0])
    return " ".join(["python", shown, *(shlex.quote(a) for a in argv[1:])])


def problems(data: object) -> list[str]:
    """What keeps ``data`` (a parsed result file) from being one the build reads; ``[]`` if nothing."""
    if not isinstance(data, Mapping):
        return ["not a JSON object"]
    out = [f"no {f!r}" for f in FIELDS if f not in data]
    out += [f"{f!r} is not text" for f in ("command", "measured") if f in data and not isinstance(data[f], str)]
    if data.get("commit") is not None and not isinstance(data["commit"], str):
        out.append("'commit' is not text")
    if "dirty" in data and not isinstance(data["dirty"], bool):
        out.append("'dirty' is not true or false")
    values = data.get("values")
    if "values" in data and not isinstance(values, Mapping):
        out.append("'values' is not an object")
    elif isinstance(values, Mapping):
        out += [f"key {k!r} is not a substitution name" for k in values if not KEY.match(str(k))]
        out += [f"value of {k!r} is not text" for k, v in values.items() if not isinstance(v, str)]
        out += [f"value of {k!r} is empty" for k, v in values.items() if isinstance(v, str) and not v.strip()]
    return out


def write(path: str | os.PathLike, values: Mapping[str, str], *, load_start: tuple[float, ...],
          argv: list[str] | None = None, load_end: tuple[float, ...] | None = None) -> dict:
    """Write ``values`` (key -> text) with the command and the run's circumstances to ``path``; return the data.

    ``ValueError`` if a key cannot be a substitution name or a value is not text.
    """
    head, dirty = git_state(ROOT)
    data = {"command": command(argv), "measured": measured(load_start, load_end), "commit": head, "dirty": dirty,
            "values": dict(values)}
    found = problems(data)
    if found:
        raise ValueError(f"{path}: " + "; ".join(found))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"results written to {path} ({len(values)} values)")
    return data


def read(path: str | os.PathLike) -> dict:
    """A result file, parsed; ``ValueError`` if it is not of the form the build reads."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    found = problems(data)
    if found:
        raise ValueError(f"{path}: " + "; ".join(found))
    return data
