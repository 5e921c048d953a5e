"""What the build adds to the book from the run as a whole: claims that agree, the differences page, stale figures.

Three steps of ``scripts/build_book.py`` that read more than one page:

* :func:`claims_disagreements` gathers the claims rows of every executed
  notebook (the output metadata :data:`benchsel_lib.book.claims.METADATA_KEY`)
  and reports two rows with the same ``key`` that differ in ``paper``,
  ``run`` or ``verdict``: one quantity must read the same on every page.
* :func:`this_run_section` writes the generated part of the appendix page
  "Where this differs from the paper": the book's verdict rule (the table of
  :data:`benchsel_lib.book.claims.TOLERANCES`) and every claim of this run
  that is not reproduced, with a link to its chapter. The page marks the
  place with the line :data:`GENERATED_MARK`.
* :func:`stale_results` finds the result files of ``benchmarks/results/``
  that no longer describe the checkout's code
  (:func:`result_file.staleness`), and :func:`mark_stale_pages` puts a note
  naming each of them, the commit it was measured at and the command that
  re-measures it at the top of every page that quotes it.
"""
from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import result_file  # noqa: E402

#: The line of ``docs/differences.md`` that the build replaces with :func:`this_run_section`.
GENERATED_MARK = "% generated: the verdict rule and this run's claims that are not reproduced"
#: The fields in which two rows of one quantity must agree.
AGREEING_FIELDS = ("paper", "run", "verdict")
_LOCAL_LINK = re.compile(r"\[([^\]]+)\]\(#[^)\s]*\)")


@dataclass(frozen=True)
class ClaimRow:
    """One row of a chapter's claims table, with the page it stands on.

    Attributes
    ----------
    page : str
        The notebook's stem (``"04_greedy_cv"``).
    row : dict
        The fields of :class:`benchsel_lib.book.claims.Claim`.
    """

    page: str
    row: dict[str, Any]


def _cells(path: Path) -> list[dict[str, Any]]:
    return json.loads(Path(path).read_text(encoding="utf-8")).get("cells", [])


def claim_rows(path: Path) -> list[ClaimRow]:
    """The claims rows of an executed notebook, in page order, from its outputs' metadata.

    Parameters
    ----------
    path : Path
        An executed notebook.

    Returns
    -------
    list of ClaimRow

    Notes
    -----
    Complexity O(size of the notebook).
    """
    from benchsel_lib.book.claims import METADATA_KEY

    rows = []
    for cell in _cells(path):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            for row in (out.get("metadata") or {}).get(METADATA_KEY) or []:
                rows.append(ClaimRow(Path(path).stem, dict(row)))
    return rows


def _describe(r: ClaimRow) -> str:
    return f"notebooks/{r.page} (" + ", ".join(f"{f} {r.row.get(f)!r}" for f in AGREEING_FIELDS) + ")"


def claims_disagreements(executed: Iterable[Path]) -> list[str]:
    """Rows of the same quantity (``key``) that read differently on two pages, or twice on one.

    Parameters
    ----------
    executed : iterable of Path
        The executed notebooks.

    Returns
    -------
    list of str
        One line per disagreement, naming the key and both pages with their
        ``paper``, ``run`` and ``verdict``; empty when every key agrees.

    Notes
    -----
    Complexity O(rows).
    """
    first: dict[str, ClaimRow] = {}
    found = []
    for path in executed:
        for r in claim_rows(path):
            key = r.row.get("key")
            if not key:
                continue
            seen = first.setdefault(key, r)
            if seen is not r and any(seen.row.get(f) != r.row.get(f) for f in AGREEING_FIELDS):
                found.append(f"the quantity {key!r} reads differently on {_describe(seen)} and {_describe(r)}")
    return found


def _amount(absolute: float, relative: float) -> str:
    parts = []
    if absolute or not relative:
        parts.append(f"{absolute:g}")
    if relative:
        parts.append(f"{relative:.0%} of the paper's value")
    return " or ".join(parts)


def verdict_rule_table() -> str:
    """The book's verdict rule as a Markdown table: one row per kind of quantity of ``TOLERANCES``."""
    from benchsel_lib.book.claims import TOLERANCES

    lines = ["| Quantity | Reproduced when the gap is at most | Partly when it is at most |", "|---|---|---|"]
    for tol in TOLERANCES.values():
        lines.append(f"| {tol.meaning} | {_amount(tol.reproduced, tol.rel_reproduced)} "
                     f"| {_amount(tol.partly, tol.rel_partly)} |")
    return "\n".join(lines)


def chapter_title(path: Path) -> str:
    """The first level-one heading of a notebook (``"4. Greedy selection under cross-validation"``), or its stem."""
    for cell in _cells(path):
        if cell.get("cell_type") == "markdown":
            src = cell.get("source", "")
            m = re.search(r"^#\s+(.+?)\s*$", "".join(src) if isinstance(src, list) else src, flags=re.M)
            if m:
                return m.group(1)
    return Path(path).stem


def _cell_text(text: Any) -> str:
    return _LOCAL_LINK.sub(r"\1", str(text)).replace("|", "/").replace("\n", " ").strip() or "—"


