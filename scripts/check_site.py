#!/usr/bin/env python
"""Check the rendered book in a real headless browser (Debian ``chromium``).

Serves the site (default ``_build/html``) with ``http.server`` on 127.0.0.1 (a free
port), loads every page (the landing page and each notebook page) in headless
Chromium with every non-loopback host made unresolvable (so the check proves the
site works with no network), and asserts for each page:

* it loads (the article body is in the DOM) and every request the page made to the
  local server succeeded (the favicon included: a 404 is a failure);
* static checks of the HTML file, no browser needed (also run by
  ``tests/test_book.py``): no two inline scripts of the page declare the same
  top-level ``const`` / ``let`` / ``class`` (the second one is a ``SyntaxError``
  in every browser), see :func:`inline_script_redeclarations`; the page names its
  favicon (``<link rel="icon">``) and the file is in the site, see
  :func:`favicon_problems`;
* pages with math: ``<mjx-container`` elements were produced by MathJax, none of
  them is a MathJax error (``<mjx-merror>``, e.g. an undefined TeX macro), and no
  unrendered ``\\(`` / ``\\[`` / ``$$`` / ``$\\macro`` is left in the text;
* pages with figures: the ``<img>`` elements are in the DOM, the page requested
  each figure file and the local server answered it without error;
* every request the page made to the local server succeeded (attributed per page
  through Chromium's NetLog);
* pages with widget snapshots: the widget manager rendered them (``widget-*`` DOM);
* no console errors (uncaught exceptions, failed loads) other than the known
  harmless ones listed in ``HARMLESS``;
* every link (``<a href>``) to another file of the site leads to a file that
  exists (buttons and the table of contents included); links out of the site
  (``http(s)://``) are listed in the report, as they cannot be followed offline;
* no ``<script src>`` / ``<link href>`` pointing to ``http(s)://``, and no request
  by the page to anything but the local server (from Chromium's NetLog;
  the browser's own background traffic is not counted).

* pages with explorers (:func:`page_explorers`: a widget ``VBox`` of controls above a
  ``Stack`` of panels, in the page's saved widget state): the page is loaded a second
  time with a small script (:data:`EXPLORE_JS`, added by the local server) that moves
  each control of each explorer in turn, as a reader does (clicks another toggle
  button, chooses another option of a drop-down, presses the right arrow key on a
  slider), and the visible panel under the controls (its text and images) must change
  each time, with no request off the site and no kernel.

Reported as warnings (they do not fail a page): empty output boxes (a cell output
whose only content is blank text, e.g. a progress display blanked at the end).

A screenshot of each page goes to ``_build/screenshots/<page>.png`` and a JSON
report to ``_build/screenshots/report.json``.

Usage::

    python scripts/check_site.py [--html _build/html] [--out _build/screenshots] [--pages intro notebooks/04_greedy_cv]

Exit status 0 when every page passes, 1 otherwise, 2 when Chromium is missing
(install it with ``apt-get install -y chromium``).
"""
from __future__ import annotations

import argparse
import functools
import html as html_lib
import http.server
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# console messages known to be harmless (any other that reads as an error fails the page)
HARMLESS = (
    "Got invalid theme mode",  # pydata theme, headless has no stored mode
)
# console lines that are errors (Chromium's log does not give the console level)
CONSOLE_ERROR_WORDS = ("error", "uncaught", "failed to load")
BUDGET_MS = 10000


