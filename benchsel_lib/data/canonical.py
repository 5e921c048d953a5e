"""Model canonicalization, the Merged matrix and the benchmark-landscape tables (Appendices D, E).

The Merged matrix (Section 5: 118 x 114, 31.1% observed) joins the
per-leaderboard collections (all except MTEB) on canonical model names:

* rows: canonical models of ``canonical_mapping.json`` present in at least two
  collections, ordered case-insensitively by name (ties keep mapping order);
* columns: ``<collection>/<task>`` for the collections in :data:`COLLECTIONS`
  order, each collection's tasks in source order, auxiliary count /
  uncertainty / length columns excluded (``include_auxiliary=True`` keeps them);
* entry: the collection's score of the model under its collection-specific
  name from the mapping. For ``mmlu`` the name is matched after
  :func:`benchsel_lib.data.mmlu.normalize_model_name` against the MMLU matrix
  rebuilt from the mirrored sources (:func:`benchsel_lib.data.mmlu.load_mmlu`).

The mirror does not hold every MMLU model of the paper, so some ``mmlu/*``
entries of the released matrix cannot be rebuilt; :func:`merged_discrepancies`
lists them (and any other difference) explicitly.

The table functions produce the data of Table 1 (:func:`table_datasets`),
Table 2 (:func:`table_canonical`), Table 3 (:func:`table_unmatched`) and
Figure 8 (:func:`overlap_network`), each next to the paper's numbers where the
paper prints them.
"""
from __future__ import annotations

import json
import os
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from .loaders import load_matrix, load_source
from .matrix import ScoreMatrix
from .mmlu import load_mmlu, normalize_model_name
from .sources import data_path

__all__ = [
    "COLLECTIONS",
    "COLLECTION_CATEGORIES",
    "COLLECTION_LABELS",
    "PAPER_TABLE1",
    "PAPER_TABLE3",
    "build_merged",
    "collection_matrix",
    "load_canonical_mapping",
    "merged_discrepancies",
    "overlap_network",
    "table_canonical",
    "table_datasets",
    "table_unmatched",
]

PathLike = str | os.PathLike[str] | None

#: Collections joined into Merged, in column order.
COLLECTIONS: tuple[str, ...] = (
    "mmlu", "open_llm", "helm", "alpaca_eval", "arena_hard", "livebench", "wildbench", "mt_bench", "bigcode",
)

#: Display names (Tables 1-3; Table 2 abbreviations in parentheses in the paper).
COLLECTION_LABELS: dict[str, str] = {
    "mmlu": "MMLU", "open_llm": "Open LLM v2", "helm": "HELM Lite", "alpaca_eval": "AlpacaEval 2",
    "arena_hard": "Arena-Hard", "livebench": "LiveBench", "wildbench": "WildBench", "mt_bench": "MT-Bench",
    "bigcode": "BigCodeBench", "mteb": "MTEB",
}

#: Category of each collection (node colour of Figure 8; Appendix D headings).
COLLECTION_CATEGORIES: dict[str, str] = {
    "mmlu": "general", "open_llm": "general", "helm": "general", "alpaca_eval": "instruction/chat",
    "arena_hard": "instruction/chat", "livebench": "instruction/chat", "wildbench": "instruction/chat",
    "mt_bench": "instruction/chat", "bigcode": "code", "mteb": "embedding",
}

#: Table 1 of the paper: collection -> (M, N, % missing).
PAPER_TABLE1: dict[str, tuple[int, int, float]] = {
    "mmlu": (5452, 57, 0.0), "open_llm": (4507, 6, 0.1), "mteb": (263, 56, 22.7), "alpaca_eval": (223, 3, 0.0),
    "livebench": (195, 3, 11.3), "bigcode": (155, 14, 10.0), "wildbench": (63, 11, 0.0), "arena_hard": (60, 1, 0.0),
    "helm": (30, 11, 0.0), "mt_bench": (5, 8, 0.0),
}

#: Table 3 of the paper: collection -> (total, unmatched).
PAPER_TABLE3: dict[str, tuple[int, int]] = {
    "mmlu": (5454, 5424), "open_llm": (4507, 4450), "helm": (30, 13), "alpaca_eval": (223, 166),
    "arena_hard": (60, 10), "livebench": (195, 121), "wildbench": (63, 15), "mt_bench": (5, 2),
    "bigcode": (155, 94), "mteb": (268, 268),
}


