"""Chapter 1: the benchmark landscape and the experiment matrices (Section 5, Appendices D and E).

The page rebuilds the paper's Tables 1-3 and Figure 8 from the mirrored
leaderboard files, loads the experiment matrices, and rebuilds Merged from
its sources. This module turns those tables into what the page shows: the
tables as a reader sees them (:func:`table1_view` and the other ``*_view``
functions), the claims table (:func:`claims`) and the glued passages
(:func:`prose`).
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..claims import Claim, claims_table, failures, not_run, verdict
from ..notebook import and_join
from ..prose import PageProse, count, label, num, paragraph, pct

__all__ = ["ALWAYS", "PAPER_NODES", "PAPER_SHAPES", "PAPER_T2_N", "SHORT", "claims", "compare_tables",
           "matrices_table", "merged_rebuild", "nodes_view", "prose", "rebuild_view", "single_benchmark_drops",
           "sources_view", "table1_view", "table2_view", "table3_view"]

#: The paper's experiment matrices: (models, benchmarks, observed fraction); Section 5, Appendices D and I.
PAPER_SHAPES: dict[str, tuple[int, int, float]] = {
    "mmlu": (5452, 57, 1.0), "mteb": (263, 56, 0.773), "merged": (118, 114, 0.311), "benchpress": (83, 49, 0.338)}
#: Table 2 of the paper: how many canonical models appear in 2, 3, ... 7 collections (its ``n`` column).
PAPER_T2_N: dict[int, int] = {2: 33, 3: 36, 4: 21, 5: 21, 6: 4, 7: 3}
#: Table 2 of the paper: check marks per collection, the numbers inside Figure 8's nodes.
PAPER_NODES: dict[str, int] = {"mmlu": 31, "open_llm": 60, "helm": 17, "alpaca_eval": 60, "arena_hard": 52,
                               "livebench": 74, "wildbench": 50, "mt_bench": 3, "bigcode": 61}
#: Appendix D: MTEB models dropped for a single observed benchmark.
PAPER_MTEB_DROPPED = 5
#: Matrices whose data the page computes whatever the run's matrices (Tables 1-3 and the two rebuilds).
ALWAYS = ("mmlu", "mteb", "merged")
#: The paper's column abbreviations of Table 2.
SHORT: dict[str, str] = {"mmlu": "MMLU", "open_llm": "OL2", "helm": "HELM", "alpaca_eval": "AE2", "arena_hard": "AH",
                         "livebench": "LB", "wildbench": "WB", "mt_bench": "MT", "bigcode": "BC", "mteb": "MTEB"}
_CHAT = "instruction/chat"
_T2 = "paper's Table 2"


def compare_tables(t1: pd.DataFrame, t3: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tables 1 and 3 with an ``as paper`` column (M, N and % missing; total and unmatched)."""
    t1 = t1.assign(**{"as paper": (t1["M"] == t1["paper_M"]) & (t1["N"] == t1["paper_N"])
                      & np.isclose(t1["pct_missing"], t1["paper_pct_missing"], atol=0.05)})
    t3 = t3.assign(**{"as paper": (t3["total"] == t3["paper_total"]) & (t3["unmatched"] == t3["paper_unmatched"])})
    return t1, t3


def table1_view(t1: pd.DataFrame) -> pd.DataFrame:
    """Table 1 as shown: collection, M, N, % missing, the paper's three values, and whether they agree."""
    return pd.DataFrame({"Collection": t1["label"], "M": t1["M"], "N": t1["N"], "% missing": t1["pct_missing"],
                         "paper M": t1["paper_M"], "paper N": t1["paper_N"],
                         "paper % missing": t1["paper_pct_missing"], "as paper": t1["as paper"]})


