"""The progress bar (tqdm) shows only where a person is watching and leaves no trace.

``enabled=False`` shows nothing; ``True`` shows it; ``None`` only in a terminal
or a live Jupyter kernel. In a terminal it is tqdm on stderr, erased when the
loop ends; in Jupyter tqdm's widget, in a display blanked at the end (or the
terminal bar when ``tqdm.notebook`` cannot be used). Whatever is shown, every
item is yielded once, in order.
"""
from __future__ import annotations

import io
import sys

import pytest

from benchsel_lib import _progress
from benchsel_lib._progress import progress


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class _Handle:
    """A display handle that records its updates."""

    def __init__(self) -> None:
        self.updates: list[tuple[object, dict]] = []

    def update(self, obj: object, **kw: object) -> None:
        self.updates.append((obj, kw))


@pytest.fixture
def notebook(monkeypatch) -> list[tuple[object, _Handle]]:
    """A live Jupyter kernel: ``(shown object, its handle)`` for every ``display`` call."""
    display_mod = pytest.importorskip("IPython.display")
    shown: list[tuple[object, _Handle]] = []

    def display(obj: object, **kw: object) -> _Handle:
        assert kw.get("display_id") is True
        shown.append((obj, _Handle()))
        return shown[-1][1]

    monkeypatch.setattr(_progress, "_in_notebook", lambda: True)
    monkeypatch.setattr(display_mod, "display", display)
    return shown


def _erased(text: str) -> bool:
    """The last thing written blanks the bar's line: a carriage return, spaces, a carriage return."""
    return text.endswith("\r") and text.rstrip("\r").split("\r")[-1].strip() == ""


@pytest.mark.parametrize("enabled", [False, None])
def test_no_bar_is_written_when_disabled_or_stderr_is_not_a_terminal(capsys, enabled):
    assert list(progress(range(5), desc="cells", enabled=enabled)) == [0, 1, 2, 3, 4]
    assert capsys.readouterr() == ("", "")


def test_disabled_shows_nothing_even_in_a_terminal_or_a_notebook(monkeypatch, notebook):
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert list(progress(range(3), desc="cells", enabled=False)) == [0, 1, 2]
    assert sys.stderr.getvalue() == "" and notebook == []


def test_enabled_writes_the_desc_and_count_to_stderr_and_erases_the_bar(capsys):
    assert list(progress(["a", "b", "c"], desc="cells", enabled=True)) == ["a", "b", "c"]
    out, err = capsys.readouterr()
    assert out == ""
    assert "cells" in err and "/3" in err
    assert _erased(err)


def test_a_terminal_shows_the_bar_by_default(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert list(progress(range(4), desc="sweep")) == [0, 1, 2, 3]
    assert "sweep" in sys.stderr.getvalue()
    assert _erased(sys.stderr.getvalue())


def test_total_is_shown_for_an_iterable_without_length(capsys):
    assert list(progress((i * i for i in range(4)), total=4, desc="cells", enabled=True)) == [0, 1, 4, 9]
    assert "/4" in capsys.readouterr().err


def test_every_item_is_yielded_once_in_order_and_lazily():
    pulled = []

    def source():
        for i in range(6):
            pulled.append(i)
            yield i

    got = []
    for item in progress(source(), enabled=True):
        assert pulled == got + [item]  # one item taken at a time, as the loop asks for it
        got.append(item)
    assert got == list(range(6))


def test_a_loop_left_early_still_erases_the_bar(capsys):
    for i in progress(range(10), desc="cells", enabled=True):
        if i == 3:
            break
    assert _erased(capsys.readouterr().err)


def test_a_notebook_shows_the_tqdm_widget_and_blanks_it_at_the_end(capsys, notebook):
    pytest.importorskip("ipywidgets")
    assert list(progress(range(5), desc="cells")) == [0, 1, 2, 3, 4]
    assert capsys.readouterr().err == ""  # nothing on stderr: the bar is the widget
    [(widget, handle)] = notebook
    assert type(widget).__module__ == "tqdm.notebook"
    assert handle.updates[-1] == ({"text/plain": ""}, {"raw": True})  # the saved notebook keeps a blank


def test_a_notebook_without_ipywidgets_falls_back_to_the_terminal_bar(capsys, monkeypatch, notebook):
    monkeypatch.setitem(sys.modules, "tqdm.notebook", None)  # its import fails
    assert list(progress(range(3), desc="cells")) == [0, 1, 2]
    assert "cells" in capsys.readouterr().err
    assert notebook == []
