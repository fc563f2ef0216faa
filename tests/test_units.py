"""Byte sizes: ``parse_size`` reads what users type for ``shard_size``, ``format_size`` prints sizes in listings."""

from __future__ import annotations

import pytest

from stable_explore._units import format_size, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (1, 1),
        (4096, 4096),
        ("10", 10),
        ("10B", 10),
        ("64 kb", 64 * 1024),
        ("64KB", 64 * 1024),
        (" 2 K ", 2 * 1024),
        ("256MB", 256 * 1024**2),
        ("5 MiB", 5 * 1024**2),
        ("1.5GiB", 1536 * 1024**2),
        ("1.5 g", 1536 * 1024**2),
        ("0.5KB", 512),
        ("1TB", 1024**4),
    ],
)
def test_parse_size_reads_numbers_and_units_in_any_case(text: int | str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["abc", "", "MB", "1e6", "5 PB", "5 Mi", "-5", "1,000", "ten MB", None])
def test_a_size_it_cannot_read_names_the_input_and_an_example(text: object) -> None:
    with pytest.raises(ValueError, match="a size must be a number of bytes or a string like '256MB'") as info:
        parse_size(text)  # type: ignore[arg-type]
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("size", [0, -1, "0MB", "0.4"])
def test_a_size_must_be_positive(size: int | str) -> None:
    with pytest.raises(ValueError, match=rf"a size must be positive, got {size!r}"):
        parse_size(size)


@pytest.mark.parametrize("flag", [True, False])
def test_a_bool_is_not_a_size(flag: bool) -> None:
    # True is an int to Python; as a size it is a mistake, not 1 byte
    with pytest.raises(TypeError, match="a size must be a number of bytes"):
        parse_size(flag)


@pytest.mark.parametrize(
    ("nbytes", "text"),
    [
        (0, "0 B"),
        (1, "1 B"),
        (1023, "1023 B"),
        (1024, "1.0 KB"),
        (1536, "1.5 KB"),
        (3_500_000, "3.3 MB"),
        (5 * 1024**4, "5.0 TB"),
        (1024**5, "1024.0 TB"),  # TB is the largest unit
    ],
)
def test_format_size_prints_whole_bytes_then_one_decimal(nbytes: int, text: str) -> None:
    assert format_size(nbytes).replace("iB", "B") == text  # binary labels (KiB, MiB) would read the same


@pytest.mark.parametrize("nbytes", [1, 999, 1024, 5_000, 123_456, 7 * 1024**2 + 1, 3 * 10**9, 2 * 1024**4 + 17])
def test_a_printed_size_reads_back_as_about_the_same_size(nbytes: int) -> None:
    # what a listing prints can be typed back as shard_size= and means (within its one decimal) the same bytes
    back = parse_size(format_size(nbytes).replace(" ", ""))
    assert abs(back - nbytes) <= 0.05 * nbytes


def test_a_unit_label_means_one_thing() -> None:
    decimal = parse_size("1MB") == 10**6 and format_size(10**6) == "1.0 MB"
    binary = parse_size("1MiB") == 2**20 and format_size(2**20) == "1.0 MiB"
    assert decimal or binary
