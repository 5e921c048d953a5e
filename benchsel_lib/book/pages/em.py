"""Chapter 2: EM covariance estimation under missingness (Appendix G).

The page checks what Appendix G says of its EM algorithm: how many
iterations it takes on the fully observed MMLU, on MTEB and on the sparse
Merged matrix, and what the PSD floor and Ledoit-Wolf shrinkage do when a
matrix has fewer models than benchmarks. The functions below turn the run's
fits into the page's tables (:func:`convergence_table`,
:func:`ablation_table`, :func:`configs_table`, :func:`recovery_table`), its
claims table (:func:`claims`) and its prose (:func:`prose`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...method.em import em_settings
from ..claims import Claim, claims_table, failures, not_run, verdict
from ..notebook import and_join
from ..prose import PageProse, count, label, labels, num, paragraph, pct
from ..tables import table

__all__ = [
    "ABLATION",
    "PAPER_ITERATIONS",
    "ablation_settings",
    "ablation_summary",
    "ablation_styles",
    "ablation_table",
    "claims",
    "configs_caption",
    "configs_table",
    "convergence_row",
    "convergence_table",
    "prose",
    "recovery_summary",
    "recovery_table",
    "sci",
    "show",
    "size",
    "spectra_coincide",
    "value",
]

#: Appendix G, "Convergence": iterations of plain EM (MMLU "2-3", MTEB "roughly 300", Merged 274).
PAPER_ITERATIONS: dict[str, tuple[str, float, float, float]] = {
    # name: (the paper's words, the number compared with, reproduced within, partly within)
    "mmlu": ("2–3", 2.5, 0.5, 1.5),
    "mteb": ("roughly 300", 300.0, 30.0, 60.0),
    "merged": ("274", 274.0, 0.0, 10.0),
}
#: The ablation's six fits: (label, PSD floor, shrinkage) -- the floor None is no floor.
ABLATION: tuple[tuple[str, float | None, bool], ...] = (
    ("no floor, no shrinkage", None, False), ("floor 10⁻⁶, no shrinkage", 1e-6, False),
    ("floor 10⁻³, no shrinkage", 1e-3, False), ("no floor, shrinkage", None, True),
    ("floor 10⁻⁶, shrinkage", 1e-6, True), ("floor 10⁻³, shrinkage", 1e-3, True))
#: A correlation counts as damped when shrinkage lowers it by more than this.
DAMPED = 0.05
#: A covariance counts as well conditioned below this condition number.
WELL_CONDITIONED = 1e3
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sci(value: float, *, digits: int = 1) -> str:
    """Scientific notation as a reader writes it: ``5e-4`` -> ``"5 × 10⁻⁴"``, ``1e-6`` -> ``"10⁻⁶"``.

    The spaces around ``×`` do not break (U+00A0), so the number stays on one line.

    Parameters
    ----------
    value : float
        A finite number (``inf`` gives ``"unbounded"``; NaN raises ``ValueError``).
    digits : int
        Significant digits after the first of the mantissa (trailing zeros dropped).

    Returns
    -------
    str
    """
    v = float(value)
    if math.isinf(v) and v > 0:
        return "unbounded"
    num(v, what="a number in scientific notation")
    if v == 0:
        return "0"
    mantissa, exponent = f"{v:.{digits}e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    exp = int(exponent)
    if exp == 0:
        return mantissa
    power = "10" + str(exp).translate(_SUPERSCRIPT)
    if mantissa in ("1", "-1"):
        return power if mantissa == "1" else "−" + power
    return f"{mantissa}\u00a0×\u00a0{power}"


def size(models: int, benchmarks: int) -> str:
    """``"263 × 56"``, kept on one line (no-break spaces)."""
    return f"{int(models)}\u00a0×\u00a0{int(benchmarks)}"


def show(df: pd.DataFrame, **options: Any) -> Any:
    """:func:`~benchsel_lib.book.tables.table` with some room between the columns (keywords as there)."""
    return table(df, **options).set_table_styles([{"selector": "th, td", "props": "padding: 0.15em 0.6em;"}],
                                                 overwrite=False)


def value(v: float) -> str:
    """A positive quantity that spans decades (an eigenvalue, a condition number): 3 significant digits between
    0.01 and 10,000 (``0.458``, ``47.4``), else :func:`sci` (``7.3 × 10⁻¹²``)."""
    x = float(v)
    if math.isfinite(x) and 1e-2 <= abs(x) < 1e4:
        return f"{x:.3g}"
    return sci(x)


def convergence_row(name: str, matrix: Any, opts: Mapping[str, Any], plain: Any, fast: Any) -> dict[str, Any]:
    """One matrix's EM run: its settings, the plain iteration and the SQUAREM-accelerated one.

    Parameters
    ----------
    name : str
        The matrix.
    matrix : ScoreMatrix
        Its scores (shape and observed fraction are read).
    opts : mapping
        The :func:`~benchsel_lib.method.em.em_settings` the fits used (``eps_psd``, ``tol``, ``max_iter``).
    plain, fast : EMResult
        Plain EM and SQUAREM with the same settings.

    Returns
    -------
    dict
        Settings, ``iterations``, ``converged``, ``squarem`` (updates), ``squarem_converged``,
        ``max_diff`` (largest correlation difference of the two fits), log-likelihood facts.
    """
    ll = np.asarray(plain.loglik, dtype=float)
    return {"matrix": name, "M": matrix.shape[0], "N": matrix.shape[1], "observed": float(matrix.observed_fraction),
            "eps_psd": opts["eps_psd"], "tol": float(opts["tol"]), "max_iter": int(opts["max_iter"]),
            "iterations": int(plain.n_iter), "converged": bool(plain.converged),
            "first_change": float(plain.rel_change[0]), "squarem": int(fast.n_iter),
            "squarem_converged": bool(fast.converged), "max_diff": _corr_gap(plain.cov, fast.cov),
            "loglik_rising_at_end": bool(len(ll) > 1 and ll[-1] > ll[-2]),
            "loglik_decreases": int((np.diff(ll) < -1e-8 * np.abs(ll[1:])).sum())}


def _corr_gap(a: np.ndarray, b: np.ndarray) -> float:
    def corr(c: np.ndarray) -> np.ndarray:
        d = np.sqrt(np.diag(c))
        return c / np.outer(d, d)

    return float(np.abs(corr(a) - corr(b)).max())


def convergence_table(conv: pd.DataFrame) -> pd.DataFrame:
    """The convergence rows as the page shows them (a row per matrix, words for the settings)."""
    rows = []
    for name, r in conv.iterrows():
        rows.append({"Matrix": label(str(name)), "Size": size(r["M"], r["N"]), "Observed": pct(r["observed"]),
                     "Floor": sci(r["eps_psd"]) if r["eps_psd"] else "none", "Tolerance": sci(r["tol"]),
                     "Plain EM": _iterations(r), "SQUAREM": _iterations(r, squarem=True),
                     "Corr. difference": value(r["max_diff"])})
    return pd.DataFrame(rows)


def _iterations(r: Mapping[str, Any], *, squarem: bool = False) -> str:
    n, ok = (r["squarem"], r["squarem_converged"]) if squarem else (r["iterations"], r["converged"])
    return str(int(n)) if ok else f"{int(n)} (cap)"


def ablation_settings(max_iter: int) -> dict[str, dict[str, Any]]:
    """The ablation's fits (:data:`ABLATION`) as settings for ``compare_em_settings``."""
    return {name: {"eps_psd": eps, "shrinkage": "auto" if shrink else None, "max_iter": int(max_iter)}
            for name, eps, shrink in ABLATION}


