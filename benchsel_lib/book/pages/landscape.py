"""Chapter 1, the benchmark landscape (Section 5, Appendices D and E): the paper's numbers for Tables 1-3, Figure 8
and the experiment matrices, the tables as the page shows them and the claims table (:func:`claims`)."""
from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..claims import VERDICTS, Claim, not_run, quantity, verdict
from ..prose import count, label, num

__all__ = ["PAPER_NODES", "PAPER_SHAPES", "PAPER_T2_N", "SHORT", "chat_core", "claims", "matrices_table",
           "merged_rebuild", "table1_view", "table2_view", "table3_view"]

#: Section 5, Appendices D and I: (models, benchmarks, observed fraction) of the experiment matrices.
PAPER_SHAPES = {"mmlu": (5452, 57, 1.0), "mteb": (263, 56, 0.773), "merged": (118, 114, 0.311),
                "benchpress": (83, 49, 0.338)}
#: Table 2: canonical models found in 2, 3, ..., 7 collections.
PAPER_T2_N = {2: 33, 3: 36, 4: 21, 5: 21, 6: 4, 7: 3}
#: Figure 8's node numbers (Table 2's check marks per collection).
PAPER_NODES = {"mmlu": 31, "open_llm": 60, "helm": 17, "alpaca_eval": 60, "arena_hard": 52, "livebench": 74,
               "wildbench": 50, "mt_bench": 3, "bigcode": 61}
#: Appendix D: MTEB models dropped for a single observed benchmark.
PAPER_MTEB_DROPPED = 5
#: Table 2's column abbreviations.
SHORT = {"mmlu": "MMLU", "open_llm": "OL2", "helm": "HELM", "alpaca_eval": "AE2", "arena_hard": "AH",
         "livebench": "LB", "wildbench": "WB", "mt_bench": "MT", "bigcode": "BC", "mteb": "MTEB"}


def _shape(m: int, n: int) -> str:  # kept on one line in a table cell
    return f"{m:,}\u00a0×\u00a0{n}"


def table1_view(t1: pd.DataFrame) -> pd.DataFrame:
    """Table 1 (``table_datasets``) beside the paper's M, N and % missing, with an ``as paper`` column."""
    same = ((t1["M"] == t1["paper_M"]) & (t1["N"] == t1["paper_N"])
            & (abs(t1["pct_missing"] - t1["paper_pct_missing"]) < 0.05))
    names = {"label": "Collection", "pct_missing": "% missing", "paper_M": "paper M", "paper_N": "paper N",
             "paper_pct_missing": "paper % missing"}
    return t1.rename(columns=names).assign(**{"as paper": same})


def table2_view(t2: pd.DataFrame) -> pd.DataFrame:
    """Table 2 (``table_canonical``): the model, a check mark per collection (the paper's abbreviations), ``n``."""
    marks = {short: np.where(t2[key].to_numpy(dtype=bool), "✓", "") for key, short in SHORT.items() if key in t2}
    return pd.DataFrame({"Model": t2.index.astype(str), **marks, "n": t2["n"].to_numpy()})


def table3_view(t3: pd.DataFrame) -> pd.DataFrame:
    """Table 3 (``table_unmatched``) beside the paper's total and unmatched, with an ``as paper`` column."""
    same = (t3["total"] == t3["paper_total"]) & (t3["unmatched"] == t3["paper_unmatched"])
    return t3.rename(columns={"label": "Collection", "paper_total": "paper total",
                              "paper_unmatched": "paper unmatched"}).assign(**{"as paper": same})


def matrices_table(matrices: Mapping[str, Any]) -> pd.DataFrame:
    """Shape, % observed and observed models per benchmark (fewest, median) of each matrix, beside the paper's."""
    per_col = {name: np.asarray(m.observed_counts(axis=0)) for name, m in matrices.items()}
    return pd.DataFrame([{"Matrix": label(n), "M × N": _shape(*m.shape), "% observed": 100 * m.observed_fraction,
                          "paper M × N": _shape(*PAPER_SHAPES[n][:2]), "paper % observed": 100 * PAPER_SHAPES[n][2],
                          "fewest per column": int(per_col[n].min()), "median per column": float(np.median(per_col[n]))}
                         for n, m in matrices.items()])


