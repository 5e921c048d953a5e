#!/usr/bin/env python
"""Build the benchsel book: execute the notebooks with papermill, then render them.

Steps
-----
1. Vendor MathJax 3, require.js and the ipywidgets HTML manager from the npm
   registry into ``book/_vendor/`` (``scripts/vendor_js.py``; skipped when present).
2. Make sure a ``python3`` Jupyter kernel for this interpreter is registered
   (``python -m ipykernel install --sys-prefix`` when missing).
3. Execute every numbered notebook ``notebooks/NN_*.ipynb`` with papermill into
   ``<build>/notebooks/`` (``notebooks/`` itself is never written), two at a time
   by default.  A failing cell fails the build: the exit status is nonzero and the
   failing notebook is named (its partially executed copy is kept for inspection).
   Papermill's injected "# Parameters" cell is tagged ``remove-cell`` in the copies.
4. Assemble a book source in ``<build>/src/``: ``_config.yml`` (with the vendor
   path and the repository files it names, the favicon and the local Sphinx
   extension ``book/_ext/benchsel_html.py``, made absolute), a ``_toc.yml``
   filtered to the notebooks that exist (plus any other numbered notebook under
   "Additional notebooks"), ``intro.md``, the other pages the toc lists (the
   appendix, ``docs/*.md``; links to missing notebooks become plain text in
   these, in ``intro.md`` and in the notebooks) and the *executed* notebooks.
   The line ``% generated: ...`` of ``docs/differences.md`` becomes this run's
   verdict rule and its claims that are not reproduced, and a page that quotes
   a result file of ``benchmarks/results/`` measured on other code gets a note
   at its top (``--stale-results fail``: the build fails instead); see
   ``scripts/book_pages.py``. Without a repository (``repository.url`` empty
   and no ``BENCHSEL_REPOSITORY_URL``) the site has no repository or launch
   button; ``scripts/set_repository.py`` names one.
5. ``jupyter-book build <build>/src -W -n --keep-going --all`` with
   ``execute_notebooks: "off"``; the site ends up in ``<build>/html/`` (its
   bare ``index.html`` redirect made a complete page with the favicon).
   Before rendering, every executed notebook is checked
   (:func:`benchsel_lib.book.checks.check_notebook`): a cell error or
   warning output, a placeholder that Jupyter shows raw, a paper chapter
   without its claims table, a hidden cell whose source Jupyter shows, or
   computed text that reads ``nan`` fails the build, with the notebook, cell
   and rule named;
   so does one quantity (a claims row's ``key``) that reads differently on two pages.
6. Write the timings (seconds per notebook, execution, rendering, total, the
   load average before and after) to ``<build>/timings.json`` and print them.

Notebooks start longest first, by the static cost estimate in each notebook's
metadata (``"benchsel": {"cost_s": ...}``, seconds at the paper's parameters
on one core), so that the two workers stay busy to the end; the order never
depends on an earlier build. While several notebooks run at once, those with an
``n_jobs`` parameter get ``n_jobs=1`` (unless ``-p n_jobs N`` is given): the
notebooks already use the cores, and a pool of fold workers inside each would
only add its start-up and contention.

Usage
-----
::

    python scripts/build_book.py                      # paper parameters
    python scripts/build_book.py --quick              # passes quick=True to every notebook
    python scripts/build_book.py -p seed 1 -p k_max 10  # any papermill parameter (all notebooks)
    python scripts/build_book.py --only 04 05         # a subset (by number or name prefix)
    python scripts/build_book.py --jobs 1             # serial execution
    python scripts/build_book.py --timeout 1800       # per-cell limit in seconds (0: none)
    python scripts/build_book.py --skip-execute       # re-render the last executed copies
    python scripts/build_book.py --no-cache           # recompute every correlation estimate
    python scripts/build_book.py --fresh              # empty the shared cache first (a fresh clone's build)

``-p NAME VALUE`` values are parsed as YAML, like papermill's own ``-p`` (``True``,
``10``, ``0.5``, ``[0.1, 0.2]``, ``mteb``); a parameter a notebook does not declare
is injected anyway (papermill warns).  Every cell has a time limit
(``--timeout``, default :data:`DEFAULT_CELL_TIMEOUT_S` seconds; 0 for none), and
the kernel client re-polls the kernel every second (:func:`_sliced_zmq_polling`),
so that no run waits for ever at a widget cell.  Per-notebook overrides, with the
same limit and re-poll: ``python scripts/run_notebook.py notebooks/04_greedy_cv.ipynb
out.ipynb -p k_max 10`` (not a bare ``papermill`` call, which has neither).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOK_RE = re.compile(r"^(\d{2})_[A-Za-z0-9_\-]+\.ipynb$")
KERNEL_NAME = "python3"
# Per-cell time limit of a build (and of scripts/run_notebook.py). The costliest notebook
# takes about 2 minutes in all at the paper's parameters on one core, so a cell that
# runs 10 minutes is stuck; --timeout 0 removes the limit.
DEFAULT_CELL_TIMEOUT_S = 600

sys.path.insert(0, str(ROOT / "scripts"))
import book_pages  # noqa: E402
import vendor_js  # noqa: E402


class BuildError(RuntimeError):
    """A step of the build failed (message says which)."""


def discover_notebooks(notebook_dir: Path = NOTEBOOK_DIR, only: list[str] | None = None) -> list[Path]:
    """Numbered notebooks ``NN_*.ipynb`` in reading order, optionally filtered.

    ``only`` entries match a notebook whose stem starts with the entry
    (``"04"``, ``"04_greedy"``) or equals it.
    """
    found = sorted(p for p in notebook_dir.glob("*.ipynb") if NOTEBOOK_RE.match(p.name))
    if only:
        found = [p for p in found if any(p.stem.startswith(o) or p.name == o for o in only)]
    return found


def ensure_kernel() -> None:
    """Register an ipykernel ``python3`` spec for this interpreter if none exists."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
        exe = spec.argv[0] if spec.argv else ""
        # jupyter_client maps a bare "python" to sys.executable
        if exe in {"python", "python3"} or Path(exe).resolve() == Path(sys.executable).resolve():
            return
        print(f"build_book: kernel {KERNEL_NAME!r} points to {exe}; registering this interpreter")
    except NoSuchKernel:
        print(f"build_book: no {KERNEL_NAME!r} kernel; registering this interpreter")
    subprocess.run(
        [sys.executable, "-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL_NAME],
        check=True,
    )


def parse_parameters(pairs: list[list[str]] | None, *, quick: bool) -> dict[str, Any]:
    """``-p name value`` pairs -> dict (values parsed as YAML); ``quick`` adds quick=True."""
    params: dict[str, Any] = {}
    if quick:
        params["quick"] = True
    for name, raw in pairs or []:
        if not name.isidentifier():
            raise ValueError(f"parameter name {name!r} is not a Python identifier")
        try:
            params[name] = yaml.safe_load(raw)
        except yaml.YAMLError:
            params[name] = raw
    return params


def _kernel_env(root: Path) -> None:
    """Environment inherited by the kernels (set in each worker process)."""
    # inline figures need the inline backend: a global MPLBACKEND=Agg would drop them
    os.environ.pop("MPLBACKEND", None)
    pp = os.environ.get("PYTHONPATH", "")
    if str(root) not in pp.split(os.pathsep):
        os.environ["PYTHONPATH"] = str(root) + (os.pathsep + pp if pp else "")
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    # Notebooks run two at a time on small matrices: one BLAS thread per kernel
    # avoids oversubscription (measured 20-70x slowdowns of eigh/EM otherwise).
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    # two notebooks share the estimate cache: waiting for the other one's estimate is no output of a page
    quiet = "ignore:waiting for :UserWarning,ignore:taking over cache lock:UserWarning"
    os.environ["PYTHONWARNINGS"] = ",".join(w for w in (os.environ.get("PYTHONWARNINGS"), quiet) if w)


_POLL_SLICE_S = 1.0


def _sliced_zmq_polling() -> None:
    """Make the kernel client's message waits poll in 1 s slices (in this process).

    nbclient sometimes waits forever for a reply that has already arrived when
    a cell displays ipywidgets (jupyter/nbclient#312): the asyncio poll of the
    ZMQ socket misses its wake-up and, with no timeout, never looks again.
    This happened to the explorer cells here in roughly one quick build in
    three. Re-polling every second finds the waiting message; the overall
    timeout is unchanged. ``scripts/run_notebook.py`` applies it to a single
    notebook run too (a bare ``papermill`` call has no such re-poll).
    """
    from queue import Empty

    from jupyter_client.channels import AsyncZMQSocketChannel

    if getattr(AsyncZMQSocketChannel, "_benchsel_sliced", False):
        return
    original = AsyncZMQSocketChannel.get_msg

    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = _POLL_SLICE_S if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await original(self, timeout=min(_POLL_SLICE_S, left))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    AsyncZMQSocketChannel.get_msg = get_msg
    AsyncZMQSocketChannel._benchsel_sliced = True


def _end_processes(procs: list[Any], *, grace_s: float = 3.0) -> None:
    """Terminate the processes still running in ``procs``, then kill those that outlive ``grace_s``."""
    import psutil

    alive = [p for p in procs if p.is_running()]
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, left = psutil.wait_procs(alive, timeout=grace_s)
    for p in left:
        with contextlib.suppress(psutil.Error):
            p.kill()


def reaping_kernel_manager() -> type:
    """A jupyter_client kernel manager that ends the kernel's child processes when the kernel is shut down.

    A chapter's parallel cross-validation starts joblib's loky workers (and
    their resource trackers) from the kernel. When the kernel is shut down,
    nothing ends them: they stay alive, orphaned, until loky's idle timeout
    (minutes, about 450 MB for two workers). This manager records the
    kernel's descendants just before the shutdown and ends the survivors
    after it, so a notebook run or a book build leaves no process behind.
    """
    import psutil
    from jupyter_client.manager import AsyncKernelManager

    class ReapingKernelManager(AsyncKernelManager):
        async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
            process = getattr(getattr(self, "provisioner", None), "process", None)
            try:
                children = psutil.Process(process.pid).children(recursive=True) if process is not None else []
            except psutil.Error:
                children = []
            await super().shutdown_kernel(now=now, restart=restart)
            _end_processes(children)

    return ReapingKernelManager


#: How often a notebook is started again when its kernel dies before running any cell.
KERNEL_START_ATTEMPTS = 3
_KERNEL_START_FAILURES = ("Kernel died before replying to kernel_info", "Kernel didn't respond in")


def _kernel_start_failed(error: str | None) -> bool:
    """Whether ``error`` says the kernel never started (no cell ran), as opposed to a failure of the notebook.

    Two kernels launched at the same moment can pick the same free TCP port
    (jupyter_client chooses ports by binding and releasing them); the loser
    dies before its first reply. Nothing of the notebook ran, so starting it
    again is safe.
    """
    return error is not None and any(f in error for f in _KERNEL_START_FAILURES)


def execute_one(src: str, dest: str, params: dict[str, Any], root: str, timeout: int | None) -> dict[str, Any]:
    """Execute one notebook with papermill (run in a worker process).

    A kernel that dies before running any cell is started again, up to
    :data:`KERNEL_START_ATTEMPTS` times in all (``starts`` in the result).
    """
    import papermill as pm

    _kernel_env(Path(root))
    _sliced_zmq_polling()
    t0 = time.perf_counter()
    for attempt in range(1, KERNEL_START_ATTEMPTS + 1):
        error = None
        try:
            pm.execute_notebook(
                src,
                dest,
                parameters=params,
                kernel_name=KERNEL_NAME,
                cwd=str(Path(dest).parent),
                progress_bar=False,
                log_output=False,
                execution_timeout=timeout,
                kernel_manager_class=reaping_kernel_manager(),
            )
        except pm.PapermillExecutionError as exc:
            error = f"cell {exc.exec_count}: {exc.ename}: {exc.evalue}"
        except Exception as exc:  # kernel died, bad notebook, ...
            error = f"{type(exc).__name__}: {exc}"
        if not _kernel_start_failed(error):
            break
        time.sleep(0.5 * attempt)
    if error is None:
        strip_blank_outputs(Path(dest))
        hide_injected_parameters(Path(dest))
    return {"notebook": Path(src).name, "seconds": time.perf_counter() - t0, "error": error, "starts": attempt}


def _is_blank(output: dict[str, Any]) -> bool:
    """A display output whose only content is empty text (a finished progress bar)."""
    if output.get("output_type") not in ("display_data", "update_display_data"):
        return False
    data = output.get("data", {})
    return set(data) <= {"text/plain"} and not str(data.get("text/plain", "")).strip()


def strip_blank_outputs(path: Path) -> int:
    """Remove blank display outputs from an executed notebook; return how many.

    The library's progress bar (``benchsel_lib._progress``) blanks its line
    when a loop ends; nbclient keeps that empty display, which Jupyter Book
    would render as an empty output box.
    """
    import nbformat

    nb = nbformat.read(path, as_version=4)
    n = 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        keep = [o for o in cell.get("outputs", []) if not _is_blank(o)]
        n += len(cell["outputs"]) - len(keep)
        cell["outputs"] = keep
    if n:
        nbformat.write(nb, path)
    return n


INJECTED_TAG = "injected-parameters"


def _hide_injected(nb: dict[str, Any]) -> bool:
    """Tag the cell that papermill injected (``injected-parameters``) ``remove-cell``, its source hidden; True if changed."""
    changed = False
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {})
        tags = meta.get("tags", [])
        if INJECTED_TAG in tags and "remove-cell" not in tags:
            meta["tags"] = [*tags, "remove-cell"]
            changed = True
        if INJECTED_TAG in tags and not meta.get("jupyter", {}).get("source_hidden"):
            meta.setdefault("jupyter", {})["source_hidden"] = True  # collapsed in JupyterLab too
            changed = True
    return changed


