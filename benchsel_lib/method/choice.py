"""How a search chooses among its scored candidates (dicts with ``selector, predictor, k, r2`` at one size):
:class:`Best`, :class:`Monotone` (the recommended pipeline's) and :class:`Nested`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Best", "Monotone", "Nested", "CHOICE_RULES", "DEFAULT_RULE", "choice_rule"]

Row = dict[str, Any]


@dataclass(frozen=True)
class Best:
    """The highest inner R^2 at each size (ties to the smaller ``order`` key)."""

    name = "best"
    #: whether the choice at ``k`` looks back at the one at ``k - 1`` (so every smaller size is scored)
    lookback = False

    def choose(self, rows: Sequence[Row], *, previous: Row | None = None,
               order: Callable[[Row], Any] | None = None) -> Row:
        """The chosen row among ``rows`` (one size). O(len(rows))."""
        if not rows:
            raise ValueError("no scored candidate to choose from")
        key = order or (lambda r: 0)
        return min(rows, key=lambda r: (-r["r2"], key(r)))


@dataclass(frozen=True)
class Monotone(Best):
    """As :class:`Best`, unless that falls below the choice at ``k - 1``, whose row at ``k`` (same selector and
    predictor) is then kept (the best when it was not scored): a best falling below the previous choice's
    is the mark of a winner chosen for its luck on the inner folds."""

    name = "monotone"
    lookback = True

    def choose(self, rows: Sequence[Row], *, previous: Row | None = None,
               order: Callable[[Row], Any] | None = None) -> Row:
        """The chosen row among ``rows`` (one size), given the choice at ``k - 1``. O(len(rows))."""
        best = super().choose(rows, order=order)
        if previous is None or best["r2"] >= previous["r2"]:
            return best
        same = (previous["selector"], previous["predictor"])
        return next((r for r in rows if (r["selector"], r["predictor"]) == same), best)


@dataclass(frozen=True)
class Nested(Best):
    """One selector for every size (:meth:`selector`), and at each size its best predictor (so a model that
    ran a smaller selection runs only what a larger one adds)."""

    name = "nested"
    lookback = True

    @staticmethod
    def selector(rows: Sequence[Row], sizes: Sequence[int], *, order: Callable[[str], Any] | None = None) -> str:
        """The selector with the best mean over ``sizes`` of its best inner R^2 at each size (ties to the smaller
        ``order(selector)``; ``ValueError`` when nothing finite was scored). O(len(rows))."""
        key = order or (lambda s: 0)
        wanted = set(int(k) for k in sizes)
        best: dict[tuple[str, int], float] = {}
        for r in rows:
            if int(r["k"]) in wanted and np.isfinite(r["r2"]):
                at = (r["selector"], int(r["k"]))
                best[at] = max(best.get(at, -np.inf), float(r["r2"]))
        if not best:
            raise ValueError("no scored candidate to choose from")
        means: dict[str, list[float]] = {}
        for (selector, _), r2 in best.items():
            means.setdefault(selector, []).append(r2)
        return min(means, key=lambda s: (-float(np.mean(means[s])), key(s)))


#: the rules by name
CHOICE_RULES: dict[str, Best] = {"best": Best(), "monotone": Monotone(), "nested": Nested()}
#: the rule of the recommended pipeline
DEFAULT_RULE = "monotone"


def choice_rule(rule: Any) -> Best:
    """The rule ``rule`` names (or ``rule`` itself); ``ValueError`` naming the rules otherwise. O(1)."""
    if isinstance(rule, Best):
        return rule
    if not isinstance(rule, str) or rule not in CHOICE_RULES:
        raise ValueError(f"unknown choice rule {rule!r}: use one of {tuple(CHOICE_RULES)}")
    return CHOICE_RULES[rule]

