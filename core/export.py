"""A session as Markdown or HTML, to share, paste into a pull request or an LLM prompt.

Every piece of log text passes `textsafe.safe_text` (no terminal escapes, no bidi
overrides) and, in HTML, `html.escape`: a `<script>` in a user message stays text. The
HTML is one self-contained file: inline CSS, no scripts, no network fetches, `<details>`
for the folded parts (reasoning, tool results).

Writing to a file (`write_export`) is atomic: a temporary file in the target's folder,
fsync, then a link to the final name that never overwrites (`replace=True` renames over
the user's own earlier export instead), then a folder fsync. The temporary is removed on
every path, failures included.
"""

from __future__ import annotations

import contextlib
import html
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import msgspec

from .clipped import Clipped
from .content import (
    AssistantText,
    Block,
    ContextText,
    Reasoning,
    StepUsage,
    TokenUsage,
    ToolCall,
    TurnError,
    UserText,
    header_model,
    turn_blocks,
)
from .formats import seed_seqs_note
from .longline import full_text
from .model import SessionEvent
from .root import LoadedSession
from .textsafe import UNSAFE_CODEPOINTS, one_line, safe_text
from .timeline import Turn

FORMATS = ("md", "html")
#: Tool results longer than this are cut, with a note saying how much was left out.
RESULT_LIMIT = 2000


class ExportError(Exception):
    """An export that cannot be written (the target exists, the folder is missing...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ForkPoint(msgspec.Struct, frozen=True):
    """Where a child left its parent: the last inherited turn and its `turn/end` seq."""

    parent: str
    turn: int | None
    seq: int
    #: Which log `seq` is of, when not the parent's log the root shows
    #: (`formats.seed_seqs_note`: " of its session.jsonl", " in this log's seqs").
    seqs_note: str = ""


class TurnDoc(msgspec.Struct, frozen=True):
    """One turn's blocks, ready to render."""

    turn: Turn
    blocks: tuple[Block, ...]


class SessionDoc(msgspec.Struct, frozen=True):
    """What an export shows of one session."""

    title: str
    session_id: str
    cwd: str | None
    fork: ForkPoint | None
    models: tuple[str, ...]
    tokens: TokenUsage
    turns: tuple[TurnDoc, ...]
    inherited: int  # turns left out by --own-only


def fork_point(loaded: LoadedSession) -> ForkPoint | None:
    """The parent and fork point of a child (None for a session with no parent)."""
    parent = loaded.summary.parent_session
    if parent is None:
        return None
    seed = loaded.timeline.seed_length
    last = [t for t in loaded.timeline.turns if t.first_seq < seed]
    header = loaded.summary.header
    note = (
        ""
        if loaded.parent_path is None or header is None
        else seed_seqs_note(loaded.parent_path, header.version)
    )
    return ForkPoint(parent, last[-1].number if last else None, max(seed - 1, 0), note)


def build(loaded: LoadedSession, *, own_only: bool = False) -> SessionDoc:
    """The export's content of a loaded session."""
    seed = loaded.timeline.seed_length
    models: dict[str, None] = {}
    tokens = TokenUsage()
    turns: list[TurnDoc] = []
    inherited = 0
    model: str | None = None
    for event in loaded.events_between(0, None):
        if event.type == "request/header":
            model = header_model(event)
            if model:
                models.setdefault(model, None)
    for turn in loaded.timeline.turns:
        own = turn.first_seq >= seed
        if own_only and not own:
            inherited += 1
            continue
        blocks = tuple(turn_blocks(loaded.events_between(turn.first_seq, turn.end_seq)))
        for block in blocks:
            if isinstance(block, StepUsage):
                tokens = tokens + block.usage
                if block.model:
                    models.setdefault(block.model, None)
        turns.append(TurnDoc(turn, blocks))
    summary = loaded.summary
    return SessionDoc(
        title=loaded.timeline.title or summary.title or summary.id,
        session_id=summary.id,
        cwd=summary.cwd,
        fork=fork_point(loaded),
        models=tuple(models),
        tokens=tokens,
        turns=tuple(turns),
        inherited=inherited,
    )


def _truncate(text: str, limit: int | None = RESULT_LIMIT) -> tuple[str, str | None]:
    if limit is None or len(text) <= limit:
        return text, None
    return text[:limit], f"truncated: {len(text) - limit} more characters"


