"""Checks of an executed notebook: is what its reader sees true for the parameters it ran with?

A page is re-run by readers with parameters of their own (one matrix,
another seed, fewer folds). :func:`check_notebook` reads an executed copy
(papermill's output) and reports, as :class:`Problem` records:

``error``
    a cell raised (an ``error`` output, or papermill marked the run as failed);
``stderr``
    a cell wrote to standard error (a warning, a traceback printed by a
    library) -- output a reader should not see on a finished page;
``missing-glue``
    the text reads a glue key the run did not produce;
``nan``
    a value pasted into the text reads ``nan``/``NaN``/``None`` (a number
    of something the run did not compute);
``tex``
    a value pasted into the text holds ``$`` outside code: TeX is not
    rendered in glued text, so the reader would see ``$R^2$``;
``run-record``
    the page does not record which matrices it ran (glue key
    :data:`benchsel_lib.book.prose.RUN_KEY`), so the next rule cannot be
    applied;
``unrun-matrix``
    a sentence of the findings -- the "This book" and "Where they differ"
    paragraphs of the *At a glance* box and the "What we found" section --
    names a matrix the run did not include, other than to say it was not run.

:func:`check_notebooks` applies it to several executed notebooks and
:func:`format_problems` writes the report a test or a build prints.
"""
from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .notebook import LABELS
from .prose import RUN_KEY, without_code

__all__ = [
    "MATRIX_PATTERNS",
    "RULES",
    "Problem",
    "check_notebook",
    "check_notebooks",
    "findings_sentences",
    "format_problems",
    "glue_references",
    "glued_values",
    "render_markdown",
]

RULES = ("error", "stderr", "missing-glue", "nan", "tex", "run-record", "unrun-matrix")

#: How a sentence names each matrix (names of methods such as the "BenchPress-style blend" do not count).
MATRIX_PATTERNS: dict[str, re.Pattern[str]] = {
    "mmlu": re.compile(r"\bMMLU\b(?!-Pro|/)"),
    "mteb": re.compile(r"\bMTEB\b"),
    "merged": re.compile(r"\bMerged\b"),
    "benchpress": re.compile(r"\bBenchPress\b(?!-style|-like| blend| recipe)"),
}
_NOT_RUN = re.compile(r"\bnot run\b|\bwas not part of this run\b|\bwere not part of this run\b")
_NAN = re.compile(r"(?<![\w.])(?:nan|NaN|NAN)(?![\w])|\bNone\b(?!\s+of\b)")
_ROLE = re.compile(r"\{glue(?::(\w*))?\}`([^`]+)`")
_DIRECTIVE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{glue(?::(?P<kind>\w*))?\}[ \t]+(?P<key>\S+)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
    flags=re.M | re.S)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$", flags=re.M)


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


