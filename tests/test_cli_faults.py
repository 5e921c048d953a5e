"""Faults around ``benchsel cv --out``: checked before the work, written all or nothing."""
from __future__ import annotations

import builtins
import errno
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
    code = main(["cv", "--data", str(data), "--methods", "entropy", "--folds", "3", "--k-max", "2",
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
        [sys.executable, "-m", "benchsel_lib.cli", "cv", "--data", str(tiny_csv), "--methods", "entropy",
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
    assert len(rows) == 6 and {"method", "fold", "k", "r2", "selected"} <= set(rows[0])


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
        [sys.executable, "-m", "benchsel_lib.cli", "cv", "--data", "merged", "--methods", "entropy,mi,random",
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
