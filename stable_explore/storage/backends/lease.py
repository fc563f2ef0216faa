"""Leases: the locks of a home in a bucket, held as one small object written by conditional puts.

A lease is a JSON object at the lock's key: who holds it (a random holder id, host, pid), since
when, and until when (``expires``). It is taken with a put that succeeds only if no object is
there (``If-None-Match: *``), renewed by a heartbeat thread every third of its duration with a
put that succeeds only if the object is still the one this holder wrote (``If-Match: <ETag>``),
and deleted when let go. So two machines exclude each other the way two processes do with a
lock file.

A holder that is killed, loses the network or is stopped stops renewing. A waiter treats a
lease as stale when it has not changed for one full duration by the waiter's own clock, or when
its recorded expiry is more than one duration past (so clocks may disagree by up to a duration);
it then takes the lease over with a conditional put on the stale lease's ETag (of several
waiters, one wins) and says so with a warning. A holder whose renewal finds another holder's
lease (it was stopped longer than the duration) knows it lost the lease: :meth:`Lease.check`
raises :class:`LeaseLostError` before the next step it guards.

Examples
--------
>>> record = LeaseRecord.new(30.0)
>>> LeaseRecord.parse(record.to_text()).holder == record.holder
True
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from stable_explore.errors import InvalidOptionError, LeaseLostError, LockTimeoutError, RemoteStoreError
from stable_explore.storage.backends.fsutil import process_alive

__all__ = ["DEFAULT_LEASE_SECONDS", "LEASE_ENV", "Lease", "LeaseRecord", "LeaseStore", "hold_lease", "lease_is_live"]

DEFAULT_LEASE_SECONDS = 30.0
"""How long a lease lasts unless renewed (the heartbeat renews it every third of that)."""

LEASE_ENV = "STABLE_EXPLORE_LEASE_SECONDS"
"""Environment variable: the lease duration in seconds for homes in buckets."""

_NOTICE_AFTER = 5.0

Notify = Callable[[str], None]


class LeaseStore(Protocol):
    """What a lease needs of a store: a read that gives the ETag, and conditional puts."""

    url: str

    def read_tagged(self, key: str) -> tuple[str, str | None] | None:
        """(text, ETag) of the object at ``key``, or None."""

    def put_tagged(self, key: str, text: str, expected: str | None) -> str | None:
        """Put ``text`` if the object's ETag is ``expected`` (None: if absent); its new ETag, or None if refused."""

    def delete(self, key: str) -> None:
        """Delete the object at ``key``."""


def lease_seconds_from_env() -> float:
    """The lease duration: ``$STABLE_EXPLORE_LEASE_SECONDS``, else :data:`DEFAULT_LEASE_SECONDS`."""
    raw = os.environ.get(LEASE_ENV, "").strip()
    if not raw:
        return DEFAULT_LEASE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        msg = f"{LEASE_ENV} must be a number of seconds > 0, got {raw!r}"
        raise InvalidOptionError(msg)
    return value


@dataclass(frozen=True)
class LeaseRecord:
    """The content of a lease object."""

    holder: str
    host: str
    pid: int
    since: str
    expires: float

    @classmethod
    def new(cls, seconds: float, holder: str | None = None, since: str | None = None) -> LeaseRecord:
        """A record of this process, valid for ``seconds`` from now."""
        return cls(
            holder or uuid.uuid4().hex,
            socket.gethostname(),
            os.getpid(),
            since or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            time.time() + seconds,
        )

    def to_text(self) -> str:
        """The JSON text put into the store."""
        fields = {"holder": self.holder, "host": self.host, "pid": self.pid, "since": self.since}
        return json.dumps({**fields, "expires": round(self.expires, 3)})

    @classmethod
    def parse(cls, text: str) -> LeaseRecord | None:
        """The record in ``text``; None when it is no lease this code wrote (treated as stale)."""
        try:
            raw = json.loads(text)
            return cls(str(raw["holder"]), str(raw["host"]), int(raw["pid"]), str(raw["since"]), float(raw["expires"]))
        except (ValueError, KeyError, TypeError):
            return None

    def describe(self) -> str:
        """``process 123 on host, since ..., until ...``."""
        until = dt.datetime.fromtimestamp(self.expires, dt.timezone.utc).isoformat(timespec="seconds")
        return f"process {self.pid} on {self.host}, since {self.since} (lease until {until})"


