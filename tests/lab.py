"""A real JupyterLab on loopback and headless Chromium, for tests and benchmarks of the widgets.

The recipe follows BROWSER_TESTS.md: settings that keep dialogs and news out
of the way, a free port on 127.0.0.1, waiting for the notebook's kernel itself
before "run all", and Debian's Chromium (never a downloaded browser).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.ports import PORT_ATTEMPTS, free_port, lost_its_port

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def write_notebook(path: Path, sources: list[str], *, kernel: str = "python3") -> Path:
    """A notebook of code cells (with the ``kernel`` kernelspec, python3 unless named) at ``path``."""
    cells = [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": s} for s in sources
    ]
    notebook = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": kernel, "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook))
    return path


def _settings(root: Path) -> Path:
    settings = root / "settings"
    notification = settings / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    tracker = settings / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"autoStartDefaultKernel": True}))
    return settings


class JupyterServer:
    """A JupyterLab (or Notebook 7) server process that was started without waiting for it: :meth:`answers`
    checks without blocking, :meth:`wait` blocks until it answers, :meth:`stop` ends it."""

    def __init__(
        self, root: Path, notebooks: Path, env_extra: dict[str, str], *, app: str = "lab", python: str = sys.executable
    ) -> None:
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(root / "config"),
            "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
            "JUPYTER_DATA_DIR": str(root / "data"),
            **env_extra,
        }
        # the kernel must be this interpreter (where stable_explore is installed)
        kernels = root / "data" / "kernels" / "python3"
        kernels.mkdir(parents=True)
        (kernels / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": "Python 3 (ipykernel)",  # what ipykernel installs: notebooks carry this name
                    "language": "python",
                }
            )
        )
        command = [
            python, "-m", "jupyter", app, "--no-browser", "--allow-root",
            "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0",
            "--IdentityProvider.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
            f"--ServerApp.root_dir={notebooks}",
        ]  # fmt: skip
        settings = _settings(root)
        if app == "lab":
            command += [
                f"--LabApp.workspaces_dir={root / 'workspaces'}", f"--LabApp.user_settings_dir={settings}",
                "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ]  # fmt: skip
        else:
            command += [
                f"--JupyterNotebookApp.workspaces_dir={root / 'workspaces'}",
                f"--JupyterNotebookApp.user_settings_dir={settings}", "--JupyterNotebookApp.expose_app_in_browser=True",
            ]  # fmt: skip
        self.root = root
        self._command = command
        self._env = env
        self._launches = 0
        self._launch()

    def _launch(self) -> None:
        port = free_port()
        self._launches += 1
        self.log = (self.root / "lab.log").open("w")
        self.process = subprocess.Popen(
            [*self._command, f"--ServerApp.port={port}"], env=self._env, stdout=self.log, stderr=subprocess.STDOUT
        )
        self.url = f"http://127.0.0.1:{port}"
        self._answered = False

    def _lost_its_port(self) -> bool:
        """The server exited: whether because its port was taken after :func:`free_port` found it free (then it
        is started again on another, twice at most)."""
        if self._launches >= PORT_ATTEMPTS:
            return False
        self.log.close()
        if not lost_its_port((self.root / "lab.log").read_text(errors="replace")):
            return False
        self._launch()
        return True

    def answers(self, timeout: float = 0.2) -> bool:
        """Whether the server answers its status request now (within ``timeout`` seconds)."""
        if not self._answered:
            try:
                with urllib.request.urlopen(f"{self.url}/api/status", timeout=timeout) as reply:
                    self._answered = reply.status == 200
            except OSError:
                pass
        return self._answered

    def wait(self, timeout: float = 90) -> str:
        """Block until the server answers (its log in the error when it exits or does not within ``timeout`` s);
        returns its base URL."""
        deadline = time.monotonic() + timeout
        while not self.answers(timeout=2):
            exited = self.process.poll() is not None
            if exited and self._lost_its_port():
                continue
            if exited or time.monotonic() > deadline:
                msg = f"JupyterLab did not start; log:\n{(self.root / 'lab.log').read_text()[-3000:]}"
                raise RuntimeError(msg)
            time.sleep(0.3)
        return self.url

    def stop(self) -> None:
        """End the server (a kill after 20 s)."""
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)
        self.log.close()


@contextmanager
def jupyter_lab(
    root: Path, notebooks: Path, env_extra: dict[str, str], *, app: str = "lab", python: str = sys.executable
) -> Iterator[str]:
    """Start JupyterLab (or Notebook 7, ``app="notebook"``) serving ``notebooks``; yield its base URL; stop it.

    ``python`` runs the server and the kernel (another environment's interpreter, for a fresh install)."""
    server = JupyterServer(root, notebooks, env_extra, app=app, python=python)
    try:
        yield server.wait()
    finally:
        server.stop()


def open_notebook(page: Any, url: str, name: str, *, app: str = "lab", workspace: str | None = None) -> None:
    """Open a notebook and wait until its kernel is connected and idle.

    ``workspace`` opens it in a fresh JupyterLab workspace of that name (no other document restored)."""
    if app == "lab":
        page.goto(f"{url}/lab/workspaces/{workspace}/tree/{name}" if workspace else f"{url}/lab/tree/{name}")
    else:
        page.goto(f"{url}/notebooks/{name}")
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60_000)
    page.wait_for_selector(".jp-Notebook", timeout=60_000)
    wait_for_kernel(page)