# ------------------------------------------------------------------ inputs
def load_canonical_mapping(*, data_dir: PathLike = None) -> list[dict[str, Any]]:
    """Read ``canonical_mapping.json``: a list of ``{"canonical_name", "datasets": {collection: name}}``.

    Raises ``ValueError`` on a malformed file, a duplicate canonical name or an
    unknown collection. O(number of models).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data directory (see :func:`benchsel_lib.data.sources.resolve_data_dir`);
        the file is verified against the manifest (and downloaded if missing).

    Returns
    -------
    list of dict
        The ``canonical_models`` list of the file, in file order, as read:
        each entry has ``canonical_name`` (str) and ``datasets`` (dict
        collection -> collection-specific model name, collections among
        :data:`COLLECTIONS` and ``"mteb"``).

    Raises
    ------
    ValueError
        No ``canonical_models`` list, an entry without a string
        ``canonical_name`` or a ``datasets`` dict, a repeated canonical
        name, an unknown collection, or a size / digest mismatch of the file.
    FileNotFoundError
        The file is not available and cannot be downloaded.
    """
    path = data_path("canonical_mapping.json", data_dir=data_dir)
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    models = doc.get("canonical_models") if isinstance(doc, dict) else None
    if not isinstance(models, list):
        raise ValueError(f"{path}: no 'canonical_models' list")
    seen: set[str] = set()
    for m in models:
        name, ds = m.get("canonical_name"), m.get("datasets")
        if not isinstance(name, str) or not isinstance(ds, dict):
            raise ValueError(f"{path}: malformed entry {m!r}")
        if name in seen:
            raise ValueError(f"{path}: duplicate canonical name {name!r}")
        unknown = set(ds) - set(COLLECTIONS) - {"mteb"}
        if unknown:
            raise ValueError(f"{path}: {name!r} lists unknown collection(s) {sorted(unknown)}")
        seen.add(name)
    return models


def collection_matrix(name: str, *, data_dir: PathLike = None, include_auxiliary: bool = False) -> ScoreMatrix:
    """The score matrix of one collection (``mmlu`` rebuilt from its sources, ``mteb`` raw 268 x 56).

    Cost: reading and verifying the collection's source files (O(their size)).
    """
    if name == "mmlu":
        return load_mmlu(data_dir=data_dir)
    if name == "mteb":
        return load_source("mteb_raw", data_dir=data_dir)
    return load_source(name, data_dir=data_dir, include_auxiliary=include_auxiliary)


def _source_key(collection: str, name: str) -> str:
    return normalize_model_name(name) if collection == "mmlu" else name


# ------------------------------------------------------------------ Merged
def _merged_mapping(*, data_dir: PathLike, min_collections: int) -> list[dict[str, Any]]:
    """The entries of ``canonical_mapping.json`` listed in at least ``min_collections`` collections, in mapping order.

    No such entry is an error. O(mapping size).
    """
    mapping = [m for m in load_canonical_mapping(data_dir=data_dir) if len(m["datasets"]) >= min_collections]
    if not mapping:
        raise ValueError(f"no canonical model is listed in >= {min_collections} collections")
    return mapping


def _merged_block(src: ScoreMatrix, rows: list[int | None]) -> np.ndarray:
    """The rows ``rows`` of ``src``'s scores (a row of NaN for None): one collection's block of Merged. O(size)."""
    block = np.full((len(rows), src.shape[1]), np.nan)
    for r, i in enumerate(rows):
        if i is not None:
            block[r] = src.scores[i]
    return block


def _mmlu_provenance(src: ScoreMatrix, keys: list[str], pos: dict[str, int]) -> tuple[list[bool], list[str]]:
    """Per Merged row (its MMLU source key): whether the MMLU mirror holds the model, and the file it came from.

    Parameters
    ----------
    src : ScoreMatrix
        The MMLU matrix rebuilt from the mirror (its ``row_info["source"]``, when present, names the file).
    keys : list of str
        Each Merged row's model name in MMLU, normalized.
    pos : dict
        Model name of ``src`` -> its row.

    Returns
    -------
    in_mirror : list of bool
    source : list of str
        ``""`` where the model is not in the mirror or ``src`` names no files.
    """
    sources = src.row_info["source"] if src.row_info is not None else None
    in_mirror = [k in pos for k in keys]
    return in_mirror, [str(sources.iloc[pos[k]]) if k in pos and sources is not None else "" for k in keys]


