"""Every notebook in notebooks/ runs end to end, shows what its reader relies on, and is committed clean.

Each notebook runs once, in a real kernel (nbclient), with ``HOME`` and ``TMPDIR`` pointed into ``tmp_path``;
then the checks for that notebook read its outputs. A notebook without checks here fails, so a new notebook
comes with its assertions. With ``$STABLE_EXPLORE_EXECUTED_NOTEBOOKS`` set (``.ci/run`` sets it), each notebook
that ran and passed its checks is written to that folder, executed, and the docs build makes its pages of
those instead of executing every notebook a second time (docs/notebook_pages.py).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import platform
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
ALL = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
WIDGET = "application/vnd.jupyter.widget-view+json"

# A first cell that makes the kernel behave as if packages were not installed: the import system finds no
# such module, so `import torch` raises ModuleNotFoundError and nothing sees a half-present package.
HIDE = """\
import sys


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {names!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)


sys.meta_path.insert(0, NotInstalled())
"""


@dataclass
class Ran:
    """An executed notebook: its cells with outputs, and where its kernel's home and temp dir were."""

    cells: list[Any]
    home: Path
    tmp: Path
    notebook: Any

    def cell(self, marker: str) -> Any:
        """The one code cell whose source contains ``marker``."""
        found = [c for c in self.cells if c.cell_type == "code" and marker in c.source]
        assert len(found) == 1, f"{len(found)} code cells contain {marker!r}"
        return found[0]

    def stdout(self, marker: str | None = None) -> str:
        """Printed text of one cell (or of every cell)."""
        cells = [self.cell(marker)] if marker is not None else [c for c in self.cells if c.cell_type == "code"]
        return "".join(o.get("text", "") for c in cells for o in c.outputs if o.get("name") == "stdout")

    def result(self, marker: str) -> dict[str, Any]:
        """The mime bundle a cell displayed as its value."""
        results = [o for o in self.cell(marker).outputs if o.output_type == "execute_result"]
        assert len(results) == 1, f"the cell with {marker!r} has {len(results)} results"
        return dict(results[0]["data"])

    def displayed(self, marker: str) -> list[dict[str, Any]]:
        """The mime bundles a cell displayed (the shard browser shows a static snapshot, then the widget)."""
        return [dict(o["data"]) for o in self.cell(marker).outputs if "data" in o]


