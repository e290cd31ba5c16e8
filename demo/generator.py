"""A generated demo root for `turnline demo`, and a writer that keeps one session live.

`build_demo_root` writes a small but complete root in the dsh layout: several projects,
a lineage several levels deep (user forks made by `SessionRoot.fork`, subagent children
spawned fresh and seeded), every `turn/end` reason kind, an open turn, logs with
problems, and titles that carry Rich markup and escape sequences so a browser can prove
it shows them literally. Part of it is then rewritten as dsh's migration writes it
(`CURRENT_DSH`, `dshmigrate`): the formats a dsh user has on disk today, V5 beside V0.
Everything is derived from a `random.Random(seed)` and a base time, so two builds with
the same arguments are byte-identical.

`TurnFactory` makes one realistic turn's events the way dsh writes them (inbox lead-in,
`turn/start`, steps with streamed chunks, tool calls and results, `turn/end`), and says
where an agent would flush its append batches; benchmarks reuse it to grow big logs.
`LiveWriter` appends such turns to one log in whole-line batches until it is stopped.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec
import orjson
from turnline.core.codec import encode_records, parse_header
from turnline.core.formats import NEWEST_VERSION, generation_name
from turnline.core.layout import session_dir
from turnline.core.logfile import Encoding, encoding_of, read_log
from turnline.core.model import (
    TURN_END,
    TURN_START,
    ProblemKind,
    SessionEvent,
    SessionHeader,
)
from turnline.core.root import SessionRoot
from turnline.core.writer import append_events, log_name, write_new_file
from turnline.demo.dshmigrate import log_chunks, migrate, read_v0

DEFAULT_PROVIDER: Final = "deepseek-official"
DEFAULT_MODEL: Final = "deepseek-v4-flash"

#: The runtime-context message dsh's system-prompt plugin injects at every first step.
RUNTIME_CONTEXT: Final = (
    "Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\n"
    "Current DSH file policy: workspace-write. The DSH file sandbox allows edits inside "
    "the workspace only.\n\n"
    "Approval prompts are enabled in this session."
)

#: A title that must be displayed literally: Rich markup and an ANSI colour escape.
MARKUP_TITLE: Final = "[bold red]not bold[/] \x1b[31mnot red\x1b[0m: render the timeline literally"

#: `turn/end` reasons as dsh writes them, by kind.
REASONS: Final[Mapping[str, Mapping[str, Any]]] = {
    "completed": {"kind": "completed"},
    "aborted": {"kind": "aborted", "reason": {"kind": "user"}},
    "error": {
        "kind": "error",
        "error": {
            "message": "provider overloaded (HTTP 529), retries exhausted",
            "code": "OVERLOAD",
        },
    },
    "max-tokens": {"kind": "max-tokens"},
    "interrupted": {"kind": "interrupted"},
}


# -- content --------------------------------------------------------------------------


class _Project(msgspec.Struct, frozen=True):
    files: tuple[str, ...]
    symbols: tuple[str, ...]
    commands: tuple[str, ...]
    asks: tuple[str, ...]


_PROJECTS: Final[Mapping[str | None, _Project]] = {
    "/home/dev/shop-api": _Project(
        files=(
            "app/checkout.py",
            "app/orders.py",
            "app/db.py",
            "tests/test_checkout.py",
            "tests/conftest.py",
        ),
        symbols=("reserve_stock", "Checkout.commit", "paginate", "OrderQuery", "db_session"),
        commands=(
            "pytest -q tests/test_checkout.py",
            "pytest -q -x",
            "git log --oneline -n 30",
            "ruff check app",
        ),
        asks=(
            "The /orders endpoint is slow for big customers, can you see why?",
            "Add a test for the refund path in checkout.",
            "Why does the stock counter go negative under load?",
            "Clean up the warnings pytest prints.",
        ),
    ),
    "/home/dev/turnline": _Project(
        files=("core/timeline.py", "core/watcher.py", "tui/app.py", "tests/tui/test_live.py"),
        symbols=("TimelineBuilder.feed", "RootWatcher.watch", "SessionTree", "Turn.forkable"),
        commands=("make test", "pytest -q tests/core", "python -m benchmarks"),
        asks=(
            "The tree flickers when a big log grows, can you look at it?",
            "Make the timeline keep the cursor when new turns arrive.",
            "Why is the first scan of the fixtures root slow?",
        ),
    ),
    "/srv/infra": _Project(
        files=("terraform/main.tf", "ansible/certs.yml", "scripts/rotate.sh", "backup/nightly.sh"),
        symbols=("aws_lb_listener.https", "rotate_certs", "restic_backup", "vault_pki"),
        commands=(
            "terraform plan -no-color",
            "ansible-playbook --check certs.yml",
            "journalctl -u backup -n 40",
        ),
        asks=(
            "Check that the staging load balancer picks up the new certificate.",
            "Why did the nightly backup fail on Tuesday?",
            "Plan the change to the listener without applying it.",
        ),
    ),
    None: _Project(
        files=("notes.md", "example.sh"),
        symbols=("git rebase --onto", "HEAD~3"),
        commands=("git log --oneline --graph -n 12",),
        asks=("Explain git rebase --onto with an example.",),
    ),
}

_REASONING: Final = (
    "The user wants this fixed properly, so I should read {file} before changing anything.",
    "Let me find where {symbol} is defined and who calls it.",
    "Running `{command}` first tells me whether the problem reproduces here.",
    "The output shows {n} call sites; only one of them passes a timeout.",
    "I must not change the public signature of {symbol}: other modules import it.",
    "That edit looks right, but I should run the tests again to be sure.",
    "The traceback points at {file}, line {n}, inside {symbol}.",
    "A grep for {symbol} across the repository shows whether anything else depends on it.",
    "The second call happens after the transaction commits, which explains the race.",
    "I will keep the change small and explain the trade-off in the reply.",
)
_TEXT: Final = (
    "I found the cause: `{symbol}` in `{file}` reads shared state before the previous "
    "request has committed.",
    "I changed `{file}` so that `{symbol}` holds the lock for the whole update.",
    "Running `{tests}` now gives {n} passed, 0 failed.",
    "There are {n} other callers of `{symbol}`; none of them relies on the old ordering.",
    "Next I would add a regression test that runs two requests concurrently.",
    "The remaining warning comes from a deprecated argument in `{file}`; it is harmless.",
    "Summary of the change:\n\n- `{file}`: take the lock earlier\n- tests: one new case "
    "for the concurrent path",
    "I did not touch `{symbol}` itself, so the public API stays the same.",
)
_TEST_WORDS: Final = ("commit", "refund", "empty_cart", "timeout", "retry", "paginate", "lock")
_CODE: Final = (
    "def {name}(self, order_id: int) -> None:",
    '    """Reserve stock for every line of the order."""',
    "    with self.session.begin():",
    "        rows = self.session.execute(query).all()",
    "    for row in rows:",
    "        if row.quantity > row.available:",
    "            raise OutOfStock(row.sku)",
    "        row.available -= row.quantity",
    "    return len(rows)",
    "",
    "import logging",
    "log = logging.getLogger(__name__)",
    "    # keep the lock until commit: see the race in issue 412",
    "    await asyncio.sleep(0)",
    "class {name}Error(RuntimeError):",
    "    pass",
)


class ToolUse(msgspec.Struct, frozen=True):
    """One tool call of a generated turn and the result it gets.

    Attributes:
        name: The tool name (`bash`, `read_file`, `edit`, `grep`, `subagent`, ...).
        arguments: The JSON arguments.
        result: The tool's text result (multi-line for most tools).
        is_error: Whether the result is an error.
    """

    name: str
    arguments: Mapping[str, Any]
    result: str
    is_error: bool = False


class GeneratedTurn(msgspec.Struct, frozen=True):
    """One turn's events and where an agent would flush them.

    Attributes:
        events: The events, seqs contiguous from the `seq` the factory was given.
        batches: End indices (exclusive) into `events` of each append batch, in order;
            the last one is `len(events)`.
        number: The turn number.
        closed: Whether the events end with a `turn/end`.
    """

    events: tuple[SessionEvent, ...]
    batches: tuple[int, ...]
    number: int
    closed: bool

    @property
    def next_seq(self) -> int:
        """The seq the next event after this turn gets."""
        return self.events[-1].seq + 1 if self.events else 0

    @property
    def end_time(self) -> int:
        """The time of the last event (epoch ms)."""
        return int(self.events[-1].time) if self.events else 0

    def batch_events(self) -> list[tuple[SessionEvent, ...]]:
        """The events grouped into their append batches."""
        out: list[tuple[SessionEvent, ...]] = []
        start = 0
        for end in self.batches:
            if end > start:
                out.append(self.events[start:end])
            start = end
        return out


class _Cursor:
    """Allocates seqs and times while a turn is generated."""

    def __init__(self, seq: int, time_ms: int) -> None:
        self.seq = seq
        self.time = time_ms
        self.events: list[SessionEvent] = []
        self.batches: list[int] = []

    def emit(
        self, etype: str, data: Any, *, dt: int = 0, extra: Mapping[str, Any] | None = None
    ) -> SessionEvent:
        self.time += dt
        event = SessionEvent(etype, self.seq, self.time, data, dict(extra or {}))
        self.seq += 1
        self.events.append(event)
        return event

    def flush(self) -> None:
        if self.events and (not self.batches or self.batches[-1] != len(self.events)):
            self.batches.append(len(self.events))


class TurnFactory:
    """Makes realistic dsh turns, deterministically from a `random.Random`.

    Args:
        rng: The only source of randomness (ids, text, sizes, delays).
        cwd: The project; picks file names, commands and asks that fit it.
        provider: The provider named in requests and messages.
        model: The model named in requests and messages.
    """

    def __init__(
        self,
        rng: random.Random,
        *,
        cwd: str | None = None,
        provider: str = DEFAULT_PROVIDER,
        model: str = DEFAULT_MODEL,
    ) -> None:
        self.rng = rng
        self.cwd = cwd
        self.project = _PROJECTS.get(cwd, _PROJECTS["/home/dev/shop-api"])
        self.provider = provider
        self.model = model

    # -- ids and text ----------------------------------------------------------------

    def new_id(self) -> str:
        """A UUID4-shaped id drawn from the rng."""
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def call_id(self) -> str:
        """A tool call id shaped like dsh's."""
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return "call_00_" + "".join(self.rng.choice(alphabet) for _ in range(24))

    def ask(self) -> str:
        """A user request that fits the project."""
        return self.rng.choice(self.project.asks)

    def _fill(self, template: str) -> str:
        p = self.project
        return template.format(
            file=self.rng.choice(p.files),
            symbol=self.rng.choice(p.symbols),
            command=self.rng.choice(p.commands),
            tests=self.rng.choice([c for c in p.commands if "test" in c] or ["make check"]),
            n=self.rng.randint(2, 48),
            name=self.rng.choice(p.symbols).split(".")[-1].replace(" ", "_"),
        )

    def prose(self, templates: Sequence[str], words: int) -> str:
        """Sentences from templates until about `words` words."""
        out: list[str] = []
        count = 0
        pool: list[str] = []
        while count < max(words, 1):
            if not pool:  # each template once before any repeats
                pool = list(templates)
                self.rng.shuffle(pool)
            sentence = self._fill(pool.pop())
            # A multi-line sentence (a list) stands as its own paragraph.
            out.append(f"\n\n{sentence}\n\n" if "\n" in sentence else sentence)
            count += len(sentence.split())
        return re.sub(r" ?\n\n ?", "\n\n", " ".join(out)).strip()

    def _tokens(self, text: str) -> list[str]:
        """Split text the way a model streams it: words with their leading space, some cut."""
        out: list[str] = []
        for token in re.findall(r"\s*\S+", text):
            if len(token) > 6 and self.rng.random() < 0.3:
                cut = self.rng.randint(2, len(token) - 2)
                out.extend((token[:cut], token[cut:]))
            else:
                out.append(token)
        if "".join(out) != text:  # trailing whitespace: keep the text exact
            out.append(text[len("".join(out)) :])
        return out or [text]

    def _arg_pieces(self, arguments: str) -> list[str]:
        pieces = [""]
        i = 0
        while i < len(arguments):
            n = self.rng.randint(1, 7)
            pieces.append(arguments[i : i + n])
            i += n
        return pieces

    def _dt(self) -> int:
        return self.rng.choice((0, 0, 0, 1, 1, 26, 28, 30))

    # -- tools -----------------------------------------------------------------------

    def tool_use(self, name: str, *, lines: int | None = None) -> ToolUse:
        """A plausible call of one tool with its result; `lines` sizes long results."""
        rng, p = self.rng, self.project
        file = rng.choice(p.files)
        symbol = rng.choice(p.symbols)
        if name == "bash":
            command = rng.choice(p.commands)
            n = lines if lines is not None else rng.choice((3, 6, 12, 40))
            if command.startswith("pytest") or command == "make test":
                stems = [f.rsplit("/", 1)[-1].split(".")[0].removeprefix("test_") for f in p.files]
                out = [
                    f"tests/test_{stem}.py::test_{word}_{k} PASSED"
                    for k, (stem, word) in enumerate(
                        zip(rng.choices(stems, k=n), rng.choices(_TEST_WORDS, k=n), strict=True)
                    )
                ]
                failed = rng.random() < 0.2
                out.append(f"{n - failed} passed, {int(failed)} failed in {rng.randint(1, 90)}.2s")
                return ToolUse(
                    name,
                    {"command": command, "description": "Run the tests"},
                    "\n".join(out) + "\n",
                    failed,
                )
            out = [
                f"{rng.getrandbits(28):07x} {self._fill(rng.choice(_TEXT))[:60]}" for _ in range(n)
            ]
            return ToolUse(
                name,
                {"command": command, "description": f"Run {command.split()[0]}"},
                "\n".join(out) + "\n",
            )
        if name == "read_file":
            n = lines if lines is not None else rng.choice((12, 30, 80))
            body = [f"{k + 1:>6}\t{self._fill(rng.choice(_CODE))}" for k in range(n)]
            return ToolUse(name, {"file_path": file, "offset": 1, "limit": n}, "\n".join(body))
        if name == "edit":
            return ToolUse(
                name,
                {
                    "file_path": file,
                    "old_string": "    with self.session.begin():",
                    "new_string": "    with self.session.begin(), self.lock:",
                },
                f"The file {file} has been updated. 1 replacement made.",
            )
        if name == "grep":
            n = lines if lines is not None else rng.choice((3, 8, 25))
            hits = [
                f"{rng.choice(p.files)}:{rng.randint(1, 400)}:    {symbol}(order_id)"
                for _ in range(n)
            ]
            return ToolUse(name, {"pattern": symbol, "path": "."}, "\n".join(hits))
        if name in ("subagent", "subagent_fork"):
            prompt = f"Check every caller of {symbol} and report any that assume the old order."
            answer = self.prose(_TEXT, 40)
            return ToolUse(
                name, {"description": f"Review {symbol} callers", "prompt": prompt}, answer
            )
        return ToolUse(name, {"path": file}, f"{name}: ok")

    def tool_uses(self, count: int) -> list[ToolUse]:
        """`count` tool calls with names drawn from the usual coding mix."""
        names = ("bash", "read_file", "read_file", "grep", "edit", "bash")
        return [self.tool_use(self.rng.choice(names)) for _ in range(count)]

    # -- turns -----------------------------------------------------------------------

    def turn(
        self,
        seq: int,
        time_ms: int,
        number: int,
        *,
        user: str | None = None,
        reason: str = "completed",
        steps: int | None = None,
        tools: Sequence[ToolUse] | int | None = None,
        text_words: int | None = None,
        reasoning_words: int | None = None,
        title: str | None = None,
        fallback_title: bool = False,
        initial: bool | None = None,
        close: bool = True,
        lead_in: Sequence[tuple[str, Any]] = (),
        answer: str | None = None,
    ) -> GeneratedTurn:
        """One whole turn as dsh writes it.

        Args:
            seq: The first event's seq.
            time_ms: The first event's time.
            number: The turn number.
            user: The user's text (None: an ask that fits the project).
            reason: The `turn/end` kind: `completed`, `aborted`, `error`, `max-tokens`,
                `interrupted`; ignored when `close` is False.
            steps: Model rounds (None: enough for the tools, at least one more to answer).
            tools: The tool calls, or how many to draw (None: 0–3).
            text_words: Size of the final answer (None: 20–80 words).
            reasoning_words: Size of each reasoning block (None: 10–50 words).
            title: A provider title emitted at the end of the turn.
            fallback_title: Emit dsh's first-words fallback title after the user message.
            initial: Emit the session's initial `request/header` (None: turn 1 only).
            close: False leaves the turn open after its last tool step (no `turn/end`).
            lead_in: Extra `(type, data)` events right after `turn/start` (e.g. a
                `subagent/descriptor`).
            answer: The final answer text (None: generated prose of `text_words`).

        Raises:
            ValueError: `reason` is not one of the format's reason kinds.
        """
        if close and reason not in REASONS:
            raise ValueError(f"unknown turn/end reason {reason!r}; expected one of {list(REASONS)}")
        rng = self.rng
        if isinstance(tools, int) or tools is None:
            count = tools if isinstance(tools, int) else rng.choice((0, 1, 1, 2, 3))
            calls = self.tool_uses(count)
        else:
            calls = list(tools)
        answer_steps = 0 if not close else 1
        if steps is None:
            tool_steps = min(len(calls), rng.randint(1, 3)) if calls else 0
            steps = tool_steps + answer_steps
        steps = max(steps, answer_steps + (1 if calls else 0), 1)
        tool_steps = steps - answer_steps
        per_step = _split(calls, tool_steps, rng)
        text = user if user is not None else self.ask()
        c = _Cursor(seq, time_ms)
        user_seq = seq
        message_id = self.new_id()
        user_message = {
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"},
            "role": "user",
            "id": message_id,
        }
        c.emit(
            "agent/inbox/spliced",
            {"target": "next-turn", "start": 0, "inserted": [user_message]},
        )
        c.emit(TURN_START, {"turn": number}, dt=rng.randint(5, 40))
        c.emit(
            "agent/inbox/spliced",
            {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []},
        )
        for etype, data in lead_in:
            c.emit(etype, data)
        for step in range(1, steps + 1):
            c.emit("step/start", {"turn": number, "step": step}, dt=rng.randint(1, 15))
            if step == 1:
                user_event = c.emit(
                    "user/message", _deep(user_message), extra={"surfaceOp": "append"}
                )
                user_seq = user_event.seq
                c.emit(
                    "user/message",
                    {
                        "content": [{"type": "text", "text": RUNTIME_CONTEXT}],
                        "source": {
                            "kind": "plugin",
                            "plugin": "@deepseek-ai/dsh-system-prompt",
                            "form": "snapshot",
                        },
                        "role": "user",
                        "id": self.new_id(),
                    },
                    extra={"surfaceOp": "append"},
                )
                if fallback_title:
                    words = " ".join(text.split()[:5])
                    c.emit(
                        "session/title",
                        {
                            "title": words,
                            "messageSeqs": [user_event.seq],
                            "source": {"kind": "fallback"},
                        },
                    )
                if initial if initial is not None else number == 1:
                    c.emit(
                        "request/header",
                        {
                            "header": {
                                "config": {"provider": self.provider, "model": self.model},
                                "system": "You are dsh, a coding agent.",
                                "tools": ["bash", "read_file", "edit", "grep", "subagent"],
                            },
                            "reason": "initial",
                        },
                    )
                    c.emit("request/context", {"provider": self.provider, "model": self.model})
                c.flush()
            last = step == steps
            if step <= tool_steps:
                self._tool_step(c, number, step, per_step[step - 1], reasoning_words)
                if last and not close:
                    c.flush()
                    break
                continue
            self._final_step(c, number, step, reason, text_words, reasoning_words, answer)
        if close:
            if title is not None:
                c.emit(
                    "session/title",
                    {
                        "title": title,
                        "messageSeqs": [user_seq],
                        "source": {
                            "kind": "provider",
                            "provider": "session-title-first-prompt-llm",
                            "model": {"provider": self.provider, "model": self.model},
                        },
                    },
                )
            c.emit(TURN_END, {"turn": number, "reason": _deep(REASONS[reason])}, dt=1)
            c.flush()
        c.flush()
        return GeneratedTurn(tuple(c.events), tuple(c.batches), number, close)

    def continuation(
        self,
        seq: int,
        time_ms: int,
        number: int,
        *,
        next_step: int,
        open_step: bool = False,
        reason: str = "completed",
        tools: int = 1,
    ) -> GeneratedTurn:
        """The rest of an open turn: close a pending step, more steps, then `turn/end`."""
        c = _Cursor(seq, time_ms)
        if open_step:
            c.emit("step/end", {"turn": number, "step": next_step - 1}, dt=1)
        step = next_step
        for _ in range(tools):
            c.emit("step/start", {"turn": number, "step": step}, dt=self.rng.randint(1, 15))
            self._tool_step(c, number, step, self.tool_uses(1), None)
            step += 1
        c.emit("step/start", {"turn": number, "step": step}, dt=self.rng.randint(1, 15))
        self._final_step(c, number, step, reason, None, None, None)
        c.emit(TURN_END, {"turn": number, "reason": _deep(REASONS[reason])}, dt=1)
        c.flush()
        return GeneratedTurn(tuple(c.events), tuple(c.batches), number, True)

    def closing(
        self, seq: int, time_ms: int, number: int, *, open_step: int | None, reason: str
    ) -> GeneratedTurn:
        """The events that end an open turn at once (an agent being stopped)."""
        c = _Cursor(seq, time_ms)
        if open_step is not None:
            c.emit("step/end", {"turn": number, "step": open_step})
        c.emit(TURN_END, {"turn": number, "reason": _deep(REASONS[reason])}, dt=1)
        c.flush()
        return GeneratedTurn(tuple(c.events), tuple(c.batches), number, True)

    # -- steps -----------------------------------------------------------------------

    def _chunk(
        self, c: _Cursor, number: int, step: int, chunk: dict[str, Any], dt: int = 0
    ) -> SessionEvent:
        return c.emit("assistant/chunk", {"turn": number, "step": step, "chunk": chunk}, dt=dt)

    def _stream_text(
        self, c: _Cursor, number: int, step: int, index: int, kind: str, text: str
    ) -> list[int]:
        seqs = [
            self._chunk(
                c, number, step, {"type": "block-start", "index": index, "blockType": kind}
            ).seq
        ]
        delta = "reasoning-delta" if kind == "reasoning" else "text-delta"
        for k, token in enumerate(self._tokens(text)):
            dt = self.rng.randint(300, 1200) if k == 0 and index == 0 else self._dt()
            seqs.append(
                self._chunk(c, number, step, {"type": delta, "index": index, "text": token}, dt).seq
            )
        return seqs

    def _usage(self, out_words: int) -> dict[str, int]:
        return {
            "inputTokens": self.rng.randint(200, 9000),
            "outputTokens": out_words + self.rng.randint(5, 40),
            "cacheReadTokens": self.rng.choice((0, 2816, 5632)),
            "reasoningTokens": self.rng.randint(10, 120),
        }

    def _message(
        self,
        c: _Cursor,
        number: int,
        step: int,
        content: list[dict[str, Any]],
        usage: dict[str, int],
        sources: list[int],
        **more: Any,
    ) -> None:
        message = {
            "role": "assistant",
            "content": content,
            "source": {"kind": "model", "provider": self.provider, "model": self.model},
            "id": self.new_id(),
        }
        c.emit(
            "assistant/message",
            {"turn": number, "step": step, "message": message, "usage": usage, **more},
            extra={"sourceEventSeqs": sources, "surfaceOp": "append"},
        )

    def _tool_step(
        self,
        c: _Cursor,
        number: int,
        step: int,
        calls: Sequence[ToolUse],
        reasoning_words: int | None,
    ) -> None:
        rng = self.rng
        reasoning = self.prose(_REASONING, reasoning_words or rng.randint(10, 50))
        sources = self._stream_text(c, number, step, 0, "reasoning", reasoning)
        content: list[dict[str, Any]] = [{"type": "reasoning", "text": reasoning}]
        ids: list[str] = []
        for k, call in enumerate(calls, start=1):
            cid = self.call_id()
            ids.append(cid)
            args = json.dumps(dict(call.arguments), ensure_ascii=False)
            sources.append(
                self._chunk(
                    c, number, step, {"type": "block-start", "index": k, "blockType": "tool-call"}
                ).seq
            )
            for piece in self._arg_pieces(args):
                chunk = {
                    "type": "tool-call-delta",
                    "index": k,
                    "id": cid,
                    "name": call.name,
                    "argumentsDelta": piece,
                }
                sources.append(self._chunk(c, number, step, chunk, self._dt()).seq)
            content.append({"type": "tool-call", "id": cid, "name": call.name, "arguments": args})
        for k, part in enumerate(content):
            block = dict(part)
            sources.append(
                self._chunk(c, number, step, {"type": "block-end", "index": k, "block": block}).seq
            )
        usage = self._usage(len(reasoning.split()))
        sources.append(self._chunk(c, number, step, {"type": "usage", "usage": usage}).seq)
        sources.append(
            self._chunk(c, number, step, {"type": "finish", "reason": {"kind": "tool-calls"}}).seq
        )
        self._message(c, number, step, content, usage, sources)
        call_seqs = [
            c.emit(
                "tool/call",
                {
                    "turn": number,
                    "step": step,
                    "callId": cid,
                    "name": call.name,
                    "arguments": part["arguments"],
                },
            ).seq
            for cid, call, part in zip(ids, calls, content[1:], strict=True)
        ]
        c.flush()
        for cid, call, call_seq in zip(ids, calls, call_seqs, strict=True):
            c.emit(
                "tool/result",
                {
                    "turn": number,
                    "step": step,
                    "message": {
                        "source": {"kind": "tool", "callId": cid},
                        "content": [
                            {
                                "type": "tool-result",
                                "toolCallId": cid,
                                "content": [{"type": "text", "text": call.result}],
                                "isError": call.is_error,
                            }
                        ],
                        "role": "user",
                        "id": self.new_id(),
                    },
                },
                dt=rng.randint(40, 3000),
                extra={"sourceEventSeqs": [call_seq], "surfaceOp": "append"},
            )
        c.emit("step/end", {"turn": number, "step": step})
        c.flush()

    def _final_step(
        self,
        c: _Cursor,
        number: int,
        step: int,
        reason: str,
        text_words: int | None,
        reasoning_words: int | None,
        answer: str | None,
    ) -> None:
        rng = self.rng
        if reason == "error":
            error = REASONS["error"]["error"]
            self._chunk(
                c,
                number,
                step,
                {"type": "finish", "reason": {"kind": "error", "failure": _deep(error)}},
                rng.randint(200, 2000),
            )
            c.emit("step/end", {"turn": number, "step": step})
            return
        text = (
            answer if answer is not None else self.prose(_TEXT, text_words or rng.randint(20, 80))
        )
        if reason in ("aborted", "interrupted"):
            # The user (or a shutdown) cut the stream: a partial answer marked interrupted.
            tokens = self._tokens(text)[: rng.randint(3, 9)]
            partial = "".join(tokens)
            sources = [
                self._chunk(
                    c, number, step, {"type": "block-start", "index": 0, "blockType": "text"}, 400
                ).seq
            ]
            for token in tokens:
                sources.append(
                    self._chunk(
                        c,
                        number,
                        step,
                        {"type": "text-delta", "index": 0, "text": token},
                        self._dt(),
                    ).seq
                )
            self._message(
                c,
                number,
                step,
                [{"type": "text", "text": partial}],
                self._usage(len(tokens)),
                sources,
                interrupted=True,
            )
            c.emit("step/end", {"turn": number, "step": step}, dt=rng.randint(100, 900))
            return
        reasoning = self.prose(_REASONING, reasoning_words or rng.randint(10, 50))
        sources = self._stream_text(c, number, step, 0, "reasoning", reasoning)
        sources += self._stream_text(c, number, step, 1, "text", text)
        content: list[dict[str, Any]] = [
            {"type": "reasoning", "text": reasoning},
            {"type": "text", "text": text},
        ]
        if reason == "max-tokens":
            # The output limit hit while a tool call was streaming: the call is discarded.
            sources.append(
                self._chunk(
                    c, number, step, {"type": "block-start", "index": 2, "blockType": "tool-call"}
                ).seq
            )
            chunk = {
                "type": "tool-call-delta",
                "index": 2,
                "id": "call-cut",
                "name": "bash",
                "argumentsDelta": '{"command": "pytest -q --',
            }
            sources.append(self._chunk(c, number, step, chunk, self._dt()).seq)
        for k, part in enumerate(content):
            sources.append(
                self._chunk(
                    c, number, step, {"type": "block-end", "index": k, "block": dict(part)}
                ).seq
            )
        usage = self._usage(len(text.split()) + len(reasoning.split()))
        sources.append(self._chunk(c, number, step, {"type": "usage", "usage": usage}).seq)
        finish = "max-tokens" if reason == "max-tokens" else "stop"
        sources.append(
            self._chunk(c, number, step, {"type": "finish", "reason": {"kind": finish}}).seq
        )
        self._message(c, number, step, content, usage, sources)
        c.emit("step/end", {"turn": number, "step": step})


