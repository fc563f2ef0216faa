"""The package tree is the architecture: imports point down the layers of DESIGN.md, never up.

Layers, lowest first. A module may import its own layer and the layers below it. Imports
under ``if TYPE_CHECKING:`` are for types only and do not count. The two documented lazy
facades (``CachedDataset.drop/relabel/set/save/pending_edits`` -> versioning, and
``CachedDataset.browse`` -> widgets) import upward inside those methods only, as pandas
does for ``DataFrame.plot``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "stable_explore"

LAYERS: list[set[str]] = [
    {"errors", "_units", "_optional", "_canonical"},  # plain helpers every layer may use
    {"schema"},  # feature types
    {"storage"},  # the on-disk format, shard writer and reader, digests, verify
    {"catalog"},  # names -> versions, refs, cache decisions, builds, publishing, gc
    {"display"},  # rendering helpers: cards, tables, thumbnails, progress bars
    # CachedDataset: views, decoding, export, splits for ranks and workers
    {"dataset"},
    {"versioning"},  # edits saved as versions, compare
    {"widgets"},  # the anywidget browser
    {"api", "api_transfer", "magic", "cli", "cache", "backend", "__init__", "testing"},  # entry points and seed facades
]
LAZY_FACADES = {
    ("dataset", "versioning", "drop"),
    ("dataset", "versioning", "relabel"),
    ("dataset", "versioning", "set"),
    ("dataset", "versioning", "save"),
    ("dataset", "versioning", "pending_edits"),
    ("dataset", "widgets", "browse"),
}
UI_PACKAGES = ("IPython", "ipywidgets", "anywidget", "traitlets", "tqdm")


def _group(module: Path) -> str:
    """The top-level part of the package a file belongs to: ``storage`` for storage/writer.py."""
    parts = module.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def _layer(group: str) -> int:
    for index, members in enumerate(LAYERS):
        if group in members:
            return index
    msg = f"stable_explore/{group} is in no layer of tests/test_layers.py: add it where it belongs"
    raise AssertionError(msg)


def _imports(tree: ast.Module) -> list[tuple[str, str | None, int]]:
    """(imported module, enclosing function or None, line) for each runtime import."""
    found: list[tuple[str, str | None, int]] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # types only
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
                continue
            if isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                found.append((child.module, function, child.lineno))
                if child.module == "stable_explore":  # from stable_explore import cache
                    found.extend((f"stable_explore.{a.name}", function, child.lineno) for a in child.names)
            elif isinstance(child, ast.Import):
                found.extend((alias.name, function, child.lineno) for alias in child.names)
            visit(child, function)

    visit(tree, None)
    return found


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("module", _sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down_the_layers(module: Path) -> None:
    group = _group(module)
    own = _layer(group)
    upward = []
    for imported, function, line in _imports(ast.parse(module.read_text(encoding="utf-8"))):
        if not imported.startswith("stable_explore.") or imported == "stable_explore":
            continue
        target = imported.split(".")[1]
        if target == group or _layer(target) <= own:
            continue
        if function is not None and (group, target, function) in LAZY_FACADES:
            continue
        upward.append(f"{module.relative_to(PACKAGE)}:{line} imports {imported} (layer {_layer(target)} > {own})")
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize("group", ["schema", "storage", "catalog"])
def test_core_layers_never_import_notebook_or_ui_packages(group: str) -> None:
    offenders = []
    for module in sorted((PACKAGE / group).rglob("*.py")):
        for imported, _, line in _imports(ast.parse(module.read_text(encoding="utf-8"))):
            if imported.split(".")[0] in UI_PACKAGES:
                offenders.append(f"{module.relative_to(PACKAGE)}:{line} imports {imported}")
    assert not offenders, "\n".join(offenders)


def test_the_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The check itself can fail: a storage module importing the catalog is caught."""
    tree = ast.parse("from stable_explore.catalog import Catalog\n")
    (imported, function, _), *_ = _imports(tree)
    assert imported == "stable_explore.catalog"
    assert function is None
    assert _layer("catalog") > _layer("storage")
    guarded = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from stable_explore.catalog import C\n"
    )
    assert [i for i, _, _ in _imports(guarded)] == ["typing"]


def test_no_module_reads_another_modules_private_attributes() -> None:
    """``other._private`` across modules is how layers leak; reach things through public names instead."""
    offenders = []
    allowed_receivers = {"self", "cls", "clone", "super()"}
    # IPython's own hook for showing an exception from a custom handler (set_custom_exc's documented pattern)
    allowed_attributes = {"shell._showtraceback"}
    for module in _sources():
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
                continue
            receiver = ast.unparse(node.value)
            if receiver in allowed_receivers or receiver.startswith(("self.", "cls.")):
                continue
            if f"{receiver}.{node.attr}" in allowed_attributes:
                continue
            offenders.append(f"{module.relative_to(PACKAGE)}:{node.lineno} {receiver}.{node.attr}")
    assert not offenders, "\n".join(offenders)
