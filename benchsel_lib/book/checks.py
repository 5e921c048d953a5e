"""Checks of an executed notebook: what its reader sees, in JupyterLab and on the site.

A page is re-run by readers with parameters of their own (one matrix,
another seed, fewer folds) and opened in JupyterLab as well as on the site.
:func:`check_notebook` reads an executed copy (papermill's output) and
reports, as :class:`Problem` records:

``error``
    a cell raised (an ``error`` output, or papermill marked the run as failed);
``stderr``
    a cell wrote to standard error (a warning, a traceback printed by a
    library) -- output a reader should not see on a finished page;
``placeholder``
    a Markdown cell holds a MyST role or directive (``{glue}`key```,
    ```` ```{note} ````, ``{numref}`fig```), which JupyterLab shows raw;
``claims``
    a chapter reproducing the paper (numbers 01-10) shows no claims table
    (an output carrying :data:`~benchsel_lib.book.claims.METADATA_KEY`)
    before its first figure;
``hidden``
    a cell tagged ``remove-input`` or ``remove-cell`` (hidden on the site)
    is not marked ``jupyter.source_hidden`` (hidden in JupyterLab); the cell
    papermill injects (``injected-parameters``), which tells a reader of the
    executed notebook the parameters of its run, is left alone;
``nan``
    a Markdown output (computed text, the note of a check) or a row of a
    claims table reads ``nan`` or ``None``.

:func:`check_notebooks` applies it to several executed notebooks and
:func:`format_problems` writes the report a test or a build prints.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .claims import METADATA_KEY
from .prose import without_code

__all__ = ["PAPER_CHAPTERS", "RULES", "Problem", "check_notebook", "check_notebooks", "format_problems",
           "placeholders"]

RULES = ("error", "stderr", "placeholder", "claims", "hidden", "nan")
#: Number prefixes of the chapters that reproduce the paper (each shows a claims table before its figures).
PAPER_CHAPTERS = tuple(f"{i:02d}" for i in range(1, 11))
#: Tags that hide a cell's source on the site; JupyterLab needs ``jupyter.source_hidden`` too.
HIDING_TAGS = ("remove-input", "remove-cell")

_NAN = re.compile(r"(?<![\w.])(?:nan|NaN|NAN)(?!\w)|\bNone\b(?!\s+of\b)")
_FENCE_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,}|:{3,})[ \t]*(\{[A-Za-z][\w:+-]*\})?")
_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", flags=re.S)
_ROLE_NAME = re.compile(r"\{[A-Za-z][\w:+-]*\}$")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an executed notebook.

    Attributes
    ----------
    rule : str
        One of :data:`RULES`.
    cell : int or None
        Index of the cell (None: the notebook as a whole).
    message : str
        What is wrong, quoting the offending text.
    notebook : str
        The notebook's file name ("" when checked from memory).
    """

    rule: str
    cell: int | None
    message: str
    notebook: str = ""

    def __str__(self) -> str:
        where = f"cell {self.cell}" if self.cell is not None else "notebook"
        name = f"{self.notebook} " if self.notebook else ""
        return f"{name}{where} [{self.rule}]: {self.message}"


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _quote(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _load(nb: Path | str | Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    if isinstance(nb, Mapping):
        return dict(nb), ""
    path = Path(nb)
    return json.loads(path.read_text(encoding="utf-8")), path.name


def placeholders(markdown: str) -> list[str]:
    """The MyST roles and directives of a Markdown cell, which JupyterLab shows as raw text.

    Parameters
    ----------
    markdown : str
        A Markdown cell's source.

    Returns
    -------
    list of str
        Each directive opening (```` ```{note} ````, ``:::{admonition}``) and
        each role (``{glue:md}`key```) as written, directives first; those in
        plain code blocks and inline code are not counted.

    Notes
    -----
    Complexity O(len(markdown)).
    """
    found, prose, fence = [], [], ""
    for line in markdown.splitlines():
        m = _FENCE_OPEN.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip(m.group(1) + " \t"):
                fence = ""
        elif m and m.group(2):
            found.append(line.strip())
        elif m and m.group(1)[0] != ":":
            fence = m.group(1)
        else:
            prose.append(line)
    text = "\n".join(prose)
    for span in _SPAN.finditer(text):
        role = _ROLE_NAME.search(text[max(0, span.start() - 60):span.start()])
        if role:
            found.append(role.group(0) + span.group(0))
    return found


def _outputs(cell: Mapping[str, Any]) -> list[dict[str, Any]]:
    return cell.get("outputs", []) if cell.get("cell_type") == "code" else []


def _run_problems(i: int, cell: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    found = []
    for out in _outputs(cell):
        if out.get("output_type") == "error":
            found.append(("error", i, f"{out.get('ename', 'Error')}: {_quote(str(out.get('evalue', '')))}"))
        elif out.get("output_type") == "stream" and out.get("name") == "stderr" and _text(out.get("text", "")).strip():
            found.append(("stderr", i, _quote(_text(out.get("text", "")))))
    return found


def _hidden_problem(i: int, cell: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    meta = cell.get("metadata", {})
    tags = [t for t in meta.get("tags", []) if t in HIDING_TAGS]
    injected = "injected-parameters" in meta.get("tags", [])  # papermill's: it shows a reader the run's parameters
    if tags and not injected and not meta.get("jupyter", {}).get("source_hidden"):
        return [("hidden", i, f"tagged {tags[0]!r} (hidden on the site) but not jupyter.source_hidden "
                              "(shown in JupyterLab)")]
    return []


def _nan_problems(i: int, cell: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    found = []
    for out in _outputs(cell):
        md = out.get("data", {}).get("text/markdown")
        rows = out.get("metadata", {}).get(METADATA_KEY)
        if md is not None and not rows and _NAN.search(without_code(_text(md))):
            found.append(("nan", i, f"the output reads a missing value: {_quote(_text(md))}"))
        for row in rows or []:
            bad = {k: v for k, v in row.items() if isinstance(v, str) and _NAN.search(v)}
            if bad:
                found.append(("nan", i, f"a claims row reads a missing value: {bad}"))
    return found


def _claims_problem(cells: list[dict[str, Any]]) -> list[tuple[str, int | None, str]]:
    def first(test: Any) -> int | None:
        return next((i for i, c in enumerate(cells) if any(test(o) for o in _outputs(c))), None)

    table = first(lambda o: METADATA_KEY in o.get("metadata", {}))
    figure = first(lambda o: any(mime.startswith("image/") for mime in o.get("data", {})))
    if table is None:
        return [("claims", None, f"no claims table (an output with {METADATA_KEY!r} in its metadata)")]
    if figure is not None and figure < table:
        return [("claims", figure, f"the first figure comes before the claims table (cell {table})")]
    return []


def check_notebook(nb: Path | str | Mapping[str, Any], *, paper_chapter: bool | None = None) -> list[Problem]:
    """Every problem of an executed notebook (path or parsed JSON); empty when it is clean.

    Parameters
    ----------
    nb : path or dict
        The executed notebook.
    paper_chapter : bool, optional
        Whether it reproduces the paper and so needs a claims table; by
        default, whether its file name begins with a number of
        :data:`PAPER_CHAPTERS` (False for a notebook checked from memory).

    Returns
    -------
    list of Problem
        In the order of the rules, then of the cells; see the module docstring.

    Notes
    -----
    Complexity O(size of the notebook).
    """
    data, name = _load(nb)
    cells = data.get("cells", [])
    found: list[tuple[str, int | None, str]] = []
    if data.get("metadata", {}).get("papermill", {}).get("exception") and \
            not any(o.get("output_type") == "error" for c in cells for o in _outputs(c)):
        found.append(("error", None, "papermill marked the run as failed"))
    for i, cell in enumerate(cells):
        found += _run_problems(i, cell)
        if cell.get("cell_type") == "markdown":
            found += [("placeholder", i, f"JupyterLab shows {p!r} raw")
                      for p in placeholders(_text(cell.get("source", "")))]
        found += _hidden_problem(i, cell) + _nan_problems(i, cell)
    if paper_chapter is None:
        paper_chapter = name[:2] in PAPER_CHAPTERS
    if paper_chapter:
        found += _claims_problem(cells)
    found.sort(key=lambda p: RULES.index(p[0]))
    return [Problem(rule, cell, message, name) for rule, cell, message in found]


def check_notebooks(paths: Iterable[Path | str]) -> dict[str, list[Problem]]:
    """:func:`check_notebook` of each executed notebook; only those with problems are returned."""
    out: dict[str, list[Problem]] = {}
    for path in paths:
        found = check_notebook(path)
        if found:
            out[Path(path).name] = found
    return out


def format_problems(problems: Mapping[str, list[Problem]] | list[Problem], *, context: str = "") -> str:
    """A readable report (one line per problem, grouped by notebook); empty when there are none."""
    groups = problems if isinstance(problems, Mapping) else {"": list(problems)}
    lines = []
    for name, found in groups.items():
        if not found:
            continue
        if name:
            lines.append(f"{name}{' ' + context if context else ''}:")
        lines.extend(f"  {p.cell if p.cell is not None else '-':>3} [{p.rule}] {p.message}" for p in found)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchsel_lib.book.checks EXECUTED.ipynb ...``: print the problems; exit 1 when there are any."""
    import argparse

    parser = argparse.ArgumentParser(description="Check executed notebooks (papermill outputs) of the book.")
    parser.add_argument("notebooks", nargs="+", type=Path, help="executed notebooks")
    args = parser.parse_args(argv)
    found = check_notebooks(args.notebooks)
    if found:
        print(format_problems(found))
        return 1
    print(f"{len(args.notebooks)} notebook(s): no problems")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
