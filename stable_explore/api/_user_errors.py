"""An error raised in the user's own generator, shown as their code raised it: for the magic and the CLI.

Both entry points cut stable-explore's frames out of such a traceback, so it ends at the line of the
user's code that failed; an error raised by our own code keeps its whole traceback (a bug report needs it).

Examples
--------
>>> def generator():
...     yield 1 / 0
>>> try:
...     next(generator())
... except ZeroDivisionError as error:
...     raised_in_user_code(error), trimmed_traceback(error)[-1]
(True, 'ZeroDivisionError: division by zero')
"""

from __future__ import annotations

import sys
import traceback
from typing import TYPE_CHECKING

from stable_explore._frames import is_user_file, user_frames

if TYPE_CHECKING:
    from stable_explore.catalog.parallel.executor import TaskTraceback

__all__ = ["raised_in_user_code", "trimmed_traceback"]


def _task_traceback(error: BaseException) -> TaskTraceback | None:
    """The worker's trimmed frames a parallel build's task raised with, if it was one.

    Only a parallel build makes one, and it imports the executor; a failure with the executor not imported
    cannot carry one, so the magic's ``%load_ext`` and the CLI need not import it (with the catalog and pyarrow).
    """
    executor = sys.modules.get("stable_explore.catalog.parallel.executor")
    if executor is not None and isinstance(error.__cause__, executor.TaskTraceback):
        cause: TaskTraceback = error.__cause__
        return cause
    return None


def raised_in_user_code(error: BaseException) -> bool:
    """Whether the error came through the user's own code (their generator), not only ours or a library's."""
    if _task_traceback(error) is not None:  # raised in a parallel build's task, trimmed there
        return True
    return any(is_user_file(frame.filename) for frame in traceback.extract_tb(error.__traceback__))


def trimmed_traceback(error: BaseException) -> list[str]:
    """The error's traceback without stable-explore's frames, ending at the user's own code (one line each)."""
    task = _task_traceback(error)
    if task is not None:  # a parallel build's task: its worker's frames, trimmed there
        lines = [task.text + "\n", *traceback.format_exception_only(type(error), error)]
        return [line.rstrip("\n") for line in "".join(lines).splitlines()]
    frames = user_frames(error.__traceback__)
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)] if frames else []
    lines += traceback.format_exception_only(type(error), error)
    return [line.rstrip("\n") for line in "".join(lines).splitlines()]
