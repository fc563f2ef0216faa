"""The shipped notebooks open in JupyterLab without being marked modified (issue 27 item 10).

JupyterLab rewrites a notebook's kernelspec and language_info with what the kernel reports when it
connects; a notebook whose metadata differs is then "modified" before the user did anything, and
closing it asks "Save changes?". Each notebook in notebooks/ is opened, on the session's shared server
(whose python3 kernel is ipykernel's), and must stay clean.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.lab import CHROMIUM, SharedLab, open_notebook

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_every_shipped_notebook_opens_clean(tmp_path: Path, lab_server: SharedLab) -> None:
    served = tmp_path / "notebooks"
    served.mkdir()
    names = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert len(names) >= 5
    for name in names:
        shutil.copy2(NOTEBOOKS / name, served / name)
    folder = served.relative_to(lab_server.served).as_posix()
    # All in one JupyterLab (booting the app once, not once a notebook), each in its own tab and kernel.
    page = lab_server.browser.new_page()
    try:
        open_notebook(page, lab_server.url, f"{folder}/{names[0]}", workspace="clean")  # alone in a workspace
        page.evaluate(
            """async (paths) => {
                for (const path of paths) {
                    const widget = await window.jupyterapp.commands.execute('docmanager:open', {path});
                    await widget.context.ready;
                }
            }""",
            [f"{folder}/{name}" for name in names[1:]],
        )
        opened = page.evaluate(
            """() => Array.from(window.jupyterapp.shell.widgets('main'))
                .filter((w) => w.context && w.sessionContext).map((w) => w.context.path)"""
        )
        assert sorted(opened) == sorted(f"{folder}/{name}" for name in names)
        page.wait_for_function(
            """() => Array.from(window.jupyterapp.shell.widgets('main')).filter((w) => w.sessionContext).every((w) => {
                const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
                return kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
            })""",
            timeout=120_000,
        )
        page.evaluate(
            """async () => {
                for (const w of window.jupyterapp.shell.widgets('main')) {
                    if (!w.sessionContext) continue;
                    await w.sessionContext.ready;
                    await w.sessionContext.session.kernel.info;
                }
            }"""
        )
        page.wait_for_timeout(2000)  # what JupyterLab does after each kernel connects has happened
        dirty = page.evaluate(
            """() => Array.from(window.jupyterapp.shell.widgets('main'))
                .filter((w) => w.sessionContext && w.context.model.dirty).map((w) => w.context.path)"""
        )
    finally:
        page.close()
        lab_server.shutdown_kernels(folder)
    assert dirty == [], f"marked modified right after opening: {dirty}"
    for name in names:  # opening saved nothing
        assert (served / name).read_bytes() == (NOTEBOOKS / name).read_bytes()
