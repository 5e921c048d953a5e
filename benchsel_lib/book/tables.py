"""Tables as the book's reader sees them: whole, without the index, without ``nan`` or ``-0.00``.

A pandas DataFrame displayed in a notebook shows its index as a first
column, cuts long tables to their first and last rows, prints missing values
as ``NaN`` or ``None`` and small negative numbers as ``-0.00``. :func:`table`
returns a Styler that does none of this: every row, no index, numbers with a
fixed number of digits (a value that rounds to zero prints without a sign),
and a missing value written as the words the caller gives for it (why it is
missing), not as ``nan``.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import pandas as pd

__all__ = ["table"]


def _number(value: Any, digits: int) -> str:
    text = f"{value:.{digits}f}"
    if text.startswith("-") and float(text) == 0:
        text = text[1:]
    return text


def _cell(value: Any, digits: int, missing: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value is pd.NaT:
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}" if abs(int(value)) >= 10_000 else str(int(value))
    if isinstance(value, numbers.Real):
        return _number(float(value), digits)
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def table(df: pd.DataFrame, *, digits: int | Mapping[str, int] = 3, missing: str = "—",
          caption: str | None = None) -> Any:
    """A DataFrame ready to show on a page: every row, no index, no ``nan``, no ``-0.00``.

    Parameters
    ----------
    df : DataFrame
        The table. A meaningful index (a matrix name, a benchmark) should be
        a column: the index is not shown.
    digits : int or dict of str to int
        Digits after the decimal point of real numbers, for every column or
        per column (others: 3).
    missing : str
        What a missing value (NaN, None) shows: say why it is missing
        ("not run", "—" with the reason in the caption).
    caption : str, optional
        A caption above the table.

    Returns
    -------
    pandas.io.formats.style.Styler
        Displayed as an HTML table.

    Notes
    -----
    Complexity O(rows x columns).
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"table() takes a DataFrame, got {type(df).__name__}")
    per = digits if isinstance(digits, Mapping) else {}
    default = 3 if isinstance(digits, Mapping) else int(digits)
    unknown = [c for c in per if c not in df.columns]
    if unknown:
        raise ValueError(f"digits names columns the table does not have: {unknown}")
    shown = df.reset_index(drop=True)
    formatters = {c: (lambda v, d=per.get(c, default): _cell(v, d, missing)) for c in shown.columns}
    styler = shown.style.hide(axis="index").format(formatters)
    if caption:
        styler = styler.set_caption(caption)
    return styler