def _describe(text: str | None) -> str:
    record = None if text is None else LeaseRecord.parse(text)
    return "an unknown holder (the lease records none)" if record is None else record.describe()


# holders whose lease this process let go without deleting it (the server had failed): a later call of this
# process takes such a lease over at once, where another process waits for it to run out
_ABANDONED: set[str] = set()


class Lease:
    """One held lease: renewed by a heartbeat thread until :meth:`release`."""

    def __init__(
        self, store: LeaseStore, key: str, record: LeaseRecord, etag: str, seconds: float, sent: float
    ) -> None:
        self.store, self.key, self.seconds = store, key, seconds
        self._record, self._etag = record, etag
        self._renewed = sent  # when the put that took it was *sent*: never later than the server stored it
        self._lost: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._beat = threading.Thread(target=self._heartbeat, name=f"se-lease-{key}", daemon=True)
        self._beat.start()

    @property
    def where(self) -> str:
        """The lease object's URL."""
        return f"{self.store.url}/{self.key}"

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            self.renew()

    def renew(self) -> None:
        """Extend the lease by its duration (a conditional put on the ETag this holder last wrote)."""
        with self._lock:
            if self._lost is not None or self._stop.is_set():
                return
            record = LeaseRecord.new(self.seconds, self._record.holder, self._record.since)
            sent = time.monotonic()  # a renewal counts from when it was sent: a slow answer must not extend it
            try:
                etag = self.store.put_tagged(self.key, record.to_text(), self._etag)
            except RemoteStoreError:
                return  # the next beat tries again; check() says when the lease may have run out meanwhile
            if etag is None:
                found = None
                with contextlib.suppress(RemoteStoreError):
                    found = self.store.read_tagged(self.key)
                self._lost = f"taken over by {_describe(None if found is None else found[0])}"
                return
            self._record, self._etag, self._renewed = record, etag, sent

    def check(self) -> None:
        """Raise :class:`LeaseLostError` if the lease was taken over, or may have run out (no renewal for too long)."""
        with self._lock:
            lost = self._lost
            if lost is None and time.monotonic() - self._renewed > self.seconds * 0.9:
                lost = f"not renewed for {time.monotonic() - self._renewed:.0f} s (the server or this process stalled)"
        if lost is not None:
            raise LeaseLostError(self.where, lost)

    def abandon(self) -> None:
        """Stop renewing without asking the server anything: the lease runs out after its duration."""
        self._stop.set()
        _ABANDONED.add(self._record.holder)

    def release(self) -> None:
        """Stop renewing and delete the lease, if it is still this holder's."""
        self._stop.set()
        self._beat.join()
        with self._lock:
            if self._lost is not None:
                return
            found = self.store.read_tagged(self.key)
            if found is not None and found[1] == self._etag:
                self.store.delete(self.key)