def table2_view(t2: pd.DataFrame) -> pd.DataFrame:
    """Table 2 as shown: the model, a check mark per collection (the paper's abbreviations), ``n``."""
    out = pd.DataFrame({"Model": t2.index.astype(str)})
    for key, short in SHORT.items():
        if key in t2.columns:
            out[short] = np.where(t2[key].to_numpy(dtype=bool), "✓", "")
    out["n"] = t2["n"].to_numpy()
    return out


def table3_view(t3: pd.DataFrame) -> pd.DataFrame:
    """Table 3 as shown: collection, total, matched, unmatched, the paper's total and unmatched, agreement."""
    return pd.DataFrame({"Collection": t3["label"], "total": t3["total"], "matched": t3["matched"],
                         "unmatched": t3["unmatched"], "paper total": t3["paper_total"],
                         "paper unmatched": t3["paper_unmatched"], "as paper": t3["as paper"]})


def nodes_view(nodes_vs_table3: pd.DataFrame, t3: pd.DataFrame) -> pd.DataFrame:
    """Figure 8's node numbers beside the leaderboard rows they name and Table 3's matched counts.

    Parameters
    ----------
    nodes_vs_table3 : DataFrame
        :func:`benchsel_lib.studies.landscape.node_counts`.
    t3 : DataFrame
        Table 3 (``benchsel_lib.data.canonical.table_unmatched``).

    Returns
    -------
    DataFrame
        One row per collection with canonical models: ``Collection``, ``Figure 8 node``,
        ``paper's Table 2``, ``rows named``, ``paper matched`` (the paper's total minus
        unmatched) and ``rows in mirror``.
    """
    nv = nodes_vs_table3
    paper_matched = (t3["paper_total"] - t3["paper_unmatched"]).reindex(nv.index)
    return pd.DataFrame({"Collection": nv["label"], "Figure 8 node": nv["canonical_models"],
                         _T2: [PAPER_NODES.get(k, np.nan) for k in nv.index],
                         "rows named": nv["named_rows"], "paper matched": paper_matched,
                         "rows in mirror": nv["rows_in_mirror"]})


def matrices_table(matrices: Mapping[str, Any]) -> pd.DataFrame:
    """Shape, observed share and per-column coverage of each experiment matrix, beside the paper's.

    Returns
    -------
    DataFrame
        Columns ``Matrix, M × N, % observed, paper M × N, paper % observed, fewest per column,
        median per column`` (the last two: observed models per benchmark), one row per matrix.
    """
    rows = []
    for name, m in matrices.items():
        pm, pn, pobs = PAPER_SHAPES[name]
        counts = m.observed_counts(axis=0)
        rows.append({"Matrix": label(name), "M × N": _shape(*m.shape),
                     "% observed": 100 * m.observed_fraction, "paper M × N": _shape(pm, pn),
                     "paper % observed": 100 * pobs, "fewest per column": int(np.min(counts)),
                     "median per column": float(np.median(counts))})
    return pd.DataFrame(rows)


def sources_view(mmlu: Any) -> pd.DataFrame:
    """Where the rows of this project's MMLU matrix come from: file, models, share."""
    src = mmlu.row_info["source"].value_counts()
    return pd.DataFrame({"Source file": src.index.astype(str), "models": src.to_numpy(),
                         "share": src.to_numpy() / src.sum()})


