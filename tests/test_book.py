"""The rendered book (quick build once per session): pages, figures, outputs, offline assets."""
from __future__ import annotations

import html as html_lib
import json
import re
import sys
from pathlib import Path

import pytest
from _book_build import NOTEBOOKS, ROOT, quick_build

sys.path.insert(0, str(ROOT / "scripts"))
import check_site  # noqa: E402

NO_NOTEBOOKS = pytest.mark.skip(reason="no numbered notebooks (NN_*.ipynb) in notebooks/ yet")
PARAMS = [pytest.param(nb, id=nb.stem) for nb in NOTEBOOKS] or [pytest.param(None, id="none", marks=NO_NOTEBOOKS)]


@pytest.fixture(scope="module")
def site() -> Path:
    qb = quick_build()
    if qb.vendor_error:
        pytest.skip(f"cannot vendor the book's JavaScript (npm/registry unavailable): {qb.vendor_error}")
    assert qb.render_error is None, qb.render_error
    return qb.html


def _page(site: Path, nb: Path) -> str:
    qb = quick_build()
    if qb.results[nb.name]["error"]:
        pytest.fail(f"{nb.name} did not execute, so it has no page: {qb.results[nb.name]['error']}")
    page = site / "notebooks" / f"{nb.stem}.html"
    assert page.exists(), f"no page for {nb.name} in the built site"
    return page.read_text(encoding="utf-8")


@pytest.mark.book
def test_landing_page_is_built(site):
    text = (site / "intro.html").read_text(encoding="utf-8")
    assert "Paper sections and notebooks" in text
    assert (site / "index.html").exists()


@pytest.mark.book
@pytest.mark.parametrize("nb", PARAMS)
def test_every_notebook_has_a_page_with_figures(site, nb):
    html = _page(site, nb)
    imgs = [s for s in re.findall(r"<img\b[^>]*\bsrc=\"([^\"]+)\"", html) if "_static/" not in s]
    embedded = html.count("data:image/png;base64") + html.count("<svg")
    assert imgs or embedded, f"{nb.name}: the page has no figure"
    for src in imgs:
        if not src.startswith("data:"):
            assert (site / "notebooks" / src).resolve().exists(), f"{nb.name}: missing image file {src}"


@pytest.mark.book
@pytest.mark.parametrize("nb", PARAMS)
def test_every_notebook_page_has_outputs(site, nb):
    """With execute_notebooks: off an unexecuted notebook renders silently without outputs."""
    html = _page(site, nb)
    n_code = html.count('class="cell docutils container"') + html.count("cell_input")
    n_out = len(re.findall(r'class="cell_output\b', html))
    assert n_out > 0, f"{nb.name}: rendered without any output cell (was it executed?)"
    assert n_code > 0


def _appendix_pages() -> list[str]:
    """The non-notebook entries of _toc.yml (``docs/performance``, ...), in toc order."""
    import build_book
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [f for f in build_book.toc_files(toc) if not f.startswith("notebooks/")]


APPENDIX = _appendix_pages()


def test_toc_lists_the_appendix_pages_after_using_benchsel():
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    captions = [p["caption"] for p in toc["parts"]]
    assert "Appendix" in captions and captions.index("Appendix") > captions.index("Using benchsel")
    assert {"docs/performance", "docs/sweeps", "docs/differences"} <= set(APPENDIX)
    for entry in APPENDIX:
        assert (ROOT / f"{entry}.md").is_file(), f"_toc.yml lists {entry} but {entry}.md does not exist"


@pytest.mark.book
@pytest.mark.parametrize("entry", APPENDIX)
def test_every_appendix_document_has_a_page(site, entry):
    page = site / f"{entry}.html"
    assert page.exists(), f"no page for {entry}.md in the built site"
    html = page.read_text(encoding="utf-8")
    title = next(line for line in (ROOT / f"{entry}.md").read_text().splitlines() if line.startswith("# "))[2:]
    assert f"<h1>{title}" in html, f"{entry}: the page does not show its title {title!r}"
    assert 'class="bd-article' in html
    broken, _ = check_site.page_links(f"{entry}.html", html, site)
    assert not broken, f"{entry}: links to pages that do not exist: {broken}"
    intro = (site / "intro.html").read_text(encoding="utf-8")
    assert f'href="{entry}.html"' in intro, f"the landing page does not point to {entry}"


def test_appendix_names_only_library_objects_that_exist():
    """Every dotted ``benchsel_lib.`` name in the appendix pages resolves (module or attribute)."""
    import importlib

    bad = []
    for entry in APPENDIX:
        text = (ROOT / f"{entry}.md").read_text(encoding="utf-8")
        for name in sorted(set(re.findall(r"\bbenchsel_lib(?:\.\w+)+", text))):
            parts = name.split(".")
            for i in range(len(parts), 0, -1):
                try:
                    obj = importlib.import_module(".".join(parts[:i]))
                except ImportError:
                    continue
                try:
                    for attr in parts[i:]:
                        obj = getattr(obj, attr)
                except AttributeError:
                    bad.append(f"{entry}: {name}")
                break
            else:
                bad.append(f"{entry}: {name}")
    assert not bad, f"names that do not exist in the library: {bad}"


