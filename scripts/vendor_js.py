#!/usr/bin/env python
"""Vendor the JavaScript the book needs so the site works with no network.

Downloads, with the ordinary npm client, the three packages that Jupyter Book 1.x
otherwise loads from CDNs and unpacks a trimmed copy into ``book/_vendor/vendor/``
(git-ignored).  Sphinx copies ``book/_vendor`` into the site root through
``html_extra_path``, so the files end up under ``_build/html/vendor/``:

* ``mathjax@3.2.2`` (``es5/tex-mml-chtml.js`` plus the woff-v2 CHTML fonts,
  TeX extensions, ``ui`` and ``a11y`` components: ~3 MB instead of 24 MB);
* ``requirejs@2.3.4`` (``require.js``);
* ``@jupyter-widgets/html-manager@1.0.6`` (``dist/`` without source maps and the unused
  non-AMD bundles), the
  static widget manager that renders ipywidgets snapshots.

``book/require-config.js`` (ours, committed) is copied next to them on every run.
A stamp file records what was vendored; a second run with the same package
versions does nothing (``--force`` re-downloads).

Usage::

    python scripts/vendor_js.py [--force] [--dest book/_vendor]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DEST = ROOT / "book" / "_vendor"
REQUIRE_CONFIG = ROOT / "book" / "require-config.js"

PACKAGES = {
    "mathjax": "mathjax@3.2.2",
    "requirejs": "requirejs@2.3.4",
    "html-manager": "@jupyter-widgets/html-manager@1.0.6",
}
# parts of each package that are kept (relative to the package root)
KEEP = {
    "mathjax": [
        "es5/tex-mml-chtml.js",
        "es5/output/chtml/fonts/woff-v2",
        "es5/input/tex/extensions",
        "es5/ui",
        "es5/a11y",
        "LICENSE",
    ],
    "requirejs": ["require.js", "package.json"],
    "html-manager": ["dist", "LICENSE", "package.json"],
}
# where each kept path goes (under <dest>/vendor/<name>/); es5/ prefix is dropped for MathJax
STRIP_PREFIX = {"mathjax": "es5/"}
STAMP = ".vendored.json"


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit(
            "vendor_js: `npm` not found. Install Node.js/npm (Debian: apt-get install npm) -- "
            "it is used only to download mathjax, requirejs and @jupyter-widgets/html-manager "
            "from the npm registry so that the book works offline."
        )
    return npm


# bundles of html-manager not used by the AMD embed path (8 MB)
UNUSED = {"embed.js", "libembed-amd.js"}


def _ignore_maps(_dir: str, names: list[str]) -> list[str]:
    return [n for n in names if n.endswith(".map") or n in UNUSED]


def vendor(dest: Path = DEFAULT_DEST, *, force: bool = False, quiet: bool = False) -> Path:
    """Make sure ``dest/vendor`` holds the trimmed packages; return ``dest/vendor``."""
    vdir = dest / "vendor"
    stamp = vdir / STAMP
    wanted = dict(PACKAGES)
    done = False
    if not force and stamp.exists():
        try:
            done = json.loads(stamp.read_text()) == wanted and all(
                (vdir / name).is_dir() for name in PACKAGES
            )
        except (OSError, ValueError):
            done = False
    if not done:
        if vdir.exists():
            shutil.rmtree(vdir)
        vdir.mkdir(parents=True)
        npm = _npm()
        with tempfile.TemporaryDirectory(prefix="benchsel-npm-") as tmp:
            tmpd = Path(tmp)
            specs = list(PACKAGES.values())
            if not quiet:
                print(f"vendor_js: npm pack {' '.join(specs)}", flush=True)
            res = subprocess.run(
                [npm, "pack", "--silent", "--json", "--pack-destination", str(tmpd), *specs],
                capture_output=True, text=True, cwd=tmpd,
            )
            if res.returncode != 0:
                raise SystemExit(f"vendor_js: npm pack failed:\n{res.stderr.strip()}")
            packed = {entry["name"]: entry["filename"] for entry in json.loads(res.stdout)}
            for name, spec in PACKAGES.items():
                pkg_name = spec.rsplit("@", 1)[0]
                filename = packed.get(pkg_name)
                if filename is None:
                    raise SystemExit(f"vendor_js: npm did not return a tarball for {spec}")
                # npm names scoped tarballs 'jupyter-widgets-html-manager-1.0.6.tgz'
                tgz = tmpd / Path(filename).name
                out = tmpd / f"x-{name}"
                with tarfile.open(tgz) as tf:
                    tf.extractall(out, filter="data")
                pkg_root = out / "package"
                for rel in KEEP[name]:
                    src = pkg_root / rel
                    if not src.exists():
                        raise SystemExit(f"vendor_js: {spec} has no {rel}")
                    target_rel = rel
                    prefix = STRIP_PREFIX.get(name)
                    if prefix and target_rel.startswith(prefix):
                        target_rel = target_rel[len(prefix):]
                    target = vdir / name / target_rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    if src.is_dir():
                        shutil.copytree(src, target, ignore=_ignore_maps)
                    else:
                        shutil.copy2(src, target)
        stamp.write_text(json.dumps(wanted, indent=1))
    shutil.copy2(REQUIRE_CONFIG, vdir / "require-config.js")
    if not quiet:
        size = sum(p.stat().st_size for p in vdir.rglob("*") if p.is_file())
        state = "vendored" if not done else "already vendored"
        print(f"vendor_js: {state} {', '.join(PACKAGES.values())} -> {vdir} ({size / 1e6:.1f} MB)")
    return vdir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    parser.add_argument("--force", action="store_true", help="download again even if present")
    args = parser.parse_args(argv)
    vendor(args.dest, force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
