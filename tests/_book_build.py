"""One quick build of the book per test session, shared by test_notebooks.py and test_book.py.

Executes every numbered notebook with papermill (``quick=True``) through
``scripts/build_book.py``'s own functions, keeps each notebook's result (a failing
notebook does not hide the others), then renders the successful ones with
jupyter-book into a temporary folder.  Cached per process.

:func:`execute_variants` runs notebooks with parameter sets of their own (a
reader's re-run: one matrix, another seed, fewer folds), two at a time, through
the same ``build_book.execute_one`` as the build; test_notebook_parameters.py
checks the executed copies with :func:`benchsel_lib.book.checks.check_notebook`.
"""
from __future__ import annotations

import functools
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import build_book  # noqa: E402
import vendor_js  # noqa: E402

NOTEBOOKS = build_book.discover_notebooks()
QUICK_BUDGET_S = 600  # all notebooks, quick parameters (CI runs on 2 cores)


@dataclass
class QuickBuild:
    build_dir: Path
    html: Path | None
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    execute_seconds: float = 0.0
    render_error: str | None = None
    vendor_error: str | None = None


@functools.lru_cache(maxsize=1)
def quick_build() -> QuickBuild:
    build_dir = Path(tempfile.mkdtemp(prefix="benchsel-book-test-")) / "_build"
    build_dir.mkdir(parents=True)
    try:
        vendor_dir = vendor_js.vendor(quiet=True)
    except (SystemExit, OSError) as exc:  # npm missing or registry unreachable
        return QuickBuild(build_dir, None, vendor_error=str(exc))
    executed_dir = build_dir / "notebooks"
    t0 = time.perf_counter()
    if NOTEBOOKS:
        build_book.ensure_kernel()
    # a per-cell timeout turns a hung kernel conversation into a failure instead of a stalled CI job
    results = build_book.execute_all(NOTEBOOKS, executed_dir, {"quick": True}, jobs=2, timeout=QUICK_BUDGET_S)
    qb = QuickBuild(build_dir, None, {r["notebook"]: r for r in results}, time.perf_counter() - t0)
    ok = [executed_dir / r["notebook"] for r in results if not r["error"]]
    try:
        per_nb = {r["notebook"]: r["seconds"] for r in results if not r["error"]}
        build_book.assemble_source(ok, build_dir / "src", vendor_dir, build_book.build_substitutions(
            per_nb, execute_s=qb.execute_seconds, params={"quick": True}, jobs=2))
        qb.html = build_book.render(build_dir / "src", build_dir, strict=True)
    except build_book.BuildError as exc:
        qb.render_error = str(exc)
    return qb


def execute_variants(
    variants: list[tuple[Path, dict[str, Any]]], out_dir: Path, *, jobs: int = 2, timeout: int = QUICK_BUDGET_S,
) -> list[dict[str, Any]]:
    """Execute each ``(notebook, parameters)`` pair into its own folder of ``out_dir``, ``jobs`` at a time.

    Returns one dict per pair, in the order given: ``notebook``, ``seconds``,
    ``error`` (None when the run finished) as ``build_book.execute_one``
    reports them, plus ``params`` and ``path`` (the executed copy).  The
    costliest notebooks (static estimate) start first; a notebook that
    declares ``n_jobs`` runs its folds in its own process, as in a build.
    """
    if not variants:
        return []
    build_book.ensure_kernel()
    args = []
    for i, (nb, params) in enumerate(variants):
        dest = out_dir / f"{i:02d}-{nb.stem}" / nb.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        args.append((str(nb), str(dest), build_book.notebook_parameters(nb, params, jobs=jobs), str(ROOT), timeout))
    order = sorted(range(len(args)), key=lambda i: -build_book.notebook_cost(variants[i][0]))
    results: dict[int, dict[str, Any]] = {}
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {i: pool.submit(build_book.execute_one, *args[i]) for i in order}
        for i, fut in futures.items():
            results[i] = {**fut.result(), "params": variants[i][1], "path": Path(args[i][1])}
    return [results[i] for i in range(len(args))]
