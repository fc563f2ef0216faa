"""Parallel builds (issue 14): num_proc= and executor= give the serial build's version id; failures publish nothing.

The generators live at module level so that spawned workers (and Dask's) import them by name;
the notebook test covers generators that can only travel by value.
"""

from __future__ import annotations

import multiprocessing
import os
import platform
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
import pytest

import stable_explore as se
from stable_explore import Features, Value
from stable_explore.catalog import BuildOptions
from stable_explore.catalog.parallel.executor import TaskTraceback
from stable_explore.catalog.parallel.tasks import TaskFailure
from stable_explore.catalog.plan import plan_source

if TYPE_CHECKING:
    import pyarrow as pa

NUM = Features(x=Value("int64"), s=Value("string"))


def plain(items: list[int], scale: int = 1) -> Iterator[dict[str, Any]]:
    """Rows without keys: a serial build keys them 0..n-1, so every task after the first is re-keyed."""
    for item in items:
        for copy in range(3):
            yield {"x": item * scale + copy, "s": f"item {item}/{copy}"}


def keyed(items: list[int]) -> Iterator[tuple[str, dict[str, Any]]]:
    for item in items:
        yield f"k{item}", {"x": item, "s": str(item)}


def mixed(items: list[int]) -> Iterator[Any]:
    """Some rows keyed by the user (large ints), the rest keyed by their index."""
    for item in items:
        if item % 3 == 0:
            yield 10_000 + item, {"x": item, "s": "keyed"}
        else:
            yield {"x": item, "s": "plain"}


def fails_at(items: list[int], bad: int) -> Iterator[tuple[str, dict[str, Any]]]:
    for item in items:
        if item == bad:
            raise ValueError(f"cannot read item {item}")
        yield f"k{item}", {"x": item, "s": str(item)}


def dies_at(items: list[int], bad: int) -> Iterator[dict[str, Any]]:
    for item in items:
        if item == bad:
            os._exit(3)  # a worker killed mid-task: no exception, no result
        yield {"x": item, "s": str(item)}


def bad_field_at(items: list[int], bad: int) -> Iterator[tuple[str, dict[str, Any]]]:
    for item in items:
        yield f"k{item}", {"x": "not a number" if item == bad else item, "s": str(item)}


def slow(items: list[int]) -> Iterator[dict[str, Any]]:
    for item in items:
        time.sleep(0.05)
        yield {"x": item, "s": str(item)}


def slow_then_gated(items: list[int], gate: str) -> Iterator[dict[str, Any]]:
    """``slow``'s rows, the last of them only once the file ``gate`` exists (a minute at most)."""
    for n, item in enumerate(items):
        if n == len(items) - 1:
            deadline = time.monotonic() + 60
            while not Path(gate).exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        time.sleep(0.05)
        yield {"x": item, "s": str(item)}


def repeated(items: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    for item in items:
        yield item, {"x": len(item), "s": item}


def key_kinds(items: list[int]) -> Iterator[tuple[Any, dict[str, Any]]]:
    for item in items:
        yield (item if item >= 3 else f"k{item}"), {"x": item, "s": ""}


def pair(files: list[int], labels: list[str]) -> Iterator[dict[str, Any]]:
    for file, label in zip(files, labels, strict=True):
        yield {"x": file, "s": label}


def no_lists(root: str) -> Iterator[dict[str, Any]]:
    yield {"x": 1, "s": root}


def churning(items: list[int]) -> Iterator[dict[str, Any]]:
    """Per item, what an image decoder's row does to malloc (2.4 MB in 300 kB blocks, freed); x: page faults it took."""
    import resource

    for item in items:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        held = [bytearray(300_000) for _ in range(8)]
        del held
        yield {"x": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, "s": str(item)}


def staged(home: Path, name: str) -> list[str]:
    """What a build left in the dataset's versions folder besides published versions (temp dirs, staging)."""
    folder = home / name / "versions"
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) if folder.exists() else []


def with_this_checkout() -> str:
    """PYTHONPATH for a child process (a script, a kernel) that imports this checkout's stable_explore."""
    return os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")])


