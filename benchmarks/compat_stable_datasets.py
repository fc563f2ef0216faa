"""stable-datasets' own tests against stable-explore, and its own reader against our exports.

Needs a checkout (or a bare clone) of stable-datasets; nothing of it is committed here. Run::

    python benchmarks/compat_stable_datasets.py [--repo PATH] [--rev HEAD] [--cv2 DIR] [--video-only]

1. Extracts its ``test_cache.py``, ``test_dataset.py``, ``test_iterable.py``, ``test_samplers.py`` and
   ``test_schema.py`` into a temp folder, with a ``conftest.py`` that puts
   :mod:`stable_explore.compat.stable_datasets` in place of the modules they import (``ALIASED``),
   runs them with pytest and prints per file the tests passed among those counted (``EXCLUDED``: tests
   that read its private attributes, each with the reason) and each test's outcome (docs/format.md
   classifies the failures). ``--tests-only`` stops there.
2. At each of its cache revisions (``REVISIONS``: 37ff322, the first PyArrow cache without layout
   names, and 4ceafa1, Arrow and Lance layouts), writes a cache with its own writer and opens it with
   ``se.load(path, features=<its Features object>)``: images must come back as PIL, rows equal.
3. Extracts its package (to temp, never into our tree) and opens, with its own ``open_cache``, the
   copies that ``ds.export(layout="stable-datasets")`` and ``layout="stable-datasets-lance"`` wrote,
   and a cache the compat ``write_sharded_arrow_cache`` wrote;
   then reads every row with its backends and compares it with ours. Its ``loguru`` import is satisfied by a stand-in
   that forwards to :mod:`logging` (loguru is not in our environment); its package ``__init__``
   (which imports every dataset module) is not run.
4. Its ``LanceVideoFramesBackend`` on the folder ``ds.export(layout="stable-datasets-video", lossless=True)``
   wrote from videos of three codecs, lengths and sizes: for each window rule (``VIDEO_RULES``), every
   window it gives is compared with the same row of our ``ds.clips`` on the source (video, start frame,
   frame indices, the video's path and metadata, pixels). The backend decodes WebP with OpenCV, not one
   of our dependencies: install it outside our environment (``pip install --no-deps --target DIR
   opencv-python-headless``) and pass ``--cv2 DIR``; without it the step says it did not run.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import logging
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path

DEFAULT_REPO = "/work/.mirror/galilai-group+stable-datasets/repo"
TESTS = tuple(
    f"stable_datasets/tests/test_{name}.py" for name in ("cache", "dataset", "iterable", "samplers", "schema")
)
ALIASED = (
    "cache",
    "dataset",
    "iterable",
    "samplers",
    "schema",
    "splits",
    "utils",
    "backends",
    "backends.arrow_shards",
    "backends.lance_rows",
)

_INDICES = "reads the private view array ds._indices (ours keeps a view's rows too, under another private name)"
EXCLUDED: dict[str, str] = {
    "test_dataset.py::TestPickle::test_indexed_slice_pickle_roundtrip": _INDICES,
    "test_dataset.py::TestSelect::test_indices_pickle_roundtrip": _INDICES,
    "test_dataset.py::TestSelect::test_slice_returns_indexed_not_materialized": _INDICES,
    "test_dataset.py::TestSelect::test_train_test_split_no_materialization": _INDICES,
    "test_dataset.py::TestSliceAndSplit::test_slice_returns_indexed_view": _INDICES,
    "test_dataset.py::TestFeatureInference::test_infer_fails_on_struct": (
        "imports the private stable_datasets.dataset._infer_feature (ours: Features.from_arrow_schema raises "
        "SchemaError for a struct)"
    ),
    "test_cache.py::TestShardedDataset::test_pickle_roundtrip": (
        "reads the private ds._backend._shard_paths (ours: the public ArrowBackend.shard_paths)"
    ),
}
"""Tests that assert stable-datasets' internals rather than behaviour, with the reason (not counted)."""