def run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, hide: tuple[str, ...] = ()) -> Ran:
    """Execute a notebook in a fresh kernel; ``hide`` makes importing those modules fail, as if not installed."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    home, tmp = tmp_path / "user-home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    monkeypatch.setenv("HOME", str(home))  # whatever a notebook writes under ~ lands here, where we look
    # and its tempfile.mkdtemp() here, through a short link: multiprocessing puts its AF_UNIX sockets under
    # $TMPDIR (pymp-*/listener-*), whose path may not pass 107 characters. Under pytest-xdist tmp_path is
    # 10 longer (popen-gwN/), and the DataLoader workers of notebook 04 could not hand their batches back:
    # the cell hung until the 300 s timeout.
    short = Path(tempfile.mkdtemp(prefix="se-nb-", dir="/tmp" if Path("/tmp").is_dir() else None))
    link = short / "t"
    link.symlink_to(tmp, target_is_directory=True)
    monkeypatch.setenv("TMPDIR", str(link))
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    if hide:
        notebook.cells.insert(0, nbformat.v4.new_code_cell(HIDE.format(names=set(hide))))
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    try:
        client.execute()  # raises CellExecutionError, with the traceback, if any cell fails
    finally:
        shutil.rmtree(short)  # the link only (rmtree never follows it)
    cells = notebook.cells[1:] if hide else notebook.cells
    stderr = "".join(
        o.get("text", "") for c in cells if c.cell_type == "code" for o in c.outputs if o.get("name") == "stderr"
    )
    assert "Warning" not in stderr, stderr
    assert not (home / ".cache" / "stable-explore").exists(), "the notebook wrote into ~/.cache/stable-explore"
    return Ran(cells, home, tmp, notebook)


def keep_executed(name: str, ran: Ran) -> Path | None:
    """Write the executed notebook to ``$STABLE_EXPLORE_EXECUTED_NOTEBOOKS/name`` when that is set (CI's docs
    pages are made of it); the path written, or None."""
    folder = os.environ.get("STABLE_EXPLORE_EXECUTED_NOTEBOOKS", "").strip()
    if not folder:
        return None
    nbformat = pytest.importorskip("nbformat")
    path = Path(folder) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(ran.notebook, path)
    return path


# --- what each notebook's reader relies on ----------------------------------------------------------


def check_quickstart(ran: Ran) -> None:
    builds = [c for c in ran.cells if c.cell_type == "code" and c.source.startswith("%stable_cache digits")]
    assert len(builds) == 2  # the same cell twice: a build, then a cache hit
    printed = ["".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout") for cell in builds]
    assert "built: first build of digits" in printed[0]
    assert "reused: same source, arguments and features" in printed[1]
    snapshot, widget = ran.displayed("browser = digits.browse(")
    assert WIDGET in widget
    assert "se-static" in snapshot["text/html"]  # the static card, for viewers without a kernel
    assert "saved: drop 2, relabel 1" in ran.stdout("save(message=")
    assert "+0 -2 ~1 rows; label: seven->one x1" in ran.stdout("se.compare(digits, clean)")
    assert "digests match" in ran.result("se.verify(clean)")["text/plain"]
    # the notebook's own line put the catalog in a temp dir, whatever STABLE_EXPLORE_HOME says
    catalogs = list(ran.tmp.glob("stable-explore-*/digits/versions"))
    assert len(catalogs) == 1, "the quickstart did not make its own temporary catalog"


def check_cleaning_session(ran: Ran) -> None:
    assert "built: first build of digits" in ran.stdout("ds = se.build(")
    assert "text/html" in ran.result("ds = se.build(")  # the dataset card
    snapshot, widget = ran.displayed("browser = ds.browse(")
    assert WIDGET in widget
    assert "text/html" in snapshot
    sevens = ran.stdout('browser.label_filter = [NAMES.index("seven")]')
    assert re.search(r"^\d+ sevens on \d+ page\(s\)$", sevens, re.MULTILINE)
    flagged = ran.stdout("browser.flag_selection()")
    assert "flagged:  ['digit-0007', 'digit-0017', 'digit-0027']" in flagged
    assert "pending: drop 3\n" in ran.stdout("browser.drop_flagged()")
    assert "pending: drop 3, relabel 2" in ran.stdout("browser.relabel_selection(")
    saved = ran.stdout("clean = browser.save(")
    assert "saved: drop 3, relabel 2;" in saved
    # the browser's status line: one short line
    assert re.search(r"^saved digits@[0-9a-f]{16}: 1,794 rows \(drop 3, relabel 2\)$", saved, re.MULTILINE)
    versions = ran.result("clean = browser.save(")["text/plain"]
    assert "drop three sevens, relabel two ones as sevens" in versions
    assert "+0 -3 ~2 rows; label: one->seven x2" in ran.stdout("diff = se.compare(ds, clean)")
    assert "text/html" in ran.result("diff = se.compare(ds, clean)")
    operations = ast.literal_eval(ran.result('clean.metadata["operations"]')["text/plain"])
    assert operations[0] == {"op": "drop", "keys": ["digit-0007", "digit-0017", "digit-0027"]}
    assert operations[1]["changes"] == [["digit-0001", "one", "seven"], ["digit-0011", "one", "seven"]]


def check_versions_and_diffs(ran: Ran) -> None:
    first = ran.stdout("raw = se.build(")
    assert "built: first build of digits" in first
    version = re.search(r"version id: ([0-9a-f]{16})", first)
    assert version is not None
    same = ran.stdout("hit = se.build(")
    assert "reused: same source, arguments and features" in same
    assert "(identical content: reusing the existing version)" in same
    assert "same version id: True" in same
    assert f"identical: True - identical (digits@{version[1]} == digits@{version[1]})" in same
    described = ran.stdout("described = se.build(")
    assert "rebuilt: description: 'the first 600 digits' -> 'the first 600 scikit-learn digits'" in described
    assert "+0 -0 ~0 rows; metadata: description" in described
    lineage = ran.stdout("while version is not None").splitlines()
    assert [line.split(" - ")[1] for line in lineage] == [
        "zero the ink of the first row",
        "drop two, row 10 is a seven",
        "built from the generator",
    ]
    assert lineage[-1].startswith(version[1])
    loaded = ran.stdout('se.load("digits@nope")')
    assert [line.split()[-1] for line in loaded.splitlines()[:3]] == ["True", "True", "True"]
    assert "error: digits has no version or tag 'nope'" in loaded
    changed = ran.stdout('diff = se.compare("digits@raw", "digits")')
    assert "+0 -2 ~2 rows; label: zero->seven x1" in changed
    assert "removed: ['digit-0000', 'digit-0001']" in changed
    assert "'digit-0010': {'label': ('zero', 'seven')}" in changed
    assert "text/html" in ran.result('diff = se.compare("digits@raw", "digits")')
    collected = ran.stdout('se.gc("digits", keep=1)')
    freed = re.search(r"freed ([\d,]+) bytes", collected)
    assert freed is not None
    assert int(freed[1].replace(",", "")) > 0
    assert "described still there: False" in collected
    verified = ran.stdout('se.verify("digits@clean")')
    assert "xxh3_128 digests match" in verified
    assert re.search(
        r"damaged: \S+/damaged/shard-\d{5}\.arrow: content digest .* does not match the recorded", verified
    )


def check_pytorch_dataloader(ran: Ran) -> None:
    built = ran.stdout("ds = se.build(")
    assert "built: first build of crops" in built
    pickled = re.search(r"a pickled dataset is (\d+) bytes", built)
    assert pickled is not None
    assert int(pickled[1]) < 1000  # paths and row numbers only, never the data
    assert "96 training rows, 24 validation rows" in ran.stdout("train, valid = ")
    if importlib.util.find_spec("torch") is None:
        assert "PyTorch is not installed" in ran.stdout()
        return
    epoch = ran.stdout("loader = DataLoader(")
    assert "one epoch over 96 rows with 2 workers, in batches of [32, 32, 32]" in epoch
    assert "images (32, 3, 64, 64) torch.float32" in epoch
    counted = ran.stdout("counts = torch.zeros(")
    by_loader = re.search(r"validation rows per class: (\{.*\})", counted)
    by_cache = re.search(r"label counts from the cache: (\{.*\})", counted)
    assert by_loader is not None
    assert by_cache is not None
    assert ast.literal_eval(by_loader[1]) == ast.literal_eval(by_cache[1])
    assert sum(ast.literal_eval(by_loader[1]).values()) == 24


SKIPPED_WITHOUT_SERVER = "No object store is configured"


def check_workgroup(ran: Ran) -> None:
    printed = ran.stdout()
    if SKIPPED_WITHOUT_SERVER in printed:
        assert printed.strip().splitlines() == [
            "No object store is configured (AWS_ENDPOINT_URL and AWS_ACCESS_KEY_ID are not set): "
            "the cells below are skipped."
        ]
        return
    assert "built: first build of shapes" in ran.stdout("raw = se.build(")
    opened = ran.stdout('ds = se.load(f"{TEAM}/shapes")')
    assert re.search(r"opened shapes@[0-9a-f]{16}: 400 rows; the first row's label is circle", opened)
    fetched = re.search(r"fetched ([\d,]+) bytes of ([\d,]+)", opened)
    assert fetched is not None
    assert 0 < int(fetched[1].replace(",", "")) <= int(fetched[2].replace(",", ""))
    assert any(WIDGET in shown for shown in ran.displayed('ds = se.load(f"{TEAM}/shapes")'))
    cleaned = ran.stdout("clean = ds.relabel(")
    assert "saved: drop 1, relabel 1" in cleaned
    assert "+0 -1 ~1 rows; label: square->circle x1" in cleaned
    listed = ran.stdout('se.versions("shapes", home=TEAM)')
    assert "row 3 is a circle; 5 is blurry" in listed
    assert "digests match" in listed
    assert "gc freed 0 bytes" in listed
    assert "same version: True" in ran.stdout("mine = se.pull(")


def check_find_what_to_clean(ran: Ran) -> None:
    assert "1,962 rows; planted: 40 exact copies, 120 near copies, 60 flipped labels" in ran.stdout("truth = planted")
    assert "exact duplicates: 80 rows in 40 groups; planted copies found: 40 of 40" in ran.stdout("exact_duplicates(")
    near = ran.stdout("hashes = signals.perceptual_hashes(ds)")
    strict = re.search(r"threshold 2: .*found resize (\d+)%, jpeg (\d+)%.*; (\d+)% of linked pairs", near)
    assert strict is not None
    assert min(int(v) for v in strict.groups()) >= 90  # resized and JPEG copies found, linked pairs mostly copies
    assert "blurred rows among the 10 lowest blur scores: 10 of 10" in ran.stdout("signals.image_stats(ds)")
    assert re.search(r"noise images among the 5 farthest rows: [45] of 5", ran.stdout("embedding_outliers("))
    found = {
        name: (int(a), int(b))
        for name, a, b in re.findall(
            r"(confident learning|neighbour votes): \d+ suspected, (\d+) of them flipped \((\d+)%",
            ran.stdout("issues = signals.label_issues("),
        )
    }
    assert found["confident learning"][1] >= 65
    assert found["neighbour votes"][1] >= 90
    assert WIDGET in ran.displayed("panel = IssuesPanel(")[-1]
    assert WIDGET in ran.displayed("# the grid the panel points at")[-1]
    saved = re.search(
        r"dropped (\d+) copies, relabelled (\d+) rows: 1,962 -> ([\d,]+) rows", ran.stdout("extra_copies(")
    )
    assert saved is not None
    assert int(saved[1]) >= 40
    assert int(saved[3].replace(",", "")) == 1962 - int(saved[1])
    assert f"+0 -{saved[1]} ~{saved[2]} rows" in ran.stdout("diff = se.compare(ds, clean)")
    assert "planted copies dropped: 40 of 40 exact" in ran.stdout("relabels that restore")


def check_boxes(ran: Ran) -> None:
    assert "8 images, 9 boxes, category ids [1, 3, 7]" in ran.stdout('instances.json").write_text')
    assert "[1, 2, 3, 4, 5, 6, 7, 8] Boxes(names=['person', 'car', 'dog']) (1, 3, 7)" in ran.stdout(
        "ds = se.from_coco("
    )
    found = ran.stdout("issues = box_issues(ds)")
    assert "row 1 (image 2): box 1 dog - duplicate" in found
    assert "row 4 (image 5): box 1 person - tiny" in found
    assert "row 7 (image 8): box -1 None - no boxes" in found
    assert "1 image(s) with a dog box of 400 px² or less: [5]" in ran.stdout("browser = ds.browse(")
    compared = ran.stdout("diff = se.compare(ds, clean)")
    assert "+0 -0 ~3 rows; objects: boxes +0 -2 moved 0 relabelled 1 in 3 row(s)" in compared
    assert "~ 4: objects: box 0 car->person" in compared
    assert "category ids: [1, 3, 7] images: [1, 2, 3, 4, 5, 6, 7, 8]" in ran.stdout("clean.to_coco(")
    assert "annotations: 9 -> 7" in ran.stdout("clean.to_coco(")


def check_evaluate(ran: Ran) -> None:
    assert "built: first build of digits" in ran.stdout("ds = se.build(")
    assert "Sequence(feature=Value(dtype='float64'), length=10)" in ran.stdout("scored = ds.add_columns(")
    accuracy = re.search(
        r"<ClassificationResult pred_probs: accuracy (0\.\d{4}) over 1,797 rows, 10 classes>",
        ran.stdout("r = se.evaluate(scored"),
    )
    assert accuracy is not None
    assert float(accuracy[1]) > 0.85  # a small model: right on most digits, wrong on enough to look at
    assert "precision" in ran.result("r = se.evaluate(scored")["text/html"]  # the report, by class
    assert WIDGET in ran.result("matrix = r.widget(browser=browser)")
    shown = re.search(r"labelled (\w+), predicted (\w+): (\d+) rows \[", ran.stdout("rows = matrix.show("))
    assert shown is not None
    assert f"the grid shows: {shown[3]} rows labelled {shown[1]}, predicted {shown[2]}" in ran.stdout(
        "rows = matrix.show("
    )
    assert "digit-0007" in ran.result("worst = r.mistakes()")["text/plain"]  # a planted slip, near the top
    relabelled = ran.stdout("fixed = scored.relabel(")
    assert "- the planted slips: True" in relabelled  # the three surest mistakes are the three wrong labels
    assert "+0 -0 ~3 rows; label: eight->seven x3" in relabelled
    again = re.search(r"accuracy (0\.\d{4}) -> (0\.\d{4}); mistakes (\d+) -> (\d+)", ran.stdout("again = se.evaluate("))
    assert again is not None
    assert again[1] == accuracy[1]
    assert int(again[4]) == int(again[3]) - 3  # each relabel turned a mistake right
    assert "['pred_probs_correct', 'pred_probs_confidence']" in ran.stdout("again = se.evaluate(")
    # the relabelled version is evaluated afresh; the first one's evaluation is read back from the home
    assert "the new version: computed: first evaluation of pred_probs against label" in ran.stdout("again = se.")
    assert "the first version again: reused: same version, columns and parameters" in ran.stdout("again = se.")


def check_video(ran: Ran) -> None:
    assert re.search(r"^24 videos, [\d,]+ bytes encoded$", ran.stdout("rows = {}"), re.MULTILINE)
    assert "built: first build of motion" in ran.stdout("ds = se.build(")
    assert "text/html" in ran.result("ds = se.build(")  # the card
    assert "clip-00: left, 24 frames, (2, 64, 64, 3) for two" in ran.stdout('video = ds[0]["video"]')
    assert "<video controls" in ran.result('video = ds[0]["video"]')["text/html"]  # the player, from the bytes
    # the planted black video, and nothing else, is black or frozen
    assert ran.stdout("stats = video_stats(ds)") == "clip-22: 24 frames, black 1.75 s, frozen 0.0 s\n"
    copies = ran.stdout("dups = near_duplicate_videos(ds)").splitlines()
    assert [line.split(":")[0] for line in copies] == ["clip-05", "clip-23"]  # the re-encoded copy, and only it
    assert "24 -> 22 videos; saved: drop 2" in ran.stdout("clean = ds.drop(")
    windows = ran.stdout("clips = clean.clips(")
    assert "66 windows of 8 frames (every 2nd) from 22 videos" in windows
    assert "window 1: [4, 6, 8, 10, 12, 14, 16, 18] left" in windows
    if importlib.util.find_spec("torch") is None:
        assert "PyTorch is not installed" in ran.stdout()
    else:
        epoch = ran.stdout("loader = DataLoader(")
        assert re.search(r"a batch: \(8, 8, 64, 64, 3\) torch\.uint8 labels \[\d(, \d){7}\]", epoch)
        assert "one epoch: 9 batches, 66 windows in" in epoch
    back = ran.stdout('layout="stable-datasets-video"')
    assert "528 frame rows; columns ['video_id', 'frame_idx', 'frame', 'video_path', 'label']" in back
    assert "66 windows; same windows: True" in back
    assert "same pixels: True" in back
    assert WIDGET in ran.displayed("browser = clean.browse(")[-1]


CHECKS: dict[str, Callable[[Ran], None]] = {
    "01_quickstart.ipynb": check_quickstart,
    "02_cleaning_session.ipynb": check_cleaning_session,
    "03_versions_and_diffs.ipynb": check_versions_and_diffs,
    "04_pytorch_dataloader.ipynb": check_pytorch_dataloader,
    "05_workgroup.ipynb": check_workgroup,
    "06_find_what_to_clean.ipynb": check_find_what_to_clean,
    "07_boxes.ipynb": check_boxes,
    "08_evaluate.ipynb": check_evaluate,
    "09_video.ipynb": check_video,
}


def users_catalog(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """The user's own STABLE_EXPLORE_HOME, holding two versions of a dataset named as the notebooks' are.

    Returns it with a snapshot (every file and its size): a notebook must leave it exactly as it was,
    whatever it builds, saves or collects (notebook 03 runs ``se.gc("digits", keep=1)``).
    """
    import stable_explore as se

    catalog = tmp_path / "catalog"
    features = se.Features(x=se.Value("int64"))
    for name in ("digits", "shapes", "photos"):
        se.build([{"x": 1}], features, name=name, home=catalog, progress=False)
        se.build([{"x": 2}], features, name=name, home=catalog, progress=False)
    return catalog, _snapshot(catalog)


def _snapshot(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", ALL)
def test_notebook_runs_end_to_end(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert name in CHECKS, f"notebooks/{name} has no checks in {Path(__file__).name}: say what its reader relies on"
    catalog, before = users_catalog(tmp_path)
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(catalog))  # the user's caches: no notebook may touch them
    for variable in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID"):  # the workgroup notebook runs on a server below
        monkeypatch.delenv(variable, raising=False)
    ran = run(name, tmp_path, monkeypatch)
    CHECKS[name](ran)
    assert _snapshot(catalog) == before, "the notebook changed the user's STABLE_EXPLORE_HOME"
    if SKIPPED_WITHOUT_SERVER not in ran.stdout():
        assert list(ran.tmp.glob("stable-explore-*/*/versions")), "the notebook did not make its own catalog"
    keep_executed(name, ran)  # only once it passed: a failed notebook leaves no page, and the docs build fails


def test_workgroup_notebook_against_a_real_s3_server(
    s3_env: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog, before = users_catalog(tmp_path)
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(catalog))
    monkeypatch.setenv("WORKGROUP_HOME", f"s3://team/notebook-{tmp_path.name}")
    ran = run("05_workgroup.ipynb", tmp_path, monkeypatch)
    assert SKIPPED_WITHOUT_SERVER not in ran.stdout()
    check_workgroup(ran)
    assert list(ran.tmp.glob("stable-explore-*/shapes/versions")), "the pull landed in the session's local home"
    assert _snapshot(catalog) == before, "the notebook changed the user's STABLE_EXPLORE_HOME"


def test_pytorch_notebook_skips_cleanly_without_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(tmp_path / "catalog"))
    ran = run("04_pytorch_dataloader.ipynb", tmp_path, monkeypatch, hide=("torch",))
    setup = ran.stdout("import pickle")
    assert setup.strip() == (
        "PyTorch is not installed: the DataLoader cells below are skipped (pip install torch to run them)."
    )
    assert ran.stdout("loader = DataLoader(") == ""
    assert ran.stdout("counts = torch.zeros(") == ""
    assert "96 training rows" in ran.stdout("train, valid = ")  # the cells that need no torch still ran


@pytest.mark.parametrize("name", ALL)
def test_notebook_is_committed_without_outputs(name: str) -> None:
    notebook = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
    for position, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{name}: cell {position} has outputs"
            assert cell["execution_count"] is None, f"{name}: cell {position} has an execution count"
    assert "widgets" not in notebook["metadata"], f"{name}: saved widget state"
    # What the kernel reports on connecting: JupyterLab rewrites metadata that differs, marking the
    # notebook modified as soon as it opens (closing it would then ask "Save changes?").
    assert notebook["metadata"]["kernelspec"]["display_name"] == "Python 3 (ipykernel)", name
    language = notebook["metadata"]["language_info"]
    assert (language["name"], language["pygments_lexer"], language["mimetype"]) == (
        "python",
        "ipython3",
        "text/x-python",
    ), name
    assert language["version"] == platform.python_version(), f"{name}: language_info.version"


def test_the_notebooks_are_numbered() -> None:
    assert ALL[0] == "01_quickstart.ipynb"
    assert [name[:3] for name in ALL] == [f"{i:02d}_" for i in range(1, len(ALL) + 1)]
