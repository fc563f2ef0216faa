"""The docs keep up with the code: every public name, command and notebook has its place in docs/.

The docs build itself (Sphinx, warnings as errors) runs in .ci/run; these checks are the cheap half that
needs no Sphinx.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import stable_explore

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("name", sorted(set(stable_explore.__all__) - {"__version__"}))
def test_the_api_reference_documents_every_public_name(name: str) -> None:
    api = (DOCS / "api.md").read_text(encoding="utf-8")
    assert re.search(rf"^\.\. auto\w+:: stable_explore\.{re.escape(name)}$", api, re.MULTILINE), (
        f"docs/api.md has no autodoc entry for stable_explore.{name}"
    )


def test_the_command_line_page_names_every_command() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "stable_explore.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    choices = re.search(r"\{([a-z,-]+)\}", shown)
    assert choices is not None, shown
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    missing = [c for c in choices[1].split(",") if f"`stable-explore {c}" not in page]
    assert not missing, f"docs/cli.md does not describe: {missing}"


def test_the_command_line_page_shows_the_help_the_command_prints() -> None:
    """docs/cli.md copies `stable-explore --help` (80 columns): a changed help line must change the page too."""
    import os

    shown = subprocess.run(
        [sys.executable, "-m", "stable_explore.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "80"},
    ).stdout
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    block = re.search(r"^```text\n(.*?)^```$", page, re.MULTILINE | re.DOTALL)
    assert block is not None, "docs/cli.md has no ```text block of the help"
    assert block[1] == shown
    version = subprocess.run(
        [sys.executable, "-m", "stable_explore.cli", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert version == f"stable-explore {stable_explore.__version__}\n"


def test_every_notebook_is_a_page() -> None:
    notebooks = sorted(p.stem for p in (DOCS.parent / "notebooks").glob("*.ipynb"))
    listed = re.findall(r"^notebooks/(\S+)$", (DOCS / "examples.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert listed == notebooks


def test_every_line_of_getting_started_runs(home_ipython: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The page's code, block by block, in a real IPython shell with the magic: a newcomer can paste it all."""
    from IPython.core.interactiveshell import InteractiveShell

    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```$", page, re.MULTILINE | re.DOTALL)
    assert len(blocks) >= 4, "the page's code blocks were not found"
    shell = InteractiveShell.instance()
    for block in blocks:
        result = shell.run_cell(block)
        assert result.success, f"this block of getting-started.md failed:\n{block}\n{capsys.readouterr()}"
    names = shell.user_ns
    assert names["ds"].build_info == "reused: same source, arguments and features"
    assert len(names["clean"]) == len(names["digits"]) - 2
    diff = names["se"].compare(names["digits"], names["clean"])
    assert (sorted(diff.rows.removed), list(diff.rows.changed)) == (["digit-0003", "digit-0017"], ["digit-0044"])
    assert names["clean"][42]["label"] == 1  # row 44 of the parent, two rows dropped before it: now "one"
    # the page's comment on the comparison names the relabel the comparison reports
    said = re.search(r"^se\.compare\(digits, clean\)  # -2 rows, 1 relabelled \((\w+) -> (\w+)\)", page, re.MULTILINE)
    assert said is not None, "getting-started.md no longer comments its se.compare line"
    assert f"label: {said[1]}->{said[2]} x1" in diff.summary(), (said[0], diff.summary())


@pytest.fixture
def home_ipython(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private home and working folder for code a page runs."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_the_magic_page_lists_every_option() -> None:
    from IPython.core.magic_arguments import construct_parser

    from stable_explore.magic import StableMagics

    parser = construct_parser(StableMagics.stable_cache)
    options = {s for action in parser._actions for s in action.option_strings if s.startswith("--")} - {"--help"}
    page = (DOCS / "magic.md").read_text(encoding="utf-8")
    missing = sorted(o for o in options if f"| `{o}" not in page)
    assert not missing, f"docs/magic.md's options table does not list: {missing}"


def test_the_lab_extra_installs_every_app_the_readme_says_works() -> None:
    """`pip install -e '.[lab]'` must bring JupyterLab and Notebook 7: the README names both."""
    import tomllib

    project = tomllib.loads((DOCS.parent / "pyproject.toml").read_text())["project"]
    lab = {re.split(r"[<>=\[ ]", requirement)[0] for requirement in project["optional-dependencies"]["lab"]}
    readme = (DOCS.parent / "README.md").read_text()
    assert "Notebook 7" in readme
    assert {"jupyterlab", "notebook", "ipykernel", "anywidget"} <= lab


