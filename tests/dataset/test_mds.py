"""se -> MDS -> ``streaming.StreamingDataset``: ds.to_mds, read back by MosaicML streaming itself.

mosaicml-streaming pins numpy and huggingface_hub below what our environment has, so it lives in a
side environment: ``$STABLE_EXPLORE_MDS_PYTHON`` names its interpreter (``.ci/run`` builds it). A
script run there reads every sample through ``StreamingDataset`` and prints it as JSON (bytes as
base64, images as their pixels' digest and format); this test compares each row field by field.
One such process serves the module, a folder per request: importing streaming and torch there
takes seconds, paid once.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import queue
import subprocess
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import Array3D, CachedDataset, ClassLabel, Features, Image, Sequence, Value
from tests.conftest import NAMES

READER = textwrap.dedent(
    """
    import base64, hashlib, importlib.util, json, sys, traceback, types
    import numpy as np
    from PIL import Image

    # streaming/__init__.py also imports its torchvision-based vision helpers, and PyPI's torchvision
    # needs PyPI's CUDA torch: the side environment has the CPU build. StreamingDataset and its MDS
    # reader are in streaming.base, which needs neither: load it without running the package's __init__.
    found = importlib.util.find_spec("streaming")
    package = types.ModuleType("streaming")
    package.__path__ = list(found.submodule_search_locations)
    sys.modules["streaming"] = package
    from streaming.base import StreamingDataset

    MARK = sys.argv[1]

    def plain(value):
        if isinstance(value, Image.Image):
            return {"pixels": hashlib.sha256(np.asarray(value.convert("RGB")).tobytes()).hexdigest(),
                    "format": value.format}
        if isinstance(value, bytes):
            return {"bytes": base64.b64encode(value).decode()}
        if isinstance(value, np.ndarray):
            return {"array": value.tolist(), "dtype": str(value.dtype)}
        if isinstance(value, np.generic):
            return value.item()
        return value

    for line in sys.stdin:  # a folder per line; a JSON line back for each
        try:
            dataset = StreamingDataset(local=line.strip(), shuffle=False, batch_size=1)
            rows = [{name: plain(value) for name, value in dataset[i].items()} for i in range(len(dataset))]
            answer = {"len": len(dataset), "rows": rows}
        except Exception:
            answer = {"error": traceback.format_exc()}
        print(MARK + json.dumps(answer), flush=True)
    """
)
MARK = "stable-explore-mds-test: "  # what begins our answers, among whatever else streaming prints


def _streaming_python() -> str:
    python = os.environ.get("STABLE_EXPLORE_MDS_PYTHON", "")
    if not python:
        pytest.skip("set STABLE_EXPLORE_MDS_PYTHON to a Python with mosaicml-streaming (.ci/run builds one)")
    return python


class StreamingReader:
    """The side environment's reader process: ``read(folder)`` is every sample StreamingDataset gives for it."""

    def __init__(self, python: str, folder: Path) -> None:
        script = folder / "read_mds.py"
        script.write_text(READER)
        self.log = folder / "reader-stderr.txt"
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [python, "-u", str(script), MARK], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                text=True, env=env,
            )  # fmt: skip
        # its lines come through a thread, not select() then readline(): readline takes in all the pipe holds, so
        # an answer that arrived in one read with a line streaming printed just before it sat in the file's buffer
        # while select() waited on the empty pipe for the full 600 s (and the test failed)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put("")  # the reader ended

    def read(self, folder: Path) -> dict:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{folder}\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + 600
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break  # the time is up
            if not line:
                self.lines.put("")  # still ended for a later read
                break
            if line.startswith(MARK):
                answer = json.loads(line[len(MARK) :])
                assert "error" not in answer, answer.get("error")
                return answer
        pytest.fail(f"the streaming reader gave no answer for {folder}: {self.log.read_text()[-3000:]}")

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def streaming(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamingReader]:
    """One reader for the module, started first: it imports streaming while the tests build their data."""
    reader = StreamingReader(_streaming_python(), tmp_path_factory.mktemp("streaming-reader"))
    yield reader
    reader.close()


