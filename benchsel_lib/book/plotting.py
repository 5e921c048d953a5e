"""Figures of the paper, drawn with matplotlib for the book's notebooks.

Every function builds a new :class:`matplotlib.figure.Figure` directly (no
``pyplot`` state: nothing is registered with pyplot, so figures are never shown
twice or leaked) and returns it.  In a notebook, make the figure the last
expression of a cell (or ``display(fig)``, or ``myst_nb.glue("name", fig)``) and the
inline backend renders it; ``fig.savefig(path)`` works everywhere.  The backend is
never changed here.

Inputs are the tables the library produces:

* CV summaries: :func:`benchsel_lib.protocol.summaries.summarize_cv` output (columns
  ``pipeline, holdout, k, r2_mean, r2_sd, residual_fraction_mean, ..., mi_sd``);
* selection positions: :func:`benchsel_lib.studies.diagnostics.selection_positions`
  (``benchmark, fold, position``);
* Shapiro-Wilk tables: :func:`benchsel_lib.studies.diagnostics.shapiro_wilk_table`
  (``W``, ``reject``);
* the overlap network: :func:`benchsel_lib.data.canonical.overlap_network`;
* calibration: :func:`benchsel_lib.protocol.summaries.calibration_table`.

Bad input (missing columns, empty tables) raises ``ValueError`` naming the problem.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from matplotlib import colormaps, rc_context
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

from .._checks import check_int

__all__ = [
    "METHOD_COLORS",
    "METHOD_LABELS",
    "plot_eigenspectrum",
    "plot_cv_curves",
    "plot_entropy_vs_mi",
    "plot_selection_stability",
    "plot_normality",
    "plot_qq",
    "plot_overlap_network",
    "plot_reliability",
    "plot_imputer_comparison",
]

#: Font sizes (points) of every figure. The book's text column shows a figure about 540 px wide (a
#: 1280 px window), i.e. a 7-inch, 100-dpi figure at 77% of its size: 10-11 pt stay at 11-12 px on screen.
FONTS = {"font.size": 11, "axes.titlesize": 11, "axes.labelsize": 11, "xtick.labelsize": 10,
         "ytick.labelsize": 10, "legend.fontsize": 10, "figure.titlesize": 12}
#: Width (inches) of a full-width figure.
WIDTH = 7.0

_F = TypeVar("_F", bound=Callable[..., Figure])


def _readable(func: _F) -> _F:
    """Draw the figure under :data:`FONTS` (artists keep the sizes they were created with)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Figure:
        with rc_context(FONTS):
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _panel_grid(n: int, *, row_height: float, ncols: int = 2, sharey: bool = False) -> tuple[Figure, list[Any]]:
    """A full-width figure with ``n`` panels, at most ``ncols`` per row (unused cells removed)."""
    ncols = max(1, min(ncols, n))
    nrows = -(-n // ncols)
    fig = Figure(figsize=(WIDTH, row_height * nrows + 0.8), layout="constrained")
    grid = fig.subplots(nrows, ncols, sharey=sharey, squeeze=False).ravel()
    for ax in grid[n:]:
        fig.delaxes(ax)
    return fig, list(grid[:n])


def _legend_below(fig: Figure, handles: list[Any], labels: list[str], *, ncol: int | None = None) -> None:
    """One legend for the whole figure, under the panels (outside every data area)."""
    if not handles:
        return
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol or min(len(labels), 3), frameon=False)


def _dataset_groups(df: pd.DataFrame) -> list[tuple[Any, pd.DataFrame]]:
    """``(dataset, rows)`` per dataset in order of appearance; ``[("", df)]`` without a ``dataset`` column."""
    return list(df.groupby("dataset", sort=False)) if "dataset" in df.columns else [("", df)]


def _legend_entries(axes: Sequence[Any], legend: dict[str, Any] | None = None) -> dict[str, Any]:
    """Label -> handle of the labelled artists of ``axes``, the first handle of each label kept.

    Parameters
    ----------
    axes : sequence of Axes
    legend : dict, optional
        Entries gathered so far, completed in place (default: a new dict).

    Returns
    -------
    dict
        ``legend`` with the new labels added, in order of first appearance.
    """
    legend = {} if legend is None else legend
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    return legend


METHOD_COLORS = {"entropy": "#1f77b4", "mi": "#d62728", "random": "#7f7f7f"}
METHOD_LABELS = {"entropy": "Entropy (greedy)", "mi": "MI (greedy)", "random": "Random"}


def _require_columns(df: Any, columns: Sequence[str], what: str) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"{what} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} lacks the column(s) {missing}; it has {list(df.columns)}")
    if df.empty:
        raise ValueError(f"{what} is empty")
    return df


def _values(df: pd.DataFrame, col: str) -> np.ndarray:
    return df[col].to_numpy(dtype=float) if col in df.columns else np.full(len(df), np.nan)


def _style_k_panels(axes: Any, panels: Sequence[tuple[str, str, bool]]) -> None:
    """Label the x axis with k, set each panel's y label and log scale, add a grid."""
    for ax, (_metric, ylabel, log) in zip(axes, panels):
        ax.set_xlabel("number of selected benchmarks $k$")
        ax.set_ylabel(ylabel)
        if log:
            _log_y(ax)
        ax.grid(True, alpha=0.3)


def _log_y(ax: Any) -> None:
    """Log-scaled y axis with labels at the decades only (minor labels crowd a narrow panel)."""
    ax.set_yscale("log")
    ax.yaxis.set_minor_formatter(NullFormatter())


def _band(ax: Any, x: np.ndarray, mean: np.ndarray, sd: np.ndarray, color: str, *, log: bool = False) -> None:
    if np.all(np.isnan(sd)):
        return
    lo, hi = mean - sd, mean + sd
    if log:  # a +-sd band can cross zero; keep it positive on a log axis
        lo = np.where(lo > 0, lo, np.nan)
    ax.fill_between(x, lo, hi, color=color, alpha=0.15, linewidth=0)


def _fmt_holdout(h: float) -> str:
    return f"{100 * float(h):g}% holdout"


# ---------------------------------------------------------------------------- Figure 1
@_readable
def plot_eigenspectrum(
    spectra: Mapping[str, Any],
    *,
    levels: Sequence[float] = (0.9, 0.95, 0.99),
    max_k: int | None = None,
    title: str = "Residual variance fraction of the correlation matrix",
    styles: Mapping[str, Mapping[str, Any]] | None = None,
    legend: str = "inside",
    minor_labels: bool = False,
) -> Figure:
    """Figure 1: residual variance fraction ``1 - rho(k)`` on a log scale.

    Parameters
    ----------
    spectra : mapping name -> Eigenspectrum or array_like
        Per matrix either an :class:`~benchsel_lib.studies.diagnostics.Eigenspectrum`
        (its ``residual`` attribute, ``1 - rho(k)`` for k = 1..N, is used) or the
        residual-fraction array itself.
    levels : sequence of float, default (0.9, 0.95, 0.99)
        Explained-variance levels; a dashed line is drawn at ``1 - level``
        (10%, 5%, 1% residual).
    max_k : int, optional
        Truncate the x axis.
    title : str
    styles : mapping name -> dict, optional
        Keyword arguments of ``Axes.plot`` per line (``color``, ``linestyle``),
        e.g. to draw two spectra of one matrix in one colour, solid and dashed.
    legend : {"inside", "below"}
        The legend in the axes (matplotlib's best place) or under the figure,
        clear of the curves and of the level labels.
    minor_labels : bool
        Label the log axis in plain numbers, with its minor ticks too when the
        view spans fewer than three decades (:func:`_plain_log_labels`).

    Returns
    -------
    matplotlib.figure.Figure
        One axes, one line per matrix plus one dashed line per level.

    Notes
    -----
    ``rho(k) = sum_{j<=k} lambda_j / tr(R)`` (Section 5.2). Exact zeros (rank
    deficiency) cannot be drawn on a log axis and are left out. O(sum N).
    """
    if not isinstance(spectra, Mapping) or not spectra:
        raise ValueError("spectra must be a non-empty mapping name -> Eigenspectrum or residual array")
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    for name, spec in spectra.items():
        resid = np.asarray(getattr(spec, "residual", spec), dtype=float).ravel()
        if resid.size == 0:
            raise ValueError(f"spectrum {name!r} is empty")
        k = np.arange(1, resid.size + 1)
        if max_k is not None:
            k, resid = k[:max_k], resid[:max_k]
        y = np.where(resid > 0, resid, np.nan)
        ax.plot(k, y, **{"marker": "o", "markersize": 3, **dict((styles or {}).get(name, {}))}, label=str(name))
    for level in levels:
        if not 0 < level < 1:
            raise ValueError(f"levels must lie in (0, 1), got {level!r}")
        ax.axhline(1 - level, color="black", linestyle="--", linewidth=0.8, alpha=0.7)
        ax.annotate(f"{100 * level:g}% explained", xy=(1.0, 1 - level), xycoords=("axes fraction", "data"),
                    xytext=(-4, 3), textcoords="offset points", ha="right", va="bottom", fontsize=9)
    ax.set_yscale("log")
    ax.set_xlabel("number of components $k$")
    ax.set_ylabel(r"residual variance fraction $1-\rho(k)$")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if minor_labels:
        _plain_log_labels(ax)
    if legend == "below":
        handles, labels = ax.get_legend_handles_labels()
        _legend_below(fig, handles, labels, ncol=4)
    else:
        ax.legend()
    return fig


# ---------------------------------------------------------------------------- Figures 2-4
def _plain_log_labels(ax: Any) -> None:
    """Label a log y axis in plain numbers (``0.2``, ``0.5``, ``1``), with minor labels on a short axis.

    With fewer than three decades inside the view, a log axis labelled at
    the decades only shows two labels or fewer; then the minor ticks at 2,
    3 and 5 (2 and 5 when the axis spans more than a decade) are labelled
    too. O(1).
    """
    lo, hi = sorted(ax.get_ylim())
    if lo <= 0 or not np.isfinite(hi):
        return
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))
    if np.floor(np.log10(hi)) - np.ceil(np.log10(lo)) + 1 >= 3:
        return
    subs = (2, 3, 5) if np.log10(hi / lo) < 1 else (2, 5)

    def minor(value: float, _pos: Any) -> str:
        lead = value / 10 ** np.floor(np.log10(value) + 1e-9)
        return f"{value:g}" if any(abs(lead - s) < 1e-6 for s in subs) else ""

    ax.yaxis.set_minor_formatter(FuncFormatter(minor))