def rows_of(ds: se.CachedDataset) -> pa.Table:
    return ds.to_arrow()


@pytest.mark.parametrize("source", [plain, keyed, mixed])
def test_num_proc_gives_the_serial_version_id_and_a_rebuild_is_a_hit(home: Path, source: Any) -> None:
    items = list(range(11))  # uneven: 6 + 5 items
    # small batches and shards, so that every task writes several shards and re-keying crosses shard ends
    common = {"kwargs": {"items": items}, "home": home, "progress": False, "batch_size": 4, "shard_size": 64}
    serial = se.build(source, NUM, name="serial", **common)
    parallel = se.build(source, NUM, name="parallel", num_proc=2, **common)
    assert parallel.version == serial.version
    # the digest runs too, so a first save of either rehashes only the runs it edits
    assert parallel.cache_meta.content_runs == serial.cache_meta.content_runs
    assert parallel.build_info == "built: first build of parallel"
    assert rows_of(parallel).equals(rows_of(serial))
    assert parallel.num_shards > 2
    se.verify(parallel)
    assert se.fsck(home=home).ok
    assert staged(home, "parallel") == []
    # the same source is one cache entry, however it was built
    again = se.build(source, NUM, name="parallel", num_proc=2, **common)
    assert (again.version, again.build_info) == (parallel.version, "reused: same source, arguments and features")
    assert se.build(source, NUM, name="parallel", **common).build_info.startswith("reused")
    assert se.build(source, NUM, name="serial", num_proc=3, **common).build_info.startswith("reused")


def test_num_proc_and_executor_are_not_part_of_the_fingerprint() -> None:
    def plan(**options: Any) -> str | None:
        return plan_source(plain, NUM, BuildOptions(**options), kwargs={"items": [1, 2]}).fingerprint

    assert plan() == plan(num_proc=4) == plan(executor=ThreadPoolExecutor(1))
    assert plan() != plan_source(plain, NUM, BuildOptions(), kwargs={"items": [1, 3]}).fingerprint


def test_any_executor_runs_the_tasks_and_stays_open(home: Path) -> None:
    serial = se.build(keyed, NUM, name="n", kwargs={"items": list(range(20))}, home=home, progress=False)
    with ProcessPoolExecutor(2) as pool:
        built = se.build(
            keyed, NUM, name="m", kwargs={"items": list(range(20))}, home=home, progress=False, executor=pool
        )
        assert built.version == serial.version
        assert built.num_shards == 20  # one task per item (fewer than 32): one shard each
        assert pool.submit(sum, [1, 2]).result() == 3  # the user's pool is theirs: still open
    with ThreadPoolExecutor(3) as threads:
        four = se.build(
            keyed, NUM, name="t", kwargs={"items": list(range(20))}, home=home, progress=False, executor=threads,
            num_proc=4,
        )  # fmt: skip
    assert (four.version, four.num_shards) == (serial.version, 4)


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="tunes glibc's malloc only"
)
def test_our_pool_workers_keep_freed_memory_instead_of_faulting_it_back_every_row(home: Path) -> None:
    items = list(range(40))
    ours = se.build(churning, NUM, name="ours", kwargs={"items": items}, home=home, progress=False, num_proc=2)
    # the control: workers of a new interpreter each, without our initializer (the fork server's children would
    # share its malloc state, which what it has imported, and freed, moves: glibc raises its mmap threshold)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=context) as pool:
        plain_pool = se.build(
            churning, NUM, name="plain", kwargs={"items": items}, home=home, progress=False, executor=pool, num_proc=2
        )
    # after each task's first few rows (the heap growing once), a tuned worker reuses the freed pages
    tuned = sorted(ours.to_arrow().column("x").to_pylist())[:-10]
    untuned = sorted(plain_pool.to_arrow().column("x").to_pylist())[:-10]
    assert max(tuned) < 50
    assert min(untuned) > 300  # glibc gave the 2.4 MB back after every row: ~590 pages to fault in again


