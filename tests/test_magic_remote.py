"""%stable_cache with --home s3://... in a real IPython shell, against the real SeaweedFS of the test session."""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

pytest.importorskip("IPython", reason="IPython is in the test extras")
pytest.importorskip("obstore")

from IPython.core.interactiveshell import InteractiveShell

import stable_explore as se
from stable_explore.storage.backends.read_cache import CACHE_ENV

if TYPE_CHECKING:
    from tests.s3server import S3Server

_prefixes = itertools.count()


@pytest.fixture
def shell(tmp_path: Path, s3_env: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "read-cache"))
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "stable_explore")
    ip.run_cell(
        textwrap.dedent(
            """
            import stable_explore as se
            features = se.Features(x=se.Value("int64"), word=se.Value("string"))
            def words(n):
                words.runs.append(n)
                for i in range(n):
                    yield f"k{i}", {"x": i, "word": f"w{i}"}
            words.runs = []
            """
        )
    )
    yield ip
    ip.run_line_magic("unload_ext", "stable_explore")
    ip.reset()


def test_the_magic_builds_into_a_bucket_and_reuses_it(shell: InteractiveShell) -> None:
    url = f"s3://team/magic-{next(_prefixes)}"
    result = shell.run_cell(f"%stable_cache ws = words(5) --features features --home {url} --quiet")
    assert result.error_in_exec is None, result.error_in_exec
    ds = shell.user_ns["ws"]
    assert ds.home == url
    assert [row["word"] for row in ds] == ["w0", "w1", "w2", "w3", "w4"]
    again = shell.run_cell(f"%stable_cache ws = words(5) --features features --home {url} --quiet")
    assert again.error_in_exec is None
    assert shell.user_ns["words"].runs == [5], "the second run is a cache hit, decided from the bucket"
    assert se.load(f"{url}/ws").version == ds.version
