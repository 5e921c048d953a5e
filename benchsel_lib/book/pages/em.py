"""Chapter 2, EM covariance estimation under missingness (Appendix G): the paper's numbers, the page's tables and
its claims table (:func:`claims`): iteration counts, and what the PSD floor and Ledoit-Wolf shrinkage do."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...method.covariance import cov_to_corr
from ...method.em import em_settings
from ..claims import Claim, not_run, quantity, verdict
from ..prose import label, num, pct

__all__ = ["ABLATION", "PAPER_ITERATIONS", "WELL_CONDITIONED", "ablation_settings", "ablation_table", "claims",
           "configs_table", "convergence_row", "convergence_table", "recovery_table", "sci"]

#: Appendix G, "Convergence": (the paper's words, the number compared, kind, direction) of plain EM's iterations.
PAPER_ITERATIONS = {"mmlu": ("2–3", 3.0, "count", "at most"), "mteb": ("roughly 300", 300.0, "relative", "both"),
                    "merged": ("274", 274.0, "relative", "both")}
#: The ablation's six fits: (label, PSD floor or None, shrinkage on).
ABLATION = (("no floor, no shrinkage", None, False), ("floor 10⁻⁶, no shrinkage", 1e-6, False),
            ("floor 10⁻³, no shrinkage", 1e-3, False), ("no floor, shrinkage", None, True),
            ("floor 10⁻⁶, shrinkage", 1e-6, True), ("floor 10⁻³, shrinkage", 1e-3, True))
#: "Well-conditioned" (Appendix G): a condition number below this.
WELL_CONDITIONED = 1e3
_SUP = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sci(value: float) -> str:
    """``5e-4`` -> ``"5 × 10⁻⁴"``, ``1e-6`` -> ``"10⁻⁶"``, ``47.4`` -> ``"47.4"``; inf -> ``"unbounded"``."""
    v = float(value)
    if math.isinf(v) and v > 0:
        return "unbounded"
    num(v, what="a number in scientific notation")
    if v == 0 or 1e-2 <= abs(v) < 1e4:
        return f"{v:.3g}" if abs(v) < 1e3 else f"{v:,.0f}"
    mantissa, exponent = f"{v:.1e}".split("e")
    mantissa, power = mantissa.rstrip("0").rstrip("."), "10" + str(int(exponent)).translate(_SUP)
    return power if mantissa == "1" else f"{mantissa}\u00a0×\u00a0{power}"


def convergence_row(name: str, matrix: Any, opts: Mapping[str, Any], plain: Any, fast: Any) -> dict[str, Any]:
    """One matrix's plain EM and SQUAREM fits under ``opts`` (``em_settings``): settings, iterations, whether each
    converged, their largest correlation difference (``max_diff``), log-likelihood decreases of plain EM."""
    ll = np.asarray(plain.loglik, dtype=float)
    return {"matrix": name, "M": matrix.shape[0], "N": matrix.shape[1], "observed": float(matrix.observed_fraction),
            "eps_psd": opts["eps_psd"], "tol": float(opts["tol"]), "max_iter": int(opts["max_iter"]),
            "iterations": int(plain.n_iter), "converged": bool(plain.converged), "squarem": int(fast.n_iter),
            "squarem_converged": bool(fast.converged),
            "max_diff": float(np.abs(cov_to_corr(plain.cov) - cov_to_corr(fast.cov)).max()),
            "loglik_decreases": int((np.diff(ll) < -1e-8 * np.abs(ll[1:])).sum())}


def _its(n: int, ok: bool) -> str:
    return str(int(n)) if ok else f"{int(n)} (cap)"


def convergence_table(conv: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`convergence_row` as shown: one per matrix, settings in words, ``(cap)`` if not converged."""
    return pd.DataFrame([{"Matrix": label(str(n)), "Size": f"{r['M']}\u00a0×\u00a0{r['N']}",
                          "Observed": pct(r["observed"]), "Floor": sci(r["eps_psd"]) if r["eps_psd"] else "none",
                          "Tolerance": sci(r["tol"]), "Plain EM": _its(r["iterations"], r["converged"]),
                          "SQUAREM": _its(r["squarem"], r["squarem_converged"]),
                          "Corr. difference": sci(r["max_diff"])} for n, r in conv.iterrows()])


def ablation_settings(max_iter: int) -> dict[str, dict[str, Any]]:
    """The fits of :data:`ABLATION` as settings for ``compare_em_settings``."""
    return {name: {"eps_psd": eps, "shrinkage": "auto" if on else None, "max_iter": int(max_iter)}
            for name, eps, on in ABLATION}


def ablation_table(ablation: pd.DataFrame, pair_names: list[str], reference: list[float]) -> pd.DataFrame:
    """``compare_em_settings`` as shown: a row per fit, the pairs' correlations, and a reference row (all models)."""
    rows = [{"Fit": fit, "Iterations": _its(r["n_iter"], r["converged"]),
             "Smallest eigenvalue": sci(r["min_eigenvalue"]),
             "Condition number": sci(r["condition_number"]), "Components for 90%": str(int(r["k90"])),
             **{f"Pair {i + 1}": float(r[p]) for i, p in enumerate(pair_names)}} for fit, r in ablation.iterrows()]
    return pd.DataFrame(rows + [{"Fit": "all models (reference)",
                                 **{f"Pair {i + 1}": float(v) for i, v in enumerate(reference)}}])


