"""Benchmark: what each signal costs, per 100k images, and near-duplicate grouping at 1M rows.

Workload: N images (default 20,000; ``--images 100000`` for a full 100k) of 128x128 grey JPEG (``--side``), made
from scikit-learn's digits with noise, cached with ``se.build``. Each per-image signal runs serially
and with ``num_proc=2``; the report gives seconds for N and the rate scaled to 100k images.

* against the reference libraries, paired (each repeat runs every contender once, in turn, over the same
  JPEG bytes; medians and ranges of the ratios over ``--repeats``): pHash and dHash against imagehash's
  and against Pillow's reduced-scale decode alone (open, ``draft``, load: the floor any hash built on
  Pillow pays), serial and on two cores; image statistics against a full decode alone (they measure
  the image as stored), against imagehash's pHash (imagehash has no statistics) and against a plain
  Pillow and numpy version of the same three figures (grey, mean, standard deviation, Laplacian's
  variance, one image at a time); where simplejpeg is installed (the JPEGs then go through
  libjpeg-turbo), also ours with Pillow only and libjpeg-turbo's grey decode alone. Each figure is
  given in wall time and in this process's CPU time (``time.process_time``, which a shared machine
  disturbs less; for the ``num_proc=2`` runs it leaves the workers out, so only wall time is theirs),
  and the fork server the pools start from is started before the first repeat, once, as in a session;
* ``exact_duplicates`` (a hash of each stored image; nothing decoded);
* ``perceptual_hashes`` (pHash and dHash: decode, grey 32x32 or 9x8, DCT), serial and num_proc=2;
* ``image_stats`` (decode, grey, Laplacian), serial and num_proc=2;
* ``pixel_embeddings`` (the offline fallback) and ``embedding_outliers`` (k=10; scikit-learn);
* ``label_issues`` on synthetic ``pred_probs`` (100k rows, 10 classes, 5% flipped labels): our numpy
  rule against cleanlab's ``find_label_issues`` on the same input: agreement (Jaccard, and the share
  of ours cleanlab also flags), recall of the flipped rows, and time;
* k nearest neighbours of ``--knn-rows`` rows (100k): pynndescent (what ``backend="auto"`` uses above
  ``APPROXIMATE_ROWS``) against scikit-learn's exact answer: recall@10 and time;
* near-duplicate grouping of 1M synthetic 64-bit hashes (random, with 5% planted copies 1-3 bits
  away) at thresholds 2 and 4 (``--thresholds``): time and peak memory (tracemalloc), and whether
  every planted copy was grouped with its original.

The exit status is always 0: the figures are the result.

Run::

    python benchmarks/bench_signals.py                 # 20k images, 1M hashes
    python benchmarks/bench_signals.py --images 100000
    python benchmarks/bench_signals.py --quick         # 4k images, 100k hashes
    python benchmarks/bench_signals.py --only paired   # the comparison with imagehash and Pillow alone
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stable_explore as se
from _report import mb, rule
from stable_explore import signals
from stable_explore.signals.grouping import hamming_groups, plan_bands
from stable_explore.signals.labels import _cleanlab, confident_learning
from stable_explore.signals.perceptual import popcount


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def make_images(count: int, seed: int = 0, side: int = 128) -> list[dict[str, Any]]:
    from PIL import Image as PILImage
    from sklearn.datasets import load_digits

    digits = load_digits()
    rng = np.random.default_rng(seed)
    bases = [PILImage.fromarray((d * 15).astype(np.uint8)).resize((side, side)) for d in digits.images]
    rows = []
    for i in range(count):
        base = np.asarray(bases[i % len(bases)], dtype=np.int16)
        noisy = np.clip(base + rng.integers(-12, 13, size=base.shape), 0, 255).astype(np.uint8)
        buffer = io.BytesIO()
        PILImage.fromarray(noisy).save(buffer, format="JPEG", quality=85)
        rows.append({"image": buffer.getvalue(), "label": int(digits.target[i % len(bases)])})
    return rows


def _decode_alone(values: list[bytes], size: tuple[int, int] | None) -> None:
    from PIL import Image as PILImage

    for data in values:
        with PILImage.open(io.BytesIO(data)) as image:
            if size is not None:
                image.draft("L", size)
            image.load()


def _simplejpeg_alone(values: list[bytes], size: tuple[int, int]) -> None:
    """libjpeg-turbo's grey decode at the scale the hashes use (the fast path's floor)."""
    from stable_explore.signals._jpeg import fast_decoder, grey_jpeg

    decoder = fast_decoder()
    for data in values:
        grey_jpeg(data, size[0], size[1], decoder=decoder)


def _pillow_only(run: Callable[[], Any]) -> Callable[[], Any]:
    """``run`` with every image decoded by Pillow (as on a machine without simplejpeg)."""
    from stable_explore.signals._jpeg import PILLOW_ONLY_ENV

    def pillow() -> Any:
        os.environ[PILLOW_ONLY_ENV] = "1"
        try:
            return run()
        finally:
            del os.environ[PILLOW_ONLY_ENV]

    return pillow


def _plain_stats(values: list[bytes]) -> None:
    """Brightness, contrast and blur as a few lines of Pillow and numpy give them, one image at a time."""
    from PIL import Image as PILImage

    for data in values:
        with PILImage.open(io.BytesIO(data)) as image:
            grey = np.asarray(image.convert("L"), dtype=np.float32)
        lap = grey[1:-1, :-2] + grey[1:-1, 2:] + grey[:-2, 1:-1] + grey[2:, 1:-1] - 4 * grey[1:-1, 1:-1]
        _ = (grey.mean() / 255, grey.std() / 255, lap.var())


def _imagehash(values: list[bytes], method: str) -> None:
    import imagehash
    from PIL import Image as PILImage

    hasher = getattr(imagehash, method)
    for data in values:
        with PILImage.open(io.BytesIO(data)) as image:
            hasher(image)


def paired(ds: se.CachedDataset, repeats: int) -> None:
    """Ours against imagehash and against Pillow's decode alone, each repeat running every contender in turn."""
    from stable_explore.signals._jpeg import fast_decoder
    from stable_explore.signals._rows import BATCH_ROWS
    from stable_explore.signals.perceptual import BATCH_FUNCTIONS, DRAFT_MARGIN, SIZES
    from stable_explore.signals.stats import stats_batch

    values = ds.arrow_column("image").to_pylist()
    n = len(values)

    def in_batches(batch_fn: Callable[[list[Any], int], Any]) -> None:
        """The bytes handed over as a signal hands them to its batch function: BATCH_ROWS at a time. One call with
        every image stacked all of them, out of the CPU's cache: 10-30% more per image in the last calm run."""
        for first in range(0, n, BATCH_ROWS):
            batch_fn(values[first : first + BATCH_ROWS], first)

    phash_draft = (SIZES["phash"][0] * DRAFT_MARGIN, SIZES["phash"][1] * DRAFT_MARGIN)
    dhash_draft = (SIZES["dhash"][0] * DRAFT_MARGIN, SIZES["dhash"][1] * DRAFT_MARGIN)
    contenders: list[tuple[str, Callable[[], Any]]] = [
        ("imagehash phash", lambda: _imagehash(values, "phash")),
        ("imagehash dhash", lambda: _imagehash(values, "dhash")),
        (f"Pillow decode alone, draft {phash_draft}", lambda: _decode_alone(values, phash_draft)),
        (f"Pillow decode alone, draft {dhash_draft}", lambda: _decode_alone(values, dhash_draft)),
        ("Pillow decode alone, full size", lambda: _decode_alone(values, None)),
        (f"simplejpeg grey decode alone, at least {phash_draft}", lambda: _simplejpeg_alone(values, phash_draft)),
        (f"simplejpeg grey decode alone, at least {dhash_draft}", lambda: _simplejpeg_alone(values, dhash_draft)),
        ("simplejpeg grey decode alone, full size", lambda: _simplejpeg_alone(values, (0, 0))),
        ("ours phash (bytes in memory)", lambda: in_batches(BATCH_FUNCTIONS["phash"])),
        ("ours dhash (bytes in memory)", lambda: in_batches(BATCH_FUNCTIONS["dhash"])),
        ("ours image stats (bytes in memory)", lambda: in_batches(stats_batch)),
        ("plain Pillow + numpy image stats", lambda: _plain_stats(values)),
        ("ours phash, Pillow only", _pillow_only(lambda: in_batches(BATCH_FUNCTIONS["phash"]))),
        ("ours dhash, Pillow only", _pillow_only(lambda: in_batches(BATCH_FUNCTIONS["dhash"]))),
        ("ours image stats, Pillow only", _pillow_only(lambda: in_batches(stats_batch))),
        ("perceptual_hashes phash", lambda: signals.perceptual_hashes(ds, cache=False, progress=False)),
        (
            "perceptual_hashes phash num_proc=2",
            lambda: signals.perceptual_hashes(ds, num_proc=2, cache=False, progress=False),
        ),
        ("perceptual_hashes dhash", lambda: signals.perceptual_hashes(ds, method="dhash", cache=False, progress=False)),
        (
            "perceptual_hashes dhash num_proc=2",
            lambda: signals.perceptual_hashes(ds, method="dhash", num_proc=2, cache=False, progress=False),
        ),
        ("image_stats", lambda: signals.image_stats(ds, cache=False, progress=False)),
        ("image_stats num_proc=2", lambda: signals.image_stats(ds, num_proc=2, cache=False, progress=False)),
    ]
    from stable_explore.catalog.parallel.executor import owned_pool

    with owned_pool(1) as pool:  # the fork server starts once a session (~1 s): not in the first repeat's figure
        pool.submit(int).result()
    times: dict[str, list[float]] = {name: [] for name, _ in contenders}
    cpu: dict[str, list[float]] = {name: [] for name, _ in contenders}
    for _ in range(repeats):
        for name, run in contenders:
            started = time.process_time()
            times[name].append(timed(run)[0])
            cpu[name].append(time.process_time() - started)
    rule(f"Paired, {repeats} repeats over the same {n:,} JPEGs: microseconds per image (median, range)")
    print(f"{'':<48} {'wall':>8}  {'(range)':<15} {'CPU of this process':>19}")
    for name, _ in contenders:
        per, per_cpu = np.array(times[name]) / n * 1e6, np.array(cpu[name]) / n * 1e6
        spread = f"({per.min():.1f}-{per.max():.1f})"
        workers = "  (workers' CPU not counted)" if "num_proc" in name else ""
        print(f"{name:<48} {np.median(per):8.1f} us  {spread:<15} {np.median(per_cpu):8.1f} us{workers}")

    def ratio(top: str, bottom: str, label: str) -> None:
        r = np.array(times[top]) / np.array(times[bottom])
        line = f"{label:<64} {np.median(r):5.2f}x  ({r.min():.2f}-{r.max():.2f})"
        if "num_proc" not in top + bottom:
            c = np.array(cpu[top]) / np.array(cpu[bottom])
            line += f"   CPU {np.median(c):5.2f}x  ({c.min():.2f}-{c.max():.2f})"
        print(line)

    rule("Ratios, per repeat (median, range): wall, then CPU time where one process did all; above 1: second faster")
    if n <= BATCH_ROWS:
        print(f"(num_proc=2 ran in this process: a signal over {BATCH_ROWS:,} rows or fewer starts no workers)")
    ratio("imagehash phash", "ours phash (bytes in memory)", "imagehash phash / ours phash (one core)")
    ratio("imagehash dhash", "ours dhash (bytes in memory)", "imagehash dhash / ours dhash (one core)")
    ratio("imagehash phash", "perceptual_hashes phash", "imagehash phash / perceptual_hashes phash (from the cache)")
    ratio("imagehash dhash", "perceptual_hashes dhash", "imagehash dhash / perceptual_hashes dhash (from the cache)")
    ratio("imagehash phash", "image_stats", "imagehash phash / image_stats (from the cache)")
    ratio("imagehash phash", "perceptual_hashes phash num_proc=2", "imagehash phash / perceptual_hashes phash x2")
    ratio("imagehash dhash", "perceptual_hashes dhash num_proc=2", "imagehash dhash / perceptual_hashes dhash x2")
    ratio("perceptual_hashes phash", "perceptual_hashes phash num_proc=2", "phash: serial / num_proc=2")
    ratio("perceptual_hashes dhash", "perceptual_hashes dhash num_proc=2", "dhash: serial / num_proc=2")
    ratio("image_stats", "image_stats num_proc=2", "image_stats: serial / num_proc=2")
    ratio("imagehash phash", "ours image stats (bytes in memory)", "imagehash phash / ours image stats (one core)")
    ratio("plain Pillow + numpy image stats", "ours image stats (bytes in memory)", "plain Pillow + numpy / ours stats")
    ratio("ours phash (bytes in memory)", f"Pillow decode alone, draft {phash_draft}", "ours phash / its decode alone")
    ratio("ours dhash (bytes in memory)", f"Pillow decode alone, draft {dhash_draft}", "ours dhash / its decode alone")
    ratio("ours image stats (bytes in memory)", "Pillow decode alone, full size", "ours stats / full decode alone")
    ratio("imagehash phash", "ours phash, Pillow only", "imagehash phash / ours phash, Pillow only")
    ratio("imagehash dhash", "ours dhash, Pillow only", "imagehash dhash / ours dhash, Pillow only")
    ratio("ours phash, Pillow only", "ours phash (bytes in memory)", "phash: Pillow only / simplejpeg where installed")
    ratio("ours image stats, Pillow only", "ours image stats (bytes in memory)", "stats: Pillow only / simplejpeg")
    if fast_decoder() is not None:
        ratio(
            "ours phash (bytes in memory)",
            f"simplejpeg grey decode alone, at least {phash_draft}",
            "ours phash / simplejpeg's decode alone",
        )
        ratio(
            "ours dhash (bytes in memory)",
            f"simplejpeg grey decode alone, at least {dhash_draft}",
            "ours dhash / simplejpeg's decode alone",
        )
        ratio(
            "ours image stats (bytes in memory)",
            "simplejpeg grey decode alone, full size",
            "ours stats / simplejpeg's full decode alone",
        )


