"""The import graph of src/: no circle, and no import from a lower layer to a higher one.

The graph is read with `ast` from every file under src/tilewise: module-level imports and the imports
inside functions and classes alike (a function-local import is still a dependency; it only runs later).
Imports under `if TYPE_CHECKING:` are left out: they never run. The layers, lowest first (CONTRIBUTING.md
has the same table); a module may import its own layer and the layers below it:
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterator

import pytest

SRC = os.path.join(os.path.dirname(__file__), "..", "src")

# (layer, the modules in it: a name covers the package or module and everything under it, except
# "tilewise", which is the top package's __init__ alone: a new package must be placed here)
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("tilewise.version", "tilewise.util", "tilewise.errors", "tilewise.gpus", "tilewise.validate")),
    ("model", ("tilewise.model", "tilewise.sim")),  # the simulator sits beside the model: neither imports the other
    ("advise, explain", ("tilewise.advise", "tilewise.explain")),
    ("kernels", ("tilewise.kernels",)),
    ("bench", ("tilewise.bench",)),
    ("web, cli", ("tilewise.web", "tilewise.cli", "tilewise.occupancy_cli", "tilewise")),
)


def modules(src: str) -> dict[str, str]:
    """{dotted module name: path} of every .py file under src/tilewise (a package by its own name)."""
    out = {}
    for dirpath, _, files in os.walk(os.path.join(src, "tilewise")):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                name = os.path.relpath(path, src)[:-3].replace(os.sep, ".")
                out[name.removesuffix(".__init__")] = path
    return out


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, outside `if TYPE_CHECKING:` blocks."""
    for node in ast.iter_child_nodes(tree):
        if _type_checking(node):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _imports(node)


def graph(src: str) -> dict[str, set[str]]:
    """{module: the tilewise modules it imports}: `from a.b import c` names a.b.c when that is a module, else a.b."""
    mods = modules(src)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    out: dict[str, set[str]] = {}
    for mod, path in mods.items():
        package = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        deps = set()
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:  # relative: from .x import y
                    parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*parts, base] if base else parts)
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for n in names:
                target = resolve(n) if n.split(".")[0] == "tilewise" else None
                if target is not None and target != mod:
                    deps.add(target)
        out[mod] = deps
    return out


def layer_of(mod: str) -> int:
    """The index in LAYERS of the most specific name covering `mod`."""
    best, best_len = -1, -1
    for i, (_, names) in enumerate(LAYERS):
        for n in names:
            if (mod == n or (n != "tilewise" and mod.startswith(n + "."))) and len(n) > best_len:
                best, best_len = i, len(n)
    assert best >= 0, f"{mod} is in no layer of LAYERS: place it"
    return best


def upward(g: dict[str, set[str]]) -> list[str]:
    """The imports from a lower layer to a higher one, as 'a (layer) -> b (layer)'."""
    bad = []
    for a, deps in sorted(g.items()):
        for b in sorted(deps):
            la, lb = layer_of(a), layer_of(b)
            if lb > la:
                bad.append(f"{a} ({LAYERS[la][0]}) -> {b} ({LAYERS[lb][0]})")
    return bad


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer():
    for mod in modules(SRC):
        layer_of(mod)
    with pytest.raises(AssertionError, match="in no layer"):  # a new package must be placed in LAYERS
        layer_of("tilewise.newpackage.x")


def test_no_import_reaches_up_a_layer():
    assert upward(graph(SRC)) == []


def test_no_import_circle():
    assert circles(graph(SRC)) == []


def test_model_imports_neither_the_advisor_nor_the_simulator():
    g = graph(SRC)
    for mod, deps in g.items():
        if mod.startswith("tilewise.model"):
            assert not {d for d in deps if d.startswith(("tilewise.advise", "tilewise.sim"))}, mod
        if mod.startswith("tilewise.sim"):
            assert not {d for d in deps if d.startswith("tilewise.model")}, mod