def build_merged(
    *, data_dir: PathLike = None, include_auxiliary: bool = False, min_collections: int = 2
) -> ScoreMatrix:
    """Rebuild the Merged matrix from the per-leaderboard sources and ``canonical_mapping.json``.

    Parameters
    ----------
    data_dir : path, optional
        Data directory (see :func:`benchsel_lib.data.sources.resolve_data_dir`).
    include_auxiliary : bool
        Keep the auxiliary columns of :data:`benchsel_lib.data.AUXILIARY_COLUMNS`.
    min_collections : int
        Keep canonical models listed in at least this many collections (paper: 2).

    Returns
    -------
    ScoreMatrix
        118 x 114 by default (Appendix E). ``row_info`` has one column per
        collection with the model's name there (``""`` if absent), ``n`` (number
        of collections in the mapping), ``mmlu_in_mirror`` (whether the MMLU
        sources hold the model) and ``mmlu_source`` (the MMLU file it came from). O(rows x columns).
    """
    mapping = _merged_mapping(data_dir=data_dir, min_collections=min_collections)
    names = sorted((m["canonical_name"] for m in mapping), key=str.lower)
    by_name = {m["canonical_name"]: m["datasets"] for m in mapping}
    blocks, columns = [], []
    info = pd.DataFrame(index=pd.Index(names, name="model"))
    for coll in COLLECTIONS:
        src = collection_matrix(coll, data_dir=data_dir, include_auxiliary=include_auxiliary)
        keys = [_source_key(coll, by_name[n].get(coll, "\0")) for n in names]
        pos = {n: i for i, n in enumerate(src.models)}
        blocks.append(_merged_block(src, [pos.get(k) for k in keys]))
        columns += [f"{coll}/{b}" for b in src.benchmarks]
        info[coll] = [by_name[n].get(coll, "") for n in names]
        if coll == "mmlu":
            info["mmlu_in_mirror"], info["mmlu_source"] = _mmlu_provenance(src, keys, pos)
    info["n"] = [len(by_name[n]) for n in names]
    aux = " incl. auxiliary columns" if include_auxiliary else ""
    return ScoreMatrix(np.hstack(blocks), names, columns, f"Merged rebuilt from sources{aux}", info)


def merged_discrepancies(
    *, data_dir: PathLike = None, rebuilt: ScoreMatrix | None = None, atol: float = 1e-12
) -> pd.DataFrame:
    """Every entry where the rebuilt Merged matrix differs from the released ``merged.matrix.npz``.

    Parameters
    ----------
    data_dir : path, optional
        Data directory.
    rebuilt : ScoreMatrix, optional
        A rebuilt matrix (default :func:`build_merged`).
    atol : float
        Absolute tolerance for equal values.

    Returns
    -------
    pandas.DataFrame
        One row per differing entry with columns ``model, benchmark,
        collection, status, released, rebuilt, reason``; ``status`` is
        ``"unreproducible"`` (released observed, rebuilt missing),
        ``"extra"`` (rebuilt observed, released missing) or ``"value"``
        (both observed, values differ). Rows or columns missing from the
        rebuilt matrix count as unreproducible. Empty when the two agree.
        O(M N).
    """
    released = load_matrix("merged", data_dir=data_dir)
    rebuilt = build_merged(data_dir=data_dir) if rebuilt is None else rebuilt
    rpos = {n: i for i, n in enumerate(rebuilt.models)}
    cpos = {n: j for j, n in enumerate(rebuilt.benchmarks)}
    R = np.full(released.shape, np.nan)
    ri = [rpos.get(m, -1) for m in released.models]
    cj = [cpos.get(b, -1) for b in released.benchmarks]
    for a, i in enumerate(ri):
        if i >= 0:
            R[a] = [rebuilt.scores[i, j] if j >= 0 else np.nan for j in cj]
    A = released.scores
    oa, orb = ~np.isnan(A), ~np.isnan(R)
    status = np.full(A.shape, "", dtype=object)
    status[oa & ~orb] = "unreproducible"
    status[~oa & orb] = "extra"
    both = oa & orb
    status[both & ~np.isclose(A, R, rtol=0.0, atol=atol, equal_nan=False)] = "value"
    rows = []
    for a, b in zip(*np.nonzero(status != "")):
        model, bench = released.models[a], released.benchmarks[b]
        rows.append({"model": model, "benchmark": bench, "collection": bench.split("/", 1)[0],
                     "status": status[a, b], "released": A[a, b], "rebuilt": R[a, b],
                     "reason": _reason(status[a, b], model, bench, ri[a], cj[b], rebuilt)})
    cols = ["model", "benchmark", "collection", "status", "released", "rebuilt", "reason"]
    return pd.DataFrame(rows, columns=cols)


