"""Shared pytest fixtures for benchsel.

Only generic fixtures live here; test modules may append their own.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _find_shared_data() -> Path | None:
    """The directory holding the mirrored data files, or None (env, project cache, ../shared/data)."""
    env = os.environ.get("BENCHSEL_DATA_DIR")
    candidates = [Path(env)] if env else []
    candidates += [PROJECT_ROOT / "data", PROJECT_ROOT.parent / "shared" / "data"]
    for d in candidates:
        if (d / "merged.matrix.npz").is_file():
            return d
    return None


SHARED_DATA_DIR = _find_shared_data()

#: Decorator: skip a test when the mirrored data files are not available.
requires_shared_data = pytest.mark.skipif(
    SHARED_DATA_DIR is None, reason="mirrored data files (../shared/data or BENCHSEL_DATA_DIR) not available"
)


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """Path of the directory with the mirrored data files; skips the test if there is none."""
    if SHARED_DATA_DIR is None:
        pytest.skip("mirrored data files (../shared/data or BENCHSEL_DATA_DIR) not available")
    return SHARED_DATA_DIR
