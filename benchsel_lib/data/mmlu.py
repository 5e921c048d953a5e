"""The per-subject MMLU matrix (Section 5, Table 1: "MMLU (per-subject)").

The paper's 5,452 x 57 matrix comes from the Open LLM Leaderboard v1 results
(5-shot, ``harness|hendrycksTest-<subject>|5``), which are not in the public
snapshot mirrored here. :func:`load_mmlu` rebuilds the largest matrix the
mirrored files allow from three public tables:

* ``mmlu_sources/sloth_data_v2.csv`` and ``sloth_data_v1.csv`` (Sloth,
  ``hendrycksTest-<subject>`` columns, one row per model);
* ``mmlu_sources/benchbench_mmlu_leaderboard.tsv`` (BenchBench,
  ``harness|hendrycksTest-<subject>|5`` columns, one row per *run*: a model
  may appear several times with different ``split_name`` timestamps).

Reconciliation rule (documented and tested)
-------------------------------------------
1. Model names are normalized by :func:`normalize_model_name`: strip
   whitespace and a leading ``details_``, drop the organisation prefix
   (everything up to the last ``__`` or ``/``), lowercase. So
   ``details_01-ai__Yi-34B-Chat``, ``01-ai/Yi-34B-Chat`` and ``yi-34b-chat`` are
   the same model.
2. Only runs with all 57 subjects observed are kept.
3. Within BenchBench, the most recent run (largest ``split_name``
   timestamp, ``:`` and ``-`` separators compared alike) of each model is kept.
4. Across files the priority is ``sloth_data_v2.csv`` > ``sloth_data_v1.csv``
   > BenchBench: Sloth is a curated one-row-per-model table (its v1 and v2
   agree exactly on the models they share), and it is the source whose
   values the released Merged matrix carries (e.g. ``Yi-34B-Chat``).

``row_info`` records, per row, the ``source`` file, the ``raw_name`` as
written there, the ``run`` (BenchBench timestamp, else empty) and
``n_candidates`` (how many complete rows across files and runs had that
normalized name). On the mirrored files the result is 234 x 57.

:func:`read_openllm_v1_results` reads the original per-model results JSON of
the Open LLM Leaderboard v1, so a user with the full dump can build the
full-size matrix with the same code.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from .matrix import ScoreMatrix
from .sources import data_path

__all__ = [
    "MMLU_SOURCE_FILES",
    "MMLU_SUBJECTS",
    "load_mmlu",
    "mmlu_candidates",
    "normalize_model_name",
    "read_openllm_v1_results",
]

#: The 57 MMLU subjects (column order of the matrix).
MMLU_SUBJECTS: tuple[str, ...] = tuple(
    """abstract_algebra anatomy astronomy business_ethics clinical_knowledge college_biology college_chemistry
    college_computer_science college_mathematics college_medicine college_physics computer_security conceptual_physics
    econometrics electrical_engineering elementary_mathematics formal_logic global_facts high_school_biology
    high_school_chemistry high_school_computer_science high_school_european_history high_school_geography
    high_school_government_and_politics high_school_macroeconomics high_school_mathematics high_school_microeconomics
    high_school_physics high_school_psychology high_school_statistics high_school_us_history high_school_world_history
    human_aging human_sexuality international_law jurisprudence logical_fallacies machine_learning management marketing
    medical_genetics miscellaneous moral_disputes moral_scenarios nutrition philosophy prehistory professional_accounting
    professional_law professional_medicine professional_psychology public_relations security_studies sociology
    us_foreign_policy virology world_religions""".split()
)
assert len(MMLU_SUBJECTS) == 57

#: Source files in priority order (first wins).
MMLU_SOURCE_FILES: tuple[str, ...] = (
    "mmlu_sources/sloth_data_v2.csv",
    "mmlu_sources/sloth_data_v1.csv",
    "mmlu_sources/benchbench_mmlu_leaderboard.tsv",
)

_INFO_COLUMNS = ["model", "raw_name", "source", "run", "priority"]


def normalize_model_name(name: str) -> str:
    """Normalize a model name for matching across MMLU sources.

    Strips whitespace and a leading ``details_``, drops the organisation
    prefix (up to the last ``__`` or ``/``) and lowercases:
    ``"details_01-ai__Yi-34B"`` -> ``"yi-34b"``, ``"01-ai/Yi-34B"`` -> ``"yi-34b"``.
    This is rule 1 of the module docstring's reconciliation.

    Parameters
    ----------
    name : str
        A model name as written in a source file (any other object is
        converted with ``str`` first).

    Returns
    -------
    str
        The normalized name (possibly empty, e.g. for ``"org/"``).

    Notes
    -----
    Complexity O(len(name)).
    """
    s = str(name).strip()
    if s.startswith("details_"):
        s = s[len("details_"):]
    s = s.rsplit("__", 1)[-1].rsplit("/", 1)[-1]
    return s.lower()


def _subject_frame(df: pd.DataFrame, pattern: str, path: Path) -> pd.DataFrame:
    """Columns of ``df`` matching ``pattern.format(subject)`` for all 57 subjects, renamed to subjects."""
    cols = {pattern.format(s): s for s in MMLU_SUBJECTS}
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing MMLU subject column(s) {missing[:3]}{'...' if len(missing) > 3 else ''}")
    return df[list(cols)].rename(columns=cols).apply(pd.to_numeric, errors="raise").astype(float)


def _read_sloth(path: Path, priority: int) -> pd.DataFrame:
    raw = pd.read_csv(path)
    if "Model" not in raw.columns:
        raise ValueError(f"{path}: no 'Model' column")
    out = _subject_frame(raw, "hendrycksTest-{}", path)
    out.insert(0, "model", raw["Model"].map(normalize_model_name))
    out.insert(1, "raw_name", raw["Model"].astype(str))
    out.insert(2, "source", path.name)
    out.insert(3, "run", "")
    out.insert(4, "priority", priority)
    return out


def _read_benchbench(path: Path, priority: int) -> pd.DataFrame:
    raw = pd.read_csv(path, sep="\t")
    for col in ("model_name", "split_name"):
        if col not in raw.columns:
            raise ValueError(f"{path}: no {col!r} column")
    out = _subject_frame(raw, "harness|hendrycksTest-{}|5", path)
    out.insert(0, "model", raw["model_name"].map(normalize_model_name))
    out.insert(1, "raw_name", raw["model_name"].astype(str))
    out.insert(2, "source", path.name)
    out.insert(3, "run", raw["split_name"].astype(str))
    out.insert(4, "priority", priority)
    return out


def mmlu_candidates(*, data_dir: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """All rows (models x runs) of the three MMLU source files, before reconciliation.

    Columns: ``model`` (normalized), ``raw_name``, ``source``, ``run``,
    ``priority`` (0 = highest), ``complete`` (all 57 subjects observed),
    then the 57 subjects. O(rows x 57).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data directory holding ``mmlu_sources/`` (see
        :func:`~benchsel_lib.data.sources.resolve_data_dir`); missing files
        are downloaded and every file is verified
        (:func:`~benchsel_lib.data.sources.data_path`).

    Returns
    -------
    pandas.DataFrame
        One row per data row of the :data:`MMLU_SOURCE_FILES`, in file
        order (Sloth v2, Sloth v1, BenchBench) and row order within a file,
        with a fresh ``RangeIndex``; ``run`` is the BenchBench ``split_name``
        (empty for Sloth) and the subject columns are floats (NaN where
        missing).

    Raises
    ------
    ValueError
        A source file lacks its model column (``Model``; ``model_name`` and
        ``split_name`` for BenchBench) or a subject column, holds a
        non-numeric subject value, or fails its size / digest check.
    FileNotFoundError
        A source file is not available and cannot be downloaded.
    """
    frames = []
    for priority, name in enumerate(MMLU_SOURCE_FILES):
        path = data_path(name, data_dir=data_dir)
        reader = _read_benchbench if name.endswith(".tsv") else _read_sloth
        frames.append(reader(path, priority))
    cand = pd.concat(frames, ignore_index=True)
    cand.insert(5, "complete", cand[list(MMLU_SUBJECTS)].notna().all(axis=1))
    return cand


def _reconcile(cand: pd.DataFrame) -> pd.DataFrame:
    """Apply rules 2-4 of the module docstring: complete rows, best priority, latest run."""
    ok = cand[cand["complete"]].copy()
    n = ok.groupby("model")["model"].transform("size")
    ok["n_candidates"] = n.astype(int)
    # timestamps come as 2023-08-09T22:06:19 or 2023-12-09T20-37-44: compare with ':' -> '-'
    ok["_run_key"] = ok["run"].str.replace(":", "-", regex=False)
    ok = ok.sort_values(["model", "priority", "_run_key"], ascending=[True, True, False], kind="stable")
    return ok.drop_duplicates("model", keep="first").drop(columns="_run_key")


def load_mmlu(*, data_dir: str | os.PathLike[str] | None = None) -> ScoreMatrix:
    """Build the per-subject MMLU matrix from the mirrored sources (module docstring rules).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data directory holding ``mmlu_sources/`` (see
        :func:`~benchsel_lib.data.sources.resolve_data_dir`).

    Returns
    -------
    ScoreMatrix
        Fully observed (234 x 57 on the mirrored files); rows sorted by
        normalized model name; columns :data:`MMLU_SUBJECTS` (accuracies in
        [0, 1]); ``row_info`` with ``source``, ``raw_name``, ``run``,
        ``n_candidates``. O(rows x 57 + rows log rows).

    Raises
    ------
    ValueError, FileNotFoundError
        As :func:`mmlu_candidates` (a malformed, mismatching or unavailable
        source file); ``ValueError`` also when no row is complete.
    """
    best = _reconcile(mmlu_candidates(data_dir=data_dir))
    info = best[["raw_name", "source", "run", "n_candidates"]].set_index(best["model"])
    info.index.name = "model"
    return ScoreMatrix(
        best[list(MMLU_SUBJECTS)].to_numpy(),
        best["model"].tolist(),
        list(MMLU_SUBJECTS),
        "MMLU per subject, Open LLM Leaderboard v1 5-shot (Sloth v1/v2 + BenchBench mirrors)",
        info,
    )


# ------------------------------------------------------------ raw v1 dumps
_KEY = re.compile(r"^harness\|hendrycksTest-(?P<subject>[a-z_]+)\|5$")
_TIMESTAMP = re.compile(r"results_(?P<ts>[0-9T:_.\-]+)\.json$")


def _expand(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(p.rglob("*.json")))
        elif p.is_file():
            files.append(p)
        else:
            raise ValueError(f"results path {str(p)!r} does not exist")
    if not files:
        raise ValueError("no results JSON files found")
    return files


def _model_name(doc: dict, path: Path) -> str:
    for key in ("config_general", "config"):
        cfg = doc.get(key)
        if isinstance(cfg, dict) and cfg.get("model_name"):
            return str(cfg["model_name"])
    # dump layout: <org>/<model>/results_<timestamp>.json
    parent = path.parent
    return f"{parent.parent.name}/{parent.name}" if parent.parent.name else parent.name


def _read_result(path: Path) -> tuple[str, str, dict[str, float]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable results JSON ({exc})") from None
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, dict):
        raise ValueError(f"{path}: no 'results' object")
    scores: dict[str, float] = {}
    for key, val in results.items():
        m = _KEY.match(key)
        if m and isinstance(val, dict) and val.get("acc") is not None:
            try:
                scores[m["subject"]] = float(val["acc"])
            except (TypeError, ValueError):
                raise ValueError(f"{path}: non-numeric acc {val['acc']!r} for {key!r}") from None
    ts = _TIMESTAMP.search(path.name)
    run = ts["ts"] if ts else str((doc.get("config_general") or {}).get("end_time", ""))
    return _model_name(doc, path), run, scores


def read_openllm_v1_results(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    require_complete: bool = True,
) -> ScoreMatrix:
    """Read Open LLM Leaderboard v1 per-model results JSON into an MMLU matrix.

    Each file holds ``results["harness|hendrycksTest-<subject>|5"]["acc"]``;
    the model is ``config_general.model_name`` (else ``config.model_name``,
    else ``<org>/<model>`` from the dump layout ``<org>/<model>/results_<ts>.json``).

    Parameters
    ----------
    paths : path or iterable of paths
        Files and/or directories (searched recursively for ``*.json``).
    require_complete : bool
        Keep only runs with all 57 subjects (default, as for :func:`load_mmlu`);
        with ``False`` incomplete runs are kept with ``NaN``.

    Returns
    -------
    ScoreMatrix
        Rows = models (name as given, sorted), columns = :data:`MMLU_SUBJECTS`.
        A model with several runs keeps its most recent one (largest
        timestamp in ``results_<timestamp>.json``, else the later file).
        ``row_info`` has ``source`` (file path), ``run`` and ``n_runs``.
        Files without any MMLU entry are skipped. O(files x 57).

    Raises
    ------
    ValueError
        Missing paths, unreadable JSON, non-numeric accuracies, or no run left.
    """
    rows = []
    for order, path in enumerate(_expand(paths)):
        model, run, scores = _read_result(path)
        if not scores or (require_complete and len(scores) < len(MMLU_SUBJECTS)):
            continue
        rows.append({"model": model, "source": str(path), "run": run, "order": order,
                     **{s: scores.get(s, np.nan) for s in MMLU_SUBJECTS}})
    if not rows:
        raise ValueError("no MMLU runs" + (" with all 57 subjects" if require_complete else "") + " in the results files")
    df = pd.DataFrame(rows)
    df["n_runs"] = df.groupby("model")["model"].transform("size")
    df["_run_key"] = df["run"].str.replace(":", "-", regex=False)
    df = df.sort_values(["model", "_run_key", "order"], kind="stable").drop_duplicates("model", keep="last")
    info = df[["source", "run", "n_runs"]].set_index(df["model"])
    return ScoreMatrix(df[list(MMLU_SUBJECTS)].to_numpy(), df["model"].tolist(), list(MMLU_SUBJECTS),
                       "MMLU per subject from Open LLM Leaderboard v1 results JSON", info)
