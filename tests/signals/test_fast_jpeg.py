"""JPEGs decoded by libjpeg-turbo (simplejpeg) hash and measure as Pillow's decode does; other images, and a
machine without simplejpeg (STABLE_EXPLORE_PILLOW_ONLY=1), go through Pillow."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image as PILImage

from stable_explore.signals._jpeg import PILLOW_ONLY_ENV, fast_decoder, grey_jpeg
from stable_explore.signals.perceptual import (
    SIZES,
    _pillow_grey,
    _resized_stack,
    dhash_stack,
    hash_batch,
    phash_stack,
    popcount,
)
from stable_explore.signals.stats import grey_stats, grey_within, stats_batch

pytest.importorskip("simplejpeg")


def _photo(rng: np.random.Generator, width: int, height: int, mode: str) -> bytes:
    """A smooth colour (or grey, or CMYK) image with a little noise, as a JPEG."""
    bands = {"RGB": 3, "L": 1, "CMYK": 4}[mode]
    coarse = PILImage.fromarray(rng.integers(0, 256, (7, 7, bands), dtype=np.uint8).squeeze(), mode=mode)
    smooth = np.asarray(coarse.resize((width, height), PILImage.Resampling.BICUBIC), dtype=np.int16)
    noisy = np.clip(smooth + rng.integers(-10, 11, smooth.shape), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    PILImage.fromarray(noisy, mode=mode).save(buffer, format="JPEG", quality=85)
    return buffer.getvalue()


def _sizes_and_modes(seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    sides = [(40, 30), (64, 64), (128, 128), (300, 225), (512, 512), (1000, 750)]
    return [_photo(rng, w, h, mode) for w, h in sides for mode in ("RGB", "L") for _ in range(12)]


@pytest.mark.parametrize("method", ["phash", "dhash"])
def test_libjpeg_turbo_hashes_are_within_a_bit_of_pillows(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    images = _sizes_and_modes(0)
    monkeypatch.setenv(PILLOW_ONLY_ENV, "0")
    fast = hash_batch(images, 0, method)
    monkeypatch.setenv(PILLOW_ONLY_ENV, "1")
    pillow = hash_batch(images, 0, method)
    assert fast["valid"].all()
    assert pillow["valid"].all()
    distance = popcount(fast["hash"] ^ pillow["hash"])
    # measured on such images: mean 0-0.35 bits by size (most at 40 pixels), at most 3; near duplicates are 4 apart
    assert distance.mean() <= 1.0
    assert distance.max() <= 4


def test_without_simplejpeg_every_image_goes_through_pillow(monkeypatch: pytest.MonkeyPatch) -> None:
    images = _sizes_and_modes(1)
    monkeypatch.setenv(PILLOW_ONLY_ENV, "1")
    assert fast_decoder() is None
    for method in ("phash", "dhash"):
        expected = []
        for data in images:
            with PILImage.open(io.BytesIO(data)) as image:
                pixels, extent = _pillow_grey(image, SIZES[method], resized=method == "dhash")
            expected.append(
                int((phash_stack(pixels[None], extent) if method == "phash" else dhash_stack(pixels[None]))[0])
            )
        assert hash_batch(images, 0, method)["hash"].tolist() == expected
    stats = stats_batch(images, 0)
    for i, data in enumerate(images):
        with PILImage.open(io.BytesIO(data)) as image:
            grey = np.asarray(grey_within(image), dtype=np.uint8)
        assert stats["blur"][i] == grey_stats(grey[None])[2][0]


def test_a_png_and_a_cmyk_jpeg_go_through_pillow_with_the_same_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    buffer = io.BytesIO()
    PILImage.fromarray(rng.integers(0, 256, (90, 120, 3), dtype=np.uint8)).save(buffer, format="PNG")
    others = [buffer.getvalue(), _photo(rng, 200, 150, "CMYK")]
    decoder = fast_decoder()
    assert decoder is not None
    assert [grey_jpeg(data, 64, 64, decoder=decoder) for data in others] == [None, None]
    monkeypatch.setenv(PILLOW_ONLY_ENV, "0")
    fast = [hash_batch(others, 0, m)["hash"].tolist() for m in ("phash", "dhash")] + [stats_batch(others, 0)]
    monkeypatch.setenv(PILLOW_ONLY_ENV, "1")
    pillow = [hash_batch(others, 0, m)["hash"].tolist() for m in ("phash", "dhash")] + [stats_batch(others, 0)]
    assert fast[:2] == pillow[:2]
    for name, values in pillow[2].items():
        assert np.array_equal(fast[2][name], values, equal_nan=True), name


def test_libjpeg_turbo_statistics_match_pillows(monkeypatch: pytest.MonkeyPatch) -> None:
    images = _sizes_and_modes(3)
    monkeypatch.setenv(PILLOW_ONLY_ENV, "0")
    fast = stats_batch(images, 0)
    monkeypatch.setenv(PILLOW_ONLY_ENV, "1")
    pillow = stats_batch(images, 0)
    for name in ("width", "height", "aspect", "channels", "file_size"):
        assert np.array_equal(fast[name], pillow[name]), name
    # measured: brightness within 1e-4, contrast within 4e-4, blur within 1% (grey from Y vs Pillow's RGB to L)
    assert np.abs(fast["brightness"] - pillow["brightness"]).max() <= 1e-3
    assert np.abs(fast["contrast"] - pillow["contrast"]).max() <= 2e-3
    assert (np.abs(fast["blur"] - pillow["blur"]) / pillow["blur"]).max() <= 0.03


def test_a_photos_dhash_is_resized_over_its_stack_and_an_older_revisions_kept_one_is_not_read(tmp_path: Path) -> None:
    import stable_explore as se
    from stable_explore import signals
    from stable_explore.signals.cache import _write, signal_path

    rng = np.random.default_rng(4)
    images = [_photo(rng, 512, 512, mode) for mode in ("RGB", "L") for _ in range(12)]
    ds = se.build(
        [{"image": d} for d in images], se.Features(image=se.Image()), name="p", home=tmp_path, progress=False
    )
    # a dHash kept by the release before (revision 2: Pillow resized a 1/8-scale decode of 64x64 to 9x8)
    older = signal_path(ds, "perceptual_hashes", {"column": "image", "method": "dhash", "revision": 2})
    assert older is not None
    _write(older, pa.table({"row": pa.array(range(24), pa.int64()), "hash": pa.array([0] * 24, pa.uint64())}))
    got = np.array(signals.perceptual_hashes(ds, method="dhash", progress=False).column("hash").to_pylist(), np.uint64)
    decoder = fast_decoder()
    grey = np.stack([grey_jpeg(d, 18, 16, decoder=decoder) for d in images])  # 1/8 scale: 64x64
    assert grey.shape == (24, 64, 64)
    assert got.tolist() == dhash_stack(_resized_stack(grey, SIZES["dhash"])).tolist()
    full = []
    for data in images:
        with PILImage.open(io.BytesIO(data)) as image:
            full.append(
                int(dhash_stack(np.asarray(image.convert("L").resize((9, 8), PILImage.Resampling.LANCZOS))[None])[0])
            )
    # measured: mean 0.1 bit from a full decode resized by Pillow (as with Pillow resizing the 1/8 decode), at most 2
    distance = popcount(got ^ np.array(full, dtype=np.uint64))
    assert distance.mean() <= 0.5
    assert distance.max() <= 3
