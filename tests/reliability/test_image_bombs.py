"""Issue 12 #6: image bombs and broken images are refused at build, and never decoded unbounded at read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore import EncodingError, Features, Image, ImageTooLargeError, SchemaError
from stable_explore.cache import write_sharded_arrow_cache
from tests.reliability.trials import bombs, edit_metadata, png_bomb, small_jpeg, small_png

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("what", "data"), list(bombs().items()))
def test_each_bomb_and_broken_image_is_refused_at_build_naming_row_key_and_field(
    tmp_path: Path, what: str, data: bytes
) -> None:
    rows = [("good", {"image": small_jpeg()}), ("bad", {"image": data})]
    with pytest.raises(EncodingError, match=r"row 1, key 'bad', field 'image': ") as caught:
        se.build(rows, Features(image=Image()), name="imgs", home=tmp_path, progress=False)
    if what.split()[0] in ("png", "jpeg", "gif") and "x" in what:
        assert "over the limit of 89,478,485" in str(caught.value)  # PIL's own bomb limit
    assert not (tmp_path / "imgs" / "versions").exists() or not any((tmp_path / "imgs" / "versions").iterdir())


@pytest.mark.parametrize("how", ["bytes", "path", "dict", "pil", "array"])
def test_the_limit_applies_to_every_kind_of_input(tmp_path: Path, how: str) -> None:
    from PIL import Image as PILImage

    png = small_png(0, 16)
    path = tmp_path / "img.png"
    path.write_bytes(png)
    value = {
        "bytes": png,
        "path": str(path),
        "dict": {"bytes": png},
        "pil": PILImage.new("RGB", (16, 16)),
        "array": __import__("numpy").zeros((16, 16, 3), dtype="uint8"),
    }[how]
    with pytest.raises(EncodingError, match=r"row 0, key 0, field 'im'.*16x16 = 256 pixels, over the limit of 100"):
        se.build([{"im": value}], Features(im=Image(max_pixels=100)), name="i", home=tmp_path, progress=False)
    ds = se.build([{"im": value}], Features(im=Image(max_pixels=256)), name="i", home=tmp_path, progress=False)
    assert ds[0]["im"].size == (16, 16)


def test_max_pixels_is_checked_stored_and_keeps_old_schemas_unchanged() -> None:
    assert Image().to_dict() == {"_type": "Image"}  # version ids of existing caches do not move
    assert Features.from_dict({"i": Image(max_pixels=5).to_dict()})["i"] == Image(max_pixels=5)
    with pytest.raises(SchemaError, match="max_pixels"):
        Image(max_pixels=-1)


def test_a_stored_bomb_read_back_raises_naming_the_row(tmp_path: Path) -> None:
    out = tmp_path / "c"
    bomb = png_bomb(20000, 20000)
    write_sharded_arrow_cache([{"image": small_jpeg()}, {"image": bomb}], Features(image=Image(max_pixels=0)), out)
    # as an older version stored it: no limit recorded
    edit_metadata(out, lambda raw: raw["features"]["image"].pop("max_pixels"), keep_digest=False)
    ds = se.load(out)
    assert ds[0]["image"].size == (16, 16)
    with pytest.raises(ImageTooLargeError, match=r"row 1 \(in .*\), field 'image': .*decompression bomb"):
        ds[1]
    with pytest.raises(ImageTooLargeError, match=r"row 1 .*field 'image'"):
        ds.to_pandas(images="pil")
    with pytest.raises(ImageTooLargeError, match=r"row 1 .*field 'image'"):
        ds.to_pandas(images="thumbnail")
    assert len(ds.to_pandas(images="bytes")) == 2  # the bytes themselves stay readable


def test_an_image_under_the_bomb_limit_is_opened_under_a_stricter_limit_only_if_allowed(tmp_path: Path) -> None:
    out = tmp_path / "c"
    write_sharded_arrow_cache([{"image": small_png(0, 64)}], Features(image=Image(max_pixels=4096)), out)
    edit_metadata(out, lambda raw: raw["features"]["image"].update(max_pixels=100), keep_digest=False)
    with pytest.raises(ImageTooLargeError, match="row 0"):
        se.load(out)[0]


THUMBNAIL_PROBE = """
import resource, sys, time
from stable_explore.display.images import thumbnail_bytes, open_thumbnail
from stable_explore.errors import ImageTooLargeError
from tests.reliability.trials import png_bomb, jpeg_declaring
pages = [png_bomb(9000, 9000), png_bomb(20000, 20000), jpeg_declaring(65000, 65000)]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
refused = 0
for data in pages * 16:
    try:
        thumbnail_bytes(data, 128)
    except ImageTooLargeError:
        refused += 1
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(refused, len(pages) * 16, round(time.perf_counter() - started, 3), round(grown))
"""


def test_thumbnails_of_a_page_of_bombs_decode_in_bounded_memory_and_time() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", THUMBNAIL_PROBE], capture_output=True, text=True, env=env, check=True
    )
    refused, tried, seconds, grown_mb = result.stdout.split()
    assert refused == tried == "48"
    assert float(seconds) < 5.0
    assert float(grown_mb) < 200, f"thumbnails grew the RSS by {grown_mb} MB"


def test_a_big_but_legitimate_jpeg_thumbnail_is_drafted_not_fully_decoded(decodes: list[int]) -> None:
    import io

    from PIL import Image as PILImage

    from stable_explore.display.images import open_thumbnail

    buffer = io.BytesIO()
    PILImage.new("RGB", (6000, 5000), "red").save(buffer, format="JPEG")
    decodes.clear()
    thumb = open_thumbnail(buffer.getvalue(), 64)
    assert max(thumb.size) <= 64
    # the pixels decoded, not the time taken (under 2 s: a loaded machine could miss it, a full decode could meet it)
    assert decodes, "the thumbnail was decoded"
    assert max(decodes) <= 750 * 625, f"decoded {max(decodes):,} px: drafted at 1/8 it is 750x625"


BIG = (9000, 9000)  # 81 MP: under PIL's bomb limit, so accepted at build; over the thumbnail budget


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Pixels of every image PIL decodes from now on (its ``ImageFile.load``, after any draft)."""
    from PIL import ImageFile

    seen: list[int] = []
    load = ImageFile.ImageFile.load

    def recording(image: ImageFile.ImageFile) -> object:
        if image.tile:  # a load that decodes (a second load of the same image decodes nothing)
            seen.append(image.size[0] * image.size[1])
        return load(image)

    monkeypatch.setattr(ImageFile.ImageFile, "load", recording)
    return seen