_VARIANT_STYLES = (("#9467bd", ":", "s"), ("#ff7f0e", "-.", "^"), ("#2ca02c", (0, (5, 1.5)), "v"),
                   ("#8c564b", (0, (1, 2)), "D"))


def _variant_lines(ax: Any, variants: pd.DataFrame, names: Mapping[str, str], legend: dict[str, Any],
                   holdout: float | None) -> None:
    """One line per variant on ``ax``, markers set side by side so that coinciding variants stay visible."""
    value = "r2_mean" if "r2_mean" in variants.columns else "r2"
    v = variants
    if holdout is not None and "holdout" in v.columns:
        v = v[np.isclose(v["holdout"].astype(float), float(holdout))]
    shown = [n for n in names if n in set(v["variant"])]
    for i, name in enumerate(shown):
        sub = v[v["variant"] == name].groupby("k")[value].mean().sort_index()
        color, ls, marker = _VARIANT_STYLES[i % len(_VARIANT_STYLES)]
        offset = 0.22 * (i - (len(shown) - 1) / 2)
        (line,) = ax.plot(sub.index.to_numpy(dtype=float) + offset, sub.to_numpy(), color=color, linestyle=ls,
                          marker=marker, markersize=3.5, markerfacecolor="none", linewidth=1.1)
        legend.setdefault(names[name], line)


def _variant_band(variants: pd.DataFrame) -> pd.DataFrame:
    value = "r2_mean" if "r2_mean" in variants.columns else "r2"
    _require_columns(variants, ["k", value], "variants")
    keys = ["holdout", "k"] if "holdout" in variants.columns else ["k"]
    return variants.groupby(keys)[value].agg(["min", "max"]).reset_index()


#: The panels of a row of :func:`plot_cv_curves`: (metric, y label, log scale).
_CV_PANELS = (("r2", "$R^2$", False), ("residual_fraction", "residual variance", True),
              ("logdet", r"$\log\det \Sigma_{AA}$", False))
#: The column titles of :func:`plot_cv_curves`.
_CV_TITLES = ("imputation $R^2$", "residual variance", r"entropy $\log\det\Sigma_{AA}$")


def _pipeline_at(df: pd.DataFrame, pipeline: str, holdout: float) -> pd.DataFrame:
    """Rows of ``pipeline`` at ``holdout``, sorted by ``k``."""
    return df[(df["pipeline"] == pipeline) & np.isclose(df["holdout"].astype(float), float(holdout))].sort_values("k")


def _draw_pipeline_curves(row: Sequence[Any], sub: pd.DataFrame, pipeline: str, legend: dict[str, Any]) -> None:
    """One pipeline's mean curves, with +-1 sd bands, on the panels of one row of :func:`plot_cv_curves`.

    Parameters
    ----------
    row : sequence of Axes
        The row's panels, in the order of :data:`_CV_PANELS`.
    sub : DataFrame
        The pipeline's rows at the row's holdout, sorted by ``k``.
    pipeline : str
        Greedy pipelines are drawn solid with markers, ``"random"`` dashed.
    legend : dict
        Legend label -> handle; the pipeline's first line is added.
    """
    color = METHOD_COLORS.get(pipeline)
    x = sub["k"].to_numpy(dtype=float)
    for ax, (metric, _, log) in zip(row, _CV_PANELS):
        mean = _values(sub, f"{metric}_mean")
        if np.all(np.isnan(mean)):
            continue
        (line,) = ax.plot(x, mean, linestyle="--" if pipeline == "random" else "-", color=color,
                          marker="o" if pipeline != "random" else None, markersize=3)
        legend.setdefault(METHOD_LABELS.get(pipeline, pipeline), line)
        _band(ax, x, mean, _values(sub, f"{metric}_sd"), color or "black", log=log)


def _draw_cv_pipelines(row: Sequence[Any], df: pd.DataFrame, holdout: float, pipelines: Sequence[str],
                     legend: dict[str, Any]) -> int:
    """Draw each pipeline's curves at ``holdout`` on one row; return how many pipelines have rows there."""
    drawn = 0
    for pipeline in pipelines:
        sub = _pipeline_at(df, pipeline, holdout)
        if sub.empty:
            continue
        drawn += 1
        _draw_pipeline_curves(row, sub, pipeline, legend)
    return drawn


def _hatch_variant_band(ax: Any, band: pd.DataFrame, holdout: float, label: str, legend: dict[str, Any]) -> None:
    """Hatch the min-max band of the variants at ``holdout`` on ``ax`` (nothing when the band has no rows there)."""
    b = band if "holdout" not in band.columns else band[np.isclose(band["holdout"].astype(float), float(holdout))]
    if b.empty:
        return
    b = b.sort_values("k")
    patch = ax.fill_between(b["k"], b["min"], b["max"], facecolor="none", hatch="///",
                            edgecolor=METHOD_COLORS["entropy"], linewidth=0.0, alpha=0.6)
    legend.setdefault(label, patch)


def _style_cv_row(row: Sequence[Any], holdout: float) -> None:
    """Log scale where the panel asks for it, a grid, and the holdout named on the row's R^2 axis."""
    for ax, (_, _, log) in zip(row, _CV_PANELS):
        if log:
            _log_y(ax)
        ax.grid(True, alpha=0.3)
    row[0].set_ylabel(f"{_fmt_holdout(holdout)}\n$R^2$")


def _label_cv_grid(grid: np.ndarray, *, plain_log_labels: bool, r2_ylim: tuple[float, float] | None) -> None:
    """The ``k`` axis under the last row, column titles over the first, and the options of the y axes."""
    for ax in grid[-1]:
        ax.set_xlabel("selected benchmarks $k$")
    for ax, name in zip(grid[0], _CV_TITLES):
        ax.set_title(name)
    if plain_log_labels:
        for ax in grid[:, 1]:
            _plain_log_labels(ax)
    if r2_ylim is not None:
        grid[0][0].set_ylim(*r2_ylim)  # shared by the column


@_readable
def plot_cv_curves(
    summary_df: pd.DataFrame,
    *,
    title: str = "",
    pipelines: Sequence[str] = ("entropy", "random"),
    holdouts: Sequence[float] | None = None,
    variants: pd.DataFrame | None = None,
    variant_label: str = "entropy: range over first picks",
    variant_lines: Mapping[str, str] | None = None,
    plain_log_labels: bool = False,
    r2_ylim: tuple[float, float] | None = None,
) -> Figure:
    """Figures 2-4: R^2, residual variance fraction and entropy vs subset size, one row per holdout.

    Parameters
    ----------
    summary_df : DataFrame
        ``summarize_cv`` output (``pipeline, holdout, k, r2_mean, r2_sd,
        residual_fraction_mean/_sd, logdet_mean/_sd``).
    title : str
        Figure title (e.g. ``"MTEB (263 x 56, 77.3% observed)"``).
    pipelines : sequence of str, default ("entropy", "random")
        Greedy pipelines are drawn solid with markers, ``"random"`` dashed; one
        colour per pipeline.
    holdouts : sequence of float, optional
        Holdout fractions to draw (default: all in ``summary_df``), one row of
        panels each, so that every panel compares the pipelines at one holdout.
    variants : DataFrame, optional
        Tie-break / first-pick variants of the greedy method: a long
        table with ``k`` and ``r2_mean`` (or ``r2``) and optionally ``holdout``,
        one row per (variant, k); its min-max range is shaded (hatched) on the
        R^2 panel of each holdout it has.
    variant_label : str
        Legend label of that band.
    variant_lines : mapping of str to str, optional
        Instead of the hatched band, draw these variants (``variant`` column
        of ``variants`` -> legend label) as lines of their own on the R^2
        panel, each in its own colour, line style and marker, the markers of
        the variants set side by side along ``k`` so that variants that
        coincide stay visible.
    plain_log_labels : bool
        Label the residual-variance axis in plain numbers, with minor tick
        labels where fewer than two decades are in view (default: decades only).
    r2_ylim : (float, float), optional
        Limits of the R^2 axis (default: matplotlib's, which make room for
        the whole +-1 sd bands); bands beyond them are clipped.

    Returns
    -------
    matplotlib.figure.Figure
        ``len(holdouts)`` rows x 3 columns (R^2; residual variance, semilog;
        entropy = log det), +-1 sd bands across folds; y axes shared within a
        column, so rows compare at a glance; one legend under the panels.

    Notes
    -----
    O(rows of ``summary_df``).
    """
    df = _require_columns(summary_df, ["pipeline", "holdout", "k", "r2_mean"], "summary_df")
    holdouts = sorted(df["holdout"].unique()) if holdouts is None else list(holdouts)
    if not holdouts:
        raise ValueError("holdouts is empty")
    fig = Figure(figsize=(WIDTH, 2.1 * len(holdouts) + 0.9), layout="constrained")
    grid = np.atleast_2d(fig.subplots(len(holdouts), 3, sharex=True, sharey="col", squeeze=False))
    if variant_lines is not None and (variants is None or "variant" not in variants.columns):
        raise ValueError("variant_lines needs variants with a 'variant' column")
    band = _variant_band(variants) if variants is not None and variant_lines is None else None
    legend: dict[str, Any] = {}
    drawn = 0
    for row, h in zip(grid, holdouts):
        drawn += _draw_cv_pipelines(row, df, h, pipelines, legend)
        if band is not None:
            _hatch_variant_band(row[0], band, h, variant_label, legend)
        if variant_lines is not None:
            _variant_lines(row[0], variants, variant_lines, legend, float(h))
        _style_cv_row(row, h)
    if drawn == 0:
        raise ValueError(f"summary_df has no rows for pipelines {list(pipelines)} and holdouts {holdouts}")
    _label_cv_grid(grid, plain_log_labels=plain_log_labels, r2_ylim=r2_ylim)
    _legend_below(fig, list(legend.values()), list(legend.keys()))
    if title:
        fig.suptitle(title)
    return fig


