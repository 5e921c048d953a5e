"""Chapter 11: using benchsel on your own data (Section 6: cost-aware selection, mandatory benchmarks, the dual).

The page is a worked example of the library's API. Its tables and sentences
are written here from what the run computed: the budgeted selection, the
prediction of one new model, the coverage of the Gaussian intervals under the
paper's protocol, the extrapolation check, the model-selection dual, and the
``benchsel`` commands that repeat the Python calls (:func:`run_command`,
:func:`command_agreement`).
"""
from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..notebook import and_join
from ..prose import PageProse, code, count, label, labels, num, paragraph, pct, signed

__all__ = ["coincidence_sentence", "command_agreement", "coverage_summary", "prose", "run_command", "selection_table", "shell_line"]

METHOD_NAMES = {"entropy": "entropy", "mi": "MI", "random": "random"}


def coverage_summary(calib: pd.DataFrame, *, k: int, level: float = 0.9) -> pd.DataFrame:
    """Per matrix: coverage of the nominal ``level`` interval at ``k`` (mean over methods), raw and inflated.

    Parameters
    ----------
    calib : DataFrame
        :func:`~benchsel_lib.protocol.summaries.calibration_table` rows of
        every matrix, with a ``dataset`` column (display name).
    k : int
        The subset size quoted.
    level : float
        The nominal level quoted.

    Returns
    -------
    DataFrame
        Columns ``matrix, coverage, coverage inflated, largest gap, largest
        gap inflated`` (the largest absolute gap over every method, ``k`` and
        level of the matrix); the inflated columns are NaN when the run fitted
        no inflation. One row per matrix, in the order of ``calib``.

    Notes
    -----
    O(rows).
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
    """The budgeted selection as a table: benchmark, its cost, and the variance left after each pick.

    Parameters
    ----------
    selection : Selection
        With ``names`` and ``residual_fraction`` (one value per pick).
    costs : Series
        Cost of every benchmark, indexed by name.

    Returns
    -------
    DataFrame
        ``step, benchmark, cost, variance left``.
    """
    names = list(selection.names)
    return pd.DataFrame({"step": np.arange(1, len(names) + 1), "benchmark": names,
                         "cost": [float(costs[b]) for b in names],
                         "variance left": np.asarray(selection.residual_fraction[:len(names)], dtype=float)})


def run_command(argv: Sequence[str]) -> tuple[int, str, str]:
    """Run ``benchsel ARGV`` through the command's entry point, in this process.

    Parameters
    ----------
    argv : sequence of str
        The arguments after ``benchsel``.

    Returns
    -------
    (int, str, str)
        Exit status, standard output and standard error, captured.

    Notes
    -----
    Runs the installed command's module (``python -m benchsel_lib.cli``) in a
    new interpreter, as a reader's shell would.
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
        The output of ``benchsel predict ... --format csv`` (``benchmark,
        predicted, lower, upper, ...``), as text or read into a DataFrame.

    Returns
    -------
    DataFrame
        ``benchmark, Python, command, difference`` (the largest absolute
        difference of the mean and the two interval ends), one row per
        benchmark the Python call predicts.

    Raises
    ------
    ValueError
        The command predicts other benchmarks than the Python call.
    """
    cmd = (pd.read_csv(io.StringIO(command)) if isinstance(command, str) else command).set_index("benchmark")
    if sorted(cmd.index) != sorted(python.index):
        raise ValueError(f"the command predicts {sorted(cmd.index)}, the Python call {sorted(python.index)}")
    cmd = cmd.loc[python.index]
    diff = np.max(np.abs(np.c_[cmd["predicted"] - python["mean"], cmd["lower"] - python["lower"],
                               cmd["upper"] - python["upper"]]), axis=1)
    return pd.DataFrame({"benchmark": list(python.index), "Python": python["mean"].to_numpy(float),
                         "command": cmd["predicted"].to_numpy(float), "difference": diff})


def _calibration(coverage: pd.DataFrame, calib: pd.DataFrame, k_cov: int, inflated: bool) -> str:
    per = and_join(f"{r['matrix']} {num(r['coverage'], '.3f')}"
                   + (f" ({num(r['coverage inflated'], '.3f')} inflated)" if inflated else "")
                   for _, r in coverage.iterrows())
    gap = float(calib["gap"].abs().mean())
    under = float((calib["gap"] < 0).mean())
    text = [f"The nominal 90% intervals at *k* = {k_cov} (mean over the selection methods) cover {per}.",
            f"Over every (matrix, method, *k*, level) cell the coverage is {num(gap, '.3f')} from the nominal "
            f"level on average, and {pct(under)} of the cells cover less than they should."]
    if inflated:
        gap_cal = float(calib["gap_cal"].abs().mean())
        worst = coverage.loc[coverage["largest gap inflated"].idxmax()]
        verdict = "closes" if gap_cal < gap else "does not close"
        text.append(f"The inflation fitted on the training folds {verdict} that gap on average "
                    f"({num(gap_cal, '.3f')} after it). It is one factor per method and *k*, so it cannot fix "
                    f"intervals that are off for some benchmarks only: its largest gap, "
                    f"{num(worst['largest gap inflated'], '.3f')} on {worst['matrix']}, is "
                    + ("larger" if worst["largest gap inflated"] > worst["largest gap"] else "not larger")
                    + f" than without it ({num(worst['largest gap'], '.3f')}).")
    return paragraph(*text)


def coincidence_sentence(groups: Sequence[tuple[str, Sequence[str]]]) -> str:
    """``"Lines on top of one another: ..."`` for :func:`~benchsel_lib.book.plotting.coinciding_lines`, or ``""``."""
    if not groups:
        return ""
    return "Lines that lie on top of one another (within 0.005): " + "; ".join(
        (f"{title}: " if title else "") + and_join(labels_) for title, labels_ in groups) + "."


def _caption(calib: pd.DataFrame, k: int, inflated: bool, groups: Sequence[tuple[str, Sequence[str]]]) -> str:
    """The reliability figure's caption: what is drawn, the largest gap before and after the inflation."""
    at = calib[calib["k"] == k]
    worst = at.loc[at["gap"].abs().idxmax()]
    text = [f"Empirical minus nominal coverage of the Gaussian intervals on the held-out models at *k* = {k}, one "
            "panel per matrix" + ("; dashed lines after the variance inflation." if inflated else "."),
            f"The largest gap is {signed(worst['gap'], '.3f')} ({METHOD_NAMES.get(worst['method'], worst['method'])}"
            f" selection on {worst['dataset']}, nominal {pct(worst['nominal'])})"
            + (";" if inflated else ".")]
    if inflated:
        cal = at.loc[at["gap_cal"].abs().idxmax()]
        text[-1] += (f" after the inflation it is {signed(cal['gap_cal'], '.3f')} "
                     f"({METHOD_NAMES.get(cal['method'], cal['method'])} selection on {cal['dataset']}, nominal "
                     f"{pct(cal['nominal'])}).")
    text.append(coincidence_sentence(groups))
    return paragraph(*text)