@pytest.fixture
def big_image_dataset(tmp_path: Path) -> se.CachedDataset:
    from stable_explore import ClassLabel

    rows = [("small", {"image": small_jpeg(), "label": 0}), ("big", {"image": png_bomb(*BIG), "label": 1})]
    features = Features(image=Image(), label=ClassLabel(names=["a", "b"]))
    return se.build(rows, features, name="big", home=tmp_path, progress=False)


def _card(ds: se.CachedDataset) -> None:
    assert "<img" in ds._repr_html_()


def _browser_page(ds: se.CachedDataset) -> None:
    _, buffers = ds.browse().page_message()
    assert len(buffers) >= 1  # the small image's thumbnail; the big one's cell is empty


def _browser_detail(ds: se.CachedDataset) -> None:
    browser = ds.browse()
    content, buffers = browser.detail_message(1)
    assert content["key"] == "big"
    assert buffers == []
    assert content["image"]["width"] == BIG[0]  # described from its header
    assert "row 1: no preview: a thumbnail of this PNG would decode 9000x9000 pixels" in browser.status


def _compare(ds: se.CachedDataset) -> None:
    diff = se.compare(ds.drop([1]).save(progress=False), ds)
    assert diff.rows.added == ["big"]
    diff._repr_html_()
    diff.gallery("added")._repr_html_()


def _thumbnails_export(ds: se.CachedDataset) -> None:
    with pytest.raises(ImageTooLargeError, match=r"row 1 .*field 'image': .*9000x9000 pixels, over the budget"):
        ds.to_pandas(images="thumbnail")


def _show_pil_export(ds: se.CachedDataset) -> None:
    from stable_explore.display import show

    assert "too large to draw a thumbnail" in show(ds.to_pandas(images="pil"))._repr_html_()


def _row(ds: se.CachedDataset) -> None:
    assert ds[1]["image"].size == BIG  # opened lazily: the user decides to decode


DISPLAY_PATHS = {
    "card": _card,
    "browser page": _browser_page,
    "browser detail": _browser_detail,
    "compare": _compare,
    "to_pandas thumbnails": _thumbnails_export,
    "show(to_pandas pil)": _show_pil_export,
    "ds[i]": _row,
}


@pytest.mark.parametrize("path", list(DISPLAY_PATHS))
def test_no_display_path_decodes_an_accepted_81_megapixel_png_beyond_the_thumbnail_budget(
    big_image_dataset: se.CachedDataset, decodes: list[int], path: str
) -> None:
    """Issue 22 #11: every path we control that decodes for display stays within its pixel budget."""
    from stable_explore.display.images import THUMBNAIL_DECODE_MAX_PIXELS

    DISPLAY_PATHS[path](big_image_dataset)
    assert all(pixels <= THUMBNAIL_DECODE_MAX_PIXELS for pixels in decodes), f"{path} decoded {max(decodes):,} px"
