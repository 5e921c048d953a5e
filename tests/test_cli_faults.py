"""Faults of the command line: ``cv --out`` checked before the work and written all or nothing, SIGTERM
handled as Ctrl-C, and mistakes of input (a wrong scale, a decimal comma, one model) named in one line."""
from __future__ import annotations

import builtins
import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchsel_lib import cli
from benchsel_lib.cli import main


@pytest.fixture(scope="module")
def tiny_csv(tmp_path_factory) -> Path:
    """A fully observed 12 x 5 low-rank matrix: a cross-validation on it takes a fraction of a second."""
    rng = np.random.default_rng(1)
    X = 0.5 + 0.1 * (rng.normal(size=(12, 2)) @ rng.normal(size=(2, 5))) + 0.03 * rng.normal(size=(12, 5))
    df = pd.DataFrame(X, index=[f"m{i}" for i in range(12)], columns=[f"b{j}" for j in range(5)])
    df.index.name = "model"
    path = tmp_path_factory.mktemp("faults") / "tiny.csv"
    df.to_csv(path)
    return path


def cv(capsys, data: Path, out: Path | str, *extra: str) -> tuple[int, str, str]:
    code = main(["cv", "--data", str(data), "--pipelines", "entropy", "--folds", "3", "--k-max", "2",
                 "--estimator", "pairwise", "--out", str(out), *extra])
    stdout, stderr = capsys.readouterr()
    return code, stdout, stderr


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if the cross-validation starts."""
    def refuse(*args, **kwargs):
        raise AssertionError("the cross-validation ran although --out cannot be written")
    monkeypatch.setattr(cli, "cross_validate", refuse)


def fail_writes(monkeypatch, exc: BaseException) -> None:
    """Make the command's file writes write half their text, then raise ``exc`` (a full disk, say)."""
    def failing_open(file, mode="r", *args, **kwargs):
        fh = builtins.open(file, mode, *args, **kwargs)  # noqa: SIM115 - handed to the caller
        if "r" in mode:
            return fh
        return _HalfWriter(fh, exc)
    monkeypatch.setattr(cli, "open", failing_open, raising=False)


class _HalfWriter:
    def __init__(self, fh, exc: BaseException) -> None:
        self._fh, self._exc = fh, exc

    def write(self, text: str) -> int:
        self._fh.write(text[: len(text) // 2])
        self._fh.flush()
        raise self._exc

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self._fh.close()


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("benchsel: error: ") and "Traceback" not in err
    return lines[0]


# ------------------------------------------------------- checked before the work
def test_out_pointing_at_a_folder_is_refused_before_the_cross_validation(capsys, tiny_csv, tmp_path, no_work):
    code, out, err = cv(capsys, tiny_csv, tmp_path)
    assert code == 2 and out == ""
    assert one_error_line(err) == f"benchsel: error: cannot write --out {tmp_path}: it is a folder"


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("{tmp}/missing/results.csv", "the folder does not exist"),
        ("{csv}/results.csv", "is not a folder"),
        ("/dev/null", "it exists and is not a regular file"),
    ],
)
def test_out_that_cannot_be_a_file_is_refused_before_the_cross_validation(capsys, tiny_csv, tmp_path, no_work,
                                                                           target, reason):
    target = target.format(tmp=tmp_path, csv=tiny_csv)
    code, out, err = cv(capsys, tiny_csv, target)
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert line.startswith(f"benchsel: error: cannot write --out {target}: ") and reason in line


def test_out_in_a_folder_where_no_file_can_be_created_is_refused_before_the_cross_validation(
        capsys, tiny_csv, tmp_path, no_work, monkeypatch):
    def denied(file, mode="r", *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(file))
    monkeypatch.setattr(cli, "open", denied, raising=False)
    code, out, err = cv(capsys, tiny_csv, tmp_path / "results.csv")
    assert code == 2 and out == ""
    assert one_error_line(err) == f"benchsel: error: cannot write --out {tmp_path / 'results.csv'}: Permission denied"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write anywhere")
def test_out_in_a_read_only_folder_is_refused_before_the_cross_validation(capsys, tiny_csv, tmp_path, no_work):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        code, _, err = cv(capsys, tiny_csv, folder / "results.csv")
    finally:
        folder.chmod(0o755)
    assert code == 2 and "is not writable" in one_error_line(err)