# ---------------------------------------------------------------------------- Figures 5-7
@_readable
def plot_entropy_vs_mi(
    summary_df: pd.DataFrame,
    *,
    title: str = "",
    holdout: float = 0.1,
    pipelines: Sequence[str] = ("entropy", "mi", "random"),
    plain_log_labels: bool = False,
    r2_ylim: tuple[float, float] | None = None,
    bands: bool = True,
) -> Figure:
    """Figures 5-7: entropy vs MI vs random selection at one holdout.

    Parameters
    ----------
    summary_df : DataFrame
        ``summarize_cv`` output with ``r2, residual_fraction, mi`` means/sds.
    title : str
    holdout : float, default 0.1
    pipelines : sequence of str, default ("entropy", "mi", "random")
    plain_log_labels : bool
        Label the residual-variance axis in plain numbers, with minor tick
        labels where fewer than two decades are in view (default: decades only).
    r2_ylim : (float, float), optional
        Limits of the R^2 axis (default: matplotlib's); bands beyond them are clipped.
    bands : bool
        Shade +-1 sd over the folds (off: the lines alone, readable where the bands overlap).

    Returns
    -------
    matplotlib.figure.Figure
        Three axes: R^2, residual variance fraction (log), mutual information
        ``I(X_A; X_rest)`` vs k; one line per pipeline (random gray dashed), +-1 sd bands.

    Notes
    -----
    O(rows of ``summary_df``).
    """
    df = _require_columns(summary_df, ["pipeline", "holdout", "k", "r2_mean"], "summary_df")
    df = df[np.isclose(df["holdout"].astype(float), float(holdout))]
    if df.empty:
        raise ValueError(f"summary_df has no rows for holdout {holdout}")
    fig = Figure(figsize=(WIDTH, 3.3), layout="constrained")
    axes = fig.subplots(1, 3)
    panels = [("r2", "imputation $R^2$", False), ("residual_fraction", "residual variance fraction", True),
              ("mi", r"$I(X_A; X_{V\setminus A})$", False)]
    drawn = 0
    for m in pipelines:
        sub = df[df["pipeline"] == m].sort_values("k")
        if sub.empty:
            continue
        drawn += 1
        color = METHOD_COLORS.get(m, None) or f"C{drawn}"
        ls = "--" if m == "random" else "-"
        x = sub["k"].to_numpy(dtype=float)
        for ax, (metric, _, log) in zip(axes, panels):
            mean = _values(sub, f"{metric}_mean")
            if np.all(np.isnan(mean)):
                continue
            ax.plot(x, mean, linestyle=ls, color=color, marker="o" if m != "random" else None, markersize=3,
                    label=METHOD_LABELS.get(m, m))
            if bands:
                _band(ax, x, mean, _values(sub, f"{metric}_sd"), color, log=log)
    if drawn == 0:
        raise ValueError(f"summary_df has no rows for pipelines {list(pipelines)}")
    _style_k_panels(axes, panels)
    for ax in axes:
        ax.set_xlabel("$k$")
    axes[0].set_title("imputation $R^2$")
    axes[1].set_title("residual variance")
    axes[2].set_title("MI with the rest")
    if plain_log_labels:
        _plain_log_labels(axes[1])
    if r2_ylim is not None:
        axes[0].set_ylim(*r2_ylim)
    handles, labels = axes[0].get_legend_handles_labels()
    _legend_below(fig, handles, labels)
    fig.suptitle(f"{title} ({_fmt_holdout(holdout)})" if title else _fmt_holdout(holdout))
    return fig


# ---------------------------------------------------------------------------- Figures 9-11
@_readable
def plot_selection_stability(
    positions_df: pd.DataFrame,
    *,
    title: str = "",
    top: int = 15,
    n_folds: int | None = None,
    max_benchmarks: int | None = None,
) -> Figure:
    """Figures 9-11: selection position of each benchmark across CV folds.

    Parameters
    ----------
    positions_df : DataFrame
        ``selection_positions`` output: ``benchmark, fold, position`` (1-based).
    title : str
    top : int, default 15
        The right margin counts the folds in which the benchmark is among the
        first ``top`` picks.
    n_folds : int, optional
        Default ``positions_df.attrs["n_folds"]`` or the number of distinct folds.
    max_benchmarks : int, optional
        Rows shown (benchmarks sorted by mean position). Default: every
        benchmark that is in the top ``top`` in at least one fold.

    Returns
    -------
    matplotlib.figure.Figure
        One axes: a dot per (benchmark, fold) at its position, the mean as a red
        diamond, ``c/n`` (folds in the top ``top``) in the right margin; the most
        often early benchmark is at the top.

    Notes
    -----
    O(rows of ``positions_df`` + B log B) for B benchmarks.
    """
    df = _require_columns(positions_df, ["benchmark", "fold", "position"], "positions_df")
    check_int(top, "top")
    n_folds = n_folds or df.attrs.get("n_folds") or int(df["fold"].nunique())
    stats = df.groupby("benchmark")["position"].agg(mean="mean", n_top=lambda p: int((p <= top).sum()))
    stats = stats.sort_values(["mean", "n_top"], ascending=[True, False])
    if max_benchmarks is None:
        stats = stats[stats["n_top"] > 0]
    else:
        stats = stats.head(int(max_benchmarks))
    if stats.empty:
        raise ValueError(f"no benchmark is among the first {top} picks of any fold")
    order = list(stats.index)
    ypos = {b: i for i, b in enumerate(order)}
    fig = Figure(figsize=(WIDTH, 0.28 * len(order) + 1.6), layout="constrained")
    ax = fig.add_subplot()
    shown = df[df["benchmark"].isin(ypos)]
    ax.scatter(shown["position"], shown["benchmark"].map(ypos), s=18, color="#1f77b4", alpha=0.45,
               label="position in a fold")
    ax.scatter(stats["mean"], np.arange(len(order)), marker="D", s=36, color="red", zorder=3, label="mean position")
    for b, row in stats.iterrows():
        ax.annotate(f"{int(row['n_top'])}/{n_folds}", xy=(1.0, ypos[b]), xycoords=("axes fraction", "data"),
                    xytext=(6, 0), textcoords="offset points", va="center", fontsize=9)
    ax.set_yticks(np.arange(len(order)), labels=order, fontsize=9)
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.axvline(top + 0.5, color="black", linestyle=":", linewidth=0.8)
    ax.set_xlabel(f"selection position (folds in top {top} at right)")
    ax.grid(True, axis="x", alpha=0.3)
    _legend_below(fig, *ax.get_legend_handles_labels())
    ax.set_title(title or "Selection order across folds")
    return fig


# ---------------------------------------------------------------------------- Figure 12
@_readable
def plot_normality(tables: Mapping[str, pd.DataFrame], *, bins: int = 20, alpha: float = 0.05,
                   reference: Mapping[str, float] | None = None, correction: str = "BH") -> Figure:
    """Figure 12: histogram of per-benchmark Shapiro-Wilk W statistics.

    Parameters
    ----------
    tables : mapping name -> DataFrame
        ``shapiro_wilk_table`` output per matrix (columns ``W`` and ``reject``;
        untested columns have missing W and are left out).
    bins : int, default 20
    alpha : float, default 0.05
        Only used in the title ("BH-corrected at α").
    reference : mapping name -> float, optional
        The paper's median W per panel name: with it, each panel also marks its
        own median W (solid line) and the paper's (dashed), where given.
    correction : str, default "BH"
        The correction's name in the title.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per matrix; rejected and not-rejected benchmarks stacked,
        title ``name: r of n reject``; one legend below the panels.

    Notes
    -----
    O(total rows).
    """
    if not isinstance(tables, Mapping) or not tables:
        raise ValueError("tables must be a non-empty mapping name -> shapiro_wilk_table DataFrame")
    fig, axes = _panel_grid(len(tables), row_height=2.8)
    legend: dict[str, Any] = {}
    for ax, (name, t) in zip(axes, tables.items()):
        _require_columns(t, ["W", "reject"], f"tables[{name!r}]")
        tested = t[t["W"].notna()]
        w = tested["W"].to_numpy(dtype=float)
        rej = tested["reject"].astype(bool).to_numpy()
        edges = np.linspace(min(w.min(), 0.99) if w.size else 0.0, 1.0, bins + 1)
        ax.hist([w[rej], w[~rej]], bins=edges, stacked=True, color=["#d62728", "#1f77b4"],
                label=["rejected", "not rejected"])
        if reference is not None and w.size:
            ax.axvline(float(np.median(w)), color="black", linewidth=1.5, label="median W")
            if reference.get(name) is not None:
                ax.axvline(float(reference[name]), color="black", linewidth=1.5, linestyle="--",
                           label="paper's median W")
        ax.set_title(f"{name}: {int(rej.sum())} of {len(w)} reject")
        ax.set_xlabel("Shapiro-Wilk $W$")
        ax.set_ylabel("benchmarks")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
        for h, lab in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(lab, h)
    _legend_below(fig, list(legend.values()), list(legend.keys()), ncol=min(len(legend), 4))
    fig.suptitle(f"Normality per benchmark ({correction}-corrected at α = {alpha:g})")
    return fig


@_readable
def plot_qq(values: np.ndarray, *, title: str = "") -> Figure:
    """A normal Q-Q plot of one benchmark's observed scores (Appendix H): sorted scores against normal quantiles.

    Parameters
    ----------
    values : ndarray
        The observed scores (NaN are dropped).
    title : str

    Returns
    -------
    matplotlib.figure.Figure
        Small (4.5 x 3.2 in): the standardized ordered scores against the normal quantiles, and the line y = x
        that a Gaussian column follows. O(n log n).
    """
    from scipy import stats

    x = np.sort(np.asarray(values, dtype=float)[~np.isnan(values)])
    z = (x - x.mean()) / x.std(ddof=1)
    q = stats.norm.ppf((np.arange(1, x.size + 1) - 0.375) / (x.size + 0.25))
    fig = Figure(figsize=(4.5, 3.2), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(q, q, color="black", linewidth=0.8, label="Gaussian")
    ax.scatter(q, z, s=10, color="#1f77b4", alpha=0.7, label="scores")
    ax.set_xlabel("normal quantile")
    ax.set_ylabel("standardized score")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=9)
    ax.set_title(title, fontsize=10)
    return fig


