"""Numbers and short phrases in the computed parts of the book's pages.

A chapter's prose is written in its Markdown cells; what follows the run (a
claims row, a number shown with :func:`benchsel_lib.book.show.markdown`, the
note of a broken check) is formatted with the helpers below, so that it
speaks only of what the run computed:

* a matrix the run did not include is named once, as not run
  (:func:`run_line`), and never quoted with a missing value;
* a number is formatted by :func:`num`, which refuses a missing value (NaN,
  None): a sentence that would print "nan" fails where it is written.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .notebook import and_join, dataset_label

__all__ = [
    "K",
    "R2",
    "bullets",
    "cap",
    "code",
    "count",
    "label",
    "labels",
    "num",
    "paragraph",
    "pct",
    "range_text",
    "run_line",
    "signed",
    "was_were",
    "without_code",
]

#: R squared in computed text and claims rows (plain Unicode, no TeX).
R2 = "R²"
#: The subset size in computed text and claims rows.
K = "*k*"


def label(name: str) -> str:
    """Display name of a matrix (``"merged"`` -> ``"Merged"``)."""
    return dataset_label(name)


def labels(names: Iterable[str]) -> str:
    """``["mmlu", "merged"]`` -> ``"MMLU and Merged"``."""
    return and_join(label(n) for n in names)


def _finite(value: Any, what: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} has no numeric value ({value!r})") from None
    if not math.isfinite(v):
        raise ValueError(f"{what} has no value in this run ({value!r}); the sentence quoting it must not be written")
    return v


def num(value: Any, spec: str = ".2f", *, what: str = "a quoted number") -> str:
    """``value`` formatted with ``spec``; a missing value (NaN, None, inf) raises ``ValueError``.

    Integers (``spec="d"``) are accepted from floats that hold whole numbers.
    """
    v = _finite(value, what)
    if spec.endswith("d"):
        if v != int(v):
            raise ValueError(f"{what} is not a whole number ({value!r})")
        return format(int(v), spec)
    return format(v, spec)


def signed(value: Any, spec: str = ".2f", *, what: str = "a quoted difference") -> str:
    """``value`` with an explicit sign (``+0.12``, ``-0.03``); missing values raise."""
    return num(value, "+" + spec, what=what)


def pct(value: Any, digits: int = 0, *, what: str = "a quoted fraction") -> str:
    """A fraction as a percentage (``0.1`` -> ``"10%"``); missing values raise."""
    return f"{100 * _finite(value, what):.{digits}f}%"


def range_text(lo: Any, hi: Any, spec: str = ".2f") -> str:
    """``"0.31"`` when both ends print the same, else ``"0.31 to 0.45"``."""
    a, b = num(lo, spec), num(hi, spec)
    return a if a == b else f"{a} to {b}"


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``count(1, "fold") == "1 fold"``, ``count(3, "fold") == "3 folds"``, ``count(5452, "model") == "5,452 models"``."""
    n = int(n)
    return f"{n:,} {singular if n == 1 else (plural or singular + 's')}"


def was_were(items: Sequence[Any]) -> str:
    """``"was"`` for one item, ``"were"`` for several."""
    return "was" if len(items) == 1 else "were"


def code(text: Any) -> str:
    """Inline code (a benchmark or parameter name)."""
    return f"`{text}`"


def cap(text: str) -> str:
    """The text with its first letter upper-cased (the rest unchanged, unlike ``str.capitalize``)."""
    return text[:1].upper() + text[1:]


def paragraph(*sentences: str) -> str:
    """Join the non-empty sentences with single spaces."""
    return " ".join(s.strip() for s in sentences if s and s.strip())


def bullets(items: Iterable[str]) -> str:
    """A Markdown bullet list of the non-empty items (each may span several sentences)."""
    lines = [f"- {s.strip()}" for s in items if s and s.strip()]
    return "\n".join(lines)


def run_line(
    ran: Sequence[str],
    *,
    described: Sequence[str] = (),
    parameter: str = "datasets",
    details: Sequence[str] = (),
    quick: bool = False,
) -> str:
    """One sentence saying what this run computed, naming each matrix it skipped once, as not run.

    Parameters
    ----------
    ran : list of str
        Matrices the run computed, in the order of the page.
    described : list of str
        Matrices the paper's part of the page discusses; those not in ``ran``
        are named as not run.
    parameter : str
        The parameter that chooses the matrices.
    details : list of str
        Further facts of the run ("3 folds", "10% holdout", "seed 1").
    quick : bool
        Adds "quick mode" (the capped smoke-test parameters).

    Returns
    -------
    str
        E.g. ``"This run: MTEB with 3 folds, 10% holdout (quick mode); MMLU and Merged were not run
        (parameter `datasets`)."``
    """
    facts = [f for f in details if f]
    if quick:
        facts.append("quick mode")
    head = f"This run: {labels(ran)}" if ran else "This run"
    if facts:
        head += " (" + ", ".join(facts) + ")"
    skipped = [d for d in described if d not in ran]
    if skipped:
        head += f"; {labels(skipped)} {was_were(skipped)} not run (parameter {code(parameter)})"
    return head + "."


def without_code(text: str) -> str:
    """``text`` without fenced code blocks and inline code spans (where ``$`` and names are literal)."""
    text = re.sub(r"^(`{3,}|~{3,}).*?^\1", "", text, flags=re.M | re.S)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", text, flags=re.S)