def merged_rebuild(released: Any, disc: pd.DataFrame) -> dict[str, Any]:
    """Counts of the Merged rebuild, inside and outside the MMLU columns.

    Parameters
    ----------
    released : ScoreMatrix
        The released Merged matrix.
    disc : DataFrame
        ``benchsel_lib.data.canonical.merged_discrepancies`` (``model, benchmark, collection, status, ...``).

    Returns
    -------
    dict
        ``n_obs``, ``n_reproduced``, ``pct_reproduced``, ``n_unrep``, ``n_value``, ``n_models_unrep``,
        ``n_models_value``, ``n_mmlu_obs``/``n_mmlu_reproduced`` (entries of the ``mmlu/*`` columns),
        ``n_other_obs``/``n_other_reproduced`` (the other columns) and ``max_diff`` (largest
        difference of a rebuilt value, 0 when none differs).
    """
    obs = np.asarray(released.observed, dtype=bool)
    is_mmlu = np.array([str(b).startswith("mmlu/") for b in released.benchmarks])
    bad = disc[disc["status"].isin(["unreproducible", "value"])]
    bad_mmlu = int(bad["benchmark"].astype(str).str.startswith("mmlu/").sum())
    unrep, value = bad["status"] == "unreproducible", bad["status"] == "value"
    n_obs, n_mmlu = int(obs.sum()), int(obs[:, is_mmlu].sum())
    diffs = (bad.loc[value, "rebuilt"] - bad.loc[value, "released"]).abs()
    return {"n_obs": n_obs, "n_reproduced": n_obs - len(bad), "pct_reproduced": 100 * (n_obs - len(bad)) / n_obs,
            "n_unrep": int(unrep.sum()), "n_value": int(value.sum()),
            "n_models_unrep": int(bad.loc[unrep, "model"].nunique()),
            "n_models_value": int(bad.loc[value, "model"].nunique()),
            "n_mmlu_obs": n_mmlu, "n_mmlu_reproduced": n_mmlu - bad_mmlu,
            "n_other_obs": n_obs - n_mmlu, "n_other_reproduced": n_obs - n_mmlu - (len(bad) - bad_mmlu),
            "max_diff": float(diffs.max()) if len(diffs) else 0.0}


def rebuild_view(disc: pd.DataFrame, top: int) -> pd.DataFrame:
    """The ``top`` models with the most entries the rebuild does not give back, one row each.

    Returns
    -------
    DataFrame
        ``Model``, ``entries``, ``why`` (``"not mirrored"``: not in the mirrored MMLU tables;
        ``"other run"``: another leaderboard run) and ``largest difference`` (missing where the rebuild has no value).
    """
    bad = disc[disc["status"].isin(["unreproducible", "value"])]
    if bad.empty:
        return pd.DataFrame(columns=["Model", "entries", "why", "largest difference"])
    why = {"unreproducible": "not mirrored", "value": "other run"}
    g = bad.assign(diff=(bad["rebuilt"] - bad["released"]).abs()).groupby("model")
    out = pd.DataFrame({"entries": g.size(), "why": g["status"].agg(lambda s: why[s.iloc[0]]),
                        "largest difference": g["diff"].max()})
    out = out.rename_axis("Model").reset_index().sort_values(["entries", "Model"], ascending=[False, True])
    return out.head(top).reset_index(drop=True)


def _rows_verdict(n_match: int, n: int) -> str:
    """Reproduced when every row agrees, partly when at least half do."""
    return verdict(n_match, n, tol=0, partly=n / 2, direction="at least")


def _shape(m: int, n: int) -> str:
    """``"5,452 × 57"`` with no-break spaces (a table cell does not wrap it)."""
    return f"{m:,}\u00a0×\u00a0{n}"


def _matrix_claim(name: str, m: Any, *, extra_why: str = "") -> Claim:
    pm, pn, pobs = PAPER_SHAPES[name]
    obs = 100 * m.observed_fraction
    paper = f"{_shape(pm, pn)}, {num(100 * pobs, '.1f')}% observed"
    run = f"{_shape(*m.shape)}, {num(obs, '.1f')}% observed"
    if tuple(m.shape) == (pm, pn):
        v = verdict(obs, 100 * pobs, tol=0.05, partly=1.0)
        why = extra_why or "the released matrix"
    else:
        v = "not reproduced"
        why = f"{m.shape[0]:,} of the paper's {pm:,} models"
    return Claim(f"{label(name)} matrix", "App. I" if name == "benchpress" else "Sec. 5", paper, run, v, why,
                 "the-experiment-matrices")


