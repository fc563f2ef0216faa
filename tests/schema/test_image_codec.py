"""The threaded image codec: large batches are shared among threads and give the same bytes and errors."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

from stable_explore import EncodingError, Image
from stable_explore.schema.image_codec import usable_cpus
from tests.conftest import jpeg_bytes


def _photo_crops(count: int) -> list[np.ndarray]:
    """Photo-like arrays (gradients plus noise), so that PNG compression does real work."""
    rng = np.random.default_rng(3)
    yy, xx = np.mgrid[0:48, 0:48]
    return [
        np.clip(xx[..., None] * rng.uniform(1, 4, 3) + yy[..., None] + rng.normal(0, 9, (48, 48, 3)), 0, 255).astype(
            np.uint8
        )
        for _ in range(count)
    ]


def test_a_batch_of_arrays_and_pil_images_encodes_as_one_at_a_time(tmp_path: Path) -> None:
    # Large batches are shared out among threads; the stored bytes must not depend on that.
    arrays = _photo_crops(40)
    paths = []
    for i, array in enumerate(arrays[:20]):
        paths.append(tmp_path / f"{i}.jpg")
        PILImage.fromarray(array).save(paths[-1], quality=85)
    one_at_a_time = [Image().encode_value(v) for v in [*arrays, *(PILImage.open(p) for p in paths)]]
    one_at_a_time += [Image().encode_value(v) for v in (jpeg_bytes(1), str(paths[0]))]
    lazy = [PILImage.open(p) for p in paths]  # opened lazily, never loaded: read once, before any thread saves them
    batch = [*arrays, *lazy, jpeg_bytes(1), str(paths[0])]
    threads: set[str] = set()

    class Recording(Image):
        def encode_value(self, value: object) -> object:
            threads.add(threading.current_thread().name)
            return super().encode_value(value)

    assert Recording().encode_column(batch).to_pylist() == one_at_a_time
    if usable_cpus() > 1:
        assert threads
        assert all(name.startswith("stable-explore-encode") for name in threads)
    threads.clear()
    same_image_twice = [lazy[0]] * 20  # a shared PIL object is encoded in one thread: this one
    assert Recording().encode_column(same_image_twice).to_pylist() == [one_at_a_time[40]] * 20
    assert threads == {threading.current_thread().name}


def test_a_bad_image_in_a_large_batch_names_the_first_bad_row() -> None:
    batch: list[object] = list(_photo_crops(64))
    batch[45] = np.zeros((4, 4), dtype=np.float64)
    batch[29] = np.zeros((4, 4, 2), dtype=np.uint8)
    with pytest.raises(EncodingError) as info:
        Image().encode_column(batch)
    assert info.value.index == 29
    assert "(4, 4, 2)" in str(info.value)


@pytest.mark.parametrize("mode", ["1", "L", "P", "RGB", "RGBA", "I;16", "I", "F", "LA"])
def test_numpy_decoding_by_strips_gives_what_numpy_gives(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.schema import image_codec

    monkeypatch.setattr(image_codec, "_STRIP_BYTES", 64)  # many strips, and a last short one
    rng = np.random.default_rng(0)
    image = PILImage.fromarray(rng.integers(0, 256, (37, 23, 3), dtype=np.uint8)).convert(mode)
    expected = np.asarray(image)
    got = image_codec.image_array(image)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_numpy_decoding_never_holds_a_whole_image_copy_beside_the_array(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 #11: ``np.asarray`` of a PIL image copied its pixels into bytes twice before the array.

    tracemalloc sees Python bytes and numpy arrays (not PIL's own pixel buffer): the peak is the
    array and one strip, not the array and whole-image bytes.
    """
    import io
    import tracemalloc

    from stable_explore.schema import image_codec

    monkeypatch.setattr(image_codec, "_STRIP_BYTES", 1 << 20)
    buffer = io.BytesIO()
    PILImage.new("RGB", (2000, 2000), (10, 20, 30)).save(buffer, format="PNG")
    data = buffer.getvalue()
    tracemalloc.start()
    try:
        array = Image().decode_value(data, image_format="numpy")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert array.shape == (2000, 2000, 3)
    assert tuple(array[1999, 1999]) == (10, 20, 30)
    assert peak < array.nbytes + 3 * (1 << 20), f"traced peak {peak / 2**20:.1f} MB for a 11.4 MB array"


def test_stored_bytes_are_opened_as_the_format_their_first_bytes_name(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from PIL import Image as PILImage

    from stable_explore.schema.image_codec import decode_image_bytes

    asked: list[Any] = []
    open_image = PILImage.open

    def recorded(fp: Any, mode: str = "r", formats: Any = None) -> Any:
        asked.append(formats)
        return open_image(fp, mode, formats)

    monkeypatch.setattr(PILImage, "open", recorded)
    for fmt in ("WEBP", "PNG", "JPEG"):
        buffer = io.BytesIO()
        PILImage.new("RGB", (4, 3), (9, 8, 7)).save(buffer, format=fmt)
        with decode_image_bytes(buffer.getvalue()) as image:
            assert (image.format, image.size) == (fmt, (4, 3))
    assert asked == [["WEBP"], ["PNG"], ["JPEG"]], "PIL is not made to try every format in turn"