# --------------------------------------------------------------------------- explorers
#: Query string under which the local server serves a page with :data:`EXPLORE_JS` added.
EXPLORE_QUERY = "benchsel-explore"
#: Id of the element in which :data:`EXPLORE_JS` leaves its findings (JSON) for ``--dump-dom``.
EXPLORE_RESULT_ID = "benchsel-explore-result"
#: Run in the page: wait for the explorers (a widget VBox whose first child is the HBox of controls),
#: then move each control of each one in turn (click another toggle button, choose another option of
#: a drop-down, press the right arrow key on a slider's handle) and record whether the visible panel
#: (the text and images under the controls) changed; a control with one value is not moved (its
#: ``action`` is null).
EXPLORE_JS = r"""
(function () {
  "use strict";
  var CONTROLS = ".widget-toggle-buttons, .widget-dropdown, .widget-slider";
  function hash(s) {
    var h = 5381;
    for (var i = 0; i < s.length; i++) { h = (h * 33 + s.charCodeAt(i)) | 0; }
    return h;
  }
  function roots() {
    return Array.prototype.filter.call(document.querySelectorAll(".widget-vbox"), function (box) {
      var first = box.firstElementChild;
      return box.children.length > 1 && first.classList.contains("widget-hbox") && first.querySelector(CONTROLS);
    });
  }
  function panel(root) {
    return Array.prototype.slice.call(root.children, 1).map(function (el) {
      var imgs = Array.prototype.filter.call(el.querySelectorAll("img"), function (img) {
        return img.getClientRects().length > 0;
      }).map(function (img) { return hash(img.src); });
      return el.innerText.trim() + " [images " + imgs.join(",") + "]";
    }).join("\n");
  }
  function move(control) {
    if (control.classList.contains("widget-toggle-buttons")) {
      var off = control.querySelector(".widget-toggle-button:not(.mod-active)");
      if (!off) { return null; }
      off.click();
      return "clicked " + JSON.stringify(off.innerText.trim());
    }
    if (control.classList.contains("widget-dropdown")) {
      var select = control.querySelector("select");
      if (!select || select.options.length < 2) { return null; }
      select.selectedIndex = (select.selectedIndex + 1) % select.options.length;
      select.dispatchEvent(new Event("change", {bubbles: true}));
      return "chose " + JSON.stringify(select.options[select.selectedIndex].text);
    }
    var handle = control.querySelector(".noUi-handle");
    if (!handle || control.querySelector(".noUi-target[disabled]")) { return null; }
    handle.dispatchEvent(new KeyboardEvent("keydown", {key: "ArrowRight", keyCode: 39, which: 39, bubbles: true}));
    var readout = control.querySelector(".widget-readout");
    return "slid to " + JSON.stringify(readout ? readout.innerText.trim() : "?");
  }
  function finish(result) {
    var pre = document.createElement("pre");
    pre.id = "__RESULT_ID__";
    pre.textContent = JSON.stringify(result);
    document.body.appendChild(pre);
  }
  function explore(list, result) {
    var steps = [];
    list.forEach(function (root, r) {
      root.firstElementChild.querySelectorAll(CONTROLS).forEach(function (control, c) {
        steps.push({root: root, control: control, explorer: r, index: c});
      });
    });
    var k = 0;
    function next() {
      if (k >= steps.length) { return finish(result); }
      var step = steps[k++], before = panel(step.root), action = move(step.control), waited = 0;
      if (action === null) {  // one value: nothing to move
        result.moves.push({explorer: step.explorer, control: step.index, action: null, changed: false});
        return next();
      }
      (function check() {
        var after = panel(step.root);
        if (after !== before || waited >= 3000) {
          result.moves.push({explorer: step.explorer, control: step.index, action: action,
                             changed: after !== before, before: before.slice(0, 200), after: after.slice(0, 200)});
          return next();
        }
        waited += 100;
        setTimeout(check, 100);
      })();
    }
    next();
  }
  var waited = 0;
  (function start() {
    var list = roots();
    var ready = list.length && list.every(function (root) { return panel(root).trim() !== "[images ]"; });
    if (!ready && waited < __WAIT_MS__) { waited += 100; return setTimeout(start, 100); }
    explore(list, {explorers: list.length, moves: []});
  })();
})();
""".replace("__RESULT_ID__", EXPLORE_RESULT_ID).replace("__WAIT_MS__", "6000")


def with_explore_script(html_text: str) -> str:
    """``html_text`` with :data:`EXPLORE_JS` as an inline script at the end of its body."""
    script = f"<script>{EXPLORE_JS}</script>"
    at = html_text.rfind("</body>")
    return html_text + script if at < 0 else html_text[:at] + script + html_text[at:]


_WIDGET_STATE_RE = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>', re.S)
_WIDGET_VIEW_RE = re.compile(r'<script type="application/vnd\.jupyter\.widget-view\+json">(.*?)</script>', re.S)


def _json(block: str) -> dict | None:
    """A JSON object written in a ``<script>`` of a page (as is, or HTML-escaped); None when it is not one."""
    for text in (block, html_lib.unescape(block)):
        try:
            data = json.loads(text)
        except ValueError:
            continue
        return data if isinstance(data, dict) else None
    return None


