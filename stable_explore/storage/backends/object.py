"""The storage protocol on object storage (``s3://``, ``gs://``, ``az://``), through obstore (Rust's ``object_store``).

Object stores have no rename and no locks, but they have conditional writes, and that is
all the protocol needs: ``put_if_absent`` is a put with ``If-None-Match: *``, ``swap`` a put
with ``If-Match: <ETag>`` of the text it read, and a lock is a lease object
(:mod:`stable_explore.storage.backends.lease`): taken by a put if absent, renewed by a heartbeat,
taken over by others once it was not renewed for ``lease_seconds``.

Every request has a connect and a read timeout (``$STABLE_EXPLORE_S3_TIMEOUT`` seconds, default
10, or the ``connect_timeout`` / ``read_timeout`` storage options); failed idempotent requests
are retried with backoff within that time, and then an error names the endpoint. A hung server
costs seconds, not minutes.

Credentials and the endpoint come from each cloud's standard environment and config (for S3:
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``, ``AWS_REGION``,
``AWS_ALLOW_HTTP``), or from ``storage_options``; they are never part of ``url``, ``repr``
or any message.

Needs the ``s3`` extra: ``pip install 'stable-explore[s3]'``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from typing_extensions import override

from stable_explore._optional import require
from stable_explore.errors import CacheCorruptionError, InvalidOptionError, RemoteStoreError
from stable_explore.storage.backends.fsutil import replacing, writing
from stable_explore.storage.backends.lease import Lease, Notify, hold_lease, lease_seconds_from_env
from stable_explore.storage.backends.protocol import Store, check_key
from stable_explore.storage.backends.remote_hints import explain

__all__ = ["TIMEOUT_ENV", "ObjectStore", "request_timeout", "shared_store"]

_CLIENT_OPTIONS = {"allow_http", "timeout", "connect_timeout", "read_timeout", "proxy_url", "user_agent"}

TIMEOUT_ENV = "STABLE_EXPLORE_S3_TIMEOUT"
"""Environment variable: seconds a bucket's server may take to connect or to answer (default 10)."""

DEFAULT_TIMEOUT = 10.0


def request_timeout() -> float:
    """``$STABLE_EXPLORE_S3_TIMEOUT`` seconds, else :data:`DEFAULT_TIMEOUT`."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        value = -1.0
    if not value > 0:
        msg = f"{TIMEOUT_ENV} must be a number of seconds > 0, got {raw!r}"
        raise InvalidOptionError(msg)
    return value


def _seconds(value: object) -> float:
    """A timeout option (seconds, a timedelta, or a string like ``"5s"``) in seconds."""
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
        if text.endswith(suffix):
            with contextlib.suppress(ValueError):
                return float(text[: -len(suffix)]) * scale
    return float(text)


def _endpoint(options: Mapping[str, object]) -> str:
    """The server's address, for messages (no user info: a URL may carry credentials)."""
    for key in ("endpoint", "aws_endpoint", "aws_endpoint_url", "endpoint_url"):
        if options.get(key):
            raw = str(options[key])
            break
    else:
        raw = os.environ.get("AWS_ENDPOINT_URL", "") or os.environ.get("AWS_ENDPOINT", "")
    scheme, sep, rest = raw.partition("://")
    named = (scheme + sep + rest.rsplit("@", 1)[-1]) if sep else raw.rsplit("@", 1)[-1]
    # none set: the cloud provider's own server; a user who meant another (MinIO, SeaweedFS) learns how to say so
    return named or "the provider's default, as no AWS_ENDPOINT_URL nor 'endpoint' storage option is set"


_STATUS = re.compile(r"\b([45]\d\d) [A-Z][a-z]")


def _status(text: str) -> int | None:
    """The HTTP status a server answered with, from obstore's error text (None: no answer, a transport failure).

    >>> _status("Error performing GET http://h/b/k in 3ms - Server returned non-2xx status code: 416 Range Not "
    ...         "Satisfiable: <Error>..."), _status("Error performing GET http://h:4040/b/k - error sending request")
    (416, None)
    """
    found = _STATUS.search(text)
    return int(found.group(1)) if found else None


