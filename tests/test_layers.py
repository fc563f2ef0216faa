"""The package tree is the architecture: imports point down the layers of DESIGN.md §4, never up.

Layers, lowest first. A module may import its own layer and the layers below it; inside ``storage/``
its sub-packages have an order of their own (``STORAGE_LAYERS``: format < backends < read and write <
check). Every way a module imports another counts: ``import a.b``, ``from a import b``, relative
imports (``from ..widgets import browser``) and ``importlib.import_module("a.b")`` with a literal
name. The body of ``if TYPE_CHECKING:`` is for types only and does not count (but for the storage
order); its ``else:`` runs, and counts. The documented lazy facades
(``CachedDataset.drop/relabel/set/save/pending_edits/map/add_columns`` -> versioning, ``CachedDataset.browse`` ->
widgets, ``CachedDataset.to_hf/to_lance/to_mds/to_coco/to_yolo/export`` -> io, and the reprs and progress bars
that render through ``display``) import upward inside those functions only, as pandas does for ``DataFrame.plot``.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "stable_explore"

# DESIGN.md §4, read from the bottom up.
LAYERS: list[set[str]] = [
    {
        "errors",
        "_units",
        "_optional",
        "_canonical",
        "_frames",
        "_arrays",
        "_lance_fork",
        "_lazy",
        "_json",
    },  # plain helpers every layer may use
    {"schema"},  # feature types
    {"storage"},  # format/, backends/, read/, write/, check/
    {
        "cache",
        "backend",
    },  # stable-datasets-compatible facades over storage/ (for users: nothing in the package imports them)
    {"catalog"},  # names -> versions, refs, cache decisions, builds, publishing, gc
    {"dataset"},  # CachedDataset: views, decoding, export, splits for ranks and workers
    # other tools' formats, one module each: annotation files (COCO, YOLO) and dataset layouts (Hugging Face, Lance,
    # MDS, stable-datasets' folders): rows to build, and a dataset written as them
    {"io"},
    {"versioning"},  # edits saved as versions, compare
    {"signals", "evaluation"},  # computed columns that find rows worth a look; predictions against labels
    {"display"},  # UI: cards, tables, thumbnails, progress bars (they read through CachedDataset only)
    {"widgets"},  # UI: the anywidget browser (it draws with display's helpers)
    # entry points: api/ (building, catalog, interop, labels, formats, transfer; and _user_errors, the trimmed
    # tracebacks the magic and the CLI show), the magic, the CLI; test helpers use them all; compat stands in for
    # stable-datasets' modules (its tests run against us)
    {"api", "magic", "cli", "__init__", "testing", "compat"},
]
FACADES = {"cache", "backend", "testing", "compat"}  # for users and tests: no module of the package imports them
# (layer group, imported group, function): an upward import allowed inside that function only
LAZY_FACADES = {
    ("dataset", "versioning", "drop"),
    ("dataset", "versioning", "relabel"),
    ("dataset", "versioning", "set"),
    ("dataset", "versioning", "save"),
    ("dataset", "versioning", "pending_edits"),
    ("dataset", "versioning", "map"),  # computed columns: a new version of the column groups
    ("dataset", "versioning", "add_columns"),
    ("dataset", "widgets", "browse"),
    ("evaluation", "widgets", "widget"),  # an evaluation's confusion-matrix widget, as ds.browse() is the browser
    ("dataset", "io", "to_coco"),  # a dataset's boxes written as a COCO file
    ("dataset", "io", "to_yolo"),  # ... as a YOLO folder
    ("dataset", "io", "to_hf"),  # ... as a Hugging Face dataset
    ("dataset", "io", "to_lance"),  # ... as a Lance dataset
    ("dataset", "io", "to_mds"),  # ... as MDS shards
    ("dataset", "io", "export"),  # ds.export: the layout its path names (stable-datasets' folders among them)
    ("dataset", "versioning", "relabel_boxes"),  # box edits start a draft, as drop and relabel do
    ("dataset", "versioning", "drop_boxes"),
    ("dataset", "versioning", "set_boxes"),
    ("dataset", "display", "_repr_html_"),  # the dataset card
    ("dataset", "display", "_export_images"),  # to_pandas(images="thumbnail") makes thumbnails as the browser does
    ("dataset", "display", "_export_posters"),  # ... and a video's poster thumbnail, as the browser does
    ("versioning", "display", "_repr_html_"),  # the diff card and the gallery of changed rows
    ("versioning", "display", "__str__"),  # Diff's text names the shard files as the card does
    ("versioning", "display", "save"),  # the progress bar of a save
    ("versioning", "display", "_save"),  # (the body of Draft.save, under its lock_timeout)
    ("versioning", "display", "_progress"),  # the progress bar of map and add_columns
    ("signals", "display", "map_images"),  # the progress bar of a signal over many images
}
UI_PACKAGES = ("IPython", "ipywidgets", "anywidget", "traitlets", "tqdm")


def _group(module: Path, root: Path = PACKAGE) -> str:
    """The top-level part of the package a file belongs to: ``storage`` for storage/write/writer.py."""
    parts = module.relative_to(root).with_suffix("").parts
    return parts[0]


def _layer(group: str) -> int:
    for index, members in enumerate(LAYERS):
        if group in members:
            return index
    msg = f"stable_explore/{group} is in no layer of tests/test_layers.py: add it where it belongs"
    raise AssertionError(msg)


def _is_group(name: str, root: Path = PACKAGE) -> bool:
    """Whether ``stable_explore.<name>`` is a part of the package (not a name its ``__init__`` exports)."""
    if any(name in members for members in LAYERS):
        return True
    if (root / name).is_dir() or (root / f"{name}.py").is_file():
        _layer(name)  # a part in no layer: say so
    return False


def _package_of(module: Path, root: Path = PACKAGE) -> str:
    """The dotted package relative imports in ``module`` start from: ``stable_explore.storage.write`` for its writer."""
    parts = [root.name, *module.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1])  # a package's __init__ starts from the package, a module from the one holding it


def _absolute(name: str, level: int, package: str) -> str:
    """``from ..widgets import x`` in ``stable_explore.dataset`` -> ``stable_explore.widgets``."""
    if level == 0:
        return name
    base = package.split(".")
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, name] if name else base)


def _is_type_checking(test: ast.expr) -> bool | None:
    """True for ``TYPE_CHECKING`` (or ``typing.TYPE_CHECKING``), False for its ``not``, None for any other test."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _is_type_checking(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING":
        return True
    if isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING":
        return True
    return None


