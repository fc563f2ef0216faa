"""``import stable_explore`` stays cheap (issue 39): the magic, the CLI and each DataLoader worker pay for it.

The package root and ``stable_explore.api`` import each public name when it is first used (PEP 562).
These tests assert which modules a bare import brings in, never a time: the timings are in
``benchmarks/bench_import.py``.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

import stable_explore
import stable_explore.api
import stable_explore.catalog
import stable_explore.dataset
import stable_explore.display

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "stable_explore"

# optional or heavy: a bare import must import none of them
HEAVY = [
    "pandas",
    "IPython",
    "ipywidgets",
    "anywidget",
    "traitlets",
    "tqdm",
    "PIL",
    "av",
    "torch",
    "lance",
    "datasets",
    "pyarrow",
    "pyarrow.compute",
    "numpy",
    "numpy.linalg",
    "argparse",
    "socket",
    "concurrent.futures",
]


def _timed_imports(stderr: str) -> set[str]:
    """The modules ``python -X importtime`` reported importing, from its lines on stderr."""
    timed = set()
    for line in stderr.splitlines():
        fields = line.split("|")
        if line.startswith("import time:") and len(fields) == 3 and fields[2].strip() != "imported package":
            timed.add(fields[2].strip())
    return timed


def _imported_by(code: str) -> set[str]:
    """The modules a fresh process of this checkout imports running ``code``: ``-X importtime``'s and sys.modules."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    listing = f"{code}; import sys; print(*sorted(sys.modules))"
    argv = [sys.executable, "-X", "importtime", "-c", listing]
    run = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    timed = _timed_imports(run.stderr)
    assert "stable_explore" in timed, run.stderr  # the parse reads -X importtime's lines
    return timed | set(run.stdout.split())


def test_a_bare_import_imports_no_heavy_module_and_only_the_errors_of_ours() -> None:
    imported = _imported_by("import stable_explore")
    assert sorted(set(HEAVY) & imported) == []
    ours = {name for name in imported if name.startswith("stable_explore")}
    assert ours == {"stable_explore", "stable_explore._lazy", "stable_explore.errors"}


def test_a_name_imports_its_own_module_only() -> None:
    """``se.build`` brings in the build path, not the labels' readers, Hugging Face's converters or the UI."""
    imported = _imported_by("import stable_explore as se; se.build, se.load")
    assert "stable_explore.api.building" in imported
    unwanted = ["stable_explore.api.labels", "stable_explore.api.interop", "stable_explore.widgets", "pandas"]
    assert sorted(set(unwanted) & imported) == []
    assert sorted({"IPython", "anywidget", "ipywidgets", "PIL", "torch", "datasets"} & imported) == []
    # kernels and the CLI's parser, imported where a call needs them: a sort, a filter, the command line
    assert sorted({"pyarrow.compute", "argparse"} & imported) == []


def test_every_public_name_is_there_and_listed() -> None:
    names = set(stable_explore.__all__) - {"__version__"}
    assert names <= set(dir(stable_explore))
    for name in sorted(names):
        value = getattr(stable_explore, name)
        assert getattr(value, "__name__", name) == name
    assert set(stable_explore.api.__all__) <= set(dir(stable_explore.api))
    namespace: dict[str, object] = {}
    exec("from stable_explore import *", namespace)
    assert names <= set(namespace)
    from stable_explore import build, load

    assert build is stable_explore.api.build
    assert load is stable_explore.api.building.load


def test_the_sub_packages_are_reached_from_the_package_as_before() -> None:
    """``se.display.show(...)`` (docs/labels.md), ``se.catalog.Catalog``: a fresh process reaches them on first use."""
    code = (
        "import stable_explore as se; import sys; "
        "assert 'stable_explore.display' not in sys.modules; "
        "print(se.display.show.__name__, se.catalog.Catalog.__name__, se.signals.__name__, 'display' in dir(se))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["show", "Catalog", "stable_explore.signals", "True"]


def test_a_misspelt_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="'stable_explore' has no attribute 'lod'"):
        _ = stable_explore.lod  # type: ignore[attr-defined]
    with pytest.raises(ImportError, match="cannot import name 'buidl'"):
        exec("from stable_explore.api import buidl")
    assert not hasattr(stable_explore, "nothing_here")


