"""Checks of the rendered book: what a reader of the HTML pages sees.

:mod:`.checks` reads the executed notebooks; this module reads the site that
Jupyter Book rendered from them, where the reader meets the text, and
reports, as :class:`SiteProblem` records. The prose is the text of the
Markdown cells and of the Markdown outputs (computed numbers, the notes of
:func:`benchsel_lib.book.show.holds`); code, printed output, HTML outputs
and tables are not prose.

``repeated-sentence``
    a sentence of twelve or more words that stands twice on the same page;
``code-name``
    a name from the code (a notebook parameter, a library function) in the
    prose outside inline code; on a chapter that does not teach the API, a
    notebook parameter name in inline code too;
``truncated-table``
    a table cut by pandas (a row or column of ``...``, "N rows x M columns");
``raw-index``
    a table that shows the DataFrame's index (row headers in the body);
``missing-value``
    a table cell reading ``nan``, ``None`` or ``-0.00``;
``claims-table``
    a chapter reproducing the paper without a claims table (the Markdown
    output of :class:`~benchsel_lib.book.claims.ClaimsTable`, rendered as a
    table with a ``Verdict`` column) before its first figure, or with that
    table shown as raw Markdown;
``long-page``
    more words of prose than the page's limit.

:func:`check_site` applies them to every page of a site;
:func:`format_problems` writes the report the build prints.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RULES", "SiteProblem", "check_page", "check_site", "format_problems", "page_prose", "sentences"]

RULES = ("repeated-sentence", "code-name", "truncated-table", "raw-index", "missing-value", "claims-table",
         "long-page")
#: Words of prose a page may hold (the appendix on the recommended pipeline has its own limit).
WORD_LIMIT = 3500
#: Sentences shorter than this many words may repeat (labels, short captions).
MIN_REPEATED_WORDS = 12
_MISSING = re.compile(r"^(?:nan|NaN|NAN|None|<NA>|NaT|-0(?:\.0+)?)$")
_TRUNCATED = re.compile(r"\b\d[\d,]* rows × \d[\d,]* columns\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'*])")
#: Elements whose text is not prose: code, the notebook's source and printed output, and the page's navigation.
_NOT_PROSE = ("pre", "script", "style", "nav", "header", "footer", "table", "form", "button")
#: Classes of the same: a Markdown output stands directly in its ``cell_output`` and is prose; printed text,
#: HTML and widget outputs are wrapped in an ``output`` element and are not.
_NOT_PROSE_CLASSES = ("cell_input", "output", "bd-sidebar", "bd-header", "toc", "headerlink", "rerun")
_RAW_CLAIMS = re.compile(r"\|\s*Verdict\s*\|")


@dataclass(frozen=True)
class SiteProblem:
    """One thing wrong with a rendered page.

    Attributes
    ----------
    page : str
        The page's path under the site.
    rule : str
        One of :data:`RULES`.
    message : str
        What is wrong, quoting the text.
    """

    page: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.page}: [{self.rule}] {self.message}"


def _soup(html: str):
    from bs4 import BeautifulSoup

    return BeautifulSoup(html, "html.parser")


def _article(soup):
    return soup.find("article") or soup.find("main") or soup


def _skipped(tag) -> bool:
    for parent in [tag, *tag.parents]:
        name = getattr(parent, "name", None)
        if name in _NOT_PROSE:
            return True
        classes = parent.get("class", []) if hasattr(parent, "get") else []
        if any(c in _NOT_PROSE_CLASSES for c in classes):
            return True
    return False


def _blocks(article) -> list:
    return [t for t in article.find_all(["p", "li", "dd", "figcaption", "caption", "h1", "h2", "h3", "h4"])
            if not _skipped(t) and not t.find(["p", "li"])]


def page_prose(html: str, *, keep_code: bool = True) -> list[str]:
    """The prose blocks of a page (paragraphs, list items, captions, headings), as plain text.

    Parameters
    ----------
    html : str
        A rendered page.
    keep_code : bool
        Keep the text of inline code (``False``: drop it, leaving the prose
        around it).

    Returns
    -------
    list of str
        One string a block, white space folded.
    """
    article = _article(_soup(html))
    out = []
    for block in _blocks(article):
        if not keep_code:
            block = _soup(str(block))
            for c in block.find_all("code"):
                c.decompose()
        text = re.sub(r"\s+", " ", block.get_text(" ")).strip().replace("¶", "").strip()
        if text:
            out.append(text)
    return out


def sentences(blocks: Iterable[str]) -> list[str]:
    """The sentences of some prose blocks (split after ``.``, ``!`` or ``?`` before a capital)."""
    out = []
    for b in blocks:
        out.extend(s.strip() for s in _SENTENCE_END.split(b) if s.strip())
    return out


def _repeated(blocks: list[str]) -> list[str]:
    counts = Counter(s for s in sentences(blocks) if len(s.split()) >= MIN_REPEATED_WORDS)
    return [s for s, n in counts.items() if n > 1]


def _code_names(html: str, names: Iterable[str], parameters: Iterable[str], *, teaches_api: bool) -> list[str]:
    found = []
    plain = " ".join(page_prose(html, keep_code=False))
    for name in sorted(set(names) | set(parameters)):
        if re.search(rf"(?<![\w.`/]){re.escape(name)}(?![\w(])", plain):
            found.append(f"'{name}' stands in the prose")
    if not teaches_api:
        article = _article(_soup(html))
        inline = {c.get_text() for c in article.find_all("code") if not _skipped(c)}
        for name in sorted(set(parameters)):
            if any(re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", t) for t in inline):
                found.append(f"the parameter '{name}' is named in the prose")
    return found


def _table_problems(article) -> list[tuple[str, str]]:
    out = []
    for i, tab in enumerate(article.find_all("table"), 1):
        cells = [c.get_text(" ", strip=True) for c in tab.find_all(["td", "th"])]
        if any(c in ("...", "…") for c in cells):
            out.append(("truncated-table", f"table {i} is cut ('...' cells)"))
        body = tab.find("tbody")
        if body is not None and body.find("th") is not None:
            out.append(("raw-index", f"table {i} shows its index ({body.find('th').get_text(strip=True)!r})"))
        bad = sorted({c for c in cells if _MISSING.match(c)})
        if bad:
            out.append(("missing-value", f"table {i} shows {', '.join(repr(b) for b in bad)}"))
    text = article.get_text(" ")
    if _TRUNCATED.search(text):
        out.append(("truncated-table", f"a table is cut ({_TRUNCATED.search(text).group(0)!r})"))
    return out


def _claims_problem(article) -> str | None:
    """Why a paper chapter's claims table is missing or late; None when it stands before the first figure."""
    for tab in article.find_all("table"):
        heads = [th.get_text(strip=True) for th in tab.find_all("th")]
        if "Verdict" in heads:
            first_img = article.find("img")
            if first_img is not None and first_img in tab.find_all_previous("img"):
                return "the claims table comes after the first figure"
            return None
    if _RAW_CLAIMS.search(article.get_text(" ")):
        return "the claims table is shown as raw Markdown (its output was not rendered as MyST)"
    return "no claims table (a table with a Verdict column)"


