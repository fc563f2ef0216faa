"""The same edits in four systems, for bench_versions.py's table: ours, Lance, Deep Lake and raw Arrow IPC.

Each system gets the same rows (a string key, a 10-class label, a float score and a 256-byte payload
that stands in for an image) and the same operations: relabel 10 rows and save a version, drop 10 rows
and save, read every row of a version, and find what changed between two versions. Bytes written are
the growth of the system's folder, counting each inode once (our reused files are hard links).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

NAMES = [f"c{i}" for i in range(10)]


def rows_table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    payload = rng.integers(0, 256, (n, 256), dtype=np.uint8)
    return pa.table(
        {
            "key": pa.array([f"row-{i:08d}" for i in range(n)]),
            "label": pa.array(np.arange(n) % 10, pa.int64()),
            "score": pa.array(rng.random(n, dtype=np.float32)),
            "payload": pa.array([p.tobytes() for p in payload], pa.binary()),
        }
    )


def folder_bytes(path: Path) -> int:
    seen: set[tuple[int, int]] = set()
    total = 0
    for p in Path(path).rglob("*"):
        st = p.lstat()
        if p.is_file() and (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            total += st.st_size
    return total


class PeakRSS:
    """Peak resident memory above the starting point while the block runs (sampled every millisecond).

    ``delta`` counts every resident page, file-backed ones included (the mapped pages of the shards a
    save reads); ``anon_delta`` counts only anonymous memory (resident minus shared file pages), what the
    operation allocated.
    """

    def __enter__(self) -> PeakRSS:
        # read through one descriptor kept open: 1 us a sample, where opening the file each time took 6-7 us,
        # so the sampling thread holds the GIL (and the timed operation waits) as little as it can
        self._statm = os.open("/proc/self/statm", os.O_RDONLY)
        self._page = os.sysconf("SC_PAGE_SIZE")
        self.start, self.start_anon = self._rss()
        self.peak, self.peak_anon = self.start, self.start_anon
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._update()
        os.close(self._statm)

    @property
    def delta(self) -> int:
        return self.peak - self.start

    @property
    def anon_delta(self) -> int:
        return self.peak_anon - self.start_anon

    def _update(self) -> None:
        resident, anon = self._rss()
        self.peak = max(self.peak, resident)
        self.peak_anon = max(self.peak_anon, anon)

    def _sample(self) -> None:
        while not self._stop.wait(0.001):
            self._update()

    def _rss(self) -> tuple[int, int]:
        fields = os.pread(self._statm, 256, 0).split()  # resident, then shared (file-backed) pages
        return int(fields[1]) * self._page, (int(fields[1]) - int(fields[2])) * self._page


class System:
    """One system's way of doing the benchmark's operations."""

    name = ""

    def __init__(self, work: Path, table: pa.Table) -> None:
        self.root = work / self.name.replace(" ", "-")
        self.root.mkdir(parents=True)
        self.table = table

    def build(self) -> None: ...
    def relabel(self, rows: list[int], label: int) -> None: ...
    def drop(self, rows: list[int]) -> None: ...
    def read_latest(self) -> int: ...
    def read_first(self) -> int: ...
    def compare_first_and_latest(self) -> int: ...
    def compare_previous_and_latest(self) -> int: ...
    def compact(self) -> None: ...

    def tidy(self) -> None:
        """Between operations, untimed: free what the system would not keep (raw IPC's old copies)."""

    def timed(self, fn: Callable[[], Any]) -> tuple[float, int, int]:
        """Seconds, bytes written and peak RSS delta of one operation (its anonymous part: ``last_anon``)."""
        self.tidy()
        before = folder_bytes(self.root)
        with PeakRSS() as memory:
            start = time.perf_counter()
            fn()
            seconds = time.perf_counter() - start
        self.last_anon = memory.anon_delta
        return seconds, folder_bytes(self.root) - before, memory.delta


class Ours(System):
    name = "stable-explore"

    def build(self) -> None:
        import stable_explore as se

        features = se.Features(label=se.ClassLabel(names=NAMES), score=se.Value("float32"), payload=se.Value("binary"))
        cols = self.table.to_pydict()
        examples = (
            (k, {"label": lab, "score": s, "payload": p})
            for k, lab, s, p in zip(cols["key"], cols["label"], cols["score"], cols["payload"], strict=True)
        )
        self.first = se.build(examples, features, name="bench", home=self.root, progress=False, shard_size="64MB")
        self.latest = self.first
        # The edit and compare code loads on first use (lazy facades). Its import goes here, as Lance's and
        # Deep Lake's imports go in their builds, so that "save10" and "cmp v1" time the work, not Python
        # loading code: once per process, 3-5 ms for the edit code with .pyc files, 9-19 ms where Python
        # compiles from source (PYTHONDONTWRITEBYTECODE); as much again for compare.
        import stable_explore.versioning.compare
        import stable_explore.versioning.edits  # noqa: F401

    def relabel(self, rows: list[int], label: int) -> None:
        self.previous = self.latest
        self.latest = self.latest.relabel(dict.fromkeys(rows, label)).save(progress=False)

    def compare_previous_and_latest(self) -> int:
        import stable_explore as se

        return len(se.compare(self.previous, self.latest).rows.changed)

    def drop(self, rows: list[int]) -> None:
        self.latest = self.latest.drop(rows).save(progress=False)

    def _read(self, ds: Any) -> int:
        import stable_explore as se

        return se.load(ds.cache_dir).to_arrow().num_rows  # a fresh load: first-read checks included

    def read_latest(self) -> int:
        return self._read(self.latest)

    def read_first(self) -> int:
        return self._read(self.first)

    def compare_first_and_latest(self) -> int:
        import stable_explore as se

        diff = se.compare(self.first, self.latest)
        return len(diff.rows.changed) + len(diff.rows.removed)


class Lance(System):
    name = "Lance"

    def build(self) -> None:
        import lance

        self.uri = str(self.root / "bench.lance")
        self.ds = lance.write_dataset(self.table.cast(self._schema()), self.uri)
        self.first_version = self.ds.version

    def _schema(self) -> pa.Schema:
        fields = [("key", pa.string()), ("label", pa.int64()), ("score", pa.float32()), ("payload", pa.binary())]
        return pa.schema(fields)

    def _keys(self, rows: list[int]) -> str:
        keys = self.ds.take(rows, columns=["key"]).column("key").to_pylist()
        return "key IN (" + ",".join(f"'{k}'" for k in keys) + ")"

    def relabel(self, rows: list[int], label: int) -> None:
        self.previous_version = self.ds.version
        self.ds.update({"label": str(label)}, where=self._keys(rows))

    def compare_previous_and_latest(self) -> int:
        import lance

        a = lance.dataset(self.uri, version=self.previous_version).to_table(columns=["key", "label"])
        b = lance.dataset(self.uri).to_table(columns=["key", "label"]).rename_columns(["key", "label_b"])
        return _changed(a, b)

    def drop(self, rows: list[int]) -> None:
        self.ds.delete(self._keys(rows))

    def read_latest(self) -> int:
        import lance

        return lance.dataset(self.uri).to_table().num_rows

    def read_first(self) -> int:
        import lance

        return lance.dataset(self.uri, version=self.first_version).to_table().num_rows

    def compare_first_and_latest(self) -> int:
        import lance

        a = lance.dataset(self.uri, version=self.first_version).to_table(columns=["key", "label"])
        b = lance.dataset(self.uri).to_table(columns=["key", "label"]).rename_columns(["key", "label_b"])
        return _changed(a, b)

    def compact(self) -> None:
        self.ds.optimize.compact_files()


class DeepLake(System):
    name = "Deep Lake"

    def build(self) -> None:
        import deeplake

        types = deeplake.types
        self.url = f"file://{self.root / 'bench'}"
        schema = {"key": types.Text(), "label": types.Int64(), "score": types.Float32(), "payload": types.Bytes()}
        self.ds = deeplake.create(self.url, schema=schema)
        cols = self.table.to_pydict()
        self.ds.append({k: cols[k] for k in ("key", "label", "score", "payload")})
        self.ds.commit("build")
        self.first_version = self.ds.version

    def relabel(self, rows: list[int], label: int) -> None:
        self.previous_version = self.ds.version
        for row in rows:
            self.ds["label"][row] = label
        self.ds.commit("relabel")

    def compare_previous_and_latest(self) -> int:
        import deeplake

        previous = deeplake.open_read_only(self.url).history[self.previous_version].open()
        latest = deeplake.open_read_only(self.url)
        a = pa.table({"key": previous["key"][:], "label": previous["label"][:]})
        b = pa.table({"key": latest["key"][:], "label_b": latest["label"][:]})
        return _changed(a, b)

    def drop(self, rows: list[int]) -> None:
        for row in sorted(rows, reverse=True):
            self.ds.delete(row)
        self.ds.commit("drop")

    def _columns(self, ds: Any) -> int:
        n = 0
        for column in ("key", "label", "score", "payload"):
            n = len(ds[column][:])
        return n

    def read_latest(self) -> int:
        import deeplake

        return self._columns(deeplake.open_read_only(self.url))

    def read_first(self) -> int:
        import deeplake

        return self._columns(deeplake.open_read_only(self.url).history[self.first_version].open())

    def compare_first_and_latest(self) -> int:
        import deeplake

        first = deeplake.open_read_only(self.url).history[self.first_version].open()
        latest = deeplake.open_read_only(self.url)
        a = pa.table({"key": first["key"][:], "label": first["label"][:]})
        b = pa.table({"key": latest["key"][:], "label_b": latest["label"][:]})
        return _changed(a, b)


class RawIPC(System):
    """Plain pyarrow: a version is a whole Arrow IPC file, rewritten for every edit."""

    name = "raw Arrow IPC"

    def build(self) -> None:
        self.count = 0
        self.first = self._write(self.table)
        self.latest = self.first

    def _write(self, table: pa.Table) -> Path:
        import pyarrow.ipc as ipc

        path = self.root / f"v{self.count}.arrow"
        self.count += 1
        with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        return path

    def tidy(self) -> None:
        # keep the first, previous and latest copies only (50 copies of 10M rows would fill the disk)
        for path in self.root.glob("v*.arrow"):
            if path not in (self.first, self.latest, getattr(self, "previous", None)):
                path.unlink()

    def _load(self, path: Path) -> pa.Table:
        import pyarrow.ipc as ipc

        return ipc.open_file(pa.memory_map(str(path))).read_all()

    def relabel(self, rows: list[int], label: int) -> None:
        table = self._load(self.latest)
        labels = table.column("label").to_numpy().copy()
        labels[rows] = label
        self.previous = self.latest
        self.latest = self._write(table.set_column(1, "label", pa.array(labels)))

    def compare_previous_and_latest(self) -> int:
        a = self._load(self.previous).select(["key", "label"])
        b = self._load(self.latest).select(["key", "label"]).rename_columns(["key", "label_b"])
        return _changed(a, b)

    def drop(self, rows: list[int]) -> None:
        table = self._load(self.latest)
        keep = np.ones(table.num_rows, dtype=bool)
        keep[rows] = False
        self.latest = self._write(table.filter(pa.array(keep)))

    def read_latest(self) -> int:
        return self._load(self.latest).num_rows

    def read_first(self) -> int:
        return self._load(self.first).num_rows

    def compare_first_and_latest(self) -> int:
        a = self._load(self.first).select(["key", "label"])
        b = self._load(self.latest).select(["key", "label"]).rename_columns(["key", "label_b"])
        return _changed(a, b)


def _changed(a: pa.Table, b: pa.Table) -> int:
    import pyarrow.compute as pc

    joined = a.join(b, "key", join_type="full outer")
    differs = pc.fill_null(pc.not_equal(joined["label"], joined["label_b"]), True)
    return int(pc.sum(differs).as_py() or 0)


def systems(work: Path, table: pa.Table, only: str | None = None) -> Iterator[System]:
    for cls in (Ours, Lance, DeepLake, RawIPC):
        if only is not None and cls.name != only:
            continue
        try:
            if cls is Lance:
                import lance  # noqa: F401
            if cls is DeepLake:
                import deeplake  # noqa: F401
        except ImportError:
            print(f"  ({cls.name} is not installed: pip install {'pylance' if cls is Lance else 'deeplake'})")
            continue
        yield cls(work, table)


def cleanup(work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