def ablation_summary(ablation: pd.DataFrame, reference: float, pair_name: str) -> dict[str, float]:
    """The numbers the page quotes from the ablation (``compare_em_settings`` with :func:`ablation_settings`).

    Parameters
    ----------
    ablation : DataFrame
        One row per setting of :data:`ABLATION`.
    reference : float
        The strongest pair's correlation in the estimate on all models.
    pair_name : str
        The column of that pair.

    Returns
    -------
    dict
        ``alpha``, smallest eigenvalues (``mineig_none``, ``mineig_1e3``, ``mineig_shrink``, and
        ``mineig_shrink_min`` the smallest of the three fits with shrinkage), condition
        numbers (``cond_none``, ``cond_1e3``, ``cond_shrink``), components for 90% (``k90_shrink``,
        ``k90_noshrink``) and the strongest correlation (``corr_ref``, ``corr_shrink``, ``corr_noshrink``).
    """
    a = ablation
    none, floor, shrunk = "no floor, no shrinkage", "floor 10⁻³, no shrinkage", "floor 10⁻³, shrinkage"
    return {"alpha": float(a["shrinkage"].max()), "k90_shrink": int(a.loc[shrunk, "k90"]),
            "k90_noshrink": int(a.loc[floor, "k90"]),
            "mineig_none": float(a.loc[none, "min_eigenvalue"]), "mineig_1e3": float(a.loc[floor, "min_eigenvalue"]),
            "mineig_shrink": float(a.loc[shrunk, "min_eigenvalue"]),
            "mineig_shrink_min": float(a.loc[[n for n, _, on in ABLATION if on], "min_eigenvalue"].min()),
            "cond_none": float(a.loc[none, "condition_number"]), "cond_1e3": float(a.loc[floor, "condition_number"]),
            "cond_shrink": float(a.loc[shrunk, "condition_number"]),
            "corr_ref": float(reference), "corr_shrink": float(a.loc[shrunk, pair_name]),
            "corr_noshrink": float(a.loc[floor, pair_name])}


