"""The claims table that opens each chapter reproducing the paper, and the book's one verdict rule.

Every chapter of the book's first part checks statements of the paper. It
opens with a table, computed by the run, that lists each statement (with
its section, table or figure), the paper's number, this run's number, a
verdict and the reason in a few words, with a link to the section of the
page that shows it. :func:`verdict` turns a comparison into one of the four
verdicts of :data:`VERDICTS` under the tolerances of :data:`TOLERANCES`,
declared once for the whole book; :func:`claims_table` returns the table as
an object that Jupyter and the rendered site both show as Markdown, and that
carries its rows as output metadata, so that the build can check that a
quantity stated on two pages (the same :attr:`Claim.key`) reads the same
there.

A row whose number the run did not compute (a matrix left out by the
parameters, a study that needs a package that is not installed) is
``"not run"``, with the reason; it never shows a missing value.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["METADATA_KEY", "TOLERANCES", "VERDICTS", "Claim", "ClaimsTable", "Tolerance", "claims_table", "not_run", "quantity",
           "verdict"]

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
    key : str, optional
        A name of the quantity that is the same on every page that states it
        (``"mmlu-entropy-r2-k5"``): the build checks that rows with one key
        agree in ``paper``, ``run`` and ``verdict`` across the book.
    """

    claim: str
    where: str
    paper: str
    run: str
    verdict: str
    why: str
    section: str | None = None
    key: str | None = None

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
                raise ValueError(f"the claim's {name} holds TeX ('$'); write R² and k as plain text: {text!r}")
            if re.search(r"(?<![\w.])(?:nan|NaN|None)(?!\w)", text):
                raise ValueError(f"the claim's {name} shows a missing value: {text!r}")


def not_run(claim: str, where: str, paper: str, why: str, *, section: str | None = None,
            key: str | None = None) -> Claim:
    """A row the run did not compute: ``run`` is a dash and the verdict ``"not run"``.

    Parameters
    ----------
    claim, where, paper : str
        As in :class:`Claim`.
    why : str
        What kept the run from computing it ("Merged was not in this run").
    section, key : str, optional
        As in :class:`Claim`.

    Returns
    -------
    Claim

    Notes
    -----
    Complexity O(1).
    """
    return Claim(claim, where, paper, "—", "not run", why, section, key)


@dataclass(frozen=True)
class Tolerance:
    """How far this run's number may be from the paper's and still count as reproduced, or as partly.

    A gap counts as reproduced when it is at most ``max(reproduced, rel_reproduced * |paper|)``
    and as partly when it is at most ``max(partly, rel_partly * |paper|)``.
    """

    reproduced: float
    partly: float
    rel_reproduced: float = 0.0
    rel_partly: float = 0.0
    meaning: str = ""

    def limits(self, paper: float) -> tuple[float, float]:
        """The largest gap for ``"reproduced"`` and for ``"partly"`` around ``paper``."""
        return (max(self.reproduced, self.rel_reproduced * abs(paper)),
                max(self.partly, self.rel_partly * abs(paper)))


#: The book's one verdict rule: the tolerance of each kind of quantity, declared here and nowhere else.
#: Every chapter grades its claims with :func:`verdict` and one of these kinds, so that the same
#: quantity gets the same verdict on every page.
TOLERANCES: dict[str, Tolerance] = {
    "r2": Tolerance(0.03, 0.08, meaning="an R² or a difference of two R² (standardized space)"),
    "share": Tolerance(0.10, 0.30, meaning="a share: of folds, of sizes, of comparisons"),
    "count": Tolerance(0.0, 1.0, rel_partly=0.10, meaning="a count: components, rows, rejections, picks"),
    "statistic": Tolerance(0.02, 0.05, meaning="a test statistic on a 0-1 scale (Shapiro-Wilk W)"),
    "relative": Tolerance(0.0, 0.0, rel_reproduced=0.05, rel_partly=0.20,
                          meaning="a positive number compared by its ratio (kurtosis, iterations, seconds)"),
    "position": Tolerance(0.5, 1.5, meaning="a mean position in a selection order"),
    "percent": Tolerance(0.1, 1.0, meaning="a percentage, in percentage points"),
}