CONFTEST = f'''
"""Put stable_explore.compat.stable_datasets where stable-datasets' modules would be."""
import sys

from stable_explore.compat import stable_datasets as compat

sys.modules["stable_datasets"] = compat
for part in {ALIASED!r}:
    sys.modules[f"stable_datasets.{{part}}"] = compat
'''


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def run_their_tests(repo: str, rev: str) -> dict[str, str]:
    """Each test of theirs -> "passed" / "failed" / "error", run against the compat module."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for path in TESTS:
            (folder / Path(path).name).write_text(_git(repo, "show", f"{rev}:{path}"))
        (folder / "conftest.py").write_text(CONFTEST)
        report = folder / "report.json"
        plugin = folder / "outcomes.py"
        plugin.write_text(
            "import json\nOUT = {}\n"
            "def pytest_runtest_logreport(report):\n"
            "    if report.when == 'call' or report.outcome != 'passed':\n"
            "        OUT.setdefault(report.nodeid, report.outcome if report.when == 'call' else 'error')\n"
            "        if report.outcome == 'failed':\n"
            "            OUT[report.nodeid + '::why'] = report.longreprtext.strip().splitlines()[-1][:300]\n"
            "def pytest_collectreport(report):\n"
            "    if report.failed:\n"
            "        OUT[report.nodeid + '::<collection>'] = 'error'\n"
            "        OUT[report.nodeid + '::<collection>::why'] = report.longreprtext.strip().splitlines()[-1][:300]\n"
            f"def pytest_sessionfinish(session):\n    open({str(report)!r}, 'w').write(json.dumps(OUT))\n"
        )
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(Path(__file__).resolve().parents[1])])}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "outcomes",
                "-W",
                "ignore",
                "--continue-on-collection-errors",
            ],
            cwd=folder,
            env=env,
            capture_output=True,
            check=False,
        )
        return json.loads(report.read_text())


def _their_package(repo: str, rev: str, into: Path) -> None:
    """Extract stable_datasets/ (its source, into a temp folder) and make it importable without its __init__."""
    for name in [m for m in sys.modules if m == "stable_datasets" or m.startswith("stable_datasets.")]:
        del sys.modules[name]  # another revision's modules
    files = _git(repo, "ls-tree", "-r", "--name-only", rev, "stable_datasets").split()
    for name in files:
        if name.endswith(".py") and "/tests/" not in name:
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_git(repo, "show", f"{rev}:{name}"))
    loguru = types.ModuleType("loguru")
    loguru.logger = logging.getLogger("stable_datasets")  # type: ignore[attr-defined]
    sys.modules.setdefault("loguru", loguru)
    package = types.ModuleType("stable_datasets")
    package.__path__ = [str(into / "stable_datasets")]
    sys.modules["stable_datasets"] = package


def their_reader_opens_our_export(repo: str, rev: str) -> dict[str, object]:
    """Export a dataset with images and labels, open it with their open_cache, compare every row."""
    import numpy as np
    from PIL import Image as PILImage

    import stable_explore as se

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _their_package(repo, rev, folder / "src")
        their_cache = importlib.import_module("stable_datasets.cache")
        their_schema = importlib.import_module("stable_datasets.schema")
        images = []
        for i in range(30):
            buffer = io.BytesIO()
            PILImage.fromarray(np.full((8, 8, 3), i * 5, np.uint8)).save(buffer, format="PNG")
            images.append(buffer.getvalue())
        names = ["cat", "dog", "bird"]
        ours = se.Features(image=se.Image(), label=se.ClassLabel(names=names), x=se.Value("int32"))
        rows = [{"image": images[i], "label": names[i % 3], "x": i} for i in range(30)]
        ds = se.build(rows, ours, name="pets", home=folder / "home", progress=False)
        target = folder / "pets_default_train_0000000000000000"
        out = ds.export(target, layout="stable-datasets", shard_size_bytes=300, batch_size=8)
        theirs = their_schema.Features(
            {
                "image": their_schema.Image(),
                "label": their_schema.ClassLabel(names=names),
                "x": their_schema.Value("int32"),
            }
        )
        opened = their_cache.open_cache(out, theirs)
        backend = opened.backend
        mismatches = 0
        for i in range(len(ds)):
            row = backend.get_row(i)
            mine = ds.to_arrow().slice(i, 1).to_pylist()[0]
            mismatches += int(row != mine)
        wrong = their_schema.Features(
            {
                "image": their_schema.Image(),
                "label": their_schema.ClassLabel(names=["cat", "dog", "fish"]),
                "x": their_schema.Value("int32"),
            }
        )
        try:
            their_cache.open_cache(out, wrong)
            refused = "opened (wrong: the fingerprint should differ)"
        except ValueError as exc:
            refused = str(exc).split(".")[0]
        lance_copy = ds.export(folder / "pets_lance", layout="stable-datasets-lance", batch_size=8)
        lance_opened = their_cache.open_cache(lance_copy, theirs)
        lance_mismatches = sum(
            int(lance_opened.backend.get_row(i) != ds.to_arrow().slice(i, 1).to_pylist()[0]) for i in range(len(ds))
        )
        compat = importlib.import_module("stable_explore.compat.stable_datasets")
        compat_features = compat.Features(
            {"image": compat.Image(), "label": compat.ClassLabel(names=names), "x": compat.Value("int32")}
        )
        written = compat.write_sharded_arrow_cache(
            enumerate(rows), compat_features, folder / "compat_written", batch_size=8, shard_size_bytes=300
        )
        compat_opened = their_cache.open_cache(written.cache_dir, theirs)
        compat_mismatches = sum(
            int(compat_opened.backend.get_row(i) != ds.to_arrow().slice(i, 1).to_pylist()[0]) for i in range(len(ds))
        )
        return {
            "compat_writer_layout": compat_opened.layout,
            "compat_writer_rows": compat_opened.num_rows,
            "compat_writer_shards": compat_opened.metadata.num_shards,
            "compat_writer_mismatches": compat_mismatches,
            "lance_layout": lance_opened.layout,
            "lance_rows": lance_opened.num_rows,
            "lance_mismatches": lance_mismatches,
            "layout": opened.layout,
            "rows": opened.num_rows,
            "shards": opened.metadata.num_shards,
            "rows_compared": len(ds),
            "mismatches": mismatches,
            "other_class_names": refused,
        }


VIDEO_RULES = ((8, 1, 4, None), (1, 0, 1, None), (4, 2, 3, 30), (5, 0, 5, None), (16, 3, 7, None))
"""Window rules for the video step: (window_length, frame_skip, hop_size, min_video_frames)."""


def their_video_backend_reads_our_export(repo: str, rev: str) -> dict[str, object]:
    """Their LanceVideoFramesBackend on ds.export(layout="stable-datasets-video", lossless=True), window by window.

    Videos of three codecs (mpeg4/mp4, h264/mp4, vp9/webm), lengths (20 to 61 frames) and sizes, a
    ClassLabel and a string column; for each rule in ``VIDEO_RULES``, every window of their backend is
    compared with the same row of our ``ds.clips`` on the source: video, start frame, frame indices,
    the video's path and metadata, and the pixels (lossless WebP against our decode of the source).
    Their backend decodes with OpenCV: without it this step is not run.
    """
    try:
        import cv2  # noqa: F401
    except ImportError:
        return {"not run": "OpenCV does not import (their backend decodes WebP with it); pass --cv2 DIR"}
    import numpy as np

    import stable_explore as se
    from stable_explore.testing.videos import indexed_video

    shapes = [("mpeg4", "mp4", 20, 48, 64), ("libx264", "mp4", 61, 64, 64), ("libvpx-vp9", "webm", 33, 32, 48)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _their_package(repo, rev, folder / "src")
        backend_class = importlib.import_module("stable_datasets.backends.lance_video_frames").LanceVideoFramesBackend
        rows = []
        for i in range(9):
            codec, container, frames, height, width = shapes[i % 3]
            data = indexed_video(frames + i, codec=codec, container=container, height=height, width=width, start=i)
            rows.append((f"clip-{i}", {"video": data, "label": i % 2, "source": f"{codec}/{container}"}))
        features = se.Features(
            video=se.Video(embed=True), label=se.ClassLabel(names=["walk", "run"]), source=se.Value("string")
        )
        ds = se.build(rows, features, name="walks", home=folder / "home", progress=False)
        out = ds.export(folder / "walks-frames", layout="stable-datasets-video", lossless=True)
        found: dict[str, object] = {}
        for window_length, frame_skip, hop_size, min_frames in VIDEO_RULES:
            rule = {"window_length": window_length, "frame_skip": frame_skip, "hop_size": hop_size}
            theirs = backend_class(uri=out, min_video_frames=min_frames, **rule)
            ours = ds.clips(**rule, min_video_frames=min_frames)
            differ: dict[str, int] = {}
            for i in range(max(len(ours), theirs.num_rows)):
                if i >= len(ours) or i >= theirs.num_rows:
                    differ["count"] = differ.get("count", 0) + 1
                    continue
                mine, row = ours[i], theirs.get_row(i)
                checks = {
                    "video": mine["video_row"] == row["video_idx"],
                    "start_frame": mine["start_frame"] == row["start_frame"],
                    "frame_indices": mine["frame_indices"].tolist() == row["frame_indices"],
                    "path": row["filename"] == f"clip-{mine['video_row']}",
                    "metadata": (mine["label"], mine["source"]) == (row["label"], row["source"]),
                    "pixels": np.array_equal(mine["frames"], row["video"]),
                }
                for name, ok in checks.items():
                    differ[name] = differ.get(name, 0) + int(not ok)
            found[
                f"window_length={window_length} frame_skip={frame_skip} hop_size={hop_size} "
                f"min_video_frames={min_frames}"
            ] = {
                "windows": theirs.num_rows,
                "ours": len(ours),
                "windows_differing": {k: v for k, v in differ.items() if v},
            }
        return found


REVISIONS = {"37ff322": ("arrow",), "4ceafa1": ("arrow", "lance")}
"""stable-datasets' cache revisions: the first PyArrow one (no layout name) and the Lance one (layouts named)."""