def _chat_core(nodes: pd.DataFrame, edges: pd.DataFrame) -> tuple[float, float, int]:
    """Median shared models of pairs of chat collections, of the other pairs, and the chat collections' count."""
    shared = {frozenset((e.source, e.target)): float(e.shared) for e in edges.itertuples()}
    chat = [c for c in nodes.index if nodes.at[c, "category"] == _CHAT] if "category" in nodes.columns else []
    inner, outer = [], []
    for a, b in itertools.combinations(nodes.index, 2):
        (inner if a in chat and b in chat else outer).append(shared.get(frozenset((a, b)), 0.0))
    if not inner or not outer:
        return float("nan"), float("nan"), len(chat)
    return float(np.median(inner)), float(np.median(outer)), len(chat)


def _landscape_claims(t1: pd.DataFrame, t2: pd.DataFrame, t3: pd.DataFrame, nodes: pd.DataFrame,
                      edges: pd.DataFrame) -> list[Claim]:
    """Claims of Tables 1-3 and Figure 8."""
    rows = []
    others1, others3 = t1.drop(index="mmlu", errors="ignore"), t3.drop(index="mmlu", errors="ignore")
    n, ok = len(others1) + len(others3), int(others1["as paper"].sum() + others3["as paper"].sum())
    rows.append(Claim("Tables 1, 3 except MMLU", "Tables 1, 3", f"{n} rows", f"{ok} of {n} equal",
                      _rows_verdict(ok, n), "same files, same counts" if ok == n else "see the tables", "table-1"))
    lo_n, hi_n, lo_m, hi_m = int(t1["N"].min()), int(t1["N"].max()), t1["pct_missing"].min(), t1["pct_missing"].max()
    p = (int(t1["paper_N"].min()), int(t1["paper_N"].max()), t1["paper_pct_missing"].min(),
         t1["paper_pct_missing"].max())
    same = (lo_n, hi_n) == p[:2] and np.isclose([lo_m, hi_m], p[2:], atol=0.05).all()
    rows.append(Claim("Tasks, share missing", "App. D",
                      f"{p[0]}-{p[1]} tasks, {num(p[2], 'g')}-{num(p[3], 'g')}% missing",
                      f"{lo_n}-{hi_n} tasks, {num(lo_m, 'g')}-{num(hi_m, 'g')}% missing",
                      "reproduced" if same else "not reproduced", "ranges over Table 1", "table-1"))
    if "mmlu" in t1.index:
        r1, r3 = t1.loc["mmlu"], t3.loc["mmlu"]
        ok_mmlu = bool(r1["as paper"]) and bool(r3["as paper"])
        rows.append(Claim(
            "MMLU rows", "Tables 1, 3",
            f"{_shape(int(r1['paper_M']), int(r1['paper_N']))}, {int(r3['paper_unmatched']):,} unmatched",
            f"{_shape(int(r1['M']), int(r1['N']))}, {int(r3['unmatched']):,} unmatched",
            "reproduced" if ok_mmlu else "not reproduced",
            "the same result files" if ok_mmlu else
            "v1 result files not public; built from subject tables", "the-mmlu-matrix"))
    same_dist = {int(k): int(v) for k, v in t2["n"].value_counts().items()} == PAPER_T2_N
    n_paper = sum(PAPER_T2_N.values())
    v2 = verdict(len(t2), n_paper, tol=0, partly=5)
    rows.append(Claim("Canonical models", "Table 2", str(n_paper), str(len(t2)),
                      "partly" if v2 == "reproduced" and not same_dist else v2,
                      "same counts per n" if same_dist else "other counts per n",
                      "table-2"))
    node_keys = [k for k in PAPER_NODES if k in nodes.index]
    n_same = sum(int(nodes.at[k, "n_models"]) == PAPER_NODES[k] for k in node_keys)
    rows.append(Claim("Models per collection", "Fig. 8", f"{len(PAPER_NODES)} node numbers",
                      f"{n_same} of {len(PAPER_NODES)} equal", _rows_verdict(n_same, len(PAPER_NODES)),
                      "read off Table 2's check marks", "figure-8"))
    n_mteb = int(t2["mteb"].sum()) if "mteb" in t2.columns else 0
    rows.append(Claim("MTEB shares no model", "Fig. 8", "none", count(n_mteb, "shared model"),
                      "reproduced" if n_mteb == 0 else "not reproduced",
                      "only text embedders" if n_mteb == 0 else "the mapping links MTEB models", "figure-8"))
    inner, outer, n_chat = _chat_core(nodes, edges)
    if np.isfinite(inner):
        rows.append(Claim("Chat: a dense core", "App. E", "dense core",
                          f"median {num(inner, 'g')} shared a pair, others {num(outer, 'g')}",
                          "reproduced" if inner > outer else "not reproduced",
                          f"pairs of the {n_chat} chat sets", "figure-8"))
    return rows