def test_the_checks_find_a_planted_circle_and_an_upward_import(tmp_path):
    """The graph reader on a small tree: a function-local import closing a circle, a relative import, an
    upward import; a TYPE_CHECKING import is not an edge."""
    pkg = tmp_path / "tilewise"
    (pkg / "model").mkdir(parents=True)
    (pkg / "advise").mkdir()
    for f in ("__init__.py", "model/__init__.py", "advise/__init__.py", "errors.py"):
        (pkg / f).write_text("")
    (pkg / "model" / "a.py").write_text("from . import b\n")
    (pkg / "model" / "b.py").write_text("def f():\n    from tilewise.model import a\n")
    (pkg / "model" / "c.py").write_text("def g():\n    import tilewise.advise.space\n")
    (pkg / "model" / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tilewise.advise import space\n"
    )
    (pkg / "advise" / "space.py").write_text("from tilewise.errors import InputError\n")
    g = graph(str(tmp_path))
    assert g["tilewise.model.a"] == {"tilewise.model.b"} and g["tilewise.model.b"] == {"tilewise.model.a"}
    assert g["tilewise.model.d"] == set() and g["tilewise.advise.space"] == {"tilewise.errors"}
    assert circles(g) == [["tilewise.model.a", "tilewise.model.b"]]
    assert upward(g) == ["tilewise.model.c (model) -> tilewise.advise.space (advise, explain)"]


# ------------------------------------------------------------------------------ function-local imports

# What a function-local import may defer: the optional extras (and what they pull in at import)
HEAVY = ("torch", "triton", "matplotlib", "uvicorn", "starlette", "h11", "cupy", "tqdm")


def _imported(node: ast.Import | ast.ImportFrom) -> list[tuple[str, str | None]]:
    """(module, name) pairs of an absolute import: `import a.b` -> (a.b, None); `from a import b` -> (a, b)."""
    if isinstance(node, ast.Import):
        return [(a.name, None) for a in node.names]
    return [] if node.level else [(node.module or "", a.name) for a in node.names]


def _function_local(tree: ast.AST, depth: int = 0) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if _type_checking(node):
            continue
        inner = depth + isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        if depth and isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _function_local(node, inner)


def heavy_modules(src: str) -> set[str]:
    """The tilewise modules that import a HEAVY package when imported (their parents' imports included)."""
    mods = modules(src)
    trees = {m: ast.parse(open(p, encoding="utf-8").read(), p) for m, p in mods.items()}

    def top_level(m: str) -> list[tuple[str, str | None]]:
        out = []
        for node in trees[m].body:
            if _type_checking(node):
                continue
            for sub in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    out += _imported(sub)
        return out

    memo: dict[str, bool] = {}

    def heavy(m: str, seen: tuple[str, ...] = ()) -> bool:
        if m not in memo:
            parents = [".".join(m.split(".")[:i]) for i in range(1, m.count(".") + 1)]
            memo[m] = any(heavy(p, seen) for p in parents if p in mods and p not in seen) or any(
                loads_heavy(mn, nm, mods, lambda t: t not in seen and t != m and heavy(t, (*seen, m)))
                for mn, nm in top_level(m)
            )
        return memo[m]

    return {m for m in mods if heavy(m)}


def loads_heavy(module: str, name: str | None, mods: dict[str, str], heavy_module: Callable[[str], bool]) -> bool:
    """Whether `from module import name` (`import module` when name is None) imports a HEAVY package."""
    if module.split(".")[0] != "tilewise":
        return module.split(".")[0] in HEAVY
    sub = f"{module}.{name}"
    if name and sub in mods:
        return bool(heavy_module(sub))
    if module == "tilewise.kernels" and name:  # a public op: the package's __getattr__ imports torch for it
        return True
    while module and module not in mods:
        module = module.rpartition(".")[0]
    return bool(module) and bool(heavy_module(module))


def test_function_local_imports_only_defer_a_heavy_dependency():
    """A function-local import is kept only where it defers torch, triton, matplotlib, ... (HEAVY) from a
    module that must import without it; anything else belongs at the module's top (the graph has no
    circle for it to break)."""
    mods = modules(SRC)
    heavy = heavy_modules(SRC)
    light = []
    for mod, path in sorted(mods.items()):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in _function_local(tree):
            if not any(loads_heavy(m, n, mods, heavy.__contains__) for m, n in _imported(node)):
                light.append(f"{mod}:{node.lineno} {ast.unparse(node)}")
    assert light == []
    assert "tilewise.kernels.gemm" in heavy and "tilewise.web.server" in heavy  # torch / starlette at the top
    assert "tilewise.model.predict" not in heavy and "tilewise.bench.harness" not in heavy
