"""Sweeps on joblib: same results serially, on local processes and on a Dask cluster; clear failures."""
from __future__ import annotations

import functools
import math
import os

import joblib
import numpy as np
import pandas as pd
import pytest

from benchsel_lib import cli
from benchsel_lib.data import ScoreMatrix
from benchsel_lib.method.pipeline import Pipeline
from benchsel_lib.protocol import sweep
from benchsel_lib.protocol.cv import cross_validate, cv_grid
from benchsel_lib.protocol.sweep import (
    Cell,
    SweepError,
    dask_backend,
    local_cluster,
    run_sweep,
)
from benchsel_lib.studies.bands import first_pick_band, tie_break_band


def _toy(M: int = 40, N: int = 6, *, seed: int = 0, missing: float = 0.25) -> ScoreMatrix:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(M, 2)) @ rng.normal(size=(2, N)) + 0.4 * rng.normal(size=(M, N))
    X = 50 + 10 * X
    mask = rng.random(X.shape) < missing
    mask[:, 0] = False
    X[mask] = np.nan
    return ScoreMatrix(X, [f"m{i}" for i in range(M)], [f"b{j}" for j in range(N)], f"toy{seed}")


def _paper(*objectives: str, **options) -> list[Pipeline]:
    """The paper's pipelines for ``objectives`` (with ``options``), one per objective."""
    return [Pipeline.paper(objective=o, **options) for o in objectives]


# EM on missing entries, the paper's streams, every method: the most seed-sensitive grid
GRID = dict(pipelines=_paper("entropy", "mi", "random", estimator="em"), holdouts=(0.1, 0.5), k_max=3, n_folds=4,
            seed=42, scheme="paper", progress=False)


def _assert_identical(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert a.attrs["top_residuals"] == b.attrs["top_residuals"]


@pytest.fixture(scope="module")
def serial() -> pd.DataFrame:
    return cross_validate(_toy(), n_jobs=1, **GRID)


def test_two_local_workers_give_the_serial_frame_bit_for_bit(serial):
    _assert_identical(serial, cross_validate(_toy(), n_jobs=2, **GRID))


def test_parallel_config_sets_the_workers_when_n_jobs_is_none(serial):
    with joblib.parallel_config(backend="loky", n_jobs=2):
        _assert_identical(serial, cross_validate(_toy(), **GRID))


def test_a_dask_local_cluster_gives_the_serial_frame_bit_for_bit(serial):
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is not installed (the [cluster] extra: pip install 'benchsel[cluster]')"
    )
    with local_cluster(n_workers=2) as cluster:
        with distributed.Client(cluster) as client:
            assert len(client.scheduler_info()["workers"]) == 2
            assert all(env is None for env in client.run(os.environ.get, "MALLOC_TRIM_THRESHOLD_").values())
            with joblib.parallel_config(backend="dask"):
                on_cluster = cross_validate(_toy(), **GRID)
                big = [np.full(20000, float(i)) for i in range(2)]  # broadcast to every worker
                sums = run_sweep([Cell(f"sum {i}", np.sum, (big[i % 2],)) for i in range(4)])
        with dask_backend(cluster.scheduler_address):
            by_address = cross_validate(_toy(), **GRID)
    _assert_identical(serial, on_cluster)
    _assert_identical(serial, by_address)
    assert sums == [0.0, 20000.0, 0.0, 20000.0]


def test_cv_grid_equals_separate_runs_across_matrices_and_settings():
    a, b = _toy(seed=1), _toy(seed=2, missing=0.0)
    runs = [dict(matrix=a, **GRID),
            dict(matrix=b, **dict(GRID, pipelines=_paper("entropy", "mi", "random", estimator="auto"), seed=3)),
            dict(matrix=a, **dict(GRID, pipelines=_paper("entropy", estimator="em", tie_break="index")))]
    runs = [{k: v for k, v in r.items() if k != "progress"} for r in runs]
    together = cv_grid(runs, n_jobs=2)
    for run, df in zip(runs, together):
        _assert_identical(cross_validate(**run, n_jobs=1, progress=False), df)