def claims(*, t1: pd.DataFrame, t2: pd.DataFrame, t3: pd.DataFrame, nodes: pd.DataFrame, edges: pd.DataFrame,
           matrices: Mapping[str, Any], mteb_dropped: int | None, rebuild: Mapping[str, Any],
           datasets: Sequence[str]) -> list[Claim]:
    """The claims table's rows: Tables 1-3, Figure 8, the experiment matrices and the Merged rebuild.

    Parameters
    ----------
    t1, t3 : DataFrame
        Tables 1 and 3 with their ``as paper`` columns (:func:`compare_tables`).
    t2 : DataFrame
        Table 2 (``benchsel_lib.data.canonical.table_canonical``).
    nodes, edges : DataFrame
        Figure 8 (``benchsel_lib.data.canonical.overlap_network``).
    matrices : mapping
        The experiment matrices of this run, by name.
    mteb_dropped : int or None
        MTEB models of the leaderboard left out of the matrix for a single observed benchmark
        (None when MTEB was not run).
    rebuild : mapping
        :func:`merged_rebuild`.
    datasets : list of str
        The experiment matrices this run describes; the others give ``not run`` rows.

    Returns
    -------
    list of Claim
    """
    rows = _landscape_claims(t1, t2, t3, nodes, edges)
    for name in ("mteb", "merged", "benchpress"):
        if name not in datasets or name not in matrices:
            pm, pn, _ = PAPER_SHAPES[name]
            rows.append(not_run(f"{label(name)} matrix", "App. I" if name == "benchpress" else "Sec. 5",
                                _shape(pm, pn), f"{label(name)} was not among this run's matrices",
                                section="the-experiment-matrices"))
            continue
        extra = ""
        if name == "mteb" and mteb_dropped is not None:
            extra = (f"{mteb_dropped} models with one score dropped"
                     + ("" if mteb_dropped == PAPER_MTEB_DROPPED else f" (the paper: {PAPER_MTEB_DROPPED})"))
        if name == "merged":
            same_rows = set(map(str, matrices[name].models)) == set(map(str, t2.index))
            extra = "rows: Table 2's models" if same_rows else "rows: not Table 2's models"
        rows.append(_matrix_claim(name, matrices[name], extra_why=extra))
    other_ok, other_n = rebuild["n_other_reproduced"], rebuild["n_other_obs"]
    rows.append(Claim("Merged rebuilt, other columns", "App. D", f"{other_n:,} entries", f"{other_ok:,} equal",
                      verdict(other_ok / other_n, 1.0, tol=0.001, partly=0.1, direction="at least"),
                      "same files, same mapping", "merged-from-its-sources"))
    mm_ok, mm_n = rebuild["n_mmlu_reproduced"], rebuild["n_mmlu_obs"]
    if mm_n:
        rows.append(Claim("Merged rebuilt, MMLU columns", "App. D", f"{mm_n:,} entries", f"{mm_ok:,} equal",
                          verdict(mm_ok / mm_n, 1.0, tol=0.001, partly=0.5, direction="at least"),
                          f"MMLU tables lack {count(rebuild['n_models_unrep'], 'model')}, hold other runs of "
                          f"{rebuild['n_models_value']}", "merged-from-its-sources"))
    return rows