def their_features_open_their_caches(repo: str) -> dict[str, object]:
    """At each revision: their writer writes a cache, se.load opens it with their Features; rows and types compared."""
    import numpy as np
    from PIL import Image as PILImage

    import stable_explore as se

    found: dict[str, object] = {}
    for rev, layouts in REVISIONS.items():
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            _their_package(repo, rev, folder / "src")
            cache = importlib.import_module("stable_datasets.cache")
            schema = importlib.import_module("stable_datasets.schema")
            theirs = schema.Features(
                {
                    "image": schema.Image(),
                    "label": schema.ClassLabel(names=["cat", "dog", "bird"]),
                    "x": schema.Value("int32"),
                }
            )

            def rows() -> object:
                for i in range(20):
                    yield i, {"image": PILImage.new("RGB", (6, 4), (i, 2 * i, 3 * i)), "label": i % 3, "x": i}

            for layout in layouts:
                target = folder / layout
                if layout == "arrow":
                    cache.write_sharded_arrow_cache(rows(), theirs, target, batch_size=8, shard_size_bytes=400)
                else:
                    cache.write_lance_cache(rows(), theirs, target, batch_size=8)
                ds = se.load(target, features=theirs, home=folder / "home")
                wrong = 0
                for i in range(len(ds)):
                    row = ds[i]
                    pixel = tuple(int(v) for v in np.asarray(row["image"])[0, 0])
                    wrong += int(
                        not isinstance(row["image"], PILImage.Image)
                        or pixel != (i, 2 * i, 3 * i)
                        or (row["label"], row["x"]) != (i % 3, i)
                    )
                found[f"{rev} {layout}"] = {
                    "rows": len(ds),
                    "image_type": type(ds[0]["image"]).__name__,
                    "class_names": list(ds.features["label"].names),
                    "rows_not_matching": wrong,
                }
    return found