@pytest.mark.book
@pytest.mark.book
def test_rendered_pages_pass_the_site_checks(site):
    """What a reader sees: no sentence said twice, no code name in prose, whole tables, claims tables."""
    import build_book

    from benchsel_lib.book import site as site_checks

    executed = sorted((site.parent / "notebooks").glob("*.ipynb"))
    problems = site_checks.check_site(site, build_book.site_check_pages(executed, site))
    assert not problems, "\n" + site_checks.format_problems(problems)


@pytest.mark.book
def test_no_page_loads_remote_scripts_or_styles(site):
    offenders = {}
    for page in site.rglob("*.html"):
        ext = check_site.external_refs(page.read_text(encoding="utf-8", errors="replace"))
        if ext:
            offenders[str(page.relative_to(site))] = ext[:3]
    assert not offenders, f"pages load remote resources: {offenders}"


@pytest.mark.book
def test_mathjax_require_and_widget_manager_are_served_locally(site):
    for rel in ("vendor/mathjax/tex-mml-chtml.js", "vendor/requirejs/require.js",
                "vendor/require-config.js", "vendor/html-manager/dist/embed-amd.js",
                "vendor/mathjax/output/chtml/fonts/woff-v2"):
        assert (site / rel).exists(), f"{rel} is not in the site"
    intro = (site / "intro.html").read_text(encoding="utf-8")
    assert re.search(r'<script[^>]+src="[^"]*vendor/mathjax/tex-mml-chtml\.js', intro)
    for page in (site / "notebooks").glob("*.html"):
        text = page.read_text(encoding="utf-8")
        if "application/vnd.jupyter.widget-state+json" in text:
            assert re.search(r'<script[^>]+src="[^"]*vendor/requirejs/require\.js', text), page.name
            assert re.search(r'<script[^>]+src="[^"]*vendor/html-manager/dist/embed-amd\.js', text), page.name


@pytest.mark.book
def test_no_page_declares_an_inline_script_name_twice_and_every_page_has_its_favicon(site):
    """Browser-free: a repeated top-level const/let is a SyntaxError on the page; no icon link is a 404."""
    pages = check_site.site_pages(site)
    assert "intro.html" in pages and "index.html" in pages
    bad = {}
    for page in pages:
        problems = check_site.static_problems(page, (site / page).read_text(encoding="utf-8"), site)
        if problems:
            bad[page] = problems
    assert not bad, f"pages with repeated inline declarations or a missing favicon: {bad}"
    intro = (site / "intro.html").read_text(encoding="utf-8")
    assert intro.count("const THEBE_JS_URL") == 1


def _chromium_or_skip() -> str:
    chromium = check_site.find_chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium)")
    return chromium


@pytest.fixture(scope="module")
def browser_results(site, tmp_path_factory) -> dict[str, check_site.PageResult]:
    """Every page of the quick site checked once in headless Chromium (explorers moved)."""
    chromium = _chromium_or_skip()
    results = check_site.check_site(site, tmp_path_factory.mktemp("screenshots"), chromium=chromium, jobs=2)
    return {r.page: r for r in results}


@pytest.mark.book
def test_site_renders_in_headless_chromium(browser_results):
    bad = {page: r.errors for page, r in browser_results.items() if not r.ok}
    assert not bad, f"pages failing in Chromium: {bad}"
    for r in browser_results.values():
        if r.has_math:
            assert r.mjx_containers > 0


EXPLORER_CHAPTERS = [nb for nb in NOTEBOOKS if nb.name[:2] in {f"{i:02d}" for i in (*range(1, 11), 12)}]


@pytest.mark.book
@pytest.mark.parametrize("nb", [pytest.param(nb, id=nb.stem) for nb in EXPLORER_CHAPTERS])
def test_every_explorer_switches_its_panel_in_headless_chromium_with_no_request_off_the_site(
        site, browser_results, nb):
    """Each control of each explorer, moved in the browser, shows another panel: no kernel, no network."""
    html = _page(site, nb)
    explorers = check_site.page_explorers(html)
    assert explorers, f"{nb.name}: the page displays no explorer"
    r = browser_results[f"notebooks/{nb.stem}.html"]
    assert r.explorers == len(explorers) and r.remote_requests == []
    assert len(r.explorer_moves) == sum(explorers.values()), r.explorer_moves
    assert all(m.endswith((": panel changed", "one value, not moved")) for m in r.explorer_moves), r.explorer_moves
    assert any(m.endswith(": panel changed") for m in r.explorer_moves), r.explorer_moves
    assert not [e for e in r.errors if "explorer" in e], r.errors


def _same_panels(html: str) -> str:
    """The page with every HTML panel of its saved widget state showing the same text."""
    def rewrite(m: re.Match) -> str:
        state = json.loads(m.group(2))
        for model in state["state"].values():
            if model["model_name"] == "HTMLModel":
                model["state"]["value"] = "<p>One panel for every choice.</p>"
        return m.group(1) + json.dumps(state) + m.group(3)

    return re.sub(r'(<script type="application/vnd\.jupyter\.widget-state\+json">)(.*?)(</script>)', rewrite, html,
                  flags=re.S)


