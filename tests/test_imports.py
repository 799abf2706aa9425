"""The house rule: imports flow one way (docs/architecture.md), checked on every import statement.

Every ``import`` and ``from ... import`` in ``src/kisekae``, including those inside functions, is
resolved to the top-level package it names; a package may import only the packages listed for it
in :data:`ALLOWED`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kisekae"

#: Base modules over plain files and values (errors, validation, JSON reading, the overwrite policy).
BASE = {"errors", "validate", "data", "jsonfile", "outputs", "bake_cache"}
EFFECTS = {"fit", "tension", "wound"}
#: Package -> packages it may import (besides itself). Lower rooms never import higher ones.
ALLOWED = {
    "errors": set(),
    "validate": {"errors"},
    "data": {"errors"},
    "jsonfile": {"errors"},
    "outputs": {"errors"},
    "bake_cache": set(),
    "geom": {"errors", "validate"},
    "avatar": BASE | {"geom"},
    "io": BASE | {"geom", "avatar"},
    "qa": BASE | {"geom", "avatar"},
    "fit": BASE | {"geom", "avatar", "qa"},
    "tension": BASE | {"geom", "avatar"},
    "wound": BASE | {"geom", "avatar"},
    "shaders": BASE | {"geom", "avatar"} | EFFECTS,
    "render": BASE | {"geom", "avatar", "shaders"} | EFFECTS,
    "batch": BASE | {"geom", "avatar", "io", "qa", "shaders", "render", "__init__"} | EFFECTS,
    "app": BASE | {"geom", "avatar", "io", "qa", "shaders", "render", "batch", "__init__"} | EFFECTS,
    # the Blender extension sits on top, beside cli; only its addon/ imports bpy
    "blender": BASE | {"geom", "avatar", "qa", "__init__"} | EFFECTS,
    "cli": BASE | {"geom", "avatar", "io", "qa", "shaders", "render", "batch", "app", "blender", "__init__"} | EFFECTS,
    "__main__": {"cli"},
    "__init__": {"errors"},
}


def _room(module: str) -> str:
    """Top-level room of a dotted ``kisekae...`` module name (``__init__`` for ``kisekae`` itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_module(src: Path, dotted: str) -> bool:
    p = src.parent.joinpath(*dotted.split("."))
    return p.is_dir() or p.with_suffix(".py").exists()


def imports_of(path: Path, src: Path) -> list[tuple[int, str]]:
    """``(line, absolute module)`` of every kisekae import in ``path`` (under ``src``), at any depth."""
    package = list(path.relative_to(src.parent).parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            mod = ".".join(package[: len(package) - (node.level - 1)] + ([node.module] if node.module else []))
            if node.module:
                found.append((node.lineno, mod))
            else:  # ``from .. import x``: x is a module, or a name of the package itself
                found += [(node.lineno, f"{mod}.{a.name}" if _is_module(src, f"{mod}.{a.name}") else mod)
                          for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.module))
    return [(line, n) for line, n in found if n == "kisekae" or n.startswith("kisekae.")]


def backward_edges(src: Path = SRC) -> list[str]:
    """``file:line: room imports module`` for every import that ALLOWED does not permit."""
    bad = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        room = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        allowed = ALLOWED.get(room, set())
        for line, module in imports_of(path, src):
            target = _room(module)
            if target != room and target not in allowed:
                bad.append(f"{rel.as_posix()}:{line}: {room} imports {module}")
    return bad


def test_every_room_is_listed():
    rooms = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    rooms |= {p.stem for p in SRC.glob("*.py")}
    assert rooms <= set(ALLOWED), f"add these to ALLOWED: {sorted(rooms - set(ALLOWED))}"


def test_imports_flow_one_way():
    bad = backward_edges()
    assert not bad, "backward imports:\n" + "\n".join(bad)


def test_the_checker_sees_imports_inside_functions(tmp_path):
    pkg = tmp_path / "kisekae"
    (pkg / "geom").mkdir(parents=True)
    (pkg / "geom" / "__init__.py").write_text("")
    (pkg / "geom" / "x.py").write_text("def f():\n    from ..fit import pushout\n    import kisekae.cli\n")
    (pkg / "fit").mkdir()
    (pkg / "fit" / "__init__.py").write_text("from ..geom import x\nfrom . import pushout\n")
    bad = backward_edges(pkg)
    assert bad == ["geom/x.py:2: geom imports kisekae.fit", "geom/x.py:3: geom imports kisekae.cli"]


@pytest.mark.parametrize("room", sorted(ALLOWED))
def test_no_cycles_in_the_rules(room):
    """The rules themselves are a one-way order: no room reaches itself through ALLOWED."""
    seen, todo = set(), list(ALLOWED[room])
    while todo:
        r = todo.pop()
        if r in seen:
            continue
        seen.add(r)
        todo += ALLOWED.get(r, ())
    assert room not in seen
