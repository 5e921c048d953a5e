"""Helpers for the book's notebooks: parameter checks and text that follows the parameters.

Every notebook is re-run by readers through papermill with parameters of
their own (another subset of matrices, another seed, fewer folds, a larger
``k_max``). Its first code cell after the parameters declares each
parameter's rule as data (``{"alpha": Fraction(), "seed": Count()}``, from
the small vocabulary of :class:`Rule` classes below) and passes them to
:func:`check_parameters`, so that a bad value stops the run at once with a
message that names the parameter, instead of a traceback from deep inside a
cross-validation loop twenty minutes later.

:func:`quick` gives the cheaper parameter set of a notebook's ``quick`` mode
(continuous-integration smoke runs) by capping the parameters that were
passed rather than replacing them, so ``quick=True`` combined with other
parameters still runs those parameters, only smaller.

:func:`and_join` and :func:`dataset_label` are the smallest pieces of the
prose that :mod:`benchsel_lib.book.prose` and :mod:`benchsel_lib.book.pages`
write from a run's results.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import check_int
from ..data import DATASETS, load_matrix

__all__ = ["LABELS", "METHODS", "Bounded", "Choice", "Choices", "Count", "Flag", "Folds", "Fraction", "Holdout",
           "Holdouts", "IntList", "Levels", "Matrices", "Matrix", "MatrixChoices", "Methods", "NoneOr", "Rule",
           "SubsetSize", "SubsetSizes", "and_join", "check_parameters", "dataset_label", "matrix_shape", "quick"]

#: Display names of the experiment matrices (``benchsel_lib.data.DATASETS``).
LABELS: dict[str, str] = {"mmlu": "MMLU", "mteb": "MTEB", "merged": "Merged", "benchpress": "BenchPress"}


def dataset_label(name: str) -> str:
    """Display name of a matrix (``"merged"`` -> ``"Merged"``); unknown names are returned as given.

    Parameters
    ----------
    name : str
        A key of ``benchsel_lib.data.DATASETS`` (or any other name).

    Returns
    -------
    str
        ``LABELS[name]`` (:data:`LABELS`), else ``name`` itself.

    Notes
    -----
    Complexity O(1).
    """
    return LABELS.get(name, name)


def and_join(items: Iterable[Any]) -> str:
    """``["a"]`` -> ``"a"``, ``["a", "b"]`` -> ``"a and b"``, ``["a", "b", "c"]`` -> ``"a, b and c"``.

    Parameters
    ----------
    items : iterable
        The words, each converted with ``str``; consumed once.

    Returns
    -------
    str
        The words joined by ``", "`` with ``" and "`` before the last (no
        serial comma); ``""`` for no items.

    Notes
    -----
    Complexity O(total length of the words).
    """
    words = [str(i) for i in items]
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _is_int(x: object) -> bool:

    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _shape(name: str) -> tuple[int, int]:

    return load_matrix(name).shape


def matrix_shape(name: str) -> tuple[int, int]:
    """(models, benchmarks) of a built-in matrix, for a notebook's own bounds; an unknown name raises ValueError.

    Parameters
    ----------
    name : str
        A key of ``benchsel_lib.data.DATASETS`` (``"mteb"``, ``"merged"``,
        ``"benchpress"``, ``"mmlu"``).

    Returns
    -------
    tuple of (int, int)
        ``(M, N)`` of the loaded matrix.

    Raises
    ------
    ValueError
        An unknown ``name`` (listing the known ones), or a data file that
        fails its check (:func:`~benchsel_lib.data.load_matrix`).
    FileNotFoundError
        The data file is not available and cannot be downloaded.

    Notes
    -----
    Complexity: one :func:`~benchsel_lib.data.load_matrix` call each time
    (nothing is cached here), O(M N) for an npz matrix and the rebuild for
    ``"mmlu"``.
    """
    if name not in DATASETS:
        raise ValueError(f"{name!r} is not a known matrix; choose from {list(DATASETS)}")
    return _shape(name)


def _as_list(value: Any, what: str) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{what} must be a list, got {value!r}")
    return list(value)


def _distinct(values: list[Any], what: str) -> None:
    dup = [v for i, v in enumerate(values) if v in values[:i]]
    if dup:
        raise ValueError(f"{what} lists {dup[0]!r} more than once")


def _check_range(value: Any, param: str, low: int, high: int | None, why: str = "") -> None:
    check_int(value, param, minimum=low)
    if high is not None and value > high:
        raise ValueError(f"{param}={value} is out of range: choose {low}..{high}{why}")


def _in_unit_interval(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.floating)) and 0.0 < float(value) < 1.0


def _check_matrix_name(param: str, value: Any) -> None:
    if not isinstance(value, str) or value not in DATASETS:
        raise ValueError(f"{param}={value!r} is not a known matrix; choose from {list(DATASETS)}")


class _Matrices:
    """(models, benchmarks) of the matrices declared so far in one :func:`check_parameters` call."""

    def __init__(self) -> None:
        self.shapes: list[tuple[int, int]] = []

    def fewest_benchmarks(self) -> int | None:
        """Smallest ``N`` among the matrices declared so far, None before any."""
        return min((s[1] for s in self.shapes), default=None)

    def fewest_models(self) -> int | None:
        """Smallest ``M`` among the matrices declared so far, None before any."""
        return min((s[0] for s in self.shapes), default=None)


class Rule:
    """How one notebook parameter is checked; the vocabulary of :func:`check_parameters`."""

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise ``ValueError`` naming ``param`` if ``value`` breaks the rule.

        ``matrices`` holds the shapes of the matrices declared before ``param``
        (the bound of :class:`SubsetSize` and :class:`Folds`).
        """
        raise NotImplementedError


