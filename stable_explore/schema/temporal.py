"""Dates, times, timestamps and durations for ``Value``: dtype names and exact conversion to integer ticks.

A temporal value is stored as Arrow stores it: an integer count of its unit since the Unix epoch
(UTC for timestamps with a zone; the wall clock for timestamps without one), of days (``date32``),
of milliseconds (``date64``), since midnight (``time32``/``time64``), or of a length (``duration``).
Conversion to that integer is exact: a value finer than the column's unit is refused, never rounded.

Accepted values, per kind of column:

- ``timestamp[unit]`` (no zone): a naive ``datetime.datetime`` or ``pandas.Timestamp``, a
  ``numpy.datetime64``, or ISO 8601 text without an offset (``"2024-02-29T12:30:00"``);
- ``timestamp[unit, tz=ZONE]``: an aware ``datetime.datetime`` or ``pandas.Timestamp`` (any zone: the
  instant is kept), or ISO 8601 text with an offset (``"2024-02-29T12:30:00+00:00"``). A naive value
  has no instant, so it is refused rather than guessed to be UTC or local time;
- ``date32``/``date64``: a ``datetime.date``, ISO text (``"2024-02-29"``), a ``numpy.datetime64``
  or a naive datetime at exactly midnight;
- ``time32[unit]``/``time64[unit]``: a naive ``datetime.time`` or ISO text (``"12:30:00.5"``);
- ``duration[unit]``: a ``datetime.timedelta``, ``pandas.Timedelta`` or ``numpy.timedelta64``.

Numbers are refused everywhere: an integer does not say its unit.

Examples
--------
>>> parse_temporal("timestamp[ms,tz=UTC]")
('timestamp[ms, tz=UTC]', TimestampType(timestamp[ms, tz=UTC]))
>>> to_ticks(datetime.date(1970, 1, 2), "date32")
1
"""

from __future__ import annotations

import datetime
import re
import zoneinfo

import numpy as np
import pyarrow as pa

from stable_explore.errors import EncodingError, SchemaError

__all__ = ["TEMPORAL_DTYPES", "parse_temporal", "to_ticks"]

TEMPORAL_DTYPES = (
    "timestamp[s|ms|us|ns]",
    "timestamp[s|ms|us|ns, tz=ZONE]",
    "date32",
    "date64",
    "time32[s|ms]",
    "time64[us|ns]",
    "duration[s|ms|us|ns]",
)
"""The temporal dtype forms, for error messages and docs."""

_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_NS_PER_DAY = 86_400 * 1_000_000_000
_TIMESTAMP = re.compile(r"timestamp\[(s|ms|us|ns)(?:,\s*tz=([^\]]+))?\]")
_UNIT_TYPE = re.compile(r"(time32|time64|duration)\[(s|ms|us|ns)\]")
_OFFSET = re.compile(r"[+-]\d\d:\d\d")
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def parse_temporal(dtype: str) -> tuple[str, pa.DataType] | None:
    """The canonical name and Arrow type of a temporal dtype, or None if ``dtype`` is not one.

    Raises ``SchemaError`` for a timestamp zone that is neither an IANA name nor a ``+HH:MM`` offset.
    """
    text = dtype.strip()
    if text in ("date32", "date64"):
        return text, pa.date32() if text == "date32" else pa.date64()
    if match := _TIMESTAMP.fullmatch(text):
        unit, tz = match.group(1), match.group(2)
        if tz is None:
            return f"timestamp[{unit}]", pa.timestamp(unit)
        tz = tz.strip()
        if not _OFFSET.fullmatch(tz):
            try:
                zoneinfo.ZoneInfo(tz)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
                msg = f"unknown time zone {tz!r} in {dtype!r}: give an IANA name such as 'UTC' or an offset '+01:00'"
                raise SchemaError(msg) from exc
        return f"timestamp[{unit}, tz={tz}]", pa.timestamp(unit, tz)
    if match := _UNIT_TYPE.fullmatch(text):
        kind, unit = match.group(1), match.group(2)
        if kind == "time32" and unit in ("s", "ms"):
            return text, pa.time32(unit)
        if kind == "time64" and unit in ("us", "ns"):
            return text, pa.time64(unit)
        if kind == "duration":
            return text, pa.duration(unit)
        msg = f"{dtype!r} is not a time type: use time32[s], time32[ms], time64[us] or time64[ns]"
        raise SchemaError(msg)
    return None


