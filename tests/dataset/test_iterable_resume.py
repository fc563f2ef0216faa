"""ds.to_iterable(...).state_dict() / load_state_dict(): training that stops anywhere resumes exactly.

A stop at any row of any epoch, the state through JSON, a fresh iterable (or a fresh process) that
loads it: the rows that follow are the ones an uninterrupted run yields, in its order, over ranks,
views and epochs, and through torchdata's StatefulDataLoader with two workers. A resume reads none
of the rows already yielded (every read is recorded), and a state from other rows is refused.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import stable_explore as se
from stable_explore import CachedDataset, InvalidArgumentTypeError, InvalidOptionError

torch = pytest.importorskip("torch", reason="CI installs torch==2.13.0 (a local CPU build)")
stateful_dataloader = pytest.importorskip(
    "torchdata.stateful_dataloader", reason="the test extra installs torchdata (StatefulDataLoader)"
)
StatefulDataLoader = stateful_dataloader.StatefulDataLoader

ROWS = 1100  # files of 300, 300, 300, 200 rows: blocks of 256 rows cut across files and windows
EPOCHS = 2


def keep(rows: list[Any]) -> list[Any]:
    """Collate: the decoded rows as they are (module level, so workers can unpickle it)."""
    return rows


class RecordedRead:
    """A view's row reader that appends every row number it is asked for to a file, then reads them.

    A file, so reads made in DataLoader worker processes are recorded too.
    """

    def __init__(self, read: Any, log: Path) -> None:
        self.read, self.log = read, log

    def __call__(self, rows: Any) -> list[Any]:
        with self.log.open("a") as out:
            out.write("".join(f"{int(row)}\n" for row in rows))
        return list(self.read(rows))


def read_rows(log: Path) -> list[int]:
    return [int(line) for line in log.read_text().split()] if log.exists() else []


@pytest.fixture(scope="module")
def numbers(tmp_path_factory: pytest.TempPathFactory) -> CachedDataset:
    ds = se.build(
        ({"i": i, "name": f"k{i}"} for i in range(ROWS)),
        se.Features(i=se.Value("int64"), name=se.Value("string")),
        name="numbers", home=tmp_path_factory.mktemp("resume-home"), progress=False, batch_size=300, shard_size=1,
    )  # fmt: skip
    assert ds.shard_row_counts == [300, 300, 300, 200]
    return ds.with_format("python")


VIEWS = {
    "all": lambda ds: ds,
    "shard": lambda ds: ds.shard(3, 1),
    "node": lambda ds: ds.split_by_node(1, 2),
    "filtered": lambda ds: ds.filter(lambda row: row["i"] % 3 != 0),
}


def run(view: Any, epochs: range) -> list[int]:
    """Every row's ``i`` over ``epochs``, as a training loop iterates: set_epoch, then the epoch's rows."""
    got = []
    for epoch in epochs:
        view.set_epoch(epoch)
        got.extend(row["i"] for row in view)
    return got


@settings(
    derandomize=True,  # a fixed seed: CI runs the same examples every time
    database=None,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    view_name=st.sampled_from(sorted(VIEWS)),
    shuffle=st.booleans(),
    seed=st.integers(0, 3),
    buffer_size=st.sampled_from([1, 100, 300, 700, 5000]),
    rank_of=st.sampled_from([(0, 1), (0, 2), (1, 2), (2, 3)]),
    stop_at=st.floats(0, 1),
)
@example(view_name="node", shuffle=True, seed=1, buffer_size=300, rank_of=(1, 2), stop_at=0.5)  # an epoch's end
@example(view_name="all", shuffle=True, seed=0, buffer_size=700, rank_of=(0, 1), stop_at=1.0)  # the run's end
@example(view_name="shard", shuffle=False, seed=0, buffer_size=1, rank_of=(0, 2), stop_at=0.0)  # before a row
def test_a_stop_anywhere_resumes_as_one_uninterrupted_run(
    numbers: CachedDataset,
    view_name: str,
    shuffle: bool,
    seed: int,
    buffer_size: int,
    rank_of: tuple[int, int],
    stop_at: float,
) -> None:
    rank, world_size = rank_of
    view = VIEWS[view_name](numbers)
    options = {"shuffle": shuffle, "seed": seed, "buffer_size": buffer_size, "rank": rank, "world_size": world_size}
    whole = run(view.to_iterable(**options), range(EPOCHS))
    stop = round(stop_at * len(whole))  # 0 and the very end included, and every epoch boundary in between

    first = view.to_iterable(**options)
    before: list[int] = []
    for epoch in range(EPOCHS):
        first.set_epoch(epoch)
        rows = iter(first)
        while len(before) < stop and (row := next(rows, None)) is not None:
            before.append(row["i"])
        if len(before) == stop:
            break
    state = json.loads(json.dumps(first.state_dict()))
    assert len(json.dumps(state)) < 1000

    resumed = view.to_iterable(**options)
    resumed.load_state_dict(state)
    after = run(resumed, range(resumed.epoch, EPOCHS))
    assert before + after == whole


def test_a_resume_reads_none_of_the_rows_already_yielded(numbers: CachedDataset, tmp_path: Path) -> None:
    options = {"shuffle": True, "seed": 7, "buffer_size": 300}
    whole = [row["i"] for row in numbers.to_iterable(**options)]
    for stop in (1, 299, 300, 301, 555, ROWS - 1, ROWS):
        first = numbers.to_iterable(**options)
        rows = iter(first)
        before = [next(rows)["i"] for _ in range(stop)]
        resumed = numbers.to_iterable(**options)
        resumed.load_state_dict(json.loads(json.dumps(first.state_dict())))
        log = tmp_path / f"reads-{stop}"
        resumed._read = RecordedRead(resumed._read, log)  # records, then reads the real shard files
        after = [row["i"] for row in resumed]
        assert before + after == whole
        assert sorted(read_rows(log)) == sorted(after), stop  # each row due read once, none of those yielded


@pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")  # torchdata 0.11 on torch 2.13
@pytest.mark.parametrize("persistent", [False, True])
def test_stateful_dataloader_with_two_workers_resumes_mid_epoch(
    numbers: CachedDataset, tmp_path: Path, persistent: bool
) -> None:
    def loader_of(view: Any) -> Any:
        return StatefulDataLoader(view, batch_size=16, num_workers=2, collate_fn=keep, persistent_workers=persistent)

    options = {"shuffle": True, "seed": 3, "buffer_size": 200}
    view = numbers.to_iterable(**options)
    loader = loader_of(view)
    whole = []
    for epoch in range(EPOCHS):
        view.set_epoch(epoch)
        whole.extend(row["name"] for batch in loader for row in batch)
    assert sorted(whole) == sorted(f"k{i}" for i in range(ROWS) for _ in range(EPOCHS))

    view = numbers.to_iterable(**options)
    loader = loader_of(view)
    before = []
    for batch in loader:
        before.extend(row["name"] for row in batch)
        if len(before) >= 16 * 23:  # mid-epoch: 23 of the epoch's 70 batches
            break
    state = copy.deepcopy(loader.state_dict())
    del loader

    resumed_view = numbers.to_iterable(**options)
    log = tmp_path / "reads"
    resumed_view._read = RecordedRead(resumed_view._read, log)  # pickled to the workers with the view
    resumed = loader_of(resumed_view)
    resumed.load_state_dict(state)
    after = [row["name"] for batch in resumed for row in batch]  # the rest of epoch 0
    assert before + after == whole[:ROWS]
    assert not {f"k{i}" for i in read_rows(log)} & set(before)  # the workers read no row yielded before the stop
    assert len(read_rows(log)) == len(after)
    resumed_view.set_epoch(1)
    assert [row["name"] for batch in resumed for row in batch] == whole[ROWS:]


def test_a_new_process_resumes_from_a_saved_state(numbers: CachedDataset, tmp_path: Path) -> None:
    options = {"shuffle": True, "seed": 11, "buffer_size": 256, "rank": 1, "world_size": 2}
    whole = [row["i"] for row in numbers.to_iterable(**options)]
    first = numbers.to_iterable(**options)
    rows = iter(first)
    before = [next(rows)["i"] for _ in range(200)]
    (tmp_path / "state.json").write_text(json.dumps(first.state_dict()))
    script = textwrap.dedent(
        f"""
        import json
        import stable_explore as se
        ds = se.load({numbers.ref!r}, home={str(numbers.home)!r}).with_format("python")
        view = ds.to_iterable(**{options!r})
        view.load_state_dict(json.loads(open({str(tmp_path / "state.json")!r}).read()))
        print(json.dumps([row["i"] for row in view]))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert before + json.loads(done.stdout.splitlines()[-1]) == whole