@dataclass(frozen=True)
class Flag(Rule):
    """``True`` or ``False``: papermill reads ``-p quick False`` as a boolean, ``-p quick false`` as a string."""

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise unless ``value`` is a boolean."""
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{param} must be True or False, got {value!r} (papermill reads -p {param} True "
                             "as a boolean, lowercase true as a string)")


@dataclass(frozen=True)
class Matrices(Rule):
    """A list of built-in matrices (``benchsel_lib.data.DATASETS``) the notebook runs; they bound later sizes.

    At least one, none twice. ``also=True``: further matrices run with the same
    ``k_max`` and ``n_folds`` (a forced-first-pick band): the list may be
    empty, its entries are named by index, and a matrix may repeat one of
    the others. Either way their shapes bound the :class:`SubsetSize`,
    :class:`SubsetSizes` and :class:`Folds` parameters declared after them.
    """

    also: bool = False

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise for a non-list, an empty list, an unknown name or a repeated one; record the shapes."""
        names = _as_list(value, param)
        if self.also:
            for i, name in enumerate(names):
                _check_matrix_name(f"{param}[{i}]", name)
        else:
            self._check_main(param, names)
        matrices.shapes += [_shape(n) for n in names]

    @staticmethod
    def _check_main(param: str, names: list[Any]) -> None:
        if not names:
            raise ValueError(f"{param} is empty; choose one or more of {list(DATASETS)}")
        for name in names:
            _check_matrix_name(f"{param} entry", name)
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"{param} lists {dup} more than once")


@dataclass(frozen=True)
class Matrix(Rule):
    """One built-in matrix by name (``"merged"``); it does not bound other parameters."""

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise unless ``value`` is a key of ``benchsel_lib.data.DATASETS``."""
        _check_matrix_name(param, value)


def _check_subset_size(param: str, value: Any, matrices: _Matrices) -> None:
    check_int(value, param)
    n_min = matrices.fewest_benchmarks()
    if n_min is not None and value > n_min - 1:
        raise ValueError(
            f"{param}={value} is out of range: the smallest matrix run here has {n_min} benchmarks, "
            f"so {param} can be at most {n_min - 1} (one benchmark must be left to predict)"
        )


@dataclass(frozen=True)
class SubsetSize(Rule):
    """A subset size, ``1 <= k <= N - 1`` for the fewest benchmarks ``N`` of the matrices declared before it."""

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise for a non-positive or non-integer size, or one that leaves no benchmark to predict."""
        _check_subset_size(param, value, matrices)


@dataclass(frozen=True)
class SubsetSizes(Rule):
    """A list of subset sizes (``[1, 5, 10]``): at least one, none twice, each as :class:`SubsetSize`."""

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise for an empty list, a repeated size or a size out of range (named by its index)."""
        sizes = list(value) if isinstance(value, (list, tuple)) else _as_list(value, param)
        if not sizes:
            raise ValueError(f"{param} is empty; give one or more subset sizes")
        _distinct(sizes, param)
        for i, v in enumerate(sizes):
            _check_subset_size(f"{param}[{i}]", v, matrices)


@dataclass(frozen=True)
class Folds(Rule):
    """Cross-validation folds, ``2 <= n_folds <= M`` for the fewest models ``M`` of the matrices declared before it."""

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise for fewer than two folds or more folds than models."""
        check_int(value, param, minimum=2)
        m_min = matrices.fewest_models()
        if m_min is not None and value > m_min:
            raise ValueError(f"{param}={value} is out of range: the smallest matrix run here has {m_min} models")