def _split(calls: Sequence[ToolUse], parts: int, rng: random.Random) -> list[list[ToolUse]]:
    """Deal calls over `parts` steps, each step getting at least one when there are enough."""
    out: list[list[ToolUse]] = [[] for _ in range(max(parts, 0))]
    if not out:
        return out
    for k, call in enumerate(calls):
        index = k if k < parts else rng.randrange(parts)
        out[index].append(call)
    for k, step_calls in enumerate(out):
        if not step_calls:
            out[k] = [ToolUse("read_file", {"file_path": "README.md"}, "# project\n")]
    return out


def _deep(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _deep(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_deep(v) for v in value]
    return value


# -- the demo root ----------------------------------------------------------------------


class DemoRoot(msgspec.Struct, frozen=True):
    """A generated demo root.

    Attributes:
        path: The root folder.
        live_path: The log `LiveWriter` appends to (its last turn is open).
        sessions: How many logs were written.
        roles: What each notable log is for (`root`, `fork`, `fork-of-fork`,
            `subagent-spawned`, `subagent-fork`, `missing-parent`, `torn-tail`,
            `foreign-version`, `seq-gap`, `markup-title`, `live`, `no-cwd`, ...) -> its path.
    """

    path: Path
    live_path: Path
    sessions: int
    roles: Mapping[str, Path] = msgspec.field(default_factory=dict)


#: The logs that dsh's later versions wrote (role -> (version, the V0 file kept beside it,
#: zstd)): most of the shop-api lineage is dsh's current format (V5), its root was opened
#: again after dsh migrated (both generations are on disk), one session is the released
#: format (V3); the first subagents stay the V0 children they were, seeded from the root's
#: V0 generation. The other projects are V0, with the logs that are broken on purpose.
CURRENT_DSH: Final = {
    "root": (5, True, False),
    "fork": (5, False, False),
    "fork-of-fork": (5, False, True),
    "fork-of-fork-of-fork": (5, False, False),
    "subagent-of-fork": (5, False, False),
    "pagination": (3, False, False),
}

_SHOP: Final = "/home/dev/shop-api"
_TURNLINE: Final = "/home/dev/turnline"
_INFRA: Final = "/srv/infra"
_HOUR: Final = 3_600_000


class _DemoBuilder:
    """Writes the demo sessions one by one, in a fixed order (that is the determinism)."""

    def __init__(self, dest: Path, seed: int, now_ms: int) -> None:
        self.dest = dest
        self.rng = random.Random(seed)
        self.now = now_ms
        self.roles: dict[str, Path] = {}
        self.ids: dict[str, str] = {}
        self.events: dict[str, list[SessionEvent]] = {}

    def factory(self, cwd: str | None) -> TurnFactory:
        return TurnFactory(self.rng, cwd=cwd)

    def grow(
        self,
        events: list[SessionEvent],
        factory: TurnFactory,
        t: int,
        number: int,
        plans: Sequence[Mapping[str, Any]],
    ) -> int:
        """Append one turn per plan (kwargs of `TurnFactory.turn`); return the next time."""
        for plan in plans:
            gen = factory.turn(len(events), t, number, **plan)
            events.extend(gen.events)
            t = gen.end_time + self.rng.randint(40_000, 600_000)
            number += 1
        return t

    def header(self, sid: str, created: int, cwd: str | None, **fields: Any) -> SessionHeader:
        return SessionHeader(id=sid, created_at=created, cwd=cwd, delegation_depth=0, **fields)

    def write(
        self,
        role: str,
        header: SessionHeader,
        events: Sequence[SessionEvent],
        *,
        prefix: bytes | None = None,
        tail: bytes = b"",
        checked: bool = True,
    ) -> Path:
        """Write one log atomically; `prefix` replaces the encoding of the seed events."""
        if header.id in self.ids.values():
            raise RuntimeError(f"demo session id {header.id} generated twice")
        if checked and any(e.seq != i for i, e in enumerate(events)):
            # Only the logs that are broken on purpose may break contiguity.
            raise RuntimeError(f"demo session {role} has non-contiguous seqs")
        path = session_dir(self.dest, header.id, header.cwd) / log_name(Encoding.RAW)
        seed_length = (header.seed_length or 0) if prefix is not None else 0
        body = encode_records(list(events[seed_length:]))
        write_new_file(path, [header.to_json_line(), prefix or b"", *body, tail])
        self.roles[role] = path
        self.ids[role] = header.id
        self.events[role] = list(events)
        return path

    def fork(
        self, role: str, parent_role: str, boundary: int, created: int
    ) -> tuple[SessionHeader, list[SessionEvent], bytes]:
        """Fork a written log with the core's `SessionRoot.fork` (the one fork rule).

        The fork runs in a scratch root holding a copy of the parent, because the core
        stamps `createdAt` with the wall clock; the demo pins it so builds stay
        byte-identical. Seed bytes and every other header field are the core's.
        """
        parent_path = self.roles[parent_role]
        child_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        with tempfile.TemporaryDirectory(prefix="turnline-demo-fork-") as scratch:
            scratch_root = Path(scratch)
            copy = scratch_root / parent_path.relative_to(self.dest)
            copy.parent.mkdir(parents=True)
            shutil.copyfile(parent_path, copy)
            result = SessionRoot(scratch_root).fork(self.ids[parent_role], boundary, child_id)
            data = result.child.path.read_bytes()
            seed_events = list(read_log(result.child.path).events)
        first, _, seed_bytes = data.partition(b"\n")
        # The core ends the seed with dsh's end-seed marker stamped with the clock: keep
        # the seed's bytes, and restamp the marker with the pinned creation time.
        marker_line = seed_bytes[seed_bytes.rstrip(b"\n").rfind(b"\n") + 1 :]
        seed_bytes = seed_bytes[: len(seed_bytes) - len(marker_line)]
        marker = seed_events.pop()
        seed_events.append(SessionEvent(marker.type, marker.seq, created, marker.data))
        forked, _ = parse_header(orjson.loads(first))
        if forked is None:  # the core wrote it; this would be a core bug
            raise RuntimeError(f"the core fork of {role} wrote no header")
        header = SessionHeader(
            id=forked.id,
            created_at=created,
            version=forked.version,
            cwd=forked.cwd,
            parent_session=forked.parent_session,
            seed_length=forked.seed_length,
            delegation_depth=forked.delegation_depth,
        )
        return header, seed_events, seed_bytes

    @staticmethod
    def turn_end(events: Sequence[SessionEvent], number: int) -> int:
        """The seq of turn `number`'s `turn/end`."""
        for event in events:
            if event.type == TURN_END and event.data.get("turn") == number:
                return event.seq
        raise ValueError(f"no turn/end for turn {number}")

    @staticmethod
    def time_of(events: Sequence[SessionEvent], etype: str, name: str) -> int:
        """The time of the last event of a type whose data names `name` (a tool call)."""
        found = [e for e in events if e.type == etype and e.data.get("name") == name]
        return int(found[-1].time)

    # -- the sessions ----------------------------------------------------------------

    def build(self) -> DemoRoot:
        self.shop_lineage()
        self.shop_others()
        live = self.turnline_sessions()
        self.infra_sessions()
        self.no_cwd_session()
        for role, (version, keep, zstd) in CURRENT_DSH.items():
            self.migrate(role, version, keep=keep, zstd=zstd)
        return DemoRoot(self.dest, live, len(self.roles), dict(self.roles))

    def migrate(self, role: str, version: int, *, keep: bool, zstd: bool) -> None:
        """Rewrite a written V0 log as dsh's migration to `version` writes it: the
        successor generation beside the old file (`keep`, as dsh leaves it when it opens
        an old session), or in its place (a session that dsh of that version wrote)."""
        old = self.roles[role]
        log = migrate(read_v0(old), to=version)
        new = old.with_name(generation_name(version, zstd=zstd))
        write_new_file(new, log_chunks(log, zstd=zstd))
        if not keep:
            old.unlink()
        self.roles[role] = new

    def shop_lineage(self) -> None:
        f = self.factory(_SHOP)
        rng = self.rng
        sid = f.new_id()
        created = self.now - 30 * _HOUR
        root: list[SessionEvent] = []
        spawn = f.tool_use("subagent")
        fork_call = f.tool_use("subagent_fork")
        t = self.grow(
            root,
            f,
            created + 1500,
            1,
            [
                {
                    "user": "The checkout test fails about one run in five on CI. "
                    "Can you find out why?",
                    "tools": [
                        f.tool_use("grep"),
                        f.tool_use("read_file", lines=70),
                        f.tool_use("bash", lines=40),
                    ],
                    "fallback_title": True,
                    "title": "Fix the flaky checkout test",
                },
                {
                    "user": "Good catch. Make the fix and run the whole test module.",
                    "tools": [f.tool_use("edit"), f.tool_use("bash")],
                },
                {
                    "user": "Ask a subagent to check whether other tests share that fixture.",
                    "tools": [spawn],
                },
                {
                    "user": "Now also refactor the whole payment module while you're at it.",
                    "reason": "aborted",
                    "tools": 1,
                },
                {
                    "user": "Fork a subagent that reviews the diff with the full context of "
                    "this session.",
                    "tools": [fork_call],
                },
                {"user": "Thanks. Summarise what changed for the PR description.", "tools": 0},
            ],
        )
        self.write("root", self.header(sid, created, _SHOP), root)

        # A child a subagent tool spawned with a fresh log: lineage, nothing inherited.
        spawned_at = self.time_of(root, "tool/call", "subagent")
        child: list[SessionEvent] = [
            SessionEvent(
                "approval/policy", 0, spawned_at, {"policy": "never", "source": "delegation"}
            )
        ]
        label = spawn.arguments["description"]
        self.grow(
            child,
            f,
            spawned_at + 5,
            1,
            [
                {
                    "user": spawn.arguments["prompt"],
                    "tools": [f.tool_use("grep", lines=12), f.tool_use("read_file")],
                    "lead_in": [
                        (
                            "subagent/descriptor",
                            {"version": 2, "mode": "one-shot", "provider": "spawn", "label": label},
                        )
                    ],
                    "fallback_title": True,
                    "answer": spawn.result,
                }
            ],
        )
        header = SessionHeader(
            id=f.new_id(),
            created_at=spawned_at,
            cwd=_SHOP,
            parent_session=sid,
            origin="subagent",
            delegation_depth=1,
        )
        self.write("subagent-spawned", header, child)

        # A subagent fork: seeded with the parent's prefix through turn 4's end.
        forked_at = self.time_of(root, "tool/call", "subagent_fork")
        seed_length = self.turn_end(root, 4) + 1
        seeded = [e.deep_copy() for e in root[:seed_length]]
        seeded.append(SessionEvent("session/end-seed", seed_length, forked_at, {}))
        self.grow(
            seeded,
            f,
            forked_at + 5,
            5,
            [
                {
                    "user": fork_call.arguments["prompt"],
                    "tools": [f.tool_use("bash"), f.tool_use("grep")],
                    "lead_in": [
                        (
                            "subagent/descriptor",
                            {"version": 2, "mode": "one-shot", "provider": "fork"},
                        )
                    ],
                    "answer": fork_call.result,
                }
            ],
        )
        header = SessionHeader(
            id=f.new_id(),
            created_at=forked_at,
            cwd=_SHOP,
            parent_session=sid,
            seed_length=seed_length,
            origin="subagent",
            delegation_depth=1,
        )
        self.write("subagent-fork", header, seeded)

        # User forks, three levels deep, each made by the core's fork at a turn/end.
        created = t + rng.randint(60_000, 300_000)
        header, events, seed_bytes = self.fork("fork", "root", self.turn_end(root, 2), created)
        t = self.grow(
            events,
            f,
            created + 2000,
            3,
            [
                {
                    "user": "Try an async fixture instead of the lock.",
                    "reason": "error",
                    "tools": 1,
                },
                {
                    "user": "The provider is back, retry that.",
                    "tools": [f.tool_use("edit"), f.tool_use("bash", lines=30)],
                    "title": "Flaky checkout: async fixture variant",
                },
            ],
        )
        self.write("fork", header, events, prefix=seed_bytes)

        created = t + rng.randint(60_000, 300_000)
        header, events, seed_bytes = self.fork(
            "fork-of-fork", "fork", self.turn_end(events, 4), created
        )
        bench = f.tool_use("subagent")
        t = self.grow(
            events,
            f,
            created + 2000,
            5,
            [
                {
                    "user": "Write a long design note on the locking strategy for the wiki.",
                    "reason": "max-tokens",
                    "text_words": 160,
                    "tools": 0,
                },
                {
                    "user": "Shorter, please, and have a subagent benchmark both variants.",
                    "tools": [bench],
                    "title": "Design note: locking vs async fixture",
                },
            ],
        )
        self.write("fork-of-fork", header, events, prefix=seed_bytes)
        parent_id = header.id
        spawned_at = self.time_of(events, "tool/call", "subagent")
        child = []
        self.grow(
            child,
            f,
            spawned_at + 5,
            1,
            [
                {
                    "user": bench.arguments["prompt"],
                    "tools": [f.tool_use("bash", lines=20)],
                    "fallback_title": True,
                    "answer": bench.result,
                }
            ],
        )
        header = SessionHeader(
            id=f.new_id(),
            created_at=spawned_at,
            cwd=_SHOP,
            parent_session=parent_id,
            origin="subagent",
            delegation_depth=1,
        )
        self.write("subagent-of-fork", header, child)

        created = t + rng.randint(60_000, 300_000)
        header, events, seed_bytes = self.fork(
            "fork-of-fork-of-fork", "fork-of-fork", self.turn_end(events, 6), created
        )
        self.grow(
            events,
            f,
            created + 2000,
            7,
            [
                {
                    "user": "Apply the design note to app/orders.py as well.",
                    "reason": "interrupted",
                    "tools": 2,
                }
            ],
        )
        self.write("fork-of-fork-of-fork", header, events, prefix=seed_bytes)

    def shop_others(self) -> None:
        f = self.factory(_SHOP)
        created = self.now - 9 * _HOUR
        events: list[SessionEvent] = []
        self.grow(
            events,
            f,
            created + 1000,
            1,
            [
                {
                    "user": "Add cursor pagination to GET /orders.",
                    "tools": [f.tool_use("read_file", lines=120), f.tool_use("grep", lines=30)],
                    "fallback_title": True,
                    "title": "Paginate GET /orders",
                },
                {
                    "user": "Now the tests.",
                    "tools": [f.tool_use("edit"), f.tool_use("bash", lines=45)],
                },
                {"user": "Update the OpenAPI description too.", "tools": 1},
            ],
        )
        self.write("pagination", self.header(f.new_id(), created, _SHOP), events)

        # An agent that died mid-write: its last line has no newline (a torn tail).
        created = self.now - 5 * _HOUR
        events = []
        t = self.grow(
            events,
            f,
            created + 1000,
            1,
            [
                {
                    "user": "Bump the dependencies and check that nothing breaks.",
                    "tools": 2,
                    "fallback_title": True,
                },
                {"user": "pytest-asyncio broke, pin it.", "tools": 2, "close": False},
            ],
        )
        steps = [e.data["step"] for e in events if e.type == "step/start"]
        more = f.continuation(len(events), t, 2, next_step=steps[-1] + 1, reason="completed")
        line = next(iter(encode_records(list(more.events[:1]))))
        self.write(
            "torn-tail",
            self.header(f.new_id(), created, _SHOP),
            events,
            tail=line[: len(line) // 2],
        )

    def turnline_sessions(self) -> Path:
        f = self.factory(_TURNLINE)
        created = self.now - 7 * _HOUR
        events: list[SessionEvent] = []
        self.grow(
            events,
            f,
            created + 1000,
            1,
            [
                {
                    "user": "Session titles come straight from the logs. Make sure the tree "
                    "shows them as typed.",
                    "tools": [f.tool_use("read_file", lines=50)],
                    "fallback_title": True,
                    "title": MARKUP_TITLE,
                },
                {
                    "user": "A title like [bold]x[/] or [link=file:///etc/passwd]y[/link] "
                    "must show the brackets; so must \x1b[2Jthis escape.",
                    "tools": [f.tool_use("grep"), f.tool_use("edit"), f.tool_use("bash")],
                },
            ],
        )
        self.write("markup-title", self.header(f.new_id(), created, _TURNLINE), events)

        # Written by a newer harness: a header version this reader does not know.
        created = self.now - 6 * _HOUR
        events = []
        self.grow(
            events,
            f,
            created + 1000,
            1,
            [
                {
                    "user": "Profile the timeline builder on the 2 GB log.",
                    "tools": [f.tool_use("bash", lines=25)],
                    "title": "Profile TimelineBuilder",
                },
                {"user": "Is the LRU cache helping?", "tools": 1},
            ],
        )
        header = SessionHeader(
            id=f.new_id(),
            created_at=created,
            version=NEWEST_VERSION + 1,  # a format newer than turnline reads
            cwd=_TURNLINE,
            delegation_depth=0,
        )
        self.write("foreign-version", header, events, checked=False)

        # The live session: its last turn is open; LiveWriter continues it.
        created = self.now - 40 * 60_000
        events = []
        self.grow(
            events,
            f,
            created + 1000,
            1,
            [
                {
                    "user": "Watch the session directory and show appends live.",
                    "tools": 2,
                    "title": "Live view of appended turns",
                },
                {"user": "Now debounce the refresh.", "tools": 2, "steps": 2, "close": False},
            ],
        )
        return self.write("live", self.header(f.new_id(), created, _TURNLINE), events)

    def infra_sessions(self) -> None:
        f = self.factory(_INFRA)
        created = self.now - 50 * _HOUR
        events: list[SessionEvent] = []
        self.grow(
            events,
            f,
            created + 1000,
            1,
            [
                {
                    "user": "Rotate the TLS certificates on staging.",
                    "tools": [f.tool_use("read_file"), f.tool_use("bash", lines=35)],
                    "title": "Rotate staging TLS certificates",
                },
                {
                    "user": "Explain every step of the playbook in detail.",
                    "reason": "max-tokens",
                    "text_words": 200,
                    "tools": 0,
                },
                {"user": "Just the summary then.", "tools": 0},
            ],
        )
        self.write("certs", self.header(f.new_id(), created, _INFRA), events)

        # Seqs that jump inside turn 2 (a log an old tool renumbered).
        created = self.now - 28 * _HOUR
        events = []
        self.grow(
            events,
            f,
            created + 1000,
            1,
            [
                {
                    "user": "Why did the nightly backup fail on Tuesday?",
                    "tools": [f.tool_use("bash", lines=40)],
                    "title": "Nightly backup failure",
                },
                {"user": "Check the restic repository lock.", "tools": 2},
                {"user": "Write that up for the incident channel.", "tools": 0},
            ],
        )
        end1 = self.turn_end(events, 1)
        cut = (end1 + self.turn_end(events, 2)) // 2
        gapped = events[:cut] + [e.with_seq(e.seq + 3) for e in events[cut:]]
        self.write("seq-gap", self.header(f.new_id(), created, _INFRA), gapped, checked=False)

        # A fork whose parent is no longer under the root (deleted, or another machine's).
        created = self.now - 20 * _HOUR
        absent = f.new_id()
        events = []
        t = self.grow(
            events,
            f,
            created - 3 * _HOUR,
            1,
            [
                {
                    "user": "Migrate the internal CA to Vault PKI.",
                    "tools": 2,
                    "fallback_title": True,
                }
            ],
        )
        seed_length = len(events)
        self.grow(
            events,
            f,
            max(t, created + 1000),
            2,
            [
                {
                    "user": "Retry the migration with the intermediate CA only.",
                    "tools": 2,
                    "title": "Retry the Vault PKI migration",
                }
            ],
        )
        header = self.header(
            f.new_id(), created, _INFRA, parent_session=absent, seed_length=seed_length
        )
        self.write("missing-parent", header, events)

    def no_cwd_session(self) -> None:
        f = self.factory(None)
        created = self.now - 3 * _HOUR
        events: list[SessionEvent] = []
        self.grow(
            events,
            f,
            created + 1000,
            1,
            [
                {
                    "user": "Explain git rebase --onto with an example.",
                    "tools": 0,
                    "answer": "`git rebase --onto <newbase> <upstream> <branch>` replays the "
                    "commits of <branch> that are not in <upstream> on top of <newbase>.\n\n"
                    "Example: `feature` was branched from `topic`, but you want it on `main` "
                    "without topic's commits:\n\n"
                    "    git rebase --onto main topic feature\n\n"
                    "Only the commits after `topic` move; `topic` itself stays where it is.",
                },
                {
                    "user": "And how do I undo it if it goes wrong?",
                    "tools": 0,
                    "answer": "Use the reflog: `git reflog feature` shows where the branch was "
                    "before the rebase, then `git reset --hard feature@{1}` puts it back. "
                    "`ORIG_HEAD` also points at the old tip right after the rebase.",
                },
            ],
        )
        self.write("no-cwd", self.header(f.new_id(), created, None), events)


def build_demo_root(dest: Path, *, seed: int = 7, now_ms: int | None = None) -> DemoRoot:
    """Write a generated demo root into `dest` (created if missing; must be empty).

    Args:
        dest: The folder to fill.
        seed: Drives every generated id, text and size.
        now_ms: The time the demo pretends it is (epoch ms); None: the wall clock.
            With a fixed `now_ms` two builds are byte-identical.

    Raises:
        FileExistsError: `dest` is not empty.
        OSError: the folder cannot be written.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty; the demo needs a fresh folder")
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return _DemoBuilder(dest, seed, now).build()


# -- the live writer --------------------------------------------------------------------

#: How often each reason ends a live turn (mostly completed, like real use).
_LIVE_REASONS: Final = ("completed",) * 6 + ("max-tokens", "aborted", "error")


class LiveWriter(threading.Thread):
    """A daemon thread that keeps appending turns to one log, as an agent would.

    Each turn goes out in a few whole-line batches (lead-in, each model step, the
    tool results, the `turn/end`), `interval / 2` seconds apart, with `interval`
    seconds between turns, so a watcher sees a turn open and then become forkable.
    An open turn the log already has is finished first. `stop()` ends the thread
    promptly; a turn it interrupts is closed with an `interrupted` `turn/end`, so
    the log is never left mid-record.

    Args:
        path: The log to append to (raw or zstd); it must have a header and whole,
            contiguous events.
        interval: Seconds between turns.
        seed: Drives the generated content.

    Raises:
        ValueError: the log cannot safely be appended to.
    """

    def __init__(self, path: Path, *, interval: float = 1.2, seed: int = 11) -> None:
        super().__init__(name="turnline-live-writer", daemon=True)
        self.path = Path(path)
        self.interval = interval
        #: The I/O error that ended the thread early, if any.
        self.error: OSError | None = None
        #: Batches appended so far.
        self.appends = 0
        self._halt = threading.Event()
        contents = read_log(self.path)
        if contents.header is None:
            raise ValueError(f"{self.path} has no session header")
        if contents.problems and any(
            p.kind not in (ProblemKind.MISSING_VERSION, ProblemKind.FOREIGN_VERSION)
            for p in contents.problems
        ):
            kinds = ", ".join(sorted({str(p.kind) for p in contents.problems}))
            raise ValueError(f"{self.path} has problems ({kinds}); appending would hide them")
        self._encoding = encoding_of(self.path) or Encoding.RAW
        self._factory = TurnFactory(random.Random(seed), cwd=contents.header.cwd)
        self._seq = len(contents.events)
        self._last_time = max((int(e.time) for e in contents.events), default=0)
        self._turn = 0
        self._turn_open = False
        self._step = 0
        self._step_open = False
        self._observe(contents.events)

    def _observe(self, events: Sequence[SessionEvent]) -> None:
        for event in events:
            data = event.data if isinstance(event.data, dict) else {}
            if event.type == TURN_START:
                number = data.get("turn")
                self._turn = number if isinstance(number, int) else self._turn + 1
                self._turn_open, self._step, self._step_open = True, 0, False
            elif event.type == TURN_END:
                number = data.get("turn")
                if isinstance(number, int):
                    self._turn = max(self._turn, number)
                self._turn_open = self._step_open = False
            elif event.type == "step/start":
                step = data.get("step")
                self._step = step if isinstance(step, int) else self._step + 1
                self._step_open = True
            elif event.type == "step/end":
                self._step_open = False

    @property
    def turn_open(self) -> bool:
        """Whether the log currently ends inside a turn."""
        return self._turn_open

    def stop(self, timeout: float = 5.0) -> None:
        """Stop appending and wait for the thread (closing an interrupted turn first)."""
        self._halt.set()
        if self.ident is not None and threading.current_thread() is not self:
            self.join(timeout)

    def run(self) -> None:
        try:
            if self._turn_open:
                gen = self._factory.continuation(
                    self._seq,
                    self._now(),
                    self._turn,
                    next_step=self._step + 1,
                    open_step=self._step_open,
                )
                if not self._write(gen):
                    return
            while not self._halt.wait(self.interval):
                rng = self._factory.rng
                gen = self._factory.turn(
                    self._seq,
                    self._now(),
                    self._turn + 1,
                    reason=rng.choice(_LIVE_REASONS),
                    initial=False,
                )
                if not self._write(gen):
                    return
        except OSError as exc:
            self.error = exc
        finally:
            if self._turn_open and self.error is None:
                step = self._step if self._step_open else None
                gen = self._factory.closing(
                    self._seq, self._now(), self._turn, open_step=step, reason="interrupted"
                )
                try:
                    self._append(gen.events)
                except OSError as exc:
                    self.error = exc

    def _now(self) -> int:
        return int(time.time() * 1000)

    def _write(self, gen: GeneratedTurn) -> bool:
        """Append a turn batch by batch; False if stopped in between."""
        for k, batch in enumerate(gen.batch_events()):
            if k and self._halt.wait(self.interval / 2):
                return False
            self._append(batch)
        return True

    def _append(self, batch: Sequence[SessionEvent]) -> None:
        # Generated times are relative. The batch ends now: its events keep their
        # generated spacing back from now, but never go back before the previous event,
        # so the log's times follow the clock instead of running ahead of it by each
        # turn's generated length.
        now = self._now()
        last_generated = int(batch[-1].time)
        events = []
        previous = self._last_time
        for e in batch:
            stamped = max(previous, now - (last_generated - int(e.time)))
            events.append(SessionEvent(e.type, e.seq, stamped, e.data, e.extra))
            previous = stamped
        append_events(self.path, events, self._encoding)
        self.appends += 1
        self._seq = events[-1].seq + 1
        self._last_time = int(events[-1].time)
        self._observe(events)