# --------------------------------------------------------- written all or nothing
@pytest.mark.parametrize("name", ["results.csv", "results.json"])
def test_failed_write_leaves_no_partial_or_temporary_file_and_exits_1(capsys, tiny_csv, tmp_path, monkeypatch, name):
    fail_writes(monkeypatch, OSError(errno.ENOSPC, "No space left on device"))
    target = tmp_path / name
    code, out, err = cv(capsys, tiny_csv, target)
    assert code == 1
    assert one_error_line(err) == f"benchsel: error: cannot write --out {target}: No space left on device"
    assert "R^2 (mean +- sd over 3 folds)" in out and "entropy" in out  # the summary is still printed
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_the_previous_file(capsys, tiny_csv, tmp_path, monkeypatch):
    target = tmp_path / "results.csv"
    target.write_text("the previous results\n")
    fail_writes(monkeypatch, OSError(errno.EFBIG, "File too large"))
    code, out, err = cv(capsys, tiny_csv, target, "--format", "json")
    assert code == 1 and "File too large" in one_error_line(err)
    assert len(json.loads(out)["summary"]) == 2  # stdout is still the whole JSON summary
    assert target.read_text() == "the previous results\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.csv"]


def test_interrupted_write_removes_the_temporary_file(capsys, tiny_csv, tmp_path, monkeypatch):
    fail_writes(monkeypatch, KeyboardInterrupt())
    code, _, err = cv(capsys, tiny_csv, tmp_path / "results.csv")
    assert code == 130 and "interrupted" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE semantics of Linux")
def test_file_size_limit_gives_one_line_the_summary_and_no_file(tiny_csv, tmp_path):
    resource = pytest.importorskip("resource")
    target = tmp_path / "results.csv"

    def limit_file_size() -> None:  # `ulimit -f`: writes past 200 bytes fail with EFBIG (Python ignores SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))

    res = subprocess.run(
        [sys.executable, "-m", "benchsel_lib.cli", "cv", "--data", str(tiny_csv), "--pipelines", "entropy",
         "--folds", "3", "--k-max", "2", "--estimator", "pairwise", "--out", str(target)],
        capture_output=True, text=True, timeout=120, preexec_fn=limit_file_size, check=False,
    )
    assert res.returncode == 1, res.stderr
    assert res.stderr.strip() == f"benchsel: error: cannot write --out {target}: File too large"
    assert "entropy" in res.stdout
    assert list(tmp_path.iterdir()) == []


def test_successful_write_replaces_the_file_and_leaves_no_temporary_file(capsys, tiny_csv, tmp_path):
    target = tmp_path / "results.csv"
    target.write_text("old\n")
    code, _, err = cv(capsys, tiny_csv, target)
    assert code == 0 and "wrote 6 rows" in err
    assert len(pd.read_csv(target)) == 6
    assert [p.name for p in tmp_path.iterdir()] == ["results.csv"]
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # not the 0o600 of a private temporary file


def test_json_out_is_a_complete_list_of_records(capsys, tiny_csv, tmp_path):
    target = tmp_path / "results.json"
    code, _, _ = cv(capsys, tiny_csv, target)
    assert code == 0
    rows = json.loads(target.read_text())
    assert len(rows) == 6 and {"pipeline", "fold", "k", "r2", "selected"} <= set(rows[0])