def verdict(value: float, paper: float, *, kind: str, direction: str = "both") -> str:
    """Compare this run's number with the paper's under the book's one rule (:data:`TOLERANCES`).

    Parameters
    ----------
    value, paper : float
        This run's number and the paper's.
    kind : str
        A key of :data:`TOLERANCES` (``"r2"``, ``"share"``, ``"count"``, ...).
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
    if kind not in TOLERANCES:
        raise ValueError(f"unknown kind of quantity {kind!r}; expected one of {', '.join(TOLERANCES)}")
    if direction not in ("both", "at least", "at most"):
        raise ValueError(f"direction must be 'both', 'at least' or 'at most', got {direction!r}")
    gap = float(value) - float(paper)
    if direction == "at least":
        gap = min(gap, 0.0)
    elif direction == "at most":
        gap = max(gap, 0.0)
    tol, partly = TOLERANCES[kind].limits(float(paper))
    if abs(gap) <= tol + 1e-12:
        return "reproduced"
    return "partly" if abs(gap) <= partly + 1e-12 else "not reproduced"


def _where(c: Claim) -> str:
    return f"[{c.where}](#{c.section})" if c.section else c.where


def quantity(name: str, **settings: object) -> str:
    """The key of a quantity that several pages may state: its name and every setting it depends on.

    ``quantity("mmlu-entropy-r2", k=5, holdout=0.1, folds=10, seed=42, scheme="paper")`` is
    ``"mmlu-entropy-r2[folds=10, holdout=0.1, k=5, scheme=paper, seed=42]"``: two pages whose rows
    share this key state one number, and the build checks that they agree. Complexity O(settings).
    """
    if not name or not isinstance(name, str):
        raise ValueError("a quantity needs a name")
    inner = ", ".join(f"{k}={v}" for k, v in sorted(settings.items()))
    return f"{name}[{inner}]" if inner else name


#: The output metadata under which a claims table carries its rows (read by the build's checks).
METADATA_KEY = "benchsel_claims"


class ClaimsTable:
    """A chapter's claims, shown as a Markdown table in Jupyter and on the site.

    Displayed (the last expression of a cell, or ``display``), it gives a
    ``text/markdown`` output (a pipe table, the verdict in bold) and a
    ``text/plain`` one, with the rows under :data:`METADATA_KEY` in the
    output's metadata.

    Attributes
    ----------
    claims : tuple of Claim
        The rows, in the order given.
    """

    def __init__(self, claims: Sequence[Claim]) -> None:
        if not claims:
            raise ValueError("a claims table needs at least one claim")
        bad = [type(c).__name__ for c in claims if not isinstance(c, Claim)]
        if bad:
            raise TypeError(f"a claims table takes Claim rows, got {bad[0]}")
        self.claims = tuple(claims)

    def markdown(self) -> str:
        """The table as Markdown: a pipe table with the columns of :data:`HEADERS`."""
        lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
        for c in self.claims:
            lines.append(f"| {c.claim} | {_where(c)} | {c.paper} | {c.run} | **{c.verdict}** | {c.why} |")
        return "\n".join(lines)

    def records(self) -> list[dict[str, Any]]:
        """The rows as dictionaries (the fields of :class:`Claim`)."""
        return [asdict(c) for c in self.claims]

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, str], dict[str, Any]]:
        md = self.markdown()
        return {"text/markdown": md, "text/plain": md}, {METADATA_KEY: self.records()}

    def __repr__(self) -> str:
        return f"ClaimsTable({len(self.claims)} claims)"


def claims_table(claims: Sequence[Claim]) -> ClaimsTable:
    """The claims of a chapter as a table that Jupyter and the site show in place.

    Parameters
    ----------
    claims : sequence of Claim
        At least one row.

    Returns
    -------
    ClaimsTable
        Displayed as a Markdown pipe table with the columns of :data:`HEADERS`
        (the verdict in bold); ``.markdown()`` gives the text.

    Notes
    -----
    Complexity O(number of claims).
    """
    return ClaimsTable(claims)
