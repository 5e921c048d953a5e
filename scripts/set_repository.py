#!/usr/bin/env python
"""Name the project's repository: ``_config.yml``'s ``repository`` and the set-up cell of every notebook.

The repository's address switches on the site's repository and launch
(Binder, Colab) buttons and the source link of each chapter. A notebook
opened on Colab or Binder must install the project first: every numbered
notebook starts with one hidden set-up cell (:func:`setup_cell`, tagged
``remove-cell``, its source hidden in Jupyter) that installs
``benchsel[book] @ git+URL@BRANCH`` with ``%pip`` where ``benchsel_lib``
cannot be imported. With no repository the cell stops with one line that
says to install the project from a clone instead.

Usage
-----
::

    python scripts/set_repository.py https://github.com/OWNER/benchsel            # branch main
    python scripts/set_repository.py https://github.com/OWNER/benchsel --branch dev
    python scripts/set_repository.py --none                                       # no repository
    python scripts/set_repository.py --check                                      # do the cells match?

Running it twice changes nothing the second time.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "_config.yml"
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOK_RE = re.compile(r"^\d{2}_[A-Za-z0-9_\-]+\.ipynb$")
#: The set-up cell's id (every notebook has at most one such cell, the first).
SETUP_ID = "benchsel-setup"
#: The first line of the set-up cell's source, by which it is found when a tool dropped its id.
SETUP_MARK = "# Set-up (hidden): "
_URL = re.compile(r"^https?://[^/\s]+/\S+$")
_BRANCH = re.compile(r"^[A-Za-z0-9._/\-]+$")


def _check(url: str | None, branch: str) -> str | None:
    url = (url or "").strip().rstrip("/") or None
    if url is not None and not _URL.match(url):
        raise ValueError(f"{url!r} is not a repository URL (https://host/owner/name)")
    if not _BRANCH.match(branch):
        raise ValueError(f"{branch!r} is not a branch name")
    return url


def setup_source(url: str | None, branch: str = "main") -> str:
    """The set-up cell's code for repository ``url`` (None: no repository).

    Parameters
    ----------
    url : str or None
        The repository (``https://github.com/OWNER/benchsel``).
    branch : str
        The branch to install from.

    Returns
    -------
    str
        Code that does nothing where ``benchsel_lib`` can be imported; else
        installs the project from ``url`` with ``%pip`` or, without ``url``,
        raises one line saying how to install it.
    """
    url = _check(url, branch)
    written = "# Written by scripts/set_repository.py from _config.yml's repository: do not edit.\n"
    if url is None:
        return (SETUP_MARK + "benchsel must be installed (no repository is configured to install it from).\n"
                + written + "import importlib.util\n\n"
                "if importlib.util.find_spec(\"benchsel_lib\") is None:\n"
                "    raise ModuleNotFoundError(\"benchsel is not installed: in a clone of the project, run "
                "pip install -e '.[book]'\")")
    return (SETUP_MARK + "where benchsel is not installed (Colab, Binder), install it from its repository.\n"
            + written + "import importlib\nimport importlib.util\n\n"
            "if importlib.util.find_spec(\"benchsel_lib\") is None:\n"
            f"    %pip install --quiet \"benchsel[book] @ git+{url}@{branch}\"\n"
            "    importlib.invalidate_caches()")


def setup_cell(url: str | None, branch: str = "main") -> dict[str, Any]:
    """The standard set-up cell (nbformat 4.5 code cell) for repository ``url`` on ``branch``.

    Tagged ``remove-cell`` (not on the site) and with its source hidden in
    Jupyter; see :func:`setup_source` for what it runs.
    """
    return {"cell_type": "code", "execution_count": None, "id": SETUP_ID,
            "metadata": {"jupyter": {"source_hidden": True}, "tags": ["remove-cell"]},
            "outputs": [], "source": setup_source(url, branch).splitlines(keepends=True)}


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source or "")


def find_setup_cell(nb: dict[str, Any]) -> int | None:
    """The index of a notebook's set-up cell (by its id or its first line), or None."""
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") == "code" and (cell.get("id") == SETUP_ID
                                                 or _text(cell.get("source")).startswith(SETUP_MARK)):
            return i
    return None


def has_setup_cell(nb: dict[str, Any], url: str | None, branch: str = "main") -> bool:
    """Whether the first cell of ``nb`` is the standard set-up cell for ``url`` and ``branch``."""
    return find_setup_cell(nb) == 0 and nb["cells"][0] == setup_cell(url, branch)


