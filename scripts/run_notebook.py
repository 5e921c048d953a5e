#!/usr/bin/env python
"""Execute one notebook with papermill exactly as the book build does, into a file of your choice.

A bare ``papermill notebooks/NN_x.ipynb out.ipynb -k python3 -p quick True`` runs a
chapter too: no chapter displays an ``ipywidgets.interactive`` view, on which
about one bare run in twenty waited for ever (the client sends the view's
output state on the channel it waits on for the cell's reply, a known
nbclient bug); :func:`benchsel_lib.explorer` is the interactive view
that cannot stall: its panels are computed while its cell runs and its
controls are linked to them in the browser.  This script runs the
notebook through the build's own code (``scripts/build_book.py``:
:func:`build_book.execute_one`), so it also gets

* the kernel client's 1 s re-poll of the kernel's replies, a second guard
  against a reply whose wake-up was missed;
* a per-cell timeout (default :data:`build_book.DEFAULT_CELL_TIMEOUT_S` seconds,
  ``--timeout 0`` for none; a negative one is refused): a cell that runs longer
  fails the run with one line naming the cell, instead of stalling it (the
  kernel's own messages go to ``OUTPUT.log``);
* the build's kernel environment (the repository on ``PYTHONPATH``, one BLAS
  thread, inline figures), the shared correlation-estimate cache
  ``_build/cache`` (``--no-cache`` to recompute; results are identical) and the
  removal of blank progress outputs;
* a registered ``python3`` kernel for this interpreter (registered if missing).

Parameters are given like papermill's (``-p NAME VALUE``, the value parsed as
YAML: ``True``, ``10``, ``0.5``, ``[0.1, 0.2]``, ``mteb``); ``--quick`` is
``-p quick True``.  Unlike papermill, which passes an unknown name on with a
warning and runs the defaults, a name the notebook's ``parameters`` cell does
not assign is refused (the known ones are listed), and so is a value of another
kind than the default's (``-p k_max null`` where the default is ``15``), naming
the parameter.  The notebook may be named by its path or its number.

Usage::

    python scripts/run_notebook.py notebooks/04_greedy_cv.ipynb out.ipynb -p quick True -p k_max 10 -p seed 1
    python scripts/run_notebook.py 04 out.ipynb --quick          # the same notebook, by number
    python scripts/run_notebook.py 12 out.ipynb --timeout 1800   # a longer per-cell limit

Exit status 0 when every cell ran, 1 when a cell failed or timed out (the
partially executed copy is kept in the output file), 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import ast
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_book  # noqa: E402


def resolve_notebook(name: str) -> Path:
    """A notebook path, or a number / name prefix of a numbered notebook in ``notebooks/``."""
    path = Path(name)
    if path.is_file():
        return path.resolve()
    found = build_book.discover_notebooks(only=[name])
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError(f"no notebook {name!r} (neither a file nor a notebook number in {build_book.NOTEBOOK_DIR})")
    raise ValueError(f"{name!r} names {len(found)} notebooks: {', '.join(p.name for p in found)}")


def _kind(value: Any) -> str:
    """What a parameter value is, in words (for messages)."""
    if value is None:
        return "null"
    return {bool: "True or False", int: "an integer", float: "a number", str: "text", list: "a list",
            dict: "a mapping"}.get(type(value), type(value).__name__)


def _fits(value: Any, default: Any) -> bool:
    """Whether ``value`` is of the kind of ``default`` (an integer is a number; True is not an integer)."""
    if default is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple))
    return isinstance(value, type(default))


def check_parameters(notebook: Path, params: dict[str, Any], raw: dict[str, str]) -> None:
    """Refuse a parameter name the notebook does not declare, or a value unlike its default.

    Parameters
    ----------
    notebook : Path
        The notebook; its ``parameters`` cell is read by papermill's inspection.
    params : dict
        The parsed values (:func:`build_book.parse_parameters`).
    raw : dict
        The values as typed, for the messages.

    Raises
    ------
    ValueError
        One line: the unknown name with the close matches and every known
        name, or the parameter whose value is not of its default's kind.
    """
    import difflib

    import papermill as pm

    known = pm.inspect_notebook(str(notebook))
    for name, value in params.items():
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=2, cutoff=0.6) or \
                [k for k in known if k.lower() == name.lower()]
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            listed = ", ".join(known) if known else "none: it has no cell tagged 'parameters'"
            raise ValueError(f"{notebook.name} has no parameter {name!r}{hint} (its parameters: {listed})")
        try:
            default = ast.literal_eval(known[name]["default"])
        except (ValueError, SyntaxError, TypeError):  # an expression: nothing to compare with
            continue
        if not _fits(value, default):
            shown = raw.get(name, repr(value))
            raise ValueError(f"parameter {name}: expected {_kind(default)} like its default {default!r}, "
                             f"got {shown!r} ({_kind(value)})")


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Send this process's file descriptor 2, and so the kernel's messages, to ``path`` inside the block."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2: nothing to redirect
        yield
        return
    with open(path, "wb") as fh:
        os.dup2(fh.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def run(notebook: Path, output: Path, params: dict, *, timeout: int | None = build_book.DEFAULT_CELL_TIMEOUT_S,
        cache: bool = True) -> dict:
    """Execute ``notebook`` into ``output`` the way the build does; the result dict of ``execute_one``.

    The kernel's own messages (its log, a traceback when it is stopped at the
    time limit) go to ``output`` with the suffix ``.log``, kept when the run
    fails (``result["log"]``) and removed when it succeeds.
    """
    output = output.resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    if cache:
        os.environ.setdefault("BENCHSEL_CACHE_DIR", str(ROOT / "_build" / "cache"))
    else:
        os.environ.pop("BENCHSEL_CACHE_DIR", None)
    build_book.ensure_kernel()
    log = output.with_suffix(".log")
    with _stderr_to(log):
        result = build_book.execute_one(str(notebook), str(output), params, str(ROOT), timeout)
    if result["error"] and log.exists() and log.stat().st_size:
        result["log"] = str(log)
    else:
        log.unlink(missing_ok=True)
    return result


def _running_cell(output: Path) -> str:
    """``cell N of M (its first line: ...)`` for the last cell papermill started in ``output``."""
    import nbformat

    try:
        cells = nbformat.read(output, as_version=4).cells
    except Exception:  # no copy was written
        return "a cell"
    started = [i for i, c in enumerate(cells) if c.get("metadata", {}).get("papermill", {}).get("start_time")]
    if not started:
        return "a cell"
    i = started[-1]
    first = next((line for line in cells[i].source.splitlines() if line.strip()), "")
    first = first if len(first) <= 60 else first[:57] + "..."
    return f"cell {i + 1} of {len(cells)} (its first line: {first!r})"


def describe_failure(error: str, output: Path, timeout: int | None) -> str:
    """One line for a failed run: the cell that ran past the time limit, or the error's first line."""
    if error.startswith("CellTimeoutError"):
        return f"{_running_cell(output)} ran past the per-cell limit of {timeout} s (--timeout; CellTimeoutError)"
    first = error.strip().splitlines()[0] if error.strip() else error
    return first if len(first) <= 300 else first[:297] + "..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Execute one notebook with papermill, with the book build's kernel re-poll and per-cell timeout.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  python scripts/run_notebook.py notebooks/04_greedy_cv.ipynb out.ipynb -p quick True -p k_max 10\n"
               "  python scripts/run_notebook.py 04 out.ipynb --quick",
    )
    parser.add_argument("notebook", help="notebook path, or its number / name prefix (04, 04_greedy)")
    parser.add_argument("output", type=Path, help="where to write the executed notebook")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"),
                        help="papermill parameter (value parsed as YAML); repeatable")
    parser.add_argument("--quick", action="store_true", help="the same as -p quick True")
    parser.add_argument("--timeout", type=int, default=build_book.DEFAULT_CELL_TIMEOUT_S,
                        help="per-cell timeout in seconds, 0 for none (default %(default)s; not negative)")
    parser.add_argument("--no-cache", action="store_true",
                        help="do not share training-split correlation estimates on disk (_build/cache)")
    args = parser.parse_args(argv)
    try:
        if args.timeout < 0:
            raise ValueError(f"--timeout must be 0 (no limit) or a number of seconds, got {args.timeout}")
        notebook = resolve_notebook(args.notebook)
        params = build_book.parse_parameters(args.parameter, quick=args.quick)
        check_parameters(notebook, params, {name: raw for name, raw in args.parameter or []})
    except ValueError as exc:
        print(f"run_notebook: error: {exc}", file=sys.stderr)
        return 2
    if args.output.resolve() == notebook:
        print("run_notebook: error: the output would overwrite the notebook itself", file=sys.stderr)
        return 2
    timeout = args.timeout or None
    limit = f"{timeout} s per cell" if timeout else "no per-cell limit"
    print(f"run_notebook: executing {notebook.name} -> {args.output} ({limit}) ...", flush=True)
    result = run(notebook, args.output, params, timeout=timeout, cache=not args.no_cache)
    if result["error"]:
        log = f"; the kernel's messages: {result['log']}" if result.get("log") else ""
        print(f"run_notebook: {notebook.name} FAILED after {result['seconds']:.1f} s: "
              f"{describe_failure(result['error'], args.output, timeout)} (partially executed copy in "
              f"{args.output}{log})", file=sys.stderr)
        return 1
    print(f"run_notebook: {notebook.name} ok in {result['seconds']:.1f} s -> {args.output}")
    if notebook.parent == build_book.NOTEBOOK_DIR.resolve():  # a chapter: would its page pass the book's checks?
        from benchsel_lib.book import checks

        problems = checks.check_notebook(args.output)
        if problems:
            print("run_notebook: note: with these parameters the page would not pass the book's checks:\n"
                  + checks.format_problems(problems))
    return 0


if __name__ == "__main__":
    sys.exit(main())