def _check_fraction(label: str, value: Any, entry: str = "a holdout fraction") -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{label} {value!r} is out of range: {entry} must be in (0, 1)")


def _fractions(param: str, value: Any, *, what: str, example: str, entry: str) -> None:
    """Check a non-empty list of distinct numbers in (0, 1) (holdouts, interval levels)."""
    items = _as_list(value, param)
    if not items:
        raise ValueError(f"{param} is empty; give one or more {what} in (0, 1), e.g. {example}")
    for item in items:
        _check_fraction(f"{param} entry", item, entry)
    _distinct(items, param)


@dataclass(frozen=True)
class Holdout(Rule):
    """One holdout fraction, in ``(0, 1)``."""

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise unless ``value`` is a number strictly between 0 and 1."""
        _check_fraction(param, value)


@dataclass(frozen=True)
class Holdouts(Rule):
    """A list of holdout fractions, each in ``(0, 1)``, at least one, none twice."""

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise for a non-list, an empty list, a fraction out of range or a repeated one."""
        _fractions(param, value, what="fractions", example="[0.1]", entry="a holdout fraction")


@dataclass(frozen=True)
class Levels(Rule):
    """A list of nominal interval levels, each in ``(0, 1)``, at least one, none twice."""

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise for a non-list, an empty list, a level out of range or a repeated one."""
        _fractions(param, value, what="nominal levels", example="[0.9]", entry="a nominal level")


@dataclass(frozen=True)
class Fraction(Rule):
    """A number strictly between 0 and 1 (a significance level, a quantile)."""

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise unless ``value`` is a number in ``(0, 1)``."""
        if not _in_unit_interval(value):
            raise ValueError(f"{param}={value!r} is out of range: it must be a number strictly between 0 and 1")


@dataclass(frozen=True)
class Count(Rule):
    """An integer ``>= min`` (a seed, a number of draws or repeats; booleans refused)."""

    min: int = 0

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise unless ``value`` is an integer of at least ``min``."""
        check_int(value, param, minimum=self.min)


@dataclass(frozen=True)
class Bounded(Rule):
    """An integer in ``lo..hi`` (``hi`` None: no upper bound); ``why`` ends the message (``", at most k_max"``)."""

    lo: int
    hi: int | None
    why: str = ""

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise unless ``value`` is an integer within ``lo..hi``."""
        _check_range(value, param, self.lo, self.hi, self.why)


@dataclass(frozen=True)
class IntList(Rule):
    """A list of distinct integers in ``min..max`` (``max`` None: no upper bound), not empty unless ``may_be_empty``."""

    min: int = 0
    max: int | None = None
    may_be_empty: bool = False

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise for a non-list, an empty list (unless allowed), an entry out of range or a repeated one."""
        values = _as_list(value, param)
        if not values and not self.may_be_empty:
            span = f">= {self.min}" if self.max is None else f"in {self.min}..{self.max}"
            raise ValueError(f"{param} is empty; give one or more integers {span}")
        for i, v in enumerate(values):
            _check_range(v, f"{param}[{i}]", self.min, self.max)
        _distinct(values, param)


#: The selection methods a ``methods`` parameter may list.
METHODS = ("entropy", "mi", "random")


@dataclass(frozen=True)
class Methods(Rule):
    """A list of selection methods (``"entropy"``, ``"mi"``, ``"random"``), at least one, none twice."""

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise for a non-list, an empty list, an unknown method or a repeated one."""
        allowed = list(METHODS)
        methods = _as_list(value, param)
        if not methods:
            raise ValueError(f"{param} is empty; choose one or more of {allowed}")
        for m in methods:
            if m not in allowed:
                raise ValueError(f"{param} entry {m!r} is not a selection method; choose from {allowed}")
        _distinct(methods, param)


def _check_choice(param: str, value: Any, allowed: tuple[Any, ...]) -> None:
    if isinstance(value, (list, tuple, set, dict)):
        raise ValueError(f"{param} takes one value of {list(allowed)}, got {value!r}")
    if value not in allowed:
        raise ValueError(f"{param}={value!r} is not allowed; choose from {list(allowed)}")


