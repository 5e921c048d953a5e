"""Tests of canonicalization: the Merged rebuild, its discrepancies, and the landscape tables."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from benchsel_lib.data import AUXILIARY_COLUMNS, load_matrix
from benchsel_lib.data import canonical as C

PAPER = Path(__file__).resolve().parents[1].parent / "shared" / "paper" / "submodular-benchmark-selection.tex"


@pytest.fixture(scope="module")
def released(shared_data_dir):
    return load_matrix("merged", data_dir=shared_data_dir)


@pytest.fixture(scope="module")
def rebuilt(shared_data_dir):
    return C.build_merged(data_dir=shared_data_dir)


@pytest.fixture(scope="module")
def discrepancies(shared_data_dir, rebuilt):
    return C.merged_discrepancies(data_dir=shared_data_dir, rebuilt=rebuilt)


def test_rebuilt_merged_has_released_rows_and_columns(rebuilt, released):
    assert rebuilt.shape == (118, 114)
    assert rebuilt.models == released.models
    assert rebuilt.benchmarks == released.benchmarks


def test_rebuilt_equals_released_wherever_the_mirror_covers_it(rebuilt, released, discrepancies):
    covered = np.ones(released.shape, dtype=bool)
    idx = {b: j for j, b in enumerate(released.benchmarks)}
    mdx = {m: i for i, m in enumerate(released.models)}
    for _, d in discrepancies.iterrows():
        covered[mdx[d["model"]], idx[d["benchmark"]]] = False
    np.testing.assert_array_equal(rebuilt.observed[covered], released.observed[covered])
    # equal up to the last bit of a float64 (260 entries differ by <= 1e-14 relative: rounding in the release)
    np.testing.assert_allclose(rebuilt.scores[covered], released.scores[covered], rtol=1e-13, atol=0)
    # every non-MMLU column is reproduced
    non_mmlu = [j for j, b in enumerate(released.benchmarks) if not b.startswith("mmlu/")]
    np.testing.assert_array_equal(rebuilt.observed[:, non_mmlu], released.observed[:, non_mmlu])
    np.testing.assert_allclose(rebuilt.scores[:, non_mmlu], released.scores[:, non_mmlu], rtol=1e-13, atol=0)


def test_discrepancies_are_only_mmlu_entries_of_known_models(discrepancies, rebuilt):
    assert set(discrepancies["collection"]) == {"mmlu"}
    assert "extra" not in set(discrepancies["status"])
    unrep = discrepancies[discrepancies["status"] == "unreproducible"]
    lacking = rebuilt.row_info.index[~rebuilt.row_info["mmlu_in_mirror"] & (rebuilt.row_info["mmlu"] != "")]
    assert set(unrep["model"]) == set(lacking)
    assert len(lacking) == 14 and len(unrep) == 14 * 57
    assert unrep["reason"].str.startswith("MMLU sources in the mirror lack").all()
    # two models whose MMLU row in the mirror is a different leaderboard run
    value = discrepancies[discrepancies["status"] == "value"]
    assert set(value["model"]) == {"falcon-40b", "yi-6b"}
    assert len(value) == 76
    assert (value["released"] - value["rebuilt"]).abs().max() < 0.05


def test_discrepancies_report_values_and_statuses(shared_data_dir, rebuilt):
    tampered = rebuilt.to_frame()
    tampered.iloc[0, -1] = 123.0  # athene-70b bigcode value changed
    tampered.iloc[1, 60] = 1.0  # claude-2.0 open_llm/GPQA added
    from benchsel_lib.data import ScoreMatrix

    m = ScoreMatrix(tampered.to_numpy(), rebuilt.models, rebuilt.benchmarks, row_info=rebuilt.row_info)
    d = C.merged_discrepancies(data_dir=shared_data_dir, rebuilt=m)
    extra = d[d["collection"] != "mmlu"].set_index("status")
    assert extra.loc["value", "rebuilt"] == 123.0 and extra.loc["value", "model"] == "athene-70b"
    assert extra.loc["extra", "benchmark"] == "open_llm/GPQA" and np.isnan(extra.loc["extra", "released"])


def test_row_info_records_source_names(rebuilt):
    info = rebuilt.row_info
    assert info.loc["claude-2.1", "helm"] == "Anthropic Claude 2.1"
    assert info.loc["claude-2.1", "mmlu"] == ""
    assert (info["n"] >= 2).all()


def test_auxiliary_columns_are_available_behind_an_option(shared_data_dir, rebuilt):
    full = C.build_merged(data_dir=shared_data_dir, include_auxiliary=True)
    n_aux = sum(len(v) for v in AUXILIARY_COLUMNS.values() if v)
    assert full.shape == (118, 114 + n_aux)
    assert "arena_hard/rating_q025" in full.benchmarks and "alpaca_eval/n_total" in full.benchmarks
    common = full.subset(benchmarks=list(rebuilt.benchmarks))
    np.testing.assert_array_equal(common.scores, rebuilt.scores)


def test_table_datasets_matches_paper_table1_except_mmlu(shared_data_dir):
    t = C.table_datasets(data_dir=shared_data_dir)
    assert list(t.index) == list(C.PAPER_TABLE1)
    rest = t.drop(index="mmlu")
    assert (rest["M"] == rest["paper_M"]).all()
    assert (rest["N"] == rest["paper_N"]).all()
    assert (rest["pct_missing"] == rest["paper_pct_missing"]).all()
    assert tuple(t.loc["mmlu", ["M", "N", "pct_missing"]]) == (234, 57, 0.0)


def test_table_unmatched_matches_paper_table3_except_mmlu(shared_data_dir):
    t = C.table_unmatched(data_dir=shared_data_dir)
    rest = t.drop(index="mmlu")
    assert (rest["total"] == rest["paper_total"]).all()
    assert (rest["unmatched"] == rest["paper_unmatched"]).all()
    # paper: 5,454 - 5,424 = 30 distinct MMLU names matched; 16 of them are in the mirror
    assert tuple(t.loc["mmlu", ["total", "matched", "unmatched"]]) == (234, 16, 218)


def _paper_table2() -> list[tuple[str, list[bool], int]]:
    tex = PAPER.read_text()
    start = tex.index(r"\label{tab:canon}")
    body = tex[start:tex.index(r"\end{longtable}", start)]
    rows = []
    for line in body.splitlines():
        m = re.match(r"\\texttt\{(.*?)\}\s*&(.*)\\\\\s*$", line.strip())
        if m:
            cells = [c.strip() for c in m[2].split("&")]
            rows.append((m[1].replace("\\_", "_"), [c == r"\checkmark" for c in cells[:10]], int(cells[10])))
    return rows


@pytest.mark.skipif(not PAPER.is_file(), reason="paper source not available")
def test_table_canonical_equals_paper_table2(shared_data_dir):
    t = C.table_canonical(data_dir=shared_data_dir)
    paper = _paper_table2()
    assert len(paper) == 118
    assert list(t.index) == [name for name, _, _ in paper]
    cols = list(C.COLLECTIONS) + ["mteb"]
    for name, marks, n in paper:
        assert list(t.loc[name, cols]) == marks, name
        assert t.loc[name, "n"] == n


def test_overlap_network_counts(shared_data_dir):
    nodes, edges = C.overlap_network(data_dir=shared_data_dir)
    assert "mteb" not in nodes.index
    assert nodes["n_models"].to_dict() == {
        "mmlu": 31, "open_llm": 60, "helm": 17, "alpaca_eval": 60, "arena_hard": 52,
        "livebench": 74, "wildbench": 50, "mt_bench": 3, "bigcode": 61}
    top = edges.iloc[0]
    assert (top["source"], top["target"], top["shared"]) == ("livebench", "bigcode", 51)
    assert (edges["shared"] > 0).all()
    t = C.table_canonical(data_dir=shared_data_dir)
    for _, e in edges.iterrows():
        assert e["shared"] == int((t[e["source"]] & t[e["target"]]).sum())
    nodes_all, _ = C.overlap_network(data_dir=shared_data_dir, include_empty=True)
    assert nodes_all.loc["mteb", "n_models"] == 0


def test_min_collections_filters_rows(shared_data_dir):
    m = C.build_merged(data_dir=shared_data_dir, min_collections=5)
    assert m.shape[0] == 3 + 4 + 21
    with pytest.raises(ValueError, match=">= 99 collections"):
        C.build_merged(data_dir=shared_data_dir, min_collections=99)