def page_explorers(html_text: str) -> dict[str, int]:
    """The explorers a page displays (widget views of a ``VBox``: an ``HBox`` of controls above a ``Stack``).

    Returns the model id of each, with the number of its controls.

    Read from the page's widget state (the one papermill saved) and its
    widget views, so no browser is needed. Complexity O(size of the page).
    """
    models: dict[str, dict] = {}
    for block in _WIDGET_STATE_RE.findall(html_text):
        models.update((_json(block) or {}).get("state", {}))

    def name(ref: str) -> str:
        return models.get(str(ref).removeprefix("IPY_MODEL_"), {}).get("model_name", "")

    found: dict[str, int] = {}
    for block in _WIDGET_VIEW_RE.findall(html_text):
        model_id = str((_json(block) or {}).get("model_id", ""))
        children = models.get(model_id, {}).get("state", {}).get("children", [])
        if name(model_id) == "VBoxModel" and len(children) == 2 and name(children[0]) == "HBoxModel" \
                and name(children[1]) == "StackModel":
            controls = models[children[0].removeprefix("IPY_MODEL_")].get("state", {}).get("children", [])
            found[model_id] = len(controls)
    return found


def explore_problems(expected: int, dom: str) -> tuple[list[dict], list[str]]:
    """The moves :data:`EXPLORE_JS` made in a page (from its dumped DOM) and what was wrong with them.

    Parameters
    ----------
    expected : int
        The explorers the page displays (:func:`page_explorers`).
    dom : str
        The page's DOM after the script ran (``--dump-dom``).

    Returns
    -------
    moves : list of dict
        One per control: ``explorer``, ``control``, ``action`` (None for a
        control with one value, which is not moved), ``changed``.
    problems : list of str
        A missing result, fewer explorers in the browser than in the page,
        an explorer none of whose controls has a second value, a move that
        left the panel as it was.
    """
    m = re.search(rf'<pre id="{EXPLORE_RESULT_ID}"[^>]*>(.*?)</pre>', dom, re.S)
    if m is None:
        return [], ["the explorer check did not finish in the browser"]
    result = json.loads(html_lib.unescape(m.group(1)))
    moves, problems = result["moves"], []
    if result["explorers"] < expected:
        problems.append(f"{expected} explorer(s) in the page but {result['explorers']} rendered with controls")
    moved = {mv["explorer"] for mv in moves if mv["action"] is not None}
    for explorer in sorted(set(range(result["explorers"])) - moved):
        problems.append(f"explorer {explorer + 1}: no control has a second value to show")
    for mv in moves:
        if mv["action"] is not None and not mv["changed"]:
            problems.append(f"explorer {mv['explorer'] + 1}, control {mv['control'] + 1}: {mv['action']} but the "
                            f"panel did not change ({mv['before'][:80]!r})")
    return moves, problems


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome executable, or None."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class _Handler(http.server.SimpleHTTPRequestHandler):
    log: list[tuple[str, int]]

    def log_request(self, code="-", size="-"):  # noqa: D401 - record instead of printing
        try:
            status = int(code)
        except (TypeError, ValueError):
            status = int(getattr(code, "value", 0) or 0)
        self.server.request_log.append((unquote(urlsplit(self.path).path), status))  # type: ignore[attr-defined]

    def log_message(self, *args):
        pass

    def send_head(self):
        """A page asked for with the query :data:`EXPLORE_QUERY` is served with :data:`EXPLORE_JS` added."""
        parts = urlsplit(self.path)
        if parts.query != EXPLORE_QUERY or not parts.path.endswith(".html"):
            return super().send_head()
        path = Path(self.translate_path(parts.path))
        if not path.is_file():
            return super().send_head()
        body = with_explore_script(path.read_text(encoding="utf-8")).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


class SiteServer:
    """``http.server`` for ``root`` on 127.0.0.1 with a free port, in a thread."""

    def __init__(self, root: Path):
        handler = functools.partial(_Handler, directory=str(root))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.request_log = []  # type: ignore[attr-defined]
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def log(self) -> list[tuple[str, int]]:
        return self.httpd.request_log  # type: ignore[attr-defined]

    def __enter__(self) -> "SiteServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@dataclass
