"""The notebooks in notebooks/: structure as committed, and execution under papermill."""
from __future__ import annotations

import json
import re

import pytest
from _book_build import NOTEBOOKS, QUICK_BUDGET_S, quick_build

NO_NOTEBOOKS = pytest.mark.skip(reason="no numbered notebooks (NN_*.ipynb) in notebooks/ yet")
PARAMS = [pytest.param(nb, id=nb.stem) for nb in NOTEBOOKS] or [pytest.param(None, id="none", marks=NO_NOTEBOOKS)]
PAPER_CHAPTERS = [nb for nb in NOTEBOOKS if "01" <= nb.name[:2] <= "10"]
EXPLORER_CHAPTERS = PAPER_CHAPTERS + [nb for nb in NOTEBOOKS if nb.name[:2] == "12"]


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


def _executed(nb):
    """The quick-executed copy of ``nb`` from the shared quick build (fails the test when it did not run)."""
    qb = _quick_build_or_skip()
    if qb.results[nb.name]["error"]:
        pytest.fail(f"{nb.name} did not execute: {qb.results[nb.name]['error']}")
    return qb.build_dir / "notebooks" / nb.name


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
    """The rules of :mod:`benchsel_lib.book.checks`: no error or warning output, no placeholder JupyterLab shows raw,
    a claims table before the first figure of a paper chapter, hidden cells hidden in JupyterLab too, no nan/None."""
    from benchsel_lib.book import checks

    problems = checks.check_notebook(_executed(nb))
    assert not problems, f"{nb.name} (quick=True):\n" + checks.format_problems(problems)


@pytest.mark.parametrize("nb", PARAMS)
def test_no_markdown_cell_holds_a_placeholder_that_jupyterlab_shows_raw(nb):
    """The prose stands in Markdown cells as a reader of the notebook sees it: no glue, no MyST role or directive."""
    from benchsel_lib.book import checks

    found = {i: checks.placeholders(_source(c)) for i, c in enumerate(_load(nb)["cells"])
             if c["cell_type"] == "markdown"}
    found = {i: p for i, p in found.items() if p}
    assert not found, f"{nb.name}: Markdown cells that JupyterLab shows raw (cell: placeholders): {found}"


@pytest.mark.parametrize("nb", [pytest.param(nb, id=nb.stem) for nb in EXPLORER_CHAPTERS])
def test_chapter_displays_an_explorer(nb):
    """Chapters 1-10 and 12: a code cell shows an explorer over the chapter's main result."""
    code = [_source(c) for c in _load(nb)["cells"] if c["cell_type"] == "code"]
    assert any(re.search(r"\bexplorer\(", src) for src in code), f"{nb.name}: no code cell calls explorer("


@pytest.mark.book
@pytest.mark.parametrize("nb", [pytest.param(nb, id=nb.stem) for nb in PAPER_CHAPTERS])
def test_paper_chapter_shows_its_claims_table_among_its_outputs(nb):
    from benchsel_lib.book.claims import HEADERS, METADATA_KEY

    outputs = [o for c in _load(_executed(nb))["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    tables = [o for o in outputs if METADATA_KEY in o.get("metadata", {})]
    assert len(tables) == 1, f"{nb.name}: {len(tables)} claims tables among the outputs of its quick run"
    (table,) = tables
    assert table["metadata"][METADATA_KEY], f"{nb.name}: the claims table has no rows"
    assert "| " + " | ".join(HEADERS) + " |" in "".join(table["data"]["text/markdown"])


@pytest.mark.book
@pytest.mark.parametrize("nb", PARAMS)
def test_notebook_rendered_as_jupyterlab_renders_it_shows_no_placeholder_and_its_claims_table(nb):
    """nbconvert's JupyterLab template: no {glue} text; a paper chapter's claims table is a <table> with a Verdict."""
    import nbformat
    from bs4 import BeautifulSoup
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nbformat.read(_executed(nb), as_version=4))
    soup = BeautifulSoup(body, "html.parser")
    assert "{glue" not in soup.get_text(), f"{nb.name}: JupyterLab would show a {{glue}} placeholder raw"
    if nb in PAPER_CHAPTERS:
        heads = [[th.get_text(strip=True) for th in t.find_all("th")]
                 for t in soup.select(".jp-RenderedMarkdown table")]
        assert any("Verdict" in h for h in heads), f"{nb.name}: no rendered claims table (tables seen: {heads})"


@pytest.mark.parametrize("nb", PARAMS)
def test_every_in_page_link_reaches_a_heading_that_jupyterlab_can_scroll_to(nb):
    """A link to a section of the page, in the prose or in an output (the claims table), works in JupyterLab.

    JupyterLab 4 gives headings no ``id`` (its sanitizer renames ids to
    ``data-jupyter-id``, case kept) and finds a link's target by that
    attribute, so the site's lower-case section anchors match nothing there:
    the heading's cell carries an empty ``<div data-jupyter-id="anchor">``,
    which the site renders as nothing.
    """
    markdown = "\n".join(_source(c) for c in _load(nb)["cells"] if c["cell_type"] == "markdown")
    outputs = json.dumps([c.get("outputs", []) for c in _load(_executed(nb))["cells"] if c["cell_type"] == "code"])
    targets = set(re.findall(r"\]\(#([\w-]+)\)", markdown + outputs)) | set(re.findall(r'href=\\"#([\w-]+)\\"', outputs))
    missing = sorted(t for t in targets if f'<div data-jupyter-id="{t}"></div>' not in markdown)
    assert not missing, f"{nb.name}: links to {missing} find no heading in JupyterLab (add the anchor div to its cell)"