def test_a_state_from_other_rows_or_settings_is_refused(numbers: CachedDataset, tmp_path: Path) -> None:
    view = numbers.to_iterable(shuffle=True, seed=1)
    next(iter(view))
    state = json.loads(json.dumps(view.state_dict()))
    assert state["positions"] == {"0": 1}
    assert {"format", "version", "seed", "epoch"} <= set(state)

    other = se.build(
        ({"i": i, "name": f"k{i}"} for i in range(50)),
        se.Features(i=se.Value("int64"), name=se.Value("string")),
        name="numbers", home=numbers.home, progress=False,
    )  # fmt: skip
    with pytest.raises(
        InvalidOptionError, match=f"saved on version '{numbers.version}'.*reads version '{other.version}'"
    ):
        other.to_iterable(shuffle=True, seed=1).load_state_dict(state)
    with pytest.raises(InvalidOptionError, match="saved with seed=1, this iterable has seed=2"):
        numbers.to_iterable(shuffle=True, seed=2).load_state_dict(state)
    with pytest.raises(InvalidOptionError, match="saved with shuffle=True, this iterable has shuffle=False"):
        numbers.to_iterable(seed=1).load_state_dict(state)
    with pytest.raises(InvalidOptionError, match="saved with rank=0, this iterable has rank=1"):
        numbers.to_iterable(shuffle=True, seed=1, rank=1, world_size=2).load_state_dict(state)
    with pytest.raises(InvalidOptionError, match=r"other rows of version .*\(another filter, shard or split_by_node\)"):
        numbers.shard(2, 0).to_iterable(shuffle=True, seed=1).load_state_dict(state)
    with pytest.raises(InvalidOptionError, match="has format 0, this version of stable-explore reads format 1"):
        numbers.to_iterable(shuffle=True, seed=1).load_state_dict({**state, "format": 0})
    with pytest.raises(InvalidOptionError, match="lacks positions"):
        numbers.to_iterable(shuffle=True, seed=1).load_state_dict({k: v for k, v in state.items() if k != "positions"})
    with pytest.raises(InvalidArgumentTypeError, match="takes the dict state_dict\\(\\) returned, got str"):
        numbers.to_iterable().load_state_dict(json.dumps(state))  # type: ignore[arg-type]

    two_workers = numbers.to_iterable(shuffle=True, seed=1)
    two_workers.load_state_dict(state)
    with pytest.raises(InvalidOptionError, match="saved with 1 DataLoader worker\\(s\\), but this iteration runs 2"):
        two_workers.rows(0, 2)