# ---------------------------------------------------------------------------- Figure 8
@_readable
def plot_overlap_network(
    nodes: pd.DataFrame,
    edges: pd.DataFrame,
    *,
    min_label: int = 20,
    title: str = "Benchmark overlap network",
) -> Figure:
    """Figure 8: collections on a circle, edges weighted by shared models.

    Parameters
    ----------
    nodes : DataFrame
        Indexed by collection, with ``n_models`` (and optionally ``label``,
        ``category``), as returned by ``overlap_network``.
    edges : DataFrame
        ``source, target, shared`` (collections from ``nodes``' index).
    min_label : int, default 20
        Edges with at least this many shared models carry a count label.
    title : str

    Returns
    -------
    matplotlib.figure.Figure
        One axes (no networkx): node size grows with ``n_models`` (shown inside),
        edge width proportional to ``shared``.

    Notes
    -----
    O(nodes + edges).
    """
    _require_columns(nodes, ["n_models"], "nodes")
    if not isinstance(edges, pd.DataFrame):
        raise ValueError("edges must be a pandas DataFrame with columns source, target, shared")
    missing = [c for c in ("source", "target", "shared") if c not in edges.columns]
    if missing:
        raise ValueError(f"edges lacks the column(s) {missing}")
    names = list(nodes.index)
    n = len(names)
    angle = np.pi / 2 - 2 * np.pi * np.arange(n) / n
    pos = {c: (np.cos(a), np.sin(a)) for c, a in zip(names, angle)}
    fig = Figure(figsize=(WIDTH, WIDTH), layout="constrained")
    ax = fig.add_subplot()
    wmax = float(edges["shared"].max()) if len(edges) else 1.0
    for row in edges.itertuples(index=False):
        if row.source not in pos or row.target not in pos:
            raise ValueError(f"edge {row.source!r}-{row.target!r} names a collection not in nodes")
        if row.shared <= 0:
            continue
        (x0, y0), (x1, y1) = pos[row.source], pos[row.target]
        ax.plot([x0, x1], [y0, y1], color="#555555", alpha=0.55, linewidth=0.5 + 7 * row.shared / wmax, zorder=1)
        if row.shared >= min_label:
            ax.text((x0 + x1) / 2, (y0 + y1) / 2, str(int(row.shared)), fontsize=9, ha="center", va="center",
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8), zorder=2)
    sizes = nodes["n_models"].to_numpy(dtype=float)
    smax = max(sizes.max(), 1.0)
    labels = nodes["label"] if "label" in nodes.columns else pd.Series(names, index=nodes.index)
    for c, s in zip(names, sizes):
        x, y = pos[c]
        ax.scatter([x], [y], s=400 + 1600 * np.sqrt(s / smax), color="#aec7e8", edgecolor="#1f77b4", zorder=3)
        ax.text(x, y, str(int(s)), ha="center", va="center", fontsize=9, fontweight="bold", zorder=4)
        # outside the largest circle, aligned away from the centre so that no label covers a node
        ha = "left" if x > 0.3 else "right" if x < -0.3 else "center"
        va = "bottom" if y > 0.3 else "top" if y < -0.3 else "center"
        ax.text(1.2 * x, 1.2 * y, str(labels[c]), ha=ha, va=va, fontsize=10, zorder=4,
                bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.8))
    ax.set_xlim(-1.75, 1.75)
    ax.set_ylim(-1.45, 1.45)
    ax.set_aspect("equal")
    ax.set_axis_off()
    ax.set_title(title)
    return fig


# ---------------------------------------------------------------------------- calibration
def _coverage_shifts(d: pd.DataFrame, dodge: float) -> dict[tuple[Any, Any, str], float]:
    """Shift along the nominal axis of each line ``(pipeline, k, column)`` of a panel, centred on the true levels.

    A ``coverage_cal`` line is counted for every (pipeline, k) when the panel has
    any inflated coverage.
    """
    cal = "coverage_cal" in d.columns and d["coverage_cal"].notna().any()
    lines = [(m, k, col) for (m, k), _ in d.groupby(["pipeline", "k"], sort=True)
             for col in (("coverage", "coverage_cal") if cal else ("coverage",))]
    return {key: dodge * (i - (len(lines) - 1) / 2) for i, key in enumerate(lines)}


def _draw_coverage_lines(ax: Any, g: pd.DataFrame, pipeline: str, k: Any, *, marker: str,
                         shift: Mapping[tuple[Any, Any, str], float], gap: bool) -> None:
    """The coverage of one (pipeline, k), and its inflated coverage (dashed) where it has any.

    Parameters
    ----------
    ax : Axes
    g : DataFrame
        The rows of (pipeline, k), sorted by ``nominal``.
    pipeline, k
        The line's pipeline (its colour) and subset size (its label).
    marker : str
    shift : mapping
        :func:`_coverage_shifts` of the panel.
    gap : bool
        Draw the empirical minus the nominal coverage.
    """
    color = METHOD_COLORS.get(pipeline, None)
    for col in ("coverage", "coverage_cal"):
        if col == "coverage_cal" and not (col in g.columns and g[col].notna().any()):
            continue
        y = g[col].to_numpy(float) - (g["nominal"].to_numpy(float) if gap else 0.0)
        inflated = col == "coverage_cal"
        ax.plot(g["nominal"].to_numpy(float) + shift.get((pipeline, k, col), 0.0), y, marker=marker,
                color=color, linestyle="--" if inflated else "-", alpha=0.7 if inflated else 1.0,
                label=f"{METHOD_LABELS.get(pipeline, pipeline)}, k={k}" + (", inflated" if inflated else ""))


def _draw_coverage_panel(ax: Any, d: pd.DataFrame, *, gap: bool, dodge: float) -> int:
    """The ideal line and one line per (pipeline, k, coverage column) of one dataset; return the number of lines."""
    if gap:
        ax.axhline(0.0, color="black", linewidth=0.8, linestyle=":", label="ideal")
    else:
        ax.plot([0, 1], [0, 1], color="black", linewidth=0.8, linestyle=":", label="ideal")
    markers = dict(zip(sorted(d["k"].unique()), "osD^v<>"))
    shift = _coverage_shifts(d, dodge)
    for (m, k), g in d.groupby(["pipeline", "k"], sort=True):
        _draw_coverage_lines(ax, g.sort_values("nominal"), m, k, marker=markers.get(k, "o"), shift=shift, gap=gap)
    return len(shift)


def _set_coverage_axes(ax: Any, d: pd.DataFrame, *, gap: bool, dodge: float, n_lines: int) -> None:
    """Axis labels, limits and grid of a reliability panel.

    The gap view spans the nominal levels (padded for the dodged lines);
    otherwise both axes run to 1 from the lowest nominal level or coverage
    (0.4 at most).
    """
    ax.set_xlabel("nominal coverage")
    ax.set_ylabel("empirical $-$ nominal coverage" if gap else "empirical coverage")
    if gap:
        pad = max(dodge * n_lines, 0.02)
        ax.set_xlim(float(d["nominal"].min()) - pad, float(d["nominal"].max()) + pad)
    else:
        lo = float(min(d["nominal"].min(), d["coverage"].min(), 0.4))
        ax.set_xlim(lo, 1.0)
        ax.set_ylim(lo, 1.0)
    ax.grid(True, alpha=0.3)


@_readable
def plot_reliability(calib_df: pd.DataFrame, *, title: str = "Calibration of predictive intervals",
                     gap: bool = False, dodge: float = 0.0) -> Figure:
    """Reliability plot: nominal vs empirical coverage of the predictive intervals.

    Parameters
    ----------
    calib_df : DataFrame
        ``calibration_table`` output (``pipeline, k, nominal, coverage`` and
        optionally ``coverage_sd``, ``coverage_cal``); with a ``dataset`` column
        one panel is drawn per dataset.
    title : str
    gap : bool
        Draw the empirical minus the nominal coverage (a horizontal zero line
        is ideal), so that lines close to the diagonal are told apart.
    dodge : float
        Shift each line of a panel by a multiple of this along the nominal
        axis (centred on the true level), so that lines with the same values
        stay visible side by side; 0 draws them at the true levels.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per dataset (or one): the ideal line, one line per (pipeline, k);
        dashed lines for ``coverage_cal`` (after variance inflation) when present.

    Notes
    -----
    O(rows).
    """
    df = _require_columns(calib_df, ["pipeline", "k", "nominal", "coverage"], "calib_df")
    if not (np.isfinite(dodge) and dodge >= 0):
        raise ValueError(f"dodge must be a non-negative number, got {dodge!r}")
    groups = _dataset_groups(df)
    fig, axes = _panel_grid(len(groups), row_height=3.2)
    legend: dict[str, Any] = {}
    for ax, (name, d) in zip(axes, groups):
        n_lines = _draw_coverage_panel(ax, d, gap=gap, dodge=dodge)
        _set_coverage_axes(ax, d, gap=gap, dodge=dodge, n_lines=n_lines)
        ax.set_title(str(name) if name else title)
        _legend_entries([ax], legend)
    _legend_below(fig, list(legend.values()), list(legend.keys()), ncol=2)
    if len(groups) > 1:
        fig.suptitle(title)
    return fig


# ---------------------------------------------------------------------------- Figure 15
_SHORT_METHOD = {"entropy": "entropy", "mi": "MI", "random": "random"}
IMPUTER_COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#a6761d")
#: Marker of each series of :func:`plot_imputer_comparison`, in order.
_IMPUTER_SHAPES = ("o", "s", "^", "D", "v", "P")


def _imputer_rows_at(df: pd.DataFrame, holdout: float | None) -> pd.DataFrame:
    """The rows at ``holdout`` (all rows when it is None or there is no ``holdout`` column); none there is an error."""
    if holdout is not None and "holdout" in df.columns:
        df = df[np.isclose(df["holdout"].astype(float), float(holdout))]
        if df.empty:
            raise ValueError(f"summary_df has no rows for holdout {holdout}")
    return df