def _extrapolation(ex: pd.DataFrame, dataset: str, quantile: float) -> str:
    """What the extrapolation check found: R² and 90% coverage of the strongest models against a random split."""
    t = ex.set_index(["method", "split"])
    methods = [m for m in ("mi", "entropy", "random") if (m, "top") in t.index and (m, "random") in t.index]
    if not methods:
        return "The extrapolation check scored no held-out model in this run."
    lead = methods[0]
    top, rand = t.loc[(lead, "top")], t.loc[(lead, "random")]
    worse = [METHOD_NAMES[m] for m in methods if t.loc[(m, "top"), "r2"] < t.loc[(m, "random"), "r2"]]
    under = [METHOD_NAMES[m] for m in methods if t.loc[(m, "top"), "cov_90"] < t.loc[(m, "random"), "cov_90"]]
    return paragraph(
        f"Trained on the weaker {pct(quantile)} of {label(dataset)}'s models, {METHOD_NAMES[lead]} selection at "
        f"*k* = 5 predicts the strongest {pct(1 - quantile)} with R² = {num(top['r2'])} and 90% coverage "
        f"{num(top['cov_90'])}, against {num(rand['r2'])} and {num(rand['cov_90'])} on a random split of the same "
        "sizes.",
        f"R² is lower on the strongest models with {and_join(worse) if worse else 'no'} selection "
        f"({len(worse)} of {len(methods)}), and the 90% intervals cover less there with "
        f"{and_join(under) if under else 'none'} ({len(under)} of {len(methods)}).",
        "A prediction for a model stronger than all of your matrix deserves less trust than its interval says."
        if under else "Here the strongest models are predicted as reliably as a random split.")


