"""The library's progress bar: tqdm, shown only where a person is watching.

In a terminal it is tqdm on stderr and erases itself when done; when stderr is
not a terminal (a pipe, CI, papermill) nothing is shown unless asked for. In a
live Jupyter kernel it is tqdm's notebook widget (or the terminal bar on
stderr when ipywidgets is missing), in a display that is blanked when the loop
ends, so the saved notebook (and the rendered book, which drops blank
outputs) keeps no trace of it.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")

__all__ = ["progress"]


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython  # type: ignore[import-not-found]
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def progress(iterable: Iterable[T], *, total: int | None = None, desc: str = "", enabled: bool | None = None) -> Iterator[T]:
    """Yield every item of ``iterable``, once and in order, while showing a progress bar.

    Parameters
    ----------
    iterable : iterable
        What to loop over.
    total : int, optional
        Number of items (tqdm takes ``len(iterable)`` when possible).
    desc : str
        A short label.
    enabled : bool or None
        ``False`` shows nothing; ``True`` shows the bar (on stderr outside
        Jupyter, even when it is not a terminal); ``None`` (default) shows it
        only in a terminal (stderr is a TTY) or a live Jupyter kernel.
    """
    notebook = enabled is not False and _in_notebook()
    if enabled is False or not (enabled or notebook or sys.stderr.isatty()):
        yield from iterable
        return
    if notebook:
        try:
            from tqdm.notebook import tqdm as notebook_tqdm

            bar = notebook_tqdm(iterable, total=total, desc=desc, leave=False, display=False)
        except ImportError:  # no ipywidgets: the terminal bar below
            pass
        else:
            from IPython.display import display

            # shown through a handle blanked at the end: leave=False only hides
            # the widget, and its output would stay in the saved notebook
            handle = display(bar.container, display_id=True)
            try:
                with bar:
                    yield from bar
            finally:
                handle.update({"text/plain": ""}, raw=True)
            return
    with tqdm(iterable, total=total, desc=desc, leave=False, file=sys.stderr) as bar:
        yield from bar
