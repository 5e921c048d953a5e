"""The benchmark landscape (Appendix E): why Figure 8's node counts and Table 3's matched counts differ."""
from __future__ import annotations

from collections import defaultdict

import pandas as pd

from ..data.canonical import (
    COLLECTION_LABELS,
    COLLECTIONS,
    collection_matrix,
    load_canonical_mapping,
)
from ..data.mmlu import normalize_model_name

__all__ = ["node_counts"]


def node_counts(*, data_dir: str | None = None, min_collections: int = 2) -> pd.DataFrame:
    """Per collection: canonical models (Figure 8's node), the leaderboard rows they name, and those in the mirror.

    Figure 8 numbers each collection by the canonical models of
    ``canonical_mapping.json`` that list it; Table 3 counts the distinct
    rows of the collection's own table that those models name and that the
    table holds (``table_unmatched``'s ``matched``). The two differ where
    the mapping gives one leaderboard row two canonical names, and where a
    named row is missing from the mirrored table.

    Parameters
    ----------
    data_dir : path, optional
        Data directory.
    min_collections : int
        Canonical models in at least this many collections (2: the paper's 118).

    Returns
    -------
    pandas.DataFrame
        Index: collection key (MTEB and other collections without canonical
        models left out); columns ``label, canonical_models, named_rows,
        rows_in_mirror, double_named`` (``double_named``: the leaderboard
        rows named by more than one canonical model, ``"row: name, name"``
        joined by ``"; "``). O(models in the mapping and the tables).
    """
    mapping = [m for m in load_canonical_mapping(data_dir=data_dir) if len(m["datasets"]) >= min_collections]
    rows = []
    for coll in COLLECTIONS:
        names: dict[str, list[str]] = defaultdict(list)
        for m in mapping:
            if coll in m["datasets"]:
                raw = m["datasets"][coll]
                names[normalize_model_name(raw) if coll == "mmlu" else raw].append(m["canonical_name"])
        if not names:
            continue
        present = set(collection_matrix(coll, data_dir=data_dir).models)
        doubles = [f"{row}: {', '.join(canon)}" for row, canon in names.items() if len(canon) > 1]
        rows.append({"collection": coll, "label": COLLECTION_LABELS[coll],
                     "canonical_models": sum(len(v) for v in names.values()), "named_rows": len(names),
                     "rows_in_mirror": len(set(names) & present), "double_named": "; ".join(doubles)})
    return pd.DataFrame(rows).set_index("collection")