def _dual(dual: pd.DataFrame, dataset: str, k_dual: int, names: Sequence[str]) -> str:
    d = dual[dual["k"] == k_dual].set_index("method")["r2_mean"]
    methods = [m for m in ("mi", "entropy", "random") if m in d.index]
    return paragraph(
        f"On {label(dataset)} transposed, {count(k_dual, 'reference model')} chosen by MI ("
        + ", ".join(code(n) for n in names) + ") predict a held-out benchmark's scores on every other model with "
        "R² = " + ", ".join(f"{num(d[m])} ({METHOD_NAMES[m]} selection)" for m in methods) + ".")


def _answer(*, n_sel: int, cost: float, budget: float, demo: Mapping[str, Any], coverage: pd.DataFrame,
            k_cov: int, calib_datasets: Sequence[str], ex: pd.DataFrame, quantile: float, ex_dataset: str,
            agree: float | None, tol: float = 0.03) -> str:
    """The page's opening answer: the example's prediction, the intervals' coverage, the extrapolation's caution."""
    lo, hi = float(coverage["coverage"].min()), float(coverage["coverage"].max())
    cov = num(lo) if num(lo) == num(hi) else f"{num(lo)} to {num(hi)}"
    calibrated = bool((coverage["coverage"] - 0.9).abs().max() <= tol)
    parts = [
        f"In this page's example a new model runs the {count(n_sel, 'benchmark')} that a budget of "
        f"{num(budget, 'g')} allows (cost {num(cost, 'g')}); its other {demo['n']} scores are predicted with a mean "
        f"absolute error of {num(demo['mae'], '.3f')}, {demo['inside']} of them inside their 90% intervals.",
        f"Under the paper's cross-validation protocol those intervals cover {cov} of the held-out scores at "
        f"*k* = {k_cov} on {labels(calib_datasets)}: "
        + (f"within {num(tol)} of the nominal 90%, so they can be trusted there." if calibrated else
           f"more than {num(tol)} from the nominal 90% on at least one matrix, so read them with care.")]
    t = ex.set_index(["method", "split"])
    lead = next((m for m in ("mi", "entropy", "random") if (m, "top") in t.index and (m, "random") in t.index), None)
    if lead is not None:
        top, rand = t.loc[(lead, "top")], t.loc[(lead, "random")]
        worse = top["r2"] < rand["r2"]
        parts.append(f"{'One caution' if worse else 'Extrapolation'}: trained on the weaker models of "
                     f"{label(ex_dataset)}, the predictions of the strongest {pct(1 - quantile)} reach R² "
                     f"{num(top['r2'])} against {num(rand['r2'])} for a random split of the same sizes, with 90% "
                     f"coverage {num(top['cov_90'])} against {num(rand['cov_90'])}.")
    if agree is not None:
        parts.append("The `benchsel` command gives " + ("identical predictions to the Python calls." if agree == 0
                                                        else f"the same predictions as the Python calls (largest "
                                                             f"difference {num(agree, '.1e')})."))
    return paragraph(*parts)