def wait_for_kernel(page: Any) -> None:
    """Wait until the current notebook's kernel is connected, idle and has answered its info request.

    If it does not within 90 s, the error says what the page showed: the document, the kernel's state and
    any dialog (a wait that timed out said nothing more, and a rare failure could not be told from another).
    """
    try:
        page.wait_for_function(
            """() => {
                const widget = window.jupyterapp.shell.currentWidget;
                const ctx = widget && widget.sessionContext;
                const kernel = ctx && ctx.session && ctx.session.kernel;
                return kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
            }""",
            timeout=90_000,
        )
    except Exception as exc:
        msg = f"the notebook's kernel was not connected and idle within 90 s; the page showed: {_page_state(page)}"
        raise RuntimeError(msg) from exc
    page.evaluate(
        """async () => {
            const ctx = window.jupyterapp.shell.currentWidget.sessionContext;
            await ctx.ready;
            await ctx.session.kernel.info;
        }"""
    )


def _page_state(page: Any) -> str:
    """What a JupyterLab page shows, in a line: its URL, the current document, its kernel, any dialog's text."""
    try:
        state = page.evaluate(
            """() => {
                const app = window.jupyterapp;
                const widget = app && app.shell.currentWidget;
                const ctx = widget && widget.sessionContext;
                const kernel = ctx && ctx.session && ctx.session.kernel;
                const dialog = document.querySelector('.jp-Dialog');
                return {
                    app: app !== undefined,
                    document: widget ? widget.title.label : null,
                    kernel: kernel ? `${kernel.name}: ${kernel.status}, ${kernel.connectionStatus}` : null,
                    session: ctx ? ctx.kernelDisplayStatus : null,
                    dialog: dialog ? dialog.innerText.slice(0, 300) : null,
                };
            }"""
        )
    except Exception as exc:  # a page that crashed or was closed
        return f"{page.url} ({type(exc).__name__}: {exc})"
    return f"{page.url} {state}"


def run_all(page: Any) -> None:
    """Run every cell; send the command again if it did not start (BROWSER_TESTS.md)."""
    for _ in range(3):
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        try:
            page.wait_for_function(
                """() => {
                    const prompt = document.querySelector('.jp-Notebook .jp-CodeCell .jp-InputPrompt');
                    return prompt && /\\[(\\*|\\d+)\\]/.test(prompt.textContent);
                }""",
                timeout=20_000,
            )
            return
        except Exception:
            continue
    msg = "run-all did not start"
    raise RuntimeError(msg)