def _fork_line(fork: ForkPoint) -> str:
    turn = "the start" if fork.turn is None else f"turn {fork.turn}"
    return f"forked from {fork.parent} at {turn} (seq {fork.seq}{fork.seqs_note})"


def _tokens_line(tokens: TokenUsage) -> str:
    return (
        f"{tokens.total} tokens (input {tokens.input_tokens}, output {tokens.output_tokens}, "
        f"cache read {tokens.cache_read_tokens}, cache write {tokens.cache_write_tokens})"
    )


# -- Markdown ------------------------------------------------------------------------


# Log content is shown as it is written, as the HTML export shows it (in `<pre>`):
# nothing in it is Markdown or HTML to a renderer. Text goes in fences longer than any
# backtick run inside it, a name in a code span likewise, and a line of prose (a title,
# an error) has each character backslash-escaped that could open a tag, an entity, a
# code span, a link or an emphasis (CommonMark: `\<` is a literal `<`).


def _md_text(text: str) -> str:
    return safe_text(text, keep_newlines=True)


def _md_line(text: str) -> str:
    """One line of untrusted prose, every character literal to a Markdown renderer."""
    return _PUNCTUATION.sub(r"\\\g<0>", one_line(text))


#: What `_md_line` escapes (CommonMark lets a backslash escape any ASCII punctuation).
_PUNCTUATION = re.compile(r"[\\`*_\[\]<>&]")


