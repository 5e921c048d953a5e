"""A pipeline's selection step: an objective, its candidates, its constraints.

A :class:`Selector` names what :func:`~benchsel_lib.method.selection.select`
maximizes and under which constraints, independently of the data.
:data:`SELECTORS` holds the named presets that pipelines and the command line
refer to (``"mi"``, ``"entropy-obs"``, ``"lasso"``, ``"anchors"``, ``"sparse"``, ...).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .._checks import check_bool, check_int
from .._memo import LRUMemo, array_key
from .._names import name_positions
from .base import Component
from .lowrank import LowRankCorrelation
from .selection import (NEEDS_TRAIN, OBJECTIVES, UNNESTED, Selection, check_cost_form, check_tie_break, select,
                        too_thin)

__all__ = ["Selector", "SELECTORS", "OBS_FRACTION", "min_observed_for", "selector_named"]

#: fraction of training models that must observe a candidate of the ``*-obs`` presets
OBS_FRACTION = 0.3


def min_observed_for(n_train: int, *, fraction: float = OBS_FRACTION) -> int:
    """The ``min_observed`` of a fraction: ``ceil(fraction * n_train)``, at least 1. O(1)."""
    return max(1, int(math.ceil(fraction * n_train)))


def _is_fraction(mo: Any) -> bool:
    """Whether a ``min_observed`` is a fraction of the training models (a float that is not a whole number). O(1)."""
    return isinstance(mo, (float, np.floating)) and not float(mo).is_integer()


def _names_once(names: Any, what: str) -> tuple[str, ...]:
    """One name or several as a tuple of str; ``ValueError`` naming ``what`` when one is repeated. O(n)."""
    out = (names,) if isinstance(names, str) else tuple(str(b) for b in names)
    if len(set(out)) != len(out):
        raise ValueError(f"{what} lists a benchmark twice: {list(out)}")
    return out


@dataclass(frozen=True)
class Selector(Component):
    """Which benchmarks to run: objective and constraints, as :func:`~benchsel_lib.method.selection.select` takes them.

    The fields are :func:`~benchsel_lib.method.selection.select`'s options of
    the same names (default objective ``"mi"``), held by benchmark name:
    ``initial`` and ``exclude`` are names (a split that lacks one skips it;
    ``n_forced`` counts the mandatory ones; a whole-matrix fit adds its
    constant columns to ``exclude``), ``costs`` a mapping name -> cost
    (every benchmark of the matrix needs one), and ``min_observed`` a count
    (capped at the number of training models) or a fraction of them in (0, 1)
    (the ``*-obs`` presets: 30 %).  ``name`` labels the selector in tables
    (default: the objective, ``"-obs"`` added for the 30 % filter).
    """

    objective: str = "mi"
    min_observed: int | float | None = None
    initial: tuple[str, ...] = ()
    costs: Mapping[str, float] | None = field(default=None, hash=False)
    budget: float | None = None
    tie_break: str = "auto"
    lazy: bool = False
    name: str | None = None
    exclude: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"unknown selection objective {self.objective!r}: use one of {OBJECTIVES}")
        mo = self.min_observed
        if mo is not None and (isinstance(mo, bool) or not isinstance(mo, (int, float, np.integer, np.floating))):
            raise ValueError(f"min_observed must be a count, a fraction in (0, 1) or None, got {mo!r}")
        if _is_fraction(mo) and not 0.0 < float(mo) < 1.0:
            raise ValueError(f"min_observed as a fraction must be in (0, 1), got {mo!r}")
        if mo is not None and not _is_fraction(mo) and mo < 0:
            raise ValueError(f"min_observed must be >= 0, got {mo!r}")
        object.__setattr__(self, "initial", _names_once(self.initial, "initial"))
        object.__setattr__(self, "exclude", _names_once(self.exclude, "exclude"))
        both = [b for b in self.initial if b in self.exclude]
        if both:
            raise ValueError(f"benchmark {both[0]!r} is both mandatory (initial) and excluded")
        if (self.costs is None) != (self.budget is None):
            raise ValueError("give both costs and budget, or neither")
        if self.costs is not None:
            if not isinstance(self.costs, Mapping):
                raise ValueError(f"costs must be a mapping benchmark name -> cost, got {type(self.costs).__name__}")
            check_cost_form(self.objective)
        check_tie_break(self.tie_break)
        check_bool(self.lazy, "lazy")

    @property
    def label(self) -> str:
        """The selector's name in tables: ``name`` if given, else the objective (``-obs`` for the 30 % filter). O(1)."""
        return self.name or self.objective + ("-obs" if self.min_observed == OBS_FRACTION else "")

    @property
    def nested(self) -> bool:
        """Whether the selection of ``k`` benchmarks is the first ``k`` of any larger one (not for
        :data:`~benchsel_lib.method.selection.UNNESTED`: anchor points, the imputed Lasso). O(1)."""
        return self.objective not in UNNESTED

    def threshold(self, n_models: int) -> int | None:
        """The candidate filter as a count for ``n_models`` training models (None: no filter; at most ``n_models``).

        O(1).
        """
        mo = self.min_observed
        if mo is None:
            return None
        if _is_fraction(mo):
            return min_observed_for(n_models, fraction=float(mo))
        return min(int(mo), int(n_models))

    def scaled(self, n_rows: int, n_total: int) -> Selector:
        """This selector for an inner fold of ``n_rows`` of ``n_total`` training rows (a count filter scales with it).

        O(1), plus the new selector's checks of ``initial`` and ``exclude`` for a count filter.
        """
        mo = self.min_observed
        if mo is None or _is_fraction(mo):
            return self
        return replace(self, min_observed=max(1, int(round(int(mo) * n_rows / n_total))))

    def n_candidates(self, counts: np.ndarray, forced: np.ndarray, n_models: int, *,
                     names: Sequence[str] | None = None) -> int:
        """How many benchmarks the filter and ``exclude`` (with ``names``) leave; mandatory ones always count. O(N)."""
        keep = ~too_thin(counts, self.threshold(n_models))
        if self.exclude and names is not None:
            keep[self.resolve_exclude(names)] = False
        return int((keep | forced).sum())

    def resolve_initial(self, names: Sequence[str], *, missing: str = "error") -> list[int]:
        """Column indices of the mandatory benchmarks in ``names``; ``missing="skip"`` drops absent ones. O(N)."""
        return name_positions(self.initial, names, role="mandatory", missing=missing)

    def resolve_exclude(self, names: Sequence[str]) -> list[int]:
        """Column indices of the excluded benchmarks in ``names`` (absent names are dropped). O(N).

        A split of the matrix may lack an excluded benchmark; :meth:`check_names`
        refuses a name that is not in the whole matrix.
        """
        return name_positions(self.exclude, names, role="excluded", missing="skip")

    def check_names(self, names: Sequence[str]) -> None:
        """Refuse mandatory or excluded benchmarks that are not among the matrix's ``names``. O(N).

        Raises
        ------
        ValueError
            ``unknown mandatory (excluded) benchmark 'x'``, with close matches when there are any.
        """
        name_positions(self.initial, names, role="mandatory")
        name_positions(self.exclude, names, role="excluded")

    def select(
        self,
        cov: np.ndarray,
        k: int | None,
        *,
        names: Sequence[str],
        counts: np.ndarray,
        n_models: int,
        train: np.ndarray | None = None,
        seed: int | np.random.Generator | None = 0,
        missing_initial: str = "error",
    ) -> Selection:
        """Select ``k`` benchmarks with :func:`~benchsel_lib.method.selection.select` (this selector's options).

        Parameters
        ----------
        cov : ndarray (N, N) or LowRankCorrelation
            Training correlation.
        k : int or None
            Subset size, mandatory benchmarks included (None: as many as the budget allows).
        names : sequence of str
            Benchmark names of the columns.
        counts : ndarray (N,)
            Training models observing each benchmark (for ``min_observed``).
        n_models : int
            Number of training models (for a fractional ``min_observed``).
        train : ndarray (M, N), optional
            Standardized training rows (for :data:`~benchsel_lib.method.selection.NEEDS_TRAIN`).
        seed : int or Generator
            The random baseline's stream.
        missing_initial : {"error", "skip"}
            A mandatory benchmark absent from ``names``: raise, or skip it.

        Raises
        ------
        ValueError
            ``k`` larger than the candidates left or smaller than the mandatory
            benchmarks; unknown names; bad costs.

        Notes
        -----
        Selections without a budget are memoized on the exact bytes of ``cov``,
        ``train`` and the options.  Cost: that of
        :func:`~benchsel_lib.method.selection.select`, plus O(N^2) (and O(M N) with
        ``train``) for the memo key; a hit costs only the key.
        """
        init = self.resolve_initial(names, missing=missing_initial)
        excl = self.resolve_exclude(names)
        threshold = self.threshold(n_models)
        counts = np.asarray(counts)
        if k is not None:
            forced = np.zeros(len(names), dtype=bool)
            forced[init] = True
            n_cand = self.n_candidates(counts, forced, n_models, names=names)
            k = check_int(k, "k")
            if k > n_cand:
                raise ValueError(f"k={k} is larger than the {n_cand} candidate benchmarks left by the min_observed "
                                 f"filter{' and exclude' if self.exclude else ''}")
            if k < len(init):
                raise ValueError(f"k={k} is smaller than the {len(init)} mandatory (initial) benchmarks")
        costs = None
        if self.costs is not None:
            missing = [b for b in names if b not in self.costs]
            if missing:
                raise ValueError(f"costs lack {len(missing)} benchmark(s): {', '.join(map(repr, missing[:5]))}")
            costs = np.array([_cost(self.costs[b], b) for b in names])
        key = None
        if costs is None and not isinstance(seed, np.random.Generator):
            # the correlation's exact bytes, or a low-rank one's factors
            key = (cov.key() if isinstance(cov, LowRankCorrelation) else array_key(np.asarray(cov, dtype=float)),
                   None if train is None or self.objective not in NEEDS_TRAIN
                   else array_key(np.asarray(train, dtype=float)),
                   tuple(counts.tolist()), tuple(names), self.objective, threshold, tuple(init), self.tie_break,
                   self.lazy, k,
                   _seed_key(seed) if self.objective == "random" else None, tuple(excl))
            hit = _SELECTIONS.get(key)
            if hit is not None:
                return hit
        # select reads seed for the random objective only, train for those of NEEDS_TRAIN only
        out = select(cov, k, objective=self.objective, initial=init, observed_counts=counts, names=list(names),
                     min_observed=threshold, tie_break=self.tie_break, lazy=self.lazy, exclude=excl, seed=seed,
                     train=train, costs=costs, budget=None if costs is None else float(self.budget))
        return out if key is None else _SELECTIONS.put(key, out)

    def select_sizes(self, cov: np.ndarray, sizes: Sequence[int], **kwargs: Any) -> dict[int, list[int]]:
        """The selected benchmarks at every subset size of ``sizes`` (keyword options as :meth:`select`).

        A nested objective selects once, at the largest size, and every
        smaller selection is a prefix of it; anchor points and the imputed
        Lasso select once per size (the ``k`` medoids of that ``k``, the
        non-zero set of the strength that leaves ``k``), from the largest
        size down, so that the imputed Lasso's memoized path serves every
        smaller size.  Sizes the selection cannot reach are left out.  Cost:
        one :meth:`select` at the largest size, or one per size.
        """
        wanted = sorted({check_int(k, "k") for k in sizes})
        if not wanted:
            return {}
        if self.nested:
            order = self.select(cov, wanted[-1], **kwargs).order
            return {k: list(order[:k]) for k in wanted if k <= len(order)}
        down = {k: list(self.select(cov, k, **kwargs).order) for k in reversed(wanted)}
        return {k: down[k] for k in wanted}


