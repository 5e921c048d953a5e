"""The book's build, without executing a chapter: rendering settings, links, one book, stale figures.

* Markdown outputs render as MyST; papermill's injected parameters cell is removed from the site.
* The repository: none by default (no repository or launch button, the download and the re-run command
  stay); ``scripts/set_repository.py`` sets it in ``_config.yml`` and writes the notebooks' set-up cell.
* One book: claims rows of one quantity agree across pages; the differences page is generated from the
  run's claims; a page quoting a result file measured on other code is marked.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import book_pages  # noqa: E402
import build_book  # noqa: E402
import result_file  # noqa: E402
import set_repository  # noqa: E402

NOTEBOOKS = build_book.discover_notebooks()
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def _notebook(path: Path, cells: list[dict]) -> Path:
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                    encoding="utf-8")
    return path


def _claims_output(*rows: dict) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": "table", "execution_count": 1,
            "outputs": [{"output_type": "display_data", "data": {"text/markdown": "| Claim |", "text/plain": "x"},
                         "metadata": {"benchsel_claims": list(rows)}}]}


def _row(claim: str, verdict: str = "reproduced", run: str = "0.72", key: str | None = None) -> dict:
    return {"claim": claim, "where": "Sec. 5.3", "paper": "0.72", "run": run, "verdict": verdict,
            "why": "within 0.03", "section": "figures-2-4", "key": key}


# ----------------------------------------------------------------- rendering: Markdown outputs, hidden plumbing
def test_markdown_outputs_render_as_myst_and_widget_state_is_served_locally():
    sconf = CONFIG["sphinx"]["config"]
    assert sconf["nb_render_markdown_format"] == "myst"
    assert "dollarmath" in CONFIG["parse"]["myst_enable_extensions"]
    assert any(k.endswith("embed-amd.js") for k in sconf["nb_ipywidgets_js"])


def test_the_injected_parameters_cell_is_removed_from_the_site(tmp_path):
    path = _notebook(tmp_path / "04_x.ipynb", [
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": "seed = 42", "outputs": []},
        {"cell_type": "code", "metadata": {"tags": ["injected-parameters"]}, "source": "# Parameters\nseed = 1",
         "outputs": []}])
    assert build_book.hide_injected_parameters(path) is True
    cells = json.loads(path.read_text())["cells"]
    assert cells[1]["metadata"]["tags"] == ["injected-parameters", "remove-cell"]
    assert cells[0]["metadata"]["tags"] == ["parameters"]
    assert build_book.hide_injected_parameters(path) is False  # idempotent


# ----------------------------------------------------------------------------------- the repository and links
def test_without_a_repository_the_site_offers_the_download_and_the_command_but_no_repository_link():
    bare = {**CONFIG, "repository": {"url": "", "branch": "main"}}
    config = build_book.configure_buttons(bare, None)
    assert config["html"]["use_repository_button"] is False and config["html"]["use_download_button"] is True
    assert not {"binderhub_url", "colab_url", "jupyterhub_url"} & set(config["launch_buttons"])
    nb = NOTEBOOKS[0] if NOTEBOOKS else ROOT / "notebooks" / "04_greedy_cv.ipynb"
    box = build_book.rerun_cell(nb, None, "main")["source"]
    assert "download button" in box and "scripts/run_notebook.py" in box
    assert "http" not in box and "blob/" not in box
    linked = build_book.rerun_cell(nb, "https://github.com/o/benchsel", "dev")["source"]
    assert f"https://github.com/o/benchsel/blob/dev/notebooks/{nb.name}" in linked and "Binder or Colab" in linked


def _run_cell(source: str, monkeypatch, installed: bool) -> str:
    """Run a set-up cell's code as IPython would, with ``benchsel_lib`` installed or not; the %pip line it runs."""
    import importlib.util

    from IPython.core.inputtransformer2 import TransformerManager

    calls: list[str] = []

    class Shell:
        def run_line_magic(self, name: str, line: str) -> None:
            calls.append(f"%{name} {line}")

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: (real(name, *a) if installed or name != "benchsel_lib" else None))
    exec(compile(TransformerManager().transform_cell(source), "<set-up>", "exec"), {"get_ipython": Shell})
    return "\n".join(calls)