@dataclass(frozen=True, init=False)
class Choice(Rule):
    """One of the values given (``Choice("bh", "bonferroni")``); None may be one of them."""

    allowed: tuple[Any, ...]

    def __init__(self, *allowed: Any) -> None:
        object.__setattr__(self, "allowed", allowed)

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise for a list (one value is taken) or a value not allowed."""
        _check_choice(param, value, self.allowed)


@dataclass(frozen=True, init=False)
class Choices(Rule):
    """A list of the values given (``Choices("early", "released")``), at least one, none twice."""

    allowed: tuple[Any, ...]

    def __init__(self, *allowed: Any) -> None:
        object.__setattr__(self, "allowed", allowed)

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise for a non-list, an empty list, a value not allowed or a repeated one."""
        values = _as_list(value, param)
        if not values:
            raise ValueError(f"{param} is empty; choose one or more of {list(self.allowed)}")
        for v in values:
            if isinstance(v, (list, dict)) or v not in self.allowed:
                raise ValueError(f"{param} entry {v!r} is not allowed; choose from {list(self.allowed)}")
        _distinct(values, param)


@dataclass(frozen=True, init=False)
class MatrixChoices(Rule):
    """A dict from built-in matrices to one of the values given (``{"benchpress": "early"}``)."""

    allowed: tuple[Any, ...]

    def __init__(self, *allowed: Any) -> None:
        object.__setattr__(self, "allowed", allowed)

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Raise for a key that is not a known matrix, then for a value not allowed."""
        for name in value:
            _check_matrix_name(f"{param} key {name!r}", name)
        for name, choice in value.items():
            _check_choice(f"{param}[{name!r}]", choice, self.allowed)


@dataclass(frozen=True)
class NoneOr(Rule):
    """None (the notebook's default applies), or a value that passes ``rule``."""

    rule: Rule

    def check(self, param: str, value: Any, matrices: _Matrices) -> None:
        """Pass None; check anything else by ``rule``."""
        if value is not None:
            self.rule.check(param, value, matrices)


def check_parameters(spec: Mapping[str, Rule | tuple[Rule, ...]], values: Mapping[str, Any]) -> None:
    """Check a notebook's parameters against their declared rules; raise ``ValueError`` naming the first bad one.

    Parameters
    ----------
    spec : mapping
        ``{parameter name: rule}``, in the order of the checks; a tuple of
        rules is checked rule by rule. Rules: :class:`Flag`,
        :class:`Matrices`, :class:`Matrix`, :class:`SubsetSize`,
        :class:`SubsetSizes`, :class:`Folds`, :class:`Holdout`,
        :class:`Holdouts`, :class:`Levels`, :class:`Fraction`,
        :class:`Count`, :class:`Bounded`, :class:`IntList`,
        :class:`Methods`, :class:`Choice`, :class:`Choices`,
        :class:`MatrixChoices`, :class:`NoneOr`. The matrices of the
        :class:`Matrices` parameters bound the sizes and folds declared
        after them.
    values : mapping
        The parameters' values by name (a notebook passes ``globals()``);
        it must hold every name of ``spec``.

    Raises
    ------
    ValueError
        With the parameter's name, its value and the allowed range.

    Notes
    -----
    Matrix shapes come from :func:`benchsel_lib.data.load_matrix` (the
    files are small; cost well under a second per matrix).
    """
    matrices = _Matrices()
    for param, rules in spec.items():
        for rule in rules if isinstance(rules, tuple) else (rules,):
            rule.check(param, values[param], matrices)


def quick(value: Any, cap: Any) -> Any:
    """The cheaper value of a parameter in a notebook's ``quick`` mode.

    Integers are capped (``quick(15, 5) == 5``, ``quick(3, 5) == 3``);
    lists are cut to their first ``cap`` entries (``quick(["mmlu", "mteb"],
    1) == ["mmlu"]``), so a reader's own choice survives ``quick=True``,
    only smaller.

    Parameters
    ----------
    value : int or list
        The parameter's value (an integer, booleans excluded, or a list).
    cap : int
        The largest integer, or the number of list entries kept.

    Returns
    -------
    int or list
        ``min(value, cap)`` for an integer; ``value[:cap]`` (a new list) for
        a list.

    Raises
    ------
    ValueError
        ``value`` is neither an integer nor a list (a tuple or a bool included).

    Notes
    -----
    Complexity O(1) for an integer, O(cap) for a list.
    """
    if isinstance(value, list):
        return value[: int(cap)]
    if _is_int(value):
        return min(value, cap)
    raise ValueError(f"quick() caps integers and lists, got {value!r}")