def _in_unit(nanoseconds: int, unit: str, what: str) -> int:
    per = 1_000_000_000 // _PER_SECOND[unit]
    ticks, rest = divmod(nanoseconds, per)
    if rest:
        msg = f"{what} is finer than the column's unit ({unit}) and would be truncated"
        raise EncodingError(msg)
    return ticks


def _numpy_nanoseconds(value: np.datetime64 | np.timedelta64) -> int:
    unit, count = np.datetime_data(value.dtype)
    if unit in ("Y", "M"):  # calendar units have no fixed length: let numpy place them on the calendar
        value = value.astype("datetime64[D]")
        unit, count = "D", 1
    per = {"W": 7 * _NS_PER_DAY, "D": _NS_PER_DAY, "h": 3_600 * 10**9, "m": 60 * 10**9}
    per.update({"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1, "ps": 0, "fs": 0, "as": 0})
    if per.get(unit, 0) == 0:
        msg = f"numpy unit {unit!r} is finer than nanoseconds"
        raise EncodingError(msg)
    return int(value.astype(np.int64)) * count * per[unit]


def _datetime_nanoseconds(value: datetime.datetime) -> int:
    """Nanoseconds since the epoch: UTC for an aware value, the wall clock for a naive one."""
    nanos = int(getattr(value, "nanosecond", 0))  # pandas.Timestamp carries nanoseconds
    epoch = _EPOCH if value.tzinfo is None else _EPOCH_UTC
    return ((value - epoch) // datetime.timedelta(microseconds=1)) * 1_000 + nanos


def _timestamp_nanoseconds(value: object, tz: str | None, dtype: str) -> int:
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value)
        except ValueError as exc:
            msg = f"expected {dtype}: text must be ISO 8601, such as '2024-02-29T12:30:00'"
            raise EncodingError(msg) from exc
    if isinstance(value, np.datetime64):
        if np.isnat(value):
            msg = f"expected {dtype}"  # the caller adds "got NaT (...: give None for a missing value ...)"
            raise EncodingError(msg)
        if tz is not None:
            msg = f"expected an aware datetime for {dtype}, got a numpy.datetime64, which has no zone"
            raise EncodingError(msg)
        return _numpy_nanoseconds(value)
    if not isinstance(value, datetime.datetime):
        msg = f"expected {dtype}: a datetime.datetime, pandas.Timestamp, numpy.datetime64 or ISO 8601 text"
        raise EncodingError(msg)
    aware = value.tzinfo is not None and value.utcoffset() is not None
    if tz is not None and not aware:
        msg = (
            f"expected an aware datetime for {dtype}, got a naive one: it names no instant, so attach its zone "
            "(value.replace(tzinfo=...)) rather than have it guessed"
        )
        raise EncodingError(msg)
    if tz is None and aware:
        msg = (
            f"expected a naive datetime for {dtype} (wall-clock time, no zone), got one with zone "
            f"{value.tzinfo}: convert it (value.astimezone(zone).replace(tzinfo=None)) or use a column with tz="
        )
        raise EncodingError(msg)
    return _datetime_nanoseconds(value)


def _date_days(value: object, dtype: str) -> int:
    if isinstance(value, str):
        try:
            value = datetime.date.fromisoformat(value)
        except ValueError as exc:
            msg = f"expected {dtype}: text must be an ISO 8601 date, such as '2024-02-29'"
            raise EncodingError(msg) from exc
    if isinstance(value, np.datetime64) and not np.isnat(value):
        nanoseconds = _numpy_nanoseconds(value)
    elif isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            msg = f"expected a date for {dtype}, got an aware datetime: give value.date()"
            raise EncodingError(msg)
        nanoseconds = _datetime_nanoseconds(value)
    elif isinstance(value, datetime.date):
        return (value - _EPOCH.date()).days
    else:
        msg = f"expected {dtype}: a datetime.date, numpy.datetime64 or ISO 8601 date text"
        raise EncodingError(msg)
    days, rest = divmod(nanoseconds, _NS_PER_DAY)
    if rest:
        msg = f"expected a date for {dtype}, got a time of day as well: give value.date()"
        raise EncodingError(msg)
    return days


def _time_nanoseconds(value: object, dtype: str) -> int:
    if isinstance(value, str):
        try:
            value = datetime.time.fromisoformat(value)
        except ValueError as exc:
            msg = f"expected {dtype}: text must be an ISO 8601 time, such as '12:30:00'"
            raise EncodingError(msg) from exc
    if not isinstance(value, datetime.time):
        msg = f"expected {dtype}: a datetime.time or ISO 8601 time text"
        raise EncodingError(msg)
    if value.tzinfo is not None:
        msg = f"expected a naive time for {dtype}, got one with zone {value.tzinfo}"
        raise EncodingError(msg)
    seconds = (value.hour * 60 + value.minute) * 60 + value.second
    return (seconds * 1_000_000 + value.microsecond) * 1_000


def _duration_nanoseconds(value: object, dtype: str) -> int:
    if isinstance(value, np.timedelta64):
        if np.isnat(value):
            msg = f"expected {dtype}"  # the caller adds "got NaT (...: give None for a missing value ...)"
            raise EncodingError(msg)
        return _numpy_nanoseconds(value)
    if isinstance(value, datetime.timedelta):
        nanos = int(getattr(value, "nanoseconds", 0))  # pandas.Timedelta carries nanoseconds
        return (value // datetime.timedelta(microseconds=1)) * 1_000 + nanos
    msg = f"expected {dtype}: a datetime.timedelta, pandas.Timedelta or numpy.timedelta64"
    raise EncodingError(msg)


def to_ticks(value: object, dtype: str) -> int:
    """The integer Arrow stores for ``value`` in a column of temporal ``dtype`` (a canonical name).

    Raises ``EncodingError`` naming the expected form for a value of the wrong kind, one finer than the
    unit, a naive datetime for a column with a zone (or the reverse), or one out of the type's range.
    """
    if type(value).__name__ == "NaTType":  # pandas.NaT
        msg = f"expected {dtype}"  # the caller adds "got NaT (...: give None for a missing value ...)"
        raise EncodingError(msg)
    if isinstance(value, (bool, int, float)) or (
        isinstance(value, np.generic) and not isinstance(value, (np.datetime64, np.timedelta64))
    ):
        msg = f"expected {dtype}, got a number, which does not say its unit: give a date/time object or ISO text"
        raise EncodingError(msg)
    if dtype in ("date32", "date64"):
        days = _date_days(value, dtype)
        ticks, bits = (days, 32) if dtype == "date32" else (days * 86_400_000, 64)
    else:
        if match := _TIMESTAMP.fullmatch(dtype):
            unit, tz = match.group(1), match.group(2)
            nanoseconds, what = _timestamp_nanoseconds(value, tz, dtype), "the timestamp"
        else:
            kind_unit = _UNIT_TYPE.fullmatch(dtype)
            assert kind_unit is not None, dtype
            kind, unit = kind_unit.group(1), kind_unit.group(2)
            if kind == "duration":
                nanoseconds, what = _duration_nanoseconds(value, dtype), "the duration"
            else:
                nanoseconds, what = _time_nanoseconds(value, dtype), "the time"
        ticks = _in_unit(nanoseconds, unit, what)
        bits = 32 if dtype.startswith("time32") else 64
    if not -(2 ** (bits - 1)) <= ticks < 2 ** (bits - 1):
        msg = f"expected {dtype}, got a value out of its range (it does not fit in {bits} bits)"
        raise EncodingError(msg)
    return ticks
