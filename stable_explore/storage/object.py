"""The storage protocol on object storage (``s3://``, ``gs://``, ``az://``), through obstore (Rust's ``object_store``).

Object stores have no rename and no locks, but they have conditional writes, and that is
all the protocol needs: ``put_if_absent`` is a put with ``If-None-Match: *``, ``swap`` a put
with ``If-Match: <ETag>`` of the text it read, and a lock is a lease object created by
``put_if_absent`` (a holder that died leaves a lease that others break once it is older
than ``lease_seconds``).

Credentials and the endpoint come from each cloud's standard environment and config (for S3:
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``, ``AWS_REGION``,
``AWS_ALLOW_HTTP``), or from ``storage_options``; they are never part of ``url``, ``repr``
or any message.

Needs the ``s3`` extra: ``pip install 'stable-explore[s3]'``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from typing_extensions import override

from stable_explore._optional import require
from stable_explore.errors import CacheCorruptionError, RemoteStoreError
from stable_explore.storage.fsutil import replacing, writing
from stable_explore.storage.protocol import Store, check_key

__all__ = ["ObjectStore", "shared_store"]

_CLIENT_OPTIONS = {"allow_http", "timeout", "connect_timeout", "proxy_url", "user_agent"}


class ObjectStore(Store):
    """A home under a bucket prefix, e.g. ``ObjectStore("s3://team-bucket/cache")``.

    Parameters
    ----------
    url:
        ``s3://bucket/prefix`` (or ``gs://``, ``az://``).
    storage_options:
        Settings for obstore instead of (or on top of) the environment, e.g.
        ``{"endpoint": "http://127.0.0.1:8333", "allow_http": True}``.
    lease_seconds:
        How old a lock's lease must be before another process may break it.
    """

    def __init__(
        self, url: str, storage_options: Mapping[str, Any] | None = None, *, lease_seconds: float = 600
    ) -> None:
        obstore = require("obstore", "s3", "a home on object storage")
        from obstore.store import from_url

        options = dict(storage_options or {})
        client: Any = {k: options.pop(k) for k in list(options) if k in _CLIENT_OPTIONS}
        if "allow_http" not in client and os.environ.get("AWS_ALLOW_HTTP", "").lower() in ("1", "true", "yes"):
            client["allow_http"] = True
        self.url = url.rstrip("/")
        self.lease_seconds = lease_seconds
        self._obstore = obstore
        try:
            self._store = from_url(self.url, client_options=client or None, **options)
        except Exception as exc:  # obstore raises its own types (and panics on bad config keys)
            msg = f"cannot open the home {self.url}: {type(exc).__name__}: {exc}"
            raise RemoteStoreError(msg) from exc

    def __repr__(self) -> str:
        return f"ObjectStore({self.url!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # credentials stay in the environment: a pickle carries the URL only
        return (type(self), (self.url,), {"lease_seconds": self.lease_seconds})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.lease_seconds = state["lease_seconds"]

    def _error(self, key: str, exc: Exception) -> RemoteStoreError:
        msg = f"{self.url}/{key}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        return RemoteStoreError(msg)

    # -- reading -----------------------------------------------------------------

    def _get(self, key: str) -> tuple[str, str | None] | None:
        """(text, ETag) at ``key``, or None."""
        path = check_key(key)
        try:
            result = self._obstore.get(self._store, path)
            data = bytes(result.bytes())
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise self._error(key, exc) from exc
        try:
            return data.decode("utf-8"), result.meta.get("e_tag")
        except UnicodeDecodeError as exc:  # damaged bytes, not a failed request: say so, naming the object
            reason = f"is not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r}); the file is damaged"
            where = f"{self.url}/{key}"
            raise CacheCorruptionError(where, reason) from exc

    @override
    def read_text(self, key: str) -> str | None:
        found = self._get(key)
        return None if found is None else found[0]

    @override
    def exists(self, key: str) -> bool:
        path = check_key(key)
        try:
            self._obstore.head(self._store, path)
        except FileNotFoundError:
            return False
        except Exception as exc:
            raise self._error(key, exc) from exc
        return True

    @override
    def size(self, key: str) -> int | None:
        path = check_key(key)
        try:
            return int(self._obstore.head(self._store, path)["size"])
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise self._error(key, exc) from exc

    @override
    def read_ranges(self, key: str, ranges: list[tuple[int, int]]) -> list[bytes]:
        path = check_key(key)
        asked = [(s, e) for s, e in ranges if e > s]  # object_store refuses an empty range
        if not asked:
            return [b""] * len(ranges)
        try:  # object_store fetches the ranges concurrently, merging ranges that are close
            fetched = iter(
                self._obstore.get_ranges(self._store, path, starts=[s for s, _ in asked], ends=[e for _, e in asked])
            )
        except FileNotFoundError as exc:
            msg = f"{self.url}/{key} is missing"
            raise RemoteStoreError(msg) from exc
        except Exception as exc:
            raise self._error(key, exc) from exc
        return [bytes(next(fetched)) if e > s else b"" for s, e in ranges]

    @override
    def get_file(self, key: str, path: Path, *, hasher: Any = None) -> None:
        source = check_key(key)
        with writing(path), replacing(path) as tmp, tmp.open("wb") as out:
            try:
                for chunk in self._obstore.get(self._store, source).stream(min_chunk_size=8 * 1024 * 1024):
                    if hasher is not None:
                        hasher.update(chunk)  # xxhash takes the buffer as is: no copy
                    out.write(chunk)
            except FileNotFoundError as exc:
                msg = f"{self.url}/{key} is missing"
                raise RemoteStoreError(msg) from exc
            except Exception as exc:
                raise self._error(key, exc) from exc

    @override
    def list_dir(self, prefix: str) -> list[str]:
        where = f"{check_key(prefix)}/" if prefix else None
        try:
            listing = self._obstore.list_with_delimiter(self._store, where)
        except FileNotFoundError:
            return []
        except Exception as exc:
            raise self._error(prefix, exc) from exc
        names = {p.rstrip("/").rsplit("/", 1)[-1] for p in listing["common_prefixes"]}
        names |= {o["path"].rsplit("/", 1)[-1] for o in listing["objects"]}
        return sorted(n for n in names if n and not n.startswith("."))

    # -- writing -----------------------------------------------------------------

    def _put(self, key: str, text: str, mode: Any) -> bool:
        exceptions = self._obstore.exceptions
        path = check_key(key)
        try:
            self._obstore.put(self._store, path, text.encode("utf-8"), mode=mode, use_multipart=False)
        except (exceptions.AlreadyExistsError, exceptions.PreconditionError):
            return False
        except Exception as exc:
            raise self._error(key, exc) from exc
        return True

    @override
    def write_text(self, key: str, text: str) -> None:
        self._put(key, text, "overwrite")

    @override
    def put_if_absent(self, key: str, text: str) -> bool:
        return self._put(key, text, "create")

    @override
    def swap(self, key: str, expected: str | None, text: str) -> bool:
        if expected is None:
            return self.put_if_absent(key, text)
        found = self._get(key)
        if found is None or found[0] != expected:
            return False
        return self._put(key, text, {"e_tag": found[1]})

    @override
    def put_file(self, key: str, path: Path) -> None:
        target = check_key(key)
        try:
            self._obstore.put(self._store, target, path)  # multipart for big shards; atomic either way
        except Exception as exc:
            raise self._error(key, exc) from exc

    @override
    def copy(self, source: str, key: str) -> None:
        origin, target = check_key(source), check_key(key)
        try:
            self._obstore.copy(self._store, origin, target)  # server-side: nothing is downloaded
        except Exception as exc:
            raise self._error(key, exc) from exc

    @override
    def delete(self, key: str) -> None:
        path = check_key(key)
        try:
            self._obstore.delete(self._store, path)
        except FileNotFoundError:
            return
        except Exception as exc:
            raise self._error(key, exc) from exc

    @override
    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        lease = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "id": uuid.uuid4().hex, "t": time.time()})
        delay = 0.02
        while not self.put_if_absent(key, lease):
            held = self.read_text(key)
            # a dead holder's lease is broken by compare-and-swap: of several breakers, one wins
            if held is not None and _lease_age(held) > self.lease_seconds and self.swap(key, held, lease):
                break
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
        try:
            yield
        finally:
            if self.read_text(key) == lease:
                self.delete(key)


def _lease_age(text: str) -> float:
    try:
        return time.time() - float(json.loads(text)["t"])
    except (ValueError, KeyError, TypeError):
        return float("inf")  # not a lease we can read: treat as abandoned


_shared: dict[str, ObjectStore] = {}
_shared_options: dict[str, dict[str, Any]] = {}
_shared_lock = threading.Lock()


def shared_store(url: str, storage_options: Mapping[str, Any] | None = None) -> ObjectStore:
    """One :class:`ObjectStore` per home URL in this process (its connections are reused by every reader).

    ``storage_options`` given once for a URL are remembered in this process only (never written
    anywhere), so datasets of that home reopened later, or unpickled in a forked worker, use them.
    """
    key = url.rstrip("/")
    with _shared_lock:
        if storage_options is not None and dict(storage_options) != _shared_options.get(key):
            _shared_options[key] = dict(storage_options)
            _shared.pop(key, None)
        store = _shared.get(key)
        if store is None:
            store = _shared[key] = ObjectStore(key, _shared_options.get(key))
        return store
