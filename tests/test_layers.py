"""The shape of the code: the layers hold, no module imports itself back, defaults live in one place."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from focused.settings import defaults

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "focused"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _under_type_checking(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(inner) for inner in ast.walk(node))
    return skip


def import_graph() -> dict[str, set[str]]:
    """Module -> the focused modules it imports, at the top or inside a function (not under TYPE_CHECKING)."""
    modules = _modules()

    def module_of(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _under_type_checking(tree)
        edges: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("focused"):
                edges.update(module_of(f"{node.module}.{alias.name}") for alias in node.names)
            elif isinstance(node, ast.Import):
                edges.update(module_of(a.name) for a in node.names if a.name.startswith("focused"))
        edges.discard(name)
        edges.discard("")
        graph[name] = edges
    return graph


def test_the_layers_and_the_scrapy_free_code_hold():
    """The import-linter contracts of pyproject.toml (a module imports only from the layers below its own)."""
    command = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert command, "lint-imports is missing: make install"
    result = subprocess.run([command, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_no_module_imports_itself_back_not_even_lazily():
    graph = import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
    for node in graph:
        if node not in index:
            visit(node)
    assert cycles == []


def test_the_cycle_check_finds_a_lazy_circle(tmp_path, monkeypatch):
    """The check above can fail: two modules importing each other inside functions make one circle."""
    package = tmp_path / "focused"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from focused.b import g\n")
    (package / "b.py").write_text("def g():\n    from focused import a\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert import_graph() == {"focused": set(), "focused.a": {"focused.b"}, "focused.b": {"focused.a"}}


def test_at_most_fifteen_top_level_modules():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 15, top


GETTERS = {"get", "getint", "getfloat", "getbool", "getlist", "getdict", "getwithbase"}
#: The modules that may read a FOCUSED_* setting raw: the accessor itself, and validation (it checks raw values).
RAW_READERS = {
    "focused/settings/access.py",
    "focused/settings/validation.py",
    "focused/settings/checks.py",
    "focused/settings/settingchecks.py",
}


def _setting_reads() -> list[tuple[str, int, str, ast.Call]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            first, func = node.args[-1 if isinstance(node.func, ast.Name) else 0], node.func
            is_read = (isinstance(func, ast.Attribute) and func.attr in GETTERS) or (
                isinstance(func, ast.Name) and func.id == "setting" and len(node.args) == 2
            )
            if is_read and isinstance(first, ast.Constant) and re.fullmatch(r"FOCUSED_[A-Z0-9_]+", str(first.value)):
                out.append((rel, node.lineno, first.value, node))
    return out


def test_no_component_restates_a_default():
    """Every FOCUSED_* setting is read through focused.settings.access.setting (its default comes from
    focused.settings.defaults), not with a getter and a default of its own."""
    offenders = []
    for rel, line, name, call in _setting_reads():
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in GETTERS and rel not in RAW_READERS:
            fallback = call.args[1] if len(call.args) > 1 else None
            is_ours = isinstance(fallback, ast.Attribute) and fallback.attr == name  # defaults.NAME (bench dicts)
            if not is_ours:
                offenders.append(f"{rel}:{line} {ast.unparse(call)}")
    assert offenders == []


def test_every_setting_read_is_a_documented_default():
    names = {n for n in dir(defaults) if n.startswith("FOCUSED_")}
    unknown = [f"{rel}:{line} {name}" for rel, line, name, _ in _setting_reads() if name not in names]
    assert unknown == []


@pytest.mark.parametrize("name", sorted(n for n in dir(defaults) if n.startswith("FOCUSED_")))
def test_a_default_has_a_type_the_accessor_reads(name):
    assert isinstance(getattr(defaults, name), bool | int | float | str)
