"""Durable file-system steps: early writeback of a file being written."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from stable_explore.storage.backends import fsutil as _fsutil
from stable_explore.storage.backends.fsutil import fsync_path, start_writeback


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux-only")
def test_linux_starts_writeback_for_real(tmp_path: Path) -> None:
    # start_writeback ignores failures (it is a hint), so check the call itself succeeds here:
    # a wrong constant or argument type would otherwise silently leave all the work to fsync.
    assert _fsutil.writeback_supported()
    function = _fsutil._sync_file_range()
    with (tmp_path / "f.bin").open("wb", buffering=0) as f:
        f.write(os.urandom(2**20))
        assert function(f.fileno(), 0, 2**20, _fsutil._SYNC_FILE_RANGE_WRITE) == 0


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