def _draw_imputer_series(ax: Any, sub: pd.DataFrame, i: int, n_series: int, *, offset: float, label: str,
                         legend: dict[str, Any]) -> None:
    """Series number ``i`` of a panel of :func:`plot_imputer_comparison`.

    Parameters
    ----------
    ax : Axes
    sub : DataFrame
        The series' rows in the panel, sorted by ``k``.
    i, n_series : int
        The series' position among all series (its colour, marker and
        offset; the first is solid with a +-1 sd band, the others dashed),
        and their number.
    offset : float
        Horizontal spacing of the series after the first.
    label : str
        Legend label; the series' first line is added to ``legend``.
    legend : dict
    """
    color = IMPUTER_COLORS[i % len(IMPUTER_COLORS)]
    x = sub["k"].to_numpy(dtype=float) + (offset * (i - n_series / 2) if i else 0.0)
    mean = sub["r2_mean"].to_numpy(dtype=float)
    single = len(sub) == 1
    (line,) = ax.plot(x, mean, color=color, linestyle="none" if single else ("-" if i == 0 else "--"),
                      marker=_IMPUTER_SHAPES[i % len(_IMPUTER_SHAPES)], markersize=6 if single else 3)
    legend.setdefault(label, line)
    if i == 0 and "r2_sd" in sub.columns:
        _band(ax, x, mean, sub["r2_sd"].to_numpy(dtype=float), color)


def _draw_imputer_panel(ax: Any, d: pd.DataFrame, pipeline: str, *, by: str, series: Sequence[Any],
                        names: Mapping[Any, str], offset: float, legend: dict[str, Any]) -> None:
    """One panel: every series of ``series`` (values of ``by``) that ``pipeline`` has rows for in ``d``."""
    for i, s in enumerate(series):
        sub = d[(d[by] == s) & (d["pipeline"] == pipeline)].sort_values("k")
        if sub.empty:
            continue
        _draw_imputer_series(ax, sub, i, len(series), offset=offset, label=str(names.get(s, s)), legend=legend)


@_readable
def plot_imputer_comparison(
    summary_df: pd.DataFrame,
    *,
    title: str = "Imputation $R^2$ by imputer",
    holdout: float | None = 0.1,
    pipelines: Sequence[str] = ("entropy", "mi", "random"),
    by: str = "imputer",
    names: Mapping[str, str] | None = None,
    offset: float = 0.0,
    ylims: Mapping[str, tuple[float, float]] | None = None,
) -> Figure:
    """Figure 15: imputation R^2 vs k per imputer, one panel per (dataset, selection method).

    Parameters
    ----------
    summary_df : DataFrame
        ``summarize_cv``-like table with a ``by`` column (``pipeline, k,
        r2_mean`` and optionally ``r2_sd``, ``holdout``); with a ``dataset``
        column one row of panels is drawn per dataset.
    title : str
    holdout : float or None, default 0.1
        Rows of this holdout only (ignored when there is no ``holdout`` column).
    pipelines : sequence of str
        One column of panels per pipeline (those present).
    by : str, default "imputer"
        The column whose values are the lines (the imputer; or, e.g., raw
        against logit scores).
    names : mapping, optional
        Legend label of each value of ``by`` (default: the value itself).
    offset : float, default 0
        Horizontal spacing (in units of k) of the series after the first,
        set side by side around k (the first stays at k), so that markers at
        the same k do not hide each other.
    ylims : mapping, optional
        ``(low, high)`` of the y axis per dataset (the row's label); a band
        reaching beyond is cut at the panel's edge.

    Returns
    -------
    matplotlib.figure.Figure
        Rows = datasets, columns = pipelines; in each panel one line
        per series (colour and marker shape = series, the first solid with a
        +-1 sd band, the others dashed; a series scored at a single k is a
        marker alone), so a panel answers one question: which imputer
        predicts best on this matrix with these selected benchmarks. y axes
        are shared within a row; one legend under the panels.

    Notes
    -----
    O(rows).
    """
    df = _require_columns(summary_df, [by, "pipeline", "k", "r2_mean"], "summary_df")
    df = _imputer_rows_at(df, holdout)
    groups = _dataset_groups(df)
    cols = [m for m in pipelines if (df["pipeline"] == m).any()]
    if not cols:
        raise ValueError(f"summary_df has no rows for pipelines {list(pipelines)}")
    series = list(dict.fromkeys(df[by]))
    fig = Figure(figsize=(WIDTH, 2.4 * len(groups) + 1.0), layout="constrained")
    grid = np.atleast_2d(fig.subplots(len(groups), len(cols), sharex=True, sharey="row", squeeze=False))
    legend: dict[str, Any] = {}
    for row, (name, d) in zip(grid, groups):
        for ax, m in zip(row, cols):
            _draw_imputer_panel(ax, d, m, by=by, series=series, names=names or {}, offset=offset, legend=legend)
            ax.grid(True, alpha=0.3)
        if ylims and str(name) in ylims:
            row[0].set_ylim(*ylims[str(name)])
        row[0].set_ylabel(f"{name}\n$R^2$" if name else "$R^2$")
    for ax, m in zip(grid[0], cols):
        ax.set_title(f"{_SHORT_METHOD.get(m, m)} picks")
    for ax in grid[-1]:
        ax.set_xlabel("selected benchmarks $k$")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _legend_below(fig, list(legend.values()), list(legend.keys()), ncol=min(len(legend), 5))
    if title:
        fig.suptitle(title)
    return fig


# ---------------------------------------------------------------------------- notebooks 02 and 03
@_readable
def plot_em_convergence(
    results: Mapping[str, Any],
    *,
    tol: float | Mapping[str, float] | None = 1e-6,
    title: str = "EM convergence (Appendix G)",
) -> Figure:
    """EM convergence traces: relative change and observed log-likelihood vs iteration.

    Parameters
    ----------
    results : mapping name -> EMResult
        Fits from :func:`benchsel_lib.method.em.em_covariance` (anything with
        ``rel_change`` and ``loglik`` arrays, and optionally ``completed`` for
        the number of models).
    tol : float, mapping name -> float, or None, default 1e-6
        Convergence tolerance drawn as a dashed line on the left panel; a
        mapping draws one line per fit, in the fit's colour (the paper's
        settings stop the heavy and the light regime at different
        tolerances, see :func:`benchsel_lib.method.em.em_settings`).
    title : str

    Returns
    -------
    matplotlib.figure.Figure
        Two axes: ``||Sigma^{t+1} - Sigma^t||_F / ||Sigma^t||_F`` (log scale)
        and the gap of the observed-data log-likelihood per model to its final
        (largest) value, ``(max_t l_t - l_t) / M`` (log scale), one line per
        fit. One legend under the panels names each fit once (its colour is
        the same in both panels) and, for a mapping ``tol``, the dashed
        tolerance lines once.

    Notes
    -----
    O(total iterations).
    """
    if not isinstance(results, Mapping) or not results:
        raise ValueError("results must be a non-empty mapping name -> EMResult")
    if isinstance(tol, Mapping):
        unknown = sorted(set(tol) - set(results))
        if unknown:
            raise ValueError(f"tol names fits that are not in results: {unknown}")
    fig = Figure(figsize=(WIDTH, 3.4), layout="constrained")
    ax_c, ax_l = fig.subplots(1, 2)
    handles, labels = [], []
    for i, (name, res) in enumerate(results.items()):
        rel = np.asarray(getattr(res, "rel_change", None) if res is not None else None, dtype=float).ravel()
        ll = np.asarray(getattr(res, "loglik", None) if res is not None else None, dtype=float).ravel()
        if rel.size == 0 or ll.size == 0:
            raise ValueError(f"results[{name!r}] has no rel_change / loglik trace")
        completed = getattr(res, "completed", None)
        m = completed.shape[0] if completed is not None else 1
        it = np.arange(1, rel.size + 1)
        (line,) = ax_c.plot(it, np.where(rel > 0, rel, np.nan), color=f"C{i}")
        gap = (np.max(ll) - ll) / m
        ax_l.plot(np.arange(1, ll.size + 1), np.where(gap > 0, gap, np.nan), color=f"C{i}")
        handles.append(line)
        labels.append(str(name))
    if isinstance(tol, Mapping):
        drawn = [ax_c.axhline(float(tol[name]), color=f"C{i}", linestyle="--", linewidth=0.8)
                 for i, name in enumerate(results) if tol.get(name) is not None]
        if drawn:
            handles.append(Line2D([], [], color="0.3", linestyle="--", linewidth=0.8))
            labels.append("tolerance (dashed, in the fit's colour)")
    elif tol is not None:
        handles.append(ax_c.axhline(tol, color="black", linestyle="--", linewidth=0.8))
        labels.append(f"tolerance {tol:g}")
    ax_c.set_yscale("log")
    ax_c.set_xlabel("EM iteration")
    ax_c.set_ylabel(r"$\|\Sigma^{(t+1)}-\Sigma^{(t)}\|_F / \|\Sigma^{(t)}\|_F$")
    ax_l.set_yscale("log")
    ax_l.set_xlabel("EM iteration")
    ax_l.set_ylabel(r"$(\max_t \ell_t - \ell_t)\,/\,M$")
    ax_l.set_title("log-likelihood gap to its final value")
    ax_c.set_title("relative change of the covariance")
    for ax in (ax_c, ax_l):
        ax.grid(True, which="both", alpha=0.3)
    _legend_below(fig, handles, labels, ncol=2)
    fig.suptitle(title)
    return fig


