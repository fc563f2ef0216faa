"""Signals kept like maps (version + signal + parameters), on any executor, with progress and nothing half-written."""

from __future__ import annotations

import io
import multiprocessing
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import signals
from stable_explore.errors import InvalidOptionError
from stable_explore.signals.cache import COUNTS, SIGNALS_DIR


def _jpeg(rng: np.random.Generator) -> bytes:
    coarse = PILImage.fromarray(rng.integers(0, 256, (5, 5), dtype=np.uint8)).resize((48, 48))
    buffer = io.BytesIO()
    coarse.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


@pytest.fixture
def photos(tmp_path: Path) -> se.CachedDataset:
    rng = np.random.default_rng(0)
    rows = [{"image": _jpeg(rng), "label": i % 2} for i in range(1200)]
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=["a", "b"]))
    return se.build(rows, features, name="photos", home=tmp_path / "home", progress=False)


def _kept(ds: se.CachedDataset) -> list[Path]:
    assert isinstance(ds.home, Path)
    folder = ds.home / "photos" / SIGNALS_DIR
    return sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_a_second_call_and_a_new_kernel_read_the_kept_hashes(photos: se.CachedDataset) -> None:
    before = COUNTS.copy()
    first = signals.perceptual_hashes(photos, progress=False)
    assert COUNTS["written"] == before["written"] + 1
    assert [p.parts[0] for p in _kept(photos)] == [photos.version]
    second = signals.perceptual_hashes(photos, progress=False)
    assert COUNTS["read"] == before["read"] + 1
    assert COUNTS["written"] == before["written"] + 1  # nothing computed again
    assert second.equals(first)
    # a new process (a restarted kernel) reads the file instead of decoding every image
    script = textwrap.dedent(
        f"""
        import stable_explore as se
        from stable_explore import signals
        from stable_explore.signals.cache import COUNTS
        ds = se.load("photos", home={str(photos.home)!r})
        table = signals.perceptual_hashes(ds, progress=False)
        print(dict(COUNTS), table.column("hash").to_pylist() == {first.column("hash").to_pylist()!r})
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(signals.__file__).parents[2])}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "{'read': 1} True"


def test_other_parameters_rows_or_a_saved_edit_compute_again(photos: se.CachedDataset) -> None:
    full = signals.perceptual_hashes(photos, progress=False)
    before = COUNTS.copy()
    dhash = signals.perceptual_hashes(photos, method="dhash", progress=False)
    assert COUNTS["written"] == before["written"] + 1
    assert not dhash.column("hash").equals(full.column("hash"))
    view = signals.perceptual_hashes(photos[10:50], progress=False)  # another set of rows: its own entry
    assert COUNTS["written"] == before["written"] + 2
    assert view.column("hash").to_pylist() == full.column("hash").to_pylist()[10:50]
    saved = photos.drop([0]).relabel({1: "a"}).save(message="drop 0")
    edited = signals.perceptual_hashes(saved, progress=False)
    assert COUNTS["written"] == before["written"] + 3
    assert edited.column("hash").to_pylist() == full.column("hash").to_pylist()[1:]
    assert {p.parts[0] for p in _kept(photos)} == {photos.version, saved.version}
    stats = signals.image_stats(photos, progress=False)
    again = signals.image_stats(photos, progress=False)
    assert again.equals(stats)
    assert COUNTS["written"] == before["written"] + 4
    assert COUNTS["read"] == before["read"] + 1
    embedded = signals.pixel_embeddings(photos, progress=False)
    assert np.array_equal(signals.pixel_embeddings(photos, progress=False), embedded)
    assert COUNTS["read"] == before["read"] + 2
    assert signals.pixel_embeddings(photos, dims=4, progress=False).shape == (1200, 5)  # other dims: computed
    assert COUNTS["written"] == before["written"] + 6


def test_cache_false_neither_reads_nor_keeps(photos: se.CachedDataset) -> None:
    before = COUNTS.copy()
    signals.perceptual_hashes(photos, cache=False, progress=False)
    signals.perceptual_hashes(photos, cache=False, progress=False)
    assert before == COUNTS
    assert _kept(photos) == []


class _StopsAfterOne(ThreadPoolExecutor):
    """An executor whose second task is interrupted, as Ctrl-C in the kernel would."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.submitted = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted += 1
        if self.submitted == 2:
            failed: Future[Any] = Future()
            failed.set_exception(KeyboardInterrupt())
            return failed
        return super().submit(fn, *args, **kwargs)


def test_an_interrupted_signal_keeps_nothing(photos: se.CachedDataset) -> None:
    with _StopsAfterOne() as stopping, pytest.raises(KeyboardInterrupt):
        signals.perceptual_hashes(photos, executor=stopping, progress=False)
    assert _kept(photos) == []  # neither the file nor a temp file beside it
    signals.perceptual_hashes(photos, progress=False)
    assert len(_kept(photos)) == 1


def test_a_long_signal_shows_progress(photos: se.CachedDataset, capsys: pytest.CaptureFixture[str]) -> None:
    signals.image_stats(photos, cache=False)
    err = capsys.readouterr().err
    assert "measuring photos" in err
    assert "1200/1200" in err


def test_a_given_spawn_pool_starts_under_a_main_module_without_spec(
    photos: se.CachedDataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An IPython shell started inside a script leaves a __main__ without __spec__: a user's spawn pool still starts."""
    import types

    hashes = signals.perceptual_hashes(photos, cache=False, progress=False)
    main = types.ModuleType("__main__")
    del main.__spec__
    monkeypatch.setitem(sys.modules, "__main__", main)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert signals.perceptual_hashes(photos, executor=pool, cache=False, progress=False).equals(hashes)


def test_any_executor_gives_the_serial_result(photos: se.CachedDataset) -> None:
    hashes = signals.perceptual_hashes(photos, cache=False, progress=False)
    stats = signals.image_stats(photos, cache=False, progress=False)
    embedded = signals.pixel_embeddings(photos, cache=False, progress=False)
    spawn = multiprocessing.get_context("spawn")  # as a kernel's pool starts (forking a threaded process is unsafe)
    with ThreadPoolExecutor(2) as threads, ProcessPoolExecutor(2, mp_context=spawn) as processes:
        for pool in (threads, processes):
            assert signals.perceptual_hashes(photos, executor=pool, cache=False, progress=False).equals(hashes)
            assert signals.image_stats(photos, executor=pool, cache=False, progress=False).equals(stats)
            on_pool = signals.pixel_embeddings(photos, executor=pool, cache=False, progress=False)
            assert np.array_equal(on_pool, embedded)
        near = signals.near_duplicates(photos, executor=threads, cache=False, progress=False)
        assert near.equals(signals.near_duplicates(photos, cache=False, progress=False))
        outliers = signals.embedding_outliers(photos, executor=threads)
        assert outliers.equals(signals.embedding_outliers(photos))
    with pytest.raises(InvalidOptionError, match=r"concurrent\.futures\.Executor"):
        signals.image_stats(photos, executor="dask")  # type: ignore[arg-type]


def test_a_dask_cluster_gives_the_serial_result(photos: se.CachedDataset, dask_executor: Executor) -> None:
    on_dask = signals.perceptual_hashes(photos, executor=dask_executor, progress=False)
    assert on_dask.equals(signals.perceptual_hashes(photos, cache=False, progress=False))
    stats = signals.image_stats(photos, executor=dask_executor, cache=False, progress=False)
    assert stats.equals(signals.image_stats(photos, cache=False, progress=False))
