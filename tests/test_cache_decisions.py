"""Cache decisions that are never wrong (issue 11): each case is a notebook re-run in a fresh process.

A "notebook" here is a script run by a new Python process in a folder holding the data and the
user's own modules, as a kernel restart and "run all" would be; it prints what ``se.build`` said.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import ClassLabel, Features, Value

WORKTREE = Path(__file__).resolve().parents[1]
NUM = Features(x=Value("int64"))


@pytest.fixture(autouse=True)
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test here has its own catalog home and user home: the user's cache is never touched."""
    home = tmp_path / "catalog"
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(home))
    (tmp_path / "user").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    return home


def bmp(color: tuple[int, int, int]) -> bytes:
    """An 8x8 BMP: every color gives a file of the same size, so only the pixels differ."""
    import io

    buffer = io.BytesIO()
    PILImage.new("RGB", (8, 8), color).save(buffer, format="BMP")
    return buffer.getvalue()


def notebook(folder: Path, code: str) -> list[str]:
    """Run ``code`` as a fresh notebook kernel would, in ``folder``; return the lines it printed."""
    script = folder / "notebook.py"
    script.write_text(textwrap.dedent(code))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(WORKTREE), str(folder)]),
        "STABLE_EXPLORE_HOME": os.environ["STABLE_EXPLORE_HOME"],
        "HOME": os.environ["HOME"],
    }
    done = subprocess.run(
        [sys.executable, str(script)], cwd=folder, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


FOLDER_NOTEBOOK = """
    from pathlib import Path
    import stable_explore as se

    features = se.Features(image=se.Image(), label=se.ClassLabel(names=["cat", "dog"]), path=se.Value("string"))

    def folder(root):
        for p in sorted(Path(root).glob("*/*.bmp")):
            yield p.name, {"image": p.read_bytes(), "label": p.parent.name, "path": str(p)}

    ds = se.build(folder, features, args=("data",), progress=False, check_content=CHECK)
    print(ds.build_info)
    print(len(ds), ds.version)
    print(ds[0]["image"].getpixel((0, 0)))
"""


@pytest.fixture
def class_folders(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    for label, color in (("cat", (255, 0, 0)), ("dog", (0, 0, 255))):
        (work / "data" / label).mkdir(parents=True)
        (work / "data" / label / f"{label}-1.bmp").write_bytes(bmp(color))
    return work


def test_a_file_added_inside_a_class_folder_rebuilds_and_is_named(class_folders: Path) -> None:
    code = FOLDER_NOTEBOOK.replace("CHECK", "False")
    first = notebook(class_folders, code)
    assert first[0] == "built: first build of folder"
    assert notebook(class_folders, code)[0] == "reused: same source, arguments and features"
    (class_folders / "data" / "cat" / "cat-2.bmp").write_bytes(bmp((0, 255, 0)))
    again = notebook(class_folders, code)
    # the argument is the same string; what changed is a file under it
    assert again[0] == "rebuilt: files changed under argument 'root' (data): 1 added (cat/cat-2.bmp)"
    assert again[1].startswith("3 ")


def test_a_file_rewritten_in_place_rebuilds_and_shows_the_new_image(class_folders: Path) -> None:
    code = FOLDER_NOTEBOOK.replace("CHECK", "False")
    first = notebook(class_folders, code)
    image = class_folders / "data" / "cat" / "cat-1.bmp"
    before = image.stat()
    image.write_bytes(bmp((0, 255, 0)))  # same name, same size, new pixels
    assert image.stat().st_size == before.st_size
    os.utime(image, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    again = notebook(class_folders, code)
    assert again[0] == "rebuilt: files changed under argument 'root' (data): 1 changed (cat/cat-1.bmp)"
    assert again[1] != first[1]
    assert again[2] == "(0, 255, 0)"


def test_check_content_sees_a_rewrite_that_kept_size_and_time(class_folders: Path) -> None:
    code = FOLDER_NOTEBOOK.replace("CHECK", "True")
    notebook(class_folders, code)
    image = class_folders / "data" / "cat" / "cat-1.bmp"
    before = image.stat()
    image.write_bytes(bmp((9, 9, 9)))
    os.utime(image, ns=(before.st_atime_ns, before.st_mtime_ns))  # a file system whose times cannot be trusted
    again = notebook(class_folders, code)
    assert again[0] == "rebuilt: files changed under argument 'root' (data): 1 changed (cat/cat-1.bmp)"
    assert again[2] == "(9, 9, 9)"


def test_an_edited_helper_module_rebuilds_in_a_new_process(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    helper = work / "mylib.py"
    helper.write_text("FACTOR = 2\n\ndef transform(i):\n    return i * FACTOR\n")
    code = """
        import stable_explore as se
        import mylib

        def numbers(n):
            for i in range(n):
                yield {"x": mylib.transform(i)}

        ds = se.build(numbers, se.Features(x=se.Value("int64")), args=(3,), progress=False)
        print(ds.build_info)
        print(ds[2]["x"])
    """
    assert notebook(work, code) == ["built: first build of numbers", "4"]
    assert notebook(work, code)[0] == "reused: same source, arguments and features"
    helper.write_text("FACTOR = 2\n\ndef transform(i):\n    return i * FACTOR + 1\n")
    assert notebook(work, code) == ["rebuilt: code of mylib.transform changed", "5"]
    helper.write_text("FACTOR = 10\n\ndef transform(i):\n    return i * FACTOR + 1\n")
    assert notebook(work, code) == ["rebuilt: variable 'mylib.FACTOR' changed", "21"]


def test_code_reached_through_imports_and_classes_of_user_modules(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "pkg").mkdir(parents=True)
    (work / "pkg" / "__init__.py").write_text("")
    (work / "pkg" / "shapes.py").write_text(
        "class Scaler:\n    def apply(self, v):\n        return helper(v)\n\ndef helper(v):\n    return v * 2\n"
    )
    code = """
        import stable_explore as se
        from pkg.shapes import Scaler

        def numbers(n):
            scaler = Scaler()
            for i in range(n):
                yield {"x": scaler.apply(i)}

        ds = se.build(numbers, se.Features(x=se.Value("int64")), args=(3,), progress=False)
        print(ds.build_info)
        print(ds[2]["x"])
    """
    assert notebook(work, code)[1] == "4"
    # helper() is reached only through a method of a class from a user module
    (work / "pkg" / "shapes.py").write_text(
        "class Scaler:\n    def apply(self, v):\n        return helper(v)\n\ndef helper(v):\n    return v * 3\n"
    )
    assert notebook(work, code) == ["rebuilt: code of pkg.shapes.helper changed", "6"]


def test_library_code_is_not_fingerprinted() -> None:
    from stable_explore.catalog.fingerprints.code_tokens import is_user_file
    from stable_explore.catalog.fingerprints.fingerprint import Tokenizer

    assert not is_user_file(np.__file__)
    assert not is_user_file(os.__file__)
    assert is_user_file(__file__)

    def uses_libraries(n: int):
        for i in range(n):
            yield {"x": int(np.sqrt(i)), "p": os.path.join("a", str(i))}  # noqa: PTH118

    tokens = Tokenizer()
    tokens.source(uses_libraries)
    assert tokens.code == {}
    assert tokens.unstable == {}


def test_watch_adds_a_path_the_code_opens_that_no_argument_names(tmp_path: Path) -> None:
    labels = tmp_path / "labels.txt"
    labels.write_text("3\n")
    path_text = str(labels)
    namespace: dict = {}
    exec(  # a literal path inside the generator: no argument or variable names it
        "import pathlib\n"
        f"def rows():\n    for i in range(int(pathlib.Path({path_text!r}).read_text())):\n        yield {{'x': i}}\n",
        namespace,
    )
    rows = namespace["rows"]
    se.build(rows, NUM, progress=False, watch=[labels])
    labels.write_text("5\n")
    os.utime(labels, ns=(1, 10**18))
    rebuilt = se.build(rows, NUM, progress=False, watch=[labels])
    assert rebuilt.build_info == f"rebuilt: file changed: watched path ({labels})"
    assert len(rebuilt) == 5
    # a single file's change is named by its path, so no listing of it is kept (only folders get one)
    assert not (Path(se.load("rows").home or "") / "rows" / "sources" / "files").exists()
    labels.unlink()
    with pytest.raises(FileNotFoundError):
        se.build(rows, NUM, progress=False, watch=[labels])


# -- any variable, never a refused build -----------------------------------------------------


def test_a_numpy_generator_global_is_hashed_by_its_state(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    code = """
        import numpy as np
        import stable_explore as se

        rng = np.random.default_rng(SEED)

        def noisy(n):
            for _ in range(n):
                yield {"x": int(rng.integers(0, 1000))}

        ds = se.build(noisy, se.Features(x=se.Value("int64")), args=(4,), progress=False)
        print(ds.build_info)
    """
    assert notebook(work, code.replace("SEED", "0")) == ["built: first build of noisy"]
    assert notebook(work, code.replace("SEED", "0")) == ["reused: same source, arguments and features"]
    assert notebook(work, code.replace("SEED", "1")) == ["rebuilt: variable 'rng' changed"]


def test_a_changed_dataframe_rebuilds() -> None:
    table = pd.DataFrame({"value": [1, 2, 3], "name": ["a", "b", "c"]})

    def from_table():
        for value in table["value"]:
            yield {"x": int(value)}

    assert se.build(from_table, NUM, progress=False).build_info == "built: first build of from_table"
    table = table.copy()  # an equal copy: same content, same fingerprint
    assert se.build(from_table, NUM, progress=False).build_info == "reused: same source, arguments and features"
    table.loc[1, "value"] = 20
    again = se.build(from_table, NUM, progress=False)
    assert again.build_info == "rebuilt: variable 'table' changed"
    assert again[1]["x"] == 20


@dataclasses.dataclass
class Settings:
    scale: int
    tags: tuple[str, ...] = ()


class Plain:
    def __init__(self, offset: int) -> None:
        self.offset = offset


def test_dataclasses_instances_pil_images_and_arrays_are_hashed_by_content() -> None:
    def scaled(settings: Settings, plain: Plain, picture: PILImage.Image, weights: np.ndarray):
        for i in range(3):
            yield {"x": i * settings.scale + plain.offset + int(weights.sum()) + picture.size[0]}

    picture = PILImage.new("RGB", (4, 4), (1, 2, 3))
    arguments = (Settings(2), Plain(1), picture, np.ones(3))
    se.build(scaled, NUM, args=arguments, progress=False)
    same = (Settings(2), Plain(1), picture.copy(), np.ones(3))
    assert se.build(scaled, NUM, args=same, progress=False).build_info.startswith("reused")
    assert se.build(scaled, NUM, args=(Settings(3), *same[1:]), progress=False).build_info == (
        "rebuilt: argument 'settings' changed"
    )
    other_picture = PILImage.new("RGB", (4, 4), (9, 2, 3))
    assert se.build(
        scaled, NUM, args=(Settings(3), Plain(1), other_picture, np.ones(3)), progress=False
    ).build_info.startswith("rebuilt: argument 'picture' changed")
    assert (
        "argument 'plain' changed"
        in se.build(scaled, NUM, args=(Settings(3), Plain(5), other_picture, np.ones(3)), progress=False).build_info
    )


def test_an_opaque_variable_builds_every_time_and_warns_once_naming_it() -> None:
    lock = threading.Lock()

    def guarded(n):
        with lock:
            yield from ({"x": i} for i in range(n))

    with pytest.warns(se.UnfingerprintableWarning) as caught:
        first = se.build(guarded, NUM, args=(3,), progress=False)
    message = str(caught[0].message)
    assert message == (
        "guarded: variable 'lock' is a _thread.lock, which stable-explore cannot fingerprint, so every run of "
        "this build rebuilds it. To reuse the cache, pass key='...' (--key) to name the build yourself, or "
        "ignore=['lock'] (--ignore lock) if it does not change the data"
    )
    assert first.build_info.startswith("built: variable 'lock' is a _thread.lock")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process: no second warning
        again = se.build(guarded, NUM, args=(3,), progress=False)
    assert again.build_info.startswith("rebuilt: variable 'lock' is a _thread.lock")
    forced = se.build(guarded, NUM, args=(3,), progress=False, force=True)  # force works, it never raises
    assert forced.build_info.startswith("rebuilt: force=True")
    se.build(guarded, NUM, args=(3,), progress=False, ignore=["lock"])
    ignored = se.build(guarded, NUM, args=(3,), progress=False, ignore=["lock"])
    assert ignored.build_info == "reused: same source, arguments and features"
    se.build(guarded, NUM, args=(3,), progress=False, key="meta-v1")
    keyed = se.build(guarded, NUM, args=(3,), progress=False, key="meta-v1")
    assert keyed.build_info == "reused: key 'meta-v1'"


# -- latest means latest ---------------------------------------------------------------------


def test_a_cache_hit_in_a_new_process_does_not_move_latest_back(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    first_cell = """
        import stable_explore as se

        def pets(n):
            for i in range(n):
                yield f"pet-{i}", {"label": ["cat", "dog"][i % 2]}

        features = se.Features(label=se.ClassLabel(names=["cat", "dog"]))
        raw = se.build(pets, features, args=(6,), progress=False)
        print(raw.build_info)
        print(raw.version)
        print(repr(raw))
        print(se.load("pets").version)
    """
    built = notebook(work, first_cell)
    raw_version = built[1]
    clean = se.load("pets").drop([0]).save(message="drop the first", progress=False)
    assert se.load("pets").version == clean.version
    rerun = notebook(work, first_cell)
    assert rerun[0] == "reused: same source, arguments and features"
    assert rerun[1] == raw_version  # the hit returns what the source built...
    assert rerun[2].endswith(f", latest is pets@{clean.version})")  # ...and says which version is the latest
    assert rerun[3] == clean.version  # ...and latest stays the clean version
    assert repr(se.load("pets")).endswith(", latest)")


def test_a_save_without_edits_creates_nothing_and_moves_nothing(own_home: Path) -> None:
    features = Features(label=ClassLabel(names=["cat", "dog"]))
    raw = se.build([("a", {"label": "cat"}), ("b", {"label": "dog"})], features, name="pets", progress=False)
    clean = raw.drop([0]).save(progress=False)
    versions_before = sorted((own_home / "pets" / "versions").iterdir())
    same = raw.save(progress=False)
    relabelled_to_itself = raw.relabel({1: "dog"}).save(progress=False)
    assert same.version == relabelled_to_itself.version == raw.version
    assert same.build_info == f"nothing to save: no edits; pets@{raw.version} is unchanged and no version was created"
    assert sorted((own_home / "pets" / "versions").iterdir()) == versions_before
    assert se.load("pets").version == clean.version


# -- messages ----------------------------------------------------------------------------------


def test_feature_and_description_changes_name_what_changed() -> None:
    def digits(n):
        for i in range(n):
            yield {"label": i % 2}

    nine = Features(label=ClassLabel(names=["zero", "one"]))
    ten = Features(label=ClassLabel(names=["zero", "one", "ten"]))
    se.build(digits, nine, args=(4,), progress=False, description="a")
    changed = se.build(digits, ten, args=(4,), progress=False, description="b", metadata={"source": "mnist"})
    assert changed.build_info == (
        "rebuilt: features changed: label: class 'ten' added; description: 'a' -> 'b'; "
        "metadata: 'source' added ('mnist')"
    )
    retyped = se.build(digits, Features(label=Value("int64")), args=(4,), progress=False, description="b")
    assert retyped.build_info.startswith(
        "rebuilt: features changed: label: ClassLabel(names=['zero', 'one', 'ten']) -> Value(dtype='int64')"
    )


def test_a_generator_error_ends_like_an_interrupt() -> None:
    def flaky(fail_at):
        for i in range(10):
            if i == fail_at:
                msg = "camera offline"
                raise RuntimeError(msg)
            yield {"x": i}

    kept = se.build(flaky, NUM, args=(99,), progress=False)
    with pytest.raises(RuntimeError, match="camera offline") as caught:
        se.build(flaky, NUM, args=(7,), progress=False)
    assert caught.value.__notes__[-1] == (
        f"7 rows were read; nothing was saved; flaky@{kept.version} is kept as the latest version"
    )
    with pytest.raises(se.EncodingError) as bad:
        se.build([{"x": 1}, {"x": "two"}], NUM, name="flaky", progress=False)
    assert bad.value.__notes__[-1].endswith(f"nothing was saved; flaky@{kept.version} is kept as the latest version")
    assert se.load("flaky").version == kept.version


def test_the_magic_takes_ignore_watch_and_check_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], own_home: Path
) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext stable_explore")
    labels = tmp_path / "labels.txt"
    labels.write_text("a")
    shell.user_ns.update(features=NUM, labels_path=str(labels))
    shell.run_cell("import pathlib, threading\nconn = threading.Lock()")
    cell = (
        f"%%stable_cache t --features features --ignore conn --watch {labels} --check-content\n"
        "with conn:\n    yield {'x': len(pathlib.Path(labels_path).read_text())}\n"
    )
    assert shell.run_cell(cell).error_in_exec is None
    capsys.readouterr()
    assert shell.run_cell(cell).error_in_exec is None
    out = capsys.readouterr().out
    assert "reused: same source, arguments and features" in out
    assert "· latest" in out
    labels.write_text("b")
    assert shell.run_cell(cell).error_in_exec is None
    assert f"rebuilt: file changed: variable 'labels_path' ({labels})" in capsys.readouterr().out
    shell.run_cell("def broken():\n    yield {'x': 1}\n    yield {'x': 'two'}\n")
    result = shell.run_cell("%stable_cache t = broken() --features features --quiet")
    kept = se.load("t").version
    assert isinstance(result.error_in_exec, se.StableCacheError)
    assert str(result.error_in_exec).endswith(
        f"2 rows were read; nothing was saved; t@{kept} is kept as the latest version"
    )
    shell.run_cell("%unload_ext stable_explore")
    del own_home


def test_a_notebook_rerun_in_a_fresh_kernel_sees_an_edited_helper_and_keeps_latest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    work = tmp_path / "work"
    work.mkdir()
    (work / "mylib.py").write_text("def transform(i):\n    return i * 2\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(WORKTREE), str(work)]))

    def run_all() -> list[str]:
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [
            nbformat.v4.new_code_cell("%load_ext stable_explore\nimport stable_explore as se\nimport mylib"),
            nbformat.v4.new_code_cell(
                "features = se.Features(x=se.Value('int64'))\n"
                "def gen(n):\n    for i in range(n):\n        yield {'x': mylib.transform(i)}"
            ),
            nbformat.v4.new_code_cell("%stable_cache numbers = gen(3) --features features"),
        ]
        client = nbclient.NotebookClient(
            notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(work)}}
        )
        client.execute()
        return [
            "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream").strip()
            for cell in notebook.cells
        ]

    first = run_all()[2]
    assert "built: first build of numbers" in first
    assert first.endswith("· latest")
    (work / "mylib.py").write_text("def transform(i):\n    return i * 3\n")
    edited = run_all()[2]
    assert "rebuilt: code of mylib.transform changed" in edited
    clean = se.load("numbers").drop([0]).save(progress=False)
    rerun = run_all()[2]
    assert "reused: same source, arguments and features" in rerun
    assert rerun.endswith(f"· latest is numbers@{clean.version}")
    assert se.load("numbers").version == clean.version


def test_an_attribute_is_not_mistaken_for_a_global_of_the_same_name() -> None:
    from stable_explore.catalog.fingerprints.fingerprint import Tokenizer

    namespace: dict = {"data": threading.Lock()}  # a notebook variable that happens to share an attribute's name
    exec("def rows(items):\n    for item in items:\n        yield {'x': item.data}\n", namespace)
    tokens = Tokenizer()
    tokens.source(namespace["rows"])
    assert tokens.unstable == {}
    assert "data" not in tokens.globals


def test_a_variable_naming_the_home_folder_is_not_scanned_but_named(tmp_path: Path) -> None:
    namespace: dict = {"BASE": str(Path.home())}
    exec("def rows():\n    yield {'x': len(BASE)}\n", namespace)
    advice = r"variable 'BASE' is '.*', the file system's root or your home"
    with pytest.warns(se.UnfingerprintableWarning, match=advice):
        ds = se.build(namespace["rows"], NUM, progress=False)
    assert "ignore=['BASE']" in ds.build_info
