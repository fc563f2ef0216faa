"""Benchmark: Hugging Face round trips at 100k image rows, against ``datasets``' own constructors in the same run.

The workload: N rows (100k by default) of a 32x32 JPEG (256 distinct, cycled) and a ClassLabel of
10 names. Everything lives in one temp dir (catalog homes, HF caches, HF offline), removed at the end.

Contenders, each timed 3 times in a rotated order (round r starts at contender r), median reported:

- ``ds.to_hf()``: a ``datasets.Dataset`` (ClassLabel names, ``Image`` features) over our cache's
  memory-mapped Arrow data; against ``datasets.Dataset.from_dict`` of the same columns (image dicts of
  bytes, label ints) with the same features, the in-memory constructor a user would reach for.
  A read of every image's bytes through the result (``with_format("arrow")``, column by column) is
  timed too, so a lazy result cannot look fast by deferring work.
- ``se.from_hf(hf, name=...)``: a new cached version (shards written, hashed and published) from
  that ``datasets.Dataset``, images undecoded; against ``datasets.Dataset.from_generator`` of the same
  rows with the same features (it writes its own Arrow cache). Each round builds into a fresh home
  (and a fresh HF cache dir), so neither side gets a cache hit.

Checked in the same run (the script stops if not): the HF dataset from ``to_hf`` and ``from_hf``'s
version hold the same image bytes and labels as the source, row for row.

Run::

    python benchmarks/bench_interop.py               # 100k rows, a few minutes on 2 cores
    python benchmarks/bench_interop.py --rows 10000  # quick
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from _report import ms, rule

NAMES = [f"class{i}" for i in range(10)]


def _jpegs(count: int = 256) -> list[bytes]:
    from PIL import Image

    images = []
    for seed in range(count):
        pixels = np.random.default_rng(seed).integers(0, 255, (32, 32, 3), dtype=np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="JPEG", quality=85)
        images.append(buffer.getvalue())
    return images


def _median_rotated(contenders: dict[str, Callable[[int], Any]], rounds: int = 3) -> dict[str, list[float]]:
    """Each contender ``rounds`` times; round r starts at contender r, so none always runs first or last."""
    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            contenders[name](r)
            times[name].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    n = args.rows

    work = Path(tempfile.mkdtemp(prefix="bench-interop-"))
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HOME"] = str(work / "hf-home")
    try:
        _run(n, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(n: int, work: Path) -> None:
    import datasets

    import stable_explore as se

    datasets.disable_progress_bars()
    print(
        f"python {sys.version.split()[0]}, datasets {datasets.__version__}, {platform.machine()}, {os.cpu_count()} cpus"
    )
    jpegs = _jpegs()
    labels = [i % len(NAMES) for i in range(n)]
    images = [jpegs[i % len(jpegs)] for i in range(n)]
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=NAMES))
    hf_features = datasets.Features(image=datasets.Image(), label=datasets.ClassLabel(names=NAMES))

    def rows() -> Iterator[dict[str, Any]]:
        for image, label in zip(images, labels, strict=True):
            yield {"image": image, "label": label}

    start = time.perf_counter()
    ours = se.build(rows(), features, name="pets", home=work / "home", progress=False)
    print(f"{n:,} rows built once into our cache in {time.perf_counter() - start:.1f} s ({ours.nbytes / 2**20:.1f} MB)")

    def hf_rows() -> Iterator[dict[str, Any]]:
        for image, label in zip(images, labels, strict=True):
            yield {"image": {"bytes": image, "path": None}, "label": label}

    made: dict[str, Any] = {}

    def to_hf(_: int) -> None:
        made["to_hf"] = ours.to_hf()

    def from_dict(_: int) -> None:
        column = [{"bytes": image, "path": None} for image in images]
        made["from_dict"] = datasets.Dataset.from_dict({"image": column, "label": labels}, features=hf_features)

    def read_all(hf: Any) -> int:
        total = 0
        for batch in hf.with_format("arrow").iter(batch_size=10_000):
            total += batch.column("image").combine_chunks().field("bytes").nbytes
        return total

    def to_hf_and_read(r: int) -> None:
        to_hf(r)
        read_all(made["to_hf"])

    def from_dict_and_read(r: int) -> None:
        from_dict(r)
        read_all(made["from_dict"])

    rule(f"A datasets.Dataset of {n:,} image rows (median of 3, rotated)")
    made_times = _median_rotated(
        {
            "ours: ds.to_hf()": to_hf,
            "HF: Dataset.from_dict": from_dict,
            "ours: to_hf + read all image bytes": to_hf_and_read,
            "HF: from_dict + read all image bytes": from_dict_and_read,
        }
    )
    _table(made_times, "HF: Dataset.from_dict", "ours: ds.to_hf()")
    _check_same(made["to_hf"], images, labels, "to_hf")

    hf_source = made["to_hf"]

    def from_hf(r: int) -> None:
        made["from_hf"] = se.from_hf(
            hf_source, name="back", home=work / f"home-{r}-{time.monotonic_ns()}", progress=False
        )

    def from_generator(r: int) -> None:
        made["from_generator"] = datasets.Dataset.from_generator(
            hf_rows, features=hf_features, cache_dir=str(work / f"hf-cache-{r}-{time.monotonic_ns()}")
        )

    rule(f"A cache written from {n:,} image rows (median of 3, rotated; a fresh home each time)")
    built_times = _median_rotated({"ours: se.from_hf(hf)": from_hf, "HF: Dataset.from_generator": from_generator})
    _table(built_times, "HF: Dataset.from_generator", "ours: se.from_hf(hf)")
    back = made["from_hf"]
    assert back.features == features
    assert back.with_format("python")["image"] == images, "from_hf kept every image byte for byte"
    assert back["label"] == labels
    print(f"checked: to_hf and from_hf hold the same {n:,} image bytes and labels as the source")


def _table(times: dict[str, list[float]], baseline: str, ours: str) -> None:
    medians = {name: statistics.median(values) for name, values in times.items()}
    width = max(map(len, medians))
    for name, median in medians.items():
        spread = ", ".join(f"{t:.3f}" for t in times[name])
        print(f"{name:<{width}}  {ms(median):>14}   (runs: {spread} s)")
    print(f"ratio {ours} / {baseline}: {medians[ours] / medians[baseline]:.3f}")


def _check_same(hf: Any, images: list[bytes], labels: list[int], where: str) -> None:
    table = hf.with_format("arrow")[:]
    assert table.column("image").combine_chunks().field("bytes").to_pylist() == images, f"{where}: image bytes"
    assert table.column("label").to_pylist() == labels, f"{where}: labels"
    assert hf.features["label"].names == NAMES, f"{where}: class names"


if __name__ == "__main__":
    main()
