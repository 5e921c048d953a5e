"""Explorers, and notebooks run headless (a plain papermill call, ``scripts/run_notebook.py``) that finish.

:func:`benchsel_lib.explorer` computes every panel while its cell runs and
links its controls to a ``Stack`` of panels with ``jslink``: nothing is
captured from the kernel (no ``Output`` widget, no ``interactive``, on which
about one plain papermill run in twenty waited for ever), so a headless run
cannot stall on it, and the saved widget state is all the site needs.
``run_notebook.py`` refuses a parameter the notebook does not declare or a
value unlike its default, and a negative time limit, before it starts a
kernel; a cell past the limit is named in one line.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
sys.path.insert(0, str(ROOT / "scripts"))

EXPLORE = '''import pandas as pd
from benchsel_lib import explorer

table = pd.DataFrame({"k": range(1, 6), "r2": [0.5, 0.6, 0.7, 0.75, 0.8]})

def explore(dataset, k):
    return [f"**{dataset}**, k = {k}", table[table["k"] <= k]]

explorer(explore, dataset=["mteb", "merged"], k=[1, 2, 3] if quick else [1, 2, 3, 4, 5])'''


def _notebook(path: Path, *cells: str) -> Path:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell("quick = False\nk_max = 15", metadata={"tags": ["parameters"]}),
                             *(new_code_cell(c) for c in cells)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def _saved_models(path: Path) -> list[dict]:
    """The widget models papermill saved in an executed notebook."""
    state = json.loads(path.read_text())["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    return list(state.values())


@pytest.fixture
def links(monkeypatch) -> list[tuple]:
    """Every ``ipywidgets.jslink`` made while the test runs, as ``(source, target)`` pairs."""
    widgets = pytest.importorskip("ipywidgets")
    made, real = [], widgets.jslink
    monkeypatch.setattr(widgets, "jslink", lambda source, target: made.append((source, target)) or real(source, target))
    return made


def _panels(stack) -> list[str]:
    """The HTML of every panel under a ``Stack``, depth first."""
    return [p for child in stack.children
            for p in (_panels(child) if hasattr(child, "selected_index") else [child.value])]


# --------------------------------------------------------------------------- the explorer
def test_explorer_renders_every_combination_once_while_its_cell_runs(links):
    from benchsel_lib import explorer

    calls = []
    box = explorer(lambda m, k: calls.append((m, k)) or f"**{m}** at k = {k}", m=["mmlu", "mteb"],
                   k={"one": 1, "two": 2, "five": 5})
    assert calls == [("mmlu", 1), ("mmlu", 2), ("mmlu", 5), ("mteb", 1), ("mteb", 2), ("mteb", 5)]
    controls, stack = box.children
    assert [c.description for c in controls.children] == ["m", "k"]
    assert list(controls.children[1].options) == ["one", "two", "five"]
    assert _panels(stack) == [f"<p><strong>{m}</strong> at k = {k}</p>\n" for m, k in calls]
    assert stack.selected_index == 0 and [s.selected_index for s in stack.children] == [0, 0]


def test_each_control_is_linked_in_the_browser_to_the_stacks_of_its_level(links):
    from benchsel_lib import explorer

    box = explorer(lambda m, k: f"{m} {k}", m=["mmlu", "mteb"], k=[1, 2, 3])
    (m, k), stack = box.children[0].children, box.children[1]
    pairs = {(id(src[0]), src[1], id(dst[0]), dst[1]) for src, dst in links}
    assert pairs == {(id(m), "index", id(stack), "selected_index")} | {
        (id(k), "index", id(s), "selected_index") for s in stack.children}


def test_explorer_picks_a_control_that_suits_the_values():
    widgets = pytest.importorskip("ipywidgets")
    from benchsel_lib import explorer

    box = explorer(lambda k, m, s: "x", k=[1, 2, 3, 4, 5], m=["mmlu", "mteb"],
                   s=["the paper's scheme of holdouts", "nested cross-validation", "x"])
    assert [type(c) for c in box.children[0].children] == [widgets.SelectionSlider, widgets.ToggleButtons,
                                                            widgets.Dropdown]


def test_explorer_shows_figures_as_images_and_tables_as_html():
    pytest.importorskip("ipywidgets")
    import matplotlib.pyplot as plt
    import pandas as pd

    from benchsel_lib import explorer

    def render(k):
        fig, ax = plt.subplots()
        ax.plot(range(k))
        return [fig, pd.DataFrame({"k": [k]})]

    before = plt.get_fignums()
    (first, second) = _panels(explorer(render, k=[2, 3]).children[1])
    assert first.startswith('<img src="data:image/png;base64,') and "<table" in first and first != second
    assert plt.get_fignums() == before  # every figure is closed once drawn


def test_a_panel_keeps_a_laid_out_figure_at_its_size_and_trims_one_without_layout():
    import base64
    import io

    from matplotlib.figure import Figure
    from PIL import Image

    from benchsel_lib.explore import panel_html

    def pixels(fig):
        data = re.search(r"base64,([^\"]+)", panel_html(fig)).group(1)
        return Image.open(io.BytesIO(base64.b64decode(data))).size

    for layout, trimmed in (("constrained", False), (None, True)):
        fig = Figure(figsize=(4, 3), layout=layout)
        fig.add_subplot().plot([0, 1])
        size = pixels(fig)
        assert (size != (4 * 72, 3 * 72)) == trimmed, (layout, size)  # the panel's 72 dpi


def test_explorer_refuses_more_combinations_than_it_may_precompute():
    from benchsel_lib.explore import MAX_STATES, explorer

    calls = []
    with pytest.raises(ValueError, match=rf"64 is more than {MAX_STATES}; offer fewer values"):
        explorer(lambda a, b: calls.append(1) or "x", a=list(range(8)), b=list(range(8)))
    assert calls == []  # refused before any panel is drawn
    assert len(_panels(explorer(lambda a, b: f"{a}{b}", a=list(range(6)), b=list(range(10))).children[1])) == 60


@pytest.mark.parametrize(("controls", "error", "message"), [
    ({}, ValueError, "an explorer needs at least one control"),
    ({"k": 3}, TypeError, "control 'k' takes a list of values or a mapping of labels to values, got int"),
    ({"k": "abc"}, TypeError, "control 'k' takes a list of values"),
    ({"k": []}, ValueError, "control 'k' has no values"),
    ({"k": [1, "1"]}, ValueError, "control 'k' has two values with the same label"),
])
def test_explorer_refuses_a_bad_control_with_a_clear_message(controls, error, message):
    pytest.importorskip("ipywidgets")
    from benchsel_lib import explorer

    with pytest.raises(error, match=re.escape(message)):
        explorer(lambda **values: "x", **controls)


def test_explorer_refuses_a_panel_it_cannot_show():
    pytest.importorskip("ipywidgets")
    from benchsel_lib import explorer

    with pytest.raises(TypeError, match="an explorer panel shows figures, tables or Markdown, got int"):
        explorer(lambda k: k, k=[1, 2])


def test_no_chapter_displays_an_interactive_view_that_a_headless_run_can_stall_on():
    stalls = re.compile(r"\b(widgets\.)?(interactive|interact|interact_manual|interactive_output|Output)\(")
    found = []
    for path in sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "code" and stalls.search("".join(cell["source"])):
                found.append(f"{path.name} cell {i}")
    assert found == [], ("use benchsel_lib.explorer(render, **controls) in place of ipywidgets.interactive or an "
                         f"Output widget (a plain papermill run can stall on them): {found}")


@pytest.mark.book
def test_a_plain_papermill_run_of_an_explorer_cell_never_stalls_in_20_runs(tmp_path):
    src = _notebook(tmp_path / "explore.ipynb", EXPLORE, "print('the end')")
    times = []
    for i in range(20):
        out = tmp_path / f"out{i}.ipynb"
        t0 = time.monotonic()
        res = subprocess.run([sys.executable, "-m", "papermill", str(src), str(out), "-k", "python3",
                              "-p", "quick", "True", "--no-progress-bar", "--log-level", "WARNING"],
                             capture_output=True, text=True, timeout=60, cwd=tmp_path)
        times.append(time.monotonic() - t0)
        assert res.returncode == 0, res.stderr
    assert max(times) < 30, times  # a run takes a few seconds; a stalled one waits for ever
    models = _saved_models(tmp_path / "out19.ipynb")
    names = [m["model_name"] for m in models]
    assert "OutputModel" not in names and names.count("LinkModel") == 3 and names.count("StackModel") == 3
    panels = [m["state"]["value"] for m in models if m["model_name"] == "HTMLModel"]
    assert len(panels) == 6 and any("<strong>merged</strong>, k = 3" in p and "<table" in p for p in panels)


@pytest.mark.book
def test_the_plain_papermill_command_runs_a_quick_chapter_20_times_without_a_stall(tmp_path):
    chapter = NOTEBOOK_DIR / "07_normality.ipynb"
    if not chapter.exists():
        pytest.skip("chapter 7 is not in this checkout")
    times = []
    for i in range(20):  # one after the other: two kernels started at once may pick the same port
        t0 = time.monotonic()
        res = subprocess.run([sys.executable, "-m", "papermill", str(chapter), str(tmp_path / f"out{i}.ipynb"),
                              "-k", "python3", "-p", "quick", "True", "--no-progress-bar", "--log-level", "WARNING"],
                             capture_output=True, text=True, timeout=120, cwd=ROOT)
        times.append(round(time.monotonic() - t0, 1))
        assert res.returncode == 0, res.stderr[-2000:]
    assert max(times) < 60, times  # a quick run takes seconds; a stalled one would wait for ever


# --------------------------------------------------------------------------- scripts/run_notebook.py
@pytest.mark.parametrize(("argv", "message"), [
    (["-p", "K_MAX", "5"], "has no parameter 'K_MAX'; did you mean 'k_max'? (its parameters: quick, k_max)"),
    (["-p", "k_max", "null"], "parameter k_max: expected an integer like its default 15, got 'null' (null)"),
    (["-p", "quick", "1"], "parameter quick: expected True or False like its default False, got '1' (an integer)"),
    (["--timeout", "-5"], "--timeout must be 0 (no limit) or a number of seconds, got -5"),
])
def test_run_notebook_refuses_a_parameter_or_a_limit_it_cannot_honour_before_starting_a_kernel(
        tmp_path, capsys, monkeypatch, argv, message):
    import run_notebook

    monkeypatch.setattr(run_notebook, "run", lambda *a, **k: pytest.fail("a kernel was started"))
    src = _notebook(tmp_path / "nb.ipynb", "print(k_max)")
    assert run_notebook.main([str(src), str(tmp_path / "out.ipynb"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("run_notebook: error: ") and message in err[0]


@pytest.mark.book
def test_run_notebook_names_the_cell_past_the_time_limit_in_one_line(tmp_path, capfd):
    import run_notebook

    src = _notebook(tmp_path / "slow.ipynb", "x = 1", "import time\ntime.sleep(60)")
    assert run_notebook.main([str(src), str(tmp_path / "out.ipynb"), "--timeout", "2", "--no-cache"]) == 1
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1, err  # no traceback of the kernel's sockets: that goes to out.log
    assert err[0].startswith("run_notebook: slow.ipynb FAILED after ")
    assert "cell 3 of 3 (its first line: 'import time') ran past the per-cell limit of 2 s" in err[0]
    assert (tmp_path / "out.log").exists() and str(tmp_path / "out.log") in err[0]
