"""%stable_cache and %stable_ls in a real IPython shell, and in a notebook run end to end."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("IPython", reason="IPython is in the test extras")

from IPython.core.interactiveshell import InteractiveShell

import stable_explore as se
from stable_explore.magic import StableCacheError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(path))
    return path


@pytest.fixture
def shell(home: Path) -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "stable_explore")
    ip.run_cell(
        textwrap.dedent(
            """
            import stable_explore as se
            features = se.Features(x=se.Value("int64"), word=se.Value("string"))
            def words(n, prefix="w"):
                words.runs.append(n)  # an attribute: a global list it reads would be part of its fingerprint
                for i in range(n):
                    yield f"k{i}", {"x": i, "word": f"{prefix}{i}"}
            words.runs = []
            """
        )
    )
    yield ip
    ip.run_line_magic("unload_ext", "stable_explore")
    ip.reset()


def run(ip: InteractiveShell, code: str, capsys: pytest.CaptureFixture[str]) -> tuple[object, str]:
    result = ip.run_cell(code)
    out = capsys.readouterr()
    return result, out.out + out.err


def test_line_form_builds_binds_and_displays(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    result, output = run(shell, "%stable_cache ws = words(5) --features features --quiet", capsys)
    assert result.error_in_exec is None
    ds = shell.user_ns["ws"]
    assert isinstance(ds, se.CachedDataset)
    assert result.result is ds
    assert ds.name == "ws"
    assert [row["word"] for row in ds] == ["w0", "w1", "w2", "w3", "w4"]
    assert output.startswith("Out[")  # only the displayed result: no progress bar, no summary line
    assert "built" not in output
    result, output = run(shell, "%stable_cache ws = words(5) --features features", capsys)
    assert result.result is not None
    lines = [line for line in output.splitlines() if line.strip() and not line.startswith("Out[")]
    assert len(lines) == 1
    assert lines[0].startswith(f"ws@{ds.version}: reused: same source, arguments and features · 5 rows, built ")
    assert shell.user_ns["words"].runs == [5]


def test_semicolon_silences_the_display(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    result, output = run(shell, "%stable_cache ws = words(2) --features features --quiet;", capsys)
    assert result.error_in_exec is None
    assert result.result is None
    assert output == ""
    assert len(shell.user_ns["ws"]) == 2


def test_misses_name_what_changed(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    _, first = run(shell, "%stable_cache ws = words(3) --features features", capsys)
    assert "built: first build of ws" in first
    assert "caching ws" in first  # the progress bar
    _, changed = run(shell, "%stable_cache ws = words(4) --features features", capsys)
    assert "rebuilt: argument 'n' changed" in changed
    _, keyword = run(shell, "%stable_cache ws = words(4, prefix='v') --features features", capsys)
    assert "rebuilt: argument 'prefix' changed" in keyword
    assert shell.user_ns["ws"][0]["word"] == "v0"
    shell.run_cell(
        textwrap.dedent(
            """
            def words(n, prefix="w"):
                for i in range(n):
                    yield f"k{i}", {"x": i * 10, "word": f"{prefix}{i}"}
            """
        )
    )
    _, edited = run(shell, "%stable_cache ws = words(4, prefix='v') --features features", capsys)
    assert "rebuilt: generator source changed" in edited
    assert shell.user_ns["ws"][3]["x"] == 30
    _, forced = run(shell, "%stable_cache ws = words(4, prefix='v') --features features --force --quiet;", capsys)
    assert forced == ""
    assert shell.user_ns["ws"].build_info.startswith("rebuilt: force=True")


def test_cell_form_sees_variables_and_tracks_them(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell("n = 3\nstem = 'sq'")
    cell = "for i in range(n):\n    yield {'x': i * i, 'word': f'{stem}{i}'}\n"
    result = shell.run_cell_magic("stable_cache", "squares --features features --description 'Squares'", cell)
    out = capsys.readouterr().out
    assert "built: first build of squares" in out
    assert [row["x"] for row in result] == [0, 1, 4]
    assert shell.user_ns["squares"].DESCR == "Squares"
    again = shell.run_cell_magic("stable_cache", "squares --features features --description 'Squares'", cell)
    assert "reused" in capsys.readouterr().out
    assert again.version == result.version
    shell.run_cell("n = 4")
    bigger = shell.run_cell_magic("stable_cache", "squares --features features --description 'Squares'", cell)
    assert "rebuilt: variable 'n' changed" in capsys.readouterr().out
    assert len(bigger) == 4
    edited = cell.replace("i * i", "i * i * i")
    cubes = shell.run_cell_magic("stable_cache", "squares --features features --description 'Squares'", edited)
    assert "rebuilt: cell changed" in capsys.readouterr().out
    assert cubes[3]["x"] == 27


def test_keyed_pairs_in_a_cell_and_options(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    cell = "for i in range(4):\n    yield f'id-{i}', {'x': i, 'word': 'a'}\n"
    ds = shell.run_cell_magic(
        "stable_cache",
        "letters --features features --name letters-v1 --tag first --compression zstd --lock-timeout 30",
        cell,
    )
    assert ds.name == "letters-v1"
    assert ds.keys() == ["id-0", "id-1", "id-2", "id-3"]
    assert se.load("letters-v1@first").version == ds.version
    assert shell.user_ns["letters"] is ds


def test_unfingerprintable_variable_is_named(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell("import threading\nthing = threading.Lock()")
    with pytest.warns(se.UnfingerprintableWarning, match="variable 'thing' is a _thread.lock") as caught:
        result, output = run(
            shell, "%%stable_cache t --features features\nyield {'x': id(thing), 'word': 'a'}\n", capsys
        )
    where = [w.filename for w in caught if issubclass(w.category, se.UnfingerprintableWarning)]
    assert where, "no UnfingerprintableWarning"
    assert all("IPython" not in f and "site-packages" not in f for f in where), where  # the cell, not IPython
    assert result.error_in_exec is None  # never refused: built, and the summary says why it will rebuild
    assert "variable 'thing' is a _thread.lock" in output
    assert "--key" in output
    assert "--ignore thing" in output
    keyed, _ = run(
        shell, "%%stable_cache t --features features --key v1\nyield {'x': id(thing), 'word': 'a'}\n", capsys
    )
    assert keyed.error_in_exec is None


def test_a_notebook_objects_fields_count_as_docs_magic_md_says(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/magic.md: instances of your own classes count by their fields (changing cfg.scale rebuilds)."""
    shell.run_cell("class Config:\n    def __init__(self, scale):\n        self.scale = scale\ncfg = Config(2)")
    cell = (
        "%%stable_cache scaled --features features\nfor i in range(3):\n    yield {'x': i * cfg.scale, 'word': 'a'}\n"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", se.UnfingerprintableWarning)  # an object of your own class has a value
        first, _ = run(shell, cell, capsys)
        again, output = run(shell, cell, capsys)
        assert (first.error_in_exec, again.error_in_exec) == (None, None)
        assert "reused: same source, arguments and features" in output
        shell.run_cell("cfg.scale = 5")
        changed, output = run(shell, cell, capsys)
    assert changed.error_in_exec is None
    assert "rebuilt: variable 'cfg' changed" in output
    assert shell.user_ns["scaled"][2]["x"] == 10
    page = (Path(__file__).resolve().parents[1] / "docs" / "magic.md").read_text(encoding="utf-8")
    assert "instances of your own plain classes" in page
    assert "an object of your own class): not hashed" not in page


def test_bad_row_is_a_short_message_naming_row_key_and_field(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    run(shell, "%stable_cache ws = words(2) --features features --quiet", capsys)
    shell.run_cell(
        textwrap.dedent(
            """
            def broken():
                yield "good", {"x": 1, "word": "a"}
                yield "bad", {"x": "one", "word": "b"}
            """
        )
    )
    result, output = run(shell, "%stable_cache ws = broken() --features features --quiet", capsys)
    assert isinstance(result.error_in_exec, StableCacheError)
    assert "row 1, key 'bad', field 'x': expected int64, got 'one' (str)" in output
    assert "stable_explore/" not in output
    assert len(output.strip().splitlines()) <= 3
    assert len(shell.user_ns["ws"]) == 2  # the old binding and version stay


def test_error_in_the_users_generator_ends_at_their_code(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = "for i in range(3):\n    yield {'x': 10 // (1 - i), 'word': 'a'}\n"
    result, output = run(shell, f"%%stable_cache div --features features --quiet\n{cell}", capsys)
    assert isinstance(result.error_in_exec, StableCacheError)
    assert "ZeroDivisionError" in output
    assert "10 // (1 - i)" in output
    assert "stable_explore/" not in output


def test_interrupt_saves_nothing_and_says_which_version_is_kept(
    shell: InteractiveShell, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(shell, "%stable_cache ws = words(3) --features features --quiet", capsys)
    kept = shell.user_ns["ws"].version
    shell.run_cell(
        textwrap.dedent(
            """
            def stopped():
                for i in range(5000):
                    if i == 2500:
                        raise KeyboardInterrupt
                    yield {"x": i, "word": "a"}
            """
        )
    )
    result, output = run(shell, "%stable_cache ws = stopped() --features features --batch-size 500", capsys)
    assert isinstance(result.error_in_exec, StableCacheError)
    assert f"interrupted: 2,500 rows were read; nothing was saved; ws@{kept} is kept as the latest version" in output
    assert se.load("ws").version == kept
    leftovers = [p for p in home.rglob("*") if ".tmp-" in p.name]
    assert leftovers == []


@pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_FSIZE")
def test_a_full_disk_is_one_line_and_keeps_the_latest_version(home: Path) -> None:
    # In a child process: a file-size limit makes the kernel refuse writes past 1 MB (EFBIG), as a full disk would.
    script = textwrap.dedent(
        """
        import resource, signal
        from IPython.core.interactiveshell import InteractiveShell
        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "stable_explore")
        ip.run_cell('import stable_explore as se; features = se.Features(blob=se.Value("binary"))')
        ip.run_cell("def blobs(n, size):\\n    for i in range(n):\\n        yield {'blob': bytes([i % 251]) * size}")
        ip.run_cell("%stable_cache small = blobs(3, 10) --features features --name b --quiet")
        kept = ip.user_ns["small"].version
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, hard))
        result = ip.run_cell("%stable_cache big = blobs(100, 50_000) --features features --name b --quiet")
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))  # the disk is free again (IPython's exit writes)
        print("ERROR-TYPE", type(result.error_in_exec).__name__)
        print("KEPT", kept)
        """
    )
    env = {**os.environ, "IPYTHONDIR": str(home.parent / "ipython")}  # a history of its own, not the machine's
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False, env=env
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "ERROR-TYPE StableCacheError" in output
    kept = output.split("KEPT ")[1].split()[0]
    assert "could not write the cache: [Errno 27] File too large: " in output
    assert "shard-00000.arrow" in output
    assert f"nothing was saved; b@{kept} is kept as the latest version" in output
    assert "Traceback" not in output  # the machine's state, not a bug: no stack of our frames
    assert se.load("b").version == kept
    assert [p for p in home.rglob("*") if ".tmp-" in p.name] == []


def test_a_missing_input_file_is_not_called_a_cache_write_failure(
    shell: InteractiveShell, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The OSError comes from reading the input (through builtins, no frame of the user's),
    # not from writing the cache: it must not be reported as a full disk.
    (tmp_path / "ok.json").write_text('{"x": 1, "word": "a"}')
    shell.user_ns["paths"] = [str(tmp_path / "ok.json"), str(tmp_path / "missing.json")]
    code = (
        "import json, pathlib\n"
        "%stable_cache d = map(json.loads, map(pathlib.Path.read_text, map(pathlib.Path, paths))) "
        "--features features --key k1"
    )
    result, output = run(shell, code, capsys)
    assert isinstance(result.error_in_exec, FileNotFoundError)
    assert "missing.json" in output
    assert "could not write the cache" not in output


def test_features_may_be_a_dict_of_feature_types_as_se_build_takes_them(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.run_cell("plain = {'x': se.Value('int64'), 'word': se.Value('string')}")
    result, output = run(shell, "%stable_cache ws = words(3) --features plain", capsys)
    assert result.error_in_exec is None, output
    assert shell.user_ns["ws"].features == shell.user_ns["features"]
    shell.run_cell("bad = {'x': 'int64'}")
    result, output = run(shell, "%stable_cache ws = words(3) --features bad", capsys)
    assert result.error_in_exec is not None
    assert "feature 'x' must be a feature type such as Value('int64'), got 'int64'" in output


def test_usage_errors(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    cases = {
        "%stable_cache words(3) --features features": "usage: %stable_cache NAME = EXPR",
        "%stable_cache ws = words(3)": "pass --features F",
        "%stable_cache ws = words(3) --features [1]": "is a list, not a stable_explore.Features",
        "%%stable_cache nothing --features features\nx = 1\n": "must yield examples",
        "%stable_cache ws = words(3) --features features --bogus": "UsageError: unrecognized arguments: --bogus",
    }
    for code, needle in cases.items():
        result, output = run(shell, code, capsys)
        assert result.error_in_exec is not None, code
        assert needle in output, (code, output)
        assert "Traceback" not in output, output


def test_options_are_split_outside_strings_and_brackets(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    run(shell, "%stable_cache ws = words(2, prefix='a --b') --features features --quiet", capsys)
    assert shell.user_ns["ws"][1]["word"] == "a --b1"


def test_options_may_come_before_the_name(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    result, output = run(shell, "%stable_cache -q ws = words(2) --features features", capsys)
    assert result.error_in_exec is None, output
    assert "built" not in output  # -q before the name was taken: no summary line
    assert shell.user_ns["ws"].keys() == ["k0", "k1"]
    result, output = run(
        shell, '%stable_cache --features features --description "two words" --tag=t ws2 = words(2) --quiet', capsys
    )
    assert result.error_in_exec is None, output
    assert shell.user_ns["ws2"].DESCR == "two words"
    assert se.load("ws2@t").version == shell.user_ns["ws2"].version
    cell = "yield {'x': 1, 'word': 'c'}\n"
    ds = shell.run_cell_magic("stable_cache", "--quiet --features features --name celled one", cell)
    assert ds.name == "celled"
    assert shell.user_ns["one"] is ds
    # a bad option before the name is argparse's usage error, as after the expression
    result, output = run(shell, "%stable_cache --bogus ws = words(2) --features features", capsys)
    assert "unrecognized arguments: --bogus" in output


def test_the_flag_options_are_the_parsers_options_without_a_value(shell: InteractiveShell) -> None:
    from stable_explore.magic import FLAG_OPTIONS

    parser = shell.find_line_magic("stable_cache").__self__.stable_cache.parser
    flags = {option for action in parser._actions if action.nargs == 0 for option in action.option_strings}
    assert flags - {"-h", "--help"} == FLAG_OPTIONS


def test_iterable_expression_and_ls(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    result, output = run(
        shell, "%stable_cache plain = [{'x': i, 'word': 'p'} for i in range(3)] --features features", capsys
    )
    assert result.error_in_exec is None
    assert "plain iterable has no fingerprint" in output
    listing = shell.run_line_magic("stable_ls", "")
    assert [row["name"] for row in listing] == ["plain"]
    versions = shell.run_line_magic("stable_ls", "plain")
    assert len(versions) == 1


def test_help_text_lists_the_options(shell: InteractiveShell) -> None:
    doc = shell.find_line_magic("stable_cache").__doc__
    for option in (
        "--features",
        "--name",
        "--force",
        "--shard-size",
        "--key",
        "--quiet",
        "--compression",
        "--lock-timeout",
    ):
        assert option in doc
    assert "NAME = EXPR" in doc


def test_package_imports_without_ipython() -> None:
    script = "import sys; sys.modules['IPython'] = None; import stable_explore; print('ok', 'IPython' in dir())"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok False"


def test_notebook_run_end_to_end_hits_the_cache_on_the_second_run(tmp_path: Path, home: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext stable_explore\nimport stable_explore as se"),
        nbformat.v4.new_code_cell(
            "features = se.Features(x=se.Value('int64'))\ndef gen(n):\n    for i in range(n):\n        yield {'x': i}"
        ),
        nbformat.v4.new_code_cell("%stable_cache numbers = gen(100) --features features"),
        nbformat.v4.new_code_cell("%stable_cache numbers = gen(100) --features features"),
        nbformat.v4.new_code_cell("print(numbers.build_info, len(numbers))"),
    ]
    client = nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    text = lambda cell: "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")  # noqa: E731
    assert "built: first build of numbers" in text(notebook.cells[2])
    assert "reused: same source, arguments and features" in text(notebook.cells[3])
    assert text(notebook.cells[4]).strip() == "reused: same source, arguments and features 100"
    displayed = [o for o in notebook.cells[3].outputs if o.output_type == "execute_result"]
    assert "text/html" in displayed[0]["data"]


def test_a_dataset_may_take_its_generators_name(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    # DESIGN's own example: %stable_cache pets = pets("data/pets"); the re-run must still find the function
    shell.run_cell("def letters(n):\n    for i in range(n):\n        yield {'x': i, 'word': chr(97 + i)}")
    first, _ = run(shell, "%stable_cache letters = letters(3) --features features --quiet", capsys)
    assert first.error_in_exec is None
    assert isinstance(shell.user_ns["letters"], se.CachedDataset)
    again, output = run(shell, "%stable_cache letters = letters(3) --features features", capsys)
    assert again.error_in_exec is None, output
    assert "reused: same source, arguments and features" in output
    _, output = run(shell, "%stable_cache letters = letters(4) --features features", capsys)
    assert "rebuilt: argument 'n' changed" in output
    assert [row["word"] for row in shell.user_ns["letters"]] == ["a", "b", "c", "d"]


def test_a_generator_may_read_another_dataset(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    run(shell, "%stable_cache base = words(3) --features features --quiet", capsys)
    cell = "for row in base:\n    yield {'x': row['x'] * 2, 'word': row['word']}\n"
    derived = shell.run_cell_magic("stable_cache", "doubled --features features --quiet", cell)
    assert [row["x"] for row in derived] == [0, 2, 4]
    shell.run_cell_magic("stable_cache", "doubled --features features", cell)
    assert "reused" in capsys.readouterr().out
    run(shell, "%stable_cache base = words(4) --features features --quiet", capsys)
    shell.run_cell_magic("stable_cache", "doubled --features features", cell)
    assert "rebuilt: variable 'base' changed" in capsys.readouterr().out


def test_an_expression_that_fails_is_named(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    result, output = run(shell, "%stable_cache ws = words(1 / 0) --features features", capsys)
    assert isinstance(result.error_in_exec, StableCacheError)
    assert "evaluating '1 / 0' raised ZeroDivisionError" in output


def test_ls_takes_a_home(shell: InteractiveShell, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "elsewhere"
    se.build([{"x": 1, "word": "a"}], shell.user_ns["features"], name="far", home=other, progress=False)
    listing = shell.run_line_magic("stable_ls", f"--home {other}")
    assert [row["name"] for row in listing] == ["far"]
    assert len(shell.run_line_magic("stable_ls", f"far --home {other}")) == 1


def test_num_proc_builds_a_notebook_generator_in_tasks_with_the_serial_id(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.run_cell(
        textwrap.dedent(
            """
            def squares(files):
                for f in files:
                    yield {"x": f * f, "word": str(f)}
            files = list(range(7))
            serial = se.build(squares, features, name="serial", args=(files,), progress=False)
            """
        )
    )
    result, output = run(shell, "%stable_cache sq = squares(files) --features features --num-proc 2", capsys)
    assert result.error_in_exec is None, output
    ds = shell.user_ns["sq"]
    assert (ds.version, ds.num_shards) == (shell.user_ns["serial"].version, 2)
    assert "built: first build of sq" in output
    run(shell, "%stable_cache sq = squares(files) --features features --quiet", capsys)
    assert shell.user_ns["sq"].build_info == "reused: same source, arguments and features"


def test_a_failing_task_shows_the_users_code_from_the_worker(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.run_cell(
        textwrap.dedent(
            """
            def shaky(files):
                for f in files:
                    yield {"x": 10 // (5 - f), "word": "a"}
            """
        )
    )
    cell = "%stable_cache bad = shaky(list(range(8))) --features features --num-proc 2 --quiet"
    result, output = run(shell, cell, capsys)
    assert isinstance(result.error_in_exec, StableCacheError)
    assert output.startswith("the generator raised ZeroDivisionError; ")
    assert "nothing was saved; no version of bad existed before" in output
    assert 'yield {"x": 10 // (5 - f), "word": "a"}' in output  # the worker's frame, in the user's code
    assert "stable_explore/" not in output
    assert "in task 1 of 2 (files=[4, 5, ..., 7] (4 items)), at row 1 of the task\n" in output


def test_an_expression_that_does_not_parse_is_named_not_the_options(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: an unclosed parenthesis swallowed the options, and the error blamed a missing --features."""
    result, output = run(shell, "%stable_cache a = words( --features features", capsys)
    assert isinstance(result.error_in_exec, StableCacheError)
    assert "pass --features" not in output
    said = str(result.error_in_exec)
    assert said.splitlines()[:3] == [
        "the expression does not parse: '(' is never closed, so everything after it (options too) is read as part "
        "of it",
        "    words( --features features",
        "         ^",
    ]
    assert "a" not in shell.user_ns or not isinstance(shell.user_ns["a"], se.CachedDataset)
    result, _ = run(shell, "%stable_cache a = words(2, prefix='x) --features features", capsys)
    lines = str(result.error_in_exec).splitlines()
    assert lines[0].startswith('the expression does not parse: "\'" is never closed')
    assert lines[2] == " " * lines[1].index("'") + "^"  # under the quote that is never closed
    result, _ = run(shell, "%stable_cache a = words(2,, 3) --features features", capsys)
    said = str(result.error_in_exec)
    assert said.startswith("the expression does not parse: invalid syntax")
    assert "    words(2,, 3)" in said.splitlines()
    assert "Traceback" not in output