@pytest.mark.book
def test_the_browser_check_fails_an_explorer_whose_panel_does_not_change(site, tmp_path):
    import shutil

    chromium = _chromium_or_skip()
    pages = [p for p in sorted((site / "notebooks").glob("*.html")) if check_site.page_explorers(p.read_text())]
    if not pages:
        pytest.fail("no page of the quick site displays an explorer")
    copy = tmp_path / "html"
    shutil.copytree(site, copy)
    page = copy / "notebooks" / pages[0].name
    page.write_text(_same_panels(page.read_text(encoding="utf-8")), encoding="utf-8")
    (r,) = check_site.check_site(copy, tmp_path / "shots", pages=[f"notebooks/{page.name}"], chromium=chromium,
                                 screenshot=False)
    assert not r.ok and r.explorer_moves
    assert any("but the panel did not change" in e for e in r.errors), r.errors


# --------------------------------------------------------------------- build script units (fast)
import build_book  # noqa: E402


def test_toc_keeps_existing_notebooks_and_appends_unlisted_ones():
    toc = {"format": "jb-book", "root": "intro", "parts": [
        {"caption": "Paper", "chapters": [{"file": "notebooks/01_a"}, {"file": "notebooks/02_b"}]},
        {"caption": "Own", "chapters": [{"file": "notebooks/11_c"}]}]}
    new, dropped, extra = build_book.make_toc(toc, {"notebooks/02_b", "notebooks/00_x"})
    assert [p["caption"] for p in new["parts"]] == ["Paper", "Additional notebooks"]
    assert new["parts"][0]["chapters"] == [{"file": "notebooks/02_b"}]
    assert dropped == ["notebooks/01_a", "notebooks/11_c"] and extra == ["notebooks/00_x"]
    empty, _, _ = build_book.make_toc(toc, set())
    assert "parts" not in empty


def test_landing_page_links_to_missing_notebooks_become_text():
    text = "see [04 Greedy CV](notebooks/04_greedy_cv.ipynb) and [03](notebooks/03_eig.ipynb)"
    out = build_book._unlink_missing(text, {"notebooks/03_eig"})
    assert out == "see 04 Greedy CV (not yet available) and [03](notebooks/03_eig.ipynb)"


def test_toc_keeps_listed_pages_that_exist_and_drops_the_others():
    toc = {"format": "jb-book", "root": "intro", "parts": [
        {"caption": "Paper", "chapters": [{"file": "notebooks/01_a"}]},
        {"caption": "Appendix", "chapters": [{"file": "docs/perf"}, {"file": "docs/gone"}]}]}
    kept, dropped, _ = build_book.make_toc(toc, {"notebooks/01_a"})
    assert kept["parts"][1]["chapters"] == [{"file": "docs/perf"}, {"file": "docs/gone"}] and dropped == []
    new, dropped, _ = build_book.make_toc(toc, {"notebooks/01_a"}, {"docs/perf"})
    assert new["parts"][1] == {"caption": "Appendix", "chapters": [{"file": "docs/perf"}]}
    assert dropped == ["docs/gone"]


def test_appendix_pages_are_copied_with_links_to_missing_pages_made_text(tmp_path):
    root, src = tmp_path / "repo", tmp_path / "src"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "perf.md").write_text(
        "# Perf\n\n[08](../notebooks/08_b.ipynb), [09](../notebooks/09_c.ipynb#x), [gone](gone.md), "
        "[web](https://example.org/a.md)\n")
    toc = {"root": "intro", "parts": [{"caption": "Paper", "chapters": [{"file": "notebooks/08_b"}]},
                                      {"caption": "Appendix", "chapters": [
                                          {"file": "docs/perf"}, {"file": "docs/gone"}]}]}
    copied, missing = build_book.copy_pages(toc, src, {"notebooks/08_b"}, root)
    assert copied == {"docs/perf"} and missing == ["docs/gone"]
    assert (src / "docs" / "perf.md").read_text() == (
        "# Perf\n\n[08](../notebooks/08_b.ipynb), 09 (not yet available), gone (not yet available), "
        "[web](https://example.org/a.md)\n")
    # the landing page: root-relative links, missing appendix pages become text too
    text = "[Perf](docs/perf.md) and [Gone](docs/gone.md) and [08](notebooks/08_b.ipynb)"
    out = build_book._unlink_missing(text, {"notebooks/08_b"}, absent={"docs/gone"})
    assert out == "[Perf](docs/perf.md) and Gone (not yet available) and [08](notebooks/08_b.ipynb)"


def test_parameters_are_parsed_like_papermill():
    params = build_book.parse_parameters([["k_max", "10"], ["holdouts", "[0.1, 0.5]"], ["data", "mteb"]], quick=True)
    assert params == {"quick": True, "k_max": 10, "holdouts": [0.1, 0.5], "data": "mteb"}
    with pytest.raises(ValueError, match="identifier"):
        build_book.parse_parameters([["not a name", "1"]], quick=False)