def _code(text: str) -> str:
    """An untrusted name as a code span: its delimiter is longer than any backtick run
    in it (padded with a space where it begins or ends with a backtick)."""
    text = one_line(text)
    ticks = "`" * (max((len(m) for m in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fence(text: str, lang: str = "") -> str:
    runs = [len(m) for m in re.findall(r"`{3,}", text)]
    ticks = "`" * max([3, *(n + 1 for n in runs)])
    return f"{ticks}{lang}\n{text}\n{ticks}"


def to_markdown(doc: SessionDoc) -> str:
    """The session as Markdown."""
    out = [f"# {_md_line(doc.title)}", ""]
    out.append(f"- id: {_code(doc.session_id)}")
    if doc.cwd:
        out.append(f"- cwd: {_code(doc.cwd)}")
    if doc.fork is not None:
        out.append(f"- {_md_line(_fork_line(doc.fork))}")
    if doc.models:
        out.append("- models: " + ", ".join(_code(m) for m in doc.models))
    out.append(f"- totals: {_tokens_line(doc.tokens)}")
    out.append("")
    if doc.inherited and doc.fork is not None:
        out += [f"*{_md_line(_fork_line(doc.fork))}*", ""]
    for td in doc.turns:
        out += _md_turn(td)
    return "\n".join(out).rstrip("\n") + "\n"


def _md_turn(td: TurnDoc, result_limit: int | None = RESULT_LIMIT) -> list[str]:
    turn = td.turn
    out = [f"## Turn {turn.number}", ""]
    for block in td.blocks:
        if isinstance(block, UserText):
            out += ["**User**", "", _fence(_md_text(block.text)), ""]
        elif isinstance(block, ContextText):
            out += [f"**Context** ({_md_line(block.source)})", "", _fence(_md_text(block.text)), ""]
        elif isinstance(block, AssistantText):
            out += ["**Assistant**", "", _fence(_md_text(block.text)), ""]
        elif isinstance(block, Reasoning):
            out += [
                "<details><summary>Reasoning</summary>",
                "",
                _fence(_md_text(block.text)),
                "",
                "</details>",
                "",
            ]
        elif isinstance(block, ToolCall):
            out += [f"**Tool call** {_code(block.name)}", ""]
            out += [_fence(_md_text(block.arguments_text), "json"), ""]
            result = block.result
            if result is None:
                out += ["*(no result)*", ""]
            else:
                text, note = _truncate(_md_text(result.text), result_limit)
                label = "Error result" if result.is_error else "Result"
                out += [f"<details><summary>{label}</summary>", "", _fence(text), ""]
                if note:
                    out += [f"*({_md_line(note)})*", ""]
                out += ["</details>", ""]
        elif isinstance(block, TurnError):
            out += [f"**Error**: {_md_line(block.message)}", ""]
    reason = turn.reason + (f": {turn.detail}" if turn.detail else "")
    out += [f"*turn/end: {_md_line(reason)}*", ""]
    return out


# -- HTML ----------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
line-height:1.45;color:#222}
pre{background:#f5f5f5;padding:.6rem;overflow-x:auto;white-space:pre-wrap}
.user{border-left:4px solid #3a7;padding-left:.6rem}
.error{color:#b00}
.reason{color:#666;font-style:italic}
section.turn{border-top:1px solid #ddd;margin-top:1.2rem}
"""


def _h(text: str) -> str:
    return html.escape(safe_text(text, keep_newlines=True), quote=True)


def _h1(text: str) -> str:
    return html.escape(one_line(text), quote=True)


def to_html(doc: SessionDoc) -> str:
    """The session as one self-contained HTML page."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">",
        f"<title>{_h1(doc.title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{_h1(doc.title)}</h1>",
        "<ul>",
        f"<li>id: <code>{_h1(doc.session_id)}</code></li>",
    ]
    if doc.cwd:
        out.append(f"<li>cwd: <code>{_h1(doc.cwd)}</code></li>")
    if doc.fork is not None:
        out.append(f"<li>{_h1(_fork_line(doc.fork))}</li>")
    if doc.models:
        out.append(
            "<li>models: " + ", ".join(f"<code>{_h1(m)}</code>" for m in doc.models) + "</li>"
        )
    out.append(f"<li>totals: {_h1(_tokens_line(doc.tokens))}</li>")
    out.append("</ul>")
    if doc.inherited and doc.fork is not None:
        out.append(f'<p class="reason">{_h1(_fork_line(doc.fork))}</p>')
    for td in doc.turns:
        out += _html_turn(td)
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


def _html_turn(td: TurnDoc) -> list[str]:
    turn = td.turn
    out = ['<section class="turn">', f"<h2>Turn {turn.number}</h2>"]
    for block in td.blocks:
        if isinstance(block, UserText):
            out.append(f'<div class="user"><strong>User</strong><pre>{_h(block.text)}</pre></div>')
        elif isinstance(block, ContextText):
            out.append(
                f"<details><summary>Context ({_h1(block.source)})</summary>"
                f"<pre>{_h(block.text)}</pre></details>"
            )
        elif isinstance(block, AssistantText):
            out.append(f"<div><strong>Assistant</strong><pre>{_h(block.text)}</pre></div>")
        elif isinstance(block, Reasoning):
            out.append(
                f"<details><summary>Reasoning</summary><pre>{_h(block.text)}</pre></details>"
            )
        elif isinstance(block, ToolCall):
            out.append(f"<div><strong>Tool call</strong> <code>{_h1(block.name)}</code>")
            out.append(f"<pre>{_h(block.arguments_text)}</pre>")
            result = block.result
            if result is None:
                out.append("<p><em>(no result)</em></p>")
            else:
                text, note = _truncate(safe_text(result.text, keep_newlines=True))
                label = "Error result" if result.is_error else "Result"
                extra = f"<p><em>({_h1(note)})</em></p>" if note else ""
                out.append(
                    f"<details><summary>{label}</summary><pre>{_h(text)}</pre>{extra}</details>"
                )
            out.append("</div>")
        elif isinstance(block, TurnError):
            out.append(f'<p class="error">Error: {_h1(block.message)}</p>')
    reason = turn.reason + (f": {turn.detail}" if turn.detail else "")
    out += [f'<p class="reason">turn/end: {_h1(reason)}</p>', "</section>"]
    return out


RENDERERS: dict[str, Callable[[SessionDoc], str]] = {"md": to_markdown, "html": to_html}


def export(loaded: LoadedSession, fmt: str, *, own_only: bool = False) -> str:
    """A loaded session as `fmt` (`md` or `html`)."""
    if fmt not in RENDERERS:
        raise ExportError("BAD_FORMAT", f"unknown format {fmt!r} (use md or html)")
    return RENDERERS[fmt](build(loaded, own_only=own_only))


def turn_markdown(loaded: LoadedSession, turn: Turn) -> str:
    """One turn as Markdown (what `o` opens in the pager)."""
    blocks = tuple(turn_blocks(loaded.events_between(turn.first_seq, turn.end_seq)))
    return "\n".join(_turn_head(loaded, turn) + _md_turn(TurnDoc(turn, blocks))).rstrip("\n") + "\n"


def _turn_head(loaded: LoadedSession, turn: Turn) -> list[str]:
    title = _md_line(loaded.timeline.title or loaded.summary.id)
    return [f"# {title}: turn {turn.number}", "", f"- id: {_code(loaded.summary.id)}", ""]


def write_turn_markdown(
    loaded: LoadedSession,
    turn: Turn,
    out: TextIO,
    events: Sequence[SessionEvent] | None = None,
) -> None:
    """One turn as Markdown, every field whole (tool results too): what `o` opens in
    the pager. The turn is read bounded (`events_between(bounded=True)`, or `events`
    read so) and each field too long to hold (a `clipped.Clipped`) is copied from the
    log to `out` window by window (`longline.full_text`), never held whole."""
    if events is None:
        events = loaded.events_between(turn.first_seq, turn.end_seq, bounded=True)
    nonce = os.urandom(6).hex()  # (`secrets.token_hex`, without loading `secrets`)
    fields: dict[str, Clipped] = {}

    def mark(text: str) -> str:
        if not isinstance(text, Clipped):
            return text
        # The token holds the field's longest run of backticks, so that its fence
        # (`_fence`) is longer than any the whole field holds.
        token = f"\ue000{nonce}.{len(fields)}.{'`' * _longest_backticks(text)}\ue001"
        fields[token] = text
        return token

    blocks: list[Block] = []
    for block in turn_blocks(events):
        if isinstance(block, (UserText, ContextText, AssistantText, Reasoning)):
            block = msgspec.structs.replace(block, text=mark(block.text))
        elif isinstance(block, ToolCall):
            result = block.result
            if result is not None:
                result = msgspec.structs.replace(result, text=mark(result.text))
            block = msgspec.structs.replace(
                block, arguments_text=mark(block.arguments_text), result=result
            )
        blocks.append(block)
    lines = _turn_head(loaded, turn) + _md_turn(TurnDoc(turn, tuple(blocks)), result_limit=None)
    text = "\n".join(lines).rstrip("\n") + "\n"
    if not fields:
        out.write(text)
        return
    for piece in re.split(f"(\ue000{nonce}\\.\\d+\\.`*\ue001)", text):
        clipped = fields.get(piece)
        if clipped is None:
            out.write(piece)
            continue
        for chunk in full_text(clipped):
            out.write(_md_chunk(chunk))


def _longest_backticks(clipped: Clipped) -> int:
    """The longest run of backticks in a field too long to hold, read window by window
    (a run may span two windows)."""
    longest = run = 0
    for chunk in full_text(clipped):
        for match in re.finditer("`+", chunk):
            start, end = match.span()
            run = run + (end - start) if start == 0 else end - start
            longest = max(longest, run)
        if not chunk.endswith("`"):
            run = 0
    return longest


#: What `safe_text(…, keep_newlines=True)` removes (every unsafe character but `\n`).
_UNSAFE_BUT_NEWLINE = re.compile(
    "[" + "".join(f"\\u{c:04x}" for c in sorted(UNSAFE_CODEPOINTS) if c != 0x0A) + "]"
)


def _md_chunk(text: str) -> str:
    """`_md_text` for a window of a long field, in C speed: `safe_text(text,
    keep_newlines=True)` gives the same text (lone surrogates are U+FFFD already)."""
    text = text.replace("\r\n", "\n").replace("\t", "    ")
    return _UNSAFE_BUT_NEWLINE.sub("", text)


def write_export(
    target: Path,
    text: str,
    *,
    replace: bool = False,
    _fault: Callable[[str], None] = lambda _step: None,
) -> Path:
    """Write `text` to `target` atomically; never leaves a temporary behind.

    Raises:
        ExportError: EXISTS (the target exists and `replace` is False), WRITE_FAILED.
    """
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise ExportError("WRITE_FAILED", f"no folder {folder} to write {target.name} into")
    if target.exists() and not replace:
        raise ExportError("EXISTS", f"{target} exists; choose another name (or --force)")
    if target.is_dir():
        raise ExportError("WRITE_FAILED", f"{target} is a folder")
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        try:
            with os.fdopen(fd, "wb") as stream:
                stream.write(text.encode("utf-8"))
                _fault("write")
                stream.flush()
                os.fsync(stream.fileno())
            os.chmod(temp, 0o644)
            if replace:
                os.replace(temp, target)
            else:
                os.link(temp, target)  # fails if the target appeared meanwhile
        except FileExistsError as exc:
            raise ExportError("EXISTS", f"{target} exists; choose another name") from exc
        except OSError as exc:
            raise ExportError(
                "WRITE_FAILED", f"cannot write {target}: {exc.strerror or exc}"
            ) from exc
        _fsync_folder(folder)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    return target


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