def _report_tests(outcomes: dict[str, str]) -> None:
    """Per file: passed / failed / error among the tests that count, then each test (excluded ones marked)."""
    tests = {k: v for k, v in outcomes.items() if not k.endswith("::why")}
    for path in TESTS:
        file = Path(path).name
        mine = {k: v for k, v in tests.items() if k.startswith(file + "::")}
        counted = {k: v for k, v in mine.items() if k not in EXCLUDED}
        passed = sum(v == "passed" for v in counted.values())
        print(f"{file}: {passed}/{len(counted)} pass ({len(mine) - len(counted)} excluded as internals)")
    for test, state in sorted(tests.items()):
        if test in EXCLUDED:
            print(f"  excluded({state}) {test}  {EXCLUDED[test]}")
        else:
            why = outcomes.get(f"{test}::why", "")
            print(f"  {state:7} {test}  {why}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=os.environ.get("STABLE_DATASETS_REPO", DEFAULT_REPO))
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--tests-only", action="store_true", help="only run their test files through compat")
    parser.add_argument("--cv2", help="a folder holding OpenCV (pip install --target), for their video backend")
    parser.add_argument("--video-only", action="store_true", help="only the video step")
    args = parser.parse_args()
    if args.cv2:
        sys.path.append(args.cv2)
    commit = _git(args.repo, "rev-parse", args.rev).strip()
    print(f"stable-datasets at {commit}")
    if args.video_only:
        _print_video_step(args.repo, args.rev)
        return
    print("their tests against stable_explore.compat.stable_datasets:")
    _report_tests(run_their_tests(args.repo, args.rev))
    if args.tests_only:
        return
    print("se.load(their cache, features=their Features), at each of their cache revisions:")
    print(json.dumps(their_features_open_their_caches(args.repo), indent=2))
    print("their open_cache on ds.export(layout='stable-datasets' / 'stable-datasets-lance') and the compat writer:")
    print(json.dumps(their_reader_opens_our_export(args.repo, args.rev), indent=2))
    _print_video_step(args.repo, args.rev)


def _print_video_step(repo: str, rev: str) -> None:
    print(
        "their LanceVideoFramesBackend on ds.export(layout='stable-datasets-video', lossless=True), window by "
        "window against ds.clips on the source:"
    )
    print(json.dumps(their_video_backend_reads_our_export(repo, rev), indent=2))


if __name__ == "__main__":
    main()