def test_every_screenshot_is_used_in_the_docs_with_alt_text() -> None:
    shots = sorted(p.name for p in (DOCS / "_static" / "screenshots").glob("*.png"))
    assert shots
    pages = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md"))
    unused = [name for name in shots if f"_static/screenshots/{name}" not in pages]
    assert not unused, f"screenshots no page shows: {unused}"
    for image in re.findall(r"```\{image\} _static/screenshots/\S+\n(?::\w+:.*\n)*", pages):
        assert re.search(r"^:alt: \S", image, re.MULTILINE), f"no alt text: {image}"


def test_notebook_pages_are_clean_copies(tmp_path: Path) -> None:
    """A notebook a user ran and saved keeps its outputs in notebooks/; its docs page never shows them."""
    import json

    sys.path.insert(0, str(DOCS))
    from notebook_pages import copy_notebook_pages

    source, pages = tmp_path / "notebooks", tmp_path / "pages"
    source.mkdir()
    saved = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": 3,
                "metadata": {"execution": {"iopub.status.busy": "2026-01-01"}},
                "outputs": [{"output_type": "stream", "name": "stdout", "text": "/home/alice/secret-data\n"}],
                "source": "print(path)",
            }
        ],
        "metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": {}}}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (source / "01_mine.ipynb").write_text(json.dumps(saved))
    (pages / "00_removed.ipynb").parent.mkdir()
    (pages / "00_removed.ipynb").write_text("{}")
    assert [p.name for p in copy_notebook_pages(source, pages)] == ["01_mine.ipynb"]
    page = (pages / "01_mine.ipynb").read_text()
    assert "alice" not in page
    assert "widget-state" not in page
    cell = json.loads(page)["cells"][0]
    assert (cell["outputs"], cell["execution_count"], cell["source"]) == ([], None, "print(path)")
    assert not (pages / "00_removed.ipynb").exists()


