"""ds.to_iterable: a streaming torch IterableDataset split over ranks and real DataLoader workers.

Every row exactly once per epoch over 2 ranks x 2 workers, shuffled per (seed, epoch), set_epoch
reaching persistent workers, the same examples ds[i] gives, pickles of references only, bounded memory.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore import CachedDataset, InvalidArgumentTypeError, InvalidOptionError
from tests.conftest import pet_rows

torch = pytest.importorskip("torch", reason="CI installs torch==2.13.0 (a local CPU build)")
from torch.utils.data import DataLoader, IterableDataset  # noqa: E402  # after the importorskip above


def keep(rows: list[Any]) -> list[Any]:
    """Collate: the decoded rows as they are (module level, so spawned workers can unpickle it)."""
    return rows


def names(rows: Any) -> list[str]:
    return [row["name"] for row in rows]


def loaded(view: Any, num_workers: int = 2, **options: Any) -> list[str]:
    loader = DataLoader(view, batch_size=8, num_workers=num_workers, collate_fn=keep, **options)
    return [row["name"] for batch in loader for row in batch]


@pytest.fixture
def pets(tmp_path: Path, pet_features: se.Features, jpegs: list[bytes]) -> CachedDataset:
    """103 rows in 7 shard files (6 of 15 rows, one of 13); images stay bytes."""
    ds = se.build(
        pet_rows(103, jpegs), pet_features, name="pets", home=tmp_path / "home", progress=False, batch_size=15,
        shard_size=1,
    )  # fmt: skip
    assert ds.shard_row_counts == [15] * 6 + [13]
    return ds.with_format("python")


ALL = [f"n{i}" for i in range(103)]


@pytest.mark.parametrize("shuffle", [False, True])
def test_two_ranks_of_two_workers_read_every_row_once_per_epoch(pets: CachedDataset, shuffle: bool) -> None:
    orders = []
    for epoch in (0, 1):
        seen = []
        for rank in (0, 1):
            view = pets.to_iterable(shuffle=shuffle, seed=3, epoch=epoch, buffer_size=10, rank=rank, world_size=2)
            assert isinstance(view, IterableDataset)
            got = loaded(view)
            assert len(got) == len(view)  # len() is this rank's rows, over its workers
            seen.extend(got)
        assert Counter(seen) == Counter(ALL)
        orders.append(seen)
    assert (orders[0] != orders[1]) is shuffle


def test_fewer_files_than_ranks_times_workers_still_splits_every_row(tmp_path: Path, pet_features, jpegs) -> None:
    one_file = se.build(pet_rows(30, jpegs), pet_features, name="one", home=tmp_path, progress=False).with_format(
        "python"
    )
    assert one_file.num_shards == 1
    seen = []
    for rank in (0, 1):
        view = one_file.to_iterable(shuffle=True, rank=rank, world_size=2)
        parts = [names(view.rows(worker, 2)) for worker in (0, 1)]
        assert all(len(part) in (7, 8) for part in parts)  # each of the 4 readers gets a quarter of the rows
        assert Counter(loaded(view)) == Counter(parts[0] + parts[1])
        seen.extend(parts[0] + parts[1])
    assert Counter(seen) == Counter(f"n{i}" for i in range(30))


def test_uneven_files_over_three_ranks_and_three_workers(pets: CachedDataset) -> None:
    seen = []
    for rank in range(3):
        view = pets.to_iterable(shuffle=True, seed=9, rank=rank, world_size=3)
        mine = [name for worker in range(3) for name in names(view.rows(worker, 3))]
        assert len(mine) == len(view)
        seen.extend(mine)
    assert Counter(seen) == Counter(ALL)


def test_order_follows_seed_and_epoch_and_set_epoch(pets: CachedDataset) -> None:
    def order(**kwargs: Any) -> list[str]:
        return names(pets.to_iterable(shuffle=True, buffer_size=16, **kwargs))

    assert names(pets.to_iterable()) == pets["name"]  # no shuffle, one process: the dataset's order
    assert order(seed=1, epoch=2) == order(seed=1, epoch=2)
    assert order(seed=1, epoch=2) != order(seed=1, epoch=3)
    assert order(seed=1, epoch=2) != order(seed=2, epoch=2)
    assert sorted(order(seed=1)) == sorted(ALL)
    view = pets.to_iterable(shuffle=True, seed=1, buffer_size=16)
    first = names(view)
    assert names(view) == first  # the same epoch again: the same order
    view.set_epoch(3)
    assert view.epoch == 3
    assert names(view) == order(seed=1, epoch=3)
    assert "epoch 3" in repr(view)
    assert "rank 0 of 1" in repr(view)


def test_set_epoch_reaches_persistent_workers(pets: CachedDataset) -> None:
    view = pets.to_iterable(shuffle=True, seed=4, buffer_size=8)
    loader = DataLoader(view, batch_size=8, num_workers=2, collate_fn=keep, persistent_workers=True)
    epoch0 = [row["name"] for batch in loader for row in batch]
    view.set_epoch(1)
    epoch1 = [row["name"] for batch in loader for row in batch]
    assert Counter(epoch0) == Counter(epoch1) == Counter(ALL)
    assert epoch1 != epoch0
    assert epoch1 == loaded(pets.to_iterable(shuffle=True, seed=4, buffer_size=8, epoch=1))


def test_rows_are_the_examples_ds_index_gives(pets: CachedDataset) -> None:
    for format in ("numpy", "pil"):
        ds = pets.with_format(format)
        position = {name: i for i, name in enumerate(ds["name"])}
        rows = list(ds.to_iterable(shuffle=True, buffer_size=5))
        assert len(rows) == len(ds)
        for row in rows[:20]:
            expected = ds[position[row["name"]]]
            assert row.keys() == expected.keys()
            assert (row["label"], row["score"]) == (expected["label"], expected["score"])
            assert np.array_equal(np.asarray(row["image"]), np.asarray(expected["image"]))


def test_views_iterate_their_own_rows(pets: CachedDataset) -> None:
    cats = pets.filter(label="cat")
    shuffled = pets.shuffle(seed=1)[:50]
    for view in (cats, shuffled, pets[10:90:3]):
        seen = []
        for rank in (0, 1):
            stream = view.to_iterable(shuffle=True, rank=rank, world_size=2)
            seen.extend(name for worker in (0, 1) for name in names(stream.rows(worker, 2)))
        assert Counter(seen) == Counter(view["name"])
    assert names(pets[10:90:3].to_iterable()) == pets[10:90:3]["name"]


def test_spawned_workers_receive_references_not_data(pets: CachedDataset) -> None:
    view = pets.to_iterable(shuffle=True, seed=2, rank=1, world_size=2)
    assert len(pickle.dumps(view)) < 16 * 1024
    assert names(pickle.loads(pickle.dumps(view))) == names(view)
    got = loaded(view, multiprocessing_context="spawn")
    assert Counter(got) == Counter(names(view))
    assert len(DataLoader(view, batch_size=8)) == -(-len(view) // 8)


@pytest.mark.parametrize(
    ("kwargs", "error", "says"),
    [
        ({"shuffle": "yes"}, InvalidArgumentTypeError, "shuffle must be True or False, got str 'yes'"),
        ({"seed": -1}, InvalidOptionError, "seed must be an int >= 0, got -1"),
        ({"seed": 1.5}, InvalidArgumentTypeError, "seed must be an int, got float 1.5"),
        ({"epoch": "1"}, InvalidArgumentTypeError, "epoch must be an int, got str '1'"),
        ({"buffer_size": 0}, InvalidOptionError, "buffer_size must be an int >= 1, got 0"),
        ({"rank": 1}, InvalidOptionError, "give both rank and world_size or neither, got rank=1, world_size=None"),
        ({"rank": 2, "world_size": 2}, InvalidOptionError, "rank must be in [0, world_size) = [0, 2), got rank=2"),
        ({"rank": 0, "world_size": 0}, InvalidOptionError, "world_size must be an int >= 1, got 0"),
    ],
)
def test_bad_arguments_say_what_was_expected_and_given(
    pets: CachedDataset, kwargs: dict[str, Any], error: type[Exception], says: str
) -> None:
    with pytest.raises(error) as raised:
        pets.to_iterable(**kwargs)
    assert says in str(raised.value)
    view = pets.to_iterable()
    with pytest.raises(InvalidOptionError, match="epoch must be an int >= 0, got -1"):
        view.set_epoch(-1)


def test_memory_stays_bounded_while_streaming_50_mb(tmp_path: Path) -> None:
    features = se.Features(blob=se.Value("binary"), i=se.Value("int64"))
    rng = np.random.default_rng(0)
    blobs = [rng.bytes(2048) for _ in range(64)]
    ds = se.build(
        ({"blob": blobs[i % 64] + i.to_bytes(8, "little"), "i": i} for i in range(25_000)),
        features, name="blobs", home=tmp_path, progress=False, shard_size="8MB", batch_size=1000,
    )  # fmt: skip
    assert ds.nbytes > 50_000_000
    assert ds.num_shards >= 5
    view = ds.to_iterable(shuffle=True, buffer_size=64, rank=0, world_size=1)
    arrow_before = pa.total_allocated_bytes()
    arrow_peak = 0
    count = 0
    tracemalloc.start()
    try:
        for _row in view:
            count += 1
            if count % 500 == 0:
                arrow_peak = max(arrow_peak, pa.total_allocated_bytes() - arrow_before)
        _, python_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 25_000
    # one shuffle window (buffer_size=64 rounds up to a block of 256 decoded rows) is ~0.6 MB; the dataset is 50 MB
    assert python_peak < 4_000_000, python_peak
    assert arrow_peak < 4_000_000, arrow_peak


def test_without_torch_the_error_names_the_install(pets: CachedDataset) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["torch"] = None  # import torch now raises ImportError, as if it were not installed
        import stable_explore as se
        ds = se.load("pets", home={str(pets.home)!r})
        print(len(ds.shard(2, 0)), len(ds.split_by_node(1, 2)))  # splitting needs no torch
        try:
            ds.to_iterable()
        except ImportError as exc:
            print(type(exc).__name__, exc)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "52 51",
        "MissingDependencyError CachedDataset.to_iterable needs torch: pip install 'stable-explore[torch]'",
    ]


def test_rank_and_world_size_default_to_an_initialised_process_group(pets: CachedDataset, tmp_path: Path) -> None:
    """Two real processes in a gloo group on loopback: to_iterable() with no rank reads the process's part."""
    # they meet through a file, not a port picked ahead: another process could take that port before rank 0
    # listens on it (EADDRINUSE, seen in CI); gloo's own connections then take ports the system hands out
    rendezvous = (tmp_path / "rendezvous").as_uri()
    script = textwrap.dedent(
        f"""
        import json, sys
        import torch.distributed as dist
        import stable_explore as se
        rank = int(sys.argv[1])
        dist.init_process_group("gloo", init_method={rendezvous!r}, rank=rank, world_size=2)
        try:
            view = se.load("pets", home={str(pets.home)!r}).with_format("python").to_iterable(shuffle=True, seed=5)
            print(json.dumps([view.rank, view.world_size, len(view), [row["name"] for row in view]]))
        finally:
            dist.destroy_process_group()
        """
    )
    ranks = [
        subprocess.Popen([sys.executable, "-c", script, str(rank)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for rank in (0, 1)
    ]
    outputs = []
    for process in ranks:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode()[-3000:]
        outputs.append(json.loads(out.decode().strip().splitlines()[-1]))
    assert [(rank, world) for rank, world, _, _ in outputs] == [(0, 2), (1, 2)]
    for rank, _, length, rows in outputs:
        assert length == len(rows)
        assert rows == names(pets.to_iterable(shuffle=True, seed=5, rank=rank, world_size=2))
    assert Counter(outputs[0][3] + outputs[1][3]) == Counter(ALL)
