"""Sphinx extension for the benchsel book: one copy of each inline ``<script>`` per page.

Sphinx 7.x registers an inline script added with ``app.add_js_file(None, body=...)``
twice once the HTML builder exists: the builder keeps it with the file name
``None``, and ``StandaloneHTMLBuilder.prepare_writing`` adds the registry's copy
again with the file name ``""``; the two compare unequal, so the page carries the
script twice.  sphinx-thebe (loaded by every Jupyter Book 1.x build) adds its
configuration that way, as top-level ``const`` declarations
(``const THEBE_JS_URL = ...``), so the second copy is a
``SyntaxError: Identifier 'THEBE_JS_URL' has already been declared`` on every
page.

This extension drops, on every page, each script entry that is identical to an
earlier one once ``None`` and ``""`` are taken as the same file name (same body,
priority and attributes).  Registered in ``_config.yml`` under
``sphinx.local_extensions``.

It also adds the book's stylesheet (``static/benchsel.css``: compact tables
that wrap within the text column, the re-run box).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

__version__ = "1.0"


def _key(js: Any) -> tuple[Any, ...]:
    """What makes two script entries the same script (file name ``None`` == ``""``)."""
    filename = getattr(js, "filename", js)
    priority = getattr(js, "priority", 500)
    attributes = getattr(js, "attributes", {}) or {}
    return (str(filename or ""), priority, tuple(sorted((k, str(v)) for k, v in attributes.items())))


def unique_scripts(scripts: list[Any]) -> list[Any]:
    """``scripts`` without the entries that repeat an earlier one (order kept)."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for js in scripts:
        key = _key(js)
        if key in seen:
            continue
        seen.add(key)
        out.append(js)
    return out


def dedupe_page_scripts(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """``html-page-context`` handler: remove repeated entries from the page's ``script_files``."""
    scripts = context.get("script_files")
    if isinstance(scripts, list):
        context["script_files"] = unique_scripts(scripts)


def add_stylesheet(app: Any) -> None:
    """``builder-inited`` handler: serve ``static/`` and link ``benchsel.css`` from every page."""
    app.config.html_static_path.append(str(Path(__file__).resolve().parent / "static"))
    app.add_css_file("benchsel.css")


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", add_stylesheet)
    # late (priority 900): after the extensions that add page-specific scripts
    app.connect("html-page-context", dedupe_page_scripts, priority=900)
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}