def not_reproduced_table(executed: Iterable[Path], base: str = "..") -> tuple[str, int, int]:
    """This run's claims that are not reproduced, as a Markdown table with links to the chapters.

    Parameters
    ----------
    executed : iterable of Path
        The executed notebooks.
    base : str
        The way from the page that shows the table to the book's root.

    Returns
    -------
    tuple of (str, int, int)
        The table (empty text when every claim is reproduced), the number of
        claims checked and the number reproduced.
    """
    lines = ["| Chapter | Claim | Paper | This run | Verdict | Why |", "|---|---|---|---|---|---|"]
    checked = reproduced = 0
    for path in executed:
        rows = claim_rows(path)
        link = f"[{_cell_text(chapter_title(path))}]({base}/notebooks/{Path(path).name})"
        for r in rows:
            checked += 1
            if r.row.get("verdict") == "reproduced":
                reproduced += 1
                continue
            cells = [_cell_text(r.row.get(f)) for f in ("claim", "paper", "run", "verdict", "why")]
            cells[3] = f"**{cells[3]}**"
            lines.append(f"| {link} | " + " | ".join(cells) + " |")
    return ("\n".join(lines) if checked > reproduced else ""), checked, reproduced


def this_run_section(executed: list[Path], base: str = "..") -> str:
    """The generated part of "Where this differs from the paper": the verdict rule and this run's open claims.

    Parameters
    ----------
    executed : list of Path
        The executed notebooks of this build.
    base : str
        The way from the page to the book's root.

    Returns
    -------
    str
        Markdown with two sections, "The verdict rule" and "What this run
        does not reproduce".
    """
    table, checked, reproduced = not_reproduced_table(executed, base)
    rule = ("## The verdict rule\n\nEvery claims table grades a claim by the gap between this run's number and "
            "the paper's, with one tolerance per kind of quantity, the same on every page; a claim the run did "
            "not compute is \"not run\", with the reason.\n\n" + verdict_rule_table())
    head = "## What this run does not reproduce\n\n"
    if not checked:
        return f"{rule}\n\n{head}This build ran no chapter with a claims table.\n"
    summary = (f"Of the {checked} claims that the chapters of this build check, {reproduced} are reproduced "
               "under this rule.")
    if not table:
        return f"{rule}\n\n{head}{summary} Every claim is.\n"
    return f"{rule}\n\n{head}{summary} The others, with the chapter that shows each:\n\n{table}\n"


def fill_generated(text: str, executed: list[Path], base: str = "..") -> str:
    """``text`` with the line :data:`GENERATED_MARK` replaced by :func:`this_run_section` (unchanged without it)."""
    if GENERATED_MARK not in text:
        return text
    return text.replace(GENERATED_MARK, this_run_section(executed, base).rstrip("\n"), 1)


@dataclass(frozen=True)
class StaleResult:
    """A result file that no longer describes the checkout's code.

    Attributes
    ----------
    path : str
        The file, relative to the repository (``benchmarks/results/bench-cv.json``).
    names : frozenset of str
        The MyST substitutions it provides (``bench_cv_command``, ...).
    commit : str
        The commit it was measured at, abbreviated ("44e819a"; "none named" when the file names none).
    reason : str
        Why it is stale, in a few words.
    command : str
        The command that measures it again.
    """

    path: str
    names: frozenset[str]
    commit: str
    reason: str
    command: str


def substitution_names(path: Path, data: Mapping[str, Any]) -> set[str]:
    """The substitutions a result file gives the pages: ``<name>_command``, ``<name>_measured``, ``<name>_<key>``."""
    name = Path(path).stem.replace("-", "_")
    return {f"{name}_command", f"{name}_measured", *(f"{name}_{k}" for k in data.get("values") or {})}


def stale_results(results_dir: Path, root: Path = ROOT) -> list[StaleResult]:
    """The result files of ``results_dir`` measured on code other than the checkout's (:func:`result_file.staleness`).

    Parameters
    ----------
    results_dir : Path
        The folder of result files (``benchmarks/results``).
    root : Path
        The repository.

    Returns
    -------
    list of StaleResult
        In file-name order.

    Notes
    -----
    One ``git diff`` per file.
    """
    out = []
    for path in sorted(Path(results_dir).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        reason = result_file.staleness(data, root)
        if reason is None:
            continue
        at, dirty = result_file.measured_at(data)
        commit = at[:7] if at else "none named"
        try:
            shown = path.resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            shown = path.name
        out.append(StaleResult(shown, frozenset(substitution_names(path, data)), commit, reason,
                               str(data.get("command", ""))))
    return out


def stale_note(stale: Iterable[StaleResult]) -> str:
    """The note at the top of a page that quotes stale result files: one table row per file."""
    rows = [f"| `{s.path}` | {s.commit} | {s.reason} | `{s.command.replace('|', '/')}` |" for s in stale]
    return (":::{warning} Measured on other code\nSome figures on this page come from result files measured on "
            "code that differs from this checkout's; the command beside each measures it again.\n\n"
            "| Result file | Measured at commit | Why it is stale | Re-measure with |\n|---|---|---|---|\n"
            + "\n".join(rows) + "\n:::")


def mark_stale_page(text: str, quoted: set[str], stale: Iterable[StaleResult]) -> tuple[str, list[StaleResult]]:
    """Put :func:`stale_note` under the page's title for the stale files whose substitutions ``quoted`` holds.

    Parameters
    ----------
    text : str
        The page's Markdown.
    quoted : set of str
        The substitution names the page reads.
    stale : iterable of StaleResult

    Returns
    -------
    tuple of (str, list of StaleResult)
        The page (unchanged when it quotes none of them) and the files it quotes.
    """
    hits = [s for s in stale if s.names & quoted]
    if not hits:
        return text, []
    note = stale_note(hits)
    m = re.search(r"^#\s.*$", text, flags=re.M)
    if m is None:
        return f"{note}\n\n{text}", hits
    return f"{text[:m.end()]}\n\n{note}\n{text[m.end():]}", hits