@_readable
def plot_eigenvalues(
    spectra: Mapping[str, Any],
    *,
    title: str = "Eigenvalues of the estimated covariance",
    ylabel: str = r"eigenvalue $\lambda_j$",
    styles: Mapping[str, Mapping[str, Any]] | None = None,
) -> Figure:
    """Eigenvalues (descending, log scale) of several covariance estimates.

    Parameters
    ----------
    spectra : mapping name -> array_like or Eigenspectrum
        Eigenvalues per estimate (an object with ``eigenvalues`` is accepted).
        Non-positive values cannot be drawn on a log axis and are left out.
    title, ylabel : str
    styles : mapping name -> dict, optional
        Line properties per estimate (``color``, ``linestyle``, ``marker``,
        ...), e.g. one colour per setting and a line style per option, so
        that lines that lie on top of each other stay told apart. Default:
        colour ``C0``, ``C1``, ... and round markers.

    Returns
    -------
    matplotlib.figure.Figure
        One axes, one line per estimate.

    Notes
    -----
    O(sum N log N) (sorting).
    """
    if not isinstance(spectra, Mapping) or not spectra:
        raise ValueError("spectra must be a non-empty mapping name -> eigenvalues")
    unknown = sorted(set(styles or {}) - set(spectra))
    if unknown:
        raise ValueError(f"styles names estimates that are not in spectra: {unknown}")
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    for i, (name, lam) in enumerate(spectra.items()):
        v = np.sort(np.asarray(getattr(lam, "eigenvalues", lam), dtype=float).ravel())[::-1]
        if v.size == 0:
            raise ValueError(f"spectra[{name!r}] is empty")
        style = {"marker": "o", "markersize": 2.5, "color": f"C{i}", **dict((styles or {}).get(name, {}))}
        ax.plot(np.arange(1, v.size + 1), np.where(v > 0, v, np.nan), label=str(name), **style)
    ax.set_yscale("log")
    ax.set_xlabel("index $j$")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    _legend_below(fig, *ax.get_legend_handles_labels())
    return fig


@_readable
def plot_em_recovery(
    df: pd.DataFrame,
    *,
    title: str = "Synthetic recovery: EM vs pairwise",
) -> Figure:
    """Error of the correlation and mean estimates vs the missing fraction.

    Parameters
    ----------
    df : DataFrame
        :func:`benchsel_lib.studies.em.em_recovery_study` output (columns
        ``missing_fraction, estimator, corr_error, mean_error``); replicates are
        averaged and their range shaded.
    title : str

    Returns
    -------
    matplotlib.figure.Figure
        Two axes: relative Frobenius error of the correlation matrix and RMS
        error of the mean, one line per estimator.

    Notes
    -----
    O(rows).
    """
    df = _require_columns(df, ["missing_fraction", "estimator", "corr_error", "mean_error"], "df")
    fig = Figure(figsize=(WIDTH, 3.4), layout="constrained")
    axes = fig.subplots(1, 2)
    panels = [("corr_error", r"$\|\hat R - R\|_F / \|R\|_F$", "Correlation error"),
              ("mean_error", r"RMS error of $\hat\mu$", "Mean error")]
    styles = {"em": ("#1f77b4", "-", "EM (Appendix G)"), "pairwise": ("#7f7f7f", "--", "pairwise / observed mean")}
    for est, g in df.groupby("estimator", sort=True):
        color, ls, label = styles.get(est, (None, "-", str(est)))
        agg = g.groupby("missing_fraction")[["corr_error", "mean_error"]].agg(["mean", "min", "max"])
        x = 100 * agg.index.to_numpy(dtype=float)
        for ax, (col, ylabel, ttl) in zip(axes, panels):
            ax.plot(x, agg[(col, "mean")], color=color, linestyle=ls, marker="o", markersize=3, label=label)
            ax.fill_between(x, agg[(col, "min")], agg[(col, "max")], color=color, alpha=0.15, linewidth=0)
            ax.set_xlabel("missing entries (%)")
            ax.set_ylabel(ylabel)
            ax.set_title(ttl)
    for ax in axes:
        ax.grid(True, alpha=0.3)
    _legend_below(fig, *axes[0].get_legend_handles_labels())
    fig.suptitle(title)
    return fig


@_readable
def plot_spectral_comparison(
    tables: Mapping[str, pd.DataFrame],
    *,
    title: str = "Pivoted-Cholesky residual vs eigenvalue tail (Lemma 1)",
) -> Figure:
    """Greedy-entropy (pivoted-Cholesky) residual trace beside the eigenvalue tail.

    Parameters
    ----------
    tables : mapping name -> DataFrame
        :func:`benchsel_lib.studies.diagnostics.spectral_comparison` output per matrix
        (columns ``k, eigen_tail_fraction, cholesky_residual_fraction``).
    title : str

    Returns
    -------
    matplotlib.figure.Figure
        One axes per matrix (log scale): the residual variance fraction left by
        the first ``k`` greedy-entropy picks (solid) and the eigenvalue tail
        ``sum_{j>k} lambda_j / tr`` (dashed), which lower-bounds it.

    Notes
    -----
    O(total rows).
    """
    if not isinstance(tables, Mapping) or not tables:
        raise ValueError("tables must be a non-empty mapping name -> spectral_comparison DataFrame")
    n = len(tables)
    fig, axes = _panel_grid(n, row_height=2.8, sharey=True)
    for ax, (name, t) in zip(axes, tables.items()):
        _require_columns(t, ["k", "eigen_tail_fraction", "cholesky_residual_fraction"], f"tables[{name!r}]")
        k = t["k"].to_numpy(dtype=float)
        ch = t["cholesky_residual_fraction"].to_numpy(dtype=float)
        tail = t["eigen_tail_fraction"].to_numpy(dtype=float)
        ax.plot(k, np.where(ch > 0, ch, np.nan), color="#1f77b4", marker="o", markersize=2.5,
                label="greedy entropy (pivoted Cholesky)")
        ax.plot(k, np.where(tail > 0, tail, np.nan), color="black", linestyle="--", label="eigenvalue tail")
        ax.set_yscale("log")
        ax.set_xlabel("selected benchmarks $k$")
        ax.set_title(str(name))
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[::2]:
        ax.set_ylabel("residual variance fraction")
    handles, labels = axes[0].get_legend_handles_labels()
    _legend_below(fig, handles, labels)
    fig.suptitle(title)
    return fig


__all__ += ["plot_em_convergence", "plot_eigenvalues", "plot_em_recovery", "plot_spectral_comparison"]


# ---------------------------------------------------------------------------- bands
def add_variant_band(
    fig: Figure,
    variants: pd.DataFrame,
    *,
    holdout: float | None = 0.1,
    label: str = "entropy: range over tie-break rules",
    color: str = "#1f77b4",
    clip_below: float | None = None,
    hatch: bool = True,
) -> Figure:
    """Shade the min-max range of tie-break / first-pick variants on a figure's first (R^2) axes.

    Parameters
    ----------
    fig : Figure
        E.g. from :func:`plot_entropy_vs_mi`; the band goes on ``fig.axes[0]``.
    variants : DataFrame
        ``k`` and ``r2_mean`` (or ``r2``), optionally ``holdout`` (e.g.
        :func:`benchsel_lib.studies.bands.tie_break_band` output).
    holdout : float or None
        Rows of this holdout only (ignored when ``variants`` has no ``holdout``).
    label, color : str
    clip_below : float, optional
        Lower limit of the R^2 axis: where the band reaches below it, the
        band is cut there and the variant at its lower end is named, with its
        value, at the foot of the axis (one outlier no longer flattens every
        curve). Default: the axis shows the whole band.
    hatch : bool
        Hatch the band (default); off: a light fill drawn under the lines, which stay readable.

    Returns
    -------
    Figure
        The same figure (hatched band added). O(rows).
    """
    if not fig.axes:
        raise ValueError("fig has no axes")
    band = _variant_band(variants)
    if holdout is not None and "holdout" in band.columns:
        band = band[np.isclose(band["holdout"].astype(float), float(holdout))]
    if band.empty:
        raise ValueError(f"variants has no rows for holdout {holdout}")
    band = band.sort_values("k")
    ax = fig.axes[0]
    with rc_context(FONTS):
        low = band["min"] if clip_below is None else np.maximum(band["min"], clip_below)
        if hatch:
            ax.fill_between(band["k"], low, band["max"], facecolor="none", hatch="///", edgecolor=color,
                            linewidth=0.0, alpha=0.7, label=label)
        else:
            ax.fill_between(band["k"], low, band["max"], color=color, alpha=0.12, linewidth=0, zorder=0, label=label)
        if clip_below is not None:
            _name_clipped(ax, variants, band, float(clip_below), holdout)
        legend: dict[str, Any] = {}
        for a in fig.axes:
            for handle, text in zip(*a.get_legend_handles_labels()):
                legend.setdefault(text, handle)
        for old in list(fig.legends):
            old.remove()
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        _legend_below(fig, list(legend.values()), list(legend.keys()), ncol=2)
    return fig


def _name_clipped(ax: Any, variants: pd.DataFrame, band: pd.DataFrame, floor: float, holdout: float | None) -> None:
    """Set the R^2 axis' lower limit to ``floor`` and name the lowest variant it cuts off, with its value."""
    top = ax.get_ylim()[1]
    ax.set_ylim(floor, top)
    value = "r2_mean" if "r2_mean" in variants.columns else "r2"
    v = variants
    if holdout is not None and "holdout" in v.columns:
        v = v[np.isclose(v["holdout"].astype(float), float(holdout))]
    cut = band[band["min"] < floor]
    if not cut.empty:
        k = cut.loc[cut["min"].idxmin(), "k"]
        at = v[v["k"] == k]
        if "variant" in at.columns:
            worst = at.loc[at[value].idxmin()]
            text = f"{worst['variant']}: {worst[value]:.1f}"
        else:
            text = f"{at[value].min():.1f}"
        ax.annotate(f"\u2193 {text}", xy=(float(k), floor), xytext=(2, 3), textcoords="offset points",
                    fontsize=8, color="0.2", ha="left", va="bottom")


__all__ += ["add_variant_band"]


# ---------------------------------------------------------------------------- recommended pipeline
def _pipeline_means(runs: Mapping[str, pd.DataFrame], *, reference: str, baseline: str,
                    common: bool) -> tuple[dict[str, pd.DataFrame], dict[str, pd.Series]]:
    """Mean R^2 per (pipeline, k) of each matrix, and the reference's mean ``r2_common`` per k where asked and present.

    Parameters
    ----------
    runs : mapping matrix name -> DataFrame
        Cross-validation rows (``pipeline, k, r2``, optionally ``r2_common``).
    reference, baseline : str
        Methods every matrix must have rows for.
    common : bool
        Also average the reference's ``r2_common``.

    Returns
    -------
    means : dict
        Matrix name -> DataFrame, pipelines x k.
    same : dict
        Matrix name -> Series over k, for the matrices with ``r2_common`` (NaN dropped).
    """
    means, same = {}, {}
    for name, df in runs.items():
        d = _require_columns(df, ["pipeline", "k", "r2"], f"runs[{name!r}]")
        mean = d.groupby(["pipeline", "k"])["r2"].mean().unstack("k")
        absent = [m for m in (reference, baseline) if m not in mean.index]
        if absent:
            raise ValueError(f"runs[{name!r}] has no rows for pipeline(s) {absent}")
        means[name] = mean
        if common and "r2_common" in d.columns:
            same[name] = d[d["pipeline"] == reference].groupby("k")["r2_common"].mean().dropna()
    return means, same


