"""The widgets' JavaScript: the pure modules under node's test runner and TypeScript's checker, and each
widget's module as anywidget receives it (its ``static/lib/`` imports inlined) parsed by node."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from stable_explore.errors import InvalidOptionError
from stable_explore.widgets._esm import STATIC, join_module, widget_module

ROOT = Path(__file__).resolve().parents[2]
WIDGETS = ("browser.js", "confusion_matrix.js", "embedding_map.js", "issues.js")


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is missing: apt-get install nodejs (.ci/run installs it)")
    return node


def test_the_pure_modules_pass_their_node_tests() -> None:
    done = subprocess.run(
        [_node(), "--test", "tests/js/"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    passed = int(re.search(r"^# pass (\d+)$", done.stdout, re.MULTILINE).group(1))  # type: ignore[union-attr]
    assert passed >= 20
    assert re.search(r"^# fail 0$", done.stdout, re.MULTILINE)


def test_the_pure_modules_type_check() -> None:
    """``// @ts-check`` with JSDoc types, checked strictly by tsc (.ci/run installs TypeScript from npm)."""
    tsc = os.environ.get("STABLE_EXPLORE_TSC") or shutil.which("tsc")
    if not tsc:
        pytest.skip("tsc is missing: set STABLE_EXPLORE_TSC (.ci/run installs TypeScript from npm)")
    done = subprocess.run(
        [tsc, "-p", "tests/js/tsconfig.json"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout[-4000:]
    widgets = [STATIC / name for name in ("browser.js", "embedding_map.js", "issues.js", "confusion_matrix.js")]
    parts = [*(STATIC / "lib").glob("*.js"), *(STATIC / "map").glob("*.js"), *(STATIC / "browser").glob("*.js")]
    for module in [*parts, *widgets]:
        assert module.read_text().startswith("// @ts-check"), module.name


@pytest.mark.parametrize("name", WIDGETS)
def test_each_widget_module_parses_with_its_lib_modules_inlined(name: str, tmp_path: Path) -> None:
    text = widget_module(name)
    assert not re.search(r"^import ", text, re.MULTILINE)
    assert text.rstrip().endswith("export default { render };")
    module = tmp_path / f"{name}.mjs"
    module.write_text(text)
    done = subprocess.run([_node(), "--check", str(module)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr  # a name two modules both declare would fail here


def test_no_two_widgets_carry_their_own_copy_of_a_helper() -> None:
    helpers = ("h(", "toDataUrl(", "hslToRgb(", "lassoTest(", "svg(", "cssRgb(", "listenModel(", "statusLine(")
    for helper in (f"function {name}" for name in helpers):
        owners = [p.name for p in STATIC.rglob("*.js") if helper in p.read_text()]
        assert len(owners) == 1, (helper, owners)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_a_lib_module_is_scoped_and_its_renamed_imports_bound(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "lib/a.js": "const secret = 2;\nexport function twice(x) { return secret * x; }\n",
            "lib/b.js": 'import { twice as double } from "./a.js";\nexport const four = double(2);\n',
            "w.js": 'import { four } from "./lib/b.js";\nimport { twice } from "./lib/a.js";\n'
            "const secret = 1;\nexport default { render: () => four + twice(secret) };\n",
        },
    )
    module = tmp_path / "w.mjs"
    module.write_text(join_module(tmp_path / "w.js", tmp_path))
    done = subprocess.run(
        [_node(), "--input-type=module", "-e", f'import w from "{module.as_uri()}"; console.log(w.render());'],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "6"  # four (2 * 2) + twice(1): each module's `secret` stayed its own


def test_a_widget_split_into_a_folder_of_parts_shares_one_copy_of_each_lib_module(tmp_path: Path) -> None:
    """browser.js's parts live in static/browser/ and import static/lib/ through "../lib/x.js"."""
    _write(
        tmp_path,
        {
            "lib/a.js": "let calls = 0;\nexport function count() { return ++calls; }\n",
            "parts/one.js": 'import { count } from "../lib/a.js";\nexport function one() { return count(); }\n',
            "parts/two.js": 'import { count } from "../lib/a.js";\nexport function two() { return count(); }\n',
            "w.js": 'import { one } from "./parts/one.js";\nimport { two } from "./parts/two.js";\n'
            'export default { render: () => [one(), two()].join(" ") };\n',
        },
    )
    text = join_module(tmp_path / "w.js", tmp_path)
    assert text.count("// lib/a.js") == 1
    module = tmp_path / "w.mjs"
    module.write_text(text)
    done = subprocess.run(
        [_node(), "--input-type=module", "-e", f'import w from "{module.as_uri()}"; console.log(w.render());'],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1 2"  # both parts counted on the one module


def test_the_browser_is_wired_from_parts_no_larger_than_a_screenful_or_two() -> None:
    """Issue 38: browser.js's render was one closure of 1,283 lines; its parts are now modules of their own."""
    assert len((STATIC / "browser.js").read_text().splitlines()) < 300
    parts = sorted((STATIC / "browser").glob("*.js"))
    assert len(parts) >= 8
    for part in parts:
        text = part.read_text()
        assert text.startswith("// @ts-check"), part.name
        assert len(text.splitlines()) <= 400, part.name
    assert "function drawDetail(" in widget_module("browser.js")


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"lib/a.js": "export function f() {}\n", "w.js": 'import { g } from "./lib/a.js";\n'}, "imports 'g'"),
        (
            {
                "lib/a.js": 'import { b } from "./b.js";\nexport const a = 1;\n',
                "lib/b.js": 'import { a } from "./a.js";\nexport const b = 2;\n',
                "w.js": 'import { a } from "./lib/a.js";\n',
            },
            "in a circle",
        ),
        ({"lib/a.js": "export default 1;\n", "w.js": 'import { a } from "./lib/a.js";\n'}, "does not join"),
        ({"w/x.js": 'import { a } from "../../a.js";\n', "w.js": 'import { b } from "./w/x.js";\n'}, "outside"),
    ],
)
def test_forms_the_loader_cannot_join_are_refused_by_name(tmp_path: Path, files: dict[str, str], message: str) -> None:
    _write(tmp_path, files)
    with pytest.raises(InvalidOptionError, match=message):
        join_module(tmp_path / "w.js", tmp_path)