def _literal_import(call: ast.Call, package: str) -> str | None:
    """The module ``importlib.import_module("...")`` (or ``__import__("...")``) names with a literal, if any."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name not in ("import_module", "__import__") or not call.args:
        return None
    first = call.args[0]
    if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
        return None
    text = first.value
    level = len(text) - len(text.lstrip("."))
    return _absolute(text[level:], level, package)


def _imports(
    tree: ast.Module, package: str = "stable_explore", *, types: bool = False
) -> list[tuple[str, str | None, int]]:
    """(imported module, enclosing function or None, line) for each runtime import of a module in ``package``.

    ``types=True``: the imports under ``if TYPE_CHECKING:`` too (a layer that must not know another at all).
    """
    found: list[tuple[str, str | None, int]] = []

    def visit_all(nodes: list[ast.stmt], function: str | None) -> None:
        for node in nodes:
            visit(node, function)

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, ast.If):
            checking = _is_type_checking(node.test)
            if checking is not None and not types:
                visit_all(node.orelse if checking else node.body, function)  # the branch that runs
                return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.ImportFrom):
            module = _absolute(node.module or "", node.level, package)
            found.append((module, function, node.lineno))
            # from stable_explore import cache / from .. import widgets: each name may be a module
            found.extend((f"{module}.{alias.name}", function, node.lineno) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, function, node.lineno) for alias in node.names)
        elif isinstance(node, ast.Call):
            literal = _literal_import(node, package)
            if literal is not None:
                found.append((literal, function, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, None)
    return found


def _sources(root: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def upward_imports(module: Path, root: Path = PACKAGE) -> list[str]:
    """Each import in ``module`` that points up the layers (or at a facade), as ``file:line imports name (why)``."""
    group = _group(module, root)
    own = _layer(group)
    where = module.relative_to(root)
    upward = []
    for imported, function, line in _imports(ast.parse(module.read_text(encoding="utf-8")), _package_of(module, root)):
        if not imported.startswith(f"{root.name}."):
            continue
        target = imported.split(".")[1]
        if target == group or not _is_group(target, root):
            continue
        if target in FACADES:
            upward.append(f"{where}:{line} imports {imported} (a facade for users)")
            continue
        if _layer(target) <= own:
            continue
        if function is not None and (group, target, function) in LAZY_FACADES:
            continue
        upward.append(f"{where}:{line} imports {imported} (layer {_layer(target)} > {own})")
    return upward


@pytest.mark.parametrize("module", _sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down_the_layers(module: Path) -> None:
    upward = upward_imports(module)
    assert not upward, "\n".join(upward)


# Inside storage/, its sub-packages, lowest first: the format model is data, a store knows bytes (not shards),
# readers and writers make shards of a store's bytes by the format, check uses them all. A module of storage/
# itself (``kept``, every cache of files read) sits under them all. Imports for types count too: format does
# not know a store exists.
STORAGE_LAYERS: list[set[str]] = [{""}, {"format"}, {"backends"}, {"read", "write"}, {"check"}]


def _storage_part(name: str) -> str | None:
    """``format`` for ``stable_explore.storage.format.x``, ``""`` for ``stable_explore.storage.kept``, else None."""
    parts = name.split(".")
    if parts[:2] != ["stable_explore", "storage"] or len(parts) < 3:
        return None
    return parts[2] if len(parts) > 3 or parts[2] in {p for layer in STORAGE_LAYERS for p in layer} else ""


def _storage_layer(part: str) -> int:
    for index, members in enumerate(STORAGE_LAYERS):
        if part in members:
            return index
    msg = f"stable_explore/storage/{part} is in no layer of STORAGE_LAYERS in tests/test_layers.py: add it"
    raise AssertionError(msg)


def upward_storage_imports(module: Path, root: Path = PACKAGE) -> list[str]:
    """Each import in a module of ``storage/`` that points up its sub-packages' order, types included."""
    where = module.relative_to(root)
    if where.parts[0] != "storage":
        return []
    dotted = ".".join([root.name, *where.with_suffix("").parts])
    own_part = _storage_part(dotted)
    assert own_part is not None
    own = _storage_layer(own_part)
    upward = []
    tree = ast.parse(module.read_text(encoding="utf-8"))
    for imported, _, line in _imports(tree, _package_of(module, root), types=True):
        part = _storage_part(imported.replace(root.name, "stable_explore", 1))
        if part is None or part == own_part:
            continue
        if (root / "storage" / part).is_file() or not (part == "" or (root / "storage" / part).is_dir()):
            continue  # a name that storage/__init__ exports, not a sub-package
        if _storage_layer(part) > own:
            upward.append(f"{where}:{line} imports {imported} (storage/{part}: layer {_storage_layer(part)} > {own})")
    return upward


