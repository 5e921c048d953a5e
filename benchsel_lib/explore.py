"""Interactive views that a headless notebook run (papermill, nbclient) cannot stall on.

``ipywidgets.interactive(fn, **controls)`` prints ``fn``'s output into an
``Output`` widget by *capturing* it: the kernel tags the messages of the
running cell, and the front end routes them into the widget. nbclient (under
papermill and the book build) imitates that front end: for every message it
routes it sends the widget's new state back to the kernel on the shell
channel, from one task, while another task waits on that same channel for the
cell's reply. A send on a ZMQ socket can consume the readiness edge of a
reply that has just arrived; the waiting task then never wakes, and with no
cell timeout the run stalls for ever (about one run in twenty of a chapter
with such a cell; a known nbclient bug).

:func:`explorer` shows the same controls and output, but runs ``fn`` with its
output recorded in the kernel and sets the ``Output`` widget's ``outputs``
itself: nothing is captured, so the client never sends on the shell channel
during the cell, and a live notebook redraws it on every change of a control
as before.
"""
from __future__ import annotations

import io
import sys
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

__all__ = ["explorer", "recorded_outputs"]


class _Stream(io.TextIOBase):
    """A text stream whose writes become notebook ``stream`` outputs (consecutive writes merged)."""

    def __init__(self, outputs: list[dict[str, Any]], name: str) -> None:
        self._outputs, self._name = outputs, name

    def writable(self) -> bool:  # noqa: D102
        return True

    def write(self, text: str) -> int:  # noqa: D102
        last = self._outputs[-1] if self._outputs else None
        if last is not None and last["output_type"] == "stream" and last["name"] == self._name:
            last["text"] += text
        else:
            self._outputs.append({"output_type": "stream", "name": self._name, "text": text})
        return len(text)


@contextmanager
def recorded_outputs() -> Any:
    """Record what the block prints and displays, in order, as notebook outputs (a list, yielded).

    ``print`` (stdout, stderr) becomes ``stream`` outputs and ``display``
    ``display_data`` outputs; nothing reaches the cell's own output. Outside
    IPython only the streams are recorded. O(size of the output).
    """
    outputs: list[dict[str, Any]] = []
    shell = _shell()
    publisher = None
    if shell is not None:
        from IPython.core.displaypub import DisplayPublisher

        class _Publisher(DisplayPublisher):
            def publish(self, data: dict[str, Any], metadata: dict[str, Any] | None = None, source: Any = None, *,
                        transient: dict[str, Any] | None = None, update: bool = False, **kwargs: Any) -> None:
                outputs.append({"output_type": "display_data", "data": data, "metadata": metadata or {}})

            def clear_output(self, wait: bool = False) -> None:
                outputs.clear()

        publisher, shell.display_pub = shell.display_pub, _Publisher(shell=shell)
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Stream(outputs, "stdout"), _Stream(outputs, "stderr")
    try:
        yield outputs
    finally:
        sys.stdout, sys.stderr = streams
        if publisher is not None:
            shell.display_pub = publisher


def _shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def explorer(fn: Callable[..., Any], /, **controls: Any) -> Any:
    """Controls and the output of ``fn(**values)``, redrawn when a control changes (a drop-in for ``interactive``).

    Parameters
    ----------
    fn : callable
        Called with one keyword argument per control; what it prints and
        displays is the view's output (:func:`recorded_outputs`).
    **controls : ipywidgets.ValueWidget
        The controls by ``fn``'s parameter names (``Dropdown``, ``IntSlider``, ...).

    Returns
    -------
    ipywidgets.VBox
        The controls above an ``Output`` widget whose ``outputs`` are set in
        the kernel (never captured, so a headless run cannot stall on it).
        The book stores it with the widget state, as ``interactive`` would be.

    Notes
    -----
    Each change of a control runs ``fn`` once.
    """
    import ipywidgets as widgets

    for name, control in controls.items():
        if not isinstance(control, widgets.ValueWidget):
            raise ValueError(f"control {name!r} must be an ipywidgets value widget (Dropdown, IntSlider, ...), "
                             f"got {type(control).__name__}")
    out = widgets.Output()

    def redraw(_change: Any = None) -> None:
        with recorded_outputs() as outputs:
            fn(**{name: control.value for name, control in controls.items()})
        out.outputs = tuple(outputs)

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    return widgets.VBox([*controls.values(), out])