def test_a_dask_cluster_gives_the_serial_version_id(home: Path, dask_executor: Executor) -> None:
    common = {"kwargs": {"items": list(range(9))}, "home": home, "progress": False, "batch_size": 5}
    serial = se.build(plain, NUM, name="serial", **common)
    on_dask = se.build(plain, NUM, name="dask", executor=dask_executor, num_proc=2, **common)
    assert on_dask.version == serial.version
    assert rows_of(on_dask).equals(rows_of(serial))
    assert staged(home, "dask") == []
    many = se.build(plain, NUM, name="dask", executor=dask_executor, **common)  # one task per item
    assert many.build_info.startswith("reused")
    nine = se.build(plain, NUM, name="nine", executor=dask_executor, **common)
    assert (nine.version, nine.num_shards) == (serial.version, 9)


def test_a_failing_task_on_dask_publishes_nothing_and_names_the_task(home: Path, dask_executor: Executor) -> None:
    with pytest.raises(ValueError, match="cannot read item 7") as caught:
        se.build(
            fails_at, NUM, name="f", kwargs={"items": list(range(9)), "bad": 7}, home=home, progress=False,
            executor=dask_executor, num_proc=3,
        )  # fmt: skip
    assert "in task 2 of 3 (items=[6, 7, 8]), at row 1 of the task (the row after key 'k6')" in caught.value.__notes__
    assert staged(home, "f") == []
    assert not (home / "f" / "versions").exists() or not any((home / "f" / "versions").iterdir())


