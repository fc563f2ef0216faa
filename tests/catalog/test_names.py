"""Names of datasets and tags, and where the home is."""

from __future__ import annotations

from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.catalog.names import HOME_ENV, LATEST, NAME_PATTERN, check_name, resolve_home
from tests.sources import NUM_FEATURES


def test_home_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(tmp_path / "env-home"))
    ds = se.build([{"x": 1, "s": "a"}], NUM_FEATURES, name="envy", progress=False)
    assert ds.cache_dir.is_relative_to(tmp_path / "env-home")
    assert se.load("envy").version == ds.version


def test_names_are_checked(home: Path) -> None:
    with pytest.raises(ValueError, match="dataset name"):
        se.build([{"x": 1, "s": "a"}], NUM_FEATURES, name="../up", home=home, progress=False)
    with pytest.raises(TypeError, match="name= is required"):
        se.build([{"x": 1, "s": "a"}], NUM_FEATURES, home=home, progress=False)


def test_the_home_is_the_argument_then_the_environment_then_the_users_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # never the real one: nothing is built here anyway
    monkeypatch.delenv(HOME_ENV)
    assert resolve_home() == tmp_path / "user" / ".cache" / "stable-explore"
    monkeypatch.setenv(HOME_ENV, "~/elsewhere")
    assert resolve_home() == tmp_path / "user" / "elsewhere"  # ~ is expanded
    monkeypatch.setenv(HOME_ENV, "")
    assert resolve_home() == tmp_path / "user" / ".cache" / "stable-explore"  # empty means unset
    assert resolve_home(tmp_path / "given") == tmp_path / "given"
    assert resolve_home("~/given") == tmp_path / "user" / "given"
    assert not (tmp_path / "user").exists()  # resolving creates nothing


@pytest.mark.parametrize("name", ["pets", "pets-v2", "Pets_2.0", "0", "a" * 128, "x.y-z_1"])
def test_plain_names_are_accepted(name: str) -> None:
    assert check_name(name) == name
    assert NAME_PATTERN.match(name)


@pytest.mark.parametrize(
    "name", ["", ".", "..", "../up", "a/b", "a\\b", "-dash", ".hidden", "_under", "a b", "é", "a" * 129, "\na", None, 5]
)
def test_anything_else_is_refused_with_what_is_allowed(name: object) -> None:
    with pytest.raises(ValueError, match=r"tag must start with a letter or digit and use only letters, digits") as info:
        check_name(name, "tag")
    assert repr(name) in str(info.value)
    assert LATEST == "latest"


@pytest.mark.parametrize("names", [{"name": "pets\n"}, {"name": "pets", "tag": "clean\n"}])
def test_a_trailing_newline_is_not_part_of_a_name(home: Path, names: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="must start with a letter or digit"):
        se.build([{"x": 1, "s": "a"}], NUM_FEATURES, home=home, progress=False, **names)