def per_image(ds: se.CachedDataset) -> None:
    n = len(ds)
    scale = 100_000 / n
    rule(f"Per-image signals on {n:,} images of 128x128 JPEG (seconds; per 100k scaled)")
    runs: list[tuple[str, Callable[[], Any]]] = [
        ("exact_duplicates", lambda: signals.exact_duplicates(ds)),
        ("perceptual_hashes phash", lambda: signals.perceptual_hashes(ds)),
        ("perceptual_hashes phash num_proc=2", lambda: signals.perceptual_hashes(ds, num_proc=2)),
        ("perceptual_hashes dhash", lambda: signals.perceptual_hashes(ds, method="dhash")),
        ("perceptual_hashes dhash num_proc=2", lambda: signals.perceptual_hashes(ds, method="dhash", num_proc=2)),
        ("image_stats", lambda: signals.image_stats(ds)),
        ("image_stats num_proc=2", lambda: signals.image_stats(ds, num_proc=2)),
        ("pixel_embeddings (16x16, 32 dims)", lambda: signals.pixel_embeddings(ds)),
    ]
    embeddings = None
    for name, run in runs:
        seconds, result = timed(run)
        if name.startswith("pixel_embeddings"):
            embeddings = result
        print(f"{name:<40} {seconds:8.2f} s   {seconds * scale:8.1f} s per 100k")
    assert embeddings is not None
    seconds, _ = timed(lambda: signals.embedding_outliers(ds, embeddings))
    print(f"{'embedding_outliers k=10 (scikit-learn)':<40} {seconds:8.2f} s   {seconds * scale:8.1f} s per 100k*")
    seconds, _ = timed(lambda: signals.neighbor_label_issues(ds, embeddings))
    print(f"{'neighbor_label_issues k=10':<40} {seconds:8.2f} s   {seconds * scale:8.1f} s per 100k*")
    print("* k-NN grows faster than linearly with n: the scaled figure is a lower bound")