def slow_rows_or_failing(items: list[int], bad: int, log: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows of 0.3 s, each logged once read; ``bad`` fails as soon as some other task has logged a row."""
    for item in items:
        if item == bad:
            deadline = time.monotonic() + 60
            while not (Path(log).exists() and Path(log).read_text()) and time.monotonic() < deadline:
                time.sleep(0.01)
            raise ValueError(f"cannot read item {item}")
        time.sleep(0.3)
        with open(log, "a") as out:
            out.write(f"{item}\n")
        yield f"k{item}", {"x": item, "s": str(item)}


def test_a_failed_build_on_dask_returns_once_its_running_tasks_have_stopped(
    home: Path, tmp_path: Path, dask_executor: Executor
) -> None:
    """Dask's executor calls a running task cancelled (its cancel cannot stop it): the build waits for it to end.

    Seen in CI: the build removed its staging folder while the other task still wrote shards into it, and
    the folder stayed, with the task's files, until the process ended.
    """
    log = tmp_path / "rows.log"
    with pytest.raises(ValueError, match="cannot read item 20"):
        se.build(
            slow_rows_or_failing, NUM, name="f", kwargs={"items": list(range(40)), "bad": 20, "log": str(log)},
            home=home, progress=False, executor=dask_executor, num_proc=2,
        )  # fmt: skip
    read_when_it_failed = log.read_text().split()
    assert read_when_it_failed, "the first task was running when the second failed"
    time.sleep(1.0)  # three rows' time: a task still running would read another
    assert log.read_text().split() == read_when_it_failed, "a task read on after the build had returned"
    assert staged(home, "f") == []


def test_a_task_error_publishes_nothing_and_names_the_task_row_and_users_code(home: Path) -> None:
    kept = se.build(keyed, NUM, name="f", kwargs={"items": [1]}, home=home, progress=False)
    with pytest.raises(ValueError, match="cannot read item 13") as caught:
        se.build(
            fails_at, NUM, name="f", kwargs={"items": list(range(16)), "bad": 13}, home=home, progress=False,
            num_proc=2, batch_size=2,
        )  # fmt: skip
    error = caught.value
    assert (
        error.__notes__[0]
        == "in task 1 of 2 (items=[8, 9, ..., 15] (8 items)), at row 5 of the task (the row after key 'k12')"
    )
    assert error.__notes__[-1].endswith(f"; nothing was saved; f@{kept.version} is kept as the latest version")
    # the worker's traceback comes as the cause, trimmed to the user's code (no stable-explore frames)
    assert isinstance(error.__cause__, TaskTraceback)
    assert 'raise ValueError(f"cannot read item {item}")' in error.__cause__.text
    assert "stable_explore" not in error.__cause__.text
    assert [p.name for p in (home / "f" / "versions").iterdir()] == [kept.version]
    assert se.load("f", home=home).version == kept.version


def test_a_bad_row_in_a_task_names_the_field_key_and_row_within_the_task(home: Path) -> None:
    with pytest.raises(se.EncodingError) as caught:
        se.build(
            bad_field_at, NUM, name="b", kwargs={"items": list(range(10)), "bad": 8}, home=home, progress=False,
            num_proc=2,
        )  # fmt: skip
    error = caught.value
    assert (error.field, error.key, error.index) == ("x", "k8", 3)
    assert "in task 1 of 2 (items=[5, 6, ..., 9] (5 items)), at row 3 of the task (key 'k8')" in error.__notes__
    assert staged(home, "b") == []


def test_a_killed_worker_publishes_nothing_and_says_so(home: Path) -> None:
    with pytest.raises(se.ParallelBuildError, match="a worker ended abruptly") as caught:
        se.build(
            dies_at, NUM, name="k", kwargs={"items": list(range(10)), "bad": 7}, home=home, progress=False,
            num_proc=2,
        )  # fmt: skip
    message = str(caught.value)
    assert "killed by a signal, out of memory, or os._exit" in message
    assert "task 1 of 2 (items=[5, 6, ..., 9] (5 items))" in message
    assert caught.value.__notes__[-1].endswith("; nothing was saved; no version of k existed before")
    assert staged(home, "k") == []
    assert not (home / "k" / "versions").exists() or not any((home / "k" / "versions").iterdir())


def test_a_key_repeated_across_tasks_is_refused_as_in_a_serial_build(home: Path) -> None:
    items = ["a", "b", "c", "d", "b", "e"]
    with pytest.raises(se.DuplicateKeyError) as serial:
        se.build(repeated, NUM, name="s", kwargs={"items": items}, home=home, progress=False)
    with pytest.raises(se.DuplicateKeyError) as parallel:
        se.build(repeated, NUM, name="p", kwargs={"items": items}, home=home, progress=False, num_proc=2)
    assert str(parallel.value) == str(serial.value)
    assert "rows 1 and 4 both have key 'b'" in str(parallel.value)
    assert staged(home, "p") == []


def test_a_worker_that_cannot_see_the_staging_folder_says_so(tmp_path: Path) -> None:
    from stable_explore.catalog.parallel.tasks import WriteSpec, run_task, ship, split_arguments

    (task,) = split_arguments(plain, (), {"items": [1]}, 1)
    spec = WriteSpec(NUM, str(tmp_path / "elsewhere" / "tasks"), 1 << 20, 10, None)
    failure = run_task(ship(plain), task, spec)
    assert isinstance(failure, TaskFailure)
    assert isinstance(failure.error, se.ParallelBuildError)
    assert "task 0 of 1 (items=[1]): the worker cannot see the build's staging folder" in str(failure.error)
    assert "must share the catalog home's file system" in str(failure.error)


def test_tasks_with_different_key_types_are_refused(home: Path) -> None:
    with pytest.raises(se.EncodingError, match="task 1 yields int keys, but task 0 yielded string keys"):
        se.build(key_kinds, NUM, name="kk", kwargs={"items": list(range(6))}, home=home, progress=False, num_proc=2)


def test_splitting_short_uneven_and_empty_lists(home: Path) -> None:
    serial = se.build(plain, NUM, name="s", kwargs={"items": [4, 5]}, home=home, progress=False)
    short = se.build(plain, NUM, name="p", kwargs={"items": [4, 5]}, home=home, progress=False, num_proc=4)
    assert (short.version, short.num_shards) == (serial.version, 2)  # two items: two tasks, not four
    with pytest.warns(se.EmptyBuildWarning):
        empty_serial = se.build(plain, NUM, name="e", kwargs={"items": []}, home=home, progress=False)
    with pytest.warns(se.EmptyBuildWarning):
        empty = se.build(plain, NUM, name="e2", kwargs={"items": []}, home=home, progress=False, num_proc=2)
    assert (len(empty), empty.version) == (0, empty_serial.version)
    # positional list arguments split too (the magic passes them so); a tuple goes whole to every task
    both = se.build(pair, NUM, name="pair", args=([1, 2, 3], ["a", "b", "c"]), home=home, progress=False, num_proc=2)
    assert both.to_pandas()["s"].tolist() == ["a", "b", "c"]


def test_arguments_that_cannot_be_split_are_refused_before_anything_runs(home: Path) -> None:
    with pytest.raises(se.InvalidOptionError, match=r"none is a list \(arguments: root \(str\)\)"):
        se.build(no_lists, NUM, name="n", kwargs={"root": "data"}, home=home, progress=False, num_proc=2)
    with pytest.raises(se.InvalidOptionError, match="must have one length, but files has 3, labels has 2 items"):
        se.build(
            pair, NUM, name="n", kwargs={"files": [1, 2, 3], "labels": ["a", "b"]}, home=home, progress=False,
            num_proc=2,
        )  # fmt: skip
    with pytest.raises(se.InvalidArgumentTypeError, match="not a function"):
        se.build([{"x": 1, "s": ""}], NUM, name="n", home=home, progress=False, num_proc=2)
    with pytest.raises(se.InvalidOptionError, match="num_proc must be a positive int"):
        se.build(plain, NUM, name="n", kwargs={"items": [1]}, home=home, progress=False, num_proc=0)
    with pytest.raises(se.InvalidArgumentTypeError, match=r"executor must be a concurrent\.futures\.Executor"):
        se.build(plain, NUM, name="n", kwargs={"items": [1]}, home=home, progress=False, executor="dask")
    assert not (home / "n").exists()
    # num_proc=1 is a serial build: nothing to split is fine
    assert len(se.build(no_lists, NUM, name="n", kwargs={"root": "d"}, home=home, progress=False, num_proc=1)) == 1


def test_one_progress_bar_counts_every_tasks_rows(home: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    from contextlib import contextmanager

    from stable_explore.catalog import Catalog, build_version

    # each task holds back its last row until the bar has moved: on a loaded machine the tasks (half a second
    # each) could otherwise end before the driver's first look at their progress, and the bar moved only at the end
    gate = tmp_path / "the bar moved"

    def moved(rows: int, nbytes: int) -> None:
        seen.append((rows, nbytes))
        gate.touch()

    @contextmanager
    def recording(name: str, total: int | None) -> Iterator[Any]:
        yield moved

    options = BuildOptions(num_proc=2, batch_size=3)
    result = build_version(
        Catalog(home),
        "bar",
        slow_then_gated,
        NUM,
        options,
        kwargs={"items": list(range(20)), "gate": str(gate)},
        progress=recording,
    )
    assert sum(rows for rows, _ in seen) == 20
    assert seen[-1][1] == se.load("bar", home=home).nbytes  # the last call reports the bytes written in all
    assert len(seen) > 2  # the bar moved while the tasks ran, not only at the end
    assert seen[0][0] < 20, "the first move came before every row was read"
    assert not result.reused


INTERRUPTED = """
import signal, sys, time
# Ctrl-C raises KeyboardInterrupt, as in a terminal or a notebook's kernel, even when the tests run in a
# shell's background job: such a job starts with SIGINT ignored, Python then installs no handler, and its
# children inherit the ignoring (the build ran to its end and the test failed)
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {tests!r})
import stable_explore as se
from stable_explore import Features, Value
from catalog.test_parallel import NUM, slow
if __name__ == "__main__":  # workers import this script as a module, as any multiprocessing script's do
    print("building", flush=True)
    se.build(slow, NUM, name="slow", kwargs={{"items": list(range(400))}}, home={home!r}, progress=False, num_proc=2)