@contextmanager
def notebook_in_chromium(
    root: Path, name: str, cells: list[str], *, app: str = "lab", viewport: tuple[int, int] = (1400, 1000)
) -> Iterator[Any]:
    """A notebook of ``cells`` served from ``root`` (its own STABLE_EXPLORE_HOME there), opened in headless
    Chromium and run to the end; yields the Playwright page. Server and browser stop on exit."""
    from playwright.sync_api import sync_playwright

    notebooks = root / "notebooks"
    notebooks.mkdir()
    write_notebook(notebooks / name, cells)
    with (
        jupyter_lab(root, notebooks, {"STABLE_EXPLORE_HOME": str(root / "home")}, app=app) as url,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        try:
            page = context.new_page()
            open_notebook(page, url, name, app=app)
            run_all(page)
            yield page
        finally:
            context.close()
            browser.close()


def run_cell(page: Any, index: int) -> str:
    """Run one cell and return the text of its output once its prompt number has changed."""
    prompt = f"document.querySelectorAll('.jp-Notebook .jp-Cell')[{index}].querySelector('.jp-InputPrompt')"
    before = page.evaluate(f"() => {prompt}.textContent")
    page.evaluate(
        f"""() => {{
            const panel = window.jupyterapp.shell.currentWidget;
            panel.content.activeCellIndex = {index};
            window.jupyterapp.commands.execute('notebook:run-cell');
        }}"""
    )
    page.wait_for_function(
        f"""(before) => {{
            const prompt = document.querySelectorAll('.jp-Notebook .jp-Cell')[{index}].querySelector('.jp-InputPrompt');
            const text = prompt.textContent;
            return /\\[\\d+\\]/.test(text) && text !== before;
        }}""",
        arg=before,
        timeout=60_000,
    )
    return page.evaluate(
        f"() => document.querySelectorAll('.jp-Notebook .jp-Cell')[{index}].querySelector('.jp-OutputArea').innerText"
    )


def run_cell_until(page: Any, index: int, ready: Callable[[str], bool], what: str, timeout: float = 60.0) -> str:
    """Run one cell again until its output satisfies ``ready`` (the kernel has applied what the page sent).

    A widget's messages do not queue behind the cells: JupyterLab sends comms over a kernel subshell
    (its ``commsOverSubshells`` setting, on by default) and ipykernel runs them in a thread of their
    own, so a cell run just after a click or a mouse selection may run before the kernel has applied
    it, or half way through. Wait for the state the test is about, never for a time; ``what`` names
    it in the error when it never comes."""
    deadline = time.monotonic() + timeout
    while True:
        output = run_cell(page, index)
        if ready(output):
            return output
        if time.monotonic() > deadline:
            msg = f"cell {index} did not show {what} within {timeout:.0f} s; its last output:\n{output}"
            raise AssertionError(msg)


def wait_grid_rows(page: Any, rows: list[int], *, among: bool = False, browser: int = 0) -> None:
    """Wait until the page's ``browser``-th shard browser shows these rows, in this order (``among``: some
    rows, every one of them in ``rows``).

    After a filter, a search or *back*, the status line and the page count change a moment before the
    new page's cells arrive, and the grid's ``data-ready='page-0'`` still reads the old page's until
    then: a test that reads the grid waits for its rows."""
    page.wait_for_function(
        """([rows, among, index]) => {
            const grid = document.querySelectorAll('[data-testid=se-browser]')[index];
            const thumbs = grid ? [...grid.querySelectorAll('[data-testid=se-thumb]')] : [];
            const shown = thumbs.map(e => Number(e.dataset.row));
            if (among) return shown.length > 0 && shown.every(r => rows.includes(r));
            return shown.length === rows.length && shown.every((r, i) => r === rows[i]);
        }""",
        arg=[rows, among, browser],
        timeout=60_000,
    )


def screenshot_dark(page: Any, locator: Any, path: Path) -> None:
    """Screenshot ``locator`` in JupyterLab's dark theme at ``path``, then go back to the light theme."""
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=60_000)
    page.wait_for_timeout(500)  # the theme's stylesheet is applied a moment after the flag
    locator.screenshot(path=str(path))
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=60_000)
    page.wait_for_timeout(500)


