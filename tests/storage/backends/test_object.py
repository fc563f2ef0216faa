"""The object store passes the same conformance suite as the local store, against a real S3 server (SeaweedFS)."""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import stable_explore as se
from stable_explore.testing.store import StoreConformance

if TYPE_CHECKING:
    from tests.s3server import S3Server

pytest.importorskip("obstore")

_counter = itertools.count()


class TestObjectStore(StoreConformance):
    @pytest.fixture
    def store(self, s3_env: S3Server) -> se.storage.backends.object.ObjectStore:  # type: ignore[name-defined]
        from stable_explore.storage.backends.object import ObjectStore

        return ObjectStore(f"s3://team/conformance-{next(_counter)}")


def test_a_dead_holders_lease_is_broken_after_its_time(s3_env: S3Server) -> None:
    from stable_explore.storage.backends.object import ObjectStore

    store = ObjectStore("s3://team/leases", lease_seconds=0.5)
    assert store.put_if_absent("d/.build-x.lock", '{"host": "gone", "pid": 1, "id": "x", "t": 0}')
    with store.lock("d/.build-x.lock"):
        assert '"pid": 1,' not in (store.read_text("d/.build-x.lock") or "")
    assert store.read_text("d/.build-x.lock") is None


def test_credentials_never_appear_in_repr_pickle_or_errors(s3_env: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.storage.backends.object import ObjectStore

    store = ObjectStore("s3://team/secret-check")
    store.write_text("a/refs/latest", "v\n")
    secret = s3_env.env["AWS_SECRET_ACCESS_KEY"]
    assert secret not in repr(store)
    assert secret.encode() not in pickle.dumps(store)
    assert pickle.loads(pickle.dumps(store)).read_text("a/refs/latest") == "v\n"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-" + secret)
    with pytest.raises(se.RemoteStoreError) as caught:
        ObjectStore("s3://team/secret-check").read_text("a/refs/latest")
    assert "s3://team/secret-check/a/refs/latest" in str(caught.value)
    assert secret not in str(caught.value)


def test_a_missing_bucket_is_one_clear_error_naming_the_url(s3_env: S3Server, tmp_path: Path) -> None:
    from stable_explore.storage.backends.object import ObjectStore

    store = ObjectStore("s3://no-such-bucket/cache")
    with pytest.raises(se.RemoteStoreError, match=r"s3://no-such-bucket/cache/x/refs/latest"):
        store.write_text("x/refs/latest", "v\n")


def test_an_error_names_the_endpoint_or_says_how_to_choose_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.storage.backends.object import ObjectStore

    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    default = ObjectStore("s3://team/no-endpoint")
    assert "AWS_ENDPOINT_URL" in default.endpoint
    assert "'endpoint' storage option" in default.endpoint
    given = ObjectStore("s3://team/x", {"endpoint": "http://someone:hunter2@127.0.0.1:9", "allow_http": True})
    assert given.endpoint == "http://127.0.0.1:9"  # the server, never the credentials a URL may carry
    with pytest.raises(se.RemoteStoreError) as caught:  # nothing listens on port 9: a quick, clear failure
        given.read_text("d/refs/latest")
    assert "(endpoint: http://127.0.0.1:9)" in str(caught.value)
    assert "hunter2" not in str(caught.value)
