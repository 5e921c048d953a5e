"""Chapter 1's page module: the claims follow the tables they are given, and the tables show no missing value."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book.pages import landscape
from benchsel_lib.data import ScoreMatrix


def _matrix(m: int, n: int, observed: float = 1.0) -> ScoreMatrix:
    scores = np.arange(m * n, dtype=float).reshape(m, n)
    scores.flat[: int(round((1 - observed) * m * n))] = np.nan
    scores[:, 0] = 1.0  # no empty row
    return ScoreMatrix(scores=scores, models=[f"m{i}" for i in range(m)], benchmarks=[f"b{j}" for j in range(n)],
                       source="synthetic")


@pytest.fixture(scope="module")
def inputs(shared_data_dir):
    import benchsel_lib as bs
    from benchsel_lib.data.canonical import (build_merged, merged_discrepancies, overlap_network, table_canonical,
                                             table_datasets, table_unmatched)

    nodes, edges = overlap_network()
    matrices = {n: bs.load_matrix(n) for n in ("mmlu", "mteb", "merged", "benchpress")}
    rebuild = landscape.merged_rebuild(matrices["merged"], merged_discrepancies(rebuilt=build_merged()))
    return dict(t1=table_datasets(), t2=table_canonical(), t3=table_unmatched(), nodes=nodes, edges=edges,
                matrices=matrices, rebuild=rebuild, mteb_dropped=5)


def _rows(inputs, **changes):
    return {c.claim: c for c in landscape.claims(**{**inputs, **changes})}


def test_the_mmlu_matrix_is_not_reproduced_and_the_why_names_its_size(inputs):
    row = _rows(inputs)["MMLU matrix"]
    assert row.verdict == "not reproduced" and "of the paper's 5,452 models" in row.why


def test_a_matrix_of_the_paper_s_shape_is_reproduced(inputs):
    assert _rows(inputs)["MTEB matrix"].verdict == "reproduced"


def test_a_matrix_one_model_off_is_partly_and_a_smaller_one_not_reproduced(inputs):
    near = _rows(inputs, matrices={**inputs["matrices"], "merged": _matrix(117, 114, 0.311)})["Merged matrix"]
    far = _rows(inputs, matrices={**inputs["matrices"], "merged": _matrix(60, 114, 0.311)})["Merged matrix"]
    assert near.verdict == "partly" and far.verdict == "not reproduced"


def test_a_matrix_left_out_of_the_run_is_not_run(inputs):
    rows = _rows(inputs, matrices={"mmlu": inputs["matrices"]["mmlu"]})
    assert rows["BenchPress matrix"].verdict == "not run" and rows["BenchPress matrix"].run == "—"


def test_a_rebuild_that_misses_entries_is_not_reproduced(inputs):
    bad = {**inputs["rebuild"], "other_same": inputs["rebuild"]["other_obs"] // 2}
    assert _rows(inputs, rebuild=bad)["Merged rebuilt from its sources, non-MMLU columns"].verdict == "not reproduced"


def test_the_chat_core_is_checked_on_shared_models():
    nodes = pd.DataFrame({"category": ["instruction/chat"] * 3 + ["general"], "n_models": [30, 30, 30, 30]},
                         index=["a", "b", "c", "d"])
    dense = pd.DataFrame({"source": ["a", "a", "b", "a", "b", "c"], "target": ["b", "c", "c", "d", "d", "d"],
                          "shared": [25, 25, 25, 10, 10, 10]})
    loose = dense.assign(shared=[25, 1, 1, 10, 10, 10])
    assert landscape.chat_core(nodes, dense)[0] == 1.0
    assert landscape.chat_core(nodes, loose)[0] == pytest.approx(1 / 3)


def test_claims_never_show_a_missing_value(inputs):
    for c in landscape.claims(**{**inputs, "matrices": {}}):
        assert "nan" not in f"{c.paper} {c.run} {c.why}".lower()


def test_tables_1_and_3_mark_only_mmlu_as_different(inputs):
    assert list(landscape.table1_view(inputs["t1"]).query("`as paper` == False").index) == ["mmlu"]
    assert list(landscape.table3_view(inputs["t3"]).query("`as paper` == False").index) == ["mmlu"]


def test_table_2_has_a_check_mark_per_collection_and_the_count(inputs):
    view = landscape.table2_view(inputs["t2"])
    assert list(view.columns) == ["Model", *landscape.SHORT.values(), "n"]
    assert (view[list(landscape.SHORT.values())].eq("✓").sum(axis=1) == view["n"]).all()


def test_the_matrices_table_counts_observed_models_per_column():
    table = landscape.matrices_table({"mteb": _matrix(10, 4)})
    assert table.loc[0, "fewest per column"] == 10 and table.loc[0, "paper M × N"] == "263\u00a0×\u00a056"
    assert not table.isna().any().any()
