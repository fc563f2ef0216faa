"""Hashes and statistics over stacks of reduced decodes: the figures of one image at a time, for less decoding."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import signals
from stable_explore.signals._jpeg import PILLOW_ONLY_ENV
from stable_explore.signals.perceptual import _decoded, dhash_batch, phash_batch, popcount
from stable_explore.signals.stats import stats_batch


def _encoded(pixels: np.ndarray, fmt: str) -> bytes:
    buffer = io.BytesIO()
    PILImage.fromarray(pixels).save(buffer, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return buffer.getvalue()


def _smooth(rng: np.random.Generator, size: int) -> np.ndarray:
    coarse = PILImage.fromarray(rng.integers(0, 256, (6, 6), dtype=np.uint8))
    return np.asarray(coarse.resize((size, size), PILImage.Resampling.BICUBIC))


def _plain_phash(data: bytes) -> int:
    """pHash one image at a time, decoded whole: the grey 32x32 Lanczos thumbnail's DCT, as the module describes it."""
    with PILImage.open(io.BytesIO(data)) as image:
        grey = image.convert("L").resize((32, 32), PILImage.Resampling.LANCZOS)
    n = 32
    k = np.arange(n)[:, None]
    dct = np.cos(np.pi * (2 * np.arange(n)[None, :] + 1) * k / (2 * n)) * np.sqrt(2 / n)
    dct[0] /= np.sqrt(2)
    low = (dct @ np.asarray(grey, dtype=np.float64) @ dct.T)[:8, :8]
    bits = (low > np.median(low.ravel()[1:])).ravel()
    return int("".join("1" if b else "0" for b in bits), 2)


def _plain_dhash(data: bytes) -> int:
    with PILImage.open(io.BytesIO(data)) as image:
        grey = np.asarray(image.convert("L").resize((9, 8), PILImage.Resampling.LANCZOS), dtype=np.int16)
    bits = (grey[:, 1:] > grey[:, :-1]).ravel()
    return int("".join("1" if b else "0" for b in bits), 2)


def test_hashes_equal_one_image_at_a_time_where_the_decode_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PILLOW_ONLY_ENV, "1")  # Pillow's decode on both sides (libjpeg-turbo's: test_fast_jpeg.py)
    rng = np.random.default_rng(0)
    images = [_encoded(_smooth(rng, 32), "PNG") for _ in range(40)]
    images += [_encoded(rng.integers(0, 256, (32, 32), dtype=np.uint8), "JPEG") for _ in range(40)]
    images += [_encoded(_smooth(rng, 16), "PNG") for _ in range(20)]
    phashes = phash_batch([*images, None], 0)
    assert phashes["hash"][:80].tolist() == [_plain_phash(d) for d in images[:80]]  # 32x32: no resize, same pixels
    assert phashes["valid"].tolist() == [True] * len(images) + [False]
    dhashes = dhash_batch(images, 0)
    assert dhashes["hash"].tolist() == [_plain_dhash(d) for d in images]  # small images: Pillow's 9x8 thumbnail


def test_a_large_jpeg_is_decoded_at_a_reduced_scale_and_hashes_as_a_full_decode_does() -> None:
    rng = np.random.default_rng(1)
    images = [_encoded(_smooth(rng, size), "JPEG") for size in (256, 300, 640, 1024) for _ in range(10)]
    with PILImage.open(io.BytesIO(images[-1])) as image:
        assert _decoded(image, (32, 32)).shape == (128, 128)  # 1024 / 8: libjpeg decodes at 1/8 scale, not whole
    ours = phash_batch(images, 0)["hash"]
    plain = np.array([_plain_phash(d) for d in images], dtype=np.uint64)
    distance = popcount(ours ^ plain)
    # measured: mean 0.3 bits, at most 2, from a full decode and Pillow's resize (near duplicates are 4 bits)
    assert distance.mean() <= 1.0
    assert distance.max() <= 4


