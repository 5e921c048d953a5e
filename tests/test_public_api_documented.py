"""The library's public functions say what they take, what they do and what they cost.

Every public function, method and property of the library (outside the
private modules, whose names start with an underscore) has a docstring; in
the layers a user calls directly (data, method, protocol, studies) the
docstring also states its cost, as ``O(...)``, a "Cost" sentence or a
"Complexity" note (context managers and command-line entry points apart: they
wrap the work of the block or the command).  The book's helpers (``benchsel_lib.book``) and the
command line (``benchsel_lib.cli``) only need a docstring: what they cost is
the cost of the library calls they make.  Every public function is also
fully annotated (its parameters but ``self`` and ``cls``, and its return),
and its options (parameters with a default, beyond the first) are
keyword-only, but for the few listed in ``POSITIONAL`` with their reason.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "benchsel_lib"
COSTED = ("data", "method", "protocol", "studies")
COST = re.compile(r"O\(|\b[Cc]osts?\b|[Cc]omplexity")


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if not any(part.startswith("_") and part != "__init__.py" for part in p.relative_to(PACKAGE).parts))


def _public(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Public functions and methods of public classes, with their dotted names (``__init__`` is documented by its class)."""
    out = []

    def visit(node: ast.AST, prefix: str) -> None:
        for n in ast.iter_child_nodes(node):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_"):
                out.append((prefix + n.name, n))
            elif isinstance(n, ast.ClassDef) and not n.name.startswith("_"):
                visit(n, f"{prefix}{n.name}.")

    visit(tree, "")
    return out


def _report(path: Path, root: Path, problem: Callable[[Path, str, ast.FunctionDef], str | None]) -> list[str]:
    """``"rel:line name: problem"`` for each public function of ``path`` where ``problem(rel, name, node)`` finds one."""
    rel = path.relative_to(root)
    found = []
    for name, node in _public(ast.parse(path.read_text(encoding="utf-8"))):
        why = problem(rel, name, node)
        if why:
            found.append(f"{rel}:{node.lineno} {name}: {why}")
    return found


def _undocumented(rel: Path, name: str, node: ast.FunctionDef) -> str | None:
    if isinstance(node.body[0], ast.Expr) and isinstance(getattr(node.body[0], "value", None), ast.Constant) \
            and node.body[0].value.value is Ellipsis:
        return None  # an overload or protocol stub without a body
    doc = ast.get_docstring(node)
    wrapper = name.split(".")[-1] == "main" or any(
        getattr(d, "id", getattr(d, "attr", None)) == "contextmanager" for d in node.decorator_list)
    if not doc:
        return "no docstring"
    if rel.parts[0] in COSTED and not wrapper and not COST.search(doc):
        return "the docstring does not state the cost"
    return None


def _problems(path: Path, root: Path = PACKAGE) -> list[str]:
    return _report(path, root, _undocumented)


def _toy(root: Path, layer: str, text: str) -> Path:
    """A module ``layer/example.py`` under ``root`` holding ``text``."""
    path = root / layer / "example.py"
    path.parent.mkdir()
    path.write_text(text)
    return path


def test_the_check_finds_an_undocumented_function_and_a_missing_cost(tmp_path):
    mod = _toy(tmp_path, "method",
               'def a(x):\n    return x\n\n\ndef b(x):\n    """Twice x."""\n    return 2 * x\n\n\n'
               'def c(x):\n    """Twice x. O(1)."""\n    return 2 * x\n\n\ndef _d(x):\n    return x\n\n\n'
               '@contextmanager\ndef e():\n    """Inside the block."""\n    yield\n\n\n'
               'class F:\n    def g(self):\n        return 1\n')
    assert _problems(mod, root=tmp_path) == ["method/example.py:1 a: no docstring",
                                             "method/example.py:5 b: the docstring does not state the cost",
                                             "method/example.py:26 F.g: no docstring"]
    book = _toy(tmp_path, "book", 'def b(x):\n    """Twice x."""\n    return 2 * x\n')
    assert _problems(book, root=tmp_path) == []