def merged_rebuild(released: Any, disc: pd.DataFrame) -> dict[str, int]:
    """Entries of the released Merged (``*_obs``) and those the rebuild (``merged_discrepancies``) gives back
    (``*_same``), in and outside ``mmlu/*``; models whose MMLU row the mirror lacks or holds from another run."""
    obs = np.asarray(released.observed, dtype=bool)
    is_mmlu = np.array([str(b).startswith("mmlu/") for b in released.benchmarks])
    bad = disc[disc["status"].isin(["unreproducible", "value"])]
    bad_mmlu, models = int(bad["benchmark"].astype(str).str.startswith("mmlu/").sum()), bad.groupby("status")["model"]
    n_mmlu, n_other = int(obs[:, is_mmlu].sum()), int(obs[:, ~is_mmlu].sum())
    return {"mmlu_obs": n_mmlu, "mmlu_same": n_mmlu - bad_mmlu, "other_obs": n_other,
            "other_same": n_other - (len(bad) - bad_mmlu),
            **{key: int(models.nunique().get(st, 0)) for key, st in (("models_missing", "unreproducible"),
                                                                      ("models_other", "value"))}}


def chat_core(nodes: pd.DataFrame, edges: pd.DataFrame, *, min_models: int = 20) -> tuple[float, float, int]:
    """Share of pairs of chat collections (of at least ``min_models`` canonical models) that share more models than
    the median other pair; that median; the number of such chat collections (Appendix E's "dense core")."""
    shared = {frozenset((e.source, e.target)): float(e.shared) for e in edges.itertuples()}
    chat = set(nodes.index[(nodes["category"] == "instruction/chat") & (nodes["n_models"] >= min_models)])
    pairs = [(a in chat and b in chat, shared.get(frozenset((a, b)), 0.0))
             for a, b in itertools.combinations(nodes.index, 2)]
    inner, outer = [s for c, s in pairs if c], [s for c, s in pairs if not c]
    if not inner or not outer:  # no pair to compare
        return 0.0, 0.0, len(chat)
    return float(np.mean(np.asarray(inner) > np.median(outer))), float(np.median(outer)), len(chat)


def _matrix_claim(name: str, m: Any | None, why: str) -> Claim:
    pm, pn, pobs = PAPER_SHAPES[name]
    where, paper = "App. I" if name == "benchpress" else "Sec. 5", _shape(pm, pn)
    key = quantity("matrix-size", matrix=name)
    if m is None:
        return not_run(f"{label(name)} matrix", where, paper, f"{label(name)} was not among this run's matrices",
                       section="the-experiment-matrices", key=key)
    worst = max((verdict(m.shape[0], pm, kind="count"), verdict(m.shape[1], pn, kind="count"),
                 verdict(100 * m.observed_fraction, 100 * pobs, kind="percent")), key=VERDICTS.index)
    return Claim(f"{label(name)} matrix", where, f"{paper}, {num(100 * pobs, '.1f')}% observed",
                 f"{_shape(*m.shape)}, {num(100 * m.observed_fraction, '.1f')}% observed", worst,
                 why if m.shape[0] == pm else f"{m.shape[0]:,} of the paper's {pm:,} models: {why}",
                 "the-mmlu-matrix" if name == "mmlu" else "the-experiment-matrices", key)