def configs_table(matrices: Mapping[str, Any], *, holdouts: tuple[float, ...] = (0.0, 0.1, 0.5, 0.9)) -> pd.DataFrame:
    """The EM settings of the "released" and "early" configurations per matrix and holdout ("released / early")."""
    rows = []
    for name, m in matrices.items():
        for h in holdouts:
            n_train = int(round((1 - h) * m.shape[0]))
            s = [em_settings(n_train, m.shape[1], m.observed_fraction, config=c, context="full" if h == 0 else "cv")
                 for c in ("released", "early")]
            row = {"Matrix": label(name), "Holdout": pct(h), "Models": n_train}
            for key, head, fmt in (("eps_psd", "Floor", sci), ("max_iter", "Cap", str), ("tol", "Tolerance", sci)):
                a, b = fmt(s[0][key]), fmt(s[1][key])
                row[head] = a if a == b else f"{a}\u00a0/\u00a0{b}"
            rows.append({**row, "Shrinkage α": float(s[0]["shrinkage"] or 0.0)})
    return pd.DataFrame(rows)


def recovery_table(recovery: pd.DataFrame) -> pd.DataFrame:
    """``em_recovery_study`` as shown: mean errors of EM and the pairwise estimate per missing fraction."""
    s = recovery.groupby(["missing_fraction", "estimator"])[["corr_error", "mean_error", "n_iter"]].mean().unstack()
    heads = {"EM: correlation error": ("corr_error", "em"), "Pairwise: correlation error": ("corr_error", "pairwise"),
             "EM: mean error": ("mean_error", "em"), "Observed mean: error": ("mean_error", "pairwise"),
             "EM iterations": ("n_iter", "em")}
    return pd.DataFrame({"Missing": s.index.to_numpy(), **{h: s[c].to_numpy() for h, c in heads.items()}})


def _iteration_claim(name: str, conv: pd.DataFrame, config: str, quick: bool) -> Claim:
    words, paper, kind, direction = PAPER_ITERATIONS[name]
    what = f"{label(name)}: plain EM iterations"
    if name not in conv.index:
        return not_run(what, "App. G", words, f"{label(name)} was not in this run", section="convergence")
    r = conv.loc[name]
    key = quantity("em-iterations", matrix=name, config=config, tol=sci(r["tol"]), max_iter=int(r["max_iter"]))
    if not r["converged"]:
        return not_run(what, "App. G", words, f"{'quick mode caps' if quick else 'this run caps'} EM at "
                       f"{int(r['max_iter'])} iterations", section="convergence", key=key)
    why = "nothing to impute" if r["observed"] == 1 else f"stopped at tolerance {sci(r['tol'])}, not stated in App. G"
    return Claim(what, "App. G", words, str(int(r["iterations"])),
                 verdict(r["iterations"], paper, kind=kind, direction=direction), why, "convergence", key)


def claims(*, convergence: pd.DataFrame, ablation: pd.DataFrame, pair_names: list[str], config: str,
           quick: bool) -> list[Claim]:
    """The claims table: Appendix G's iteration counts, and what its floor and shrinkage do (M < N).

    Parameters
    ----------
    convergence, ablation : DataFrame
        Rows of :func:`convergence_row` by matrix (those run); ``compare_em_settings`` of :func:`ablation_settings`.
    pair_names : list of str
        The ablation's pair columns, strongest first.
    config : str
        The EM configuration ("released" or "early"); ``quick``: quick mode (a capped EM is ``not run``).

    Returns
    -------
    list of Claim
    """
    a, sec = ablation, "shrinkage-and-the-floor"
    floor, none = a.loc["floor 10⁻³, no shrinkage"], a.loc["no floor, no shrinkage"]
    shrunk = a.loc["floor 10⁻³, shrinkage"]
    damped = float(np.mean([abs(shrunk[p]) < abs(floor[p]) for p in pair_names]))
    return [*[_iteration_claim(n, convergence, config, quick) for n in PAPER_ITERATIONS],
            Claim("A floor of 10⁻³ stops eigenvalue collapse", "App. G", "smallest eigenvalue 10⁻³",
                  sci(floor["min_eigenvalue"]), verdict(floor["min_eigenvalue"], 1e-3, kind="relative",
                                                        direction="at least"),
                  f"without a floor: {sci(none['min_eigenvalue'])}", sec),
            Claim("Shrinkage makes the covariance well-conditioned", "App. G",
                  f"condition below {sci(WELL_CONDITIONED)}",
                  sci(shrunk["condition_number"]), verdict(shrunk["condition_number"], WELL_CONDITIONED,
                                                           kind="relative", direction="at most"),
                  f"floor 10⁻³ alone: {sci(floor['condition_number'])}", sec),
            Claim("Shrinkage dampens correlations", "App. G", "all pairs lower", f"{num(100 * damped, '.0f')}% of "
                  f"{len(pair_names)} pairs lower", verdict(damped, 1.0, kind="share"),
                  f"strongest pair {num(floor[pair_names[0]])} → {num(shrunk[pair_names[0]])}", sec)]