def knn_recall(rows: int, k: int = 10, seed: int = 3) -> None:
    """Approximate (pynndescent) against exact (scikit-learn) k nearest neighbours of every row: recall and time."""
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    from stable_explore.signals.neighbors import nearest_neighbors

    rule(f"k={k} nearest neighbours of {rows:,} rows (noisy digits, PCA to 32 dims): pynndescent against exact")
    rng = np.random.default_rng(seed)
    digits = load_digits().data
    base = digits[rng.integers(0, len(digits), rows)] + rng.normal(0, 2.0, (rows, digits.shape[1]))
    vectors = PCA(32, random_state=0).fit_transform(base).astype(np.float32)
    warm = nearest_neighbors(vectors[:2000], k, backend="pynndescent")  # numba compiles once per process
    del warm
    exact_s, (exact_d, exact) = timed(lambda: nearest_neighbors(vectors, k, backend="sklearn"))
    approx_s, (approx_d, approx) = timed(lambda: nearest_neighbors(vectors, k, backend="pynndescent"))
    hits = np.mean([len(set(a.tolist()) & set(b.tolist())) / k for a, b in zip(exact, approx, strict=True)])
    score_ratio = float(np.median(approx_d.mean(axis=1) / np.maximum(exact_d.mean(axis=1), 1e-12)))
    print(f"exact (scikit-learn): {exact_s:7.1f} s; pynndescent: {approx_s:7.1f} s (after its compile)")
    print(f"recall@{k}: {hits:.4f}; median outlier score (mean distance) approx / exact: {score_ratio:.4f}")