def test_the_readme_tour_runs_as_written(home_ipython: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's ten-line tour, pasted into a real IPython shell over a folder of cat and dog photos."""
    from IPython.core.interactiveshell import InteractiveShell
    from PIL import Image as PILImage

    pets = home_ipython.parent / "data" / "pets"
    pets.mkdir(parents=True)
    for i in range(60):
        kind = ("cat", "dog")[i % 2]
        PILImage.new("RGB", (24, 16), (4 * i, 80 if kind == "cat" else 160, 30)).save(pets / f"{kind}_{i:03d}.jpg")
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    tour = re.search(r"^## A ten-line tour\n\n```python\n(.*?)^```$", readme, re.MULTILINE | re.DOTALL)
    assert tour is not None, "the README's tour was not found"
    shell = InteractiveShell.instance()
    result = shell.run_cell(tour[1])
    assert result.success, f"the README's tour failed:\n{capsys.readouterr()}"
    names = shell.user_ns
    assert len(names["clean"]) == len(names["pets"]) - 2
    assert names["se"].load("pets@clean").version == names["clean"].version


def test_the_pages_say_how_latest_moves_back(tmp_path: Path) -> None:
    """cleaning.md said latest is set only by builds and saves; se.tag(old, "latest") moves it (issue 11)."""
    import stable_explore as se

    features = se.Features(x=se.Value("int64"))
    old = se.build([{"x": 1}], features, name="n", home=tmp_path, progress=False)
    se.build([{"x": 2}], features, name="n", home=tmp_path, progress=False)
    se.tag(f"n@{old.version[:6]}", "latest", home=tmp_path)  # what both pages show
    assert se.load("n", home=tmp_path).version == old.version
    cleaning = (DOCS / "cleaning.md").read_text(encoding="utf-8")
    assert "set only by builds and saves" not in cleaning
    assert 'se.tag("pets@1a2b", "latest")' in cleaning
    assert 'se.tag("pets@1a2b", "latest")' in (DOCS.parent / "README.md").read_text(encoding="utf-8")


def test_the_pytorch_loader_on_the_exporting_page_runs(home_ipython: Path) -> None:
    """docs/exporting.md's first DataLoader line, as written, over images of one size (torch is in the test extra)."""
    pytest.importorskip("torch", reason="torch is installed by .ci/run")
    import numpy as np

    import stable_explore as se

    features = se.Features(image=se.Image(), label=se.ClassLabel(names=["cat", "dog"]))
    rows = [{"image": np.full((6, 5, 3), i, dtype=np.uint8), "label": i % 2} for i in range(130)]
    pets = se.build(rows, features, name="pets", progress=False)
    page = (DOCS / "exporting.md").read_text(encoding="utf-8")
    block = re.search(r"^## PyTorch\n.*?^```python\n(.*?)^```$", page, re.MULTILINE | re.DOTALL)
    assert block is not None
    first = [line for line in block[1].splitlines() if line.startswith(("from ", "loader = ", "batch = "))][:3]
    names: dict[str, object] = {"pets": pets}
    exec("\n".join(first).replace("num_workers=4", "num_workers=0"), names)
    batch = names["batch"]
    assert isinstance(batch, dict)
    assert tuple(batch["image"].shape) == (64, 3, 6, 5)
    assert tuple(batch["label"].shape) == (64,)


def test_the_labels_page_example_runs_and_prints_what_it_says(capsys: pytest.CaptureFixture[str]) -> None:
    page = (DOCS / "labels.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"^```python\n(.*?)^```$", page, re.MULTILINE | re.DOTALL)
    exec(compile(code, "docs/labels.md", "exec"), {})  # our own page's example
    printed = capsys.readouterr().out.splitlines()
    said = [line.split("# ", 1)[1] for line in code.splitlines() if line.startswith("print(") and "# " in line]
    for line, comment in zip(printed, said, strict=True):
        assert comment.startswith(line), (line, comment)


def test_the_video_page_example_runs_and_prints_what_it_says(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("av")
    pytest.importorskip("torch")
    page = (DOCS / "video.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"^```python\n(.*?)^```$", page, re.MULTILINE | re.DOTALL)
    exec(compile(code, "docs/video.md", "exec"), {})  # our own page's example
    printed = capsys.readouterr().out.splitlines()
    said = [line.split("# ", 1)[1] for line in code.splitlines() if line.startswith("print(") and "# " in line]
    assert len(printed) == len(said) == 4
    for line, comment in zip(printed, said, strict=True):
        assert line == comment


def test_ci_pages_are_the_notebooks_the_tests_executed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CI runs each notebook once (tests/test_notebooks.py); the docs pages show that run's outputs, and a
    notebook with no executed copy, or a copy of other code, fails the build instead of showing a blank page."""
    import json

    sys.path.insert(0, str(DOCS))
    from notebook_pages import EXECUTED_ENV, copy_executed_pages, executed_folder

    from tests.test_notebooks import Ran, keep_executed

    nbformat = pytest.importorskip("nbformat")
    source, executed, pages = tmp_path / "notebooks", tmp_path / "executed", tmp_path / "pages"
    source.mkdir()
    for name in ("01_a.ipynb", "02_b.ipynb"):
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"print({name!r})")]), source / name)

    monkeypatch.delenv(EXECUTED_ENV, raising=False)
    assert executed_folder() is None  # a plain local build executes the notebooks itself
    ran = nbformat.read(source / "01_a.ipynb", as_version=4)
    assert keep_executed("01_a.ipynb", Ran(ran.cells, tmp_path, tmp_path, ran)) is None  # nothing written
    monkeypatch.setenv(EXECUTED_ENV, str(executed))
    assert executed_folder() == executed

    # the test writes a notebook it ran, with its outputs and timings, only once it passed
    ran.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="01_a.ipynb\n")]
    ran.cells[0].metadata["execution"] = {"iopub.status.busy": "2026-12-01T23:00:00"}
    assert keep_executed("01_a.ipynb", Ran(ran.cells, tmp_path, tmp_path, ran)) == executed / "01_a.ipynb"
    with pytest.raises(FileNotFoundError) as missing:
        copy_executed_pages(source, executed, pages)
    said = str(missing.value)
    assert "notebooks/02_b.ipynb has no executed copy" in said
    assert EXECUTED_ENV in said
    assert "test_notebook_runs_end_to_end[02_b.ipynb]" in said

    other = nbformat.read(source / "02_b.ipynb", as_version=4)
    other.cells[0].source = "print('an older version of the cell')"
    nbformat.write(other, executed / "02_b.ipynb")
    with pytest.raises(ValueError, match=r"02_b.ipynb: its code cells differ from notebooks/02_b.ipynb's"):
        copy_executed_pages(source, executed, pages)

    nbformat.write(nbformat.read(source / "02_b.ipynb", as_version=4), executed / "02_b.ipynb")
    assert [p.name for p in copy_executed_pages(source, executed, pages)] == ["01_a.ipynb", "02_b.ipynb"]
    cell = json.loads((pages / "01_a.ipynb").read_text(encoding="utf-8"))["cells"][0]
    assert "".join(cell["outputs"][0]["text"]) == "01_a.ipynb\n"  # the run's output is on the page
    assert "execution" not in cell["metadata"]