def spectra_coincide(eigenvalues: Sequence[np.ndarray], *, log_tol: float = 0.05) -> bool:
    """Do these spectra lie on top of each other on a log axis (every eigenvalue within ``log_tol`` decades)?"""
    logs = [np.log10(np.clip(np.sort(np.asarray(v, dtype=float))[::-1], 1e-300, None)) for v in eigenvalues]
    return all(np.abs(v - logs[0]).max() <= log_tol for v in logs[1:])


def ablation_styles() -> dict[str, dict[str, Any]]:
    """Line styles of the ablation's fits: a colour per floor, dashed with shrinkage, markers offset per fit."""
    colors = {None: "C3", 1e-6: "C0", 1e-3: "C2"}
    return {name: {"color": colors[eps], "linestyle": "--" if on else "-", "marker": "s" if on else "o",
                   "markevery": (i % 3, 3)} for i, (name, eps, on) in enumerate(ABLATION)}


def ablation_table(ablation: pd.DataFrame, pair_names: Sequence[str], reference: Sequence[float],
                   *, n_models: int) -> pd.DataFrame:
    """The ablation as the page shows it: one row per fit and a last row with the estimate on all models.

    Parameters
    ----------
    ablation : DataFrame
        ``compare_em_settings`` output (index: the labels of :data:`ABLATION`).
    pair_names : list of str
        The columns of the reported pairs, shown as "Pair 1", "Pair 2", ...
    reference : list of float
        Their correlations in the estimate on all ``n_models`` models.
    n_models : int
        Models of the full matrix.

    Returns
    -------
    DataFrame
    """
    rows = []
    for setting, r in ablation.iterrows():
        its = _iterations({"iterations": r["n_iter"], "converged": r["converged"]})
        rows.append({"Fit": setting, "Iterations": its,
                     "Smallest eigenvalue": value(r["min_eigenvalue"]),
                     "Condition number": value(r["condition_number"]), "Components for 90%": str(int(r["k90"])),
                     **{f"Pair {i + 1}": float(r[p]) for i, p in enumerate(pair_names)}})
    rows.append({"Fit": f"all {n_models} models (reference)", **{f"Pair {i + 1}": float(v)
                                                                 for i, v in enumerate(reference)}})
    return pd.DataFrame(rows)