def test_the_set_up_cell_installs_from_the_repository_only_where_benchsel_is_missing(monkeypatch):
    cell = set_repository.setup_cell("https://github.com/o/benchsel/", "dev")
    assert cell["metadata"] == {"jupyter": {"source_hidden": True}, "tags": ["remove-cell"]}
    assert cell["id"] == set_repository.SETUP_ID and cell["cell_type"] == "code" and cell["outputs"] == []
    source = "".join(cell["source"])
    assert _run_cell(source, monkeypatch, installed=True) == ""
    assert _run_cell(source, monkeypatch, installed=False) == (
        '%pip install --quiet "benchsel[book] @ git+https://github.com/o/benchsel@dev"')


def test_without_a_repository_the_set_up_cell_stops_with_one_line(monkeypatch):
    source = set_repository.setup_source(None)
    assert _run_cell(source, monkeypatch, installed=True) == ""
    with pytest.raises(ModuleNotFoundError) as err:
        _run_cell(source, monkeypatch, installed=False)
    assert "\n" not in str(err.value) and "pip install -e '.[book]'" in str(err.value)


def test_apply_setup_cell_puts_one_cell_first_and_is_idempotent():
    nb = {"cells": [{"cell_type": "markdown", "id": "t", "metadata": {}, "source": "# 1. T"}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    assert set_repository.apply_setup_cell(nb, "https://github.com/o/b") is True
    assert set_repository.apply_setup_cell(nb, "https://github.com/o/b") is False
    assert nb["nbformat_minor"] == 5 and len(nb["cells"]) == 2
    assert set_repository.apply_setup_cell(nb, None) is True  # replaced, not added
    assert len(nb["cells"]) == 2 and set_repository.has_setup_cell(nb, None)
    moved = {"cells": [nb["cells"][1], nb["cells"][0]]}
    assert set_repository.apply_setup_cell(moved, None) is True
    assert [c.get("id") for c in moved["cells"]] == [set_repository.SETUP_ID, "t"]
    with pytest.raises(ValueError, match="not a repository URL"):
        set_repository.setup_cell("benchsel")


def test_set_repository_rewrites_the_config_keeping_its_comments_and_the_notebooks(tmp_path, monkeypatch):
    config = tmp_path / "_config.yml"
    config.write_text((ROOT / "_config.yml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "notebooks").mkdir()
    nb = _notebook(tmp_path / "notebooks" / "01_a.ipynb", [{"cell_type": "markdown", "metadata": {},
                                                          "source": "# 1. A"}])
    monkeypatch.setattr(set_repository, "CONFIG", config)
    monkeypatch.setattr(set_repository, "NOTEBOOK_DIR", tmp_path / "notebooks")
    original = config.read_text()
    assert set_repository.numbered_notebooks() == [nb]  # nothing of the project is touched
    assert set_repository.main(["https://github.com/o/benchsel", "--branch", "dev"]) == 0
    assert set_repository.configured_repository(config) == ("https://github.com/o/benchsel", "dev")
    assert config.read_text().count("#") == original.count("#")  # the comments stay
    assert set_repository.main(["--check"]) == 0
    before = (config.read_text(), nb.read_text())
    assert set_repository.main(["https://github.com/o/benchsel", "--branch", "dev"]) == 0
    assert (config.read_text(), nb.read_text()) == before  # a second run changes nothing
    assert set_repository.main(["--none"]) == 0
    assert set_repository.configured_repository(config) == (None, "main")
    assert config.read_text() == original  # back to no repository, as committed
    assert set_repository.has_setup_cell(json.loads(nb.read_text()), None)
    with pytest.raises(SystemExit):
        set_repository.main(["https://github.com/o/benchsel", "--none"])


@pytest.mark.parametrize("nb", [pytest.param(nb, id=nb.stem) for nb in NOTEBOOKS])
def test_every_notebooks_set_up_cell_matches_the_configured_repository(nb):
    data = json.loads(nb.read_text(encoding="utf-8"))
    if set_repository.find_setup_cell(data) is None:
        pytest.skip("no set-up cell yet: python scripts/set_repository.py --none (or URL) writes it")
    url, branch = set_repository.configured_repository(ROOT / "_config.yml")
    assert set_repository.has_setup_cell(data, url, branch), (
        f"{nb.name}: its set-up cell is not the one for {url or 'no repository'} ({branch}); "
        "run python scripts/set_repository.py")


def test_binder_installs_the_project_with_the_book_extra_which_has_jupyterlab():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert any(p.startswith("-e .[") and "book" in p for p in pip)
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "jupyterlab>=4" in extras["book"]


# ------------------------------------------------------------------------------------------------- one book
def test_claims_of_one_quantity_must_agree_across_pages(tmp_path):
    a = _notebook(tmp_path / "04_a.ipynb", [_claims_output(_row("R2 at k=5", key="r2-k5"), _row("other"))])
    b = _notebook(tmp_path / "05_b.ipynb", [_claims_output(_row("R2 at k=5 again", key="r2-k5"))])
    assert book_pages.claims_disagreements([a, b]) == []
    build_book.check_claims_agree([a, b])
    c = _notebook(tmp_path / "08_c.ipynb", [_claims_output(_row("R2", verdict="partly", run="0.66", key="r2-k5"))])
    (line,) = book_pages.claims_disagreements([a, b, c])
    assert "'r2-k5'" in line and "notebooks/04_a" in line and "notebooks/08_c" in line and "'partly'" in line
    with pytest.raises(build_book.BuildError, match="r2-k5"):
        build_book.check_claims_agree([a, c])


def test_the_differences_page_lists_the_verdict_rule_and_this_runs_open_claims(tmp_path):
    from benchsel_lib.book.claims import TOLERANCES

    a = _notebook(tmp_path / "04_greedy.ipynb", [
        {"cell_type": "markdown", "metadata": {}, "source": "# 4. Greedy selection\n\nText."},
        _claims_output(_row("fine"), _row("[off](#figures-2-4) by a bit", "partly", "0.66"),
                       {**_row("BenchPress", "not run", "—"), "why": "Merged was not in this run"})])
    page = (ROOT / "docs" / "differences.md").read_text(encoding="utf-8")
    assert book_pages.GENERATED_MARK in page
    text = book_pages.fill_generated(page, [a], "..")
    assert book_pages.GENERATED_MARK not in text
    for tol in TOLERANCES.values():
        assert tol.meaning in text
    assert "Of the 3 claims" in text and ", 1 are reproduced" in text
    assert "| [4. Greedy selection](../notebooks/04_greedy.ipynb) | off by a bit | 0.72 | 0.66 | **partly** |" in text
    assert "Merged was not in this run" in text and "| fine |" not in text
    none = book_pages.this_run_section([])
    assert "no chapter with a claims table" in none


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "benchsel_lib").mkdir(parents=True)
    (root / "benchmarks" / "results").mkdir(parents=True)
    (root / "notebooks").mkdir()
    (root / "benchsel_lib" / "a.py").write_text("x = 1\n")
    (root / "notebooks" / "n.txt").write_text("n\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "one")
    return root


def test_a_result_file_is_stale_when_measured_dirty_or_on_other_code(repo):
    first = _git(repo, "rev-parse", "HEAD")
    assert result_file.git_state(repo) == (first, False)
    assert result_file.staleness({"commit": first, "dirty": False}, repo) is None
    assert result_file.staleness({"measured": f"2026-12-03, commit {first[:7]}, AMD"}, repo) is None
    assert result_file.staleness({"commit": first, "dirty": True}, repo) == "measured with uncommitted changes"
    assert result_file.staleness({"measured": f"commit {first[:7]} with uncommitted changes"}, repo) == (
        "measured with uncommitted changes")
    assert result_file.staleness({"measured": "2026-12-03, AMD"}, repo) == "the file names no commit"
    assert result_file.staleness({"commit": "1234567"}, repo) == "its commit is not in this clone"
    # a result file and a notebook changing do not make it stale; the library's code does
    (repo / "benchmarks" / "results" / "r.json").write_text("{}\n")
    (repo / "notebooks" / "n.txt").write_text("m\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "two")
    assert result_file.staleness({"commit": first}, repo) is None
    (repo / "benchsel_lib" / "a.py").write_text("x = 2\n")
    assert result_file.git_state(repo)[1] is True
    _git(repo, "commit", "-q", "-am", "three")
    assert "changed since" in result_file.staleness({"commit": first}, repo)


def test_a_result_file_written_by_an_earlier_benchmark_leaves_the_checkout_clean(repo):
    (repo / "benchmarks" / "results" / "r.json").write_text("{}\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "a result file")
    (repo / "benchmarks" / "results" / "r.json").write_text('{"a": 1}\n')  # as run_all.py's next benchmark finds it
    assert result_file.git_state(repo)[1] is False
    assert result_file.git_state(repo / "benchsel_lib")[1] is False  # from a folder inside the tree too
    (repo / "notebooks" / "n.txt").write_text("m\n")
    assert result_file.git_state(repo)[1] is True


def test_result_files_record_their_commit_and_dirty_flag(repo, monkeypatch):
    monkeypatch.setattr(result_file, "ROOT", repo)
    data = result_file.write(repo / "benchmarks" / "results" / "x.json", {"a": "1"}, load_start=(0.0, 0.0, 0.0),
                             argv=["bench_x.py"])
    assert data["commit"] == _git(repo, "rev-parse", "HEAD") and data["dirty"] is False
    assert result_file.measured_at(data) == (data["commit"], False) and result_file.problems(data) == []
    assert result_file.problems({**data, "dirty": "no"}) == ["'dirty' is not true or false"]


def test_pages_that_quote_a_stale_result_file_say_so_at_their_top(repo, tmp_path, monkeypatch):
    head = _git(repo, "rev-parse", "HEAD")
    results = repo / "benchmarks" / "results"
    (results / "bench-cv.json").write_text(json.dumps(
        {"command": "python benchmarks/bench_cv.py --json x", "measured": f"commit {head[:7]} with uncommitted "
         "changes", "values": {"k5": "0.70"}}))
    (results / "bench-em.json").write_text(json.dumps(
        {"command": "python benchmarks/bench_em.py", "measured": "m", "commit": head, "dirty": False,
         "values": {"iters": "274"}}))
    stale = book_pages.stale_results(results, repo)
    assert [s.path for s in stale] == ["benchmarks/results/bench-cv.json"]
    page = "# Performance\n\nCV: {{ bench_cv_k5 }}; EM: {{ bench_em_iters }}.\n"
    text, hits = book_pages.mark_stale_page(page, build_book.quoted_names(page), stale)
    assert hits == stale and text.startswith("# Performance\n\n:::{warning}")
    note = text.split(":::")[1]
    assert "`benchmarks/results/bench-cv.json` | " + head[:7] + " | measured with uncommitted changes" in note
    assert "`python benchmarks/bench_cv.py --json x`" in note and "bench-em" not in note
    assert book_pages.mark_stale_page("# Other\n\n{{ bench_em_iters }}\n", {"bench_em_iters"}, stale)[1] == []
    src = tmp_path / "src"
    (src / "docs").mkdir(parents=True)
    (src / "docs" / "performance.md").write_text(page)
    monkeypatch.setattr(book_pages, "stale_results", lambda d: stale)
    assert build_book.finish_pages(src, [], stale="mark") == ["docs/performance.md: benchmarks/results/bench-cv.json"]
    assert ":::{warning}" in (src / "docs" / "performance.md").read_text()
    (src / "docs" / "performance.md").write_text(page)
    with pytest.raises(build_book.BuildError, match="bench-cv.json"):
        build_book.finish_pages(src, [], stale="fail")


def test_this_repositorys_result_files_measured_with_uncommitted_changes_are_found_stale():
    stale = {s.path for s in book_pages.stale_results(build_book.RESULTS_DIR)}
    for path in sorted(build_book.RESULTS_DIR.glob("*.json")):
        if result_file.measured_at(json.loads(path.read_text()))[1]:
            assert f"benchmarks/results/{path.name}" in stale
