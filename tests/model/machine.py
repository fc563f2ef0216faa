"""A model-checked state machine over one home (a folder or a bucket) and a second home to push to and pull from.

Rules: build, relabel, drop, set, save, save under another name, tag, gc, compare, push, pull,
reopen (forget this process's caches; read in a fresh process) and corrupt a file. After every
step every live version must read as :mod:`tests.model.model` says through every read path,
``latest`` and the tags must point where the model says, and ``fsck`` must find nothing.

Known bugs being fixed on other branches are avoided behind one flag each (below): the rule stays,
only the exact combination that triggers the bug is skipped. Set a flag to False once its fix is merged.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import stable_explore as se
from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.backends.object import ObjectStore
from stable_explore.storage.backends.read_cache import CACHE_ENV
from stable_explore.storage.kept import forget
from tests.model.model import FLAGS, LABELS, Draft, HomeModel, Row, Rows, decoded, row_diff
from tests.model.reads import PALETTE_SIZE, check_in_fresh_process, check_reads, names, source_rows

KEYS = [f"k{i:02d}" for i in range(12)]
STRINGS = ["", "a", "b", "çà", "x y", "0"]
NAMES = ("d", "other")
TAGS = ("clean", "v1", "latest")

FRESH_PROCESS_EVERY = 6  # steps at least between two reads in a fresh process

STEPS: Counter[str] = Counter()
"""Rules run in this process, by name (the soak reports them)."""


def _fresh_dir(parent: Path, stem: str) -> str:
    path = parent / f"{stem}-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    return str(path)


class HomeMachine(RuleBasedStateMachine):
    """The machine on a local home; :class:`BucketMachine` runs the same rules on a bucket."""

    bucket: ClassVar[str | None] = None  # s3://bucket/prefix of the bucket machine

    def __init__(self) -> None:
        super().__init__()
        STEPS["examples"] += 1
        self.tmp = Path(tempfile.mkdtemp(prefix="se-model-"))
        self.saved_env = {k: os.environ.get(k) for k in (CACHE_ENV, "STABLE_EXPLORE_HOME")}
        os.environ[CACHE_ENV] = _fresh_dir(self.tmp, "machine")  # this machine's mirrors and read cache
        os.environ["STABLE_EXPLORE_HOME"] = str(self.tmp / "default-home")
        self.home: str = f"{self.bucket}/{uuid.uuid4().hex[:10]}" if self.bucket else str(self.tmp / "home")
        self.second = str(self.tmp / "second")
        self.model = HomeModel()
        self.second_model = HomeModel()
        self.draft: Draft | None = None
        self.draft_rows: Rows = ()
        self.origin_ds: se.CachedDataset | None = None
        self.since_fresh = 0  # steps since the last read in a fresh process (each costs a Python start)
        self.gone: set[str] = set()  # versions gc removed (fsck's known noise on a bucket names them)

    def teardown(self) -> None:
        self.origin_ds = None
        forget()  # every cache the process shares: reads as a fresh process would
        for key, value in self.saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers -----------------------------------------------------------------------------------------------
    def _open(self, name: str, version: str) -> se.CachedDataset:
        return se.load(f"{name}@{version}", home=self.home)

    def _pick_version(self, data: st.DataObject, model: HomeModel | None = None) -> tuple[str, str]:
        live = (model or self.model).live()
        return data.draw(st.sampled_from(live), label="version")

    def _count(self, rule: str) -> None:
        STEPS[rule] += 1
        STEPS["steps"] += 1
        self.since_fresh += 1

    # -- rules -------------------------------------------------------------------------------------------------
    @initialize(data=st.data())
    def first_build(self, data: st.DataObject) -> None:
        self.build(data)

    @rule(data=st.data())
    def build(self, data: st.DataObject) -> None:
        self._count("build")
        keys = data.draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=8, unique=True), label="keys")
        row = st.builds(
            Row,
            st.integers(0, len(LABELS) - 1),
            st.integers(0, len(FLAGS) - 1),
            st.integers(-3, 3),
            st.sampled_from(STRINGS),
            st.integers(0, PALETTE_SIZE - 1),
            st.lists(st.integers(0, 3), max_size=3).map(tuple),
        )
        rows: Rows = tuple(zip(keys, data.draw(st.lists(row, min_size=len(keys), max_size=len(keys))), strict=True))
        name = data.draw(st.sampled_from(NAMES), label="name")
        batch = data.draw(st.sampled_from([2, 3, 1000]), label="batch_size")
        ds = se.build(
            source_rows(rows), FEATURES, name=name, home=self.home, progress=False, batch_size=batch, shard_size=1
        )
        reused = ds.version in self.model.versions.get(name, {})
        assert ("reusing the existing version" in (ds.build_info or "")) == reused, ds.build_info
        self.model.publish(name, ds.version, rows, reused=reused and not self.bucket)

    def _draft(self, data: st.DataObject) -> tuple[Draft, Rows]:
        if self.draft is None:
            name, version = self._pick_version(data)
            self.draft = Draft(name, version)
            self.draft_rows = self.model.rows(name, version)
            self.origin_ds = self._open(name, version)  # held across steps, as a notebook holds it
        return self.draft, self.draft_rows

    def _position(self, data: st.DataObject, draft: Draft, rows: Rows, column: str) -> int | None:
        free = [p for p in range(len(rows)) if p not in draft.dropped]
        return data.draw(st.sampled_from(free), label="row") if free else None

    @rule(data=st.data())
    @precondition(lambda self: self.model.live())
    def relabel(self, data: st.DataObject) -> None:
        self._count("relabel")
        draft, rows = self._draft(data)
        column = data.draw(st.sampled_from(["label", "flag"]), label="column")
        position = self._position(data, draft, rows, column)
        if position is None:
            return
        names = LABELS if column == "label" else FLAGS
        code = data.draw(st.integers(0, len(names) - 1), label="class")
        draft.values.pop((position, column), None)
        draft.relabelled[(position, column)] = code

    @rule(data=st.data())
    @precondition(lambda self: self.model.live())
    def set_value(self, data: st.DataObject) -> None:
        self._count("set")
        draft, rows = self._draft(data)
        column = data.draw(st.sampled_from(["x", "s", "label", "flag"]), label="column")
        position = self._position(data, draft, rows, column)
        if position is None:
            return
        if column in ("label", "flag"):  # set() of a class is a relabel
            draft.relabelled[(position, column)] = data.draw(
                st.integers(0, len(LABELS if column == "label" else FLAGS) - 1)
            )
        else:
            draft.values[(position, column)] = data.draw(
                st.integers(-5, 5) if column == "x" else st.sampled_from(STRINGS)
            )

    @rule(data=st.data())
    @precondition(lambda self: self.model.live())
    def drop(self, data: st.DataObject) -> None:
        self._count("drop")
        draft, rows = self._draft(data)
        if not rows:
            return
        chosen = data.draw(st.sets(st.integers(0, len(rows) - 1), min_size=1, max_size=3), label="rows")
        draft.dropped |= frozenset(chosen)

    def _real_draft(self, draft: Draft) -> Any:
        real: Any = self.origin_ds
        if draft.dropped:
            real = real.drop(sorted(draft.dropped))
        for (position, column), code in sorted(draft.relabelled.items()):
            real = real.relabel({position: (LABELS if column == "label" else FLAGS)[code]}, column=column)
        for (position, column), value in sorted(draft.values.items()):
            real = real.set(position, column, value)
        return real

    @rule(data=st.data())
    @precondition(lambda self: self.draft is not None)
    def save(self, data: st.DataObject) -> None:
        self._count("save")
        self._save(data, other_name=False)

    @rule(data=st.data())
    @precondition(lambda self: self.draft is not None)
    def save_as(self, data: st.DataObject) -> None:
        self._count("save_as")
        self._save(data, other_name=True)

    def _save(self, data: st.DataObject, *, other_name: bool) -> None:
        draft = self.draft
        assert draft is not None
        self.draft = None
        origin_rows = self.draft_rows
        target = next(n for n in NAMES if n != draft.name) if other_name else draft.name
        tag = data.draw(st.sampled_from([None, "clean"]), label="tag")
        real = self._real_draft(draft)
        self.origin_ds = None
        if draft.origin_gone:  # gc took the origin while the draft was open: a clear error, nothing published
            STEPS["save_of_collected_origin"] += 1
            refused = None
            try:
                real.save(message="model step", name=target, tag=tag, progress=False)
            except se.CacheNotFoundError as exc:
                refused = str(exc)
            if refused is None:  # allowed only where nothing is read, written or tagged
                assert tag is None, f"save(tag={tag!r}) of a draft whose origin gc removed pointed a tag at it"
                assert not other_name, "a save under another name from a version gc removed"
                assert draft.changes_nothing(origin_rows), "a save with edits from a version gc removed"
            else:
                assert draft.origin in refused, refused
                assert "garbage-collected" in refused, refused
            return
        saved = real.save(message="model step", name=target, tag=tag, progress=False)
        rows = draft.apply(origin_rows)
        if not other_name and draft.changes_nothing(origin_rows):
            assert saved.version == draft.origin, "a save that changes nothing creates no version"
            if tag is not None:
                self.model.refs[target][tag] = draft.origin
            return
        assert saved.name == target
        self.model.publish(target, saved.version, rows, reused=False)
        if tag is not None:
            self.model.refs[target][tag] = saved.version

    @rule(data=st.data())
    @precondition(lambda self: self.model.live())
    def tag(self, data: st.DataObject) -> None:
        self._count("tag")
        name, version = self._pick_version(data)
        tag = data.draw(st.sampled_from(TAGS), label="tag")
        assert se.tag(f"{name}@{version}", tag, home=self.home) == version
        self.model.refs.setdefault(name, {})[tag] = version

    @rule(data=st.data(), keep=st.integers(0, 2))
    @precondition(lambda self: self.model.live())
    def gc(self, data: st.DataObject, keep: int) -> None:
        self._count("gc")
        name = data.draw(st.sampled_from([None, *sorted(n for n, v in self.model.versions.items() if v)]))
        must, may = self.model.gc_removes(name, keep, grace=not self.bucket)
        report = se.gc(name, keep=keep, home=self.home)
        removed = set(report.removed)
        assert must <= removed <= must | may, f"gc(keep={keep}) removed {sorted(removed)}, the model {sorted(must)}"
        self.model.remove(removed)
        self.gone.update(v.partition("@")[2] for v in removed)
        if self.draft is not None and f"{self.draft.name}@{self.draft.origin}" in removed:
            self.draft.origin_gone = True  # its save must now refuse, naming the version

    @rule(data=st.data())
    @precondition(lambda self: self.model.live())
    def compare(self, data: st.DataObject) -> None:
        self._count("compare")
        a, b = self._pick_version(data), self._pick_version(data)
        rows_a, rows_b = self.model.rows(*a), self.model.rows(*b)
        added, removed, changed = row_diff(rows_a, rows_b)
        diff = se.compare(self._open(*a), self._open(*b))
        if a[1] == b[1]:
            assert diff.identical
            return
        assert set(diff.rows.added) == added, (a, b, diff.rows)
        assert set(diff.rows.removed) == removed, (a, b, diff.rows)
        assert set(diff.rows.changed) == set(changed), (a, b, diff.rows)
        left, right = dict(rows_a), dict(rows_b)
        for key, columns in changed.items():
            fields = diff.rows.changed_fields[key]
            assert set(fields) == columns, (key, fields, columns)
            for column in columns - {"image", "seq"}:
                expected = (decoded(column, left[key].get(column)), decoded(column, right[key].get(column)))
                assert tuple(fields[column]) == expected, (key, column, fields[column], expected)
        if not (added or removed or changed):
            assert (diff.rows.added, diff.rows.removed, diff.rows.changed) == ([], [], [])

    @rule(data=st.data())
    @precondition(lambda self: self.model.live())
    def push(self, data: st.DataObject) -> None:
        self._count("push")
        name, version = self._pick_version(data)
        se.push(self._open(name, version), self.second, progress=False)
        self.second_model.copy_in(self.model, name, version)

    @rule(data=st.data())
    @precondition(lambda self: self.second_model.live())
    def pull(self, data: st.DataObject) -> None:
        self._count("pull")
        name, version = self._pick_version(data, self.second_model)
        pulled = se.pull(f"file://{self.second}/{name}@{version}", home=self.home, progress=False)
        assert pulled.version == version
        self.model.copy_in(self.second_model, name, version)
        check_reads(se.load(f"{name}@{version}", home=self.second), self.second_model.rows(name, version))

    @rule()
    @precondition(lambda self: self.model.live())
    def reopen(self) -> None:
        """Forget every cache of this process: the next reads open and check every file again."""
        self._count("reopen")
        forget()  # every cache the process shares: reads as a fresh process would

    @rule()
    @precondition(lambda self: self.model.live() and self.since_fresh >= FRESH_PROCESS_EVERY)
    def read_in_a_fresh_process(self) -> None:
        self._count("fresh_process")
        self.since_fresh = 0
        refs = {f"{n}@{v}": (v, self.model.rows(n, v)) for n, v in self.model.live()}
        refs.update({f"{n}@{tag}": (v, self.model.rows(n, v)) for n, tags in self.model.refs.items()
                     for tag, v in tags.items()})  # fmt: skip
        check_in_fresh_process(self.home, refs)

    # -- corruption ----------------------------------------------------------------------------------------------
    def _files(self, name: str, version: str) -> list[str]:
        return sorted(p.name for p in (Path(self.home) / name / "versions" / version).iterdir())

    def _read_file(self, name: str, version: str, file: str) -> bytes:
        return (Path(self.home) / name / "versions" / version / file).read_bytes()

    def _write_file(self, name: str, version: str, file: str, data: bytes, *, in_place: bool) -> None:
        path = Path(self.home) / name / "versions" / version / file
        if in_place:  # the same inode: a hard-linked copy in another version is damaged too, as on a real disk
            with path.open("r+b") as f:
                f.write(data)
                f.truncate(len(data))
        else:  # a new inode: a map of the old file (kept by this process) never sees a shorter file
            tmp = path.with_name(f".{file}.model-tmp")
            tmp.write_bytes(data)
            tmp.chmod(path.stat().st_mode)
            tmp.replace(path)

    def _as_a_fresh_machine(self) -> None:
        forget()  # every cache the process shares: reads as a fresh process would

    def _where(self, name: str, version: str, file: str) -> str:
        return file

    @rule(data=st.data())
    @precondition(lambda self: self.model.live())
    def corrupt(self, data: st.DataObject) -> None:
        """Damage one file of a version: reads refuse it naming the file (or read right), fsck reports it."""
        self._count("corrupt")
        name, version = self._pick_version(data)
        file = data.draw(st.sampled_from(self._files(name, version)), label="file")
        original = self._read_file(name, version, file)
        truncate = data.draw(st.booleans(), label="truncate")
        if truncate:
            damaged = original[: data.draw(st.integers(0, max(0, len(original) - 1)), label="keep bytes")]
        else:
            position = data.draw(st.integers(0, len(original) - 1), label="byte")
            flip = data.draw(st.integers(1, 255), label="xor")
            damaged = original[:position] + bytes([original[position] ^ flip]) + original[position + 1 :]
        forget()  # no map of the file may outlive its damage (a shorter file under a map is a SIGBUS)
        self._write_file(name, version, file, damaged, in_place=not truncate)
        try:
            self._as_a_fresh_machine()
            self._check_damage(name, version, file)
        finally:
            forget()
            self._write_file(name, version, file, original, in_place=not truncate)
            self._as_a_fresh_machine()

    def _check_damage(self, name: str, version: str, file: str) -> None:
        STEPS["corruptions"] += 1
        refused = None
        try:
            ds = self._open(name, version)
        except CacheCorruptionError as exc:
            refused = exc
        if refused is None:
            STEPS["paths_refused"] += check_reads(ds, self.model.rows(name, version), damaged=file)
            del ds
        else:
            assert names(refused) == file, f"{name}@{version} with {file} damaged: open blames another file: {refused}"
            STEPS["refused_on_open"] += 1
        blamed = [str(p.path) for p in se.fsck(home=self.home).problems]  # listed, never raised
        where = f"{version}/{file}"
        assert any(p.endswith(where) for p in blamed), f"fsck missed damage to {name}@{where}: it blamed {blamed}"

    # -- invariants --------------------------------------------------------------------------------------------
    @invariant()
    def reads_match_the_model(self) -> None:
        for name, version in self.model.live():
            check_reads(self._open(name, version), self.model.rows(name, version))

    @invariant()
    def refs_match_the_model(self) -> None:
        for model, home in ((self.model, self.home), (self.second_model, self.second)):
            for name, tags in model.refs.items():
                for tag, version in tags.items():
                    ref = name if tag == "latest" else f"{name}@{tag}"
                    assert se.load(ref, home=home).version == version, f"{ref} in {home}"

    @invariant()
    def fsck_finds_nothing(self) -> None:
        if not self.model.live():
            return
        report = se.fsck(home=self.home)
        problems = [str(p) for p in report.problems]
        assert not problems, "fsck on a healthy home:\n" + "\n".join(problems)


class BucketMachine(HomeMachine):
    """The same rules on a home in a bucket; files are damaged in the bucket and read by a fresh machine."""

    def _store(self) -> ObjectStore:
        return ObjectStore(self.home)

    def _files(self, name: str, version: str) -> list[str]:
        return self._store().list_dir(f"{name}/versions/{version}")

    def _read_file(self, name: str, version: str, file: str) -> bytes:
        target = self.tmp / f"get-{uuid.uuid4().hex[:8]}"
        self._store().get_file(f"{name}/versions/{version}/{file}", target)
        data = target.read_bytes()
        target.unlink()
        return data

    def _write_file(self, name: str, version: str, file: str, data: bytes, *, in_place: bool) -> None:
        source = self.tmp / f"put-{uuid.uuid4().hex[:8]}"
        source.write_bytes(data)
        self._store().put_file(f"{name}/versions/{version}/{file}", source)
        source.unlink()

    def _as_a_fresh_machine(self) -> None:
        """Another machine: no mirror of the versions' metadata, an empty read cache, nothing checked."""
        super()._as_a_fresh_machine()
        os.environ[CACHE_ENV] = _fresh_dir(self.tmp, "machine")


FEATURES = se.Features(
    label=se.ClassLabel(names=LABELS),
    flag=se.ClassLabel(names=FLAGS),
    x=se.Value("int64"),
    s=se.Value("string"),
    image=se.Image(),
    seq=se.Sequence(se.Value("int64")),
)