def configs_table(matrices: Mapping[str, Any], *, holdouts: Sequence[float] = (0.0, 0.1, 0.5, 0.9)) -> pd.DataFrame:
    """EM settings of the two configurations per matrix, on all models (holdout 0) and in CV training splits.

    Returns
    -------
    DataFrame
        One row per (matrix, holdout): training models, then the PSD floor, the iteration cap and the
        tolerance as "released / early" (one value where they agree) and the shrinkage intensity (the
        same in both).
    """
    rows = []
    for name, m in matrices.items():
        for holdout in holdouts:
            m_train = int(round((1 - holdout) * m.shape[0]))
            s = {cfg: em_settings(m_train, m.shape[1], m.observed_fraction, config=cfg,
                                  context="full" if holdout == 0 else "cv") for cfg in ("released", "early")}
            row = {"Matrix": label(name), "Holdout": pct(holdout), "Models": m_train}
            for key, head, fmt in (("eps_psd", "Floor", sci), ("max_iter", "Cap", str), ("tol", "Tolerance", sci)):
                rel, early = fmt(s["released"][key]), fmt(s["early"][key])
                row[head] = rel if rel == early else f"{rel}\u00a0/\u00a0{early}"
            row["Shrinkage α"] = float(s["released"]["shrinkage"] or 0.0)
            rows.append(row)
    return pd.DataFrame(rows)


def configs_caption(matrices: Mapping[str, Any]) -> str:
    """The caption of :func:`configs_table`: how to read a pair of values, and each matrix's observed share."""
    observed = "; ".join(f"{label(n)} {pct(m.observed_fraction)}" for n, m in matrices.items())
    return (f"Where two values are given, the first is the released configuration's, the second the early one's. "
            f"Models: training models. Observed entries: {observed}.")


def recovery_summary(recovery: pd.DataFrame) -> pd.DataFrame:
    """Mean correlation and mean errors per (missing fraction, estimator) of ``em_recovery_study``."""
    return (recovery.groupby(["missing_fraction", "estimator"])[["observed_fraction", "corr_error", "mean_error",
                                                                 "n_iter"]].mean().unstack("estimator"))