def prose(
    *,
    selection: Any,
    budget: float,
    cost: float,
    mandatory: Sequence[str],
    demo: Mapping[str, Any],
    calib: pd.DataFrame,
    coverage: pd.DataFrame,
    k_cov: int,
    extrapolation: pd.DataFrame,
    dual: pd.DataFrame,
    k_dual: int,
    reference_models: Sequence[str],
    calib_datasets: Sequence[str],
    extrapolation_dataset: str,
    extrapolation_quantile: float,
    dual_dataset: str,
    agreement: pd.DataFrame | None = None,
    same_selection: bool | None = None,
    figure: Any = None,
) -> PageProse:
    """The page's passages, written from the results of the worked example.

    Parameters
    ----------
    selection : Selection
        The budgeted selection (``strategy``, ``names``, ``residual_fraction``).
    budget, cost : float
        The budget and the total cost of the selection.
    mandatory : list of str
        Benchmarks selected first.
    demo : mapping
        ``{"inside": int, "n": int, "mae": float}`` of the single-model prediction.
    calib, coverage : DataFrame
        ``calibration_table`` rows of every calibration matrix (``dataset`` column) and :func:`coverage_summary`.
    k_cov : int
        Subset size of the quoted coverage.
    extrapolation : DataFrame
        ``extrapolation_check`` rows at k = 5.
    dual : DataFrame
        ``summarize_cv`` of the transposed matrix; ``k_dual`` the number of reference models quoted.
    reference_models : list of str
        The reference models MI selects on the whole transposed matrix.
    calib_datasets, extrapolation_dataset, extrapolation_quantile, dual_dataset :
        What the run computed.
    agreement : DataFrame, optional
        :func:`command_agreement` of the command's prediction (None: the commands were not run).
    same_selection : bool, optional
        Whether the command selected the same benchmarks as the Python call.
    figure : Figure, optional
        The reliability figure (``plot_reliability(..., gap=True)``), whose
        coinciding lines the caption names.

    Returns
    -------
    PageProse
        Passages ``answer``, ``selection_md``, ``demo_md``, ``calibration_md``, ``calib_caption``,
        ``extrapolation_md``, ``dual_md``, ``command_md``.
    """
    ran = list(dict.fromkeys([*calib_datasets, extrapolation_dataset, dual_dataset]))
    k_sel = len(selection.names)
    resid = float(selection.residual_fraction[k_sel - 1])
    won = ("the cost-effective greedy (gain per unit of cost) won" if selection.strategy == "cost-effective"
           else "the best single benchmark won over the cost-effective greedy")
    first = and_join(code(b) for b in mandatory)
    selection_md = paragraph(
        f"With {first} chosen first, the budget of {num(budget, 'g')} buys {count(k_sel, 'benchmark')} (total cost "
        f"{num(cost, 'g')}); {won}. Together they leave {pct(resid, 1)} of the variance of the matrix's "
        "standardized scores unexplained.")
    demo_md = paragraph(
        f"{demo['inside']} of the {demo['n']} true scores fall inside their 90% intervals, and the predictions miss "
        f"by {num(demo['mae'], '.3f')} on average, in the benchmarks' own units.",
        "One model proves little about the intervals; the next section measures their coverage on many.")
    inflated = "coverage_cal" in calib.columns and calib["coverage_cal"].notna().any()
    calibration_md = _calibration(coverage, calib, k_cov, inflated)
    from ..plotting import coinciding_lines

    calib_caption = _caption(calib, k_cov, inflated, coinciding_lines(figure) if figure is not None else [])
    extrapolation_md = _extrapolation(extrapolation, extrapolation_dataset, extrapolation_quantile)
    dual_md = _dual(dual, dual_dataset, k_dual, reference_models)
    agree = None if agreement is None else float(agreement["difference"].max())
    if agreement is None:
        command_md = "The commands were not run here."
    else:
        command_md = paragraph(
            ("The command selects the same benchmarks as the Python call." if same_selection else
             "The command selects other benchmarks than the Python call.") if same_selection is not None else "",
            f"Its predictions of the {count(len(agreement), 'benchmark')} left "
            + ("are identical to the Python call's" if agree == 0 else
               f"differ from the Python call's by at most {num(agree, '.1e')}")
            + " (mean and both interval ends): the command builds the same pipeline.")
    answer = _answer(n_sel=k_sel, cost=cost, budget=budget, demo=demo, coverage=coverage, k_cov=k_cov,
                     calib_datasets=calib_datasets, ex=extrapolation, quantile=extrapolation_quantile, ex_dataset=extrapolation_dataset, agree=agree)
    return PageProse(ran, {"answer": answer, "selection_md": selection_md, "demo_md": demo_md,
                           "calibration_md": calibration_md, "calib_caption": calib_caption,
                           "extrapolation_md": extrapolation_md,
                           "dual_md": dual_md, "command_md": command_md})
