"""Where the data files are: the manifest, the data directory, digests and downloads.

Every file the project uses is listed in the package manifest
(``benchsel_lib/data/manifest.json``: name relative to the data directory,
size, SHA-256 digest and public source URL). Data files are never committed;
they are looked up at run time and verified before use.

Data directory resolution
-------------------------
For a file ``name`` the directories are tried in this order:

1. an explicit ``data_dir`` argument, else the environment variable
   ``BENCHSEL_DATA_DIR`` -- when either is given it is the *only* directory
   searched, and a missing file is downloaded into it;
2. the project's data cache ``<project root>/data`` (the project root is the
   parent of the ``benchsel_lib`` package directory), used when the file is
   there;
3. the offline mirror ``<project root>/../shared/data``, used when the file is
   there;
4. otherwise the file is downloaded from its manifest URL into the project's
   data cache (2).

The download URL is the manifest URL, or ``<base>/<name>`` when a mirror base
URL is given (``base_url=`` or the environment variable ``BENCHSEL_DATA_URL``;
``file://`` and ``http://`` URLs work, which the tests use). Every file is
checked against its manifest size and SHA-256 digest before it is returned; a
mismatch raises ``ValueError`` naming the file and both digests. Verified
digests are cached per process (keyed by path, size and modification time),
so a file is hashed once. Command line: ``python -m benchsel_lib.data fetch|verify``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "MANIFEST",
    "PROJECT_ROOT",
    "data_path",
    "fetch_all",
    "resolve_data_dir",
    "verify_all",
    "verify_file",
    "main",
]

#: The folder of this module, which holds ``manifest.json``.
PACKAGE_DIR = Path(__file__).resolve().parent
#: Project root: the parent of the ``benchsel_lib`` package directory.
PROJECT_ROOT = PACKAGE_DIR.parents[1]
CACHE_DIR = PROJECT_ROOT / "data"
SHARED_DIR = PROJECT_ROOT.parent / "shared" / "data"
ENV_DATA_DIR = "BENCHSEL_DATA_DIR"
ENV_DATA_URL = "BENCHSEL_DATA_URL"


def _read_manifest() -> dict[str, dict[str, Any]]:
    with open(PACKAGE_DIR / "manifest.json", encoding="utf-8") as fh:
        return json.load(fh)["files"]


#: name -> {"size", "sha256", "url", "description", "license"} for every data file.
MANIFEST: dict[str, dict[str, Any]] = _read_manifest()

# (resolved path, size, mtime_ns) -> verified sha256
_VERIFIED: dict[tuple[str, int, int], str] = {}


# ---------------------------------------------------------------- resolution
def _manifest_entry(name: str) -> dict[str, Any]:
    entry = MANIFEST.get(name)
    if entry is None:
        raise ValueError(f"{name!r} is not a data file in the manifest; known files: {', '.join(sorted(MANIFEST))}")
    return entry


def _explicit_dir(data_dir: str | os.PathLike[str] | None) -> Path | None:
    if data_dir is not None:
        return Path(data_dir).expanduser()
    env = os.environ.get(ENV_DATA_DIR)
    return Path(env).expanduser() if env else None


def _candidate_dirs(data_dir: str | os.PathLike[str] | None) -> list[Path]:
    explicit = _explicit_dir(data_dir)
    return [explicit] if explicit is not None else [CACHE_DIR, SHARED_DIR]


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None, *, name: str | None = None) -> Path:
    """Return the data directory that serves ``name`` (see the module docstring for the order).

    Parameters
    ----------
    data_dir : path, optional
        Explicit directory; overrides ``BENCHSEL_DATA_DIR`` and disables the
        fallbacks.
    name : str, optional
        A manifest file name (e.g. ``"mteb.matrix.npz"``). Without it the
        first directory holding *any* manifest file is returned.

    Returns
    -------
    pathlib.Path
        The explicit / environment directory if given; else the project cache
        or the shared mirror, whichever holds the file first; else the project
        cache (the download target). Complexity O(number of manifest files).
    """
    dirs = _candidate_dirs(data_dir)
    if len(dirs) == 1:
        return dirs[0]
    names = [name] if name is not None else list(MANIFEST)
    for d in dirs:
        if any((d / n).is_file() for n in names):
            return d
    return CACHE_DIR


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_file(path: str | os.PathLike[str], name: str) -> Path:
    """Check ``path`` against the manifest size and SHA-256 of ``name``; return the path.

    Parameters
    ----------
    path : str or path-like
        The local file to check.
    name : str
        Its manifest name (e.g. ``"mteb.matrix.npz"``), whose size and
        digest it must have.

    Returns
    -------
    pathlib.Path
        ``path`` as a :class:`~pathlib.Path`, once verified; the verified
        digest is cached for this process, keyed by the resolved path, size
        and modification time.

    Raises
    ------
    ValueError
        On a size or digest mismatch; the message names the file, the
        expected and the actual digest. Also for a ``name`` that is not in
        the manifest.
    OSError
        ``path`` does not exist (``FileNotFoundError``) or cannot be read.

    Notes
    -----
    O(file size) on the first call per (path, size, mtime); O(1) afterwards.
    """
    entry = _manifest_entry(name)
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if _VERIFIED.get(key) == entry["sha256"]:
        return path
    actual = _sha256(path)
    if actual != entry["sha256"] or st.st_size != entry["size"]:
        raise ValueError(
            f"data file {name!r} at {path} failed verification: expected sha256 {entry['sha256']} "
            f"({entry['size']} bytes), actual sha256 {actual} ({st.st_size} bytes)"
        )
    _VERIFIED[key] = actual
    return path


def _download_url(name: str, base_url: str | None) -> str:
    base = base_url if base_url is not None else os.environ.get(ENV_DATA_URL)
    if base:
        return base.rstrip("/") + "/" + urllib.parse.quote(name)
    return _manifest_entry(name)["url"]


def _download(name: str, target_dir: Path, base_url: str | None, timeout: float) -> Path:
    url = _download_url(name, base_url)
    dest = target_dir / name
    made = [d for d in (dest.parent, *dest.parent.parents) if not d.exists()]  # removed again if the download fails
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".part-", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310
            shutil.copyfileobj(resp, out)
        verify_file(tmp, name)
        os.replace(tmp, dest)
        made = []
    except (urllib.error.URLError, OSError) as exc:
        raise FileNotFoundError(
            f"data file {name!r} is not in {target_dir} and could not be downloaded from {url}: {exc}. "
            f"Set {ENV_DATA_DIR} to a directory holding the files (e.g. ../shared/data) or connect to the network."
        ) from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        for d in made:  # deepest first: a failed download leaves no directory behind
            try:
                d.rmdir()
            except OSError:
                break
    return verify_file(dest, name)


def data_path(
    name: str,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    download: bool = True,
    base_url: str | None = None,
    timeout: float = 60.0,
) -> Path:
    """Return a verified local path of the manifest file ``name``, downloading it if needed.

    Parameters
    ----------
    name : str
        File name relative to the data directory, e.g. ``"mteb.matrix.npz"``
        or ``"mmlu_sources/sloth_data_v1.csv"``.
    data_dir : path, optional
        Explicit data directory (see the module docstring for the order).
    download : bool
        Download a missing file (default). With ``False`` a missing file raises.
    base_url : str, optional
        Mirror base URL (``<base_url>/<name>``); default ``BENCHSEL_DATA_URL``
        or the manifest URL.
    timeout : float
        Network timeout in seconds.

    Raises
    ------
    ValueError
        Unknown name, or size / digest mismatch (naming expected and actual digest).
    FileNotFoundError
        The file is in no directory and cannot be downloaded.

    Notes
    -----
    Cost: the SHA-256 of the file (O(its size); once per process while the file is unchanged), plus the
    download where one is needed.
    """
    _manifest_entry(name)
    dirs = _candidate_dirs(data_dir)
    for d in dirs:
        if (d / name).is_file():
            return verify_file(d / name, name)
    target = dirs[0] if len(dirs) == 1 else CACHE_DIR
    if not download:
        raise FileNotFoundError(
            f"data file {name!r} not found in {', '.join(map(str, dirs))} (download disabled)"
        )
    return _download(name, target, base_url, timeout)


def fetch_all(*, data_dir: str | os.PathLike[str] | None = None, base_url: str | None = None) -> list[Path]:
    """Make every manifest file available and verified (downloading missing ones); return their paths.

    Each file is resolved by :func:`data_path` (module docstring order) with
    downloads allowed and its default 60 s network timeout per file.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Explicit data directory: the only one searched, and the download
        target (default: ``BENCHSEL_DATA_DIR``, else the project cache and
        the shared mirror, downloads into the project cache).
    base_url : str, optional
        Mirror base URL (``<base_url>/<name>``); default ``BENCHSEL_DATA_URL``
        or each file's manifest URL.

    Returns
    -------
    list of pathlib.Path
        The verified local path of every file, in manifest order.

    Raises
    ------
    ValueError
        A file fails its size / digest check (naming expected and actual
        digest); the files before it stay fetched.
    FileNotFoundError
        A file is in no directory and cannot be downloaded.

    Notes
    -----
    Complexity O(total size of the manifest files): each file is hashed once
    per process (plus its download when missing); later calls cost one
    ``stat`` per file.
    """
    return [data_path(n, data_dir=data_dir, base_url=base_url) for n in MANIFEST]


def verify_all(*, data_dir: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Verify every manifest file without downloading; return name -> ``"ok"`` or the error message.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Explicit data directory, the only one searched (default:
        ``BENCHSEL_DATA_DIR``, else the project cache, then the shared
        mirror; see the module docstring).

    Returns
    -------
    dict of str to str
        For every manifest file, in manifest order: ``"ok"`` when it was
        found and matches its size and SHA-256, else the message of the
        ``ValueError`` (mismatch) or ``FileNotFoundError`` (not found) that
        :func:`data_path` raised.

    Raises
    ------
    OSError
        Other than ``FileNotFoundError``, e.g. a file that exists but cannot
        be read; the two errors above are reported, not raised.

    Notes
    -----
    Complexity O(total size of the files found) on the first call in a
    process (each is hashed once); O(number of manifest files) afterwards.
    """
    report: dict[str, str] = {}
    for n in MANIFEST:
        try:
            data_path(n, data_dir=data_dir, download=False)
            report[n] = "ok"
        except (ValueError, FileNotFoundError) as exc:
            report[n] = str(exc)
    return report


# ------------------------------------------------------------------------ CLI
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchsel_lib.data fetch|verify [--data-dir DIR]``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m benchsel_lib.data", description="Fetch or verify the data files of the manifest.")
    parser.add_argument("command", choices=["fetch", "verify"])
    parser.add_argument("--data-dir", default=None, help="explicit data directory")
    parser.add_argument("--base-url", default=None, help="mirror base URL for downloads")
    args = parser.parse_args(argv)
    failed = 0
    for n in MANIFEST:
        try:
            p = data_path(n, data_dir=args.data_dir, download=args.command == "fetch", base_url=args.base_url)
            print(f"ok      {n}  ({p})")
        except (ValueError, FileNotFoundError) as exc:
            failed += 1
            print(f"FAILED  {n}: {exc}", file=sys.stderr)
    print(f"{len(MANIFEST) - failed}/{len(MANIFEST)} data files verified")
    return 1 if failed else 0