def _cpu_seconds_by_process(root: int) -> dict[int, float]:
    """CPU seconds of ``root`` and of its descendants, read from /proc (Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    family = {root}
    grew = True
    while grew:
        more = {pid for pid, ppid in parents.items() if ppid in family} - family
        family |= more
        grew = bool(more)
    return {pid: cpu[pid] for pid in family if pid in cpu}


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and SIGINT of POSIX")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sigint_mid_cross_validation_exits_130_with_one_line_no_output_and_no_leftover_process(tmp_path, jobs):
    import signal
    import time

    target = tmp_path / "results.csv"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    env.pop("BENCHSEL_CACHE_DIR", None)
    proc = subprocess.Popen(  # minutes of work: EM on every split of the Merged matrix
        [sys.executable, "-m", "benchsel_lib.cli", "cv", "--data", "merged", "--pipelines", "entropy,mi,random",
         "--holdouts", "0.1,0.2,0.5,0.9", "--jobs", jobs,
         "--out", str(target)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
        # Ctrl-C reaches a command run in the foreground; a test run started in the background of a
        # non-interactive shell would hand the command SIGINT ignored, so it starts with the default
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # wait until the work is under way: the command (and each worker) past its imports, computing
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        cpu = _cpu_seconds_by_process(proc.pid)
        workers = [c for pid, c in cpu.items() if pid != proc.pid and c >= 3.0]
        if cpu.get(proc.pid, 0.0) >= 3.0 if jobs == "1" else len(workers) >= int(jobs):
            break
        time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends: the whole foreground group
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "benchsel: interrupted"
    assert "Traceback" not in err
    assert out == "" and list(tmp_path.iterdir()) == []
    deadline = time.monotonic() + 20
    while _group_alive(proc.pid) and time.monotonic() < deadline:  # worker processes wind down
        time.sleep(0.2)
    assert not _group_alive(proc.pid), "a worker process outlived the interrupted command"


# ------------------------------------------------------------------------ SIGTERM as Ctrl-C
class _TerminatedWriter(_HalfWriter):
    """Writes half its text, then the process gets SIGTERM (``kill PID`` while ``--out`` is written)."""

    def write(self, text: str) -> int:
        import signal

        self._fh.write(text[: len(text) // 2])
        self._fh.flush()
        os.kill(os.getpid(), signal.SIGTERM)
        return len(text) // 2


def test_sigterm_while_out_is_written_keeps_the_old_file_and_leaves_no_temporary_file(capsys, tiny_csv, tmp_path,
                                                                                       monkeypatch):
    target = tmp_path / "results.csv"
    target.write_text("the previous results\n")

    def terminating_open(file, mode="r", *args, **kwargs):
        fh = builtins.open(file, mode, *args, **kwargs)  # noqa: SIM115 - handed to the caller
        return _TerminatedWriter(fh, None) if "x" in mode else fh
    monkeypatch.setattr(cli, "open", terminating_open, raising=False)
    code, out, err = cv(capsys, tiny_csv, target)
    assert code == 143 and err.strip().splitlines() == ["benchsel: terminated"] and out == ""
    assert target.read_text() == "the previous results\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.csv"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and SIGTERM of POSIX")
@pytest.mark.parametrize("to", ["command", "group"])
def test_sigterm_mid_cross_validation_exits_143_with_one_line_and_stops_every_worker_and_tracker(tmp_path, to):
    import signal
    import time

    target = tmp_path / "results.csv"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    env.pop("BENCHSEL_CACHE_DIR", None)
    proc = subprocess.Popen(  # minutes of work: EM on every split of the Merged matrix
        [sys.executable, "-m", "benchsel_lib.cli", "cv", "--data", "merged", "--k-max", "10", "--jobs", "2",
         "--out", str(target)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:  # both workers past their imports, computing
        cpu = _cpu_seconds_by_process(proc.pid)
        if len([c for pid, c in cpu.items() if pid != proc.pid and c >= 2.0]) >= 2:
            break
        time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()
    assert len(_cpu_seconds_by_process(proc.pid)) >= 4  # the command, 2 workers, their resource tracker(s)
    (os.killpg if to == "group" else os.kill)(proc.pid, signal.SIGTERM)  # `kill PID`, or a service manager's stop
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err.strip().splitlines() == ["benchsel: terminated"]  # no traceback, no "leaked semlock" of joblib
    assert out == "" and list(tmp_path.iterdir()) == []
    deadline = time.monotonic() + 5
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _group_alive(proc.pid), "a worker or a resource tracker outlived the terminated command"


# ------------------------------------------------------------- messages that name the real cause
def _two_model_csv(tmp_path: Path, m: int = 2) -> Path:
    rows = ["model,a,b,c"] + [f"m{i},{0.1 + 0.2 * i:g},{0.2 + 0.1 * i:g},{0.3 + 0.15 * i:g}" for i in range(m)]
    path = tmp_path / f"m{m}.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("command", [["select", "-k", "1"], ["select", "-k", "1", "--pipeline", "paper"],
                                     ["predict", "--scores", "a=0.1"], ["cv"]])
def test_a_one_model_csv_is_refused_by_its_model_count_before_any_column_warning(capsys, tmp_path, command):
    path = _two_model_csv(tmp_path, 1)
    code = main([command[0], "--data", str(path), *command[1:]])
    _, err = capsys.readouterr()
    assert code == 2
    assert one_error_line(err) == (f"benchsel: error: {path} has 1 model (x 3 benchmarks): every command needs at "
                                   "least 2 models, to see how the benchmarks vary together")


def test_predict_on_two_models_blames_no_option_that_was_not_given_and_gives_no_interval(capsys, tmp_path):
    path = _two_model_csv(tmp_path)
    code = main(["predict", "--data", str(path), "--scores", "a=0.2", "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 0 and "--inner-folds" not in err
    assert "only 2 training models" in err
    table = pd.read_csv(io.StringIO(out))
    assert table["lower"].isna().all() and table["upper"].isna().all()
    code = main(["predict", "--data", str(path), "--scores", "a=0.2", "--pipeline", "paper", "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 0 and [line for line in err.splitlines() if "warning" in line] == [
        "benchsel: warning: mi: only 2 training models: every correlation from two points is +-1, too few for "
        "Gaussian intervals; predictions come without intervals"]
    assert pd.read_csv(io.StringIO(out))[["lower", "upper", "sd"]].isna().all().all()


@pytest.mark.parametrize(("scores", "message"), [
    ("a=0,6", "'a=0,6' looks like a decimal comma in the value of benchmark 'a': write a=0.6 (a comma separates "
              "the scores)"),
    ("a=0,6,b=0.3", "'a=0,6' looks like a decimal comma"),
    ("a=0.1,b=0, 3", "'b=0,3' looks like a decimal comma in the value of benchmark 'b': write b=0.3"),
])
def test_a_decimal_comma_in_scores_is_named(capsys, tiny_csv, scores, message):
    code = main(["predict", "--data", str(tiny_csv), "--scores", scores])
    _, err = capsys.readouterr()
    assert code == 2 and message in one_error_line(err)


def test_a_huge_cell_is_cut_in_the_error_line(capsys, tmp_path):
    path = tmp_path / "long.csv"
    rows = ["model,a,b,c"] + [f"m{i},{0.1 * i:g},{0.2 + 0.01 * i:g},0.3" for i in range(6)]
    rows[3] = "m2," + "x" * 100_000 + ",0.5,0.4"
    path.write_text("\n".join(rows) + "\n")
    code = main(["select", "--data", str(path), "-k", "1"])
    _, err = capsys.readouterr()
    line = one_error_line(err)
    assert code == 2 and len(line) < 300
    assert f"'{'x' * 60}...' (100,000 characters) in row 'm2', column 'a'" in line


def _percent_csv(tmp_path):
    """30 models x 3 benchmarks on a 0-100 scale (gpqa from 25 up), written as a CSV: (scores, path)."""
    rng = np.random.default_rng(3)
    X = np.column_stack([25 + 70 * rng.random(30), 10 + 80 * rng.random(30), 5 + 90 * rng.random(30)])
    path = tmp_path / "percent.csv"
    pd.DataFrame(X, index=[f"m{i}" for i in range(30)], columns=["gpqa", "aime", "mmlu"]).rename_axis(
        "model").to_csv(path)
    return X, path


def test_a_fraction_for_a_percentage_is_one_warning_line_and_an_error_with_strict(capsys, tmp_path):
    X, path = _percent_csv(tmp_path)
    lo, hi = X[:, 0].min(), X[:, 0].max()
    base = ["predict", "--data", str(path), "--pipeline", "paper", "--format", "csv"]
    assert main([*base, "--scores", "gpqa=71"]) == 0
    clean, _ = capsys.readouterr()
    assert main([*base, "--scores", "gpqa=0.71"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"benchsel: warning: value 0.71 for benchmark 'gpqa' is below its observed range {lo:.4g}..{hi:.4g}; "
        "0.71 x 100 = 71 lies in the observed range: a fraction given for a percentage?",
        err.splitlines()[1],  # the command's own line: what it conditioned on
    ]
    assert list(pd.read_csv(io.StringIO(out)).columns) == list(pd.read_csv(io.StringIO(clean)).columns)
    assert main([*base, "--scores", "gpqa=0.71", "--strict"]) == 2
    _, err = capsys.readouterr()
    assert "a fraction given for a percentage?" in one_error_line(err)


def test_auto_selection_of_every_benchmark_is_refused_before_the_work(capsys, tiny_csv, monkeypatch):
    monkeypatch.setattr(cli, "_fit_recommended", lambda *a, **k: pytest.fail("the search ran"))
    code = main(["select", "--data", str(tiny_csv), "-k", "5"])
    _, err = capsys.readouterr()
    assert code == 2 and one_error_line(err).startswith("benchsel: error: -k 5 leaves nothing to predict: ")


def test_a_scores_file_warning_names_the_model_it_is_about(capsys, tmp_path):
    X, path = _percent_csv(tmp_path)
    scores = tmp_path / "new.csv"
    scores.write_text("model,gpqa,aime\nnew-a,71,40\nnew-b,0.71,50\n")
    assert main(["predict", "--data", str(path), "--pipeline", "paper", "--format", "csv",
                 "--scores-file", str(scores)]) == 0
    _, err = capsys.readouterr()
    warned = [line for line in err.splitlines() if line.startswith("benchsel: warning:")]
    assert warned == [f"benchsel: warning: model 'new-b': value 0.71 for benchmark 'gpqa' is below its observed "
                      f"range {X[:, 0].min():.4g}..{X[:, 0].max():.4g}; 0.71 x 100 = 71 lies in the observed range: "
                      "a fraction given for a percentage?"]