def test_bands_run_on_workers_with_the_serial_result():
    m = _toy(seed=4)
    cv = dict(holdouts=(0.1,), k_max=2, n_folds=3, seed=1, pipeline=Pipeline.paper(objective="entropy", estimator="em"))
    pd.testing.assert_frame_equal(tie_break_band(m, n_jobs=1, **cv), tie_break_band(m, n_jobs=2, **cv))
    one, folds1 = first_pick_band(m, n_picks=3, return_folds=True, n_jobs=1, **cv)
    two, folds2 = first_pick_band(m, n_picks=3, return_folds=True, n_jobs=2, **cv)
    pd.testing.assert_frame_equal(one, two)
    pd.testing.assert_frame_equal(folds1, folds2)


def test_results_come_back_in_list_order_and_largest_cells_start_first():
    calls: list[float] = []

    def record(x: float) -> float:
        calls.append(x)
        return x * 2

    cells = [Cell(f"c{i}", record, (float(i),), cost=c) for i, c in enumerate([1.0, 5.0, 3.0])]
    assert run_sweep(cells, n_jobs=1) == [0.0, 2.0, 4.0]
    assert calls == [1.0, 2.0, 0.0]
    assert run_sweep([Cell(f"s{i}", math.sqrt, (float(i),), cost=i) for i in range(6)], n_jobs=2) == [
        math.sqrt(i) for i in range(6)
    ]


def _sigint_handler(_: int) -> str:
    import signal

    handler = signal.getsignal(signal.SIGINT)
    return "ignored" if handler == signal.SIG_IGN else repr(handler)


def test_loky_workers_leave_ctrl_c_to_the_parent():
    import signal

    from joblib.externals.loky import get_reusable_executor

    # workers started by a parent that handles Ctrl-C (a run in the background of a shell would hand every
    # process SIGINT ignored, and the workers would inherit that, initializer or not)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        get_reusable_executor().shutdown(wait=True)  # fresh workers, started from here
        cells = [Cell(f"w{i}", _sigint_handler, (i,)) for i in range(4)]
        assert run_sweep(cells, n_jobs=2) == ["ignored"] * 4
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_huge_n_jobs_starts_no_more_workers_than_there_are_cells(monkeypatch):
    asked: list[int] = []
    real = sweep.joblib.Parallel

    def recording(*args, **kwargs):
        asked.append(kwargs["n_jobs"])
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep.joblib, "Parallel", recording)
    cells = [Cell(f"s{i}", math.sqrt, (float(i),)) for i in range(3)]
    assert run_sweep(cells, n_jobs=10_000) == [math.sqrt(i) for i in range(3)]
    assert asked == [3]


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_failing_cell_raises_an_error_naming_it(n_jobs):
    cells = [Cell("fine", math.sqrt, (4.0,)), Cell("holdout=0.5 fold=3", math.sqrt, (-1.0,))]
    with pytest.raises(SweepError, match=r"cell 'holdout=0.5 fold=3' failed: ValueError: math domain error"):
        run_sweep(cells, n_jobs=n_jobs)


def test_a_failing_split_is_named_by_cross_validate():
    class Broken:
        name = "broken"

        def fit(self, train, *, cov=None):
            return self

        def predict(self, query):
            raise RuntimeError("no prediction today")

    with pytest.raises(SweepError, match=r"cell 'toy0 holdout=0.1 fold=\d' failed: RuntimeError: no prediction"):
        cross_validate(_toy(), _paper("entropy", "random", estimator="pairwise", predictor=Broken()), k_max=2,
                       n_folds=3, n_jobs=1, progress=False)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_n_jobs_below_one_or_not_an_integer_is_rejected(bad):
    with pytest.raises(ValueError, match="n_jobs must be a positive integer"):
        run_sweep([Cell("x", math.sqrt, (1.0,))], n_jobs=bad)
    with pytest.raises(ValueError, match="n_jobs must be a positive integer"):
        cross_validate(_toy(), _paper("entropy", "random", estimator="pairwise"), n_jobs=bad)


