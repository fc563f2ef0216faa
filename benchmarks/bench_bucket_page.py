"""Benchmark: a bucket's cold first page (issue 26), at 100k and 10M rows, on a SeaweedFS this script starts.

For each size, a version is built into the bucket from column batches (record batches of 1,000
rows, the default), then, three times, a process-fresh open: a new read cache, no checks
remembered, and ``se.load(url).browse(page_size=48).page_message(0)`` (48 thumbnails made from the
rows' images). Printed per size: milliseconds (median and range), bytes fetched (the read cache's
counter: every byte of shards that travels, gaps of merged ranges included, and the small files
beside the metadata that the page needed: its shard's batch digests, fetched when first read) and
requests, how many of them were small files, every request the home's store sent (the refs and
the metadata too), against the page's own image bytes, and the bytes of the version's
``_metadata.json`` (read at load, not counted in the bytes). Before 2026-11-26 ``se.load`` fetched
every shard's small file (27 at 10M rows) and the counts left them out.

Rows: 100k rows of distinct ~1.9 KB JPEGs (64x64); 10M rows of distinct ~0.4 KB JPEGs (8x8), so
the bucket holds about 4 GB, not 19. A label of 10 classes and a float32 beside each image.

Run ``python benchmarks/bench_bucket_page.py`` (both sizes, several minutes: the 10M build is most
of it), ``--sizes 100000`` for one, ``--rounds 5``. With ``PYTHONPATH`` at another checkout, the
same script measures that code (the "before" of a change).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import stable_explore as se  # noqa: E402
from benchmarks._common import distinct_jpeg, make_jpegs  # noqa: E402
from stable_explore.storage.backends.object import shared_store  # noqa: E402
from stable_explore.storage.backends.read_cache import CACHE_ENV  # noqa: E402
from stable_explore.storage.backends.remote_file import FETCHED  # noqa: E402
from stable_explore.storage.kept import forget  # noqa: E402
from tests.s3server import seaweedfs  # noqa: E402

PAGE = 48
CHUNK = 50_000
FEATURES = se.Features(
    image=se.Image(), label=se.ClassLabel(names=[f"c{i}" for i in range(10)]), score=se.Value("float32")
)


def _batches(n: int, jpegs: list[bytes]):  # type: ignore[no-untyped-def]
    for start in range(0, n, CHUNK):
        rows = range(start, min(n, start + CHUNK))
        yield pa.record_batch(
            {
                "__key__": pa.array([f"r{i:08d}" for i in rows]),
                "image": pa.array([distinct_jpeg(jpegs, i) for i in rows], pa.binary()),
                "label": pa.array([i % 10 for i in rows], pa.int64()),
                "score": pa.array([i / 7 for i in rows], pa.float32()),
            }
        )


def _cold_page(url: str, scratch: Path, label: str) -> tuple[float, int, int, int, int]:
    os.environ[CACHE_ENV] = str(scratch / f"cache-{label}-{time.monotonic_ns()}")
    forget()
    FETCHED.reset()
    store = shared_store(url.rsplit("/", 1)[0])
    sent = getattr(store, "requests", 0)  # (a checkout before 2026-11-26 does not count them: 0)
    started = time.perf_counter()
    from stable_explore.widgets._thumbs import ThumbnailCache
    from stable_explore.widgets.browser import ShardBrowser

    # what ds.browse() makes, with a thumbnail cache of its own (the process's would hold the last round's)
    browser = ShardBrowser(se.load(url), page_size=PAGE, cache=ThumbnailCache())
    _, buffers = browser.page_message(0)
    seconds = time.perf_counter() - started
    assert len(buffers) == PAGE
    files = len(getattr(FETCHED, "small_files", ()))
    return seconds, FETCHED.bytes, FETCHED.requests, files, getattr(store, "requests", 0) - sent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,10000000", help="row counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="print where one more cold page's time goes")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    scratch = Path(tempfile.mkdtemp(prefix="bench-page-"))
    try:
        with seaweedfs(scratch / "weed", volumes=200) as server:
            server.create_bucket("bench")
            os.environ.update(server.env)
            os.environ.setdefault("STABLE_EXPLORE_S3_TIMEOUT", "300")  # a 256 MB part on a loaded loopback server
            os.environ["STABLE_EXPLORE_HOME"] = str(scratch / "home")
            print(f"bench_bucket_page: SeaweedFS on {server.endpoint}; load {os.getloadavg()[0]:.1f}")
            se.build(list(_batches(200, make_jpegs(8))), FEATURES, name="warm", home="s3://bench/warm", progress=False)
            _cold_page("s3://bench/warm/warm", scratch, "warm")  # the process's first requests (connections)
            for n in sizes:
                side = 64 if n <= 1_000_000 else 8
                jpegs = make_jpegs(512, side)
                started = time.perf_counter()
                ds = se.build(_batches(n, jpegs), FEATURES, name="pets", home=f"s3://bench/n{n}", progress=False)
                built = time.perf_counter() - started
                page_images = sum(len(distinct_jpeg(jpegs, i)) for i in range(PAGE))
                meta = se.load(f"s3://bench/n{n}/pets")
                from stable_explore.storage.backends.object import ObjectStore

                meta_bytes = ObjectStore(f"s3://bench/n{n}").size(f"pets/versions/{ds.version}/_metadata.json")
                times, fetched, requests, small, sent = [], [], [], [], []
                for round_ in range(args.rounds):
                    seconds, nbytes, count, files, all_sent = _cold_page(
                        f"s3://bench/n{n}/pets", scratch, f"{n}-{round_}"
                    )
                    times.append(seconds * 1000)
                    fetched.append(nbytes)
                    requests.append(count)
                    small.append(files)
                    sent.append(all_sent)
                median_bytes = statistics.median(fetched)
                print(
                    f"{n:>10,} rows ({ds.num_shards} shards, {ds.nbytes / 2**30:.2f} GiB, built in {built:.0f} s): "
                    f"cold page {statistics.median(times):.0f} ms (range {min(times):.0f}-{max(times):.0f}); "
                    f"fetched {median_bytes / 1024:.1f} KiB in {statistics.median(requests):.0f} requests "
                    f"({statistics.median(small):.0f} of small files; {statistics.median(sent):.0f} requests in all, "
                    "refs and metadata included) = "
                    f"{median_bytes / page_images:.2f}x the page's {page_images / 1024:.1f} KiB of images; "
                    f"_metadata.json {meta_bytes / 1024:.0f} KiB; load {os.getloadavg()[0]:.1f}"
                )
                del meta
                if args.profile:
                    import cProfile
                    import pstats

                    profile = cProfile.Profile()
                    profile.runcall(_cold_page, f"s3://bench/n{n}/pets", scratch, f"{n}-profile")
                    pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
