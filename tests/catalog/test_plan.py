"""The cache decision's input: ``plan_source`` (what fingerprints a build) and ``explain_changes`` (why a miss)."""

from __future__ import annotations

import pytest

from stable_explore import ClassLabel, Features, Value
from stable_explore.catalog import BuildOptions, SourcePlan, explain_changes, plan_source

NUM = Features(x=Value("int64"))
OFFSET = 0


def gen(n, step=1):
    for i in range(0, n, step):
        yield {"x": i + OFFSET}


def other(n, step=1):
    for i in range(0, n, step):
        yield {"x": OFFSET - i}


def plan(source: object = gen, features: Features = NUM, args: tuple = (3,), kwargs: dict | None = None,
         **options: object) -> SourcePlan:  # fmt: skip
    return plan_source(source, features, BuildOptions(**options), args=args, kwargs=kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "variant",
    [
        {"args": (), "kwargs": {"n": 3}},  # by keyword or by position
        {"args": (3, 1)},  # the default given explicitly
        {"shard_size": "1KB", "batch_size": 7},  # how shards are cut does not change the rows
        {"tag": "reviewed", "message": "again"},
        {"force": True},
    ],
)
def test_what_does_not_change_the_fingerprint(variant: dict) -> None:
    assert plan(**variant).fingerprint == plan().fingerprint


@pytest.mark.parametrize(
    ("variant", "why"),
    [
        ({"args": (4,)}, ["argument 'n' changed"]),
        ({"args": (3, 2)}, ["argument 'step' changed"]),
        ({"source": other}, ["generator source changed"]),
        ({"features": Features(x=Value("int32"))}, ["features changed"]),
        ({"features": Features(x=ClassLabel(names=["a", "b", "c"]))}, ["features changed"]),
        ({"compression": "zstd"}, ["compression changed (None -> zstd)"]),
        ({"description": "three numbers"}, ["description, license or metadata changed"]),
        ({"license": "CC0-1.0"}, ["description, license or metadata changed"]),
        ({"metadata": {"by": "ada"}}, ["description, license or metadata changed"]),
        ({"args": (4, 2), "compression": "lz4"}, ["argument 'n' changed", "argument 'step' changed",
                                                  "compression changed (None -> lz4)"]),
    ],
)  # fmt: skip
def test_what_changes_the_fingerprint_and_how_the_change_is_told(variant: dict, why: list[str]) -> None:
    before, after = plan(), plan(**variant)
    assert after.fingerprint != before.fingerprint
    assert explain_changes(before.parts, after.parts) == why


def test_a_global_the_generator_reads_is_a_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    before = plan()
    assert before.parts is not None
    assert set(before.parts["globals"]) == {"OFFSET"}
    monkeypatch.setitem(gen.__globals__, "OFFSET", 10)
    after = plan()
    assert after.fingerprint != before.fingerprint
    assert explain_changes(before.parts, after.parts) == ["variable 'OFFSET' changed"]


def test_a_key_stands_for_the_source() -> None:
    keyed = plan(key="v1")
    assert keyed.parts is not None
    assert keyed.parts["kind"] == "key"
    assert plan(source=other, key="v1").fingerprint == keyed.fingerprint  # the key, not the code, decides
    assert plan(source=[{"x": 1}], key="v1").fingerprint == keyed.fingerprint
    assert plan(key="v2").fingerprint != keyed.fingerprint
    assert explain_changes(keyed.parts, plan(key="v2").parts) == ["key changed ('v1' -> 'v2')"]
    assert explain_changes(plan().parts, keyed.parts) == ["source kind changed (function -> key)"]
    assert plan(key="v1", features=Features(x=Value("int32"))).fingerprint != keyed.fingerprint


@pytest.mark.parametrize("source", [[{"x": 1}], iter([{"x": 1}]), gen(3), (row for row in [{"x": 1}])])
def test_a_plain_iterable_has_no_fingerprint(source: object) -> None:
    assert plan(source=source) == SourcePlan(None, None)


def test_arguments_the_generator_cannot_take_are_named() -> None:
    with pytest.raises(TypeError, match="gen cannot take these arguments: too many positional arguments"):
        plan(args=(1, 2, 3))
    with pytest.raises(TypeError, match=r"gen cannot take these arguments: .*'size'"):
        plan(kwargs={"size": 3})


def test_an_argument_without_a_token_is_named_and_never_stops_a_build() -> None:
    opaque = plan(args=(3, object()))
    assert opaque.unstable == {"argument 'step'": "a builtins.object"}  # the build runs every time and says why


def test_a_cell_plan_tells_a_changed_cell() -> None:
    before = plan().as_cell("squares")
    assert before.parts is not None
    assert (before.parts["kind"], before.parts["function"]) == ("cell", "squares")
    assert before.fingerprint == plan().fingerprint
    after = plan(source=other).as_cell("squares")
    assert explain_changes(before.parts, after.parts) == ["cell changed"]
    keyed = plan(key="k")
    assert keyed.as_cell("squares") is keyed  # only a function's plan becomes a cell's


def test_nothing_to_explain_without_both_plans() -> None:
    parts = plan().parts
    assert explain_changes(None, parts) == []
    assert explain_changes(parts, None) == []
    assert explain_changes({}, parts) == []
    assert explain_changes(parts, parts) == []


def test_added_and_removed_variables_are_told() -> None:
    old = {"kind": "function", "code": "c", "globals": {"ROOT": "1"}, "arguments": {"n": "3"}}
    new = {"kind": "function", "code": "c", "globals": {"LIMIT": "5"}, "arguments": {"n": "3", "m": "1"}}
    assert explain_changes(old, new) == [
        "argument 'm' changed",
        "variable 'LIMIT' changed",
        "variable 'ROOT' changed",
    ]


def test_a_stored_plan_of_another_shape_is_explained_not_crashed_on() -> None:
    # a version's stored source record is JSON read back: parts of another shape (an older or damaged
    # record) count as empty, where they raised AttributeError ("'str' object has no attribute 'get'")
    old = {"kind": "function", "code": "a", "files": ["data"], "globals": None, "code_used": "x"}
    new = {"kind": "function", "code": "a", "files": {"data": {"by": "argument 'root'", "digest": "d"}}}
    assert explain_changes(old, new) == ["argument 'root' (data) now exists"]