def test_browser_check_flags_unrendered_math_and_remote_requests(tmp_path):
    chromium = check_site.find_chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium)")
    site = tmp_path / "html"
    site.mkdir()
    (site / "index.html").write_text("<html><body>index</body></html>")
    (site / "intro.html").write_text(
        '<html><body><article class="bd-article"><span class="math notranslate">\\(x^2\\)</span>'
        '<img src="https://example.invalid/fig.png"></article></body></html>')
    (result,) = check_site.check_site(site, tmp_path / "shots", pages=["intro"], chromium=chromium,
                                      screenshot=False, budget_ms=2000)
    assert not result.ok
    assert result.mjx_containers == 0 and any("MathJax" in e for e in result.errors)
    assert result.remote_requests == ["https://example.invalid/fig.png"]


def _widget_page(views: list[str], models: dict[str, tuple[str, list[str]]]) -> str:
    state = {"state": {mid: {"model_name": name, "state": {"children": [f"IPY_MODEL_{c}" for c in kids]}}
                       for mid, (name, kids) in models.items()}}
    view = '<script type="application/vnd.jupyter.widget-view+json">{{"model_id": "{}"}}</script>'
    return ('<html><body><script type="application/vnd.jupyter.widget-state+json">' + json.dumps(state)
            + "</script>" + "".join(view.format(v) for v in views) + "</body></html>")


def test_explorers_are_found_in_the_saved_widget_state_of_a_page():
    models = {"ex": ("VBoxModel", ["controls", "stack"]), "controls": ("HBoxModel", ["a", "b"]),
              "stack": ("StackModel", ["p1", "p2"]), "a": ("ToggleButtonsModel", []), "b": ("DropdownModel", []),
              "box": ("VBoxModel", ["controls", "p1"]), "p1": ("HTMLModel", []), "p2": ("HTMLModel", [])}
    assert check_site.page_explorers(_widget_page(["ex", "box", "nowhere"], models)) == {"ex": 2}
    assert check_site.page_explorers(_widget_page(["box"], models)) == {}
    assert check_site.page_explorers("<html><body>no widgets</body></html>") == {}


def test_the_explorer_script_goes_at_the_end_of_the_body_and_its_findings_are_read_from_the_dom():
    page = check_site.with_explore_script("<html><body><p>x</p></body></html>")
    assert page.startswith("<html><body><p>x</p><script>") and page.endswith("</script></body></html>")
    assert check_site.EXPLORE_RESULT_ID in check_site.EXPLORE_JS
    moves = [{"explorer": 0, "control": 0, "action": None, "changed": False},
             {"explorer": 0, "control": 1, "action": 'clicked "mteb"', "changed": True, "before": "a", "after": "b"},
             {"explorer": 1, "control": 0, "action": 'slid to "3"', "changed": False, "before": "k = 2", "after": ""},
             {"explorer": 2, "control": 0, "action": None, "changed": False}]
    dom = (f'<pre id="{check_site.EXPLORE_RESULT_ID}" tabindex="0">'
           + html_lib.escape(json.dumps({"explorers": 3, "moves": moves})) + "</pre>")
    found, problems = check_site.explore_problems(4, dom)
    assert found == moves
    assert problems == ["4 explorer(s) in the page but 3 rendered with controls",
                        "explorer 3: no control has a second value to show",
                        "explorer 2, control 1: slid to \"3\" but the panel did not change ('k = 2')"]
    assert check_site.explore_problems(1, "<html></html>") == (
        [], ["the explorer check did not finish in the browser"])


@pytest.mark.book
@pytest.mark.parametrize("nb", PARAMS)
def test_executed_notebooks_keep_no_blank_progress_output(site, nb):
    """A finished progress bar must not leave an empty output box on the page."""
    import build_book
    import nbformat

    executed = site.parent / "notebooks" / nb.name
    if not executed.exists():
        executed = next(site.parent.rglob(nb.name))
    cells = nbformat.read(executed, as_version=4).cells
    blank = [i for i, c in enumerate(cells) if c.cell_type == "code" and any(build_book._is_blank(o) for o in c.outputs)]
    assert blank == [], f"{nb.name}: blank outputs in cells {blank}"


def test_strip_blank_outputs_removes_only_empty_displays(tmp_path):
    import build_book
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    cell = new_code_cell("x", outputs=[
        new_output("display_data", data={"text/plain": ""}),
        new_output("stream", name="stdout", text="kept\n"),
        new_output("display_data", data={"text/plain": "kept"}),
        new_output("display_data", data={"text/plain": "", "image/png": "iVBORw0KGgo="}),
    ])
    path = tmp_path / "nb.ipynb"
    nbformat.write(new_notebook(cells=[cell]), path)
    assert build_book.strip_blank_outputs(path) == 1
    outs = nbformat.read(path, as_version=4).cells[0].outputs
    assert [o.output_type for o in outs] == ["stream", "display_data", "display_data"]