def _reason(status: str, model: str, bench: str, i: int, j: int, rebuilt: ScoreMatrix) -> str:
    if i < 0:
        return "model not in the rebuilt matrix"
    if j < 0:
        return "column not in the rebuilt matrix"
    coll = bench.split("/", 1)[0]
    info = rebuilt.row_info
    if status == "unreproducible" and coll == "mmlu" and info is not None and not info.iloc[i].get("mmlu_in_mirror", True):
        return f"MMLU sources in the mirror lack {info.iloc[i]['mmlu']!r}"
    if status == "unreproducible":
        return f"{coll} source has no score for this model"
    if status == "extra":
        return "released matrix has no score here"
    if coll == "mmlu" and info is not None and info.iloc[i].get("mmlu_source"):
        return f"values differ: the MMLU mirror row ({info.iloc[i]['mmlu_source']}) is another leaderboard run"
    return "values differ"


# ------------------------------------------------------------------ tables
def table_datasets(*, data_dir: PathLike = None) -> pd.DataFrame:
    """Table 1: per collection M, N and % missing of the retained columns, beside the paper's values.

    MTEB is the experiment matrix (263 x 56); MMLU is the mirror rebuild
    (:func:`benchsel_lib.data.mmlu.load_mmlu`); the others are the sources with
    auxiliary columns dropped. Index: collection key, in the paper's row order.
    Columns ``label, M, N, pct_missing, paper_M, paper_N, paper_pct_missing``.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data directory (see :func:`benchsel_lib.data.sources.resolve_data_dir`).

    Returns
    -------
    pandas.DataFrame
        One row per collection of :data:`PAPER_TABLE1` (ten rows);
        ``pct_missing`` is rounded to one decimal, as in Table 1.

    Raises
    ------
    ValueError, FileNotFoundError
        A data file fails its size / digest check, is malformed, or is not
        available (as :func:`~benchsel_lib.data.loaders.load_matrix`).

    Notes
    -----
    Complexity O(sum of M_c N_c) over the ten collections to load them, the
    MMLU rebuild dominating (:func:`~benchsel_lib.data.mmlu.load_mmlu`:
    O(rows x 57 + rows log rows)).
    """
    rows = []
    for coll, (pm, pn, pmiss) in PAPER_TABLE1.items():
        m = load_matrix("mteb", data_dir=data_dir) if coll == "mteb" else collection_matrix(coll, data_dir=data_dir)
        rows.append({"collection": coll, "label": COLLECTION_LABELS[coll], "M": m.shape[0], "N": m.shape[1],
                     "pct_missing": round(100 * (1 - m.observed_fraction), 1),
                     "paper_M": pm, "paper_N": pn, "paper_pct_missing": pmiss})
    return pd.DataFrame(rows).set_index("collection")


def table_canonical(*, data_dir: PathLike = None, min_collections: int = 2) -> pd.DataFrame:
    """Table 2: canonical models x collections membership (bool) and count ``n``.

    Columns: the ten collections (:data:`COLLECTIONS` then ``mteb``) and ``n``;
    sorted by ``n`` descending, then case-insensitively by name (the paper's order).
    Membership follows ``canonical_mapping.json``.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data directory (see :func:`benchsel_lib.data.sources.resolve_data_dir`).
    min_collections : int
        Keep the canonical models listed in at least this many collections of
        the mapping (default 2, as in the paper).

    Returns
    -------
    pandas.DataFrame
        Index ``model`` (canonical names); one bool column per collection and
        the int column ``n``.

    Raises
    ------
    ValueError, FileNotFoundError
        As :func:`load_canonical_mapping`.

    Notes
    -----
    Complexity O(P C + P log P) for ``P`` canonical models and ``C = 10``
    collections; no score matrix is loaded.
    """
    mapping = [m for m in load_canonical_mapping(data_dir=data_dir) if len(m["datasets"]) >= min_collections]
    colls = list(COLLECTIONS) + ["mteb"]
    df = pd.DataFrame([{c: c in m["datasets"] for c in colls} for m in mapping],
                      index=pd.Index([m["canonical_name"] for m in mapping], name="model"))
    df["n"] = df[colls].sum(axis=1).astype(int)
    order = sorted(df.index, key=lambda s: (-int(df.at[s, "n"]), s.lower()))
    return df.loc[order]