"""


def test_ctrl_c_in_the_driver_stops_every_task_and_publishes_nothing(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED.format(tests=str(Path(__file__).parents[1]), home=str(home)))
    env = {
        **os.environ,
        "PYTHONPATH": with_this_checkout(),
    }
    driver = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True,  # a Ctrl-C to the driver alone, as a notebook's interrupt is
    )  # fmt: skip
    try:
        assert driver.stdout is not None
        assert driver.stdout.readline().strip() == "building"
        deadline = time.monotonic() + 60
        while not list((home / "slow").rglob("task-*.progress")) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # both tasks are writing rows
        workers = psutil.Process(driver.pid).children(recursive=True)
        assert len(workers) >= 2
        driver.send_signal(signal.SIGINT)
        stdout, stderr = driver.communicate(timeout=60)
        _, alive = psutil.wait_procs(workers, timeout=15)
        assert alive == []  # every task stopped: no worker outlives the interrupted build
    finally:
        if driver.poll() is None:
            driver.kill()
    # the exit status and output say what happened if the driver ended another way
    assert "KeyboardInterrupt" in stderr, f"exit {driver.returncode}; stdout {stdout!r}; stderr {stderr!r}"
    assert "nothing was saved" in stderr
    assert staged(home, "slow") == []
    assert not (home / "slow").exists()  # nothing published, and the failed first build left no folder


NOTEBOOK_CELLS = [
    "%load_ext stable_explore",
    textwrap.dedent(
        """\
        import stable_explore as se
        from stable_explore import Features, Value
        F = Features(x=Value("int64"), s=Value("string"))
        SUFFIX = "!"

        def squares(files):
            for f in files:
                yield {"x": f * f, "s": str(f) + SUFFIX}
        """
    ),
    textwrap.dedent(
        """\
        serial = se.build(squares, F, name="serial", kwargs={"files": list(range(10))}, progress=False)
        parallel = se.build(squares, F, name="parallel", kwargs={"files": list(range(10))}, num_proc=2, progress=False)
        print("same id:", serial.version == parallel.version, parallel.build_info)
        """
    ),
    "files = list(range(10))\n%stable_cache pets = squares(files) --features F --num-proc 2",
    'print("magic id:", pets.version == serial.version, pets.num_shards)',
]


def test_a_generator_defined_in_a_notebook_builds_with_num_proc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nbclient = pytest.importorskip("nbclient")
    import nbformat

    home = tmp_path / "nbhome"
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(home))
    monkeypatch.setenv("PYTHONPATH", with_this_checkout())
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in NOTEBOOK_CELLS])
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    printed = "".join(o.get("text", "") for c in notebook.cells for o in c.outputs if o.get("name") == "stdout")
    assert "same id: True built: first build of parallel" in printed
    assert "magic id: True 2" in printed
    assert "pets@" in printed


def test_killing_the_parent_of_a_parallel_build_ends_its_workers(home: Path, tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import stable_explore as se
        from tests.catalog.test_parallel import NUM, slow
        se.build(slow, NUM, name="orphans", kwargs={{"items": list(range(2000))}}, home={str(home)!r},
                 progress=False, num_proc=2)
        """
    )
    env = {**os.environ, "PYTHONPATH": with_this_checkout()}
    child = subprocess.Popen([sys.executable, "-c", script], env=env, cwd=str(Path(__file__).parents[2]))
    parent = psutil.Process(child.pid)
    deadline = time.monotonic() + 60
    workers: list[psutil.Process] = []
    while time.monotonic() < deadline:  # the fork server, the resource tracker and two workers
        descendants = parent.children(recursive=True)
        workers = [p for p in descendants if p.ppid() != child.pid]
        if len(workers) >= 2 and len(descendants) >= 4:
            break
        time.sleep(0.1)
    else:
        child.kill()
        pytest.fail(f"the build did not start its workers: {parent.children(recursive=True)}")
    time.sleep(0.5)  # the workers are in the generator now
    descendants = parent.children(recursive=True)
    child.send_signal(signal.SIGKILL)
    child.wait()
    alive = _still_running(descendants, within=5.0)
    for leftover in alive:
        leftover.kill()
    assert alive == [], f"still running 5 s after their parent was killed: {alive}"


def _still_running(processes: list[psutil.Process], *, within: float) -> list[psutil.Process]:
    """Those of ``processes`` still running (not ended, nor a zombie nobody reaped yet) after ``within`` seconds."""

    def running(process: psutil.Process) -> bool:
        try:
            return process.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    deadline = time.monotonic() + within
    alive = [p for p in processes if running(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if running(p)]
    return alive