def check_page(page: str, html: str, *, names: Iterable[str] = (), parameters: Iterable[str] = (),
               needs_claims: bool = False, teaches_api: bool = True,
               word_limit: int = WORD_LIMIT) -> list[SiteProblem]:
    """The problems of one rendered page.

    Parameters
    ----------
    page : str
        The page's name in the report.
    html : str
        The page's HTML.
    names : iterable of str
        Names from the library's code that must not stand in prose outside inline code.
    parameters : iterable of str
        The notebooks' parameter names (likewise; also not in inline code unless ``teaches_api``).
    needs_claims : bool
        The page reproduces a part of the paper and must open with a claims table.
    teaches_api : bool
        The page teaches the library's API, so inline code may name parameters.
    word_limit : int
        The most words of prose the page may hold.

    Returns
    -------
    list of SiteProblem
    """
    soup = _soup(html)
    article = _article(soup)
    blocks = page_prose(html)
    problems = [SiteProblem(page, "repeated-sentence", f"said twice: {s[:160]!r}") for s in _repeated(blocks)]
    problems += [SiteProblem(page, "code-name", m)
                 for m in _code_names(html, names, parameters, teaches_api=teaches_api)]
    problems += [SiteProblem(page, rule, m) for rule, m in _table_problems(article)]
    if needs_claims:
        missing = _claims_problem(article)
        if missing:
            problems.append(SiteProblem(page, "claims-table", missing))
    words = sum(len(b.split()) for b in blocks)
    if words > word_limit:
        problems.append(SiteProblem(page, "long-page", f"{words:,} words of prose (at most {word_limit:,})"))
    return problems


def check_site(html_dir: Path | str, pages: Mapping[str, Mapping[str, object]]) -> list[SiteProblem]:
    """Check the listed pages of a rendered site.

    Parameters
    ----------
    html_dir : path
        The site's root (``_build/html``).
    pages : dict of str to dict
        Page path under the site (``"notebooks/04_greedy_cv.html"``) to the
        keyword options of :func:`check_page` for it.

    Returns
    -------
    list of SiteProblem
        A page that is missing is itself a problem.
    """
    root = Path(html_dir)
    problems: list[SiteProblem] = []
    for page, options in pages.items():
        path = root / page
        if not path.is_file():
            problems.append(SiteProblem(page, "claims-table", "the page was not rendered"))
            continue
        problems += check_page(page, path.read_text(encoding="utf-8"), **options)  # type: ignore[arg-type]
    return problems


def format_problems(problems: list[SiteProblem]) -> str:
    """The report: one line a problem, grouped by page, or ``""`` for none."""
    return "\n".join(str(p) for p in problems)
