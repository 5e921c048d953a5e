"""The benchmarks' result files, which the appendix pages quote.

``benchmarks/results/<name>.json`` must have the form that the book's build
reads (``scripts/build_book.py``, ``bench_substitutions``), every
``{{ key }}`` that docs/recommended.md and docs/performance.md quote must be
in one of them (or be one of the build's own figures), and
``bench_recommend.py --json`` must write the figures it prints.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jinja2
import jinja2.meta
import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import build_book  # noqa: E402
import result_file  # noqa: E402

RESULTS = sorted((ROOT / "benchmarks" / "results").glob("*.json"))
PAGES = [ROOT / "docs" / "recommended.md", ROOT / "docs" / "performance.md"]
_SUBSTITUTION = re.compile(r"\{\{(.*?)\}\}", flags=re.S)


def _quoted(page: Path) -> set[str]:
    """The names that the ``{{ ... }}`` substitutions of ``page`` read."""
    env = jinja2.Environment()
    names: set[str] = set()
    for expr in _SUBSTITUTION.findall(page.read_text(encoding="utf-8")):
        names |= jinja2.meta.find_undeclared_variables(env.parse("{{" + expr + "}}"))
    return names


def _build_names() -> set[str]:
    """What every build provides: this build's own figures (twelve notebooks)."""
    per_nb = {f"{i:02d}_notebook": 1.0 for i in range(1, 13)}
    return set(build_book.build_substitutions(per_nb, execute_s=1.0, params={}, jobs=2))


