"""Temporal ``Value`` dtypes: names, encoding, the errors users see, and row hashes that no time zone changes."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore.errors import EncodingError, SchemaError
from stable_explore.storage.format.hashing import row_hashes

UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("given", "canonical", "arrow"),
    [
        ("timestamp[us]", "timestamp[us]", pa.timestamp("us")),
        ("timestamp[ns,tz=UTC]", "timestamp[ns, tz=UTC]", pa.timestamp("ns", "UTC")),
        ("timestamp[s, tz=+01:00]", "timestamp[s, tz=+01:00]", pa.timestamp("s", "+01:00")),
        ("date32", "date32", pa.date32()),
        ("date64", "date64", pa.date64()),
        ("time64[us]", "time64[us]", pa.time64("us")),
        ("time32[ms]", "time32[ms]", pa.time32("ms")),
        ("duration[us]", "duration[us]", pa.duration("us")),
    ],
)
def test_temporal_dtypes_have_one_name_and_round_trip_through_to_dict(given: str, canonical: str, arrow: Any) -> None:
    value = se.Value(given)
    assert value.dtype == canonical
    assert value.arrow_type == arrow
    assert se.Features.from_dict(se.Features(when=value).to_dict()) == se.Features(when=value)


@pytest.mark.parametrize(
    ("dtype", "words"),
    [
        ("timestamp[us, tz=Mars/Olympus]", "unknown time zone 'Mars/Olympus'"),
        ("timestamp[minutes]", "timestamp[s|ms|us|ns]"),
        ("time64[s]", "time32[s], time32[ms], time64[us] or time64[ns]"),
        ("datetime", "date32"),
    ],
)
def test_a_bad_temporal_dtype_is_a_schema_error_naming_the_forms(dtype: str, words: str) -> None:
    with pytest.raises(SchemaError, match=words.replace("[", r"\[").replace("|", r"\|")):
        se.Value(dtype)


def test_every_accepted_form_of_an_instant_encodes_to_the_same_value() -> None:
    naive = se.Value("timestamp[us]")
    wanted = dt.datetime(2024, 2, 29, 12, 30, 1, 5)
    text = "2024-02-29T12:30:01.000005"
    for given in (wanted, np.datetime64(text), pd.Timestamp(wanted), text):
        assert naive.encode_value(given) == wanted, given
    zoned = se.Value("timestamp[ms, tz=UTC]")
    instant = dt.datetime(2024, 2, 29, 12, 30, tzinfo=UTC)
    paris = dt.timezone(dt.timedelta(hours=1))
    for given in (instant, instant.astimezone(paris), pd.Timestamp(instant), "2024-02-29T13:30:00+01:00"):
        assert zoned.encode_value(given) == instant, given
    date = se.Value("date32")
    for given in (dt.date(2024, 2, 29), "2024-02-29", np.datetime64("2024-02-29"), dt.datetime(2024, 2, 29)):
        assert date.encode_value(given) == dt.date(2024, 2, 29), given
    assert se.Value("time64[us]").encode_value("12:30:00.5") == dt.time(12, 30, 0, 500000)
    assert se.Value("duration[ms]").encode_value(np.timedelta64(1500, "ms")) == dt.timedelta(seconds=1.5)
    assert se.Value("timestamp[ns]").encode_value(pd.Timestamp("2024-01-01 00:00:00.000000001")).nanosecond == 1


@pytest.mark.parametrize(
    ("dtype", "value", "words"),
    [
        ("timestamp[us, tz=UTC]", dt.datetime(2024, 1, 1), "expected an aware datetime .* got a naive one"),
        ("timestamp[us, tz=UTC]", np.datetime64("2024-01-01"), "numpy.datetime64, which has no zone"),
        ("timestamp[us]", dt.datetime(2024, 1, 1, tzinfo=UTC), "expected a naive datetime"),
        ("timestamp[s]", dt.datetime(2024, 1, 1, 0, 0, 0, 5), r"finer than the column's unit \(s\)"),
        ("timestamp[us]", 1_700_000_000, "a number, which does not say its unit"),
        ("timestamp[us]", "last tuesday", "text must be ISO 8601"),
        ("timestamp[us]", dt.date(2024, 1, 1), "a datetime.datetime, pandas.Timestamp, numpy.datetime64 or ISO"),
        ("timestamp[us]", pd.NaT, r"got NaT \(NaTType: a missing value as pandas marks it; give None for one"),
        ("timestamp[us]", np.datetime64("NaT"), r"got np.datetime64\('NaT'.*\(datetime64: a missing value"),
        ("duration[s]", np.timedelta64("NaT"), r"\(timedelta64: a missing value as pandas marks it; give None"),
        ("timestamp[ns]", dt.datetime(2300, 1, 1), "out of its range"),
        ("date32", dt.datetime(2024, 1, 1, 12), "a time of day as well"),
        ("date32", "2024-02-30", "an ISO 8601 date"),
        ("time64[us]", dt.timedelta(hours=1), "a datetime.time or ISO 8601 time text"),
        ("duration[s]", dt.time(1), "a datetime.timedelta"),
    ],
)
def test_a_value_a_temporal_column_cannot_hold_says_what_it_expects(dtype: str, value: Any, words: str) -> None:
    with pytest.raises(EncodingError, match=words):
        se.Value(dtype).encode_value(value)


def test_a_bad_value_in_a_build_names_the_row_and_field(tmp_path: Path) -> None:
    rows = [{"when": dt.datetime(2024, 1, 1, tzinfo=UTC)}, {"when": dt.datetime(2024, 1, 2)}]
    features = se.Features(when=se.Value("timestamp[us, tz=UTC]"))
    with pytest.raises(EncodingError, match="got a naive one") as info:
        se.build(rows, features, name="bad", home=tmp_path, progress=False)
    assert info.value.field == "when"
    assert info.value.index == 1


def _mix(x: int) -> int:
    mask = (1 << 64) - 1
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & mask
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & mask
    return x ^ (x >> 31)


def _hash_of(value: Any, dtype: str) -> int:
    feature = se.Value(dtype)
    return int(row_hashes([feature.encode_column([value])])[0])


def test_a_timestamp_hashes_as_its_ticks_whatever_form_it_was_given_in() -> None:
    wanted = dt.datetime(2024, 2, 29, 12, 30, 1, 5)
    forms = [wanted, np.datetime64("2024-02-29T12:30:01.000005"), pd.Timestamp(wanted), wanted.isoformat()]
    hashes = {_hash_of(form, "timestamp[us]") for form in forms}
    ticks = (wanted - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    spec = _mix(0x243F6A8885A308D3 ^ _mix(ticks + len("timestamp[us]")) ^ 1)  # docs/format.md, 'Row hashes'
    assert hashes == {spec}
    instant = dt.datetime(2024, 2, 29, 12, 30, tzinfo=UTC)
    tokyo = dt.timezone(dt.timedelta(hours=9))
    zoned = {_hash_of(v, "timestamp[us, tz=UTC]") for v in (instant, instant.astimezone(tokyo), pd.Timestamp(instant))}
    assert len(zoned) == 1


_CHILD = """
import datetime as dt, json, sys, time
import numpy as np, pandas as pd
import stable_explore as se
from stable_explore.storage.format.hashing import row_hashes
time.tzset()
utc = dt.timezone.utc
values = [dt.datetime(2024, 2, 29, 12, 30, 1, 5), dt.datetime(2024, 2, 29, 12, 30, tzinfo=utc), dt.date(2024, 2, 29)]
dtypes = ["timestamp[us]", "timestamp[us, tz=Europe/Paris]", "date32"]
columns = [se.Value(d).encode_column([v]) for d, v in zip(dtypes, values)]
lists = se.Sequence(se.Value("timestamp[us, tz=Europe/Paris]")).encode_column([[values[1]]])
print(json.dumps([int(row_hashes(columns)[0]), int(row_hashes([lists])[0]), time.strftime("%z")]))
"""


def test_row_hashes_of_timestamps_are_the_same_in_processes_in_other_time_zones() -> None:
    results = []
    for zone in ("UTC", "Asia/Tokyo", "America/Los_Angeles"):
        env = {**os.environ, "TZ": zone}
        done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True)
        results.append(json.loads(done.stdout))
    assert len({offset for _, _, offset in results}) == 3  # the children really ran in three zones
    assert len({(row, listed) for row, listed, _ in results}) == 1


def test_temporal_columns_read_back_in_pandas_with_their_zone(tmp_path: Path) -> None:
    features = se.Features(
        at=se.Value("timestamp[us, tz=Europe/Paris]"), naive=se.Value("timestamp[ns]"), took=se.Value("duration[ms]")
    )
    rows = [
        {"at": dt.datetime(2024, 1, 1, tzinfo=UTC), "naive": "2024-01-01T00:00:00", "took": dt.timedelta(seconds=2)},
        {"at": None, "naive": None, "took": None},
    ]
    ds = se.build(rows, features, name="times", home=tmp_path, progress=False)
    frame = ds.to_pandas()
    assert str(frame["at"].dtype) == "datetime64[us, Europe/Paris]"
    assert str(frame["naive"].dtype) == "datetime64[ns]"
    assert frame["at"].iloc[0] == pd.Timestamp("2024-01-01 01:00", tz="Europe/Paris")
    assert pd.isna(frame["at"].iloc[1])
    edited = ds.set(1, "at", "2024-05-01T10:00:00+02:00").save("set a time")
    assert edited[1]["at"] == dt.datetime(2024, 5, 1, 8, tzinfo=UTC)
    assert edited[0] == ds[0]


def test_the_browser_shows_temporal_fields_as_iso_text_and_filters_its_number_columns(tmp_path: Path) -> None:
    pytest.importorskip("anywidget", reason="the lab extra is part of the test extras")
    features = se.Features(
        at=se.Value("timestamp[us, tz=UTC]"), day=se.Value("date32"), took=se.Value("duration[s]"), n=se.Value("int64")
    )
    start = dt.datetime(2024, 1, 1, 8, tzinfo=UTC)
    rows = [{"at": start, "day": start.date(), "took": dt.timedelta(seconds=i), "n": i} for i in range(3)]
    browser = se.build(rows, features, name="b", home=tmp_path, progress=False).browse(page_size=24)
    json.dumps(browser.page_message()[0])
    detail, _ = browser.detail_message(0)
    shown = dict(detail["fields"])
    assert shown == {"at": "2024-01-01 08:00:00+00:00", "day": "2024-01-01", "took": "0:00:00", "n": "0"}
    browser.where("n", min=1)
    assert browser.filter["rows"] == 2


def test_filter_by_a_date_or_time_takes_any_form_its_column_accepts(tmp_path: Path) -> None:
    features = se.Features(at=se.Value("timestamp[us, tz=UTC]"), day=se.Value("date32"))
    start = dt.datetime(2024, 1, 1, 8, tzinfo=UTC)
    rows = [{"at": start + dt.timedelta(hours=i), "day": (start + dt.timedelta(days=i)).date()} for i in range(4)]
    ds = se.build(rows, features, name="f", home=tmp_path, progress=False)
    assert len(ds.filter(at="2024-01-01T08:00:00+02:00")) == 0  # 06:00 UTC: before the first row
    assert list(ds.filter(at="2024-01-01T11:00:00+02:00")["at"]) == [dt.datetime(2024, 1, 1, 9, tzinfo=UTC)]
    assert list(ds.filter(day=["2024-01-02", np.datetime64("2024-01-04")])["day"]) == [
        dt.date(2024, 1, 2),
        dt.date(2024, 1, 4),
    ]
    with pytest.raises(EncodingError, match="got a naive one") as info:
        ds.filter(at=dt.datetime(2024, 1, 1, 8))
    assert info.value.field == "at"
