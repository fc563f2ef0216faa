"""Issue 34 #9: signals decode an image within a pixel budget, and their figures barely move for it."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage
from PIL import ImageFile

import stable_explore as se
from stable_explore.signals import image_stats
from stable_explore.signals.stats import STATS_MAX_PIXELS, laplacian_variance

ROOT = Path(__file__).resolve().parents[2]


def _encoded(pixels: np.ndarray, fmt: str) -> bytes:
    buffer = io.BytesIO()
    PILImage.fromarray(pixels).save(buffer, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return buffer.getvalue()


def _waves(width: int, height: int) -> np.ndarray:
    """A colour photo-like pattern: smooth waves and a little noise."""
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    grey = 128 + 60 * np.sin(xx / 40) + 40 * np.cos(yy / 25)
    noise = rng.normal(0, 6, size=(height, width, 3)).astype(np.float32)
    return np.clip(grey[..., None] + noise + np.array([10, 0, -10], dtype=np.float32), 0, 255).astype(np.uint8)


def _full_size_figures(data: bytes) -> tuple[float, float, float]:
    """Brightness, contrast and blur as the full-resolution grey image gives them."""
    with PILImage.open(io.BytesIO(data)) as image:
        grey = np.asarray(image.convert("L"), dtype=np.float32)
    return float(grey.mean() / 255), float(grey.std() / 255), laplacian_variance(grey)


def _stats(tmp_path: Path, images: list[bytes]) -> dict[str, list]:
    rows = [{"image": data} for data in images]
    ds = se.build(rows, se.Features(image=se.Image()), name="imgs", home=tmp_path / "home", progress=False)
    return image_stats(ds).to_pydict()


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The size of every image PIL decodes from now on (what its decoder produces, after any draft)."""
    seen: list[tuple[int, int]] = []
    load = ImageFile.ImageFile.load

    def recording(image: ImageFile.ImageFile) -> object:
        if image.tile:
            seen.append(image.size)
        return load(image)

    monkeypatch.setattr(ImageFile.ImageFile, "load", recording)
    return seen


def test_a_normal_size_image_gives_exactly_its_full_resolution_figures(tmp_path: Path) -> None:
    images = [_encoded(_waves(640, 480), "JPEG"), _encoded(_waves(500, 300), "PNG")]
    stats = _stats(tmp_path, images)
    for i, data in enumerate(images):
        brightness, contrast, blur = _full_size_figures(data)
        assert stats["brightness"][i] == pytest.approx(brightness, rel=1e-6)
        assert stats["contrast"][i] == pytest.approx(contrast, rel=1e-6)
        assert stats["blur"][i] == pytest.approx(blur, rel=1e-6)


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
def test_an_image_over_the_budget_is_reduced_and_its_figures_barely_change(
    tmp_path: Path, decoded: list[tuple[int, int]], fmt: str
) -> None:
    data = _encoded(_waves(2600, 2000), fmt)  # 5.2 megapixels: over the 4 MP budget
    ds = se.build([{"image": data}], se.Features(image=se.Image()), name="big", home=tmp_path, progress=False)
    decoded.clear()  # the build's own checks are not the signal's
    stats = image_stats(ds).to_pydict()
    signal_decoded = list(decoded)
    brightness, contrast, _ = _full_size_figures(data)
    assert (stats["width"], stats["height"], stats["channels"]) == ([2600], [2000], [3])  # the stored image's
    assert stats["brightness"][0] == pytest.approx(brightness, abs=0.005)
    assert stats["contrast"][0] == pytest.approx(contrast, abs=0.01)
    if fmt == "JPEG":  # decoded at half scale by the decoder itself, never at full size
        assert signal_decoded
        assert max(w * h for w, h in signal_decoded) <= STATS_MAX_PIXELS


def test_image_stats_of_an_accepted_9000_by_9000_jpeg_decode_a_reduced_image(
    tmp_path: Path, decoded: list[tuple[int, int]]
) -> None:
    gradient = PILImage.linear_gradient("L").resize((9000, 9000), PILImage.Resampling.BILINEAR)
    buffer = io.BytesIO()
    gradient.save(buffer, format="JPEG", quality=90)
    expected = float(np.asarray(PILImage.linear_gradient("L"), dtype=np.float32).mean() / 255)
    del gradient
    ds = se.build(
        [{"image": buffer.getvalue()}], se.Features(image=se.Image()), name="big", home=tmp_path, progress=False
    )
    decoded.clear()
    stats = image_stats(ds).to_pylist()[0]
    assert (stats["width"], stats["height"]) == (9000, 9000)
    assert stats["brightness"] == pytest.approx(expected, abs=0.01)
    assert decoded
    assert max(w * h for w, h in decoded) <= STATS_MAX_PIXELS


_STATS_PROBE = """
import resource, sys
import stable_explore as se
from stable_explore.signals import image_stats
ds = se.load("big", home=sys.argv[1])
image_stats(ds.select([]))  # the imports of the signal itself
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
stats = image_stats(ds).to_pylist()[0]
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
assert stats["width"] == 9000 and abs(stats["brightness"] - 0.5) < 0.01, stats
print(round(grown))
"""


def test_image_stats_of_an_81_megapixel_png_stay_near_its_decoded_size(tmp_path: Path) -> None:
    """A PNG is decoded whole (81 MB of grey) but never copied at full size in floats (960 MB before, 71 MB now)."""
    gradient = PILImage.linear_gradient("L").resize((9000, 9000), PILImage.Resampling.BILINEAR)
    buffer = io.BytesIO()
    gradient.save(buffer, format="PNG")
    del gradient
    features = se.Features(image=se.Image())
    se.build([{"image": buffer.getvalue()}], features, name="big", home=tmp_path, progress=False)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _STATS_PROBE, str(tmp_path)], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    grown_mb = float(done.stdout.split()[-1])
    assert grown_mb < 400, f"image_stats of one 81-megapixel PNG grew the peak RSS by {grown_mb} MB"


_PCA_PROBE = """
import resource
import numpy as np
from stable_explore.signals.projection import pca
pixels = np.random.default_rng(0).random((60_000, 256), dtype=np.float32)  # 60k images of 16 x 16 grey pixels
pca(pixels[:10], 4, residual=True)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = pca(pixels, 32, residual=True)
assert out.shape == (60_000, 33)
print(round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024))
"""


def test_the_pixel_embeddings_projection_holds_a_few_small_blocks_beyond_its_result() -> None:
    """PCA of 60k pixel rows: its result (16 MB) and 8 MB blocks (426 MB before: blocks of 65,536 float64 rows)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _PCA_PROBE], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    grown_mb = float(done.stdout.split()[-1])
    assert grown_mb < 200, f"pca of 60k x 256 float32 grew the peak RSS by {grown_mb} MB"