class ObjectStore(Store):
    """A home under a bucket prefix, e.g. ``ObjectStore("s3://team-bucket/cache")``.

    Parameters
    ----------
    url:
        ``s3://bucket/prefix`` (or ``gs://``, ``az://``).
    storage_options:
        Settings for obstore instead of (or on top of) the environment, e.g.
        ``{"endpoint": "http://127.0.0.1:8333", "allow_http": True}``.
        ``connect_timeout`` and ``read_timeout`` (seconds or ``"5s"``) bound each request
        (default ``$STABLE_EXPLORE_S3_TIMEOUT``, else 10 s); ``lease_seconds`` sets the leases' duration.
    lease_seconds:
        How long a lock's lease lasts unless its heartbeat renews it (default
        ``$STABLE_EXPLORE_LEASE_SECONDS``, else 30): a holder that stops is taken over after that.
    """

    def __init__(
        self, url: str, storage_options: Mapping[str, Any] | None = None, *, lease_seconds: float | None = None
    ) -> None:
        obstore = require("obstore", "s3", "a home on object storage")
        from obstore.store import from_url

        options = dict(storage_options or {})
        if lease_seconds is None and "lease_seconds" in options:
            lease_seconds = float(options.pop("lease_seconds"))
        options.pop("lease_seconds", None)
        client: Any = {k: options.pop(k) for k in list(options) if k in _CLIENT_OPTIONS}
        if "allow_http" not in client and os.environ.get("AWS_ALLOW_HTTP", "").lower() in ("1", "true", "yes"):
            client["allow_http"] = True
        timeout = request_timeout()
        read = _seconds(client.get("read_timeout", timeout))
        client.setdefault("read_timeout", dt.timedelta(seconds=read))
        client.setdefault("connect_timeout", dt.timedelta(seconds=min(read, 5.0)))
        self.timeout = read
        self.endpoint = _endpoint(options)
        # a retry only while the first try's time is not spent: a server that does not answer fails in ~timeout
        retry: Any = {
            "max_retries": 3,
            "retry_timeout": dt.timedelta(seconds=read),
            "backoff": {"init_backoff": dt.timedelta(seconds=0.1), "max_backoff": dt.timedelta(seconds=2), "base": 2},
        }
        self.url = url.rstrip("/")
        self.lease_seconds = lease_seconds_from_env() if lease_seconds is None else lease_seconds
        self._obstore = obstore
        self._held: dict[str, tuple[int, int, Lease]] = {}  # key -> (thread, depth, lease): re-entrant
        self._held_lock = threading.Lock()
        self._requests = 0
        self._requests_lock = threading.Lock()
        try:
            self._store = from_url(self.url, client_options=client or None, retry_config=retry, **options)
        except Exception as exc:  # obstore raises its own types (and panics on bad config keys)
            msg = f"cannot open the home {self.url}: {explain(str(exc)) or f'{type(exc).__name__}: {exc}'}"
            raise RemoteStoreError(msg) from exc

    def __repr__(self) -> str:
        return f"ObjectStore({self.url!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # credentials stay in the environment: a pickle carries the URL only
        return (type(self), (self.url,), {"lease_seconds": self.lease_seconds})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.lease_seconds = state["lease_seconds"]

    @property
    def requests(self) -> int:
        """Requests this store has sent (each call to the server, retries aside; for tests and benchmarks)."""
        return self._requests

    def _count(self) -> None:
        with self._requests_lock:
            self._requests += 1

    def _error(self, key: str, exc: Exception) -> RemoteStoreError:
        text = str(exc)
        hint = explain(text)
        cause = hint or f"{type(exc).__name__}: {text.splitlines()[0][:300]}"
        msg = f"{self.url}/{key} (endpoint: {self.endpoint}): {cause}"
        status = _status(text)
        if hint is None and status is None:
            if "refused" in text.lower():
                msg += (
                    f"; nothing accepts connections at {self.endpoint} (is the server running? is AWS_ENDPOINT_URL "
                    "or the 'endpoint' storage option right?)"
                )
            elif "timed out" in text.lower() or "timeout" in text.lower() or "sending request" in text.lower():
                msg += (
                    f"; the server did not answer within {self.timeout:g} s (set {TIMEOUT_ENV} or the read_timeout "
                    "storage option to wait longer)"
                )
        error = RemoteStoreError(msg)
        error.url, error.status = f"{self.url}/{key}", status
        return error

    def _missing(self, key: str) -> RemoteStoreError:
        """The object at ``key`` is not there (the server answered 404)."""
        error = RemoteStoreError(f"{self.url}/{key} is missing")
        error.url, error.status = f"{self.url}/{key}", 404
        return error

    # -- reading -----------------------------------------------------------------

    def _get(self, key: str) -> tuple[str, str | None] | None:
        """(text, ETag) at ``key``, or None."""
        path = check_key(key)
        try:
            self._count()
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
            self._count()
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
            self._count()
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
        self._count()
        try:  # concurrently; only touching ranges are merged (object_store's default would fetch gaps up to 1 MiB)
            fetched = iter(
                self._obstore.get_ranges(
                    self._store, path, starts=[s for s, _ in asked], ends=[e for _, e in asked], coalesce=0
                )
            )
        except FileNotFoundError as exc:
            raise self._missing(key) from exc
        except Exception as exc:
            raise self._error(key, exc) from exc
        return [bytes(next(fetched)) if e > s else b"" for s, e in ranges]

    @override
    def get_file(self, key: str, path: Path, *, hasher: Any = None) -> None:
        source = check_key(key)
        self._count()
        with writing(path), replacing(path) as tmp, tmp.open("wb") as out:
            try:
                for chunk in self._obstore.get(self._store, source).stream(min_chunk_size=8 * 1024 * 1024):
                    if hasher is not None:
                        hasher.update(chunk)  # xxhash takes the buffer as is: no copy
                    out.write(chunk)
            except FileNotFoundError as exc:
                raise self._missing(key) from exc
            except Exception as exc:
                raise self._error(key, exc) from exc

    @override
    def list_dir(self, prefix: str) -> list[str]:
        where = f"{check_key(prefix)}/" if prefix else None
        try:
            self._count()
            listing = self._obstore.list_with_delimiter(self._store, where)
        except FileNotFoundError:
            return []
        except Exception as exc:
            raise self._error(prefix, exc) from exc
        names = {p.rstrip("/").rsplit("/", 1)[-1] for p in listing["common_prefixes"]}
        # some servers (SeaweedFS) keep a folder marker object named as the prefix itself: it is no entry in it
        inside = [o["path"] for o in listing["objects"] if where is None or o["path"].startswith(where)]
        names |= {path.rsplit("/", 1)[-1] for path in inside}
        return sorted(n for n in names if n and not n.startswith("."))

    def list_objects(self, prefix: str) -> list[tuple[str, int, float]]:
        """Every object under ``prefix/``, at any depth: (key, size in bytes, last modified as a Unix time)."""
        where = f"{check_key(prefix)}/"
        found = []
        try:
            self._count()
            for chunk in self._obstore.list(self._store, where):
                found += [(str(o["path"]), int(o["size"]), o["last_modified"].timestamp()) for o in chunk]
        except FileNotFoundError:
            return []
        except Exception as exc:
            raise self._error(prefix, exc) from exc
        return [entry for entry in found if entry[0].startswith(where)]

    # -- writing -----------------------------------------------------------------

    def _put(self, key: str, text: str, mode: object) -> bool:
        exceptions = self._obstore.exceptions
        path = check_key(key)
        try:
            self._count()
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
            self._count()
            self._obstore.put(self._store, target, path)  # multipart for big shards; atomic either way
        except Exception as exc:
            raise self._error(key, exc) from exc

    @override
    def copy(self, source: str, key: str) -> None:
        origin, target = check_key(source), check_key(key)
        try:
            self._count()
            self._obstore.copy(self._store, origin, target)  # server-side: nothing is downloaded
        except Exception as exc:
            raise self._error(key, exc) from exc

    @override
    def delete(self, key: str) -> None:
        path = check_key(key)
        try:
            self._count()
            self._obstore.delete(self._store, path)
        except FileNotFoundError:
            return
        except Exception as exc:
            raise self._error(key, exc) from exc

    def read_tagged(self, key: str) -> tuple[str, str | None] | None:
        """(text, ETag) of the object at ``key``, or None (what a lease and a compare-and-swap need)."""
        return self._get(key)

    def put_tagged(self, key: str, text: str, expected: str | None) -> str | None:
        """Put ``text`` only if the object's ETag is ``expected`` (None: only if absent); the new ETag, or None."""
        exceptions = self._obstore.exceptions
        path = check_key(key)
        mode: object = "create" if expected is None else {"e_tag": expected}
        try:
            result = self._obstore.put(self._store, path, text.encode("utf-8"), mode=mode, use_multipart=False)
        except (exceptions.AlreadyExistsError, exceptions.PreconditionError):
            return None
        except Exception as exc:
            raise self._error(key, exc) from exc
        return str(result.get("e_tag") or "")

    @override
    @contextlib.contextmanager
    def lock(self, key: str, *, timeout: float | None = None, notify: Notify | None = None) -> Iterator[None]:
        """A lease (:mod:`stable_explore.storage.backends.lease`) at ``key``; re-entrant within a thread.

        The lease held by this thread is checked (:meth:`check_lock`) before the guarded steps that matter.
        """
        me = threading.get_ident()
        with self._held_lock:
            held = self._held.get(key)
            if held is not None and held[0] == me:
                self._held[key] = (me, held[1] + 1, held[2])
        if held is not None and held[0] == me:
            try:
                yield
            finally:
                with self._held_lock:
                    thread, depth, lease = self._held[key]
                    self._held[key] = (thread, depth - 1, lease)
            return
        with hold_lease(self, key, seconds=self.lease_seconds, timeout=timeout, notify=notify) as lease:
            with self._held_lock:
                self._held[key] = (me, 1, lease)
            try:
                yield
            finally:
                with self._held_lock:
                    del self._held[key]

    def check_lock(self, key: str) -> None:
        """Raise :class:`LeaseLostError` if this process's lease ``key`` was taken over or ran out."""
        with self._held_lock:
            held = self._held.get(key)
        if held is not None:
            held[2].check()


_shared: dict[str, ObjectStore] = {}
_shared_options: dict[str, dict[str, Any]] = {}
_shared_lock = threading.Lock()


def shared_store(url: str, storage_options: Mapping[str, object] | None = None) -> ObjectStore:
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
