"""``BuildOptions``: every choice a build takes besides its source, checked once when made."""

from __future__ import annotations

import dataclasses

import pytest

from stable_explore.catalog import BuildOptions


def test_defaults_and_derived_values() -> None:
    options = BuildOptions()
    assert (options.shard_size_bytes, options.batch_size, options.compression) == (256 * 1024**2, 1000, None)
    assert (options.tag, options.force, options.key, options.message) == (None, False, None, None)
    assert options.descriptive == {"description": None, "license": None, "metadata": {}}
    assert BuildOptions(shard_size="64KB").shard_size_bytes == 64 * 1024
    assert BuildOptions(shard_size=5000).shard_size_bytes == 5000


def test_options_are_frozen_and_keep_their_own_metadata() -> None:
    metadata = {"source": "sklearn", "splits": ["train"]}
    options = BuildOptions(description="digits", license="BSD-3-Clause", metadata=metadata)
    metadata["source"] = "changed later"
    assert options.metadata["source"] == "sklearn"
    assert options.descriptive == {
        "description": "digits",
        "license": "BSD-3-Clause",
        "metadata": {"source": "sklearn", "splits": ["train"]},
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.tag = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "error", "needle"),
    [
        ({"metadata": {"when": object()}}, TypeError, "metadata must be JSON-serialisable"),
        ({"metadata": {"x": float("nan")}}, TypeError, "metadata must be JSON-serialisable"),
        ({"tag": "../up"}, ValueError, "tag must start with a letter or digit"),
        ({"tag": ""}, ValueError, "tag must start with a letter or digit"),
        ({"compression": "gzip"}, ValueError, r"compression must be one of \(None, 'lz4', 'zstd'\), got 'gzip'"),
        ({"batch_size": 0}, ValueError, "batch_size must be a positive int, got 0"),
        ({"batch_size": -5}, ValueError, "batch_size must be a positive int, got -5"),
        ({"batch_size": 1.5}, ValueError, "batch_size must be a positive int, got 1.5"),
        ({"batch_size": True}, ValueError, "batch_size must be a positive int, got True"),
        ({"shard_size": "huge"}, ValueError, "a size must be a number of bytes"),
        ({"shard_size": -1}, ValueError, "a size must be positive"),
    ],
)
def test_bad_options_are_refused_when_made(options: dict, error: type[Exception], needle: str) -> None:
    with pytest.raises(error, match=needle):
        BuildOptions(**options)


@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
def test_the_compressions_arrow_ipc_supports(compression: str | None) -> None:
    assert BuildOptions(compression=compression).compression == compression


def test_the_cli_and_the_magic_assemble_options_from_their_arguments_alike() -> None:
    """One function turns parsed options into BuildOptions, for the command line and for %stable_cache."""
    from IPython.core.magic_arguments import parse_argstring

    from stable_explore.catalog import options_from_args
    from stable_explore.cli import _parser
    from stable_explore.magic import StableMagics

    given = "--description d --license MIT --tag raw --force --key k --shard-size 1MB --compression zstd"
    given += " --num-proc 2 --lock-timeout 3"
    expected = BuildOptions(
        description="d",
        license="MIT",
        tag="raw",
        force=True,
        key="k",
        shard_size="1MB",
        compression="zstd",
        num_proc=2,
        lock_timeout=3.0,
    )
    cli = _parser().parse_args(["build", "mod:gen", "--features", "mod:F", *given.split()])
    assert options_from_args(cli) == expected
    magic = parse_argstring(StableMagics.stable_cache, f"{given} --ignore log --watch data --check-content")
    assert options_from_args(magic, metadata={"n": 1}) == dataclasses.replace(
        expected, ignore=("log",), watch=("data",), check_content=True, metadata={"n": 1}
    )


def test_options_from_args_checks_what_it_is_given() -> None:
    import argparse

    from stable_explore.catalog import options_from_args
    from stable_explore.errors import InvalidOptionError

    with pytest.raises(InvalidOptionError, match="batch_size must be a positive int, got 0"):
        options_from_args(argparse.Namespace(batch_size=0, quiet=True))