@pytest.mark.parametrize("module", _sources(PACKAGE / "storage"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_storage_imports_point_down_its_sub_packages(module: Path) -> None:
    """format < backends < read and write < check: a store never imports a reader, the format model neither."""
    upward = upward_storage_imports(module)
    assert not upward, "\n".join(upward)


def test_the_format_model_imports_no_store_reader_or_writer() -> None:
    """format/ is values: none of its modules imports backends/, read/, write/ or check/, not even for types.

    There is no list of exceptions: the small files' reads and writes live in read/small_files.py and
    write/small_files.py, and the values that load them lazily are handed a reader (``SmallFiles``).
    """
    found = []
    for module in _sources(PACKAGE / "storage" / "format"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for imported, _, line in _imports(tree, _package_of(module), types=True):
            if _storage_part(imported) in {"backends", "read", "write", "check"}:
                found.append(f"{module.relative_to(PACKAGE)}:{line} imports {imported}")
    assert found == []


def test_the_storage_order_sees_an_upward_import(tmp_path: Path) -> None:
    """Planted: a store importing a reader, the format model importing a store for types only, relatively."""
    root = tmp_path / "stable_explore"
    store = _plant(root, "storage/backends/store.py", "from stable_explore.storage.read.kept import Kept\n")
    typed = _plant(
        root,
        "storage/format/typed.py",
        """\
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from ..backends.remote_file import RemoteLocation
        """,
    )
    lazy = _plant(root, "storage/read/lazy.py", "def later():\n    from stable_explore.storage.check import verify\n")
    fine = _plant(
        root,
        "storage/check/fine.py",
        "from stable_explore.storage.read import reader\nfrom stable_explore.storage.kept import kept\n",
    )
    kept = _plant(root, "storage/kept.py", "from stable_explore.storage.format import cache_meta\n")
    assert upward_storage_imports(store, root) == [
        "storage/backends/store.py:1 imports stable_explore.storage.read.kept (storage/read: layer 3 > 2)",
        "storage/backends/store.py:1 imports stable_explore.storage.read.kept.Kept (storage/read: layer 3 > 2)",
    ]
    assert upward_storage_imports(typed, root) == [
        "storage/format/typed.py:3 imports stable_explore.storage.backends.remote_file (storage/backends: layer 2 > 1)",
        "storage/format/typed.py:3 imports stable_explore.storage.backends.remote_file.RemoteLocation"
        " (storage/backends: layer 2 > 1)",
    ]
    assert upward_storage_imports(lazy, root) == [
        "storage/read/lazy.py:2 imports stable_explore.storage.check (storage/check: layer 4 > 3)",
        "storage/read/lazy.py:2 imports stable_explore.storage.check.verify (storage/check: layer 4 > 3)",
    ]
    assert upward_storage_imports(fine, root) == []
    assert upward_storage_imports(kept, root) == [
        "storage/kept.py:1 imports stable_explore.storage.format (storage/format: layer 1 > 0)",
        "storage/kept.py:1 imports stable_explore.storage.format.cache_meta (storage/format: layer 1 > 0)",
    ]


@pytest.mark.parametrize("group", ["schema", "storage", "catalog"])
def test_core_layers_never_import_notebook_or_ui_packages(group: str) -> None:
    offenders = []
    for module in sorted((PACKAGE / group).rglob("*.py")):
        for imported, _, line in _imports(ast.parse(module.read_text(encoding="utf-8")), _package_of(module)):
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
    assert [i for i, _, _ in _imports(guarded)] == ["typing", "typing.TYPE_CHECKING"]


def _plant(root: Path, relative: str, source: str) -> Path:
    """A module of a package tree shaped like ours, under ``root`` (named ``stable_explore``)."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    for folder in [path.parent, *path.parent.parents]:
        if folder == root.parent:
            break
        (folder / "__init__.py").touch()
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def test_the_three_holes_are_caught(tmp_path: Path) -> None:
    """Relative imports, the ``else:`` of ``if TYPE_CHECKING:`` and a literal ``import_module`` all point up."""
    root = tmp_path / "stable_explore"
    relative = _plant(root, "storage/read/relative.py", "from ...widgets import browser\n")
    relative_bare = _plant(root, "storage/read/relative_bare.py", "from ... import catalog\n")
    otherwise = _plant(
        root,
        "storage/format/otherwise.py",
        """\
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from stable_explore.dataset import CachedDataset  # types only: not counted
        else:
            from stable_explore.catalog import refs
        """,
    )
    negated = _plant(
        root,
        "schema/negated.py",
        """\
        import typing
        if not typing.TYPE_CHECKING:
            from stable_explore.storage.read import reader
        """,
    )
    dynamic = _plant(
        root,
        "catalog/dynamic.py",
        """\
        import importlib
        def later():
            return importlib.import_module("stable_explore.versioning.edits")
        """,
    )
    dynamic_relative = _plant(
        root,
        "dataset/dynamic_relative.py",
        """\
        from importlib import import_module
        widgets = import_module("..widgets", __package__)
        """,
    )
    found = {str(path.relative_to(root)): upward_imports(path, root) for path in _sources(root)}
    planted = [relative, relative_bare, otherwise, negated, dynamic, dynamic_relative]
    planted_names = [str(path.relative_to(root)) for path in planted]
    assert found["storage/read/relative.py"] == [
        "storage/read/relative.py:1 imports stable_explore.widgets (layer 10 > 2)",
        "storage/read/relative.py:1 imports stable_explore.widgets.browser (layer 10 > 2)",
    ]
    assert found["storage/read/relative_bare.py"] == [
        "storage/read/relative_bare.py:1 imports stable_explore.catalog (layer 4 > 2)"
    ]
    assert found["storage/format/otherwise.py"] == [
        "storage/format/otherwise.py:5 imports stable_explore.catalog (layer 4 > 2)",
        "storage/format/otherwise.py:5 imports stable_explore.catalog.refs (layer 4 > 2)",
    ]
    assert found["schema/negated.py"] == [
        "schema/negated.py:3 imports stable_explore.storage.read (layer 2 > 1)",
        "schema/negated.py:3 imports stable_explore.storage.read.reader (layer 2 > 1)",
    ]
    assert found["catalog/dynamic.py"] == ["catalog/dynamic.py:3 imports stable_explore.versioning.edits (layer 7 > 4)"]
    assert found["dataset/dynamic_relative.py"] == [
        "dataset/dynamic_relative.py:2 imports stable_explore.widgets (layer 10 > 5)"
    ]
    flagged = sorted(name for name, upward in found.items() if upward)
    assert flagged == sorted(planted_names)  # and no other file


def test_a_facade_imported_inside_the_package_is_caught(tmp_path: Path) -> None:
    root = tmp_path / "stable_explore"
    module = _plant(root, "api.py", "from stable_explore.cache import read_shard\n")
    assert upward_imports(module, root) == [
        "api.py:1 imports stable_explore.cache (a facade for users)",
        "api.py:1 imports stable_explore.cache.read_shard (a facade for users)",
    ]


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


def _module_file(name: str, root: Path = PACKAGE) -> Path | None:
    """The file of the package that ``stable_explore.a.b.Name`` is read from: the longest module path that exists."""
    parts = name.split(".")
    if parts[0] != root.name:
        return None
    for end in range(len(parts), 1, -1):
        base = root.joinpath(*parts[1:end])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def import_circles(folder: Path, root: Path = PACKAGE) -> list[list[str]]:
    """Groups of modules under ``folder`` that import each other in a loop, each sorted, as paths under ``root``.

    Every import counts: at the top, inside a function (a lazy one) and under ``if TYPE_CHECKING:``, since
    a loop of any of them means neither module can be read, changed or moved without the other.
    """
    modules = _sources(folder)
    members = set(modules)
    edges: dict[Path, set[Path]] = {}
    for module in modules:
        tree = ast.parse(module.read_text(encoding="utf-8"))
        targets = {_module_file(i, root) for i, _, _ in _imports(tree, _package_of(module, root), types=True)}
        edges[module] = {t for t in targets if t is not None and t != module and t in members}
    # Tarjan's strongly connected components, iteratively
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on_stack: set[Path] = set()
    circles: list[list[str]] = []
    for start in modules:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    circles.append(sorted(str(m.relative_to(root)) for m in group))
    return circles


@pytest.mark.parametrize("folder", ["storage", "compat"])
def test_no_two_modules_import_each_other_in_a_loop(folder: str) -> None:
    """A module's imports, lazy and for types too, never lead back to it: each can be read from the bottom up.

    storage/format's values used to: a spliced list took ``FileRef`` from ``sidecars``, which named the
    cell patches and content runs built on that list (``FileRef`` is now ``file_ref.py``'s); compat's
    dataset took the PyTorch iterable from ``_loading``, which took the dataset's type back (it now reads
    a ``PositionedRows``, what it uses of one).
    """
    assert import_circles(PACKAGE / folder) == []


def test_the_circle_check_sees_a_loop_of_lazy_and_type_only_imports(tmp_path: Path) -> None:
    root = tmp_path / "stable_explore"
    _plant(root, "storage/format/a.py", "from stable_explore.storage.format.b import B\n")
    _plant(
        root,
        "storage/format/b.py",
        """\
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from .c import C
        """,
    )
    _plant(root, "storage/format/c.py", "def later():\n    from stable_explore.storage.format import a\n")
    _plant(root, "storage/format/d.py", "from stable_explore.storage.format.a import A\n")
    assert import_circles(root / "storage", root) == [
        ["storage/format/a.py", "storage/format/b.py", "storage/format/c.py"]
    ]


# The parts of CachedDataset that make no lazy call up the layers: none of them is in a loop of imports.
DATASET_PARTS_WITHOUT_FACADES = [
    "dataset/_members.py",
    "dataset/_reading.py",
    "dataset/_rows.py",
    "dataset/_pickling.py",
    "dataset/_text_export.py",
    "dataset/_export_target.py",
    "dataset/video_probes.py",
]


def test_the_dataset_parts_without_a_facade_import_nothing_that_imports_them_back() -> None:
    """The mixins type a dataset they make as ``Self`` and the helpers take ``ds: DatasetMembers``.

    They used to import ``CachedDataset`` for their annotations, and ``CachedDataset`` imports them, so
    each stood in the one loop with the whole dataset package (and, through its lazy facades, io,
    versioning, display, signals and widgets). The mixins with a documented lazy facade (``LAZY_FACADES``:
    ``drop``, ``to_coco``, ``browse``, ``_repr_html_``...) are still in it, by that facade.
    """
    in_a_circle = {module for circle in import_circles(PACKAGE) for module in circle}
    assert [part for part in DATASET_PARTS_WITHOUT_FACADES if part in in_a_circle] == []