class PageResult:
    page: str
    ok: bool = True
    errors: list[str] = field(default_factory=list)
    mjx_containers: int = 0
    has_math: bool = False
    images: int = 0
    widget_states: int = 0
    widgets_rendered: int = 0
    explorers: int = 0  # explorers the page displays (page_explorers)
    explorer_moves: list[str] = field(default_factory=list)  # each control moved in the browser, and its effect
    console: list[str] = field(default_factory=list)
    requests: int = 0
    remote_requests: list[str] = field(default_factory=list)
    local_paths: list[str] = field(default_factory=list)  # site paths the page requested
    figure_paths: list[str] = field(default_factory=list)  # site paths of its <img> figures
    figures_loaded: int = 0  # figures the page requested and the server answered without error
    empty_outputs: int = 0
    broken_links: list[str] = field(default_factory=list)
    remote_links: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    screenshot: str = ""

    def fail(self, msg: str) -> None:
        self.ok = False
        self.errors.append(msg)


def _chromium_cmd(chromium: str, profile: str, budget_ms: int) -> list[str]:
    return [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}",
        # offline: nothing but loopback resolves
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--enable-logging=stderr", "--v=0",
    ]


_CONSOLE_RE = re.compile(r"CONSOLE\(\d+\)\]?\s*(.*)|:CONSOLE:\d+\]\s*(.*)|Uncaught .*")


def _console_lines(stderr: str) -> list[str]:
    out = []
    for line in stderr.splitlines():
        if "CONSOLE" in line or "Uncaught" in line:
            out.append(line.strip()[:400])
    return out