def _explain_failures(rows: Sequence[Claim], mmlu_shape: tuple[int, int]) -> str:
    """What did not reproduce, and why (one paragraph)."""
    bad = [c for c in rows if c.verdict in ("partly", "not reproduced")]
    if not bad:
        return "Every claim this page checks is reproduced."
    gaps = "The gap has" if len(bad) == 1 else "Both gaps have" if len(bad) == 2 else f"All {len(bad)} gaps have"
    why = (f"{gaps} one cause: the paper read MMLU from the per-model result files of the Open LLM "
           "Leaderboard v1, and those files are not public. This book's MMLU matrix is rebuilt from per-subject "
           f"tables that are public ({count(mmlu_shape[0], 'model')}), and the Merged rebuild lacks the MMLU "
           "results of the models those tables miss."
           if all("MMLU" in c.claim for c in bad) else "The sections linked in the table show the differences.")
    return paragraph(failures(rows), why)


def _network_caption(nodes: pd.DataFrame, edges: pd.DataFrame, t2: pd.DataFrame, min_label: int) -> str:
    n_mteb = int(t2["mteb"].sum()) if "mteb" in t2.columns else 0
    shared = {frozenset((e.source, e.target)): int(e.shared) for e in edges.itertuples()}
    big = [c for c in nodes.index if nodes.at[c, "category"] == _CHAT and nodes.at[c, "n_models"] >= min_label] \
        if "category" in nodes.columns else []
    inner = [shared.get(frozenset(p), 0) for p in itertools.combinations(big, 2)]
    thin = nodes.sort_values(["n_models", "label"]).head(2)
    core = (f"The chat collections {and_join(nodes.loc[big, 'label'])} form the dense core, sharing "
            f"{num(min(inner), 'd')} to {num(max(inner), 'd')} models a pair"
            if len(big) > 1 and min(inner) > 0 else "")
    top = edges.iloc[0] if len(edges) else None
    return paragraph(
        f"**Figure 8.** The collections that share models"
        + (" (MTEB shares none and is left out)" if n_mteb == 0 else "")
        + f": the number in a node counts the canonical models of the collection, an edge's width the models two "
          f"collections share, and edges of at least {min_label} shared models carry their count.",
        (core + "; " if core else "")
        + f"{and_join(f'{r.label} ({int(r.n_models)})' for r in thin.itertuples())} hold the fewest."
        if len(thin) else "",
        f"The strongest single link is {nodes.at[top['source'], 'label']}–{nodes.at[top['target'], 'label']} "
        f"({count(int(top['shared']), 'shared model')})." if top is not None else "No two collections share a model.")


def _network_md(nv: pd.DataFrame, view: pd.DataFrame) -> str:
    """Why Figure 8's node numbers are not Table 3's matched counts, from :func:`nodes_view`."""
    pairs = sorted({d.split(": ", 1)[1] for x in nv["double_named"] if x for d in x.split("; ")})
    recs = view.to_dict("records")
    agree = sum(r["Figure 8 node"] == r[_T2] for r in recs)
    named_eq = sum(r["rows named"] == r["paper matched"] for r in recs)
    gap = [r for r in recs if r[_T2] != r["paper matched"]]
    short = [r for r in recs if r["rows in mirror"] < r["rows named"]]
    return paragraph(
        f"The node numbers are the paper's Table 2 check marks counted per collection: {agree} of {len(recs)} "
        f"agree.",
        "Neither here nor in the paper do they equal Table 3's matched counts (total minus unmatched): the paper gives "
        + and_join(f"{r['Collection']} {int(r[_T2])} check marks but "
                   f"{int(r['paper matched'])} matched models" for r in gap) + "." if gap else "",
        f"The reason is that {count(len(pairs), 'pair')} of canonical names point to one leaderboard row "
        f"({'; '.join(p.replace(', ', ' and ') for p in pairs)}): Table 2 counts both names, Table 3 the one row. "
        f"Counted as leaderboard rows, {named_eq} of {len(recs)} collections have the paper's matched count."
        if pairs else "",
        and_join(f"{r['Collection']} (the mirror holds {int(r['rows in mirror'])} of the {int(r['rows named'])} rows "
                 f"the mapping names)" for r in short)
        + f" {'falls' if len(short) == 1 else 'fall'} short because of the mirror, not the mapping." if short else "")