def test_schedule_starts_the_costliest_notebooks_first_from_static_estimates(tmp_path):
    import json

    import build_book

    nbs = [Path(f"{i:02d}_x.ipynb") for i in range(1, 6)]
    costs = {"01_x.ipynb": 3.0, "02_x.ipynb": 100.0, "04_x.ipynb": 50.0, "05_x.ipynb": 120.0}
    order = [p.name for p in build_book.schedule(nbs, costs)]
    assert order == ["05_x.ipynb", "02_x.ipynb", "04_x.ipynb", "01_x.ipynb", "03_x.ipynb"]
    files = []
    for name, cost in (("01_a.ipynb", 5), ("02_b.ipynb", 40), ("03_c.ipynb", None)):
        meta = {} if cost is None else {"benchsel": {"cost_s": cost}}
        (tmp_path / name).write_text(json.dumps({"cells": [], "metadata": meta}))
        files.append(tmp_path / name)
    assert [p.name for p in build_book.schedule(files)] == ["02_b.ipynb", "01_a.ipynb", "03_c.ipynb"]
    assert build_book.notebook_cost(files[2]) == 0.0


def test_concurrent_builds_run_the_folds_of_each_notebook_in_its_own_process(tmp_path):
    import json

    import build_book

    def write(name, params_src):
        cell = {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": params_src, "outputs": [],
                "execution_count": None}
        (tmp_path / name).write_text(json.dumps({"cells": [cell], "metadata": {}}))
        return tmp_path / name

    pooled = write("01_a.ipynb", "quick = False\nn_jobs = 2  # workers\n")
    plain = write("02_b.ipynb", "quick = False\nmax_jobs = 3\n")
    assert build_book.declares_parameter(pooled, "n_jobs") and not build_book.declares_parameter(plain, "n_jobs")
    assert build_book.notebook_parameters(pooled, {"quick": True}, jobs=2) == {"quick": True, "n_jobs": 1}
    assert build_book.notebook_parameters(plain, {"quick": True}, jobs=2) == {"quick": True}
    assert build_book.notebook_parameters(pooled, {}, jobs=1) == {}  # alone: the notebook's own default
    assert build_book.notebook_parameters(pooled, {"n_jobs": 4}, jobs=2) == {"n_jobs": 4}  # an explicit -p wins
    with_n_jobs = [nb.name for nb in NOTEBOOKS if build_book.declares_parameter(nb, "n_jobs")]
    assert "08_benchpress.ipynb" in with_n_jobs


def test_every_notebook_carries_a_static_cost_estimate():
    import build_book

    missing = [nb.name for nb in NOTEBOOKS if build_book.notebook_cost(nb) <= 0]
    assert not missing, f"no metadata.benchsel.cost_s in {missing} (the build order uses it)"


def test_the_build_refuses_a_page_whose_markdown_jupyterlab_would_show_raw(tmp_path):
    import json

    import build_book

    md = "Score {glue:text}`r2:.3f` and a figure\n\n```{figure} f.png\n:name: f\n```\n"
    nb = {"cells": [{"cell_type": "markdown", "source": md, "metadata": {}},
                    {"cell_type": "code", "source": "", "metadata": {}, "outputs": []}], "metadata": {}}
    path = tmp_path / "12_x.ipynb"
    path.write_text(json.dumps(nb))
    with pytest.raises(build_book.BuildError, match=r"(?s)12_x.ipynb:.*\[placeholder\].*figure.*"
                                                    r"\[placeholder\].*glue:text"):
        build_book.check_pages([path])


def test_buttons_point_to_the_configured_repository_which_the_environment_overrides():
    import build_book
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    default = (config.get("repository") or {}).get("url") or ""
    assert default == "" or re.match(r"^https?://[^/\s]+/\S+$", default), "_config.yml names a repository or none"
    own = build_book.configure_buttons(config, None)
    assert own["html"]["use_repository_button"] is bool(default)
    assert bool(own["launch_buttons"].get("binderhub_url")) is bool(default)
    assert own["html"].get("use_download_button", True) is True  # the .ipynb download stays
    named = {**config, "repository": {"url": "https://github.com/owner/benchsel", "branch": "main"}}
    on_file = build_book.configure_buttons(named, None)
    assert on_file["html"]["use_repository_button"] is True
    assert on_file["launch_buttons"]["binderhub_url"] and on_file["launch_buttons"]["colab_url"]
    bare = {k: v for k, v in config.items() if k != "repository"}
    off = build_book.configure_buttons(bare, None)
    assert "url" not in off["repository"] and off["html"]["use_repository_button"] is False
    assert not {"binderhub_url", "colab_url", "jupyterhub_url"} & set(off["launch_buttons"])
    on = build_book.configure_buttons(config, "https://github.com/someone/benchsel/", "dev")
    assert on["repository"]["url"] == "https://github.com/someone/benchsel"
    assert on["repository"]["branch"] == "dev" and on["html"]["use_repository_button"] is True
    assert on["launch_buttons"]["binderhub_url"] and on["launch_buttons"]["colab_url"]
    gitlab = build_book.configure_buttons(config, "https://gitlab.com/someone/benchsel")
    assert "colab_url" not in gitlab["launch_buttons"]
    with pytest.raises(ValueError, match="BENCHSEL_REPOSITORY_URL"):
        build_book.configure_buttons(config, "benchsel")
    assert ((config.get("repository") or {}).get("url") or "") == default  # the input is not modified


