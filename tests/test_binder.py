"""binder/ asks for what the package itself declares, and gives the notebooks everything they import.

No network: requirements are compared with pyproject.toml, and notebook imports with the distributions
installed here (which the same pyproject installed).
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
EXTRAS: dict[str, list[str]] = PROJECT.get("optional-dependencies", {})
OPTIONAL_IN_NOTEBOOKS = {"torch"}  # notebook 04 prints a line and skips its loader cells without it


def binder_requirements() -> list[str]:
    lines = (BINDER / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]


def local_extras(line: str) -> set[str] | None:
    """The extras of a requirement on this repository (``.`` or ``.[a,b]``), or None for any other line."""
    match = re.fullmatch(r"(?:-e\s+)?\.(?:\[([^\]]*)\])?", line)
    if match is None:
        return None
    return {canonicalize_name(e.strip()) for e in (match[1] or "").split(",") if e.strip()}


def declared(extras: set[str]) -> dict[str, SpecifierSet]:
    """Name -> specifier of every requirement the package declares for these extras (and always)."""
    found: dict[str, SpecifierSet] = {}
    for text in [*PROJECT["dependencies"], *(r for e in extras for r in EXTRAS.get(e, []))]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        found[name] = found.get(name, SpecifierSet()) & requirement.specifier
    return found


def compatible(a: SpecifierSet, b: SpecifierSet) -> bool:
    """Whether some version satisfies both: tried at every version either one names, and just beside it."""
    named = {Version(spec.version.replace(".*", "")) for spec in [*a, *b] if spec.version.replace(".*", "")}
    candidates = set(named)
    for version in named:
        release = list(version.release) + [0] * (3 - len(version.release))
        candidates.add(Version(f"{release[0]}.{release[1]}.{release[2] + 1}"))
        candidates.add(Version(f"{release[0]}.{release[1] + 1}"))
        candidates.add(Version(f"{release[0] + 1}"))
    if not named:
        return True
    return any(a.contains(v, prereleases=True) and b.contains(v, prereleases=True) for v in candidates)


def test_the_compatibility_check_itself() -> None:
    assert compatible(SpecifierSet(">=1.3"), SpecifierSet("==1.5.2"))
    assert compatible(SpecifierSet(">=4"), SpecifierSet("<5,>=4.2"))
    assert compatible(SpecifierSet(""), SpecifierSet("==2.0"))
    assert not compatible(SpecifierSet(">=1.3"), SpecifierSet("==1.2"))
    assert not compatible(SpecifierSet(">=14"), SpecifierSet("<14"))


def test_binder_installs_the_package_with_extras_it_declares() -> None:
    lines = binder_requirements()
    local = [extras for extras in map(local_extras, lines) if extras is not None]
    assert len(local) == 1, "binder/requirements.txt must install this repository exactly once ('.[lab]')"
    (extras,) = local
    unknown = extras - {canonicalize_name(e) for e in EXTRAS}
    assert not unknown, f"binder asks for extras {sorted(unknown)} that pyproject.toml does not define"
    assert "lab" in extras, "the notebooks need the lab extra (JupyterLab, widgets, scikit-learn)"


def test_every_other_binder_requirement_agrees_with_pyproject() -> None:
    lines = binder_requirements()
    (extras,) = [e for e in map(local_extras, lines) if e is not None]
    ours = declared(extras)
    for line in lines:
        if local_extras(line) is not None:
            continue
        requirement = Requirement(line)  # raises on anything pip would not read as a requirement
        name = canonicalize_name(requirement.name)
        assert name != canonicalize_name(PROJECT["name"]), f"{line!r} would install another copy of the package"
        if name in ours:
            assert compatible(ours[name], requirement.specifier), (
                f"binder wants {line!r} but pyproject.toml declares {name}{ours[name]}"
            )


def test_runtime_is_a_python_the_package_supports() -> None:
    runtime = (BINDER / "runtime.txt").read_text(encoding="utf-8").strip()
    match = re.fullmatch(r"python-(\d+\.\d+)", runtime)
    assert match is not None, f"runtime.txt should read python-X.Y, not {runtime!r}"
    assert SpecifierSet(PROJECT["requires-python"]).contains(Version(match[1]))


def test_nothing_in_binder_overrides_requirements_txt() -> None:
    # repo2docker prefers a Dockerfile, and builds environment.yml with conda instead of pip
    overriding = {"Dockerfile", "environment.yml", "environment.yaml", "Pipfile", "Pipfile.lock", "setup.py"}
    assert not overriding & {p.name for p in BINDER.iterdir()}


def notebook_imports(path: Path) -> set[str]:
    """Top-level modules a notebook imports (magics and shell lines are not Python)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    modules: set[str] = set()
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        python = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(python)):
            if isinstance(node, ast.Import):
                modules.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules.add(node.module.partition(".")[0])
    return modules


@pytest.mark.parametrize("notebook", sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb")))
def test_binder_provides_what_each_notebook_imports(notebook: str) -> None:
    (extras,) = [e for e in map(local_extras, binder_requirements()) if e is not None]
    provided = set(declared(extras)) | {canonicalize_name(PROJECT["name"])}
    provided |= {canonicalize_name(Requirement(r).name) for r in binder_requirements() if local_extras(r) is None}
    distributions = importlib.metadata.packages_distributions()
    for module in sorted(notebook_imports(ROOT / "notebooks" / notebook) - sys.stdlib_module_names):
        if module in OPTIONAL_IN_NOTEBOOKS:
            continue
        if module == "stable_explore":
            continue
        names = {canonicalize_name(d) for d in distributions.get(module, [])}
        assert names, f"{notebook} imports {module}, which no installed distribution provides"
        assert names & provided, f"{notebook} imports {module} ({sorted(names)}), which binder does not install"


def test_binder_opens_the_quickstart() -> None:
    assert (ROOT / "notebooks" / "01_quickstart.ipynb").is_file()
    assert "urlpath=lab/tree/notebooks/01_quickstart.ipynb" in (BINDER / "README.md").read_text(encoding="utf-8")
