"""The app's after-the-fork keys: mark and compare (m, d), export (e), continue in the
agent (c), copy the id (y), open the turn in $PAGER / $VISUAL or $EDITOR (o, O).

A mixin of `TurnlineApp`, kept in its own module so the app's own file changes little.
Commands run through `App.suspend()`; log text reaches the screen only as rich `Text`.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import SuspendNotSupported
from textual.binding import Binding, BindingType
from turnline.core.summary import SessionSummary
from turnline.core.textsafe import no_surrogates, one_line
from turnline.core.timeline import Turn
from turnline.core.view import SessionView
from turnline.core.xdg import ConfigError

# The compare, export and resume modules and their screens load with the first key
# that needs them, not with the app: they are not on its first screen.
if TYPE_CHECKING:
    from .app import TurnlineApp
    from .screens import ExportRequest

AFTER_FORK_BINDINGS: list[BindingType] = [
    Binding("m", "mark", "Mark"),
    Binding("d", "compare", "Diff"),
    Binding("e", "export", "Export"),
    Binding("c", "continue", "Continue", show=False),
    Binding("y", "copy_id", "Copy id", show=False),
    Binding("o", "open_turn", "Open turn", show=False),
    Binding("O", "edit_turn", "Edit turn", show=False),
]


def wait_for_enter() -> None:
    """Wait for a line on the terminal (the app is suspended: stdin is the tty)."""
    with contextlib.suppress(OSError, ValueError):  # no stdin, or closed: do not wait
        sys.stdin.readline()


class AfterForkActions:
    """Actions for the keys above (mixed into `TurnlineApp`)."""

    marked: Path | None = None

    def _app(self) -> TurnlineApp:
        return self  # type: ignore[return-value]

    def _on_main(self) -> bool:
        """True when the main screen is on top: these keys never act over a dialog or
        the command palette (a key that reaches the app while one is opening)."""
        app = self._app()
        return len(app.screen_stack) == 1

    def _highlighted(self) -> SessionSummary | None:
        app = self._app()
        path = app.session_tree.highlighted_path
        if path is None or app.snapshot is None:
            return None
        return app.snapshot.summaries.get(path)

    def _say(self, message: str, *, title: str, warning: bool = False) -> None:
        self._app().notify(
            message, title=title, severity="warning" if warning else "information", markup=False
        )

    def action_mark(self) -> None:
        """Mark the highlighted session for `d`."""
        if not self._on_main():
            return
        summary = self._highlighted()
        if summary is None:
            self._say("no session is highlighted", title="Mark", warning=True)
            return
        self.marked = summary.path
        self._app().session_tree.set_marked(summary.path)
        self._say(f"marked {one_line(summary.id)}: d on another session compares", title="Mark")

    def action_compare(self) -> None:
        """Compare the marked session with the highlighted one."""
        if not self._on_main():
            return
        app = self._app()
        summary = self._highlighted()
        marked = app.snapshot.summaries.get(self.marked) if self.marked and app.snapshot else None
        if summary is None or marked is None or app.root is None:
            self._say("mark a session with m first", title="Compare", warning=True)
            return
        from turnline.core.compare import CompareError, compare

        from .screens import CompareScreen

        try:
            result = compare(app.root, marked, summary)
        except CompareError as exc:
            self._say(exc.message, title="Cannot compare", warning=True)
            return
        except OSError as exc:
            self._say(str(exc), title="Cannot compare", warning=True)
            return
        app.push_screen(CompareScreen(result))

    def action_export(self) -> None:
        """Export the open session: ask for the format and path, say where it wrote."""
        if not self._on_main():
            return
        app = self._app()
        view = app.view
        if view is None:
            self._say("no session is open yet", title="Export", warning=True)
            return
        loaded = view.loaded
        from turnline.core.export import ExportError, export, write_export

        from .screens import ExportScreen

        def done(request: ExportRequest | None) -> None:
            if request is None:
                return
            target = Path(request.path).expanduser()
            try:
                written = write_export(target, export(loaded, request.fmt))
            except ExportError as exc:
                self._say(exc.message, title="Export failed", warning=True)
                return
            self._say(f"wrote {written.resolve()}", title="Exported")

        app.push_screen(ExportScreen(loaded.summary.id), done)

    def action_continue(self) -> None:
        """Suspend, run the resume command in the session's cwd, restore and refresh."""
        if not self._on_main():
            return
        app = self._app()
        summary = self._highlighted()
        if summary is None:
            self._say("no session is highlighted", title="Continue", warning=True)
            return
        from turnline.core.resume import resume_command

        try:
            command = resume_command(summary)
        except ConfigError as exc:
            self._say(exc.message, title="Bad config", warning=True)
            return
        cwd = summary.cwd
        warning = None
        if not cwd or not os.path.isdir(cwd):
            warning = (
                f"the session's cwd {one_line(cwd or '(none)')} is gone: running in {os.getcwd()}"
            )
            self._say(warning, title="Continue", warning=True)
            cwd = os.getcwd()
        code = self._run_suspended(
            ["sh", "-c", command], cwd=cwd, warning=warning, failure=f"resume command {command}"
        )
        if code:
            # An error, not the rescan's note alone: the agent never ran (or failed).
            app.notify(
                f"resume command exited {code}: {one_line(command)}",
                title="Continue failed",
                severity="error",
                markup=False,
            )
        app.action_reload()

    def _run_suspended(
        self,
        argv: list[str],
        *,
        cwd: str,
        warning: str | None = None,
        failure: str | None = None,
    ) -> int | None:
        """Run `argv` with the app suspended; its exit code (None if it did not run).

        With `failure` (what the command is, for the terminal), a command that exits
        non-zero keeps the terminal until Enter, so its output can be read before the
        app's screen comes back over it.
        """
        app = self._app()
        try:
            with app.suspend():
                if warning:
                    print(f"turnline: {warning}", flush=True)
                code = subprocess.run(argv, cwd=cwd, check=False).returncode
                if code and failure is not None:
                    print(f"\nturnline: {failure} exited {code}", flush=True)
                    print("press Enter to return to turnline", end="", flush=True)
                    wait_for_enter()
        except OSError as exc:
            self._say(f"cannot run {one_line(argv[0])}: {exc}", title="Failed", warning=True)
            return None
        except SuspendNotSupported as exc:  # no terminal (e.g. the web driver)
            self._say(f"cannot suspend here: {exc}", title="Failed", warning=True)
            return None
        return code

    def action_copy_id(self) -> None:
        """Copy the highlighted session's id (Textual's clipboard support, OSC 52)."""
        if not self._on_main():
            return
        summary = self._highlighted()
        if summary is None:
            self._say("no session is highlighted", title="Copy", warning=True)
            return
        # (A lone surrogate, which no clipboard can take as UTF-8, goes as U+FFFD, as
        # it is shown.)
        self._app().copy_to_clipboard(no_surrogates(summary.id))
        self._say(f"copied {one_line(summary.id)}", title="Copy")

    def action_open_turn(self) -> None:
        """The highlighted turn as Markdown in $PAGER."""
        self._open_turn(("PAGER",), "less")

    def action_edit_turn(self) -> None:
        """The highlighted turn as Markdown in $VISUAL, else $EDITOR (the convention:
        VISUAL names the full-screen editor, which a terminal app suspends for)."""
        self._open_turn(("VISUAL", "EDITOR"), "vi")

    def _open_turn(self, variables: tuple[str, ...], default: str) -> None:
        if not self._on_main():
            return
        program = command_line(variables, default)
        if isinstance(program, str):
            self._say(program, title="Open", warning=True)
            return
        app = self._app()
        view = app.view
        turn = app.timeline.current_turn
        if view is None or turn is None:
            self._say("no turn is highlighted", title="Open", warning=True)
            return
        # Written off the UI thread: a 200 MB field is copied from the log window by
        # window (core.export.write_turn_markdown), and the app keeps answering keys.
        app.run_worker(
            partial(self._write_turn, view, turn, program),
            thread=True,
            group="open-turn",
            exclusive=True,
            exit_on_error=False,
            description="write a turn for the pager",
        )

    def _write_turn(self, view: SessionView, turn: Turn, program: list[str]) -> None:
        from turnline.core.export import write_turn_markdown

        app = self._app()
        fd, name = tempfile.mkstemp(prefix="turnline-turn-", suffix=".md")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as stream:
                events = view.events_between(turn.first_seq, turn.end_seq, bounded=True)
                write_turn_markdown(view.loaded, turn, stream, events)
        except BaseException:
            os.unlink(name)
            raise
        app.call_from_thread(self._page, program, name)

    def _page(self, program: list[str], name: str) -> None:
        try:
            self._run_suspended([*program, name], cwd=os.getcwd())
        finally:
            os.unlink(name)


def command_line(variables: tuple[str, ...], default: str) -> list[str] | str:
    """The command the first of `variables` set to something other than blanks names
    (split as a shell would), else `default`; a value the shell could not split is
    refused with what is wrong, naming the variable."""
    for variable in variables:
        value = os.environ.get(variable, "")
        if not value.strip():
            continue
        try:
            words = shlex.split(value)
        except ValueError as exc:
            return f"${variable} is not a command line ({one_line(str(exc))}): {one_line(value)}"
        if words:
            return words
    return [default]
