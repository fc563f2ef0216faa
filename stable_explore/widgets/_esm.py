"""A widget's ES module, with the modules it imports from ``static/lib/`` inlined.

anywidget loads a widget's ``_esm`` as one module from a string, where a relative ``import`` has nothing
to resolve against. The widgets are written as small ES modules anyway (``static/lib/*.js``, which
``node --test`` imports as they are), and :func:`widget_module` joins a widget's module with the lib
modules it imports, each in a function scope of its own, so their private names never meet.

Only the forms the widgets use are accepted, and anything else is refused when the module is read
(tests/widgets/test_js_modules.py reads every widget): ``import { a, b as c } from "./lib/x.js";`` (or
``"../lib/x.js"`` from a folder of ``static/``, never outside it) at the start of a line, and
``export function`` / ``export const`` / ``export class`` in an imported module.

Examples
--------
>>> text = widget_module("issues.js")
>>> "import " in text.split("export default")[0]
False
>>> "function requester(" in text
True
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from stable_explore.errors import InvalidOptionError

__all__ = ["STATIC", "join_module", "widget_module"]

STATIC = Path(__file__).with_name("static")

_IMPORT = re.compile(r'^import\s*\{([^}]*)\}\s*from\s*"(\.\.?/[\w./-]+\.js)";[ \t]*\n', re.MULTILINE)
_EXPORT = re.compile(r"^export\s+(?:function\*?|const|let|class)\s+([A-Za-z_$][\w$]*)", re.MULTILINE)
_OTHER = re.compile(r"^\s*(?:import\b(?!\s*\()|export\b)", re.MULTILINE)


def _bindings(names: str, where: Path) -> list[tuple[str, str]]:
    """``a, b as c`` -> [("a", "a"), ("b", "c")]."""
    pairs = []
    for part in (p.strip() for p in names.split(",")):
        if not part:
            continue
        match = re.fullmatch(r"([A-Za-z_$][\w$]*)(?:\s+as\s+([A-Za-z_$][\w$]*))?", part)
        if match is None:
            msg = f"{where.name}: cannot read the import name {part!r}"
            raise InvalidOptionError(msg)
        pairs.append((match.group(1), match.group(2) or match.group(1)))
    return pairs


class _Joiner:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.parts: list[str] = []
        self.exports: dict[Path, list[str]] = {}

    def scope(self, path: Path) -> str:
        return "__lib_" + re.sub(r"\W", "_", path.relative_to(self.root).with_suffix("").as_posix())

    def imports(self, text: str, path: Path, chain: tuple[Path, ...] = ()) -> tuple[str, list[str]]:
        """``text`` without its imports, and the lines that bind what it imported."""
        lines = []
        for names, target in _IMPORT.findall(text):
            module = (path.parent / target).resolve()
            if not module.is_relative_to(self.root):
                msg = f"{path.name} imports {target}, which is outside {self.root}: a widget's modules live under it"
                raise InvalidOptionError(msg)
            self.add(module, chain=(*chain, path))
            exported = self.exports[module]
            for name, local in _bindings(names, path):
                if name not in exported:
                    msg = f"{path.name} imports {name!r} from {target}, which exports {sorted(exported)}"
                    raise InvalidOptionError(msg)
                lines.append(f"const {local} = {self.scope(module)}.{name};")
        return _IMPORT.sub("", text), lines

    def add(self, path: Path, chain: tuple[Path, ...] = ()) -> None:
        if path in self.exports:
            return
        if path in chain:
            msg = f"the widget modules import each other in a circle: {' -> '.join(p.name for p in (*chain, path))}"
            raise InvalidOptionError(msg)
        text = path.read_text(encoding="utf-8")
        body, bound = self.imports(text, path, chain)
        exported = _EXPORT.findall(body)
        body = _EXPORT.sub(lambda m: m.group(0).removeprefix("export").lstrip(), body)
        stray = _OTHER.search(body)
        if stray is not None:
            line = body[: stray.start()].count("\n") + 1
            msg = f"{path.name}: an import or export of a form the widget loader does not join (line {line})"
            raise InvalidOptionError(msg)
        self.exports[path] = exported
        inner = "\n".join([*bound, body.strip(), f"return {{ {', '.join(exported)} }};"])
        self.parts.append(
            f"// {path.relative_to(self.root).as_posix()}\nconst {self.scope(path)} = (() => {{\n{inner}\n}})();\n"
        )


def join_module(path: Path, root: Path) -> str:
    """The ES module in ``path`` with every module it imports (files under ``root``) inlined."""
    path, root = path.resolve(), root.resolve()
    joiner = _Joiner(root)
    body, bound = joiner.imports(path.read_text(encoding="utf-8"), path)
    return "\n".join([*joiner.parts, *bound, body])


@functools.cache
def widget_module(name: str) -> str:
    """The ES module text of widget ``name`` (a file in ``static/``), its lib imports inlined."""
    return join_module(STATIC / name, STATIC)
