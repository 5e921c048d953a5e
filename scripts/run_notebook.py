#!/usr/bin/env python
"""Execute one notebook with papermill exactly as the book build does, into a file of your choice.

Use this instead of a bare ``papermill notebooks/NN_x.ipynb out.ipynb ...`` call: a
plain papermill run can wait forever at a cell that displays ipywidgets (the
kernel client misses the wake-up of a reply that has already arrived; seen once
in about twenty runs).  This script runs the notebook through the build's own
code (``scripts/build_book.py``: :func:`build_book.execute_one`), so it gets

* the kernel client's 1 s re-poll of the kernel's replies, which finds such a
  reply instead of waiting for ever;
* a per-cell timeout (default :data:`build_book.DEFAULT_CELL_TIMEOUT_S` seconds,
  ``--timeout 0`` for none): a cell that runs longer fails the run with the cell
  named, instead of stalling it;
* the build's kernel environment (the repository on ``PYTHONPATH``, one BLAS
  thread, inline figures), the shared correlation-estimate cache
  ``_build/cache`` (``--no-cache`` to recompute; results are identical) and the
  removal of blank progress outputs;
* a registered ``python3`` kernel for this interpreter (registered if missing).

Parameters are given like papermill's (``-p NAME VALUE``, the value parsed as
YAML: ``True``, ``10``, ``0.5``, ``[0.1, 0.2]``, ``mteb``); ``--quick`` is
``-p quick True``.  The notebook may be named by its path or its number.

Usage::

    python scripts/run_notebook.py notebooks/04_greedy_cv.ipynb out.ipynb -p quick True -p k_max 10 -p seed 1
    python scripts/run_notebook.py 04 out.ipynb --quick          # the same notebook, by number
    python scripts/run_notebook.py 12 out.ipynb --timeout 1800   # a longer per-cell limit

Exit status 0 when every cell ran, 1 when a cell failed or timed out (the
partially executed copy is kept in the output file), 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

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


def run(notebook: Path, output: Path, params: dict, *, timeout: int | None = build_book.DEFAULT_CELL_TIMEOUT_S,
        cache: bool = True) -> dict:
    """Execute ``notebook`` into ``output`` the way the build does; the result dict of ``execute_one``."""
    output = output.resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    if cache:
        os.environ.setdefault("BENCHSEL_CACHE_DIR", str(ROOT / "_build" / "cache"))
    else:
        os.environ.pop("BENCHSEL_CACHE_DIR", None)
    build_book.ensure_kernel()
    return build_book.execute_one(str(notebook), str(output), params, str(ROOT), timeout)


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
                        help="per-cell timeout in seconds, 0 for none (default %(default)s)")
    parser.add_argument("--no-cache", action="store_true",
                        help="do not share training-split correlation estimates on disk (_build/cache)")
    args = parser.parse_args(argv)
    try:
        notebook = resolve_notebook(args.notebook)
        params = build_book.parse_parameters(args.parameter, quick=args.quick)
    except ValueError as exc:
        print(f"run_notebook: error: {exc}", file=sys.stderr)
        return 2
    if args.output.resolve() == notebook:
        print("run_notebook: error: the output would overwrite the notebook itself", file=sys.stderr)
        return 2
    timeout = args.timeout if args.timeout and args.timeout > 0 else None
    limit = f"{timeout} s per cell" if timeout else "no per-cell limit"
    print(f"run_notebook: executing {notebook.name} -> {args.output} ({limit}) ...", flush=True)
    result = run(notebook, args.output, params, timeout=timeout, cache=not args.no_cache)
    if result["error"]:
        print(f"run_notebook: {notebook.name} FAILED after {result['seconds']:.1f} s: {result['error']} "
              f"(partially executed copy in {args.output})", file=sys.stderr)
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
