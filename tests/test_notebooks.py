"""The notebooks in notebooks/: structure as committed, and execution under papermill."""
from __future__ import annotations

import json
import re

import pytest
from _book_build import NOTEBOOKS, QUICK_BUDGET_S, quick_build

NO_NOTEBOOKS = pytest.mark.skip(reason="no numbered notebooks (NN_*.ipynb) in notebooks/ yet")
PARAMS = [pytest.param(nb, id=nb.stem) for nb in NOTEBOOKS] or [pytest.param(None, id="none", marks=NO_NOTEBOOKS)]


def _load(nb):
    return json.loads(nb.read_text(encoding="utf-8"))


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


@pytest.mark.parametrize("nb", PARAMS)
def test_notebook_has_exactly_one_parameters_cell_defining_quick(nb):
    cells = _load(nb)["cells"]
    tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{nb.name}: {len(tagged)} cells tagged 'parameters' (need exactly one)"
    assert tagged[0]["cell_type"] == "code", f"{nb.name}: the parameters cell is not a code cell"
    assert re.search(r"^\s*quick\s*(:[^=]+)?=", _source(tagged[0]), flags=re.M), \
        f"{nb.name}: the parameters cell does not define `quick`"


@pytest.mark.parametrize("nb", PARAMS)
def test_notebook_imports_benchsel_lib(nb):
    code = "\n".join(_source(c) for c in _load(nb)["cells"] if c["cell_type"] == "code")
    assert re.search(r"^\s*(import benchsel_lib|from benchsel_lib(\.\w+)* import)", code, flags=re.M), \
        f"{nb.name} does not import benchsel_lib"


@pytest.mark.parametrize("nb", PARAMS)
def test_notebook_is_committed_without_outputs(nb):
    dirty = [i for i, c in enumerate(_load(nb)["cells"])
             if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{nb.name}: cells {dirty} carry outputs or execution counts (clear them before committing)"


@pytest.mark.parametrize("nb", PARAMS)
def test_notebook_does_not_switch_matplotlib_backend(nb):
    code = "\n".join(_source(c) for c in _load(nb)["cells"] if c["cell_type"] == "code")
    assert not re.search(r"matplotlib\.use\(|plt\.switch_backend\(", code), \
        f"{nb.name} changes the matplotlib backend (its figures would vanish from the book)"


def _quick_build_or_skip():
    """The shared quick build of every notebook; skips when the book's JavaScript cannot be vendored."""
    qb = quick_build()
    if qb.vendor_error:
        pytest.skip(f"cannot vendor the book's JavaScript (npm/registry unavailable): {qb.vendor_error}")
    return qb


@pytest.mark.book
@pytest.mark.parametrize("nb", PARAMS)
def test_notebook_executes_with_quick_parameters(nb):
    qb = _quick_build_or_skip()
    result = qb.results[nb.name]
    assert result["error"] is None, f"{nb.name} failed under papermill (quick=True): {result['error']}"


@pytest.mark.book
def test_quick_execution_fits_the_ci_budget():
    if not NOTEBOOKS:
        pytest.skip("no numbered notebooks (NN_*.ipynb) in notebooks/ yet")
    qb = _quick_build_or_skip()
    per = {k: round(v["seconds"], 1) for k, v in qb.results.items()}
    assert qb.execute_seconds <= QUICK_BUDGET_S, \
        f"quick execution took {qb.execute_seconds:.0f} s > {QUICK_BUDGET_S} s: {per}"


@pytest.mark.book
@pytest.mark.parametrize("nb", PARAMS)
def test_notebook_page_passes_the_checks_after_its_quick_run(nb):
    """No error or warning output, no glue key the text reads but the run did not produce, no nan/None or TeX in
    pasted text, no finding about a matrix not run."""
    from benchsel_lib.book import checks

    qb = _quick_build_or_skip()
    if qb.results[nb.name]["error"]:
        pytest.fail(f"{nb.name} did not execute: {qb.results[nb.name]['error']}")
    problems = checks.check_notebook(qb.build_dir / "notebooks" / nb.name)
    assert not problems, f"{nb.name} (quick=True):\n" + checks.format_problems(problems)


@pytest.mark.parametrize("nb", PARAMS)
def test_notebook_summaries_are_written_by_the_library_not_in_the_notebook(nb):
    """The findings are glued by a ``benchsel_lib.book.pages`` module; no cell glues hand-made prose."""
    cells = _load(nb)["cells"]
    code = "\n".join(_source(c) for c in cells if c["cell_type"] == "code")
    text = "\n".join(_source(c) for c in cells if c["cell_type"] == "markdown")
    assert "from benchsel_lib.book.pages import" in code and re.search(r"\bprose\.glue\(\)", code), \
        f"{nb.name}: the page's summaries are not written by benchsel_lib.book.pages"
    assert "Markdown(" not in code, f"{nb.name}: a cell builds Markdown prose itself"
    assert "At a glance" not in text and "## What we found" not in text, \
        f"{nb.name}: a summary box or section restates what the page says"


@pytest.mark.parametrize("nb", [pytest.param(nb, id=nb.stem) for nb in NOTEBOOKS if nb.name[:2] <= "10"])
def test_paper_chapter_opens_with_the_glued_claims_table_before_any_code(nb):
    """Chapters 1-10: the claims table (glued by the page module) stands in the markdown above the first code cell."""
    cells = _load(nb)["cells"]
    first_code = next(i for i, c in enumerate(cells) if c["cell_type"] == "code")
    opening = "\n".join(_source(c) for c in cells[:first_code] if c["cell_type"] == "markdown")
    assert re.search(r"\{glue:md\}`claims`|^```\{glue:md\} claims\b", opening, flags=re.M), \
        f"{nb.name}: the claims table is not glued above the first code cell"
