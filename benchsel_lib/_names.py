"""Names to positions: the one lookup of benchmark and model names.

Every place that turns user-given names into column or row positions (the
matrix's own lookup, mandatory and excluded benchmarks, revealed and given
scores, the CLI's ``--require``) calls :func:`name_positions`, and the
line-by-line readers (a costs file) raise its :func:`unknown_name_error`, so
an unknown name is refused with the same words everywhere, with close matches
when there are any.  This module imports nothing from the package, so the data
layer can use it too.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

__all__ = ["name_positions", "suggest_names", "unknown_name_error"]


def suggest_names(name: str, names: Sequence[str], *, n: int = 3) -> list[str]:
    """Close matches of ``name`` among ``names`` (case-insensitive difflib ratio >= 0.6, else substrings).

    O(len(names) * len(name)^2) in the worst case (difflib), negligible here.
    """
    lowered = {s.lower(): s for s in names}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.6)
    # a substring match ("arc" -> "ARC-Challenge") helps when difflib finds nothing
    if not hits:
        hits = [k for k in lowered if name.lower() in k][:n]
    return [lowered[h] for h in hits]


def unknown_name_error(name: str, names: Sequence[str], what: str = "benchmark", *, role: str = "") -> ValueError:
    """A ValueError for an unknown name, with close matches when there are any.

    ``role`` qualifies the name in the message ("unknown mandatory benchmark
    'x'"); the count in the hint is of all the matrix's ``what``s.
    """
    close = suggest_names(name, names)
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else f" ({len(names)} {what}s in the matrix)"
    return ValueError(f"unknown {role + ' ' if role else ''}{what} {name!r}{hint}")


def name_positions(
    wanted: str | Iterable[str], names: Sequence[str], *, what: str = "benchmark", role: str = "",
    unique: bool = True, missing: str = "error",
) -> list[int]:
    """Positions in ``names`` of the names in ``wanted``, in their order. O(len(names) + len(wanted)).

    Parameters
    ----------
    wanted : str or iterable of str
        One name or several.
    names : sequence of str
        The matrix's benchmark (or model) names.
    what, role : str
        How the message calls a name: ``unknown {role} {what} 'x'`` and
        ``{role} {what} 'x' is given more than once``.
    unique : bool
        Refuse a name given twice (default); ``False`` returns its position
        each time.
    missing : {"error", "skip"}
        ``"skip"`` leaves out names absent from ``names`` (a cross-validation
        split that dropped the benchmark), after they were checked against
        the whole matrix.

    Raises
    ------
    ValueError
        An unknown name (with close matches) or, with ``unique``, a repeat.
    """
    if missing not in ("error", "skip"):
        raise ValueError(f"missing must be 'error' or 'skip', got {missing!r}")
    items = [wanted] if isinstance(wanted, str) else list(wanted)
    pos = {s: j for j, s in enumerate(names)}
    out: list[int] = []
    seen: set[str] = set()
    label = f"{role + ' ' if role else ''}{what}"
    for name in items:
        if unique and name in seen:
            raise ValueError(f"{label} {name!r} is given more than once")
        seen.add(name)
        if name in pos:
            out.append(pos[name])
        elif missing == "error":
            raise unknown_name_error(str(name), names, what, role=role)
    return out