def page_requests(netlog: Path, origin: str) -> list[str]:
    """URLs the page requested (Chromium NetLog), without the browser's own background traffic.

    A request belongs to the page when its initiator is the page's origin or it is
    the page itself; Chromium's background requests (time sync, accounts) have no
    such initiator.
    """
    try:
        data = json.loads(netlog.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return []
    types = {v: k for k, v in data.get("constants", {}).get("logEventTypes", {}).items()}
    urls = []
    for ev in data.get("events", []):
        params = ev.get("params") or {}
        if types.get(ev.get("type")) != "URL_REQUEST_START_JOB" or "url" not in params:
            continue
        if params.get("initiator") == origin or params["url"].startswith(origin + "/"):
            urls.append(params["url"])
    return urls


def _visible_text(dom: str) -> str:
    dom = re.sub(r"(?is)<(script|style|pre|code|mjx-container|textarea)\b.*?</\1>", " ", dom)
    return html_lib.unescape(re.sub(r"(?s)<[^>]+>", " ", dom))


def external_refs(html_text: str) -> list[str]:
    """``<script src>`` / ``<link href>`` values that start with http(s)."""
    refs = re.findall(r"<script\b[^>]*\bsrc=[\"'](https?:[^\"']*)", html_text, flags=re.I)
    refs += re.findall(r"<link\b[^>]*\bhref=[\"'](https?:[^\"']*)", html_text, flags=re.I)
    return refs


_EMPTY_OUTPUT_RE = re.compile(
    r'<div class="output (?:text_plain|stream)[^"]*">\s*<div class="highlight"><pre><span></span>\s*</pre></div>')
# TeX the browser shows verbatim: display/inline dollar math with a macro that MyST did not turn into math
_RAW_TEX_RE = re.compile(r"\$\$|\$[^$\n]{0,80}\\[A-Za-z]+|\\(?:begin|end)\{")


def _site_path(page: str, src: str) -> str | None:
    """Path below the site root of ``src`` referenced from ``page`` (None for data:/remote URLs)."""
    if src.startswith(("data:", "http:", "https:", "//")):
        return None
    base = Path("/" + page).parent
    parts: list[str] = []
    for part in (base / unquote(urlsplit(src).path)).parts[1:]:
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/" + "/".join(parts)


_HREF_RE = re.compile(r"<a\b[^>]*\bhref=[\"']([^\"']*)[\"']", flags=re.I)


def page_links(page: str, html_text: str, html_dir: Path) -> tuple[list[str], list[str]]:
    """Links of ``page`` (path below the site root): (broken local links, remote links), each sorted.

    A local link is broken when the file it names (``dir/`` meaning
    ``dir/index.html``) is not in ``html_dir``; fragments and queries are
    ignored, as are ``mailto:`` / ``javascript:`` / ``data:`` links and bare
    fragments. Remote links are ``http(s)://`` or protocol-relative ones.
    """
    broken, remote = set(), set()
    for raw in _HREF_RE.findall(html_text):
        href = html_lib.unescape(raw).strip()
        if not href or href.startswith(("#", "mailto:", "javascript:", "data:", "tel:")):
            continue
        if href.startswith(("http:", "https:", "//")):
            remote.add(href)
            continue
        target = _site_path(page, href)
        if target is None:
            continue
        path = html_dir / target.lstrip("/")
        if urlsplit(href).path.endswith("/") or path.is_dir():
            path = path / "index.html"
        if not path.is_file():
            broken.add(href)
    return sorted(broken), sorted(remote)


_JS_TYPES = ("", "text/javascript", "application/javascript", "application/x-javascript", "text/ecmascript")


class _PageHeadParser(HTMLParser):
    """Collects a page's classic inline scripts and its ``<link rel="icon">`` targets."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.inline_scripts: list[str] = []
        self.icons: list[str] = []
        self._script: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k.lower(): (v or "") for k, v in attrs}
        if tag == "script":
            # modules have a scope of their own; JSON and template types are not run
            classic = a.get("type", "").strip().lower() in _JS_TYPES
            self._script = [] if classic and "src" not in a else None
        elif tag == "link" and "icon" in a.get("rel", "").lower().split():
            self.icons.append(a.get("href", ""))

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.inline_scripts.append("".join(self._script))
            self._script = None


def _parse_head(html_text: str) -> _PageHeadParser:
    parser = _PageHeadParser()
    parser.feed(html_text)
    parser.close()
    return parser


_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
# after these tokens a "/" starts a regular expression, not a division
_REGEX_AFTER = set("(,=:[!&|?{};+-*%<>~^") | {""}
# a declaration list goes on past a line break after these
_CONTINUES = set(",=+-*/%&|^<>?:([{.!~") | {"const", "let"}
_NUMBER = re.compile(r"[\w.]+")
_REGEX_AFTER_WORDS = {"return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do",
                      "else", "yield", "await"}


def top_level_declarations(js: str) -> list[str]:
    """Names that script ``js`` declares with ``const`` / ``let`` / ``class`` at its top level, in order.

    A small scanner, not a parser: strings, template literals, comments and
    regular expression literals are skipped, and only declarations outside
    every ``{}`` / ``()`` / ``[]`` count (those are the global lexical bindings
    that two classic scripts of one page share). Destructuring patterns
    (``const {a, b} = ...``) are not looked into.
    """
    names: list[str] = []
    i, n, depth = 0, len(js), 0
    prev = ""  # last significant token (punctuation char or word)
    pending: str | None = None  # "decl" right after const/let/class or a top-level comma of one
    in_decl = False  # inside a const/let declaration list at depth 0
    while i < n:
        c = js[i]
        if c in " \t\r\n":
            # a line break ends a declaration list unless the line clearly goes on (ASI)
            if c == "\n" and in_decl and prev not in _CONTINUES:
                in_decl = False
            i += 1
            continue
        if js.startswith("//", i):
            j = js.find("\n", i)
            i = n if j < 0 else j  # the line break itself still ends a declaration list
            continue
        if js.startswith("/*", i):
            j = js.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c in "'\"`":
            j = i + 1
            while j < n and js[j] != c:
                j += 2 if js[j] == "\\" else 1
            i, prev, pending = j + 1, "str", None
            continue
        if c == "/" and (prev in _REGEX_AFTER or prev in _REGEX_AFTER_WORDS):
            j, in_class = i + 1, False
            while j < n and js[j] != "\n" and (in_class or js[j] != "/"):
                if js[j] == "\\":
                    j += 1
                elif js[j] == "[":
                    in_class = True
                elif js[j] == "]":
                    in_class = False
                j += 1
            i, prev, pending = j + 1, "regex", None
            continue
        m = _IDENT.match(js, i)
        if m:
            word = m.group(0)
            if pending and depth == 0:
                names.append(word)
                pending = None
            elif depth == 0 and word in ("const", "let", "class") and prev not in (".", "str"):
                pending = word
                in_decl = word != "class"
            i, prev = m.end(), word
            continue
        if c.isdigit():
            m = _NUMBER.match(js, i)
            i, prev = m.end() if m else i + 1, "num"
            continue
        pending = None
        if c in "{([":
            depth += 1
        elif c in "})]":
            depth = max(0, depth - 1)
        elif depth == 0 and c == ";":
            in_decl = False
        elif depth == 0 and c == "," and in_decl:
            pending = "decl"
        prev = c
        i += 1
    return names


def inline_script_redeclarations(html_text: str) -> list[str]:
    """Top-level ``const`` / ``let`` / ``class`` names declared more than once by a page's inline scripts.

    All classic scripts of a page share one global scope, so a second
    declaration of a name (in the same script or another) is a ``SyntaxError``
    and that whole script does not run.  Returns the repeated names, sorted.
    """
    counts: dict[str, int] = {}
    for js in _parse_head(html_text).inline_scripts:
        for name in top_level_declarations(js):
            counts[name] = counts.get(name, 0) + 1
    return sorted(name for name, k in counts.items() if k > 1)


def favicon_problems(page: str, html_text: str, html_dir: Path) -> list[str]:
    """Why the favicon of ``page`` (path below the site root) would not load; empty when it does.

    Without a ``<link rel="icon">`` a browser asks for ``/favicon.ico`` at the
    root of the host (a 404 here, and not even this site's on a project page of
    GitHub Pages); a named icon must be a file of the site, not a remote URL.
    """
    icons = _parse_head(html_text).icons
    if not icons:
        return ["no <link rel=\"icon\"> (the browser then asks for /favicon.ico)"]
    problems = []
    for href in icons:
        target = _site_path(page, html_lib.unescape(href).strip())
        if target is None or href.startswith("//"):
            problems.append(f"favicon {href!r} is not a file of the site")
        elif not (html_dir / target.lstrip("/")).is_file():
            problems.append(f"favicon {href!r} ({target}) is not in the site")
    return problems


def static_problems(page: str, html_text: str, html_dir: Path) -> list[str]:
    """The browser-free checks of one built page: repeated inline declarations, the favicon."""
    problems = []
    repeated = inline_script_redeclarations(html_text)
    if repeated:
        problems.append(f"inline scripts declare {', '.join(map(repr, repeated))} more than once "
                        "(a SyntaxError in the browser)")
    return problems + favicon_problems(page, html_text, html_dir)


def site_pages(html_dir: Path) -> list[str]:
    """Every HTML page of the site (paths below ``html_dir``), without the theme's templates and vendored files."""
    return sorted(str(p.relative_to(html_dir)) for p in Path(html_dir).rglob("*.html")
                  if p.relative_to(html_dir).parts[0] not in ("_static", "vendor", "_sources"))


def _load_in_chromium(chromium: str, url: str, budget_ms: int) -> tuple[subprocess.CompletedProcess | None, list[str]]:
    """Load ``url`` in headless Chromium: the finished process (its stdout the DOM) and the URLs the page requested.

    The process is None when Chromium did not finish in two minutes.
    """
    with tempfile.TemporaryDirectory(prefix="benchsel-chromium-") as profile:
        netlog = Path(profile) / "netlog.json"
        cmd = _chromium_cmd(chromium, profile, budget_ms) + [f"--log-net-log={netlog}", "--dump-dom", url]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return None, []
        origin = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}"
        return proc, page_requests(netlog, origin)


