"""Explorers: controls over a chapter's main result, live in Jupyter and on the static site alike.

:func:`explorer` calls a function once for every combination of its
controls' values, keeps each result as a panel (a figure as an image, a table
or Markdown as HTML), and shows the controls above the panels, linked in
the browser with ``ipywidgets.jslink``: moving a control shows another
panel without asking the kernel. In JupyterLab this is a live ipywidgets
view; on the rendered site the same widgets come back from the widget state
that the papermill run stored in the notebook, and the vendored widget
manager switches the panels offline.

Nothing is captured from the kernel's output (no ``Output`` widget, no
``interactive``), so a headless run (papermill, nbclient) cannot stall on
an explorer: all its work is done while its cell runs.
"""
from __future__ import annotations

import base64
import io
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["MAX_STATES", "explorer", "panel_html"]

#: The most combinations of control values one explorer precomputes (each is a panel of the page).
MAX_STATES = 60
_DPI = 72


def _figure_html(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    # a figure with a layout engine (the book's are constrained) already fills its canvas: a "tight" bounding
    # box would only lay it out and draw it a second time
    tight = None if fig.get_layout_engine() is not None else "tight"
    fig.savefig(buf, format="png", dpi=_DPI, bbox_inches=tight)
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" style="max-width:100%" alt="figure"/>'


def _markdown_html(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(text)


def panel_html(content: Any) -> str:
    """One panel's HTML: a matplotlib figure as an image, a table or Markdown as HTML.

    Parameters
    ----------
    content : object
        A matplotlib ``Figure`` (closed after it is drawn), an object with
        ``_repr_html_`` (a DataFrame, a Styler), an object with
        ``_repr_markdown_`` or a ``str`` (Markdown), or a list or tuple of
        these (stacked).

    Returns
    -------
    str
        The HTML of the panel.

    Notes
    -----
    Complexity: one PNG encoding per figure, O(size of the tables) otherwise.
    """
    if isinstance(content, (list, tuple)):
        return "\n".join(panel_html(c) for c in content)
    if hasattr(content, "savefig"):
        return _figure_html(content)
    if hasattr(content, "_repr_html_"):
        return content._repr_html_()
    if hasattr(content, "_repr_markdown_"):
        return _markdown_html(content._repr_markdown_())
    if isinstance(content, str):
        return _markdown_html(content)
    raise TypeError(f"an explorer panel shows figures, tables or Markdown, got {type(content).__name__}")


def _options(name: str, values: Sequence[Any] | Mapping[str, Any]) -> list[tuple[str, Any]]:
    if isinstance(values, Mapping):
        pairs = [(str(k), v) for k, v in values.items()]
    elif isinstance(values, Sequence) and not isinstance(values, str):
        pairs = [(str(v), v) for v in values]
    else:
        raise TypeError(f"control {name!r} takes a list of values or a mapping of labels to values, "
                        f"got {type(values).__name__}")
    if not pairs:
        raise ValueError(f"control {name!r} has no values")
    if len({label for label, _ in pairs}) < len(pairs):
        raise ValueError(f"control {name!r} has two values with the same label")
    return pairs


def _control(name: str, pairs: list[tuple[str, Any]]) -> Any:
    import ipywidgets as widgets

    labels = [label for label, _ in pairs]
    numeric = all(isinstance(v, numbers.Real) and not isinstance(v, bool) for _, v in pairs)
    shown = {"description": name, "style": {"description_width": "initial"}}
    if len(pairs) == 1:  # nothing to choose: kept for the link, not shown
        shown["layout"] = widgets.Layout(display="none")
    if numeric and len(pairs) > 3:
        return widgets.SelectionSlider(options=labels, continuous_update=True, **shown)
    if sum(len(label) for label in labels) <= 40:
        return widgets.ToggleButtons(options=labels, **shown)
    return widgets.Dropdown(options=labels, **shown)


def _panel(widgets: Any, html: str) -> Any:
    """One panel: an ``HTML`` widget styled in JupyterLab like an HTML output of a cell.

    JupyterLab styles the tables (header rule, striped rows, padding, numbers
    to the right), images and text of an output through the class
    ``jp-RenderedHTMLCommon`` of the output's box; the box of an ``HTML``
    widget lacks it, so a table in a panel showed unstyled. The class is a
    DOM class of the widget, kept in the saved widget state. On the site,
    whose stylesheets give the class only a margin (pydata-sphinx-theme:
    ``.jp-RenderedHTMLCommon {margin: .1875rem}``), the layout's margin keeps
    the widget's own (``--jp-widgets-margin``), so the page looks as before.
    """
    box = widgets.HTML(html, layout=widgets.Layout(margin="var(--jp-widgets-margin)"))
    return box.add_class("jp-RenderedHTMLCommon")


def explorer(render: Callable[..., Any], /, **controls: Sequence[Any] | Mapping[str, Any]) -> Any:
    """Controls over precomputed panels: ``render(**values)`` for every combination of the controls' values.

    Parameters
    ----------
    render : callable
        Called once per combination, with one keyword argument per control;
        returns what the panel shows (see :func:`panel_html`).
    **controls : list or dict
        Each control's values, by ``render``'s parameter name: a list
        (labelled by ``str``) or a mapping of labels to values. A numeric
        control of more than three values is a slider, a short list toggle
        buttons, anything else a drop-down; the first value is shown first.
        A control with one value (a parameter set that runs one matrix) is
        kept but not shown.

    Returns
    -------
    ipywidgets.VBox
        The controls above a ``Stack`` of panels (nested, one level per
        control), each control's ``index`` linked to its stacks with
        ``jslink``, so the view works without a kernel.

    Raises
    ------
    ValueError
        No control, a control without values, or more than :data:`MAX_STATES`
        combinations.

    Notes
    -----
    ``render`` runs prod(len(values)) times, all while the cell runs.
    """
    import ipywidgets as widgets

    if not controls:
        raise ValueError("an explorer needs at least one control")
    options = {name: _options(name, values) for name, values in controls.items()}
    states = 1
    for pairs in options.values():
        states *= len(pairs)
    if states > MAX_STATES:
        raise ValueError(f"an explorer precomputes every combination of its controls: {states} is more than "
                         f"{MAX_STATES}; offer fewer values")
    names = list(options)
    shown = {name: _control(name, pairs) for name, pairs in options.items()}

    def stack(level: int, fixed: dict[str, Any]) -> Any:
        name = names[level]
        children = []
        for _, value in options[name]:
            values = {**fixed, name: value}
            if level == len(names) - 1:
                children.append(_panel(widgets, panel_html(render(**values))))
            else:
                children.append(stack(level + 1, values))
        box = widgets.Stack(children, selected_index=0)
        widgets.jslink((shown[name], "index"), (box, "selected_index"))
        return box

    panels = stack(0, {})
    bar = widgets.HBox(list(shown.values()), layout=widgets.Layout(flex_flow="row wrap", gap="0.5em 2em"))
    return widgets.VBox([bar, panels])