def _matrices_md(table: pd.DataFrame) -> str:
    same = [r["Matrix"] for r in table.to_dict("records") if r["M × N"] == r["paper M × N"]
            and abs(r["% observed"] - r["paper % observed"]) < 0.05]
    other = [r["Matrix"] for r in table.to_dict("records") if r["Matrix"] not in same]
    thin = [r for r in table.to_dict("records") if r["fewest per column"] < 10]
    return paragraph(
        f"{and_join(same)} {'has' if len(same) == 1 else 'have'} the paper's shape and observed share." if same else "",
        f"{and_join(other)} {'is' if len(other) == 1 else 'are'} another matrix than the paper's." if other else "",
        "The last two columns count the models observed per benchmark: "
        + and_join(f"{r['Matrix']} has a benchmark observed for only {count(r['fewest per column'], 'model')}"
                   for r in thin)
        + ", too few for an estimated correlation or a normality test to mean much (chapters 5 and 7)."
        if thin else "Every benchmark of these matrices is observed for at least ten models.")


def _mmlu_md(mmlu: Any) -> str:
    info = mmlu.row_info
    multi = int((info["n_candidates"] > 1).sum())
    n_src = int(info["source"].nunique())
    share = mmlu.shape[0] / PAPER_SHAPES["mmlu"][0]
    return paragraph(
        f"The result is {mmlu.shape[0]:,} × {mmlu.shape[1]} from {count(n_src, 'file')}; "
        f"{count(multi, 'model')} had more than one complete candidate row and were reconciled by the priority rule.",
        f"That is {pct(share, 1)} of the paper's {PAPER_SHAPES['mmlu'][0]:,} models." if share != 1 else "",
        "Every MMLU number of this book (spectrum, cross-validation, normality) rests on this smaller sample, and "
        "numbers that depend on the number of models, such as a test's power or the training size at a 90% "
        "holdout, differ from the paper's." if share < 1 else "")


def _rebuild_md(rebuild: Mapping[str, Any]) -> str:
    r = rebuild
    return paragraph(
        f"Of the {r['n_obs']:,} observed entries of the released Merged matrix, {r['n_reproduced']:,} "
        f"({num(r['pct_reproduced'], '.1f')}%) are rebuilt exactly.",
        f"Outside the MMLU columns, {r['n_other_reproduced']:,} of {r['n_other_obs']:,} entries are.",
        f"The {count(r['n_unrep'], 'entry', 'entries')} that cannot be rebuilt belong to "
        f"{count(r['n_models_unrep'], 'model')} whose MMLU results are not in the mirrored tables"
        + (f", and the {r['n_value']} that differ to {count(r['n_models_value'], 'model')} whose mirrored MMLU row "
           f"is another leaderboard run (by up to {num(r['max_diff'])})" if r["n_value"] else "") + "."
        if r["n_unrep"] else "",
        "The experiments of this book use the released matrix, so these gaps do not reach them."
        if r["n_unrep"] + r["n_value"] else "")