def table_unmatched(*, data_dir: PathLike = None) -> pd.DataFrame:
    """Table 3: per collection the total number of models and how many match no other collection.

    ``matched`` counts distinct collection-specific names of canonical models
    (in >= 2 collections) found in the collection's table; ``unmatched =
    total - matched``. For MMLU the mirror rebuild is used, so its total is
    not the paper's 5,454. Columns ``label, total, matched, unmatched,
    paper_total, paper_unmatched``.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data directory (see :func:`benchsel_lib.data.sources.resolve_data_dir`).

    Returns
    -------
    pandas.DataFrame
        Index: collection key, one row per collection of :data:`PAPER_TABLE3`
        (MTEB is the raw 268-model source). MMLU names are matched after
        :func:`~benchsel_lib.data.mmlu.normalize_model_name`.

    Raises
    ------
    ValueError, FileNotFoundError
        A data file fails its size / digest check, is malformed, or is not
        available (as :func:`collection_matrix` and
        :func:`load_canonical_mapping`).

    Notes
    -----
    Complexity O(sum of M_c N_c) over the ten collections to load them (the
    MMLU rebuild dominating) plus O(C P) to match the ``P`` canonical models.
    """
    mapping = load_canonical_mapping(data_dir=data_dir)
    rows = []
    for coll, (pt, pu) in PAPER_TABLE3.items():
        src = collection_matrix(coll, data_dir=data_dir)
        present = set(src.models)
        names = {_source_key(coll, m["datasets"][coll]) for m in mapping
                 if coll in m["datasets"] and len(m["datasets"]) >= 2}
        matched = len(names & present)
        rows.append({"collection": coll, "label": COLLECTION_LABELS[coll], "total": src.shape[0],
                     "matched": matched, "unmatched": src.shape[0] - matched,
                     "paper_total": pt, "paper_unmatched": pu})
    return pd.DataFrame(rows).set_index("collection")


def overlap_network(*, data_dir: PathLike = None, include_empty: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Figure 8: collections as nodes, shared canonical models as weighted edges.

    The membership is that of :func:`table_canonical` (canonical models in at
    least two collections).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data directory (see :func:`benchsel_lib.data.sources.resolve_data_dir`).
    include_empty : bool
        Keep collections with no canonical model as nodes (default False).

    Returns
    -------
    nodes : pandas.DataFrame
        Index collection; columns ``label, category, n_models`` (canonical
        models in that collection). A collection without any (MTEB: no
        overlap) is left out unless ``include_empty``.
    edges : pandas.DataFrame
        Columns ``source, target, shared`` for every pair sharing at least one
        model, sorted by ``shared`` descending (ties in collection order).
        O(C^2 x models).

    Raises
    ------
    ValueError, FileNotFoundError
        As :func:`load_canonical_mapping`.
    """
    table = table_canonical(data_dir=data_dir)
    colls = list(COLLECTIONS) + ["mteb"]
    counts = {c: int(table[c].sum()) for c in colls}
    keep = [c for c in colls if include_empty or counts[c] > 0]
    nodes = pd.DataFrame({"label": [COLLECTION_LABELS[c] for c in keep],
                          "category": [COLLECTION_CATEGORIES[c] for c in keep],
                          "n_models": [counts[c] for c in keep]}, index=pd.Index(keep, name="collection"))
    edges = [{"source": a, "target": b, "shared": int((table[a] & table[b]).sum())} for a, b in combinations(keep, 2)]
    edges_df = pd.DataFrame(edges, columns=["source", "target", "shared"])
    edges_df = edges_df[edges_df["shared"] > 0].sort_values("shared", ascending=False, kind="stable")
    return nodes, edges_df.reset_index(drop=True)
