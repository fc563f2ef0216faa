"""Benchmark: the patches view's first page, and a COCO import of 100,000 boxes (time, peak memory).

* ``--patches``: a detection set of I images (640 x 480 photo-like JPEGs, 10 boxes each; default
  1,000 images, 10,000 boxes; ``--images 10000`` for the issue's 100k boxes) cached with
  ``se.from_coco``. Timed: ``ds.patches("objects")`` (reads the Boxes column) and its first page of
  48 crops (``patches[:48].crops()``, and as 128 px thumbnails), against a plain PIL loop over the
  COCO file's first 48 annotations (``Image.open(file).crop(box)``, decoded), and the same loop
  decoding each image once. The ratios are ours over PIL's.
* ``--import``: a COCO file of B boxes (default 100,000) over B/20 images (small distinct JPEGs),
  imported by ``se.from_coco`` in a fresh process: wall time, CPU time (the process's and its
  workers'; steadier than wall time on a shared machine) and the process's peak RSS (VmHWM).

Each time is the median of 3 runs. The exit status is always 0: the figures are the result.

Run::

    python benchmarks/bench_labels.py --patches
    python benchmarks/bench_labels.py --patches --images 10000   # 100k boxes
    python benchmarks/bench_labels.py --import --boxes 100000
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import distinct_jpeg, make_jpegs, status_kb

RUNS = 3
PAGE = 48
NAMES = ["person", "car", "dog", "cat", "bike"]


def median_time(run: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(RUNS):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def photos(count: int, width: int = 640, height: int = 480) -> list[bytes]:
    """``count`` photo-like JPEGs of width x height (gradient and noise), about 60 KB each."""
    from PIL import Image as PILImage

    rng = np.random.default_rng(1)
    yy, xx = np.mgrid[0:height, 0:width]
    out = []
    for _ in range(count):
        slope = rng.uniform(-0.4, 0.4, size=(2, 3))
        pixels = rng.integers(0, 256, size=3) + xx[..., None] * slope[0] + yy[..., None] * slope[1]
        pixels = pixels + rng.normal(0, 12, size=(height, width, 3))
        buffer = io.BytesIO()
        PILImage.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, format="JPEG", quality=85)
        out.append(buffer.getvalue())
    return out


def coco_folder(folder: Path, images: int, boxes_per_image: int, jpegs: list[bytes], size: tuple[int, int]) -> Path:
    """Images (each a distinct file) and a COCO file of ``boxes_per_image`` random boxes on each."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    width, height = size
    entries, annotations = [], []
    for image_id in range(1, images + 1):
        (folder / f"{image_id}.jpg").write_bytes(distinct_jpeg(jpegs, image_id))
        entries.append({"id": image_id, "file_name": f"{image_id}.jpg", "width": width, "height": height})
        for _ in range(boxes_per_image):
            w, h = float(rng.integers(4, width // 3)), float(rng.integers(4, height // 3))
            x, y = float(rng.integers(0, width - int(w))), float(rng.integers(0, height - int(h)))
            category = int(rng.integers(1, len(NAMES) + 1))
            annotations.append(
                {"id": len(annotations) + 1, "image_id": image_id, "category_id": category, "bbox": [x, y, w, h],
                 "area": w * h, "iscrowd": 0}
            )  # fmt: skip
    categories = [{"id": i + 1, "name": name} for i, name in enumerate(NAMES)]
    coco = {"images": entries, "categories": categories, "annotations": annotations}
    (folder / "instances.json").write_text(json.dumps(coco))
    return folder / "instances.json"


def patches(images: int) -> None:
    from PIL import Image as PILImage

    import stable_explore as se

    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        started = time.perf_counter()
        annotations = coco_folder(root / "coco", images, 10, photos(16), (640, 480))
        ds = se.from_coco(annotations, root / "coco", home=root / "home", progress=False)
        print(f"{images:,} images of 640 x 480, {images * 10:,} boxes, cached in {time.perf_counter() - started:.1f} s")

        view_time, view = median_time(lambda: se.load(ds.name, home=root / "home").patches("objects"))
        page_time, crops = median_time(lambda: view[:PAGE].crops())
        thumb_time, _ = median_time(lambda: view[:PAGE].crops(thumbnail_size=128))
        coco = json.loads(annotations.read_text())
        files = {entry["id"]: root / "coco" / entry["file_name"] for entry in coco["images"]}

        def plain() -> list[Any]:
            out = []
            for entry in coco["annotations"][:PAGE]:
                x, y, w, h = entry["bbox"]
                with PILImage.open(files[entry["image_id"]]) as image:
                    crop = image.crop((int(x), int(y), int(x + w), int(y + h)))
                    crop.load()
                out.append(crop)
            return out

        def plain_once() -> list[Any]:  # each image decoded once, as the view does
            opened: dict[int, Any] = {}
            out = []
            for entry in coco["annotations"][:PAGE]:
                x, y, w, h = entry["bbox"]
                if entry["image_id"] not in opened:
                    opened[entry["image_id"]] = PILImage.open(files[entry["image_id"]])
                    opened[entry["image_id"]].load()
                out.append(opened[entry["image_id"]].crop((int(x), int(y), int(x + w), int(y + h))))
            return out

        plain_time, theirs = median_time(plain)
        once_time, _ = median_time(plain_once)
        same = all(a.size == b.size for a, b in zip(crops, theirs, strict=True))
        print(f"ds.patches('objects') over {len(view):,} boxes:   {view_time * 1000:8.1f} ms")
        print(f"first page, {PAGE} crops:                    {page_time * 1000:8.1f} ms (same sizes as PIL's: {same})")
        print(f"first page, {PAGE} crops as 128 px thumbs:   {thumb_time * 1000:8.1f} ms")
        print(f"plain PIL loop, {PAGE} open + crop:          {plain_time * 1000:8.1f} ms")
        print(f"PIL loop, each image decoded once:        {once_time * 1000:8.1f} ms")
        print(f"ratio, page / PIL:                        {page_time / plain_time:8.2f}x")
        print(f"ratio, page / PIL decoding once:          {page_time / once_time:8.2f}x")
        print(f"ratio, view + page / PIL:                 {(view_time + page_time) / plain_time:8.2f}x")


def import_child(annotations: str, images_dir: str, home: str) -> None:
    import resource

    import stable_explore as se

    def cpu() -> float:
        used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        return sum(u.ru_utime + u.ru_stime for u in used)

    started, cpu_before = time.perf_counter(), cpu()
    ds = se.from_coco(annotations, images_dir, home=home, progress=False)
    elapsed, cpu_seconds = time.perf_counter() - started, cpu() - cpu_before
    boxes = sum(len(b["bbox"]) for b in ds["objects"])
    peak = status_kb("VmHWM") / 1024
    print(json.dumps({"seconds": elapsed, "cpu": cpu_seconds, "peak_mb": peak, "rows": len(ds), "boxes": boxes}))


def import_coco(boxes: int) -> None:
    images = max(1, boxes // 20)
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        annotations = coco_folder(root / "coco", images, 20, make_jpegs(), (64, 64))
        runs = []
        for run in range(RUNS):
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(annotations), str(root / "coco"), str(root / f"home{run}")],
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        seconds = statistics.median(r["seconds"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        peak = statistics.median(r["peak_mb"] for r in runs)
        print(f"se.from_coco: {boxes:,} boxes over {images:,} images ({runs[0]['boxes']:,} read back)")
        print(f"  time {seconds:.1f} s (CPU {cpu:.1f} s), peak RSS {peak:.0f} MB (medians of {RUNS} fresh processes)")


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        import_child(*sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--patches", action="store_true", help="the patches view's first page")
    parser.add_argument("--import", dest="coco", action="store_true", help="a COCO import of --boxes boxes")
    parser.add_argument("--images", type=int, default=1000, help="images of the patches benchmark (10 boxes each)")
    parser.add_argument("--boxes", type=int, default=100_000, help="boxes of the import benchmark")
    args = parser.parse_args()
    if args.patches or not args.coco:
        patches(args.images)
    if args.coco or not args.patches:
        import_coco(args.boxes)


if __name__ == "__main__":
    main()