def _missing_annotations(rel: Path, name: str, node: ast.FunctionDef) -> str | None:
    a = node.args
    params = [x for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]
    params += [x for x in (a.vararg, a.kwarg) if x is not None]
    missing = [x.arg for x in params if x.annotation is None] + (["return"] if node.returns is None else [])
    return f"no annotation for {', '.join(missing)}" if missing else None


def _unannotated(path: Path, root: Path = PACKAGE) -> list[str]:
    return _report(path, root, _missing_annotations)


def test_the_check_finds_a_missing_annotation(tmp_path):
    mod = _toy(tmp_path, "method",
               'def a(x: int, *, y=1) -> int:\n    return x\n\n\ndef b(x: int):\n    return x\n\n\n'
               'class C:\n    def d(self, **kw: int) -> None:\n        pass\n')
    assert _unannotated(mod, root=tmp_path) == ["method/example.py:1 a: no annotation for y",
                                                "method/example.py:5 b: no annotation for return"]


#: parameters with a default that stay positional, beyond a function's first one (its subject, as
#: ``Pipeline(k)`` or ``main(argv)``), each for a reason
POSITIONAL = {
    "book/prose.py": {"num": {"spec"}, "signed": {"spec"}, "pct": {"digits"}, "range_text": {"spec"},
                      "count": {"plural"}},  # the format follows the value, as in format(value, spec)
    "method/scaling.py": {"FittedScaling.transform": {"cols"},
                          "FittedScaling.inverse": {"cols"}},  # the columns the rows hold
    "protocol/cv.py": {"cross_validate": {"pipelines"}},  # what is compared on the matrix
    # scikit-learn's splitter protocol: its model selection passes y and groups by position
    "method/folds.py": {"Splitter.split": {"y", "groups"}, "Splitter.get_n_splits": {"y", "groups"}},
    "protocol/splits.py": {"CVSplits.get_n_splits": {"y", "groups"}},
    "studies/extrapolation.py": {"extrapolation_check": {"pipelines"}},
    "studies/diagnostics.py": {"cholesky_residual_trace": {"k"}},  # the size of the factorization
}


def _options_by_position(rel: Path, name: str, node: ast.FunctionDef) -> str | None:
    """The parameters with a default, beyond the first, that can be passed by position and are not listed."""
    a = node.args
    pos = [x.arg for x in a.posonlyargs + a.args]
    subject = [p for p in pos if p not in ("self", "cls")][:1]
    with_default = pos[len(pos) - len(a.defaults):] if a.defaults else []
    allowed = POSITIONAL.get(rel.as_posix(), {}).get(name, ())
    loose = [p for p in with_default if p not in subject and p not in allowed]
    return f"{', '.join(loose)} can be passed by position" if loose else None


def _positional_options(path: Path, root: Path = PACKAGE) -> list[str]:
    return _report(path, root, _options_by_position)


def test_the_check_finds_an_option_passed_by_position(tmp_path):
    mod = _toy(tmp_path, "method",
               'def a(x: int, y: int = 1) -> int:\n    return x\n\n\ndef b(x: int = 0, *, y: int = 1) -> int:\n'
               '    return x\n\n\nclass C:\n    def d(self, k: int = 1, z: int = 2) -> None:\n        pass\n')
    assert _positional_options(mod, root=tmp_path) == ["method/example.py:1 a: y can be passed by position",
                                                       "method/example.py:10 C.d: z can be passed by position"]


@pytest.mark.parametrize("rule", [_problems, _unannotated, _positional_options],
                         ids=["documented with its cost", "annotated", "options keyword-only"])
@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_public_function_is_documented_annotated_and_takes_options_by_keyword(path, rule):
    assert rule(path) == []