def _record_requests(res: PageResult, urls: list[str], origin: str) -> None:
    """Add a load's requests to ``res``; fail it for a request off the site."""
    res.requests += len(urls)
    remote = sorted({u for u in urls if not u.startswith(origin + "/")} - set(res.remote_requests))
    res.remote_requests += remote
    res.local_paths = sorted(set(res.local_paths) | {unquote(urlsplit(u).path) for u in urls
                                                     if u.startswith(origin + "/")})
    if remote:
        res.fail(f"the page requested non-local URLs: {remote[:5]}")


def _check_explorers(res: PageResult, chromium: str, url: str, origin: str, explorers: dict[str, int],
                     budget_ms: int) -> None:
    """Load the page with :data:`EXPLORE_JS`, move every control of its explorers, fail ``res`` on a problem."""
    res.explorers = len(explorers)
    proc, urls = _load_in_chromium(chromium, url, budget_ms + 3000 * sum(explorers.values()))
    if proc is None:
        res.fail("chromium timed out while moving the explorers' controls")
        return
    _record_requests(res, urls, origin)
    moves, problems = explore_problems(len(explorers), proc.stdout)
    res.explorer_moves = [f"explorer {m['explorer'] + 1}, control {m['control'] + 1}: "
                          + ("one value, not moved" if m["action"] is None else
                             f"{m['action']}: {'panel changed' if m['changed'] else 'panel unchanged'}")
                          for m in moves]
    for problem in problems:
        res.fail(problem)