class SharedLab:
    """One JupyterLab server and one Chromium for a whole test session, shared by every module's notebook.

    The server serves ``served`` (pytest's base temporary folder), so a module's notebook stays in the
    folder the module made. Each notebook runs on a kernelspec of its own whose environment names the
    module's ``STABLE_EXPLORE_HOME``; each module gets its own browser context and JupyterLab workspace
    (no other module's document is restored beside it) and starts in the default (light) theme; its
    kernels are shut down when it ends. Starting a server, its first kernel and a browser took 8-15 s
    per module, paid once now. The modules' notebooks also share one JupyterLab page: a module's notebook
    opens in it alone (the one before is closed, the theme set back to light), which takes ~1 s where
    booting JupyterLab in a new page took ~6 s of a module's setup; a page left with a dialog open, or
    broken, is replaced by a new one."""

    def __init__(self, root: Path, served: Path, browser: Any) -> None:
        self.root = root
        self.served = served
        self.browser = browser
        self.url = ""
        self._count = 0
        self._workspaces: dict[str, str] = {}
        self._context: Any = None
        self._page: Any = None
        self._workspace = ""
        self._booting = False
        self._shutting_down: list[threading.Thread] = []
        self.notebook7_server: JupyterServer | None = None
        """The session's Notebook 7 server, when one was started (:class:`LabStarter`)."""
        self._notebook7_url = ""

    def kernelspec(
        self, env: dict[str, str], display_name: str = "Python 3", *, server_root: Path | None = None
    ) -> str:
        """A new kernelspec running this interpreter with ``env`` (of the server at ``server_root``, else the lab's);
        returns its name."""
        self._count += 1
        name = f"se-{self._count}"
        folder = (server_root or self.root) / "data" / "kernels" / name
        folder.mkdir(parents=True)
        spec = {
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": display_name,
            "language": "python",
            "env": env,
        }
        (folder / "kernel.json").write_text(json.dumps(spec))
        return name

    def reset_theme(self) -> None:
        """Forget a theme a module left behind (a failed test may not have switched back)."""
        themes = self.root / "settings" / "@jupyterlab" / "apputils-extension" / "themes.jupyterlab-settings"
        themes.unlink(missing_ok=True)

    def shutdown_kernels(self, folder: str, *, wait: bool = True, url: str = "") -> None:
        """Shut down the sessions (and their kernels) of the notebooks under ``folder`` (relative to served).

        ``wait=False``: the requests go out in a thread of their own and this returns at once (a kernel takes
        ~2 s to shut down, which the next module need not wait for); :meth:`close` waits for them."""
        url = url or self.url  # the server's: the lab's unless named
        with urllib.request.urlopen(f"{url}/api/sessions", timeout=10) as reply:
            sessions = json.loads(reply.read())
        ids = [s["id"] for s in sessions if str(s.get("path", "")).startswith(folder + "/")]

        def delete() -> None:
            for session in ids:
                request = urllib.request.Request(f"{url}/api/sessions/{session}", method="DELETE")
                with contextlib.suppress(urllib.error.HTTPError):  # a session being shut down already
                    urllib.request.urlopen(request, timeout=30).close()

        if wait:
            delete()
            return
        thread = threading.Thread(target=delete, name=f"shutdown {folder}", daemon=True)
        thread.start()
        self._shutting_down.append(thread)

    def path(self, root: Path, name: str) -> str:
        """The server's path of the notebook ``root/notebooks/name``."""
        return (root / "notebooks" / name).relative_to(self.served).as_posix()

    def saved(self, root: Path, name: str) -> dict[str, Any]:
        """The notebook as the server has it on disk (after a save)."""
        with urllib.request.urlopen(f"{self.url}/api/contents/{self.path(root, name)}", timeout=30) as reply:
            content: dict[str, Any] = json.loads(reply.read())["content"]
        return content

    def reopen(self, page: Any, root: Path, name: str) -> None:
        """Reopen the notebook on a new kernel, as after a restart of the server: its kernels (this module's
        only) are shut down, the page reloads and opens it again in its workspace."""
        self.shutdown_kernels((root / "notebooks").relative_to(self.served).as_posix())
        page.reload()
        path = self.path(root, name)
        open_notebook(page, self.url, path, workspace=self._workspaces[path])

    @contextmanager
    def notebook7(
        self,
        root: Path,
        name: str,
        cells: list[str],
        *,
        viewport: tuple[int, int] = (1400, 1000),
        env: dict[str, str] | None = None,
    ) -> Iterator[Any]:
        """A notebook of ``cells`` at ``root/notebooks/name`` on Notebook 7 (its kernel's STABLE_EXPLORE_HOME at
        ``root/home``, plus ``env``), opened in the session's Chromium (one Playwright per thread: a second would
        not start) and run; yields the page. On the session's Notebook 7 server when one was started (its
        kernelspec of its own), else on a server of its own at ``root``."""
        notebooks = root / "notebooks"
        notebooks.mkdir()
        kernel_env = {"STABLE_EXPLORE_HOME": str(root / "home"), **(env or {})}
        shared = self.notebook7_server
        with contextlib.ExitStack() as stack:
            if shared is not None:
                kernel = self.kernelspec(kernel_env, server_root=shared.root)
                write_notebook(notebooks / name, cells, kernel=kernel)
                url, path = shared.wait(), self.path(root, name)
                folder = notebooks.relative_to(self.served).as_posix()
                stack.callback(lambda: self.shutdown_kernels(folder, wait=False, url=url))
            else:
                write_notebook(notebooks / name, cells)
                url, path = stack.enter_context(jupyter_lab(root, notebooks, kernel_env, app="notebook")), name
            self._notebook7_url = url
            context = self.browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
            stack.callback(context.close)
            page = context.new_page()
            open_notebook(page, url, path, app="notebook")
            run_all(page)
            yield page

    def reopen7(self, page: Any, root: Path, name: str) -> None:
        """Reload the page of :meth:`notebook7`'s notebook and open it again (after its kernel was shut down)."""
        page.reload()
        path = self.path(root, name) if self.notebook7_server is not None else name
        open_notebook(page, self._notebook7_url, path, app="notebook")

    @contextmanager
    def notebook(
        self,
        root: Path,
        name: str,
        cells: list[str] | None = None,
        *,
        viewport: tuple[int, int] = (1400, 1000),
        env: dict[str, str] | None = None,
        run: bool = True,
        copy_from: Path | None = None,
    ) -> Iterator[Any]:
        """As :func:`notebook_in_chromium` on the shared server: a notebook of ``cells`` (or a copy of the notebook
        ``copy_from``) at ``root/notebooks/name`` (its kernel's ``STABLE_EXPLORE_HOME`` at ``root/home``, plus
        ``env``), opened alone in the shared page and run to the end (``run=False``: only opened); yields the page."""
        notebooks = root / "notebooks"
        notebooks.mkdir(exist_ok=True)
        kernel_env = {"STABLE_EXPLORE_HOME": str(root / "home"), **(env or {})}
        if copy_from is None:
            kernel = self.kernelspec(kernel_env)
            write_notebook(notebooks / name, cells or [], kernel=kernel)
        else:  # the same notebook, on this module's kernelspec (of the name it shows)
            notebook = json.loads(copy_from.read_text())
            kernel = self.kernelspec(kernel_env, notebook["metadata"]["kernelspec"]["display_name"])
            notebook["metadata"]["kernelspec"]["name"] = kernel
            (notebooks / name).write_text(json.dumps(notebook, indent=1))
        folder = notebooks.relative_to(self.served).as_posix()
        page = self._open_alone(f"{folder}/{name}", kernel, viewport)
        try:
            if run:
                run_all(page)
            yield page
        finally:
            self.shutdown_kernels(folder, wait=False)

    def open_ahead(self, viewport: tuple[int, int] = (1400, 1000)) -> None:
        """Open the shared page in a new workspace without waiting: the page itself waits (in Chromium) until the
        server answers, then loads JupyterLab, which boots while the caller goes on; the first notebook opened
        (:meth:`notebook`) waits for it to be ready."""
        self.reset_theme()
        self._context = self.browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        self._page = page = self._context.new_page()
        self._count += 1
        self._workspace = f"shared-{self._count}"
        self._booting = True
        # a no-cors fetch of a server that is not listening yet fails; once it listens, it resolves (opaquely)
        page.set_content(
            """<script>
            (async () => {
                for (;;) {
                    try { await fetch(STATUS, {mode: 'no-cors', cache: 'no-store'}); break; } catch (e) {}
                    await new Promise((done) => setTimeout(done, 250));
                }
                window.location.href = TARGET;
            })();
            </script>""".replace("STATUS", json.dumps(f"{self.url}/api/status")).replace(
                "TARGET", json.dumps(f"{self.url}/lab/workspaces/{self._workspace}")
            ),
            wait_until="commit",
        )

    def _open_alone(self, path: str, kernel: str, viewport: tuple[int, int]) -> Any:
        """The shared page with the notebook ``path`` alone in it, on its kernelspec ``kernel``, connected and idle."""
        page = self._page
        if page is not None and self._booting:  # the page opened ahead (:meth:`open_ahead`): let it finish booting
            self._booting = False
            with contextlib.suppress(Exception):  # a page that did not boot is replaced below
                page.wait_for_url(f"{self.url}/lab/workspaces/**", timeout=90_000)
                page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60_000)
                page.evaluate("async () => { await window.jupyterapp.restored; }")
        if page is not None:
            try:
                page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
                usable = page.evaluate(
                    """() => window.jupyterapp !== undefined && !document.querySelector('.jp-Dialog')"""
                )
            except Exception:  # a page that crashed or was closed
                usable = False
            if not usable:
                self._close_page()
                page = None
        if page is None:
            self.reset_theme()
            self._context = self.browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
            self._page = page = self._context.new_page()
            self._count += 1
            workspace = f"shared-{self._count}"
            open_notebook(page, self.url, path, workspace=workspace)
        else:
            workspace = self._workspace
            page.evaluate(
                """async (path) => {
                    const app = window.jupyterapp;
                    await app.restored;
                    for (const widget of Array.from(app.shell.widgets('main'))) widget.dispose();
                    // the page knows the kernelspecs of its start; without this, a notebook on a newer one
                    // would start on the default kernel, without its module's environment
                    await app.serviceManager.kernelspecs.refreshSpecs();
                    if (document.body.dataset.jpThemeLight === 'false') {
                        await app.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'});
                    }
                    const widget = await app.commands.execute('docmanager:open', {path});
                    await widget.context.ready;
                }""",
                path,
            )
            page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=60_000)
            wait_for_kernel(page)
        running = page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.name")
        if running != kernel:
            msg = f"{path} started on the kernelspec {running!r}, not its own {kernel!r}"
            raise RuntimeError(msg)
        self._workspace = workspace
        self._workspaces[path] = workspace
        return page

    def reopen_ahead(self, url: str) -> None:
        """Open the shared page again, ahead, on the server now at ``url``."""
        self._close_page()
        self.url = url
        self.open_ahead()

    def _close_page(self) -> None:
        if self._context is not None:
            with contextlib.suppress(Exception):
                self._context.close()
        self._context = self._page = None

    def close(self) -> None:
        """Close the shared page and wait for the kernels' shutdowns (the server and browser stop with
        :func:`shared_lab`)."""
        self._close_page()
        for thread in self._shutting_down:
            thread.join(timeout=60)