def apply_setup_cell(nb: dict[str, Any], url: str | None, branch: str = "main") -> bool:
    """Make the standard set-up cell the first cell of ``nb`` (a parsed notebook), in place.

    An existing set-up cell is replaced (and moved to the top); the
    notebook's other cells are untouched. Idempotent.

    Parameters
    ----------
    nb : dict
        The notebook, as ``json.load`` reads it.
    url : str or None
        The repository (None: none).
    branch : str
        Its branch.

    Returns
    -------
    bool
        Whether ``nb`` changed.
    """
    cell = setup_cell(url, branch)
    cells = nb.setdefault("cells", [])
    at = find_setup_cell(nb)
    if has_setup_cell(nb, url, branch):
        return False
    if at is not None:
        cells.pop(at)
    cells.insert(0, cell)
    if nb.get("nbformat", 4) == 4 and nb.get("nbformat_minor", 5) < 5:
        nb["nbformat_minor"] = 5  # cell ids
    return True


def numbered_notebooks(notebook_dir: Path | None = None) -> list[Path]:
    """The numbered notebooks ``NN_*.ipynb`` of ``notebook_dir`` (default :data:`NOTEBOOK_DIR`), in order."""
    folder = Path(NOTEBOOK_DIR if notebook_dir is None else notebook_dir)
    return sorted(p for p in folder.glob("*.ipynb") if NOTEBOOK_RE.match(p.name))


def write_setup_cells(url: str | None, branch: str = "main", notebook_dir: Path | None = None) -> list[Path]:
    """Apply :func:`apply_setup_cell` to every numbered notebook of ``notebook_dir``; the notebooks changed.

    ``notebook_dir`` defaults to :data:`NOTEBOOK_DIR`; a notebook already in
    order is not rewritten.
    """
    changed = []
    for path in numbered_notebooks(notebook_dir):
        nb = json.loads(path.read_text(encoding="utf-8"))
        if apply_setup_cell(nb, url, branch):
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            changed.append(path)
    return changed


def configured_repository(config: Path | None = None) -> tuple[str | None, str]:
    """The repository URL (None when empty or absent) and branch (default ``main``) that ``config`` names.

    ``config`` defaults to :data:`CONFIG`.
    """
    config = Path(CONFIG if config is None else config)
    repo = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("repository") or {}
    url = str(repo.get("url") or "").strip().rstrip("/") or None
    return url, str(repo.get("branch") or "main")


def _set_key(block: str, key: str, value: str) -> str:
    line = re.compile(rf"^(\s+){key}:.*$", flags=re.M)
    if line.search(block):
        return line.sub(lambda m: f"{m.group(1)}{key}: {value}", block, count=1)
    return block.rstrip("\n") + f"\n  {key}: {value}\n"


def set_config_repository(url: str | None, branch: str = "main", config: Path | None = None) -> bool:
    """Write ``url`` and ``branch`` into the ``repository`` block of ``config`` (default :data:`CONFIG`), keeping its comments.

    Returns
    -------
    bool
        Whether the file changed.
    """
    url = _check(url, branch)
    config = Path(CONFIG if config is None else config)
    text = config.read_text(encoding="utf-8")
    m = re.search(r"^repository:[ \t]*\n((?:[ \t]+.*\n|[ \t]*\n)*)", text, flags=re.M)
    block = m.group(1) if m else ""
    new = _set_key(_set_key(block, "url", json.dumps(url or "")), "branch", branch)
    out = (text[:m.start(1)] + new + text[m.end(1):]) if m else text.rstrip("\n") + "\n\nrepository:\n" + new
    if out == text:
        return False
    config.write_text(out, encoding="utf-8")
    if configured_repository(config) != (url, branch):
        raise RuntimeError(f"{config}: the repository block could not be rewritten")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Set the repository in _config.yml and the notebooks' set-up cells.")
    parser.add_argument("url", nargs="?", help="the repository, https://github.com/OWNER/benchsel")
    parser.add_argument("--branch", default="main", help="its branch (default main)")
    parser.add_argument("--none", action="store_true", help="no repository: clear it and write the cells for that")
    parser.add_argument("--check", action="store_true", help="only check that the cells match _config.yml")
    args = parser.parse_args(argv)
    try:
        if args.check:
            return _report_check()
        if bool(args.url) == bool(args.none):
            parser.error("give a repository URL or --none")
        url = None if args.none else args.url
        if set_config_repository(url, args.branch):
            print(f"set_repository: {Path(CONFIG).name}: repository {url or '(none)'}, branch {args.branch}")
        for path in write_setup_cells(url, args.branch):
            print(f"set_repository: {path.parent.name}/{path.name}: set-up cell written")
    except ValueError as exc:
        print(f"set_repository: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _report_check() -> int:
    url, branch = configured_repository()
    wrong = [p.name for p in numbered_notebooks() if not has_setup_cell(json.loads(p.read_text(encoding="utf-8")), url, branch)]
    for name in wrong:
        print(f"set_repository: {name}: no set-up cell for {url or 'no repository'} ({branch}) at the top")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