def prose(*, t1: pd.DataFrame, t2: pd.DataFrame, t3: pd.DataFrame, nodes: pd.DataFrame, edges: pd.DataFrame,
          nodes_vs_table3: pd.DataFrame, mmlu: Any, matrices: Mapping[str, Any], mteb_dropped: int | None,
          rebuild: Mapping[str, Any], datasets: Sequence[str], min_label: int) -> PageProse:
    """The page's passages and its claims table, written from its tables.

    Parameters
    ----------
    t1, t3 : DataFrame
        Tables 1 and 3 with their ``as paper`` columns (:func:`compare_tables`).
    t2 : DataFrame
        Table 2 (``benchsel_lib.data.canonical.table_canonical``).
    nodes, edges : DataFrame
        Figure 8 (``benchsel_lib.data.canonical.overlap_network``).
    nodes_vs_table3 : DataFrame
        :func:`benchsel_lib.studies.landscape.node_counts`.
    mmlu : ScoreMatrix
        This project's MMLU matrix.
    matrices : mapping
        The experiment matrices of ``datasets``, by name.
    mteb_dropped : int or None
        See :func:`claims`.
    rebuild : mapping
        :func:`merged_rebuild`.
    datasets : list of str
        The experiment matrices this run describes.
    min_label : int
        Figure 8 labels edges with at least this many shared models.

    Returns
    -------
    PageProse
        Passages ``claims``, ``failures_md``, ``t1_md``, ``t2_md``, ``t3_md``, ``fig8_caption``,
        ``network_md``, ``matrices_md``, ``mmlu_md``, ``rebuild_md``.
    """
    rows = claims(t1=t1, t2=t2, t3=t3, nodes=nodes, edges=edges, matrices=matrices, mteb_dropped=mteb_dropped,
                  rebuild=rebuild, datasets=datasets)
    off1 = [str(x) for x in t1.loc[~t1["as paper"], "label"]]
    off3 = t3.loc[~t3["as paper"]]
    n_by = t2["n"].value_counts()
    t1_md = paragraph(
        f"{int(t1['as paper'].sum())} of {len(t1)} rows have the paper's M, N and share missing.",
        f"The one that differs, {off1[0]}, is discussed [below](#the-mmlu-matrix)." if off1 == ["MMLU"] else
        (f"{and_join(off1)} differ." if off1 else ""))
    t2_md = paragraph(
        f"{count(int(n_by.get(t2['n'].max(), 0)), 'model')} appear in {int(t2['n'].max())} collections, the most, "
        f"and {int(n_by.get(2, 0))} in only two.",
        "MTEB's column is empty: no embedding model is also an LLM of another leaderboard, which is why MTEB stays "
        "a matrix of its own." if "mteb" in t2.columns and int(t2["mteb"].sum()) == 0 else "")
    t3_md = paragraph(
        f"{int(t3['as paper'].sum())} of {len(t3)} rows agree with the paper.",
        " ".join(f"{r.label} differs: the mirror holds {r.total:,} of its models (the paper: {r.paper_total:,}), "
                 f"{r.matched} of them matched." for r in off3.itertuples()))
    view = nodes_view(nodes_vs_table3, t3)
    table = matrices_table(matrices)
    passages = {"claims": claims_table(rows), "failures_md": _explain_failures(rows, tuple(mmlu.shape)),
                "t1_md": t1_md, "t2_md": t2_md, "t3_md": t3_md,
                "fig8_caption": _network_caption(nodes, edges, t2, min_label),
                "network_md": _network_md(nodes_vs_table3, view), "matrices_md": _matrices_md(table),
                "mmlu_md": _mmlu_md(mmlu), "rebuild_md": _rebuild_md(rebuild)}
    return PageProse(list(dict.fromkeys([*ALWAYS, *datasets])), passages)


def single_benchmark_drops(raw: Any, matrix: Any) -> int:
    """Models of the leaderboard ``raw`` left out of ``matrix`` that have at most one observed benchmark.

    Appendix D drops five MTEB models "with only a single observed benchmark"; this counts them in
    this run's data (O(models x benchmarks)).
    """
    kept = set(map(str, matrix.models))
    per_model = np.asarray(raw.observed_counts(axis=1))
    return int(sum(1 for name, n in zip(map(str, raw.models), per_model) if name not in kept and n <= 1))
