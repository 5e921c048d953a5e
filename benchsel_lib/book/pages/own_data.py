"""Chapter 11: using benchsel on your own data (Section 6: cost-aware selection, mandatory benchmarks, the dual).

The page is a worked example of the library's API; its prose is in the
notebook. This module holds its tables (the budgeted selection, the coverage
of the Gaussian intervals per matrix) and runs the ``benchsel`` commands that
repeat the Python calls (:func:`run_command`, :func:`command_agreement`).
"""
from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["command_agreement", "coverage_summary", "run_command", "selection_table", "shell_line"]


def coverage_summary(calib: pd.DataFrame, *, k: int, level: float = 0.9) -> pd.DataFrame:
    """Per matrix: coverage of the nominal ``level`` interval at ``k`` (mean over pipelines), raw and inflated.

    Parameters
    ----------
    calib : DataFrame
        :func:`~benchsel_lib.protocol.summaries.calibration_table` rows of
        every matrix, with a ``dataset`` column (display name).
    k, level : int, float
        The subset size and the nominal level quoted.

    Returns
    -------
    DataFrame
        ``matrix, coverage, coverage inflated, largest gap, largest gap inflated`` (over every
        pipeline, ``k`` and level); NaN inflated columns when the run fitted no inflation.
    """
    rows = []
    for name, d in calib.groupby("dataset", sort=False):
        at = d[np.isclose(d["nominal"], level) & (d["k"] == k)]
        if at.empty:
            raise ValueError(f"{name}: no calibration rows at k = {k} and level {level:g}")
        rows.append({"matrix": name, "coverage": float(at["coverage"].mean()),
                     "coverage inflated": float(at["coverage_cal"].mean()) if "coverage_cal" in at else np.nan,
                     "largest gap": float(d["gap"].abs().max()),
                     "largest gap inflated": float(d["gap_cal"].abs().max()) if "gap_cal" in d else np.nan})
    return pd.DataFrame(rows, columns=["matrix", "coverage", "coverage inflated", "largest gap",
                                       "largest gap inflated"])


def selection_table(selection: Any, costs: pd.Series) -> pd.DataFrame:
    """The budgeted selection: ``step, benchmark, cost, variance left`` (``selection.residual_fraction``).

    Parameters
    ----------
    selection : Selection
        With ``names`` and ``residual_fraction`` (one value per pick).
    costs : Series
        Cost of every benchmark, indexed by name.
    """
    names = list(selection.names)
    return pd.DataFrame({"step": np.arange(1, len(names) + 1), "benchmark": names,
                         "cost": [float(costs[b]) for b in names],
                         "variance left": np.asarray(selection.residual_fraction[:len(names)], dtype=float)})


def run_command(argv: Sequence[str]) -> tuple[int, str, str]:
    """Run ``benchsel ARGV`` as a reader's shell would (``python -m benchsel_lib.cli`` in a new interpreter).

    Returns the exit status, the standard output and the standard error.
    """
    res = subprocess.run([sys.executable, "-m", "benchsel_lib.cli", *[str(a) for a in argv]],
                         capture_output=True, text=True, check=False)
    return int(res.returncode), res.stdout, res.stderr


def shell_line(argv: Sequence[str]) -> str:
    """``argv`` as a shell command line (``benchsel ...``), an argument with a space or comma quoted."""
    return "benchsel " + " ".join(f"'{a}'" if (" " in a or "," in a) else a for a in map(str, argv))


def command_agreement(python: pd.DataFrame, command: pd.DataFrame | str) -> pd.DataFrame:
    """The Python prediction beside the command's, per benchmark, with their largest difference.

    Parameters
    ----------
    python : DataFrame
        :meth:`~benchsel_lib.method.pipeline.Pipeline.predict` output
        (``mean, lower, upper``, indexed by benchmark).
    command : DataFrame or str
        The CSV output of ``benchsel predict`` (``benchmark, predicted, lower, upper, ...``).

    Returns
    -------
    DataFrame
        ``benchmark, Python, command, difference`` (the largest absolute
        difference of the mean and the two interval ends); ValueError when the
        command predicts other benchmarks than the Python call.
    """
    cmd = (pd.read_csv(io.StringIO(command)) if isinstance(command, str) else command).set_index("benchmark")
    if sorted(cmd.index) != sorted(python.index):
        raise ValueError(f"the command predicts {sorted(cmd.index)}, the Python call {sorted(python.index)}")
    cmd = cmd.loc[python.index]
    diff = np.max(np.abs(np.c_[cmd["predicted"] - python["mean"], cmd["lower"] - python["lower"],
                               cmd["upper"] - python["upper"]]), axis=1)
    return pd.DataFrame({"benchmark": list(python.index), "Python": python["mean"].to_numpy(float),
                         "command": cmd["predicted"].to_numpy(float), "difference": diff})
