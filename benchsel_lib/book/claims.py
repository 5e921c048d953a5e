"""The claims table that opens each chapter reproducing the paper.

Every chapter of the book's first part checks statements of the paper. It
opens with a table, computed by the run, that lists each statement (with
its section, table or figure), the paper's number, this run's number, a
verdict and the reason in a few words, with a link to the section of the
page that shows it. :func:`verdict` turns a comparison into one of the four
verdicts of :data:`VERDICTS`; :func:`claims_table` writes the table as
Markdown for a ``{glue:md}`` role, and :func:`failures` writes the sentence
that says plainly what did not reproduce.

A row whose number the run did not compute (a matrix left out by the
parameters, a study that needs a package that is not installed) is
``"not run"``, with the reason; it never shows a missing value.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["VERDICTS", "Claim", "claims_table", "failures", "not_run", "verdict"]

#: The verdicts, from best to worst; ``"not run"`` is a run that did not compute the number.
VERDICTS = ("reproduced", "partly", "not reproduced", "not run")
#: The column headers of the rendered table (the site check looks for ``Verdict``).
HEADERS = ("Claim", "Where", "Paper", "This run", "Verdict", "Why")
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Claim:
    """One statement of the paper and what this run found of it.

    Attributes
    ----------
    claim : str
        The statement, in a few words (Markdown, no TeX).
    where : str
        Where the paper makes it ("Sec. 5.3, Fig. 2", "Table 4").
    paper : str
        The paper's number or statement, as text ("0.89", "10 of 10 folds").
    run : str
        This run's number, as text; ``"—"`` for a row that was not run.
    verdict : str
        One of :data:`VERDICTS`.
    why : str
        The reason for the verdict, in a few words.
    section : str, optional
        The anchor (slug) of the page's section that shows it, e.g.
        ``"figures-2-4"``; the ``Where`` cell links there.
    """

    claim: str
    where: str
    paper: str
    run: str
    verdict: str
    why: str
    section: str | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; expected one of {', '.join(VERDICTS)}")
        if self.section is not None and not _SLUG.match(self.section):
            raise ValueError(f"section {self.section!r} is not a heading anchor (lower-case words joined by '-')")
        for name in ("claim", "where", "paper", "run", "why"):
            text = getattr(self, name)
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"the claim's {name} is empty")
            if "|" in text or "\n" in text:
                raise ValueError(f"the claim's {name} holds '|' or a line break, which break the table: {text!r}")
            if "$" in text:
                raise ValueError(f"the claim's {name} holds TeX ('$'), which glued Markdown shows raw: {text!r}")
            if re.search(r"(?<![\w.])(?:nan|NaN|None)(?!\w)", text):
                raise ValueError(f"the claim's {name} shows a missing value: {text!r}")


def not_run(claim: str, where: str, paper: str, why: str, *, section: str | None = None) -> Claim:
    """A row the run did not compute: ``run`` is a dash and the verdict ``"not run"``.

    Parameters
    ----------
    claim, where, paper : str
        As in :class:`Claim`.
    why : str
        What kept the run from computing it ("Merged was not in this run").
    section : str, optional
        As in :class:`Claim`.

    Returns
    -------
    Claim

    Notes
    -----
    Complexity O(1).
    """
    return Claim(claim, where, paper, "—", "not run", why, section)


def verdict(value: float, paper: float, *, tol: float, partly: float | None = None,
            direction: str = "both") -> str:
    """Compare this run's number with the paper's.

    Parameters
    ----------
    value, paper : float
        This run's number and the paper's.
    tol : float
        The largest difference that counts as reproduced.
    partly : float, optional
        The largest difference that counts as ``"partly"`` (default ``2 * tol``).
    direction : {"both", "at least", "at most"}
        ``"at least"``: a run above the paper by any amount reproduces a claim
        that a number is reached; ``"at most"`` the reverse.

    Returns
    -------
    str
        ``"reproduced"``, ``"partly"`` or ``"not reproduced"``.

    Notes
    -----
    Complexity O(1).
    """
    if direction not in ("both", "at least", "at most"):
        raise ValueError(f"direction must be 'both', 'at least' or 'at most', got {direction!r}")
    if tol < 0 or (partly is not None and partly < tol):
        raise ValueError(f"need 0 <= tol <= partly, got tol={tol!r}, partly={partly!r}")
    gap = value - paper
    if direction == "at least":
        gap = min(gap, 0.0)
    elif direction == "at most":
        gap = max(gap, 0.0)
    limit = 2 * tol if partly is None else partly
    if abs(gap) <= tol + 1e-12:
        return "reproduced"
    return "partly" if abs(gap) <= limit + 1e-12 else "not reproduced"


def _where(c: Claim) -> str:
    return f"[{c.where}](#{c.section})" if c.section else c.where


def claims_table(claims: Sequence[Claim]) -> str:
    """The claims as a Markdown table (for ``{glue:md}``), one row each, in the given order.

    Parameters
    ----------
    claims : sequence of Claim
        At least one row.

    Returns
    -------
    str
        A pipe table with the columns of :data:`HEADERS`; the verdict is in bold.

    Notes
    -----
    Complexity O(number of claims).
    """
    if not claims:
        raise ValueError("a claims table needs at least one claim")
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for c in claims:
        lines.append(f"| {c.claim} | {_where(c)} | {c.paper} | {c.run} | **{c.verdict}** | {c.why} |")
    return "\n".join(lines)


def failures(claims: Sequence[Claim]) -> str:
    """One sentence naming every claim that did not reproduce (or only partly), or ``""`` if none.

    Parameters
    ----------
    claims : sequence of Claim

    Returns
    -------
    str
        E.g. ``"Not reproduced: MI's first pick on MMLU (4 of 10 folds against 10 of 10). Partly: ..."``.

    Notes
    -----
    Complexity O(number of claims).
    """
    parts = []
    for v, head in (("not reproduced", "Not reproduced"), ("partly", "Reproduced only in part")):
        rows = [c for c in claims if c.verdict == v]
        if rows:
            parts.append(f"{head}: " + "; ".join(f"{c.claim} ({c.run} here against {c.paper} in the paper)"
                                                 for c in rows) + ".")
    return " ".join(parts)