def test_every_chapter_gets_a_rerun_box_with_its_source_and_command(tmp_path):
    import build_book

    src = tmp_path / "04_greedy_cv.ipynb"
    src.write_text(json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": "# 4. T"},
                                         {"cell_type": "markdown", "metadata": {}, "source": "Claims"},
                                         {"cell_type": "code", "metadata": {"tags": ["parameters"]},
                                          "source": "seed = 0"}],
                               "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    dest = tmp_path / "out.ipynb"
    build_book.add_rerun_cell(src, dest, "https://github.com/o/benchsel", "main")
    cells = json.loads(dest.read_text())["cells"]
    assert [c["source"][:6] for c in cells[:2]] == ["# 4. T", "Claims"]
    assert cells[3]["metadata"]["tags"] == ["parameters"]  # the box stands right above the parameters
    box = cells[2]["source"]
    assert "https://github.com/o/benchsel/blob/main/notebooks/04_greedy_cv.ipynb" in box
    assert "scripts/run_notebook.py notebooks/04_greedy_cv.ipynb out.ipynb -p seed 1" in box


def test_appendix_substitutions_come_from_the_benchmarks_result_files(tmp_path):
    import build_book

    (tmp_path / "recommend.json").write_text(json.dumps(
        {"command": "python benchmarks/bench_recommend.py --quick", "measured": "2026-12-03",
         "values": {"mteb_k5_auto": "0.802"}}))
    subs = build_book.bench_substitutions(tmp_path)
    assert subs == {"recommend_command": "python benchmarks/bench_recommend.py --quick",
                    "recommend_measured": "2026-12-03", "recommend_mteb_k5_auto": "0.802"}


def test_link_check_flags_links_to_missing_pages(tmp_path):
    site = tmp_path / "html"
    (site / "notebooks").mkdir(parents=True)
    (site / "intro.html").write_text("x")
    (site / "notebooks" / "04_x.html").write_text("x")
    (site / "_sources").mkdir()
    (site / "_sources" / "04_x.ipynb").write_text("{}")
    html = ('<a href="../intro.html#top">intro</a> <a href="04_x.html">self</a> <a href="#sec">frag</a>'
            '<a href="../_sources/04_x.ipynb">download</a> <a href="05_y.html">missing</a>'
            '<a class="btn" href="https://mybinder.org/v2/gh/x/y/main">binder</a> <a href="mailto:a@b">m</a>'
            '<a href="../genindex.html">index</a>')
    broken, remote = check_site.page_links("notebooks/04_x.html", html, site)
    assert broken == ["../genindex.html", "05_y.html"]
    assert remote == ["https://mybinder.org/v2/gh/x/y/main"]


# --------------------------------------------------------------------- page scripts and favicon (fast)
def test_top_level_declarations_skip_nested_scopes_strings_comments_and_regexes():
    t = check_site.top_level_declarations
    assert t('const THEBE_JS_URL = "x"; const thebe_selector = ".a,.b"') == ["THEBE_JS_URL", "thebe_selector"]
    assert t("let a = 1, b = [1, 2], c = {x: 1, y: 2}; var d = 3") == ["a", "b", "c"]
    assert t("function f() { const inner = 1 } class K extends B { m() { let q } }") == ["K"]
    assert t("for (let i = 0; i < 3; i++) {}\nif (x) { const y = 2 }") == []
    assert t("// const c1 = 1\n/* let c2 */ const s = 'const fake = 1; let x'") == ["s"]
    assert t("const re = /const [a-z]+ = '\\//g; let after = 1") == ["re", "after"]
    assert t("const a = f(1)\ng(), h()\nlet b = 2") == ["a", "b"]  # a line break ends the list
    assert t("const a = 1,\n  b = 2") == ["a", "b"]
    assert t("obj.let = 1; x = y / 2; let w = `t ${1} const q`") == ["w"]


def test_repeated_inline_declarations_are_found_across_the_scripts_of_a_page():
    thebe = ('<script>const THEBE_JS_URL = "https://unpkg.com/thebe@0.8.2/lib/index.js"; '
             'const thebe_selector = ".thebe,.cell"</script>')
    page = (f"<html><head>{thebe}<script>let toggleHintShow = 'x';</script>{thebe}"
            '<script type="module">const toggleHintShow = 1</script>'
            '<script type="application/vnd.jupyter.widget-state+json">{"const": 1}</script>'
            '<script src="x.js"></script></head><body><script>class K {}</script></body></html>')
    assert check_site.inline_script_redeclarations(page) == ["THEBE_JS_URL", "thebe_selector"]
    once = page.replace(thebe, "", 1)
    assert check_site.inline_script_redeclarations(once) == []
    assert check_site.inline_script_redeclarations(once + "<script>class K { }</script>") == ["K"]