def _png(i: int) -> bytes:
    buffer = io.BytesIO()
    PILImage.fromarray(np.full((6, 5, 3), i * 3, np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def _pixels(data: bytes) -> str:
    with PILImage.open(io.BytesIO(data)) as image:
        return hashlib.sha256(np.asarray(image.convert("RGB")).tobytes()).hexdigest()


def _rich(home: Path, images: list[bytes]) -> CachedDataset:
    features = Features(
        image=Image(),
        label=ClassLabel(names=NAMES),
        score=Value("float32"),
        count=Value("uint16"),
        flag=Value("bool"),
        name=Value("string"),
        blob=Value("binary"),
        tags=Sequence(Value("int32")),
        patch=Array3D(shape=(2, 2, 3), dtype="uint8"),
    )
    rows = [
        {
            "image": images[i],
            "label": NAMES[i % 3],
            "score": i / 8,
            "count": 1000 + i,
            "flag": i % 2 == 0,
            "name": f"ü-{i}",
            "blob": bytes([i, 0, 255]),
            "tags": list(range(i % 4)),
            "patch": np.full((2, 2, 3), i, np.uint8),
        }
        for i in range(len(images))
    ]
    return se.build(rows, features, name="rich", home=home, progress=False)


def _compare(ds: CachedDataset, read: dict, *, images_as: str) -> None:
    assert read["len"] == len(ds)
    table = ds.to_arrow()
    for i, row in enumerate(read["rows"]):
        where = f"row {i}"
        stored = table.column("image")[i].as_py()
        if images_as == "bytes":
            assert base64.b64decode(row["image"]["bytes"]) == stored, f"{where}: image bytes"
        else:
            assert row["image"] == {"pixels": _pixels(stored), "format": images_as}, f"{where}: image"
        assert row["label"] == table.column("label")[i].as_py(), f"{where}: label"
        assert row["score"] == pytest.approx(table.column("score")[i].as_py()), f"{where}: score"
        assert row["count"] == 1000 + i, f"{where}: count"
        assert row["flag"] == int(i % 2 == 0), f"{where}: flag"
        assert row["name"] == f"ü-{i}", f"{where}: name"
        assert base64.b64decode(row["blob"]["bytes"]) == bytes([i, 0, 255]), f"{where}: blob"
        assert row["tags"] == list(range(i % 4)), f"{where}: tags"
        assert row["patch"] == {"array": np.full((2, 2, 3), i, np.uint8).tolist(), "dtype": "uint8"}, f"{where}: patch"


def test_streaming_reads_every_row_with_jpeg_images_kept(
    home: Path, tmp_path: Path, streaming: StreamingReader, jpegs: list[bytes]
) -> None:
    ds = _rich(home, jpegs[:40])
    out = ds.to_mds(tmp_path / "mds", size_limit=8 * 1024)  # several shards
    index = json.loads((out / "index.json").read_text())
    assert len(index["shards"]) > 1
    assert {s["column_encodings"][s["column_names"].index("image")] for s in index["shards"]} == {"jpeg"}
    _compare(ds, streaming.read(out), images_as="JPEG")
    sidecar = json.loads((out / "stable-explore.json").read_text())
    assert Features.from_dict(sidecar["features"]) == ds.features  # class names kept beside the index
    assert sidecar["version"] == ds.version


def test_mixed_image_formats_go_as_bytes_byte_for_byte(
    home: Path, tmp_path: Path, streaming: StreamingReader, jpegs: list[bytes]
) -> None:
    images = [jpegs[i] if i % 2 else _png(i) for i in range(12)]
    ds = _rich(home, images)
    out = ds.to_mds(tmp_path / "mds")
    index = json.loads((out / "index.json").read_text())
    assert [s["column_encodings"][s["column_names"].index("image")] for s in index["shards"]] == ["bytes"]
    _compare(ds, streaming.read(out), images_as="bytes")


def test_a_view_and_png_images(home: Path, tmp_path: Path, streaming: StreamingReader) -> None:
    ds = _rich(home, [_png(i) for i in range(20)])
    view = ds.filter(label="bird")
    read = streaming.read(view.to_mds(tmp_path / "mds"))
    assert [row["label"] for row in read["rows"]] == [2] * len(view)
    assert [row["count"] for row in read["rows"]] == [1000 + i for i in view.base_rows().tolist()]
    assert all(row["image"]["format"] == "PNG" for row in read["rows"])


def test_a_missing_value_names_row_key_and_field(home: Path, tmp_path: Path) -> None:
    features = Features(x=Value("int64"), name=Value("string"))
    ds = se.build(
        [("a", {"x": 1, "name": "one"}), ("b", {"x": 2, "name": None})], features, name="n", home=home, progress=False
    )
    with pytest.raises(se.EncodingError, match=r"row 1, key 'b', field 'name': MDS has no nulls"):
        ds.to_mds(tmp_path / "mds")
    assert not (tmp_path / "mds").exists()  # nothing half-written


def test_a_list_holding_images_or_bytes_is_refused_naming_the_column(
    home: Path, tmp_path: Path, jpegs: list[bytes]
) -> None:
    features = Features(crops=Sequence({"image": Image(), "label": ClassLabel(names=NAMES)}))
    ds = se.build([{"crops": [{"image": jpegs[0], "label": NAMES[1]}]}], features, name="c", home=home, progress=False)
    with pytest.raises(se.SchemaError, match=r"column 'crops': .*no MDS encoding: MDS stores a list as JSON"):
        ds.to_mds(tmp_path / "mds")
    assert not (tmp_path / "mds").exists()
    listed = Features(boxes=Sequence({"bbox": Sequence(Value("float32"), length=4), "label": ClassLabel(names=NAMES)}))
    boxes = se.build([{"boxes": [{"bbox": [0, 0, 1, 1], "label": 1}]}], listed, name="b", home=home, progress=False)
    index = json.loads((boxes.to_mds(tmp_path / "boxes") / "index.json").read_text())
    assert index["shards"][0]["column_encodings"] == ["json"]
