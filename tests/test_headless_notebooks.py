"""Notebooks run headless (a plain papermill call, ``scripts/run_notebook.py``) finish, or fail in one line.

A cell that displays ``ipywidgets.interactive`` made about one plain papermill
run in twenty wait for ever: nbclient, imitating the front end, sends the
``Output`` widget's state back on the shell channel while it waits on that
channel for the cell's reply, and the send can swallow the reply's wake-up.
:func:`benchsel_lib.explorer` sets the widget's outputs in the kernel instead,
so nothing is sent back. ``run_notebook.py`` refuses a parameter the notebook
does not declare or a value unlike its default, and a negative time limit,
before it starts a kernel; a cell past the limit is named in one line.
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

EXPLORE = '''import ipywidgets as widgets
import pandas as pd
from IPython.display import display
from benchsel_lib import explorer

table = pd.DataFrame({"k": range(1, 6), "r2": [0.5, 0.6, 0.7, 0.75, 0.8]})

def explore(dataset, k):
    print(f"{dataset} -- k = {k}")
    display(table[table["k"] <= k])
    print("selected: " + ", ".join(f"b{j}" for j in range(k)))

explorer(explore, dataset=widgets.Dropdown(options=["mteb", "merged"], value="mteb", description="matrix"),
         k=widgets.IntSlider(value=3 if quick else 4, min=1, max=5, description="k"))'''


def _notebook(path: Path, *cells: str) -> Path:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell("quick = False\nk_max = 15", metadata={"tags": ["parameters"]}),
                             *(new_code_cell(c) for c in cells)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def _output_widget_outputs(path: Path) -> list[dict]:
    state = json.loads(path.read_text())["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    (out,) = [m["state"]["outputs"] for m in state.values() if m["model_name"] == "OutputModel"]
    return out


# --------------------------------------------------------------------------- the explorer view
def test_explorer_shows_its_functions_output_and_redraws_on_a_change():
    widgets = pytest.importorskip("ipywidgets")
    from benchsel_lib import explorer

    k = widgets.IntSlider(value=2, min=1, max=5)
    box = explorer(lambda k: print(f"k = {k}") or print("done"), k=k)
    assert box.children[0] is k
    assert box.children[-1].outputs == ({"output_type": "stream", "name": "stdout", "text": "k = 2\ndone\n"},)
    k.value = 4
    assert box.children[-1].outputs[0]["text"] == "k = 4\ndone\n"
    with pytest.raises(ValueError, match="control 'k' must be an ipywidgets value widget"):
        explorer(print, k=3)


def test_no_chapter_displays_an_interactive_view_that_a_headless_run_can_stall_on():
    stalls = re.compile(r"\b(widgets\.)?(interactive|interact|interact_manual|interactive_output)\(")
    found = []
    for path in sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "code" and stalls.search("".join(cell["source"])):
                found.append(f"{path.name} cell {i}")
    assert found == [], ("use benchsel_lib.explorer(fn, **controls) in place of ipywidgets.interactive "
                         f"(a plain papermill run can stall on it): {found}")


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
    outputs = _output_widget_outputs(tmp_path / "out19.ipynb")
    assert [o["output_type"] for o in outputs] == ["stream", "display_data", "stream"]
    assert outputs[0]["text"] == "mteb -- k = 3\n" and "text/html" in outputs[1]["data"]


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