def test_favicon_must_be_linked_and_be_a_file_of_the_site(tmp_path):
    site = tmp_path / "html"
    (site / "_static").mkdir(parents=True)
    (site / "_static" / "favicon.svg").write_text("<svg/>")
    ok = '<html><head><link rel="icon" href="../_static/favicon.svg"/></head></html>'
    assert check_site.favicon_problems("notebooks/04_x.html", ok, site) == []
    assert check_site.favicon_problems("intro.html", ok.replace("../", ""), site) == []
    missing = check_site.favicon_problems("intro.html", ok.replace("favicon.svg", "favicon.ico"), site)
    assert len(missing) == 1 and "not in the site" in missing[0]
    assert "no <link" in check_site.favicon_problems("intro.html", "<html><head></head></html>", site)[0]
    remote = '<link rel="shortcut icon" href="https://example.org/favicon.ico">'
    assert "not a file of the site" in check_site.favicon_problems("intro.html", remote, site)[0]


def test_the_book_registers_the_script_dedup_extension_and_a_favicon_that_exist():
    import yaml

    config = build_book.resolve_config_paths(yaml.safe_load((ROOT / "_config.yml").read_text()))
    favicon = Path(config["html"]["favicon"])
    assert favicon.is_absolute() and favicon.is_file()
    ext_dir = Path(config["sphinx"]["local_extensions"]["benchsel_html"])
    assert ext_dir.is_absolute() and (ext_dir / "benchsel_html.py").is_file()
    # URLs and absolute paths are left alone
    same = build_book.resolve_config_paths({"html": {"favicon": "https://example.org/f.ico"}, "logo": "/abs/l.png"})
    assert same == {"html": {"favicon": "https://example.org/f.ico"}, "logo": "/abs/l.png"}


def test_sphinx_extension_keeps_one_copy_of_an_inline_script_registered_twice():
    """Sphinx 7 keeps an inline script once with file name None and once with "": one must go."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import benchsel_html
    from sphinx.builders.html._assets import _JavaScript

    body = 'const THEBE_JS_URL = "x"'
    scripts = [_JavaScript("_static/doctools.js", priority=200), _JavaScript(None, body=body),
               _JavaScript("_static/sphinx-thebe.js", **{"async": "async"}), _JavaScript("", body=body),
               _JavaScript("", body="let other = 1")]
    context = {"script_files": list(scripts)}
    benchsel_html.dedupe_page_scripts(None, "intro", "page.html", context, None)
    assert context["script_files"] == [scripts[0], scripts[1], scripts[2], scripts[4]]


def test_bare_index_redirect_becomes_a_page_with_the_favicon(tmp_path):
    site = tmp_path / "html"
    site.mkdir()
    (site / "intro.html").write_text('<html><head><title>The Book</title>\n<link rel="icon" '
                                     'href="_static/favicon.svg"/></head></html>')
    (site / "index.html").write_text('<meta http-equiv="Refresh" content="0; url=intro.html" />\n')
    assert build_book.complete_index_redirect(site)
    index = (site / "index.html").read_text()
    assert '<meta http-equiv="Refresh" content="0; url=intro.html">' in index
    assert '<link rel="icon" href="_static/favicon.svg"/>' in index and "<title>The Book</title>" in index
    assert not build_book.complete_index_redirect(site)  # a real page is left alone


# --------------------------------------------------------------------- one notebook, as the build runs it (fast)
def _tiny_notebook(path: Path, code: str) -> Path:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell("quick = False\nk = 1", metadata={"tags": ["parameters"]}),
                             new_code_cell(code)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_run_notebook_executes_with_parameters_and_widgets(tmp_path, capsys):
    import nbformat
    import run_notebook

    src = _tiny_notebook(tmp_path / "w.ipynb", "import ipywidgets as widgets\n"
                         "print('quick', quick, 'k', k)\n"
                         "widgets.interactive(lambda k: print(k), k=widgets.IntSlider(value=k, min=1, max=9))")
    out = tmp_path / "sub" / "out.ipynb"
    assert run_notebook.main([str(src), str(out), "--quick", "-p", "k", "3", "--no-cache"]) == 0
    cells = nbformat.read(out, as_version=4).cells
    text = "".join(o.get("text", "") for c in cells if c.cell_type == "code" for o in c.outputs)
    assert "quick True k 3" in text
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
               for c in cells if c.cell_type == "code" for o in c.outputs)
    assert "ok in" in capsys.readouterr().out


def test_run_notebook_stops_a_cell_at_the_time_limit(tmp_path, capsys):
    import time

    import run_notebook

    src = _tiny_notebook(tmp_path / "slow.ipynb", "import time\ntime.sleep(60)")
    t0 = time.perf_counter()
    assert run_notebook.main([str(src), str(tmp_path / "out.ipynb"), "--timeout", "2", "--no-cache"]) == 1
    assert time.perf_counter() - t0 < 45
    assert "CellTimeoutError" in capsys.readouterr().err
    assert run_notebook.main(["99_no_such", str(tmp_path / "x.ipynb")]) == 2
    assert run_notebook.main([str(src), str(src)]) == 2  # never overwrites the notebook itself


def test_build_and_run_notebook_share_a_per_cell_time_limit():
    import inspect

    import run_notebook

    assert build_book.DEFAULT_CELL_TIMEOUT_S > 0
    assert inspect.signature(build_book.build).parameters["timeout"].default == build_book.DEFAULT_CELL_TIMEOUT_S
    assert inspect.signature(run_notebook.run).parameters["timeout"].default == build_book.DEFAULT_CELL_TIMEOUT_S
    if NOTEBOOKS:
        assert run_notebook.resolve_notebook(NOTEBOOKS[0].name[:2]) == NOTEBOOKS[0]


# --------------------------------------------------------------------- publishing workflow (fast)
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def _readme_build_command() -> str:
    """The README's command that builds the book (``make book``), from its console blocks."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"```console\n(.*?)```", readme, flags=re.S):
        for line in block.splitlines():
            cmd = line.split("#", 1)[0].strip()
            if re.fullmatch(r"make book", cmd):
                return cmd
    raise AssertionError("the README shows no `make book` command")