def claims(*, t1: pd.DataFrame, t2: pd.DataFrame, t3: pd.DataFrame, nodes: pd.DataFrame, edges: pd.DataFrame,
           matrices: Mapping[str, Any], rebuild: Mapping[str, int], mteb_dropped: int | None) -> list[Claim]:
    """The claims table: Tables 1-3, Figure 8, the experiment matrices and the Merged rebuild.

    Parameters
    ----------
    t1, t2, t3, nodes, edges : DataFrame
        ``table_datasets``, ``table_canonical``, ``table_unmatched`` and ``overlap_network`` (Figure 8).
    matrices, rebuild : mapping
        The run's experiment matrices by name (those missing give ``not run`` rows); :func:`merged_rebuild`.
    mteb_dropped : int or None
        :func:`single_benchmark_drops` of MTEB (None when MTEB was not run).

    Returns
    -------
    list of Claim
    """
    v1, v3 = table1_view(t1).drop(index="mmlu"), table3_view(t3).drop(index="mmlu")
    ok, n = int(v1["as paper"].sum() + v3["as paper"].sum()), len(v1) + len(v3)
    chat, median_other, n_chat = chat_core(nodes, edges)
    n_nodes = sum(int(nodes.at[k, "n_models"]) == v for k, v in PAPER_NODES.items() if k in nodes.index)
    n_mteb, n_canon = int(t2["mteb"].sum()) if "mteb" in t2.columns else 0, sum(PAPER_T2_N.values())
    same_n = {int(k): int(v) for k, v in t2["n"].value_counts().items()} == PAPER_T2_N
    same_rows = "merged" in matrices and set(map(str, matrices["merged"].models)) == set(map(str, t2.index))
    why = {"mmlu": "v1 result files not public", "benchpress": "the released matrix",
           "mteb": f"{count(mteb_dropped or 0, 'model')} with one score dropped (paper: {PAPER_MTEB_DROPPED})",
           "merged": "rows: Table 2's models" if same_rows else "rows: not Table 2's models"}
    r = rebuild
    return [Claim("Tables 1 and 3 rows other than MMLU", "Tables 1, 3", f"{n} rows", f"{ok} of {n} equal",
                  verdict(ok / n, 1.0, kind="share"), "same files, same counts", "table-1"),
            Claim("Canonical models", "Table 2", str(n_canon), str(len(t2)), verdict(len(t2), n_canon, kind="count"),
                  "same counts per n" if same_n else "other counts per n", "table-2"),
            Claim("Figure 8's node numbers", "Fig. 8", f"{len(PAPER_NODES)} nodes",
                  f"{n_nodes} of {len(PAPER_NODES)} equal", verdict(n_nodes / len(PAPER_NODES), 1.0, kind="share"),
                  "Table 2's check marks per collection", "figure-8"),
            Claim("MTEB shares no model", "Fig. 8", "0", str(n_mteb), verdict(n_mteb, 0, kind="count"),
                  "embedders only", "figure-8"),
            Claim("Chat collections form a dense core", "App. E", "a dense core", f"{num(100 * chat, '.0f')}% of pairs "
                  f"denser than the median", verdict(chat, 1.0, kind="share"), f"pairs of the {n_chat} chat sets of "
                  f"20+ models vs other pairs' median, {num(median_other, '.0f')}", "figure-8"),
            *[_matrix_claim(name, matrices.get(name), why[name]) for name in PAPER_SHAPES],
            Claim("Merged rebuilt from its sources, non-MMLU columns", "App. D", f"{r['other_obs']:,} entries",
                  f"{r['other_same']:,} equal", verdict(r["other_same"] / r["other_obs"], 1.0, kind="share"),
                  "same files, same mapping", "merged-from-its-sources"),
            Claim("Merged rebuilt from its sources, MMLU columns", "App. D", f"{r['mmlu_obs']:,} entries",
                  f"{r['mmlu_same']:,} equal", verdict(r["mmlu_same"] / max(r["mmlu_obs"], 1), 1.0, kind="share"),
                  f"mirror lacks {count(r['models_missing'], 'model')}, other runs of {r['models_other']}",
                  "merged-from-its-sources")]
