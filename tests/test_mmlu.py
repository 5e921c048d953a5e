"""Tests of the per-subject MMLU matrix and the Open LLM Leaderboard v1 results reader."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchsel_lib.data import load_matrix
from benchsel_lib.data import mmlu as MM

SUBJ = MM.MMLU_SUBJECTS


@pytest.fixture(scope="module")
def mmlu(shared_data_dir):
    return MM.load_mmlu(data_dir=shared_data_dir)


@pytest.fixture(scope="module")
def candidates(shared_data_dir):
    return MM.mmlu_candidates(data_dir=shared_data_dir)


def test_subject_list_has_57_unique_subjects():
    assert len(SUBJ) == 57 == len(set(SUBJ))


@pytest.mark.parametrize(
    ("raw", "norm"),
    [("details_01-ai__Yi-34B-Chat", "yi-34b-chat"), ("01-ai/Yi-34B-Chat", "yi-34b-chat"),
     (" yi-34b-chat ", "yi-34b-chat"), ("details_kyujinpy__PlatYi-34B-Q", "platyi-34b-q"), ("gpt2", "gpt2")],
)
def test_model_names_normalize_across_sources(raw, norm):
    assert MM.normalize_model_name(raw) == norm


def test_mirror_matrix_is_complete_234_by_57(mmlu):
    assert mmlu.shape == (234, 57)
    assert mmlu.benchmarks == SUBJ
    assert mmlu.observed.all()
    assert ((mmlu.scores >= 0) & (mmlu.scores <= 1)).all()


def test_load_matrix_mmlu_is_the_rebuild(mmlu, shared_data_dir):
    m = load_matrix("mmlu", data_dir=shared_data_dir)
    assert m.models == mmlu.models
    np.testing.assert_array_equal(m.scores, mmlu.scores)


def test_every_row_records_its_source(mmlu):
    info = mmlu.row_info
    assert list(info.index) == list(mmlu.models)
    assert set(info["source"]) == {"sloth_data_v2.csv", "sloth_data_v1.csv", "benchbench_mmlu_leaderboard.tsv"}
    assert info["source"].value_counts().to_dict() == {
        "sloth_data_v2.csv": 149, "benchbench_mmlu_leaderboard.tsv": 77, "sloth_data_v1.csv": 8}
    assert (info["n_candidates"] >= 1).all()


def test_only_complete_runs_are_kept(candidates, mmlu):
    complete = candidates[candidates["complete"]]
    assert set(mmlu.models) == set(complete["model"])
    counts = candidates.groupby("source")["complete"].agg(["size", "sum"])
    assert counts.loc["sloth_data_v1.csv"].tolist() == [197, 152]
    assert counts.loc["sloth_data_v2.csv"].tolist() == [188, 149]
    assert counts.loc["benchbench_mmlu_leaderboard.tsv"].tolist() == [98, 98]


def test_sloth_is_preferred_over_benchbench(candidates, mmlu):
    # yi-34b-chat: Sloth and two BenchBench runs, which differ from each other
    assert mmlu.row_info.loc["yi-34b-chat", "source"] == "sloth_data_v2.csv"
    assert mmlu.row_info.loc["yi-34b-chat", "n_candidates"] == 4
    sloth = candidates[(candidates["model"] == "yi-34b-chat") & (candidates["source"] == "sloth_data_v2.csv")]
    np.testing.assert_array_equal(mmlu.subset(models=["yi-34b-chat"]).scores[0], sloth[list(SUBJ)].to_numpy()[0])


def test_sloth_v1_and_v2_agree_where_both_are_complete(candidates):
    c = candidates[candidates["complete"] & candidates["source"].str.startswith("sloth")]
    v1 = c[c["source"] == "sloth_data_v1.csv"].set_index("model")[list(SUBJ)]
    v2 = c[c["source"] == "sloth_data_v2.csv"].set_index("model")[list(SUBJ)]
    both = v1.index.intersection(v2.index)
    assert len(both) > 100
    np.testing.assert_array_equal(v1.loc[both].to_numpy(), v2.loc[both].to_numpy())


def test_most_recent_benchbench_run_wins(candidates, mmlu):
    bb = candidates[candidates["source"] == "benchbench_mmlu_leaderboard.tsv"]
    repeated = bb.groupby("model").filter(lambda g: len(g) > 1)
    only_bb = [m for m in repeated["model"].unique() if mmlu.row_info.loc[m, "source"].startswith("benchbench")]
    assert only_bb  # e.g. pallas-0.2
    for model in only_bb:
        runs = repeated[repeated["model"] == model]
        latest = max(runs["run"], key=lambda r: r.replace(":", "-"))
        assert mmlu.row_info.loc[model, "run"] == latest
        row = runs[runs["run"] == latest][list(SUBJ)].to_numpy()[0]
        np.testing.assert_array_equal(mmlu.subset(models=[model]).scores[0], row)


# ------------------------------------------------------------ v1 results JSON
def _result(path: Path, model: str | None, scores: dict[str, float], extra: dict | None = None) -> Path:
    results = {f"harness|hendrycksTest-{s}|5": {"acc": v, "acc_stderr": 0.01, "acc_norm": v} for s, v in scores.items()}
    results["harness|arc:challenge|25"] = {"acc": 0.5}
    doc: dict = {"results": results, **(extra or {})}
    if model is not None:
        doc["config_general"] = {"model_name": model}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def _full(value: float) -> dict[str, float]:
    return {s: value + i / 1000 for i, s in enumerate(SUBJ)}


def test_reads_v1_results_and_keeps_latest_run(tmp_path):
    _result(tmp_path / "org" / "a" / "results_2023-10-01T10-00-00.000000.json", "org/a", _full(0.3))
    _result(tmp_path / "org" / "a" / "results_2023-12-01T10-00-00.000000.json", "org/a", _full(0.4))
    _result(tmp_path / "org" / "b" / "results_2023-11-01T10-00-00.000000.json", "org/b", _full(0.5))
    m = MM.read_openllm_v1_results(tmp_path)
    assert m.models == ("org/a", "org/b") and m.benchmarks == SUBJ
    np.testing.assert_allclose(m.scores[0], list(_full(0.4).values()))
    np.testing.assert_allclose(m.scores[1], list(_full(0.5).values()))
    assert m.row_info.loc["org/a", "n_runs"] == 2
    assert m.row_info.loc["org/a", "run"] == "2023-12-01T10-00-00.000000"


def test_model_name_falls_back_to_dump_layout(tmp_path):
    p = _result(tmp_path / "dump" / "someorg" / "model-x" / "results_2024-01-01T00-00-00.json", None, _full(0.2))
    m = MM.read_openllm_v1_results([p])
    assert m.models == ("someorg/model-x",)


def test_incomplete_runs_dropped_or_kept_as_nan(tmp_path):
    _result(tmp_path / "o" / "full" / "results_1.json", "o/full", _full(0.3))
    part = dict(list(_full(0.6).items())[:10])
    _result(tmp_path / "o" / "part" / "results_1.json", "o/part", part)
    assert MM.read_openllm_v1_results(tmp_path).models == ("o/full",)
    m = MM.read_openllm_v1_results(tmp_path, require_complete=False)
    assert m.models == ("o/full", "o/part")
    assert np.isnan(m.scores[1]).sum() == 47


def test_bad_results_files_raise_value_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        MM.read_openllm_v1_results(tmp_path / "missing")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a readable results JSON"):
        MM.read_openllm_v1_results(tmp_path / "bad.json")
    (tmp_path / "bad.json").write_text(json.dumps({"config_general": {}}))
    with pytest.raises(ValueError, match="no 'results' object"):
        MM.read_openllm_v1_results(tmp_path / "bad.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no results JSON"):
        MM.read_openllm_v1_results(empty)
    _result(tmp_path / "p" / "results_1.json", "p", {"anatomy": 0.5})
    with pytest.raises(ValueError, match="no MMLU runs with all 57 subjects"):
        MM.read_openllm_v1_results(tmp_path / "p")