_SELECTIONS = LRUMemo(256)


def _cost(value: Any, name: str) -> float:
    """The cost of benchmark ``name`` as a float; ``ValueError`` naming the benchmark for anything not a number."""
    if not isinstance(value, (bool, np.bool_, str, bytes)):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    raise ValueError(f"cost {value!r} of benchmark {name!r} is not a number")


def _seed_key(seed: Any) -> Any:
    """A hashable key of a random seed (an int, or the tuple of the paper's streams)."""
    if seed is None or isinstance(seed, (int, np.integer)):
        return None if seed is None else int(seed)
    return tuple(int(s) for s in seed)

#: the named selectors of pipelines and the command line: one per objective, by its name, and the 30 % filters
SELECTORS: dict[str, Selector] = {name: Selector(name) for name in OBJECTIVES} | {
    "mi-obs": Selector("mi", min_observed=OBS_FRACTION),
    "entropy-obs": Selector("entropy", min_observed=OBS_FRACTION),
}


def selector_named(name: str | Selector) -> Selector:
    """A :class:`Selector` by preset name (:data:`SELECTORS`), or the selector itself. O(1)."""
    if isinstance(name, Selector):
        return name
    if not isinstance(name, str) or name not in SELECTORS:
        raise ValueError(f"unknown selector {name!r}: use one of {tuple(SELECTORS)}")
    return SELECTORS[name]
