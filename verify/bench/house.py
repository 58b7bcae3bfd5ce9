"""The shape of the code: import circles, floors, check-module sizes, long functions (``python -m verify.bench.house``).

The measurements behind issue 20's targets (DESIGN "Target layout"), from the source alone (``ast``):

* the **import graph** of every module of ``verify`` and ``theory`` -- an edge for every ``import`` or
  ``from ... import`` anywhere in the module (inside functions too; only ``if TYPE_CHECKING:`` blocks are
  left out, they never run) -- and its **circles** (strongly connected components of more than one module);
* the same graph between **rooms**: a top-level module or package of ``verify`` (``verify.stats``,
  ``verify.cli`` ...), and ``theory``; its circles and its **floors** (the longest chain of rooms, counted
  from the rooms that import no other);
* the lines of every ``verify/checks/*.py`` and the functions over :data:`LONG` lines.

``--list`` prints the rooms floor by floor, the long functions and the in-function imports.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LONG", "House", "measure"]

#: a function over this many lines (decorators and docstring included) counts as long
LONG = 60
_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class House:
    """What :func:`measure` found (module names are dotted, rooms as :func:`room` names them)."""

    modules: dict[str, Path]
    edges: dict[str, set[str]]
    inner: dict[str, set[str]]  #: modules of this package imported inside functions, by importing module
    long_functions: list[tuple[int, str, str]]  #: (lines, path, name)
    check_lines: dict[str, int] = field(default_factory=dict)
    inner_statements: int = 0  #: import statements inside functions, of any module (stdlib and third-party too)

    @property
    def circles(self) -> list[list[str]]:
        return [c for c in _components(self.modules, self.edges) if len(c) > 1]

    def room_edges(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = defaultdict(set)
        for a, bs in self.edges.items():
            out[room(a)].update(room(b) for b in bs if room(b) != room(a))
        return out

    @property
    def rooms(self) -> list[str]:
        return sorted({room(m) for m in self.modules})

    @property
    def room_circles(self) -> list[list[str]]:
        return [c for c in _components(self.rooms, self.room_edges()) if len(c) > 1]

    def floors(self) -> dict[str, int]:
        """Floor of every room: 0 for a room that imports no other, else one above the highest it imports."""
        edges = self.room_edges()
        comps = _components(self.rooms, edges)
        of = {r: i for i, c in enumerate(comps) for r in c}
        level: dict[int, int] = {}
        for i, comp in enumerate(comps):  # Tarjan emits a component after everything it reaches
            below = {of[b] for r in comp for b in edges.get(r, ())} - {i}
            level[i] = 1 + max((level[j] for j in below), default=-1)
        return {r: level[of[r]] for r in self.rooms}

    @property
    def in_function_imports(self) -> int:
        return sum(len(v) for v in self.inner.values())


def room(module: str) -> str:
    """``verify.stats.rates`` -> ``verify.stats``; ``theory.catalog`` -> ``theory``; ``verify`` stays."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "verify" and len(parts) > 1 else parts[0]


def _module_names(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    mods = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            name = ".".join(path.relative_to(root).with_suffix("").parts)
            mods[name.removesuffix(".__init__")] = path
    return mods


def _targets(node: ast.AST, module: str, is_pkg: bool, mods: dict[str, Path]) -> list[str]:
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = module.split(".")[: None if is_pkg else -1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join([*parts, base] if base else parts)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
    out = []
    for t in names:
        while t and t not in mods:
            t = t.rpartition(".")[0]
        if t and t != module:
            out.append(t)
    return out


def measure(root: Path = _ROOT, packages: tuple[str, ...] = ("verify", "theory")) -> House:
    """Read every module under ``packages`` of ``root`` and measure the house."""
    mods = _module_names(root, packages)
    edges: dict[str, set[str]] = defaultdict(set)
    inner: dict[str, set[str]] = defaultdict(set)
    long_functions: list[tuple[int, str, str]] = []
    statements = 0
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)
        }
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skip:
                edges[name].update(_targets(node, name, is_pkg, mods))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > LONG:
                    long_functions.append((size, str(path.relative_to(root)), node.name))
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)) and id(sub) not in skip:
                        statements += 1
                        inner[name].update(_targets(sub, name, is_pkg, mods))
    checks = {
        str(p.relative_to(root)): len(p.read_text(encoding="utf-8").splitlines())
        for p in sorted((root / "verify" / "checks").glob("*.py"))
    }
    inner = {k: v for k, v in inner.items() if v}
    return House(mods, dict(edges), inner, sorted(long_functions, reverse=True), checks, statements)


def _components(nodes: Iterable[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative), each emitted after every component it reaches."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                out.append(sorted(comp))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verify.bench.house", description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print the floors, long functions and in-function imports")
    args = ap.parse_args(argv)
    h = measure()
    floors = h.floors()
    print(
        f"modules {len(h.modules)}, import circles {len(h.circles)}, imports inside functions: "
        f"{h.in_function_imports} of this package's modules ({h.inner_statements} statements of any module)"
    )
    print(f"rooms {len(h.rooms)}, room circles {len(h.room_circles)}, floors {max(floors.values()) + 1}")
    print(f"functions over {LONG} lines: {len(h.long_functions)}")
    print("check modules: " + ", ".join(f"{Path(p).name} {n}" for p, n in h.check_lines.items()))
    for c in h.circles + h.room_circles:
        print("  circle: " + " -> ".join(c))
    if args.list:
        for level in range(max(floors.values()) + 1):
            print(f"  floor {level:2d}: " + ", ".join(r for r in h.rooms if floors[r] == level))
        for size, path, name in h.long_functions:
            print(f"  {size:4d} {path}:{name}")
        for mod, targets in sorted(h.inner.items()):
            print(f"  in-function imports of {mod}: {', '.join(sorted(targets))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