def _ranked_pipelines(mean: pd.DataFrame, *, reference: str, baseline: str, n_top: int) -> list[str]:
    """The reference, the baseline, then the ``n_top`` other pipelines with the highest mean R^2 at the largest k."""
    best = mean.drop([reference, baseline])[mean.columns.max()].sort_values(ascending=False)
    return [reference, baseline] + best.index[:n_top].tolist()


def _pipeline_styles(others: Sequence[str], *, reference: str, baseline: str,
                     separate: bool) -> dict[str, dict[str, Any]]:
    """Line properties per pipeline: the reference thick black, the baseline red dashed, each other its own colour.

    ``others`` take the strong colours of ``tab20`` (red apart, the
    baseline's), then their light twins, and a marker per pass through the
    palette; with ``separate`` each also gets its own marker and dash
    pattern.
    """
    tab = colormaps["tab20"].colors  # the strong colours, then their light twins; red is the baseline's
    palette = [tab[i] for i in range(0, 20, 2) if i != 6] + [tab[i] for i in range(1, 20, 2) if i != 7]
    style = {reference: dict(color="black", linewidth=2.5, marker="o"),
             baseline: dict(color=tab[6], linestyle="--", marker="o")}
    style.update({m: dict(color=palette[i % len(palette)], linewidth=1.2, marker="osD^v"[i // len(palette) % 5])
                  for i, m in enumerate(others)})
    if separate:
        dashes = ["-", "-.", (0, (5, 1.5)), (0, (1.5, 1.5)), (0, (6, 2, 1, 2))]
        for i, m in enumerate(others):
            style[m].update(marker="sD^vP*Xh"[i % 8], linestyle=dashes[i % len(dashes)])
    return style


def _draw_pipeline_panel(ax: Any, mean: pd.DataFrame, pipelines: Sequence[str], same: pd.Series | None,
                         style: Mapping[str, Mapping[str, Any]], *, reference: str, separate: bool) -> None:
    """One matrix's lines: each pipeline's mean R^2 over k, then the reference's same-entries curve when given.

    Parameters
    ----------
    ax : Axes
    mean : DataFrame
        Methods x k (:func:`_pipeline_means`).
    pipelines : sequence of str
        The pipelines drawn, in order (:func:`_ranked_pipelines`).
    same : Series or None
        The reference's mean ``r2_common`` per k; drawn thin, black and dotted when not empty.
    style : mapping
        :func:`_pipeline_styles`.
    reference : str
        Named in the label of the same-entries curve.
    separate : bool
        Shift the lines apart along k (at most 0.15 each way, centred on the true k), with larger markers.
    """
    has_same = same is not None and len(same) > 0
    n_lines = len(pipelines) + int(has_same)
    step = min(0.3 / max(n_lines - 1, 1), 0.08) if separate else 0.0
    for i, m in enumerate(pipelines):
        row = mean.loc[m].dropna()
        ax.plot(row.index.to_numpy(float) + step * (i - (n_lines - 1) / 2), row.to_numpy(),
                markersize=4 if separate else 3, label=m, **style[m])
    if has_same:
        ax.plot(same.index.to_numpy(float) + step * (n_lines - 1) / 2, same.to_numpy(),
                color="black", linewidth=1.2, linestyle=":", marker="o", markersize=3,
                label=f"{reference}, same entries")


def _style_pipeline_panel(ax: Any, title: str, *, clip: bool, one_legend: bool) -> None:
    """Title, axis labels and grid of a pipeline panel, far-low lines left out of its range (``clip``), its legend."""
    ax.set_title(title)
    ax.set_xlabel("benchmarks run $k$")
    ax.set_ylabel("mean $R^2$ (held-out models)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)
    if clip:
        _clip_low_lines(ax)
    if not one_legend:  # each matrix has its own best pairs: a legend under each panel, outside its data area
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False, fontsize=9)


@_readable
def plot_pipeline_curves(
    runs: Mapping[str, pd.DataFrame],
    *,
    reference: str = "auto",
    baseline: str = "mi",
    n_top: int = 3,
    labels: Mapping[str, str] | None = None,
    common: bool = True,
    separate: bool = False,
    one_legend: bool = False,
    clip: bool = False,
) -> Figure:
    """Mean R^2 against ``k`` of the recommended pipeline, the paper's pair and the best fixed pairs.

    Parameters
    ----------
    runs : mapping matrix name -> DataFrame
        Cross-validation rows per matrix (``pipeline, k, r2``), e.g.
        :func:`benchsel_lib.studies.pipelines.compare_pipelines` output; one panel each.
    reference, baseline : str
        Methods always drawn: the recommended pipeline (thick black) and the
        paper's Gaussian + MI (dashed).
    n_top : int
        Also draw the ``n_top`` other pipelines with the highest mean R^2 at the
        largest ``k`` of that matrix.
    labels : mapping, optional
        Panel titles per matrix name (default: the names).
    common : bool
        Also draw the reference's mean ``r2_common`` (thin black, dotted,
        labelled ``"<reference>, same entries"``): its R^2 over the entries
        that every scored ``k`` of the fold scores, where the rows have it.
    separate : bool
        Keep lines with the same values visible: each of the ``n_top``
        pipelines gets its own marker and dash pattern, and every line of a
        panel is shifted a little along ``k`` (at most 0.15, centred on the
        true ``k``), so that markers side by side show lines that coincide.
    one_legend : bool
        One legend under all panels (a pipeline keeps its colour and marker in
        every panel) instead of one under each.
    clip : bool
        Keep a panel's y range for the lines that share it: a line that lies
        wholly below all the others, further below them than their own
        spread, is left below the axis, and a note in the panel names it
        with its range.

    Returns
    -------
    Figure
        One panel per matrix (two per row), mean R^2 over folds and seeds at
        the scored ``k``; a legend under each panel (the best pairs differ
        between matrices), a pipeline keeping its colour in every panel.  O(rows).
    """
    if not runs:
        raise ValueError("runs is empty: give at least one matrix's cross-validation rows")
    check_int(n_top, "n_top", minimum=0)
    means, same = _pipeline_means(runs, reference=reference, baseline=baseline, common=common)
    drawn = {name: _ranked_pipelines(mean, reference=reference, baseline=baseline, n_top=n_top)
             for name, mean in means.items()}
    others = list(dict.fromkeys(m for ms in drawn.values() for m in ms[2:]))
    style = _pipeline_styles(others, reference=reference, baseline=baseline, separate=separate)
    fig, axes = _panel_grid(len(means), row_height=3.6)
    for ax, (name, mean) in zip(axes, means.items()):
        _draw_pipeline_panel(ax, mean, drawn[name], same.get(name), style, reference=reference, separate=separate)
        _style_pipeline_panel(ax, (labels or {}).get(name, str(name)), clip=clip, one_legend=one_legend)
    if one_legend:
        handles = _legend_entries(axes)
        _legend_below(fig, list(handles.values()), list(handles), ncol=3)
    return fig


def _clip_low_lines(ax: Any) -> None:
    """Set the y range of ``ax`` to the lines that share it, leaving below it any line far under all the others."""
    lines = [ln for ln in ax.get_lines() if len(ln.get_ydata())]
    ys = {ln: np.asarray(ln.get_ydata(), dtype=float) for ln in lines}
    low = []
    for ln in lines:
        rest = np.concatenate([ys[o] for o in lines if o is not ln] or [np.array([np.nan])])
        if not np.isfinite(rest).any():
            continue
        lo, hi = np.nanmin(rest), np.nanmax(rest)
        if np.nanmax(ys[ln]) < lo and lo - np.nanmin(ys[ln]) > hi - lo:
            low.append(ln)
    if not low:
        return
    rest = np.concatenate([ys[o] for o in lines if o not in low])
    lo, hi = float(np.nanmin(rest)), float(np.nanmax(rest))
    pad = 0.08 * max(hi - lo, 1e-3)
    ax.set_ylim(lo - 2.5 * pad, hi + pad)
    note = "; ".join(f"{ln.get_label()}: {np.nanmin(ys[ln]):.2f} to {np.nanmax(ys[ln]):.2f}, below" for ln in low)
    ax.text(0.98, 0.02, note, transform=ax.transAxes, ha="right", va="bottom", fontsize=8,
            bbox=dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor="grey", alpha=0.9))


__all__ += ["plot_pipeline_curves"]


# ---------------------------------------------------------------------------- first entropy pick
#: Colours and labels of the first-pick rules (tie rules of the selector, then the covariance paths).
FIRST_PICK_STYLE: dict[str, tuple[str, str]] = {
    "auto": ("tab:blue", 'tie rule "auto"'),
    "argmax": ("tab:orange", 'tie rule "argmax"'),
    "index": ("tab:green", 'tie rule "index"'),
    "mi": ("tab:purple", 'tie rule "mi"'),
    "rounded": ("tab:brown", "argmax of the rounded diagonal"),
    "covariance": ("tab:olive", "largest covariance diagonal"),
}
#: Line style and marker of each first-pick rule: two rules that pick alike in every fold give the same curve,
#: and different dashes with markers at different k keep both visible.
FIRST_PICK_LINES: dict[str, tuple[Any, str]] = {
    "auto": ("-", "o"),
    "argmax": ("--", "s"),
    "index": (":", "^"),
    "mi": ("-.", "v"),
    "rounded": ((0, (5, 1, 1, 1)), "D"),
    "covariance": ((0, (1, 2)), "P"),
}


def _first_pick_k(curves: pd.DataFrame, paper: pd.Series, k: int | None) -> int:
    """The subset size of the histogram: ``k``, else the smallest reported one, else ``min(5, k_max)``; checked."""
    ks = curves.index.to_numpy(int)
    if k is None:
        k = int(paper.index.min()) if len(paper) else int(min(5, ks.max()))
    k = check_int(k, "k")
    if k not in ks:
        raise ValueError(f"k={k} is not in the study's 1..{ks.max()}")
    return k


def _draw_first_pick_curves(ax: Any, curves: pd.DataFrame, paper: pd.Series, rules: Sequence[str], *,
                            noise: bool) -> None:
    """Mean R^2 against k under each rule, the noise model's band and median (``noise``), and the paper's values.

    Each rule has its own line style, with markers at every third ``k``,
    offset between rules, so that curves that coincide stay visible.
    """
    ks = curves.index.to_numpy(int)
    if noise:
        ax.fill_between(ks, curves["noise_q05"], curves["noise_q95"], color="grey", alpha=0.25, linewidth=0,
                        label="rounding drawn at random, 5-95%")
        ax.plot(ks, curves["noise_median"], color="grey", linestyle="--", linewidth=1.2, label="its median")
    for i, r in enumerate(rules):
        color, name = FIRST_PICK_STYLE[r]
        style, marker = FIRST_PICK_LINES[r]
        ax.plot(ks, curves[r], color=color, linewidth=1.4, linestyle=style, marker=marker, markersize=4,
                markevery=(i % 3, 3), label=name)
    if len(paper):
        ax.plot(paper.index, paper.to_numpy(), linestyle="none", marker="X", markersize=9, color="black",
                label="paper")
    ax.set_xlabel("number of selected benchmarks $k$")
    ax.set_ylabel("mean imputation $R^2$")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)