def hide_injected_parameters(path: Path) -> bool:
    """Keep papermill's injected "# Parameters" cell off the site: tag it ``remove-cell``.

    Parameters
    ----------
    path : Path
        An executed notebook, rewritten in place when it has such a cell
        without the tag.

    Returns
    -------
    bool
        Whether the notebook was changed (idempotent: a second call returns False).
    """
    nb = json.loads(path.read_text(encoding="utf-8"))
    if not _hide_injected(nb):
        return False
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return True


def notebook_cost(path: Path) -> float:
    """Static cost estimate of a notebook: ``metadata["benchsel"]["cost_s"]`` (0 when absent)."""
    meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
    try:
        return float(meta.get("benchsel", {}).get("cost_s", 0.0))
    except (TypeError, ValueError):
        return 0.0


def schedule(notebooks: list[Path], costs: dict[str, float] | None = None) -> list[Path]:
    """Order in which to start the notebooks: the costliest first.

    With two workers, starting the longest notebooks first keeps both busy
    until the end (instead of one long notebook running alone at the tail).
    ``costs`` maps notebook names to estimated seconds (default: each
    notebook's :func:`notebook_cost`); ties keep reading order.
    """
    if costs is None:
        costs = {nb.name: notebook_cost(nb) for nb in notebooks}
    pos = {nb.name: i for i, nb in enumerate(notebooks)}
    return sorted(notebooks, key=lambda nb: (-costs.get(nb.name, 0.0), pos[nb.name]))