def _source(cell: Mapping[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _load(nb: Path | str | Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    if isinstance(nb, Mapping):
        return dict(nb), ""
    path = Path(nb)
    return json.loads(path.read_text(encoding="utf-8")), path.name


def glued_values(nb: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Every glued key of an executed notebook -> its data by MIME type (``text/plain``, ``text/markdown``, ...)."""
    values: dict[str, dict[str, str]] = {}
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {}).get("scrapbook", {})
            name = meta.get("name")
            if not name:
                continue
            prefix = meta.get("mime_prefix", "")
            values[name] = {mime[len(prefix):] if mime.startswith(prefix) else mime: _text(data)
                            for mime, data in out.get("data", {}).items()}
    return values


def glue_references(nb: Mapping[str, Any]) -> set[str]:
    """Keys that the markdown cells of a notebook read with ``{glue}`` roles or directives.

    Formats (``{glue:text}`key:.3f```) are stripped; references into other
    notebooks (``other.ipynb::key``) are not included.
    """
    return {key for cell in nb.get("cells", []) if cell.get("cell_type") == "markdown"
            for key in render_markdown(_source(cell), {})[2]}


def _format_plain(text: str, spec: str) -> str:
    """``text/plain`` as ``{glue:text}`key:spec``` shows it (mirrors myst-nb: quotes removed, then formatted)."""
    try:
        value: Any = ast.literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if not spec:
        return str(value)
    kind = spec[-1]
    try:
        if kind in "bcdoxX":
            value = int(value)
        elif kind in "eEfFgGn%":
            value = float(value)
        else:
            value = str(value)
        return format(value, spec)
    except (TypeError, ValueError):
        return str(value)


@dataclass(frozen=True)
class _Paste:
    key: str
    text: str  # what the reader sees in place of the reference
    checked: bool  # text pasted into prose (not a table or a figure)


def _key_of(kind: str, ref: str) -> tuple[str, str]:
    """(key, format) of a glue reference: ``key:.2f`` for text, ``key:myst`` for Markdown."""
    key, _, spec = ref.rpartition(":") if ":" in ref else (ref, "", "")
    return key.strip(), spec.strip()


def _paste(kind: str, ref: str, values: Mapping[str, Mapping[str, str]]) -> _Paste | None:
    """The text a glue reference shows, or None when the key was not glued."""
    key, spec = _key_of(kind, ref)
    data = values.get(key)
    if data is None:
        return None
    if kind == "md":
        return _Paste(key, data.get("text/markdown", ""), True)
    if kind == "figure" or any(m.startswith("image/") for m in data) or "text/html" in data:
        return _Paste(key, f"[{key}]", False)
    return _Paste(key, _format_plain(data.get("text/plain", ""), spec), True)


def render_markdown(source: str, values: Mapping[str, Mapping[str, str]]) -> tuple[str, list[_Paste], list[str]]:
    """A markdown cell's text with every glue reference replaced by what the page shows there.

    Returns the text, the pasted pieces, and the keys the text reads that were
    not glued (references into other notebooks, ``doc.ipynb::key``, are left as they are).
    """
    pasted: list[_Paste] = []
    missing: list[str] = []

    def sub(kind: str, ref: str, original: str) -> str:
        if "::" in ref:
            return original
        p = _paste(kind, ref, values)
        if p is None:
            missing.append(_key_of(kind, ref)[0])
            return original
        pasted.append(p)
        return p.text

    text = _DIRECTIVE.sub(lambda m: sub(m.group("kind") or "", m.group("key"), m.group(0)) + "\n", source)
    text = _ROLE.sub(lambda m: sub(m.group(1) or "", m.group(2), m.group(0)), text)
    return text, pasted, missing


def _findings_parts(cells: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The findings text of each rendered markdown cell: "This book" onwards in the At a glance box, "What we found"."""
    parts: list[tuple[int, str]] = []
    inside, level = False, 0
    for i, text in cells:
        if "At a glance" in text and "**This book**" in text:
            start = text.index("**This book**")
            end = text.rfind(":::")
            parts.append((i, text[start:end if end > start else None]))
        chunks: list[str] = []
        pos = 0
        for m in _HEADING.finditer(text):
            depth, title = len(m.group(1)), m.group(2)
            if inside and depth <= level:
                chunks.append(text[pos:m.start()])
                inside = False
            if not inside and title.lower().startswith("what we found"):
                inside, level, pos = True, depth, m.end()
        if inside:
            chunks.append(text[pos:])
        parts.extend((i, c) for c in chunks if c.strip())
    return parts


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    for block in re.split(r"\n\s*\n|\n\s*[-*+]\s+|^\s*[-*+]\s+", text, flags=re.M):
        block = " ".join(block.split())
        out.extend(s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z*`(\[_])", block) if s.strip())
    return out


def findings_sentences(nb: Mapping[str, Any]) -> list[tuple[int, str]]:
    """The sentences of a notebook's findings (rendered with its glued values), with their cell index."""
    values = glued_values(nb)
    rendered = [(i, render_markdown(_source(c), values)[0]) for i, c in enumerate(nb.get("cells", []))
                if c.get("cell_type") == "markdown"]
    return [(i, s) for i, part in _findings_parts(rendered) for s in _sentences(part)]


def _run_matrices(values: Mapping[str, Mapping[str, str]]) -> list[str] | None:
    data = values.get(RUN_KEY)
    if data is None:
        return None
    try:
        ran = ast.literal_eval(data.get("text/plain", ""))
    except (SyntaxError, ValueError):
        return None
    return [str(x) for x in ran] if isinstance(ran, (list, tuple)) else None


def _quote(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def check_notebook(nb: Path | str | Mapping[str, Any]) -> list[Problem]:
    """Every problem of an executed notebook (path or parsed JSON), in cell order; empty when it is clean.

    See the module docstring for the rules. O(size of the notebook).
    """
    data, name = _load(nb)
    cells = data.get("cells", [])
    problems: list[Problem] = []

    def add(rule: str, cell: int | None, message: str) -> None:
        problems.append(Problem(rule, cell, message, name))

    if data.get("metadata", {}).get("papermill", {}).get("exception"):
        failed = [i for i, c in enumerate(cells)
                  if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
        if not failed:
            add("error", None, "papermill marked the run as failed")
    for i, cell in enumerate(cells):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            if out.get("output_type") == "error":
                add("error", i, f"{out.get('ename', 'Error')}: {_quote(str(out.get('evalue', '')))}")
            elif out.get("output_type") == "stream" and out.get("name") == "stderr" and _text(out.get("text", "")).strip():
                add("stderr", i, _quote(_text(out.get("text", ""))))

    values = glued_values(data)
    rendered: list[tuple[int, str]] = []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "markdown":
            continue
        text, pasted, missing = render_markdown(_source(cell), values)
        rendered.append((i, text))
        for key in dict.fromkeys(missing):
            add("missing-glue", i, f"the text reads {key!r}, which the run did not glue")
        for p in pasted:
            if not p.checked:
                continue
            shown = without_code(p.text)
            if _NAN.search(shown):
                add("nan", i, f"{p.key!r} shows {_quote(p.text)}")
            if "$" in shown:
                add("tex", i, f"{p.key!r} holds TeX, shown raw in glued text: {_quote(p.text)}")

    ran = _run_matrices(values)
    if ran is None:
        add("run-record", None, f"the run did not record its matrices (glue key {RUN_KEY!r})")
        return problems
    for i, part in _findings_parts(rendered):
        for sentence in _sentences(part):
            plain = without_code(sentence)
            if _NOT_RUN.search(plain):
                continue
            named = [k for k, pat in MATRIX_PATTERNS.items() if k not in ran and pat.search(plain)]
            if named:
                add("unrun-matrix", i, f"names {', '.join(LABELS[k] for k in named)} (not run: the run has "
                                       f"{ran}): {_quote(sentence)}")
    return problems


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
