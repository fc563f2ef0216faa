"""Durable file-system steps: early writeback of a file being written."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from stable_explore import _fsutil
from stable_explore._fsutil import fsync_path, start_writeback


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux-only")
def test_linux_finds_sync_file_range() -> None:
    # Without it every build would silently pay the whole fsync at the end.
    assert _fsutil._sync_file_range() is not None


def test_start_writeback_keeps_the_file_as_written(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    data = os.urandom(3 * 2**20)
    with path.open("wb", buffering=0) as f:
        f.write(data[: 2**20])
        start_writeback(f.fileno(), 0, 2**20)
        f.write(data[2**20 :])
        start_writeback(f.fileno(), 2**20, 0)  # an empty range is a no-op
        start_writeback(f.fileno(), 2**20, 2 * 2**20)
    fsync_path(path)
    assert path.read_bytes() == data


def test_start_writeback_on_a_closed_descriptor_does_not_raise(tmp_path: Path) -> None:
    # It is only a hint: a failure leaves the work to fsync, which reports real errors.
    fd = os.open(tmp_path / "g.bin", os.O_WRONLY | os.O_CREAT)
    os.close(fd)
    start_writeback(fd, 0, 4096)