def _source(cell: dict[str, Any]) -> str:
    """A notebook cell's source as one string (nbformat stores a string or a list of lines)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def check_pages(executed: list[Path]) -> None:
    """Raise BuildError listing the problems of the executed notebooks (:mod:`benchsel_lib.book.checks`).

    A page fails when a cell raised or wrote to standard error, when a
    Markdown cell holds a placeholder that Jupyter shows raw (``{glue}``, a
    MyST directive), when a paper chapter shows no claims table before its
    first figure, when a hidden cell's source is not hidden in Jupyter, or
    when computed text reads ``nan``.
    """
    from benchsel_lib.book import checks

    found = checks.check_notebooks(executed)
    if found:
        raise BuildError("the executed pages do not pass the book's checks:\n" + checks.format_problems(found))


def check_claims_agree(executed: list[Path]) -> None:
    """Raise BuildError when one quantity (a claims row's ``key``) reads differently on two pages.

    Rows with the same key must agree in ``paper``, ``run`` and ``verdict``
    (:func:`book_pages.claims_disagreements`); the error names the key and
    both pages.
    """
    found = book_pages.claims_disagreements(executed)
    if found:
        raise BuildError("the claims tables disagree:\n" + "\n".join(f"  {line}" for line in found))


def parameter_names(path: Path) -> list[str]:
    """The names that the ``parameters``-tagged cell of notebook ``path`` assigns, in order."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            return re.findall(r"^([A-Za-z_]\w*)\s*=", _source(cell), flags=re.M)
    return []


def _library_names() -> set[str]:
    """Public names of the library (and its subpackages) that read as code: those with an underscore."""
    import importlib

    names: set[str] = set()
    for mod in ("benchsel_lib", "benchsel_lib.data", "benchsel_lib.method", "benchsel_lib.protocol",
                "benchsel_lib.studies"):
        names.update(n for n in getattr(importlib.import_module(mod), "__all__", ()) if "_" in n.strip("_"))
    return names


#: Notebooks whose page reproduces a part of the paper (a claims table opens them); the others teach the API.
PAPER_CHAPTERS = tuple(f"{i:02d}" for i in range(1, 11))
#: Appendix pages with a word limit of their own.
WORD_LIMITS = {"docs/recommended": 4000}


def site_check_pages(executed: list[Path], html_dir: Path) -> dict[str, dict[str, Any]]:
    """The pages of the site that :func:`check_site_pages` checks, with the options of each."""
    from benchsel_lib.book import site

    params = sorted({n for nb in NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb") for n in parameter_names(nb) if "_" in n})
    names = sorted(_library_names())
    pages: dict[str, dict[str, Any]] = {}
    for nb in executed:
        paper = nb.name[:2] in PAPER_CHAPTERS
        pages[f"notebooks/{nb.stem}.html"] = {"names": names, "parameters": params, "needs_claims": paper,
                                             "teaches_api": not paper}
    if (html_dir / "intro.html").is_file():
        pages["intro.html"] = {"names": names, "parameters": params, "teaches_api": True}
    for doc in sorted(html_dir.glob("docs/*.html")):
        key = f"docs/{doc.stem}"
        pages[f"{key}.html"] = {"names": names, "parameters": params, "teaches_api": True,
                                "word_limit": WORD_LIMITS.get(key, site.WORD_LIMIT)}
    return pages


def check_site_pages(html_dir: Path, executed: list[Path], *, strict: bool = True) -> list[str]:
    """Check the rendered pages (:mod:`benchsel_lib.book.site`); raise BuildError on a problem if ``strict``.

    What a reader sees on the HTML pages: sentences said twice, code names in
    the prose, tables cut or showing their index or ``nan``, a paper chapter
    without its claims table, a page longer than its word limit.
    """
    from benchsel_lib.book import site

    problems = site.check_site(html_dir, site_check_pages(executed, html_dir))
    lines = [str(p) for p in problems]
    if lines and strict:
        raise BuildError("the rendered pages do not pass the site checks:\n" + "\n".join(lines))
    for line in lines:
        print(f"build_book: site check: {line}")
    return lines


def declares_parameter(path: Path, name: str) -> bool:
    """Does the ``parameters``-tagged cell of notebook ``path`` assign ``name``?"""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            src = _source(cell)
            return re.search(rf"^{re.escape(name)}\s*=", src, flags=re.M) is not None
    return False


def notebook_parameters(path: Path, params: dict[str, Any], *, jobs: int) -> dict[str, Any]:
    """The papermill parameters of one notebook in a build that runs ``jobs`` notebooks at once.

    With ``jobs > 1`` the notebooks already keep the cores busy, so a notebook
    that declares ``n_jobs`` (worker processes over its CV folds) runs its
    folds in its own process (``n_jobs=1``) unless ``params`` sets it: a pool
    would only add its start-up and contention (the results do not depend on
    ``n_jobs``).
    """
    if jobs > 1 and "n_jobs" not in params and declares_parameter(path, "n_jobs"):
        return {**params, "n_jobs": 1}
    return params


def execute_all(
    notebooks: list[Path], out_dir: Path, params: dict[str, Any], *, jobs: int = 2, timeout: int | None = None,
) -> list[dict[str, Any]]:
    """Execute ``notebooks`` into ``out_dir``; one dict (notebook, seconds, error) each, in reading order.

    With ``jobs > 1`` the costliest notebooks start first, see :func:`schedule`.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    order = schedule(notebooks) if jobs > 1 else list(notebooks)
    args = [(str(nb), str(out_dir / nb.name), notebook_parameters(nb, params, jobs=min(jobs, len(notebooks))), str(ROOT), timeout)
            for nb in order]
    if jobs <= 1 or len(notebooks) <= 1:
        for a in args:
            print(f"build_book: executing {Path(a[0]).name} ...", flush=True)
            results.append(execute_one(*a))
            _report(results[-1])
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {}
            for a in args:
                print(f"build_book: executing {Path(a[0]).name} ...", flush=True)
                futures[pool.submit(execute_one, *a)] = a
            for fut in as_completed(futures):
                results.append(fut.result())
                _report(results[-1])
    order = {nb.name: i for i, nb in enumerate(notebooks)}
    return sorted(results, key=lambda r: order[r["notebook"]])


def execute_notebooks(
    notebooks: list[Path], out_dir: Path, params: dict[str, Any], *, jobs: int = 2, timeout: int | None = None,
) -> dict[str, float]:
    """Execute ``notebooks`` into ``out_dir``; raise BuildError naming any failure."""
    results = execute_all(notebooks, out_dir, params, jobs=jobs, timeout=timeout)
    failed = [r for r in results if r["error"]]
    if failed:
        lines = "\n".join(f"  {r['notebook']}: {r['error']}" for r in failed)
        raise BuildError(
            f"{len(failed)} notebook(s) failed to execute (executed copies in {out_dir}):\n{lines}"
        )
    return {r["notebook"]: round(r["seconds"], 2) for r in results}


def _report(r: dict[str, Any]) -> None:
    status = "FAILED " + r["error"] if r["error"] else "ok"
    print(f"build_book:   {r['notebook']}: {r['seconds']:.1f} s {status}", flush=True)


def make_toc(
    toc: dict[str, Any], present: set[str], pages: set[str] | None = None,
) -> tuple[dict[str, Any], list[str], list[str]]:
    """Filter ``toc`` to the notebook entries in ``present`` (paths without suffix).

    Entries outside ``notebooks/`` (the appendix pages ``docs/*``) are kept
    when ``pages`` is None or lists them, and dropped otherwise.

    Returns the new toc, the entries dropped and the present notebooks that the toc
    does not list (appended under "Additional notebooks").
    """
    listed: set[str] = set()
    dropped: list[str] = []
    parts = []
    for part in toc.get("parts", []):
        chapters = []
        for ch in part.get("chapters", []):
            f = ch.get("file", "")
            if f.startswith("notebooks/"):
                listed.add(f)
                if f not in present:
                    dropped.append(f)
                    continue
            elif f and pages is not None and f not in pages:
                dropped.append(f)
                continue
            chapters.append(ch)
        if chapters:
            parts.append({**part, "chapters": chapters})
    extra = sorted(present - listed)
    if extra:
        parts.append({"caption": "Additional notebooks", "chapters": [{"file": f} for f in extra]})
    new = {k: v for k, v in toc.items() if k != "parts"}
    if parts:
        new["parts"] = parts
    return new, dropped, extra


_PAGE_LINK = re.compile(r"\[([^\]]+)\]\(([^)#\s:]+\.(?:ipynb|md))(#[^)\s]*)?\)")


def _unlink_missing(text: str, present: set[str], base: str = "", absent: set[str] | frozenset[str] = frozenset()) -> str:
    """Markdown links to notebooks that are not built, or to toc pages in ``absent``, become plain text.

    ``present`` holds the built notebooks (``notebooks/04_greedy_cv``);
    ``absent`` the toc entries whose page has no file (``docs/sweeps``).
    ``base`` is the folder of the page below the book root (``"docs"`` for
    ``docs/performance.md``), against which relative links such as
    ``../notebooks/04_greedy_cv.ipynb`` are resolved. Other links are left
    alone (a broken one fails the strict rendering).
    """

    def repl(m: re.Match[str]) -> str:
        target = posixpath.normpath(posixpath.join(base, m.group(2)))
        stem, suffix = posixpath.splitext(target)
        if suffix == ".ipynb" and stem.startswith("notebooks/"):
            missing = stem not in present
        else:
            missing = stem in absent
        return f"{m.group(1)} (not yet available)" if missing else m.group(0)

    return _PAGE_LINK.sub(repl, text)


PAGE_SUFFIXES = (".md", ".ipynb")


def toc_files(toc: dict[str, Any]) -> list[str]:
    """Every ``file`` entry of ``toc`` (chapters and nested sections), in order, without the root."""
    found: list[str] = []

    def walk(entries: list[dict[str, Any]]) -> None:
        for e in entries:
            if e.get("file"):
                found.append(e["file"])
            walk(e.get("sections", []))

    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    walk(toc.get("chapters", []))
    return found


def page_source(entry: str, root: Path = ROOT) -> Path | None:
    """The file of a non-notebook toc entry (``docs/performance`` -> ``docs/performance.md``), or None."""
    for suffix in ("",) + PAGE_SUFFIXES:
        path = root / f"{entry}{suffix}"
        if path.is_file() and (suffix or path.suffix in PAGE_SUFFIXES):
            return path
    return None


def copy_pages(toc: dict[str, Any], src_dir: Path, present: set[str], root: Path = ROOT) -> tuple[set[str], list[str]]:
    """Copy the non-notebook pages that ``toc`` lists (``docs/*.md``) from ``root`` into ``src_dir``.

    Markdown links to notebooks that are not built become plain text (as on the
    landing page). Returns the entries copied and those without a file.
    """
    sources = {e: page_source(e, root) for e in toc_files(toc) if not e.startswith("notebooks/")}
    missing = [e for e, path in sources.items() if path is None]
    for entry, path in sources.items():
        if path is None:
            continue
        rel = path.relative_to(root)
        dest = src_dir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".md":
            text = _unlink_missing(path.read_text(encoding="utf-8"), present, posixpath.dirname(rel.as_posix()),
                                   set(missing))
            dest.write_text(text, encoding="utf-8")
        else:
            shutil.copy2(path, dest)
    return {e for e, path in sources.items() if path is not None}, missing


REPOSITORY_ENV = "BENCHSEL_REPOSITORY_URL"
BRANCH_ENV = "BENCHSEL_REPOSITORY_BRANCH"


def configure_buttons(config: dict[str, Any], url: str | None, branch: str | None = None) -> dict[str, Any]:
    """Return ``config`` (parsed ``_config.yml``) with the repository and launch buttons set from ``url``.

    ``url`` (the environment variable :data:`REPOSITORY_ENV`) overrides the
    configuration's ``repository.url``. With a repository URL
    (``https://github.com/<owner>/<name>``) the repository button and the Binder launch button point to it (Colab only
    for a GitHub URL, the only kind it opens). Without one, the repository
    URL, the repository button and every launch button are removed, so that
    no button leads to a page that does not exist; the download button is
    untouched.
    """
    config = json.loads(json.dumps(config))
    repo = config.setdefault("repository", {})
    html = config.setdefault("html", {})
    launch = config.setdefault("launch_buttons", {})
    url = (url or repo.get("url") or "").strip().rstrip("/")
    if url:
        if not re.match(r"^https?://[^/\s]+/\S+$", url):
            raise ValueError(f"{REPOSITORY_ENV}={url!r} is not a repository URL (https://host/owner/name)")
        repo["url"] = url
        if branch:
            repo["branch"] = branch
        html["use_repository_button"] = True
        if "github.com/" not in url:
            launch.pop("colab_url", None)
    else:
        repo.pop("url", None)
        html["use_repository_button"] = False
        html["use_issues_button"] = False
        html["use_edit_page_button"] = False
        for key in ("binderhub_url", "colab_url", "jupyterhub_url", "thebe"):
            launch.pop(key, None)
    return config


def resolve_config_paths(config: dict[str, Any], root: Path = ROOT) -> dict[str, Any]:
    """Return ``config`` (parsed ``_config.yml``) with its repository file paths made absolute.

    The book is rendered from a copy of the configuration in ``<build>/src``, so
    the paths that ``_config.yml`` gives relative to itself (the favicon, the
    logo, the folders of local Sphinx extensions) are resolved against ``root``.
    URLs and absolute paths are left alone.
    """
    config = json.loads(json.dumps(config))

    def absolute(value: Any) -> Any:
        if not isinstance(value, str) or not value or re.match(r"^[a-z][a-z0-9+.-]*://", value):
            return value
        if Path(value).is_absolute():
            return value
        return str((root / value).resolve())

    html = config.get("html") or {}
    for key in ("favicon",):
        if key in html:
            html[key] = absolute(html[key])
    if "logo" in config:
        config["logo"] = absolute(config["logo"])
    local = (config.get("sphinx") or {}).get("local_extensions") or {}
    for name in list(local):
        local[name] = absolute(local[name])
    return config


RESULTS_DIR = ROOT / "benchmarks" / "results"
_SUBSTITUTION = re.compile(r"\{\{(.*?)\}\}", flags=re.S)


def quoted_names(text: str) -> set[str]:
    """The names a page's MyST substitutions (``{{ name }}``, ``{{ "`" ~ name ~ "`" }}``) read."""
    names: set[str] = set()
    for expr in _SUBSTITUTION.findall(text):
        expr = re.sub(r"\"[^\"]*\"|'[^']*'", " ", expr)
        names.update(re.findall(r"[A-Za-z_]\w*", expr))
    return names


def bench_substitutions(results_dir: Path = RESULTS_DIR) -> dict[str, str]:
    """The figures that the benchmarks wrote, as MyST substitutions for the appendix pages.

    Each ``<results_dir>/<name>.json`` holds ``{"command": ..., "measured": ...,
    "values": {key: text}}``, written by a script of ``benchmarks/``; a page
    quotes ``{{ <name>_<key> }}``, ``{{ <name>_command }}`` or ``{{ <name>_measured }}``.
    A value is text as the benchmark formatted it, so the page prints what the
    benchmark printed.
    """
    subs: dict[str, str] = {}
    for path in sorted(Path(results_dir).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        name = path.stem.replace("-", "_")
        subs[f"{name}_command"] = str(data.get("command", ""))
        subs[f"{name}_measured"] = str(data.get("measured", ""))
        for key, value in (data.get("values") or {}).items():
            subs[f"{name}_{key}"] = str(value)
    return subs


def build_substitutions(per_nb: dict[str, float], *, execute_s: float | None, params: dict[str, Any],
                        jobs: int) -> dict[str, str]:
    """This build's own figures as MyST substitutions (``{{ build_execute_s }}``, ``{{ build_nb_12_s }}``, ...)."""
    subs = {"build_parameters": "quick parameters" if params.get("quick") else "the notebooks' own parameters",
            "build_jobs": str(jobs), "build_cpus": str(os.cpu_count()),
            "build_execute_s": "not measured (the notebooks were not executed)" if execute_s is None
            else f"{execute_s:.1f}"}
    for name, sec in per_nb.items():
        subs[f"build_nb_{name[:2]}_s"] = f"{sec:.1f}"
    return subs


def rerun_cell(nb: Path, repository: str | None, branch: str) -> dict[str, Any]:
    """A Markdown cell telling the reader how to re-run chapter ``nb`` with other parameters, and where its source is.

    With a ``repository`` it links the notebook's source there and points to
    the launch buttons (Binder, Colab); without one it points to the page's
    download button (the executed ``.ipynb``) and names no repository.
    """
    names = parameter_names(nb)
    example = ("seed", "1") if "seed" in names else ("quick", "True")
    rel = f"notebooks/{nb.name}"
    command = (f"`.venv/bin/python scripts/run_notebook.py {rel} out.ipynb -p {example[0]} {example[1]}`, "
               "one `-p NAME VALUE` for each parameter to change (`papermill` takes the same options)")
    if repository:
        where = (f"Its source is [{rel}]({repository}/blob/{branch}/{rel}); the launch button at the top of the "
                 "page opens it on Binder or Colab, where its first, hidden cell installs the project. ")
    else:
        where = ("The download button at the top of the page gives this notebook with its outputs (`.ipynb`). ")
    text = (":::{admonition} Re-run this chapter with other parameters\n:class: rerun\n"
            f"The cell below holds the chapter's parameters. {where}"
            f"In a clone of the project, after `make install`: {command}.\n:::")
    return {"cell_type": "markdown", "id": "rerun-this-chapter", "metadata": {"tags": ["rerun"]}, "source": text}


def _unlink_missing_in_notebook(nb: dict[str, Any], present: set[str]) -> None:
    """Links of Markdown cells and ``text/markdown`` outputs to notebooks not in ``present`` become text."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            cell["source"] = _unlink_missing(_source(cell), present, "notebooks")
        for out in cell.get("outputs", []):
            data = out.get("data") or {}
            if "text/markdown" in data:
                md = data["text/markdown"]
                data["text/markdown"] = _unlink_missing("".join(md) if isinstance(md, list) else md, present,
                                                        "notebooks")


def add_rerun_cell(src: Path, dest: Path, repository: str | None, branch: str,
                   present: set[str] | None = None) -> None:
    """Copy executed notebook ``src`` to ``dest`` with :func:`rerun_cell` just above its parameters cell.

    The copy's injected parameters cell is tagged ``remove-cell`` too (see
    :func:`hide_injected_parameters`), so that a copy executed elsewhere
    shows no "# Parameters" cell either. With ``present`` (the notebooks of
    this build, ``notebooks/04_greedy_cv``), links to other notebooks become
    plain text (as on the appendix pages).
    """
    nb = json.loads(src.read_text(encoding="utf-8"))
    _hide_injected(nb)
    if present is not None:
        _unlink_missing_in_notebook(nb, present)
    cells = nb.get("cells", [])
    at = next((i for i, c in enumerate(cells) if c.get("cell_type") == "code"
               and "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if at is None:
        at = 1 if cells and cells[0].get("cell_type") == "markdown" else 0
    cells.insert(at, rerun_cell(NOTEBOOK_DIR / src.name, repository, branch))
    dest.write_text(json.dumps(nb, indent=1), encoding="utf-8")


STALE_CHOICES = ("mark", "fail")


def finish_pages(src_dir: Path, executed: list[Path], *, stale: str = "mark",
                 results_dir: Path = RESULTS_DIR) -> list[str]:
    """Fill the generated part of the appendix and mark the pages that quote stale result files.

    The line :data:`book_pages.GENERATED_MARK` of a copied page becomes this
    run's verdict rule and its claims that are not reproduced; a page that
    quotes a result file measured on other code (:func:`book_pages.stale_results`)
    gets a note at its top naming the file, its commit and the command that
    re-measures it, or, with ``stale="fail"``, the build fails.

    Returns
    -------
    list of str
        One line per page marked (page: files).
    """
    if stale not in STALE_CHOICES:
        raise ValueError(f"stale must be one of {', '.join(STALE_CHOICES)}, got {stale!r}")
    found = book_pages.stale_results(results_dir)
    marked = []
    for md in sorted(src_dir.rglob("*.md")):
        rel = md.relative_to(src_dir)
        base = posixpath.relpath(".", rel.parent.as_posix()) if rel.parent.as_posix() != "." else "."
        text = book_pages.fill_generated(md.read_text(encoding="utf-8"), executed, base)
        text, hits = book_pages.mark_stale_page(text, quoted_names(text), found)
        md.write_text(text, encoding="utf-8")
        if hits:
            marked.append(f"{rel.as_posix()}: {', '.join(h.path for h in hits)}")
    if marked and stale == "fail":
        raise BuildError("pages quote result files measured on other code (re-measure them):\n"
                         + "\n".join(f"  {m}" for m in marked))
    for line in marked:
        print(f"build_book: note: marked stale figures on {line}")
    return marked


def assemble_source(executed: list[Path], src_dir: Path, vendor_dir: Path,
                    substitutions: dict[str, str] | None = None, *, stale: str = "mark") -> None:
    """Write the book source (config, toc, intro, appendix pages, executed notebooks) to ``src_dir``.

    Each chapter gets the box of :func:`rerun_cell`; the appendix pages get the
    figures of :func:`bench_substitutions` and ``substitutions`` (this build's),
    this run's generated sections and the notes on stale figures (:func:`finish_pages`).
    """
    if src_dir.exists():
        shutil.rmtree(src_dir)
    (src_dir / "notebooks").mkdir(parents=True)
    config = configure_buttons(resolve_config_paths(yaml.safe_load((ROOT / "_config.yml").read_text())),
                               os.environ.get(REPOSITORY_ENV), os.environ.get(BRANCH_ENV))
    repo = config.get("repository") or {}
    present = {f"notebooks/{nb.stem}" for nb in executed}
    for nb in executed:
        add_rerun_cell(nb, src_dir / "notebooks" / nb.name, repo.get("url"), repo.get("branch", "main"), present)

    sconf = config.setdefault("sphinx", {}).setdefault("config", {})
    sconf["html_extra_path"] = [str(vendor_dir.parent.resolve())]
    toc_in = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages, missing_pages = copy_pages(toc_in, src_dir, present)
    finish_pages(src_dir, executed, stale=stale)
    available = {**bench_substitutions(), **(substitutions or {})}
    quoted = {k for md in src_dir.rglob("*.md") for k in quoted_names(md.read_text(encoding="utf-8"))}
    # only what the pages quote (a key they quote that no file holds stays undefined: a Sphinx warning)
    sconf["myst_substitutions"] = {k: v for k, v in available.items() if k in quoted}
    (src_dir / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    if missing_pages:
        print(f"build_book: note: {len(missing_pages)} page(s) in _toc.yml have no file, "
              f"left out: {', '.join(missing_pages)}")
    toc, dropped, extra = make_toc(toc_in, present, pages)
    dropped = [d for d in dropped if d.startswith("notebooks/")]
    if dropped:
        print(f"build_book: note: {len(dropped)} notebook(s) in _toc.yml do not exist yet, "
              f"left out: {', '.join(d.split('/')[-1] for d in dropped)}")
    if extra:
        print(f"build_book: note: not in _toc.yml, added under 'Additional notebooks': "
              f"{', '.join(e.split('/')[-1] for e in extra)}")
    (src_dir / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))

    root_doc = toc.get("root", "intro")
    intro = ROOT / f"{root_doc}.md"
    (src_dir / f"{root_doc}.md").write_text(_unlink_missing(intro.read_text(), present, absent=set(missing_pages)))


_REDIRECT = re.compile(r'^\s*<meta http-equiv="Refresh" content="0; url=([^"<>\s]+)"\s*/?>\s*$', flags=re.I)
_TITLE = re.compile(r"<title>(.*?)</title>", flags=re.S | re.I)
_ICON = re.compile(r'<link\b[^>]*\brel="(?:shortcut )?icon"[^>]*>', flags=re.I)


def complete_index_redirect(html_dir: Path) -> bool:
    """Make the bare ``index.html`` redirect that Jupyter Book writes a complete page; True if rewritten.

    sphinx-external-toc writes ``index.html`` as one ``<meta http-equiv="Refresh">``
    line. The rewritten page keeps that redirect and adds what every page of the
    site has: a title, the favicon link of the page it leads to (so that no
    browser asks for ``/favicon.ico``) and a plain link for readers whose
    browser does not follow the redirect.
    """
    index = html_dir / "index.html"
    if not index.is_file():
        return False
    m = _REDIRECT.match(index.read_text(encoding="utf-8"))
    if not m:
        return False
    target = m.group(1)
    title, icon = "", ""
    root_page = html_dir / target
    if root_page.is_file() and "/" not in target:
        text = root_page.read_text(encoding="utf-8")
        if t := _TITLE.search(text):
            title = t.group(1).strip()
        if i := _ICON.search(text):
            icon = i.group(0)
    title = title or target
    index.write_text(
        "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{title}</title>\n<meta http-equiv=\"Refresh\" content=\"0; url={target}\">\n"
        + (f"{icon}\n" if icon else "")
        + f"</head>\n<body>\n<p><a href=\"{target}\">{title}</a></p>\n</body>\n</html>\n",
        encoding="utf-8",
    )
    return True


def render(src_dir: Path, build_dir: Path, *, strict: bool = True) -> Path:
    """Run jupyter-book on ``src_dir``; move the HTML to ``build_dir/html``."""
    jb_out = build_dir / ".jupyter-book"
    exe = Path(sys.executable).with_name("jupyter-book")
    jb = str(exe) if exe.exists() else shutil.which("jupyter-book")
    if jb is None:
        raise BuildError("jupyter-book not found; install the book extra: pip install -e '.[book]'")
    cmd = [jb, "build", str(src_dir), "--path-output", str(jb_out), "--all", "--keep-going"]
    if strict:
        cmd += ["-W", "-n"]
    print("build_book: jupyter-book " + " ".join(cmd[1:]), flush=True)
    res = subprocess.run(cmd, cwd=ROOT)
    if res.returncode != 0:
        raise BuildError(f"jupyter-book build failed (exit {res.returncode}); see the warnings above")
    html = build_dir / "html"
    if html.exists():
        shutil.rmtree(html)
    shutil.move(str(jb_out / "_build" / "html"), str(html))
    complete_index_redirect(html)
    return html


def build(
    *, build_dir: Path = ROOT / "_build", quick: bool = False, params: dict[str, Any] | None = None,
    only: list[str] | None = None, jobs: int = 2, skip_execute: bool = False, strict: bool = True,
    timeout: int | None = DEFAULT_CELL_TIMEOUT_S, cache: bool = True, fresh: bool = False, stale: str = "mark",
) -> dict[str, Any]:
    """Run the whole build; return the timings dict (also written to timings.json).

    ``fresh`` empties ``<build>/cache`` first, so the timings are those of a
    fresh clone's first build. ``stale`` says what a page that quotes a result
    file measured on other code gets: a note at its top (``"mark"``) or a
    failed build (``"fail"``), see :func:`finish_pages`.

    With ``cache`` (default) the kernels get ``BENCHSEL_CACHE_DIR=<build>/cache``
    (unless the variable is already set), so a training-split correlation that
    several notebooks need is estimated once per build and reused by later
    builds with the same data and estimator code (results are identical;
    delete the folder, or pass ``--no-cache``, to recompute).
    """
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    build_dir = build_dir.resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    if fresh:
        shutil.rmtree(build_dir / "cache", ignore_errors=True)
    if cache:
        os.environ.setdefault("BENCHSEL_CACHE_DIR", str(build_dir / "cache"))
    else:
        os.environ.pop("BENCHSEL_CACHE_DIR", None)
    params = dict(params or {})
    if quick:
        params.setdefault("quick", True)
    vendor_dir = vendor_js.vendor()
    executed_dir = build_dir / "notebooks"
    notebooks = discover_notebooks(only=only)
    if not notebooks:
        print(f"build_book: note: no numbered notebooks (NN_*.ipynb) in {NOTEBOOK_DIR}; "
              "building the landing page only")
    t0 = time.perf_counter()
    if skip_execute:
        executed = [executed_dir / nb.name for nb in notebooks]
        missing = [p.name for p in executed if not p.exists()]
        if missing:
            raise BuildError(f"--skip-execute: no executed copy of {', '.join(missing)} in {executed_dir}")
        per_nb: dict[str, float] = {}
    else:
        if executed_dir.exists():
            shutil.rmtree(executed_dir)
        if notebooks:
            ensure_kernel()
        per_nb = execute_notebooks(notebooks, executed_dir, params, jobs=jobs, timeout=timeout)
        executed = [executed_dir / nb.name for nb in notebooks]
    check_pages(executed)
    check_claims_agree(executed)
    t_exec = time.perf_counter() - t0
    t0 = time.perf_counter()
    assemble_source(executed, build_dir / "src", vendor_dir,
                    build_substitutions(per_nb, execute_s=None if skip_execute else t_exec, params=params, jobs=jobs),
                    stale=stale)
    html = render(build_dir / "src", build_dir, strict=strict)
    t_render = time.perf_counter() - t0
    check_site_pages(html, executed, strict=strict)
    timings = {
        "quick": bool(params.get("quick", False)),
        "parameters": params,
        "jobs": jobs,
        "cache_dir": os.environ.get("BENCHSEL_CACHE_DIR"),
        "notebooks_seconds": per_nb,
        "execute_seconds": round(t_exec, 2),
        "render_seconds": round(t_render, 2),
        "total_seconds": round(time.perf_counter() - t_start, 2),
        "fresh": fresh,
        "cpu_count": os.cpu_count(),
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "html": str(html),
    }
    (build_dir / "timings.json").write_text(json.dumps(timings, indent=1, default=str))
    if fresh and not only and not skip_execute:
        write_book_results(timings, RESULTS_DIR / "book.json")
    print("build_book: timings (s)")
    for name, sec in per_nb.items():
        print(f"  {name:<40s} {sec:8.1f}")
    print(f"  {'execute (wall)':<40s} {t_exec:8.1f}\n  {'render':<40s} {t_render:8.1f}\n"
          f"  {'total':<40s} {timings['total_seconds']:8.1f}")
    print("build_book: load average (1, 5, 15 min) at start {} and end {}, {} CPUs".format(
        *(", ".join(f"{x:.2f}" for x in timings[k]) for k in ("load_average_start", "load_average_end")),
        timings["cpu_count"]))
    print(f"build_book: site in {html} (timings in {build_dir / 'timings.json'})")
    return timings


def write_book_results(timings: dict[str, Any], path: Path) -> None:
    """Write a fresh build's timings where the performance page reads them (``{{ book_total_s }}``, ...)."""
    values = {"total_s": f"{timings['total_seconds']:.1f}", "execute_s": f"{timings['execute_seconds']:.1f}",
              "render_s": f"{timings['render_seconds']:.1f}", "cpus": str(timings["cpu_count"]),
              "jobs": str(timings["jobs"]),
              "load_start": f"{timings['load_average_start'][0]:.2f}",
              "load_end": f"{timings['load_average_end'][0]:.2f}",
              "parameters": "quick parameters" if timings["quick"] else "the notebooks' own parameters"}
    for name, sec in timings["notebooks_seconds"].items():
        values[f"nb_{name[:2]}_s"] = f"{sec:.1f}"
    head, dirty = book_pages.result_file.git_state(ROOT)
    record = {"command": "make bench-book" + (" QUICK=1" if timings["quick"] else ""),
              "measured": f"{time.strftime('%Y-%m-%d')}, {book_pages.result_file.commit(ROOT)}, "
                          f"{book_pages.result_file.machine()} ({timings['cpu_count']} CPUs), empty cache",
              "commit": head, "dirty": dirty, "values": values}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"build_book: fresh-build timings written to {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Execute the notebooks with papermill and render the book with Jupyter Book.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  python scripts/build_book.py --quick\n"
               "  python scripts/build_book.py -p seed 1 -p k_max 10 --only 04 05",
    )
    parser.add_argument("--quick", action="store_true", help="pass quick=True to every notebook")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"),
                        help="papermill parameter for every notebook (value parsed as YAML); repeatable")
    parser.add_argument("--only", nargs="+", metavar="NN", help="only these notebooks (number or name prefix)")
    parser.add_argument("--jobs", "-j", type=int, default=2, help="notebooks executed in parallel (default 2)")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "_build", help="output folder (default _build)")
    parser.add_argument("--skip-execute", action="store_true", help="render the existing executed copies")
    parser.add_argument("--timeout", type=int, default=DEFAULT_CELL_TIMEOUT_S,
                        help="per-cell timeout in seconds, 0 for none (default %(default)s)")
    parser.add_argument("--no-strict", action="store_true", help="do not turn Sphinx warnings into errors")
    parser.add_argument("--no-cache", action="store_true",
                        help="do not share training-split correlation estimates on disk (<build>/cache)")
    parser.add_argument("--fresh", action="store_true",
                        help="empty <build>/cache first: the timings of a fresh clone's first build")
    parser.add_argument("--stale-results", choices=STALE_CHOICES, default="mark",
                        help="a page quoting a result file measured on other code: mark it (default) or fail")
    args = parser.parse_args(argv)
    try:
        params = parse_parameters(args.parameter, quick=args.quick)
        build(build_dir=args.build_dir, quick=args.quick, params=params, only=args.only,
              jobs=args.jobs, skip_execute=args.skip_execute, strict=not args.no_strict,
              timeout=args.timeout if args.timeout and args.timeout > 0 else None,
              cache=not args.no_cache, fresh=args.fresh, stale=args.stale_results)
    except (BuildError, ValueError) as exc:
        print(f"build_book: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