def check_page(page: str, html_dir: Path, server: SiteServer, chromium: str, out_dir: Path,
               *, budget_ms: int = BUDGET_MS, screenshot: bool = True) -> PageResult:
    """Load one page (path relative to ``html_dir``) and check it; see module doc."""
    res = PageResult(page=page)
    source = (html_dir / page).read_text(encoding="utf-8")
    url = f"http://127.0.0.1:{server.port}/{page}"
    ext = external_refs(source)
    if ext:
        res.fail(f"remote <script>/<link>: {ext[:3]}")
    res.has_math = bool(re.search(r'class="[^"]*\bmath\b', source))
    res.widget_states = source.count("application/vnd.jupyter.widget-state+json")
    src_imgs = [m for m in re.findall(r"<img\b[^>]*\bsrc=\"([^\"]+)\"", source) if "_static/" not in m]
    res.images = len(src_imgs)
    res.figure_paths = sorted({p for p in (_site_path(page, m) for m in src_imgs) if p})
    for problem in static_problems(page, source, html_dir):
        res.fail(problem)
    res.broken_links, res.remote_links = page_links(page, source, html_dir)
    if res.broken_links:
        res.fail(f"link(s) to pages that do not exist: {res.broken_links[:5]}")
    res.empty_outputs = len(_EMPTY_OUTPUT_RE.findall(source))
    if res.empty_outputs:
        res.warnings.append(f"{res.empty_outputs} empty output box(es) (blank text output, e.g. a cleared "
                            "progress display)")
    origin = f"http://127.0.0.1:{server.port}"
    proc, urls = _load_in_chromium(chromium, url, budget_ms)
    if proc is None:
        res.fail("chromium timed out")
        return res
    _record_requests(res, urls, origin)
    dom = proc.stdout
    res.console = _console_lines(proc.stderr)
    if proc.returncode != 0 or "bd-article" not in dom:
        res.fail(f"page did not load (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
        return res
    res.mjx_containers = dom.count("<mjx-container")
    text = _visible_text(dom)
    if res.has_math:
        if res.mjx_containers == 0:
            res.fail("page has math but MathJax produced no <mjx-container>")
        if "\\(" in text or "\\[" in text:
            res.fail("unrendered \\( or \\[ left in the page text")
    n_merror = dom.count("<mjx-merror")
    if n_merror:
        res.fail(f"MathJax could not typeset {n_merror} formula(s) (<mjx-merror>)")
    raw_tex = _RAW_TEX_RE.findall(text)
    if raw_tex:
        res.fail(f"raw TeX in the page text: {raw_tex[:3]}")
    missing_figs = [p for p in res.figure_paths if p not in res.local_paths]
    if missing_figs:
        res.fail(f"{len(missing_figs)} figure(s) never requested by the browser: {missing_figs[:3]}")
    dom_imgs = [m for m in re.findall(r"<img\b[^>]*\bsrc=\"([^\"]+)\"", dom) if "_static/" not in m]
    if len(dom_imgs) < res.images:
        res.fail(f"{res.images} figure(s) in the HTML but {len(dom_imgs)} in the browser DOM")
    if res.widget_states:
        res.widgets_rendered = len(re.findall(r'class="[^"]*\bwidget-(?:slider|dropdown|toggle-buttons|'
                                              r'inline-hbox|inline-vbox|hbox|vbox|output|label|text|'
                                              r'html|checkbox|button|select|tab|box|play)\b', dom))
        if res.widgets_rendered == 0:
            res.fail("page has a widget snapshot but no widget was rendered")
    bad_console = [c for c in res.console
                   if any(w in c.lower() for w in CONSOLE_ERROR_WORDS) and not any(h in c for h in HARMLESS)]
    if bad_console:
        res.fail(f"console errors: {bad_console[:3]}")
    explorers = page_explorers(source)
    if explorers:
        _check_explorers(res, chromium, f"{url}?{EXPLORE_QUERY}", origin, explorers, budget_ms)
    if screenshot:
        out_dir.mkdir(parents=True, exist_ok=True)
        png = out_dir / (page.replace("/", "__").removesuffix(".html") + ".png")
        with tempfile.TemporaryDirectory(prefix="benchsel-chromium-") as profile:
            cmd = _chromium_cmd(chromium, profile, budget_ms) + [
                f"--screenshot={png}", "--window-size=1280,1600", "--hide-scrollbars", url]
            subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if png.exists():
            res.screenshot = str(png)
        else:
            res.fail("no screenshot written")
    return res


def default_pages(html_dir: Path) -> list[str]:
    """The landing page and every notebook page."""
    pages = ["intro.html"] if (html_dir / "intro.html").exists() else []
    pages += sorted(str(p.relative_to(html_dir)) for p in (html_dir / "notebooks").glob("*.html"))
    return pages


def check_site(html_dir: Path = ROOT / "_build" / "html", out_dir: Path = ROOT / "_build" / "screenshots",
               *, pages: list[str] | None = None, chromium: str | None = None, jobs: int = 3,
               budget_ms: int = BUDGET_MS, screenshot: bool = True) -> list[PageResult]:
    """Check ``pages`` of the site in ``html_dir``; return one result per page.

    Raises ``FileNotFoundError`` when the site or Chromium is missing.
    """
    html_dir = Path(html_dir)
    if not (html_dir / "index.html").exists():
        raise FileNotFoundError(f"no built site in {html_dir} (run scripts/build_book.py first)")
    chromium = chromium or find_chromium()
    if chromium is None:
        raise FileNotFoundError("chromium not found (Debian: apt-get install -y chromium)")
    pages = [p if p.endswith(".html") else p + ".html" for p in (pages or default_pages(html_dir))]
    with SiteServer(html_dir) as server:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(
                lambda p: check_page(p, html_dir, server, chromium, Path(out_dir),
                                     budget_ms=budget_ms, screenshot=screenshot), pages))
        failed = {path: code for path, code in server.log if code >= 400}
    # attribute each failed local request to the page(s) that made it (NetLog); any the NetLogs
    # do not explain go to every page, as before
    unexplained = set(failed)
    for r in results:
        mine = sorted(p for p in r.local_paths if p in failed)
        unexplained -= set(mine)
        bad_figs = [p for p in mine if p in r.figure_paths]
        r.figures_loaded = sum(p in r.local_paths and p not in failed for p in r.figure_paths)
        if bad_figs:
            r.fail(f"figure file(s) failed to load: {[f'{p} ({failed[p]})' for p in bad_figs[:5]]}")
        if len(mine) > len(bad_figs):
            r.fail(f"failed requests to the local server: {[f'{p} ({failed[p]})' for p in mine[:5]]}")
    if unexplained:
        for r in results:
            r.fail(f"failed requests to the local server: {sorted(unexplained)[:5]}")
    # scan every built page for remote script/link and the static problems (not only the checked ones)
    checked = {r.page for r in results}
    for page in html_dir.rglob("*.html"):
        ext = external_refs(page.read_text(encoding="utf-8", errors="replace"))
        if ext and results:
            results[0].fail(f"{page.relative_to(html_dir)} references remote resources: {ext[:3]}")
    for page in site_pages(html_dir):
        if page not in checked and results:
            for problem in static_problems(page, (html_dir / page).read_text(encoding="utf-8"), html_dir):
                results[0].fail(f"{page}: {problem}")
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / "report.json").write_text(json.dumps([asdict(r) for r in results], indent=1))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check the rendered book in headless Chromium.")
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "screenshots")
    parser.add_argument("--pages", nargs="+", help="pages relative to the site root (default: all)")
    parser.add_argument("--no-screenshots", action="store_true")
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("-v", "--verbose", action="store_true", help="print every console line")
    args = parser.parse_args(argv)
    try:
        results = check_site(args.html, args.out, pages=args.pages, jobs=args.jobs,
                             screenshot=not args.no_screenshots)
    except FileNotFoundError as exc:
        print(f"check_site: {exc}", file=sys.stderr)
        return 2
    for r in results:
        status = "ok  " if r.ok else "FAIL"
        figs_loaded = r.figures_loaded
        print(f"{status} {r.page:<45s} mjx={r.mjx_containers:<4d} math={'y' if r.has_math else 'n'} "
              f"img={r.images:<3d} loaded={figs_loaded}/{len(r.figure_paths):<3d} "
              f"widgets={r.widgets_rendered}/{r.widget_states} explorers={r.explorers} requests={r.requests} "
              f"remote={len(r.remote_requests)} console={len(r.console)} links-out={len(r.remote_links)}")
        if args.verbose:
            for c in r.console:
                print(f"       console: {c}")
            for m in r.explorer_moves:
                print(f"       {m}")
        for w in r.warnings:
            print(f"       warning: {w}")
        for e in r.errors:
            print(f"       error: {e}")
    n_bad = sum(not r.ok for r in results)
    print(f"check_site: {len(results) - n_bad}/{len(results)} pages ok; report in {args.out / 'report.json'}")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