def _histogram_range(at: np.ndarray, marks: Sequence[float]) -> tuple[float, float, float]:
    """``(lo, hi, pad)`` of the histogram: the draws' 5th percentile or the lowest mark, to the highest draw or mark."""
    lo = min([float(np.quantile(at, 0.05))] + list(marks)) if at.size else min(marks)
    hi = max([float(at.max())] + list(marks)) if at.size else max(marks)
    return lo, hi, 0.05 * (hi - lo) or 0.01


def _draw_noise_histogram(bx: Any, draws: np.ndarray, curves: pd.DataFrame, paper: pd.Series, rules: Sequence[str],
                          k: int) -> None:
    """The noise model's mean R^2 at ``k`` from its 5th percentile up, each rule's value and the paper's.

    Parameters
    ----------
    bx : Axes
    draws : ndarray (n_draws, n_k)
        The noise model's curves; non-finite values at ``k`` are left out.
    curves : DataFrame
        The study's curves (each rule's value at ``k`` is a vertical line in the rule's style).
    paper : Series
        The reported values (a thick dashed line where ``k`` is one of them).
    rules : sequence of str
    k : int
    """
    at = draws[:, k - 1]
    at = at[np.isfinite(at)]
    marks = [float(curves.loc[k, r]) for r in rules] + ([float(paper.loc[k])] if k in paper.index else [])
    lo, hi, pad = _histogram_range(at, marks)
    shown = at[(at >= lo - pad) & (at <= hi + pad)]
    bx.hist(shown, bins=30, color="grey", alpha=0.6)
    bx.set_xlim(lo - pad, hi + pad)
    if shown.size < at.size:
        bx.text(0.02, 0.97, f"{at.size - shown.size} draws further left", transform=bx.transAxes, va="top", fontsize=9)
    for r in rules:
        bx.axvline(float(curves.loc[k, r]), color=FIRST_PICK_STYLE[r][0], linestyle=FIRST_PICK_LINES[r][0],
                   linewidth=1.6)
    if k in paper.index:
        bx.axvline(float(paper.loc[k]), color="black", linestyle="--", linewidth=2)
    bx.set_xlabel(f"mean imputation $R^2$ at $k = {k}$")
    bx.set_ylabel("draws")
    bx.grid(True, alpha=0.3)


@_readable
def plot_first_pick(study: Any, *, k: int | None = None, title: str = "") -> Figure:
    """Greedy-entropy curves under each first-pick rule, the rounding noise model, and the paper's values.

    Parameters
    ----------
    study : FirstPickStudy
        :func:`benchsel_lib.studies.first_pick.first_pick_study` result.
    k : int, optional
        Subset size of the right panel (default: the smallest reported ``k``,
        else ``min(5, k_max)``).
    title : str

    Returns
    -------
    Figure
        Left: mean R^2 vs ``k`` per rule (each with its own line style, and
        markers at every third ``k``, offset between rules, so that curves
        that coincide stay visible), the noise model's 5-95% range (shaded)
        and median (grey dashed), the paper's values (black crosses).
        Right (when the noise model ran): the distribution of the noise
        model's mean R^2 at ``k`` from its 5th percentile up (the
        number of draws further left is printed), with the paper's value (dashed)
        and each rule's (in the rule's line style).
        O(n_draws + rules x k_max).
    """
    curves = getattr(study, "curves", None)
    if not isinstance(curves, pd.DataFrame) or "paper" not in curves.columns:
        raise ValueError(f"study must be a FirstPickStudy, got {type(study).__name__}")
    paper = curves["paper"].dropna()
    k = _first_pick_k(curves, paper, k)
    draws = np.asarray(study.draws, dtype=float)
    has_noise = draws.size > 0
    fig = Figure(figsize=(WIDTH, 3.6), layout="constrained")
    axes = fig.subplots(1, 2 if has_noise else 1, squeeze=False)[0]
    rules = [r for r in FIRST_PICK_STYLE if r in curves.columns]
    _draw_first_pick_curves(axes[0], curves, paper, rules, noise=has_noise)
    if has_noise:
        _draw_noise_histogram(axes[1], draws, curves, paper, rules, k)
    if title:
        fig.suptitle(title)
    handles, names = axes[0].get_legend_handles_labels()
    _legend_below(fig, handles, names, ncol=3)
    return fig


__all__ += ["FIRST_PICK_LINES", "FIRST_PICK_STYLE", "plot_first_pick"]


def plot_observed_pattern(matrix: Any, *, title: str = "") -> Figure:
    """Which entries of a score matrix are observed, and how many models each benchmark has (chapter 1).

    Parameters
    ----------
    matrix : ScoreMatrix
        Rows sorted by observed entries (most first), columns likewise.
    title : str
        Figure title.

    Returns
    -------
    Figure
        Left: the observed pattern (dark: observed); right: observed models per benchmark, sorted.
    """
    obs = np.asarray(matrix.observed, dtype=bool)
    obs = obs[np.argsort(-obs.sum(axis=1), kind="stable")][:, np.argsort(-obs.sum(axis=0), kind="stable")]
    fig = Figure(figsize=(8.5, 3.2), layout="constrained")
    ax, bx = fig.subplots(1, 2, width_ratios=[1.3, 1])
    ax.imshow(obs, aspect="auto", cmap="Greys", interpolation="nearest", vmin=0, vmax=1)
    ax.set_xlabel("benchmarks (most observed first)")
    ax.set_ylabel("models (most observed first)")
    per_col = obs.sum(axis=0)
    bx.bar(np.arange(per_col.size), per_col, width=1.0, color="C0")
    bx.axhline(obs.shape[0], color="black", linestyle="--", linewidth=1, label="all models")
    bx.set_xlabel("benchmarks, sorted")
    bx.set_ylabel("observed models")
    bx.legend(loc="upper right", fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


__all__ += ["plot_observed_pattern"]


# ---------------------------------------------------------------------------- Figure 13, one R^2 panel per holdout
@_readable
def plot_r2_by_holdout(summary_df: pd.DataFrame, *, pipelines: Sequence[str] = ("entropy", "random"),
                       holdouts: Sequence[float] | None = None, folds: pd.DataFrame | None = None,
                       title: str = "") -> Figure:
    """Figure 13's R² panels: mean R² against k, one panel per holdout, each with its own R² axis.

    Parameters
    ----------
    summary_df : DataFrame
        ``summarize_cv`` output (``pipeline, holdout, k, r2_mean, r2_sd, n_scored``).
    pipelines : sequence of str
        Greedy pipelines solid with markers, ``"random"`` dashed.
    holdouts : sequence of float, optional
        One panel each (default: all).
    folds : DataFrame, optional
        ``cross_validate`` output: each fold's R² drawn as a thin line under the means.
    title : str

    Returns
    -------
    matplotlib.figure.Figure
        Panels side by side; the shaded band is ±1 standard error of the mean over folds
        (sd / sqrt(folds scored)), narrow enough that the mean lines stay readable.

    Notes
    -----
    O(rows of the tables).
    """
    df = _require_columns(summary_df, ["pipeline", "holdout", "k", "r2_mean"], "summary_df")
    holdouts = sorted(df["holdout"].unique()) if holdouts is None else list(holdouts)
    fig = Figure(figsize=(min(WIDTH, 2.4 * len(holdouts) + 0.6), 2.9), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(holdouts), squeeze=False)[0])
    for ax, h in zip(axes, holdouts):
        for m in pipelines:
            sub = df[(df["pipeline"] == m) & np.isclose(df["holdout"].astype(float), float(h))].sort_values("k")
            if sub.empty:
                continue
            color = METHOD_COLORS.get(m, "black")
            if folds is not None:
                f = folds[(folds["pipeline"] == m) & np.isclose(folds["holdout"].astype(float), float(h))]
                for _, g in f.sort_values("k").groupby("fold"):
                    ax.plot(g["k"], g["r2"], color=color, linewidth=0.5, alpha=0.35)
            x, mean = sub["k"].to_numpy(float), _values(sub, "r2_mean")
            se = _values(sub, "r2_sd") / np.sqrt(np.maximum(_values(sub, "n_scored"), 1.0))
            ax.plot(x, mean, linestyle="--" if m == "random" else "-", color=color, linewidth=1.8,
                    marker=None if m == "random" else "o", markersize=3, label=METHOD_LABELS.get(m, m))
            _band(ax, x, mean, se, color)
        ax.axhline(0.0, color="black", linewidth=0.6)
        ax.set_title(_fmt_holdout(h))
        ax.set_xlabel("$k$")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("imputation $R^2$")
    handles, labels = axes[0].get_legend_handles_labels()
    _legend_below(fig, handles, labels)
    if title:
        fig.suptitle(title)
    return fig


__all__ += ["plot_r2_by_holdout"]
