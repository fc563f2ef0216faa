"""Benchmark: a home in a bucket (issue 13), against a real SeaweedFS this script starts on loopback.

Workload: rows of a 64x64 JPEG (512 distinct, cycled) and a ClassLabel (10 names), record batches of
1000 rows, shard target 256 MB, so the whole version is one big shard (``--rows``: 20k rows is about
70 MB; ``--full``: 80k rows, about 280 MB, the 256 MB shard of the issue).

1. Build to s3 vs build to a local folder: the same rows, interleaved (``--repeat`` pairs), medians;
   the ratio s3/local.
2. Cold first page: a fresh read cache (``STABLE_EXPLORE_CACHE``), batch checks forgotten, then
   ``se.load(url)`` + ``browse()`` + the widget's first page (``page_message(0)``: 48 thumbnails).
   Timed in this process (the S3 connection pool is warm; imports are done). Bytes fetched from
   the bucket are counted by the shard reader; compared with the shard's size. Target <= 1.5 s.
3. Warm page: the same, on a new dataset handle, with the read cache now holding the blocks.
4. A 256-row take (random rows, ``backend.take``: Arrow rows, no decoding), cold then warm.
5. Push of a relabel version: a local build is pushed, one row relabelled and saved, and pushed
   again; the bytes uploaded against the version's size.
6. Pull throughput: ``se.pull`` of the version into an empty home (verified on arrival), against
   a whole-prefix copy with the same library (obstore: list the prefix, stream each object to a file).

The machine may be shared: figures are noisy; medians and ranges are printed.

Run::

    python benchmarks/bench_remote.py              # 20k rows, about a minute
    python benchmarks/bench_remote.py --full       # 80k rows: one 256 MB-class shard
    python benchmarks/bench_remote.py --quick      # 5k rows, one round
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image as PILImage

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/s3server.py: the server the tests use too

import stable_explore as se  # noqa: E402
from stable_explore.storage.backends.read_cache import CACHE_ENV  # noqa: E402
from stable_explore.storage.backends.remote_file import FETCHED  # noqa: E402
from stable_explore.storage.kept import forget  # noqa: E402
from tests.s3server import seaweedfs  # noqa: E402

MB = 1024 * 1024


def _jpegs(count: int = 512) -> list[bytes]:
    rng = np.random.default_rng(0)
    out = []
    for _ in range(count):
        buffer = io.BytesIO()
        PILImage.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(buffer, format="JPEG", quality=90)
        out.append(buffer.getvalue())
    return out


def _rows(n: int, jpegs: list[bytes]) -> list[tuple[str, dict[str, object]]]:
    return [(f"r{i:07d}", {"image": jpegs[i % len(jpegs)], "label": i % 10}) for i in range(n)]


FEATURES = se.Features(image=se.Image(), label=se.ClassLabel(names=[f"c{i}" for i in range(10)]))


def _build(rows: list[tuple[str, dict[str, object]]], home: str | Path, name: str) -> tuple[float, se.CachedDataset]:
    started = time.perf_counter()
    ds = se.build(rows, FEATURES, name=name, home=home, batch_size=1000, progress=False)
    return time.perf_counter() - started, ds


def _fresh_cache(scratch: Path, label: str) -> None:
    path = scratch / f"cache-{label}-{time.monotonic_ns()}"
    os.environ[CACHE_ENV] = str(path)
    forget("checked batches", "opened shards", "remote column cuts")
    FETCHED.reset()


def _page(url: str) -> tuple[float, int]:
    FETCHED.reset()
    started = time.perf_counter()
    from stable_explore.widgets._thumbs import ThumbnailCache
    from stable_explore.widgets.browser import ShardBrowser

    # ds.browse() with a thumbnail cache of its own: the process's would hold the last round's thumbnails
    browser = ShardBrowser(se.load(url), page_size=48, cache=ThumbnailCache())
    _, buffers = browser.page_message(0)
    assert len(buffers) == 48
    return time.perf_counter() - started, FETCHED.bytes


def _take(url: str, rows: np.ndarray) -> tuple[float, int]:
    FETCHED.reset()
    ds = se.load(url)
    started = time.perf_counter()
    table = ds.backend.take(rows)
    assert table.num_rows == len(rows)
    return time.perf_counter() - started, FETCHED.bytes


def _spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f} s (range {min(values):.3f}-{max(values):.3f}, n={len(values)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--full", action="store_true", help="80k rows: a 256 MB-class shard")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved pairs / cold-warm rounds")
    parser.add_argument("--quick", action="store_true", help="5k rows, one round: a smoke run")
    args = parser.parse_args()
    n = 80_000 if args.full else 5_000 if args.quick else args.rows
    if args.quick:
        args.repeat = 1
    scratch = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    try:
        with seaweedfs(scratch / "weed", volumes=160) as server:  # 10 GB: several copies of a 280 MB version
            server.create_bucket("bench")
            os.environ.update(server.env)
            os.environ["STABLE_EXPLORE_HOME"] = str(scratch / "home")
            _fresh_cache(scratch, "build")
            jpegs = _jpegs()
            rows = _rows(n, jpegs)
            print(f"bench_remote: {n:,} rows, SeaweedFS on {server.endpoint} (machine shared: figures are noisy)")

            # 1. build to s3 vs local, interleaved pairs (each build is a new name: nothing is reused)
            # a small build to each first: the process's first request to the server (connection, the
            # bucket's first volume) cost about a second and landed on whichever build ran first
            _build(rows[:200], "s3://bench/warm-up", "warm")
            _build(rows[:200], scratch / "warm-up", "warm")
            s3_times, local_times = [], []
            ds = None
            for round_ in range(args.repeat):
                order = ["s3", "local"] if round_ % 2 == 0 else ["local", "s3"]
                for where in order:
                    if where == "s3":
                        seconds, built = _build(rows, f"s3://bench/cache-{round_}", "pets")
                        s3_times.append(seconds)
                        ds = built
                    else:
                        seconds, _ = _build(rows, scratch / f"local-{round_}", "pets")
                        local_times.append(seconds)
            assert ds is not None
            ratio = statistics.median(s3_times) / statistics.median(local_times)
            print(f"build to s3:    {_spread(s3_times)}")
            print(f"build local:    {_spread(local_times)}")
            print(f"build ratio s3/local: {ratio:.2f}x ({ds.nbytes / MB:.1f} MiB, {ds.num_shards} shard(s))")
            from obstore import put
            from obstore.store import from_url

            uploads = []
            shard_file = scratch / "local-0" / "pets" / "versions" / ds.version / ds.cache_meta.shard_filenames[0]
            upload_store = from_url("s3://bench/raw-upload", client_options={"allow_http": True})
            for round_ in range(args.repeat):
                started = time.perf_counter()
                put(upload_store, f"shard-{round_}.arrow", shard_file)
                uploads.append(time.perf_counter() - started)
            print(f"raw obstore upload of the shard alone: {_spread(uploads)} (the s3 build's extra cost)")
            url = f"s3://bench/cache-0/pets@{ds.version}"
            shard = max(ds.cache_meta.shard_sizes or [ds.nbytes])

            # 2-3. first page cold and warm
            cold, warm, cold_bytes = [], [], []
            for round_ in range(args.repeat):
                _fresh_cache(scratch, f"page{round_}")
                seconds, fetched = _page(url)
                cold.append(seconds)
                cold_bytes.append(fetched)
                seconds, fetched_warm = _page(url)
                warm.append(seconds)
                assert fetched_warm == 0, "a warm page fetches nothing"
            target = "meets" if statistics.median(cold) <= 1.5 else "MISSES"
            print(f"cold first page: {_spread(cold)}; {target} the 1.5 s target")
            print(
                f"cold first page fetched {statistics.median(cold_bytes) / MB:.2f} MiB of a {shard / MB:.1f} MiB shard "
                f"({statistics.median(cold_bytes) / shard:.1%})"
            )
            print(f"warm first page: {_spread(warm)}; 0 bytes fetched")

            # 4. a 256-row take, cold and warm
            take_cold, take_warm, take_bytes = [], [], []
            rng = np.random.default_rng(1)
            for round_ in range(args.repeat):
                picked = np.sort(rng.choice(len(ds), 256, replace=False))
                _fresh_cache(scratch, f"take{round_}")
                seconds, fetched = _take(url, picked)
                take_cold.append(seconds)
                take_bytes.append(fetched)
                take_warm.append(_take(url, picked)[0])
            print(f"take 256 cold:  {_spread(take_cold)}; fetched {statistics.median(take_bytes) / MB:.2f} MiB")
            print(f"take 256 warm:  {_spread(take_warm)}")

            # 5. push of a relabel version
            mine = scratch / "mine"
            local = se.build(rows, FEATURES, name="pets", home=mine, batch_size=1000, progress=False)
            se.push(local, "s3://bench/team", progress=False)
            relabelled = local.relabel({5: "c0"}).save(message="fix 5", progress=False)
            report = se.push(relabelled, "s3://bench/team", progress=False)
            print(
                f"push relabel:   {report.bytes_sent / MB:.2f} MiB uploaded of {relabelled.nbytes / MB:.1f} MiB "
                f"({report.files_sent} file(s) sent, {report.files_reused} copied inside the bucket)"
            )

            # 6. pull vs a whole-prefix copy with obstore
            pulls, copies = [], []
            from obstore import get
            from obstore import list as list_objects

            raw_store = from_url("s3://bench/team", client_options={"allow_http": True})
            for round_ in range(args.repeat):
                started = time.perf_counter()
                se.pull(f"s3://bench/team/pets@{relabelled.version}", home=scratch / f"pulled-{round_}", progress=False)
                pulls.append(time.perf_counter() - started)
                target_dir = scratch / f"copied-{round_}"
                started = time.perf_counter()
                prefix = f"pets/versions/{relabelled.version}/"
                for page in list_objects(raw_store, prefix=prefix):
                    for item in page:
                        out = target_dir / item["path"]
                        out.parent.mkdir(parents=True, exist_ok=True)
                        with out.open("wb") as file:
                            for chunk in get(raw_store, item["path"]).stream(min_chunk_size=8 * MB):
                                file.write(chunk)
                copies.append(time.perf_counter() - started)
            size = relabelled.nbytes / MB
            pull_rate, copy_rate = size / statistics.median(pulls), size / statistics.median(copies)
            print(f"pull:           {_spread(pulls)}; {pull_rate:.0f} MiB/s (verified on arrival)")
            print(f"prefix copy:    {_spread(copies)}; {copy_rate:.0f} MiB/s (obstore, no checks)")
            print(f"pull / copy time: {statistics.median(pulls) / statistics.median(copies):.2f}x")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