def recovery_table(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`recovery_summary` as the page shows it, one row per missing fraction."""
    s = summary
    return pd.DataFrame({"Missing": [pct(f) for f in s.index],
                         "Observed": [pct(v) for v in s[("observed_fraction", "em")]],
                         "EM: correlation error": s[("corr_error", "em")].to_numpy(),
                         "Pairwise: correlation error": s[("corr_error", "pairwise")].to_numpy(),
                         "EM: mean error": s[("mean_error", "em")].to_numpy(),
                         "Observed mean: error": s[("mean_error", "pairwise")].to_numpy(),
                         "EM iterations": s[("n_iter", "em")].to_numpy()})


def _iteration_claim(name: str, conv: pd.DataFrame, max_iter: int | None, quick: bool) -> Claim:
    words, paper, tol, partly = PAPER_ITERATIONS[name]
    what = {"mmlu": "MMLU (fully observed): EM iterations", "mteb": "MTEB (23% missing): EM iterations",
            "merged": "Merged (69% missing): EM iterations"}[name]
    where = "App. G"
    if name not in conv.index:
        return not_run(what, where, words, f"{label(name)} was not in this run", section="convergence")
    r = conv.loc[name]
    if not r["converged"] and max_iter is not None:
        cap = f"{'quick mode caps' if quick else 'this run caps'} EM at {count(max_iter, 'iteration')}"
        return not_run(what, where, words, cap, section="convergence")
    if not r["converged"]:
        return Claim(what, where, words, f"{int(r['iterations'])} (cap)", "not reproduced",
                     f"no convergence to {sci(r['tol'])} within the cap", section="convergence")
    v = verdict(float(r["iterations"]), paper, tol=tol, partly=partly)
    if name == "mmlu":
        why = "nothing to impute"
    else:
        why = f"plain EM to {sci(r['tol'])}"
        if r["squarem_converged"] and r["squarem"] < r["iterations"] and r["tol"] < 5e-4:
            why += f"; SQUAREM: {r['squarem']} updates"
    return Claim(what, where, words, str(int(r["iterations"])), v, why, section="convergence")


def _shrinkage_claims(a: Mapping[str, float]) -> list[Claim]:
    where, section = "App. G", "shrinkage-and-the-floor"
    floor_ok = a["mineig_1e3"] >= 1e-3 * (1 - 1e-6)
    collapsed = a["mineig_none"] < 1e-3
    v_floor = ("reproduced" if floor_ok and collapsed else "partly" if floor_ok else "not reproduced")
    why_floor = (f"without it: {sci(a['mineig_none'])}" if v_floor == "reproduced" else
                 "no collapse to prevent here" if floor_ok else "the floor did not hold")
    floor = Claim("A floor of 10⁻³ stops eigenvalue collapse", where, "floor 10⁻³",
                  f"smallest eigenvalue {value(a['mineig_1e3'])}", v_floor, why_floor, section=section)
    bounded = a["cond_shrink"] < WELL_CONDITIONED
    v_bound = ("reproduced" if bounded and a["cond_shrink"] < a["cond_1e3"] else "partly" if bounded
               else "not reproduced")
    bound = Claim("Shrinkage bounds the eigenvalues (M < N)", where, "away from zero",
                  f"smallest eigenvalue {value(a['mineig_shrink'])}", v_bound,
                  f"condition number {value(a['cond_shrink'])}", section=section)
    drop = abs(a["corr_ref"]) - abs(a["corr_shrink"])
    kept = abs(a["corr_noshrink"]) - abs(a["corr_shrink"])
    v_damp = ("reproduced" if drop > DAMPED and kept > DAMPED else "partly" if max(drop, kept) > DAMPED
              else "not reproduced")
    damp = Claim("Shrinkage dampens correlations", where, "dampens",
                 f"{num(a['corr_ref'])} → {num(a['corr_shrink'])}", v_damp,
                 f"strongest pair; {num(a['corr_noshrink'])} without shrinkage", section=section)
    return [floor, bound, damp]


def claims(*, convergence: pd.DataFrame, ablation: Mapping[str, float], max_iter: int | None,
           quick: bool) -> list[Claim]:
    """The page's claims table: Appendix G's iteration counts and what its floor and shrinkage do.

    Parameters
    ----------
    convergence : DataFrame
        Rows of :func:`convergence_row`, indexed by matrix (the matrices run).
    ablation : mapping
        :func:`ablation_summary`.
    max_iter : int or None
        This run's cap on EM iterations (None: each configuration's own).
    quick : bool
        Quick mode.

    Returns
    -------
    list of Claim
    """
    rows = [_iteration_claim(n, convergence, max_iter, quick) for n in PAPER_ITERATIONS]
    return rows + _shrinkage_claims(ablation)


def _claims_note(rows: Sequence[Claim], conv: pd.DataFrame, *, max_iter: int | None, quick: bool) -> str:
    parts = [failures(rows) or "Every claim this run checked is reproduced."]
    stopped = [str(n) for n, r in conv.iterrows() if n in ("mteb", "merged") and r["converged"]]
    if stopped:
        tols = and_join(f"{sci(conv.loc[n, 'tol'])} on {label(n)}" for n in stopped)
        parts.append(f"The iteration counts depend on a stopping tolerance that Appendix G does not state; this run "
                     f"stops at {tols}, and another tolerance gives other counts.")
    capped = [n for n in PAPER_ITERATIONS if n in conv.index and not conv.loc[n, "converged"] and max_iter is not None]
    if capped:
        who = "quick mode caps" if quick else "this run caps"
        parts.append(f"The iteration counts on {labels(capped)} were not run: {who} EM at "
                     f"{count(max_iter, 'iteration')}, fewer than they need.")
    absent = [n for n in PAPER_ITERATIONS if n not in conv.index]
    if absent:
        parts.append(f"{labels(absent)} {'was' if len(absent) == 1 else 'were'} not in this run, so "
                     f"{'its' if len(absent) == 1 else 'their'} iteration count{'' if len(absent) == 1 else 's'} "
                     f"{'was' if len(absent) == 1 else 'were'} not run.")
    return paragraph(*parts)


def _unfloored_sentence(cond: float) -> str:
    """The condition number of the fit without floor and shrinkage, or that it is singular to rounding
    (:func:`~benchsel_lib.studies.em.condition_number` is inf)."""
    if math.isfinite(cond):
        return f"Without floor and shrinkage the covariance's condition number is {value(cond)}."
    return ("Without floor and shrinkage the covariance is singular to rounding: its condition number is "
            "unbounded.")


def _squarem_sentences(conv: pd.DataFrame) -> list[str]:
    out = []
    open_runs = [str(n) for n, r in conv.iterrows() if not (r["converged"] and r["squarem_converged"])]
    for name, r in conv.iterrows():
        n = label(str(name))
        if (_mmlu_sentence(conv) and name == "mmlu") or str(name) in open_runs:
            continue
        if r["squarem"] < r["iterations"] and r["max_diff"] < 10 * r["tol"] + 1e-3:
            out.append(f"On {n} SQUAREM reaches the point where plain EM stops after {r['iterations']} iterations "
                       f"in {r['squarem']} EM updates (largest correlation difference {sci(r['max_diff'])}).")
        elif r["squarem"] < r["iterations"]:
            out.append(f"On {n} SQUAREM stops after {r['squarem']} updates, but at a point whose correlations differ "
                       f"from the plain iterate's by up to {num(r['max_diff'], '.3f')}: at the tolerance "
                       f"{sci(r['tol'])} the estimate depends on the path, which is why the library keeps the plain "
                       f"iteration there.")
        else:
            out.append(f"On {n} both stop after {r['iterations']} iterations.")
    if open_runs:
        out.append(f"On {labels(open_runs)} plain EM or SQUAREM stops at the iteration cap before the tolerance, "
                   f"so the two are not compared.")
    return out


def _loglik_sentence(conv: pd.DataFrame) -> str:
    drops = {str(n): int(r["loglik_decreases"]) for n, r in conv.iterrows()}
    rising = [str(n) for n, r in conv.iterrows()
              if r["loglik_rising_at_end"] and r["converged"] and r["iterations"] > 2]
    text = ("The observed-data log-likelihood never decreases, as an EM iteration guarantees" if not any(drops.values())
            else "The log-likelihood decreases at " + "; ".join(f"{v} iterations on {label(n)}"
                                                                 for n, v in drops.items() if v))
    if rising:
        text += (f", and on {labels(rising)} it is still rising at the last iteration: the tolerance, not a fixed "
                 f"point, ends the run")
    return text + "."


def _mmlu_sentence(conv: pd.DataFrame) -> str:
    if "mmlu" not in conv.index:
        return ""
    r = conv.loc["mmlu"]
    if r["observed"] < 1 or not r["converged"]:
        return ""
    text = (f"MMLU is fully observed, so the E-step has nothing to impute and EM stops after {r['iterations']} "
            f"iterations")
    if abs(r["first_change"] - 1 / r["M"]) < 1e-9:
        text += (f": the first only rescales the pairwise covariance from the divisor M − 1 to M (a relative change "
                 f"of 1/{r['M']})")
    return text + "."


def _convergence_passages(conv: pd.DataFrame) -> dict[str, str]:
    drawn = [str(n) for n, r in conv.iterrows() if r["iterations"] > 2]
    stops = "; ".join(f"{label(str(n))} {'reaches' if r['converged'] else 'does not reach'} {sci(r['tol'])}"
                      f" {'after' if r['converged'] else 'within'} {r['iterations']} iterations"
                      for n, r in conv.iterrows() if str(n) in drawn)
    short = [str(n) for n in conv.index if str(n) not in drawn]
    caption = paragraph(
        "**Figure 2.1.** Plain EM on the standardized matrices. Left: relative change of Σ per iteration, with each "
        "matrix's tolerance dashed in its colour; right: the gap of the log-likelihood per model to its final value.",
        f"{stops[:1].upper()}{stops[1:]}." if stops else "",
        f"{labels(short)} (two iterations or fewer) {'is' if len(short) == 1 else 'are'} not drawn." if short else "")
    return {"conv_caption": caption,
            "convergence_md": paragraph(_mmlu_sentence(conv), *_squarem_sentences(conv), _loglik_sentence(conv))}


def _ablation_passages(a: Mapping[str, float], *, dataset: str, full_models: int, shape: tuple[int, int], seed: int,
                       max_iter: int, tol: float, coincide: bool) -> dict[str, str]:
    m_sub, n_sub = shape
    intro = (f"To see what each does, this run draws {m_sub} of {label(dataset)}'s {full_models} models at random "
             f"(seed {seed}), so that M = {m_sub} is below N = {n_sub} and α = {num(a['alpha'])}, and fits EM "
             f"without a floor, with ε = 10⁻⁶ and with ε = 10⁻³, each with and without shrinkage (at most "
             f"{count(max_iter, 'iteration')}, tolerance {sci(tol)}). The table's pairs are the three most "
             f"correlated in the estimate on all {full_models} models.")
    caption = paragraph(
        f"**Figure 2.2.** Eigenvalues of the EM covariance of the {m_sub}-model subsample, largest first, one colour "
        f"per floor.",
        f"Without shrinkage (solid lines) the fits share their largest eigenvalues; the smallest fall to "
        f"{sci(a['mineig_none'])} without a floor and stop at the floor with one.",
        f"With shrinkage (dashed) every eigenvalue stays above {num(min(a['mineig_shrink'], a['mineig_shrink_min']))}"
        + (" and the three fits lie almost on top of each other, whatever the floor." if coincide else "."))
    corr_move = "drops" if abs(a["corr_shrink"]) < abs(a["corr_ref"]) else "rises"
    text = paragraph(
        _unfloored_sentence(a["cond_none"]),
        f"The floor 10⁻³ alone bounds it at {value(a['cond_1e3'])}; shrinkage brings it to "
        f"{value(a['cond_shrink'])}.",
        f"The price is paid in the correlations: shrinkage mixes in α of the identity, so the strongest correlation "
        f"({num(a['corr_ref'])} with all models) {corr_move} to {num(a['corr_shrink'])} with it and is "
        f"{num(a['corr_noshrink'])} without, and {count(a['k90_shrink'], 'component')} instead of "
        f"{a['k90_noshrink']} reach 90% of the variance, the spectrum of a matrix close to the identity.")
    return {"ablation_intro": intro, "ablation_caption": caption, "ablation_md": text}


def _configs_passage(configs: pd.DataFrame) -> str:
    mmlu = label("mmlu")
    def where(column: str) -> tuple[int, str]:
        rows = configs[configs[column].str.contains("/")]
        text = "; ".join(f"{mx} at {'holdouts' if len(g) > 1 else 'holdout'} {', '.join(g['Holdout'])}"
                         for mx, g in rows.groupby("Matrix", sort=False))
        return len(rows), text

    n_floor, floors = where("Floor")
    n_cap, _ = where("Cap")
    return paragraph(
        f"In this table the floors of the two configurations differ in {n_floor} of the {len(configs)} rows"
        + (f" ({floors})" if n_floor else "") + f", and the iteration caps in {n_cap}.",
        "" if (configs["Matrix"] == mmlu).any() else
        f"{mmlu} is not listed: it is fully observed and uses the pairwise estimate.")


def _recovery_passages(rec: pd.DataFrame, *, n_models: int, n_benchmarks: int, rank: int, reps: int,
                       max_iter: int) -> dict[str, str]:
    worst, best = rec.index.max(), rec.index.min()
    em_c, pw_c = rec[("corr_error", "em")], rec[("corr_error", "pairwise")]
    some = rec.index[rec.index > 0]
    better = int((em_c[some] < pw_c[some]).sum())
    fractions = ", ".join(pct(f) for f in rec.index)
    intro = (f"This run draws {n_models} models × {n_benchmarks} benchmarks with a rank-{rank} factor part, "
             f"{count(reps, 'draw')} at each missing fraction ({fractions}), and caps EM at "
             f"{count(max_iter, 'iteration')}.")
    grow = (f"from {num(em_c[best], '.3f')} to {num(em_c[worst], '.3f')}" if worst > best else "")
    caption = paragraph(
        "**Figure 2.3.** Errors of the estimates against the share of missing entries "
        + (f"(mean of {reps} draws, range shaded)." if reps > 1 else "(one draw)."),
        f"EM's correlation error grows {grow}, the pairwise estimate's to {num(pw_c[worst], '.3f')}." if grow else "")
    text = paragraph(
        f"With {pct(worst)} of the entries missing, EM's correlation error is {num(em_c[worst], '.3f')} against "
        f"{num(pw_c[worst], '.3f')} for the pairwise estimate, and its mean error "
        f"{num(rec.loc[worst, ('mean_error', 'em')], '.3f')} against "
        f"{num(rec.loc[worst, ('mean_error', 'pairwise')], '.3f')} "
        f"for the observed-entry mean, which is biased because the missingness depends on the scores.",
        f"With {pct(best)} missing the error, {num(em_c[best], '.3f')}, is the sampling error of a finite sample."
        if best != worst else "",
        (f"EM's correlation error is the smaller one at every fraction with entries missing." if better == len(some)
         else f"EM's correlation error is the smaller one at {better} of the {len(some)} fractions with entries "
              f"missing.") if len(some) else "")
    return {"recovery_intro": intro, "recovery_caption": caption, "recovery_md": text}


def prose(
    *,
    convergence: pd.DataFrame,
    ablation: Mapping[str, float],
    ablation_dataset: str,
    ablation_shape: tuple[int, int],
    ablation_models_full: int,
    ablation_coincide: bool,
    configs: pd.DataFrame,
    recovery: pd.DataFrame,
    recovery_setup: Mapping[str, int],
    seed: int,
    tol: float | None,
    max_iter: int | None,
    ablation_max_iter: int,
    quick: bool,
) -> PageProse:
    """The page's glued passages: the claims table and its note, captions and the sections' findings.

    Parameters
    ----------
    convergence : DataFrame
        Rows of :func:`convergence_row`, indexed by matrix.
    ablation : mapping
        :func:`ablation_summary`.
    ablation_dataset : str
        Matrix the ablation subsample is drawn from; ``ablation_shape`` its (M, N), ``ablation_models_full``
        the models of the whole matrix, ``ablation_coincide`` whether the shrunk fits' spectra coincide.
    configs : DataFrame
        :func:`configs_table`.
    recovery : DataFrame
        :func:`recovery_summary`; ``recovery_setup`` its ``n_models``, ``n_benchmarks``, ``rank``, ``reps``,
        ``max_iter``.
    seed, tol, max_iter, ablation_max_iter, quick :
        The run's seed, tolerance and iteration cap overrides, the ablation's cap, quick mode.

    Returns
    -------
    PageProse
        Passages ``claims``, ``claims_note``, ``conv_caption``, ``convergence_md``, ``ablation_intro``,
        ``ablation_caption``, ``ablation_md``, ``configs_md``, ``recovery_intro``, ``recovery_caption``,
        ``recovery_md``.
    """
    rows = claims(convergence=convergence, ablation=ablation, max_iter=max_iter, quick=quick)
    ran = list(dict.fromkeys([*map(str, convergence.index), ablation_dataset]))
    passages = {"claims": claims_table(rows),
                "claims_note": _claims_note(rows, convergence, max_iter=max_iter, quick=quick),
                **_convergence_passages(convergence),
                **_ablation_passages(ablation, dataset=ablation_dataset, full_models=ablation_models_full,
                                     shape=ablation_shape, seed=seed, max_iter=ablation_max_iter,
                                     tol=tol if tol is not None else 1e-6, coincide=ablation_coincide),
                "configs_md": _configs_passage(configs),
                **_recovery_passages(recovery, **recovery_setup)}
    return PageProse(ran, passages)