def test_run_sweep_rejects_non_cells_and_runs_an_empty_grid():
    with pytest.raises(ValueError, match="Cell"):
        run_sweep([math.sqrt])
    assert run_sweep([], n_jobs=2) == []


def test_cv_grid_rejects_unknown_and_reserved_options():
    with pytest.raises(ValueError, match="'n_jobs' is set by cv_grid"):
        cv_grid([dict(matrix=_toy(), n_jobs=2)])
    with pytest.raises(ValueError, match="'methodz' is not an option"):
        cv_grid([dict(matrix=_toy(), methodz=("mi",))])
    with pytest.raises(ValueError, match="matrix"):
        cv_grid([dict(pipelines=("mi",))])


def test_an_unreachable_scheduler_gives_a_clear_error():
    pytest.importorskip("distributed", reason="dask.distributed is not installed (the [cluster] extra)")
    with pytest.raises(ConnectionError, match=r"no Dask scheduler answered at 'tcp://127.0.0.1:9'"):
        with dask_backend("tcp://127.0.0.1:9", timeout=1):
            pass


# ------------------------------------------------------------------------ benchsel cv --jobs / --scheduler
@pytest.fixture(scope="module")
def toy_csv(tmp_path_factory):
    m = _toy(seed=7)
    path = tmp_path_factory.mktemp("sweep") / "toy.csv"
    pd.DataFrame(m.scores, index=m.models, columns=m.benchmarks).rename_axis("model").to_csv(path)
    return str(path)


def _cli(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


CLI_GRID = ("cv", "--pipelines", "entropy,random", "--holdouts", "0.1,0.5", "--folds", "3", "--k-max", "2",
            "--estimator", "em", "--format", "csv")


def test_cli_jobs_gives_the_serial_table(capsys, toy_csv):
    code1, serial, _ = _cli(capsys, *CLI_GRID, "--data", toy_csv)
    code2, parallel, _ = _cli(capsys, *CLI_GRID, "--data", toy_csv, "--jobs", "2")
    assert code1 == code2 == 0
    assert serial == parallel


def test_cli_scheduler_runs_on_a_dask_cluster_with_the_serial_table(capsys, toy_csv):
    pytest.importorskip("distributed", reason="dask.distributed is not installed (the [cluster] extra)")
    _, serial, _ = _cli(capsys, *CLI_GRID, "--data", toy_csv)
    with local_cluster(n_workers=2) as cluster:
        code, out, err = _cli(capsys, *CLI_GRID, "--data", toy_csv, "--scheduler", cluster.scheduler_address)
    assert code == 0, err
    assert "2 workers" in err
    assert out == serial


@pytest.mark.parametrize("argv, match", [
    (("--jobs", "0"), "--jobs must be >= 1"),
    (("--jobs", "2", "--scheduler", "tcp://127.0.0.1:9"), "--jobs is for local processes"),
])
def test_cli_rejects_bad_jobs(capsys, toy_csv, argv, match):
    code, _, err = _cli(capsys, *CLI_GRID, "--data", toy_csv, *argv)
    assert code == 2 and match in err and err.count("\n") == 1


def test_cli_unreachable_scheduler_is_one_line_exit_2(capsys, toy_csv, monkeypatch):
    pytest.importorskip("distributed", reason="dask.distributed is not installed (the [cluster] extra)")
    # the command line holds its own reference to dask_backend
    monkeypatch.setattr(cli, "dask_backend", functools.partial(sweep.dask_backend, timeout=1))
    code, _, err = _cli(capsys, *CLI_GRID, "--data", toy_csv, "--scheduler", "tcp://127.0.0.1:9")
    assert code == 2
    assert "no Dask scheduler answered at 'tcp://127.0.0.1:9'" in err and err.count("\n") == 1
