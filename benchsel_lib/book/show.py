"""What a chapter shows in place of computed text: Markdown outputs and the checks under its sentences.

A chapter's prose is written in its Markdown cells, where Jupyter and the
site show it alike. Two things in it must follow the run:

* a number that changes with the parameters is displayed as the output of a
  small hidden cell (:func:`markdown`), never pasted into the prose;
* a qualitative sentence ("greedy entropy beats random at every size") is
  followed by a hidden cell that checks it on this run's numbers
  (:func:`holds`): when a run with other parameters breaks it, a visible
  note stands under the sentence, saying what this run found instead.

Both outputs are ``text/markdown``, which JupyterLab renders in place and the
site renders as MyST; the notes carry :data:`NOTE_KEY` in their metadata, so
that a build or a test can count them.
"""
from __future__ import annotations

from typing import Any

__all__ = ["NOTE_KEY", "Note", "holds", "markdown"]

#: Output metadata key that marks a note from :func:`holds` (its value is the note's text).
NOTE_KEY = "benchsel_note"
#: Notes already shown in this kernel: a repeated one is shortened to a reference to the first.
_SAID: set[str] = set()


class _Markdown:
    """Markdown text shown as a ``text/markdown`` output (with ``text/plain`` beside it)."""

    def __init__(self, text: str, metadata: dict[str, Any] | None = None) -> None:
        self.text = text
        self.metadata = metadata or {}

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, str], dict[str, Any]]:
        return {"text/markdown": self.text, "text/plain": self.text}, self.metadata

    def __repr__(self) -> str:
        return self.text


def markdown(text: str) -> _Markdown:
    """``text`` shown as Markdown in place, in Jupyter and on the site.

    Parameters
    ----------
    text : str
        Markdown; ``$...$`` math renders in both. A missing value must not
        reach it: format numbers with :func:`benchsel_lib.book.prose.num`,
        which refuses NaN.

    Returns
    -------
    object
        Displayed as a ``text/markdown`` output (the last expression of a
        cell, or through ``display``).

    Notes
    -----
    Complexity O(len(text)).
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError("markdown() needs a non-empty string")
    return _Markdown(text)


class Note(_Markdown):
    """The visible note of a broken check (see :func:`holds`)."""


def holds(condition: Any, note: str) -> None:
    """Check a sentence of the chapter on this run; a visible note when it does not hold.

    Call it in a hidden cell right under the Markdown cell that makes the
    claim. When ``condition`` is true nothing is shown; when it is false
    the note is displayed in place, beginning "**Not in this run.**".

    Parameters
    ----------
    condition : bool-like
        Whether the sentence above is true of this run's numbers (a NumPy
        bool is accepted; an array is refused: reduce it with ``all`` or
        ``any`` first).
    note : str
        What this run shows instead, in a sentence (Markdown; may quote
        this run's numbers). A note already shown in this kernel (the same
        reason under another sentence) is shown as a short reference to it.

    Returns
    -------
    None
        The note is displayed (several checks may share a cell); outside
        IPython it is printed.

    Notes
    -----
    Complexity O(1).
    """
    if hasattr(condition, "__len__") and not isinstance(condition, str):
        raise TypeError("holds() takes one truth value; reduce an array with all() or any() first")
    if not isinstance(note, str):
        raise TypeError(f"holds() takes the note as a string, got {type(note).__name__}")
    if bool(condition):
        return
    if not note.strip():
        raise ValueError("holds() needs the note to show when the sentence does not hold")
    text = note.strip()
    if text in _SAID:  # the same reason under a second sentence: said once on the page
        text = "as the note above says."
    else:
        _SAID.add(text)
    shown = Note(f"> **Not in this run.** {text}", {NOTE_KEY: note.strip()})
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(shown.text)
        return
    display(shown)