def label_rule(rows: int, classes: int = 10, seed: int = 1) -> None:
    rule(f"Label issues on synthetic pred_probs: {rows:,} rows, {classes} classes, 5% labels flipped")
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, classes, size=rows)
    logits = rng.normal(size=(rows, classes)) + 3.0 * np.eye(classes)[truth]
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = truth.copy()
    flipped = rng.choice(rows, size=rows // 20, replace=False)
    labels[flipped] = (labels[flipped] + rng.integers(1, classes, size=len(flipped))) % classes
    ours_s, (ours, _) = timed(lambda: confident_learning(labels, probs))
    theirs_s, theirs = timed(lambda: _cleanlab(labels, probs))
    from cleanlab.filter import find_label_issues

    same_s, same = timed(lambda: find_label_issues(labels, probs, filter_by="confident_learning"))
    mine, cl, planted = set(ours.tolist()), set(theirs.tolist()), set(flipped.tolist())
    same_rows = set(np.flatnonzero(same).tolist())
    print(
        f"cleanlab filter_by='confident_learning' (the rule ours implements): {len(same_rows):,} rows in "
        f"{same_s:.2f} s; Jaccard with ours {len(mine & same_rows) / max(1, len(mine | same_rows)):.3f}"
    )
    print(f"ours (numpy):     {len(mine):7,} rows in {ours_s:6.2f} s; recall {len(mine & planted) / len(planted):.3f}")
    print(f"cleanlab default: {len(cl):7,} rows in {theirs_s:6.2f} s; recall {len(cl & planted) / len(planted):.3f}")
    print(
        f"agreement: Jaccard {len(mine & cl) / max(1, len(mine | cl)):.3f}; "
        f"{len(mine & cl) / max(1, len(mine)):.3f} of ours flagged by cleanlab; "
        f"{len(mine & cl) / max(1, len(cl)):.3f} of cleanlab's flagged by ours"
    )


def grouping(count: int, thresholds: list[int], seed: int = 2) -> None:
    rule(f"Near-duplicate grouping of {count:,} synthetic 64-bit hashes (5% planted copies 1-3 bits away)")
    rng = np.random.default_rng(seed)
    originals = rng.integers(0, 2**63, size=count - count // 20, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    sources = rng.choice(len(originals), size=count // 20, replace=False)
    copies = originals[sources].copy()
    for i in range(len(copies)):
        for bit in rng.choice(64, size=int(rng.integers(1, 4)), replace=False):
            copies[i] ^= np.uint64(1) << np.uint64(bit)
    hashes = np.concatenate([originals, copies])
    copy_rows = np.arange(len(originals), count)
    for threshold in thresholds:
        tracemalloc.start()
        seconds, groups = timed(lambda t=threshold: hamming_groups(hashes, t))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        bands, radius = plan_bands(count, threshold)
        within = popcount(copies ^ originals[sources]) <= threshold  # the copies this threshold must catch
        found = float(np.mean(groups[copy_rows[within]] == groups[sources[within]]))
        reach = f"{int(within.sum()):,} within {threshold} bits"
        grouped = int(np.sum(np.bincount(groups, minlength=count)[groups] > 1))
        print(
            f"threshold {threshold:2d}: {seconds:7.2f} s, peak {mb(peak)} (numpy, tracemalloc); {bands} bands, "
            f"radius {radius}; {grouped:,} rows in groups; planted copies ({reach}) grouped: {found:.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=20_000)
    parser.add_argument("--hashes", type=int, default=1_000_000)
    parser.add_argument("--labels", type=int, default=100_000)
    parser.add_argument("--thresholds", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3, help="paired repeats of the comparison")
    parser.add_argument(
        "--only", choices=["all", "paired", "knn"], default="all", help="paired: only the comparison with imagehash"
    )
    parser.add_argument("--knn-rows", type=int, default=100_000, help="rows of the approximate kNN recall figure")
    parser.add_argument(
        "--side", type=int, default=128, help="pixels of the square JPEGs (e.g. 640: a photo's size, where draft pays)"
    )
    args = parser.parse_args()
    if args.quick:
        args.images, args.hashes, args.labels, args.knn_rows = 4_000, 100_000, 20_000, 20_000
    if args.only == "knn":
        knn_recall(args.knn_rows)
        return
    with tempfile.TemporaryDirectory() as home:
        seconds, rows = timed(lambda: make_images(args.images, side=args.side))
        features = se.Features(image=se.Image(), label=se.ClassLabel(names=[str(d) for d in range(10)]))
        built, ds = timed(lambda: se.build(rows, features, name="bench", home=home, progress=False))
        print(f"made {args.images:,} JPEGs of {args.side}x{args.side} in {seconds:.1f} s, cached in {built:.1f} s")
        paired(ds, args.repeats)
        if args.only == "paired":
            return
        per_image(ds)
    label_rule(args.labels)
    grouping(args.hashes, args.thresholds)
    knn_recall(args.knn_rows)


if __name__ == "__main__":
    main()
