"""The result files of the benchmarks, which the book quotes.

A benchmark run with ``--json PATH`` writes what it measured to
``benchmarks/results/<name>.json``::

    {"command": "python benchmarks/bench_recommend.py --quick --json ...",
     "measured": "2026-12-03, commit 1a2b3c4, AMD EPYC 7763 (2 cpus, load average 1.10 at the start, 1.90 at the end)",
     "values": {"mteb_k5_auto": "0.802", ...}}

Each value is text formatted as the benchmark prints it.  The book's build
(``scripts/build_book.py``) turns each file into MyST substitutions:
``{{ <name>_<key> }}`` for every value, ``{{ <name>_command }}`` and
``{{ <name>_measured }}``, with ``-`` in the file's name read as ``_``.  The
appendix pages quote them, so that every figure they print comes from a file
that a benchmark wrote.
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


def commit() -> str:
    """The checkout's commit, and whether its working tree had changes when the benchmark ran."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "commit unknown"
    if not head:
        return "commit unknown"
    return f"commit {head}" + (" with uncommitted changes" if dirty else "")


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
    data = {"command": command(argv), "measured": measured(load_start, load_end), "values": dict(values)}
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