class LabStarter:
    """The session's :class:`SharedLab`, started without waiting: the server's process and Chromium are started
    and the shared page opened ahead (it loads JupyterLab once the server answers), then :meth:`ready` waits.

    Started when a worker has collected its tests (tests/widgets/conftest.py), the ~6 s of the server's start
    and the ~3-9 s of JupyterLab's boot in the page overlap the tests the worker runs before its first lab
    test, which they made wait in its setup."""

    def __init__(self, root: Path, served: Path, notebook7: Path | None = None) -> None:
        from playwright.sync_api import sync_playwright

        self._server = JupyterServer(root, served, {})  # first: its start is the longest
        # a Notebook 7 server too when its tests were collected (``notebook7``: its folder)
        self._notebook7 = None if notebook7 is None else JupyterServer(notebook7, served, {}, app="notebook")
        self._playwright = sync_playwright().start()
        self._closed = False
        try:
            browser = self._playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            self.lab = SharedLab(root, served, browser)
            self.lab.url = self._server.url
            self.lab.notebook7_server = self._notebook7
            self.lab.open_ahead()
        except BaseException:
            self._playwright.stop()
            self._stop_servers()
            raise

    def _stop_servers(self) -> None:
        try:
            self._server.stop()
        finally:
            if self._notebook7 is not None:
                self._notebook7.stop()

    def ready(self) -> SharedLab:
        """The lab, once its server answers (the page may still be booting: its first notebook waits for it)."""
        url = self._server.wait()
        if url != self.lab.url:  # the server lost its first port and started again on another: the page follows
            self.lab.reopen_ahead(url)
        return self.lab

    def close(self) -> None:
        """Close the page, stop the server and the browser (once; later calls do nothing)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.lab.close()
            self._stop_servers()
        finally:
            with contextlib.suppress(Exception):  # a browser that crashed
                self.lab.browser.close()
            self._playwright.stop()


@contextmanager
def shared_lab(root: Path, served: Path) -> Iterator[SharedLab]:
    """Start the session's :class:`SharedLab` (server and Chromium); stop both on exit."""
    starter = LabStarter(root, served)
    try:
        yield starter.ready()
    finally:
        starter.close()