def _type_checking_imports(init: Path) -> dict[str, str]:
    """``{name: module}`` of the imports under ``if TYPE_CHECKING:`` of a package's ``__init__``."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                found.update({alias.asname or alias.name: statement.module or "" for alias in statement.names})
    return found


LAZY_PACKAGES = [
    stable_explore,
    stable_explore.api,
    stable_explore.catalog,
    stable_explore.dataset,
    stable_explore.display,
]


@pytest.mark.parametrize("package", LAZY_PACKAGES, ids=lambda p: p.__name__)
def test_the_lazy_names_are_the_names_type_checkers_see(package: ModuleType) -> None:
    """The ``_LAZY`` table a package imports from at run time names what its ``if TYPE_CHECKING:`` imports."""
    init = Path(package.__file__)
    lazy = {name: importlib.util.resolve_name(module, package.__name__) for name, module in package._LAZY.items()}
    assert _type_checking_imports(init) == lazy
    eager = {name for name in package.__all__ if name in vars(package) and name not in lazy}
    assert set(package.__all__) == set(lazy) | eager


def test_the_lazy_table_check_sees_a_mismatch(tmp_path: Path) -> None:
    init = tmp_path / "__init__.py"
    init.write_text(
        textwrap.dedent(
            """\
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from pkg.a import one, two
            """
        )
    )
    assert _type_checking_imports(init) == {"one": "pkg.a", "two": "pkg.a"}
    assert _type_checking_imports(init) != {"one": "pkg.a"}


# what an entry point that builds nothing must not import: the Arrow stack, the frames, images and the UI
ENTRY_HEAVY = ["pyarrow", "numpy", "pandas", "PIL", "ipywidgets", "anywidget", "datasets", "torch", "lance"]


def _imported_by_command(argv: list[str], home: Path) -> tuple[set[str], str]:
    """The modules ``stable-explore ARGV`` imports in a fresh process (``-X importtime``), and what it printed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STABLE_EXPLORE_HOME": str(home)}
    script = "import sys; sys.argv[0] = 'stable-explore'; from stable_explore.cli import main; sys.exit(main())"
    command = [sys.executable, "-X", "importtime", "-c", script, *argv]  # as the installed script runs it
    run = subprocess.run(command, env=env, cwd=home, capture_output=True, text=True, check=True)
    timed = _timed_imports(run.stderr)
    assert "stable_explore.cli" in timed, run.stderr
    return timed, run.stdout


@pytest.mark.parametrize(
    "argv", [["--help"], ["build", "--help"], ["export", "--help"], ["ls", "--help"]], ids=" ".join
)
def test_the_command_lines_help_imports_no_arrow_frames_images_or_widgets(argv: list[str], tmp_path: Path) -> None:
    """``stable-explore --help`` built its parser after importing the catalog, pyarrow and numpy."""
    imported, out = _imported_by_command(argv, tmp_path)
    assert out.startswith("usage: stable-explore")
    assert sorted(set(ENTRY_HEAVY) & imported) == []
    ours = {name for name in imported if name.startswith("stable_explore.")}
    # the parser's names and help texts (build options, export formats, the home's variable), and nothing that reads
    assert not {"stable_explore.catalog.catalog", "stable_explore.catalog.options", "stable_explore.schema"} & ours
    assert not {name for name in ours if name.startswith(("stable_explore.storage.", "stable_explore.dataset."))} - {
        "stable_explore.dataset._formats",
        "stable_explore.dataset._members",
    }


def test_ls_of_a_home_reads_its_json_without_arrow_or_the_dataset(tmp_path: Path) -> None:
    """``stable-explore ls`` imported the whole catalog, the dataset, pyarrow and numpy to list a home."""
    imported, out = _imported_by_command(["ls"], tmp_path)
    assert out.startswith(f"datasets in {tmp_path}")
    assert sorted(set(ENTRY_HEAVY) & imported) == []
    unwanted = ["stable_explore.dataset.cached_dataset", "stable_explore.catalog.build", "stable_explore.schema"]
    assert sorted(set(unwanted) & imported) == []


LOAD_EXT = """
import sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
before = set(sys.modules)
shell.run_line_magic("load_ext", "stable_explore")
assert "stable_cache" in shell.magics_manager.magics["cell"], "the magics are registered"
print(*sorted(set(sys.modules) - before))
"""


def test_load_ext_imports_the_magic_and_not_the_build_path() -> None:
    """``%load_ext stable_explore`` imported the catalog, the dataset, the schema, pyarrow and numpy (~140 modules)."""
    pytest.importorskip("IPython")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", LOAD_EXT], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    imported = set(run.stdout.split())
    assert "stable_explore.magic" in imported
    assert sorted(set(ENTRY_HEAVY) & imported) == []
    ours = {name for name in imported if name.startswith("stable_explore")}
    # the magics' parsers (the build options' names and help texts), a name's check, the trimmed tracebacks
    assert ours == {
        "stable_explore",
        "stable_explore._frames",
        "stable_explore._lazy",
        "stable_explore.api",
        "stable_explore.api._user_errors",
        "stable_explore.catalog",
        "stable_explore.catalog.build_arguments",
        "stable_explore.catalog.names",
        "stable_explore.errors",
        "stable_explore.magic",
    }