@pytest.mark.parametrize("pillow_only", ["0", "1"])
def test_a_jpeg_whose_sides_are_not_a_multiple_of_the_decode_scale_hashes_as_its_full_decode(
    pillow_only: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PILLOW_ONLY_ENV, pillow_only)  # libjpeg-turbo's decode, then Pillow's draft mode
    rng = np.random.default_rng(6)
    images = []
    for width, height in ((250, 250), (300, 225), (333, 251), (500, 375)):  # decoded at 1/2 or 1/8 with a part block
        for _ in range(20):
            coarse = PILImage.fromarray(rng.integers(0, 256, (7, 7, 3), dtype=np.uint8))
            smooth = np.asarray(coarse.resize((width, height), PILImage.Resampling.BICUBIC), dtype=np.int16)
            noisy = np.clip(smooth + rng.integers(-10, 11, smooth.shape), 0, 255).astype(np.uint8)
            images.append(_encoded(noisy, "JPEG"))
    for method, plain in (("phash", _plain_phash), ("dhash", _plain_dhash)):
        ours = phash_batch(images, 0)["hash"] if method == "phash" else dhash_batch(images, 0)["hash"]
        distance = popcount(ours ^ np.array([plain(d) for d in images], dtype=np.uint64))
        # measured: mean 0.25-0.55 bits by size, at most 3 (resized as if the last part block were whole: pHash
        # 2-3.3 bits, dHash 2.5-4.6, up to 10: a near duplicate is 4 bits)
        assert distance.mean() <= 1.0, method
        assert distance.max() <= 4, method


def test_image_stats_over_stacks_equal_one_image_at_a_time() -> None:
    rng = np.random.default_rng(2)
    shapes = [(17, 23), (64, 64), (2, 5), (64, 64), (1, 1), (40, 30)]
    arrays = [rng.integers(0, 256, shape, dtype=np.uint8) for shape in shapes]
    images = [_encoded(a, "PNG") for a in arrays]
    got = stats_batch([*images, None], 0)
    for i, pixels in enumerate(arrays):
        grey = pixels.astype(np.float64)
        assert got["brightness"][i] == pytest.approx(grey.mean() / 255, rel=1e-9)
        assert got["contrast"][i] == pytest.approx(grey.std() / 255, rel=1e-9, abs=1e-12)
        if min(pixels.shape) >= 3:
            lap = grey[1:-1, :-2] + grey[1:-1, 2:] + grey[:-2, 1:-1] + grey[2:, 1:-1] - 4 * grey[1:-1, 1:-1]
            assert got["blur"][i] == pytest.approx(lap.var(), rel=1e-9)
        else:
            assert got["blur"][i] == 0
    assert np.isnan(got["brightness"][-1])


def test_a_large_image_is_measured_band_by_band_in_little_memory_with_exact_figures() -> None:
    import tracemalloc

    from stable_explore.signals.stats import grey_stats

    rng = np.random.default_rng(5)
    image = rng.integers(0, 256, (2001, 1999), dtype=np.uint8)  # 4 megapixels: measured as stored, not reduced
    image[700:900, 300:1200] = 128  # a flat patch across band edges
    tracemalloc.start()
    try:
        brightness, contrast, blur = grey_stats(image[None])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # measured: 0.45 MB (a whole-image pass held 32 MB of int16 and float copies: 8x the image)
    assert peak < 2_000_000
    grey = image.astype(np.float64)
    lap = grey[1:-1, :-2] + grey[1:-1, 2:] + grey[:-2, 1:-1] + grey[2:, 1:-1] - 4 * grey[1:-1, 1:-1]
    assert brightness[0] == pytest.approx(grey.mean() / 255, rel=1e-12)
    assert contrast[0] == pytest.approx(grey.std() / 255, rel=1e-9)
    assert blur[0] == pytest.approx(lap.var(), rel=1e-9)