def _acquire(
    store: LeaseStore, key: str, seconds: float, timeout: float | None, notify: Notify | None
) -> tuple[LeaseRecord, str, float]:
    mine = LeaseRecord.new(seconds)
    started = time.monotonic()
    seen: tuple[str | None, float] | None = None  # (ETag, when first seen by this waiter's clock)
    delay = 0.02
    told = False
    while True:
        mine = LeaseRecord.new(seconds, mine.holder, mine.since)
        sent = time.monotonic()
        etag = store.put_tagged(key, mine.to_text(), None)
        if etag is not None:
            return mine, etag, sent
        found = store.read_tagged(key)
        if found is None:
            continue  # let go meanwhile: try again at once
        text, tag = found
        record = LeaseRecord.parse(text)
        if record is not None and record.holder == mine.holder and tag is not None:
            return mine, tag, sent  # our own put landed although its answer was lost (a retried request)
        now = time.monotonic()
        if seen is None or seen[0] != tag:
            seen = (tag, now)
        unchanged = now - seen[1] >= seconds
        long_expired = record is None or record.expires + seconds < time.time()
        # let go by this very process when the server failed (it is nobody's now); or killed, on this machine
        own = record is not None and record.holder in _ABANDONED
        gone = own or (record is not None and not process_alive(record.host, record.pid))
        if (unchanged or long_expired or gone) and tag is not None:
            sent = time.monotonic()
            taken = store.put_tagged(key, mine.to_text(), tag)
            if taken is not None:
                if own:
                    _ABANDONED.discard(record.holder)  # type: ignore[union-attr]  # (own implies a record)
                elif notify is not None and gone:
                    notify(f"took over the lease {store.url}/{key} from {_describe(text)}, which is gone")
                elif notify is not None:
                    notify(
                        f"took over the lease {store.url}/{key} from {_describe(text)}: it was not renewed for "
                        f"{seconds:g} s (its holder was killed, stopped or cut off)"
                    )
                return mine, taken, sent
            continue
        waited = now - started
        if timeout is not None and waited >= timeout:
            where = f"{store.url}/{key}"
            raise LockTimeoutError(where, _describe(text), waited, advice=_ADVICE)
        if not told and waited >= _NOTICE_AFTER and notify is not None:
            notify(
                f"waiting {waited:.0f} s for the lease {store.url}/{key}, held by {_describe(text)}; it is taken "
                f"over once not renewed for {seconds:g} s ({LEASE_ENV})"
            )
            told = True
        time.sleep(delay if timeout is None else min(delay, max(0.0, timeout - waited)))
        delay = min(delay * 2, 0.2)


_ADVICE = (
    "if that process is stopped or hung, end it (its lease then runs out), or wait longer "
    "(lock_timeout=, or STABLE_EXPLORE_LOCK_TIMEOUT seconds)"
)


@contextlib.contextmanager
def hold_lease(
    store: LeaseStore,
    key: str,
    *,
    seconds: float | None = None,
    timeout: float | None = None,
    notify: Notify | None = None,
) -> Iterator[Lease]:
    """Hold the lease ``key`` of ``store`` for the block, renewed by a heartbeat; deleted when let go.

    Parameters
    ----------
    store:
        The object store (see :class:`LeaseStore`).
    key:
        The lease object's key.
    seconds:
        How long the lease lasts unless renewed (default: ``$STABLE_EXPLORE_LEASE_SECONDS``, else 30).
    timeout:
        Seconds to wait at most (None: until it is free or stale); then :class:`LockTimeoutError`.
    notify:
        Called when this process has waited a while (who holds it), and when it took over a stale lease.
    """
    duration = lease_seconds_from_env() if seconds is None else seconds
    record, etag, sent = _acquire(store, key, duration, timeout, notify)
    lease = Lease(store, key, record, etag, duration, sent)
    server_failed = False
    try:
        yield lease
    except RemoteStoreError as exc:
        server_failed = exc.status is None or exc.status >= 500
        raise
    finally:
        if server_failed:  # asking a server that did not answer to let go would wait as long again
            lease.abandon()
        else:  # and when it stops answering now, the lease runs out by itself (others take it over after that)
            with contextlib.suppress(RemoteStoreError):
                lease.release()


def lease_is_live(store: LeaseStore, key: str, seconds: float) -> bool:
    """Whether a lease at ``key`` may still be held: there, and its recorded expiry not more than a duration past.

    What a waiter would not yet take over (:func:`hold_lease`): a holder killed on this machine stops
    counting at once, one on another machine at most two durations after its last renewal.
    """
    found = store.read_tagged(key)
    if found is None:
        return False
    record = LeaseRecord.parse(found[0])
    if record is None or record.holder in _ABANDONED or not process_alive(record.host, record.pid):
        return False
    return record.expires + seconds >= time.time()