def test_there_are_result_files() -> None:
    names = {p.stem for p in RESULTS}
    assert {"recommend", "book", "bench-em", "bench-select", "bench-cv"} <= names


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_result_file_has_the_form_the_build_reads(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert result_file.problems(data) == []
    assert data["values"], f"{path.name} holds no value"
    assert data["command"].strip() and data["measured"].strip()


def test_the_build_reads_every_value() -> None:
    subs = build_book.bench_substitutions()
    for path in RESULTS:
        data = result_file.read(path)
        name = path.stem.replace("-", "_")
        assert subs[f"{name}_command"] == data["command"]
        for key, value in data["values"].items():
            assert subs[f"{name}_{key}"] == value


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_quoted_key_exists(page: Path) -> None:
    quoted = _quoted(page)
    assert quoted, f"{page.name} quotes no figure"
    have = set(build_book.bench_substitutions()) | _build_names()
    missing = sorted(quoted - have)
    assert not missing, f"{page.name} quotes keys that no result file holds: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_build_figures_that_a_partial_build_lacks_have_a_default(page: Path) -> None:
    """A build of some notebooks (``--only 07``) lacks the other notebooks' times: the page must say so, not fail."""
    text = page.read_text(encoding="utf-8")
    for expr in _SUBSTITUTION.findall(text):
        for name in re.findall(r"\bbuild_nb_\d\d_s\b", expr):
            assert "is defined" in expr or "default" in expr, f"{{{{{expr}}}}} fails a build without that notebook"


def test_result_file_rejects_what_the_build_cannot_read(tmp_path: Path) -> None:
    assert result_file.problems({"command": "x", "measured": "y", "values": {"a-b": "1"}})
    assert result_file.problems({"command": "x", "values": {}})
    assert result_file.problems({"command": "x", "measured": "y", "values": {"a": 1}})
    with pytest.raises(ValueError):
        result_file.write(tmp_path / "x.json", {"bad key": "1"}, load_start=(0.0, 0.0, 0.0))
    assert result_file.signed(-0.0001) == "+0.000"
    assert result_file.signed(-0.012) == "-0.012"
    assert result_file.key("held aside", "k5", "imputed-lasso+imputed-ridge") == "held_aside_k5_imputed_lasso_imputed_ridge"


# --------------------------------------------------------------------------- bench_recommend.py --json

@pytest.fixture()
def bench(monkeypatch):
    import bench_recommend

    monkeypatch.setattr(bench_recommend, "RESULTS", bench_recommend.Results())
    return bench_recommend


def _peers_tab(k: int, diffs: dict[str, tuple[float, float]], auto: float) -> pd.DataFrame:
    return pd.DataFrame([dict(k=k, peer=p, reference_r2=auto, peer_r2=auto - d, diff=d, diff_se=se)
                         for p, (d, se) in diffs.items()])


def test_bench_recommend_writes_what_it_prints(bench, tmp_path: Path, capsys, monkeypatch) -> None:
    peers = list(bench.PEERS)
    diffs = {p: (0.01 * (i - 2), 0.004) for i, p in enumerate(peers)}  # two clearly below, one level, the rest above
    tab = pd.concat([_peers_tab(5, diffs, 0.8), _peers_tab(10, {p: (d + 0.05, se) for p, (d, se) in diffs.items()},
                                                          0.85)], ignore_index=True)
    rows = bench._peer_table(None, "seed 42", tab=tab, where="mteb")
    printed = capsys.readouterr().out
    shared = tab.assign(n_shared=100, n_own=120)
    shared.loc[shared.index[-1], ["n_shared", "reference_r2", "peer_r2", "diff", "diff_se"]] = [0, np.nan, np.nan,
                                                                                                np.nan, np.nan]
    monkeypatch.setattr(bench, "shared_differences", lambda df, names, ks: shared)
    bench._shared_table(pd.DataFrame({"pipeline": peers}), where="mteb")
    printed += capsys.readouterr().out
    g = dict(k0=5, k1=10, gain=0.033, gain_se=0.007, gain_common=-0.0002, gain_common_se=0.007, common_r2_k0=0.826,
             common_r2_k1=0.857, only_r2_k0=0.792, only_r2_k1=0.812, nested_cells=5, n_cells=10)
    verdicts = bench._gain_verdicts("mteb (seed 42)", g, key="mteb")
    printed += capsys.readouterr().out
    data = bench.write_json(tmp_path / "recommend.json", verdicts, load_start=(1.0, 1.0, 1.0),
                            argv=["benchmarks/bench_recommend.py", "--quick"])
    assert result_file.read(tmp_path / "recommend.json") == data
    v = data["values"]
    assert data["command"] == "python benchmarks/bench_recommend.py --quick"

    for r in rows:  # every printed row of the peers table is in the file, as printed
        line = next(x for x in printed.splitlines() if re.match(rf"\s*{r.k}\s+{re.escape(r.peer)}\s", x))
        at = result_file.key("mteb", f"k{r.k}", r.peer)
        for key in ("r2", "diff", "se"):
            assert v[f"{at}_{key}"].lstrip("+") in line
        assert v[f"mteb_k{r.k}_auto"] in line
    # the shared table: the comparison without a shared entry is counted apart
    assert v["matrices_shared_none"] == "1"
    assert v["matrices_shared_n"] == str(len(tab) - 1)
    k5 = result_file.key("mteb", "k5", peers[0], "shared")
    assert v[f"{k5}_n"] == "100" and v[f"{k5}_own"] == "120" and v[f"{k5}_diff"] == "-0.020"
    # the counts the page quotes
    d = tab["diff"].to_numpy()
    assert v["matrices_peers_n"] == str(len(tab))
    assert v["matrices_peers_at_or_above"] == str(int((d >= 0).sum()))
    assert v["matrices_peers_above_2se"] == str(int((d > 2 * 0.004).sum()))
    assert v["matrices_peers_below_2se"] == str(int((d < -2 * 0.004).sum()))
    assert v["matrices_peers_below_2se_where"] == "MTEB"
    assert v["mteb_k5_closest"] == peers[0] and v["mteb_k5_closest_diff"] == "-0.020"
    # the gain, as printed (a difference of -0.0002 reads +0.000 in the file, never -0.000)
    assert f"{v['mteb_gain']} +- {v['mteb_gain_se']}" in printed
    assert v["mteb_gain_common"] == "+0.000" and "-0.000 +- 0.007" in printed
    assert v["mteb_nested"] == "5 of 10" and "5 of 10 folds" in printed
    assert v["verdicts"] == "2" and v["verdicts_pass"] == "1" and v["verdicts_fail"] == "1"
    assert all(result_file.KEY.match(key) for key in v)


def test_bench_recommend_times_each_fit_as_the_median_of_fresh_processes_and_names_the_matrices_off_target(
        bench, monkeypatch) -> None:
    runs = {"mteb": iter([1.50, 0.90, 1.40, 2.00, 1.10]), "merged": iter([1.2] * 5),
            "mmlu": iter([0.80, 1.30, 0.70, 0.75, 0.90])}
    monkeypatch.setattr(bench, "_fit_seconds", lambda name: next(runs[name]))
    monkeypatch.setattr(bench, "_before", lambda key: "-")
    lines = bench.fit_timing(["mteb", "merged", "mmlu"])
    v = bench.RESULTS.texts
    assert v["fit_mteb_s"] == "1.40" and v["fit_mteb_runs"] == "1.50 / 0.90 / 1.40 / 2.00 / 1.10"
    assert v["fit_mmlu_s"] == "0.80" and v["fit_runs"] == "5"
    assert v["fit_target"] == "met on MMLU; not met on MTEB and Merged"
    assert [line.split()[0] for line in lines] == ["FAIL", "FAIL", "PASS"]


# --------------------------------------------------------------------------- bench_threads.py

def test_bench_threads_lifts_the_library_thread_limits_it_patches_and_puts_them_back() -> None:
    import bench_threads

    limits = (bench_threads.sweep_module.threadpool_limits, bench_threads.fitting_module.threadpool_limits)
    m = bench_threads.synthetic(40, 8, 0.3)
    lifted = bench_threads.run(m, limit=False)
    limited = bench_threads.run(m, limit=True)
    assert np.isclose(lifted[2], limited[2], rtol=1e-12)  # the BLAS thread count leaves the R^2 as it is
    assert (bench_threads.sweep_module.threadpool_limits, bench_threads.fitting_module.threadpool_limits) == limits