def test_image_stats_of_a_batch_hold_a_few_megabytes_of_each_size_not_every_decoded_image() -> None:
    import tracemalloc

    rng = np.random.default_rng(6)
    images = [_encoded(_smooth(rng, 128), "JPEG") for _ in range(1200)]
    images += [_encoded(_smooth(rng, 48), "PNG") for _ in range(30)]  # Pillow's, into a buffer of their own
    tracemalloc.start()
    try:
        got = stats_batch(images, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # measured: 6.5 MB (4 megapixels of 128 px images held, then measured); every decoded image, then a stacked copy
    # of them, was 40 MB (67 MB for 2,000)
    assert peak < 12_000_000
    for i in (0, 255, 256, 1199, 1200, 1229):  # the first, either side of the first 4 megapixels, and Pillow's
        with PILImage.open(io.BytesIO(images[i])) as image:
            grey = np.asarray(image.convert("L"), dtype=np.float64)
        lap = grey[1:-1, :-2] + grey[1:-1, 2:] + grey[:-2, 1:-1] + grey[2:, 1:-1] - 4 * grey[1:-1, 1:-1]
        assert got["brightness"][i] == pytest.approx(grey.mean() / 255, rel=1e-9)
        assert got["contrast"][i] == pytest.approx(grey.std() / 255, rel=1e-9)
        assert got["blur"][i] == pytest.approx(lap.var(), rel=1e-9)


def test_num_proc_gives_the_serial_hashes_on_large_jpegs(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    rows = [{"image": _encoded(_smooth(rng, int(rng.integers(100, 400))), "JPEG")} for _ in range(1500)]
    ds = se.build(rows, se.Features(image=se.Image()), name="big", home=tmp_path, progress=False)
    serial = signals.perceptual_hashes(ds, cache=False, progress=False)
    assert signals.perceptual_hashes(ds, num_proc=2, cache=False, progress=False).equals(serial)
    stats = signals.image_stats(ds, cache=False, progress=False)
    assert signals.image_stats(ds, num_proc=2, cache=False, progress=False).equals(stats)


def test_num_proc_workers_start_with_the_image_decoders_and_signals_imported() -> None:
    from stable_explore.catalog.parallel.executor import owned_pool

    # the dataset a task unpickles and the readers it opens too: ~50 ms of CPU in each worker of every pool, where
    # two workers hash 20k 128 px JPEGs in ~0.5 s each
    wanted = (
        "stable_explore.signals.images",
        "stable_explore.signals.stats",
        "stable_explore.signals._jpeg",
        "PIL.Image",
        "stable_explore.dataset.cached_dataset",
        "stable_explore.storage.read.sharded",
    )
    with owned_pool(1) as pool:  # forked from the fork server, which imported them once (not each worker anew)
        loaded = pool.submit(eval, f"[m for m in {wanted!r} if m in __import__('sys').modules]").result()
    assert loaded == list(wanted)


def test_approximate_neighbours_above_the_threshold_find_the_exact_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pynndescent")
    from stable_explore.signals import neighbors

    rng = np.random.default_rng(4)
    centres = rng.normal(0, 5, (30, 12))
    vectors = (centres[rng.integers(0, 30, 3000)] + rng.normal(0, 1, (3000, 12))).astype(np.float32)
    exact_d, exact = neighbors.nearest_neighbors(vectors, 10, backend="sklearn")
    monkeypatch.setattr(neighbors, "APPROXIMATE_ROWS", 2000)  # a large dataset, in small
    approx_d, approx = neighbors.nearest_neighbors(vectors, 10)
    _, again = neighbors.nearest_neighbors(vectors, 10)
    assert np.array_equal(approx, again)  # seeded: the same neighbours every run
    assert not (approx == np.arange(3000)[:, None]).any()  # a row is never its own neighbour
    assert (np.diff(approx_d, axis=1) >= 0).all()
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact.tolist(), approx.tolist(), strict=True)])
    assert recall >= 0.95  # bench_signals.py --only knn: 0.999 at 100k rows
    assert np.allclose(approx_d[:, 0], exact_d[:, 0], rtol=1e-4)  # the nearest one is nearly always found
    monkeypatch.setattr(neighbors, "APPROXIMATE_ROWS", 5000)  # below it: exact
    assert np.array_equal(neighbors.nearest_neighbors(vectors, 10)[1], exact)
    # the kernels pynndescent compiles without caching them are kept on disk for the next process (numba's cache,
    # where it keeps the ones pynndescent caches itself): init_rp_tree is one
    from pynndescent import pynndescent_

    assert neighbors.cache_pynndescent_kernels() > 10
    cache = Path(pynndescent_.init_rp_tree._cache._cache_path)
    assert list(cache.glob("pynndescent_.init_rp_tree-*.nbi")), sorted(p.name for p in cache.iterdir())[:20]
