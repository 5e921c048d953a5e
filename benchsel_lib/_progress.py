"""A minimal progress bar that shows only where a person is watching.

In a terminal it writes to stderr and erases itself; when stderr is not a
terminal (a pipe, CI, papermill) it prints nothing. In Jupyter it updates one
output line in place and blanks it when done, so the saved notebook (and the
rendered book) keeps no trace of it.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

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
    """Yield from ``iterable`` while showing a progress bar.

    Parameters
    ----------
    iterable : iterable
        What to loop over.
    total : int, optional
        Number of items (taken from ``len(iterable)`` when possible).
    desc : str
        A short label.
    enabled : bool or None
        ``False`` silences the bar; ``None`` (default) shows it only in a
        terminal or a live Jupyter kernel.
    """
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    if enabled is False:
        yield from iterable
        return
    if _in_notebook():
        # A display handle updated in place and blanked at the end: live in
        # Jupyter, and nothing is left in the saved notebook or the book.
        from IPython.display import display

        handle = display({"text/plain": f"{desc} 0/{total or '?'}"}, raw=True, display_id=True)
        done = 0
        try:
            for item in iterable:
                yield item
                done += 1
                handle.update({"text/plain": f"{desc} {done}/{total or '?'}"}, raw=True)
        finally:
            handle.update({"text/plain": ""}, raw=True)
        return
    tty = enabled is True or sys.stderr.isatty()
    if not tty:
        yield from iterable
        return
    done = 0
    width = 30
    try:
        for item in iterable:
            yield item
            done += 1
            if total:
                filled = int(width * done / total)
                sys.stderr.write(f"\r{desc} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
            else:
                sys.stderr.write(f"\r{desc} {done}")
            sys.stderr.flush()
    finally:
        sys.stderr.write("\r" + " " * (width + len(desc) + 24) + "\r")
        sys.stderr.flush()