def _default_build_dir() -> Path:
    """The build's default output folder (``build_book.build(build_dir=...)``)."""
    import inspect

    return Path(inspect.signature(build_book.build).parameters["build_dir"].default)


def _steps(job: dict) -> list[dict]:
    return job.get("steps", [])


def test_pages_workflow_builds_with_the_readme_command_and_deploys_the_site():
    import yaml

    wf = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads the key `on` as True
    assert "main" in on["push"]["branches"]
    assert wf["concurrency"]["group"] and wf["concurrency"]["cancel-in-progress"] is False
    jobs = wf["jobs"]
    build_cmd = _readme_build_command()
    builders = [name for name, job in jobs.items()
                if any(build_cmd in str(s.get("run", "")).splitlines() for s in _steps(job))]
    assert len(builders) == 1, f"no job runs the README's `{build_cmd}`"
    build = jobs[builders[0]]
    uses = [str(s.get("uses", "")) for s in _steps(build)]
    python = next(s for s in _steps(build) if str(s.get("uses", "")).startswith("actions/setup-python"))
    assert tuple(int(x) for x in str(python["with"]["python-version"]).split(".")[:2]) >= (3, 10)
    assert any(u.startswith("actions/setup-node") for u in uses), "make book needs npm"
    upload = next(s for s in _steps(build) if str(s.get("uses", "")).startswith("actions/upload-pages-artifact"))
    html = _default_build_dir() / "html"
    assert Path(upload["with"]["path"]) == html.relative_to(ROOT) == Path("_build/html")
    # the repository and launch buttons: the variable the build reads, this repository
    env = {**wf.get("env", {}), **build.get("env", {})}
    assert env[build_book.REPOSITORY_ENV] == "https://github.com/${{ github.repository }}"
    assert build_book.configure_buttons({}, "https://github.com/owner/benchsel")["html"]["use_repository_button"]
    deploy = [job for job in jobs.values()
              if any(str(s.get("uses", "")).startswith("actions/deploy-pages") for s in _steps(job))]
    assert len(deploy) == 1
    (deploy,) = deploy
    assert deploy["needs"] == builders[0] or builders[0] in deploy["needs"]
    perms = {**wf.get("permissions", {}), **deploy.get("permissions", {})}
    assert perms.get("pages") == "write" and perms.get("id-token") == "write"
    assert deploy["environment"]["name"] == "github-pages"


def test_a_kernel_that_dies_before_its_first_reply_is_started_again_but_a_failing_notebook_is_not(
        tmp_path, monkeypatch):
    import papermill

    calls = []

    def flaky(src, dest, **kwargs):
        calls.append(dest)
        if len(calls) == 1:
            raise RuntimeError("Kernel died before replying to kernel_info")
        Path(dest).write_text(Path(src).read_text())

    monkeypatch.setattr(papermill, "execute_notebook", flaky)
    monkeypatch.setattr(build_book.time, "sleep", lambda s: None)
    src = _tiny_notebook(tmp_path / "a.ipynb", "print(1)")
    r = build_book.execute_one(str(src), str(tmp_path / "out.ipynb"), {}, str(ROOT), 60)
    assert r["error"] is None and r["starts"] == 2 and len(calls) == 2

    def failing(src, dest, **kwargs):
        calls.append(dest)
        raise papermill.PapermillExecutionError(0, 1, "k = 0", "ValueError", "bad k", [])

    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", failing)
    r = build_book.execute_one(str(src), str(tmp_path / "out2.ipynb"), {}, str(ROOT), 60)
    assert r["error"] == "cell 1: ValueError: bad k" and r["starts"] == 1 and len(calls) == 1

    def never(src, dest, **kwargs):
        calls.append(dest)
        raise RuntimeError("Kernel died before replying to kernel_info")

    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", never)
    r = build_book.execute_one(str(src), str(tmp_path / "out3.ipynb"), {}, str(ROOT), 60)
    assert "Kernel died" in r["error"] and len(calls) == build_book.KERNEL_START_ATTEMPTS
