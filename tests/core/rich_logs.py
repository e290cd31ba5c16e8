"""Sessions with every kind of block (and hostile text), for compare, export and the app."""

from __future__ import annotations

from pathlib import Path

from turnline.core.model import SessionHeader
from turnline.core.root import SessionRoot

from .disk_logs import as_events, event, write_log

HOSTILE = "[bold red]x[/] <script>alert(1)</script> \x1b[31mred\x1b]0;title\x07 & ``` end"


def rich_turn(
    start: int, n: int, text: str, *, path: str = "src/app.py"
) -> list[dict[str, object]]:
    """One closed turn of 8 events: user text, model, reasoning, a file edit with diffs."""
    return [
        event(start, "turn/start", turn=n),
        event(
            start + 1,
            "user/message",
            role="user",
            content=[{"type": "text", "text": f"question {n}: {text}"}],
            source={"kind": "user"},
        ),
        event(start + 2, "request/header", header={"config": {"provider": "ds", "model": "m1"}}),
        event(start + 3, "step/start", turn=n, step=1),
        event(
            start + 4,
            "assistant/message",
            turn=n,
            step=1,
            message={
                "content": [
                    {"type": "reasoning", "text": f"thinking {n} {text}"},
                    {"type": "text", "text": f"answer {n}: {text}"},
                ]
            },
            usage={"inputTokens": 10 * n, "outputTokens": n},
        ),
        event(
            start + 5,
            "tool/call",
            step=1,
            callId=f"c{n}",
            name="edit",
            arguments=f'{{"file_path": "{path}", "old_string": "a", "new_string": "b"}}',
        ),
        event(
            start + 6,
            "tool/result",
            message={
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": f"c{n}",
                        "content": [{"type": "text", "text": f"edited {text} " + "y" * 2500}],
                    }
                ]
            },
            meta={"diffs": [{"path": path, "oldText": "a", "newText": "b"}]},
        ),
        event(start + 7, "turn/end", turn=n, reason={"kind": "completed"}),
    ]


def rich_parent(
    root: Path, *, turns: int = 2, zstd: bool = False, text: str = HOSTILE, sid: str = "parent-1"
) -> Path:
    """A parent with `turns` rich turns (8 events each) at cwd /home/dev/app."""
    header = SessionHeader(id=sid, created_at=1, cwd="/home/dev/app", delegation_depth=0)
    records = [r for n in range(turns) for r in rich_turn(8 * n, n + 1, text)]
    return write_log(root, header, as_events(records), zstd=zstd)


def append_turns(path: Path, first_seq: int, numbers: range, text: str, file: str) -> None:
    """Append rich turns to a raw log (a child's own turns after its seed)."""
    import orjson

    seq = first_seq
    with path.open("ab") as stream:
        for n in numbers:
            for record in rich_turn(seq, n, text, path=file):
                stream.write(orjson.dumps(record) + b"\n")
            seq += 8


def forked_pair(tmp_path: Path) -> SessionRoot:
    """parent-1 (2 turns), and two children forked after turn 1 that each did their own
    turns: `left` one turn on src/left.py, `right` two turns on src/right.py."""
    rich_parent(tmp_path)
    root = SessionRoot(tmp_path)
    root.scan()
    for child, turns, file in (
        ("left", range(2, 3), "src/left.py"),
        ("right", range(2, 4), "src/right.py"),
    ):
        result = root.fork("parent-1", 7, child)
        # seedLength 8, the end-seed marker (if any) at 8: own turns start after it.
        loaded = root.load(result.child)
        start = (loaded.events[-1].seq + 1) if loaded.events else 8
        append_turns(result.child.path, start, turns, f"{child} work", file)
        root.scan()
    return root