def test_a_state_before_iterating_or_after_an_epoch_says_so(numbers: CachedDataset) -> None:
    view = numbers.to_iterable(shuffle=True, seed=5, epoch=3)
    assert view.state_dict()["epoch"] == 3
    assert view.state_dict()["positions"] == {}
    every = [row["i"] for row in view]
    done = view.state_dict()
    assert done["positions"] == {"0": ROWS}
    resumed = numbers.to_iterable(shuffle=True, seed=5)
    resumed.load_state_dict(done)
    assert resumed.epoch == 3
    assert list(resumed) == []  # epoch 3 was finished
    assert [row["i"] for row in resumed] == every  # the next iteration of the same epoch starts over
    assert np.array_equal(np.sort(every), np.arange(ROWS))


def test_a_version_on_a_bucket_resumes_reading_only_the_rows_due(s3_env: Any, tmp_path: Path) -> None:
    """The same on a bucket home (SeaweedFS): a resumed window's rows still due are fetched, no others."""
    ds = se.build(
        ({"i": i, "name": f"k{i}"} for i in range(700)),
        se.Features(i=se.Value("int64"), name=se.Value("string")),
        name="numbers", home=f"s3://team/resume-{tmp_path.name}", progress=False, batch_size=300, shard_size=1,
    )  # fmt: skip
    ds = ds.with_format("python")
    options = {"shuffle": True, "seed": 4, "buffer_size": 300}
    whole = [row["i"] for row in ds.to_iterable(**options)]
    first = ds.to_iterable(**options)
    rows = iter(first)
    before = [next(rows)["i"] for _ in range(400)]
    resumed = se.load(ds.ref, home=ds.home).with_format("python").to_iterable(**options)
    resumed.load_state_dict(json.loads(json.dumps(first.state_dict())))
    log = tmp_path / "reads"
    resumed._read = RecordedRead(resumed._read, log)
    after = [row["i"] for row in resumed]
    assert before + after == whole
    assert sorted(read_rows(log)) == sorted(after)
