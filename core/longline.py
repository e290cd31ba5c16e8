"""Record lines too long to hold whole, decoded with bounded memory.

A dsh log can hold a 200 MB tool result on one line. Decoding it whole costs the line's
bytes, the decoded `str` and the parsed dict: gigabytes of memory and seconds of CPU, to
show the first screen of it. So a line of `LONG_LINE` bytes or more is read here in
windows (`WINDOW` bytes at a time, from the file or from a streaming zstd decompressor)
and decoded into a *bounded* value:

- every string literal up to `CLIP_BYTES` long is kept as it is; together with the
  numbers, keys and brackets it makes the line's *skeleton*, which is decoded by the one
  JSON rule (`records.loads`), so types, seqs, times, names, ids and small fields are
  exactly what a full decode gives;
- a longer string literal is scanned, never built: its first `PREFIX_CHARS` characters
  are decoded (JSON escapes, surrogate pairs, UTF-8 sequences cut at a window edge; a
  lone surrogate escape becomes U+FFFD) and the rest is only counted and validated, in
  C (one regular expression, one incremental UTF-8 decoder). It becomes a
  `clipped.Clipped`: the prefix, the field's length in characters and its place in the
  log (`FieldSource`), so `full_text` can stream it whole later (the pager).

A line that is not valid JSON (a bad escape, a control character in a string, bytes that
are not UTF-8, a skeleton that does not parse) is reported as `LongLineError`, as a full
decode would refuse it. Known limit: a long line whose skeleton itself passes
`SKELETON_LIMIT` (millions of short strings, not a few long ones) is refused the same way
rather than held.

No library does this: ijson and json-stream build every string value whole (json-stream
lists string streaming as future work), and orjson and msgspec decode from one buffer.
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Final

import msgspec
import orjson
import zstandard

from .clipped import PREFIX_CHARS, Clipped
from .records import loads

#: A line at least this long is decoded bounded.
LONG_LINE: Final = 1 << 20
#: A string literal longer than this (as written) is clipped instead of kept.
CLIP_BYTES: Final = 64 << 10
#: Bytes read (or decompressed) at a time.
WINDOW: Final = 1 << 20
#: The first window of a read whose end is open: most reads want one turn's lines (tens
#: of KB), so windows start this small and double up to `WINDOW` (a 1 MiB first window
#: made every turn of a big zstd log decompress 16 times what it needed).
FIRST_WINDOW: Final = 1 << 16
#: The most bytes of a long string decoded at once: orjson reserves about fifteen
#: times its input while it decodes, so a whole window decoded at once costs tens of MB.
DECODE_PIECE: Final = 64 << 10
#: The most bytes of a long line's skeleton (everything but its clipped strings).
SKELETON_LIMIT: Final = 16 << 20

_HIGH_SURROGATE: Final = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
_OUTSIDE: Final = re.compile(rb'["\n]')
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


class LongLineError(ValueError):
    """A long line that is not one valid JSON value (or cannot be read)."""


class FieldSource(msgspec.Struct, frozen=True):
    """Where a clipped field's bytes are: `start`–`end` of the line that begins at
    `line`, the string's content between its quotes, escapes and all.

    Attributes:
        line: Where the line is in the log (`LinePlace`).
        start: Offset of the content's first byte in the line.
        end: Offset just past its last byte.
    """

    line: LinePlace
    start: int
    end: int


class LinePlace(msgspec.Struct, frozen=True):
    """Where one line of a log starts.

    Attributes:
        path: The log.
        zstd: The log is multi-frame zstd (else raw).
        pos: Raw: file offset of the line. Zstd: compressed offset of a frame start.
        skip: Zstd: decompressed bytes from that frame's start to the line (0 for raw).
    """

    path: Path
    zstd: bool
    pos: int
    skip: int = 0

    def at(self, offset: int) -> LinePlace:
        """The place `offset` bytes further on (the next line's start, say)."""
        if self.zstd:
            return LinePlace(self.path, True, self.pos, self.skip + offset)
        return LinePlace(self.path, False, self.pos + offset, 0)

    def windows(
        self, start: int = 0, end: int | None = None, *, limit: int | None = None
    ) -> Iterator[bytes]:
        """The bytes of the stream from `start` bytes past this place to `end` bytes
        past it (None: as far as the file goes), `WINDOW` bytes at a time. `limit`:
        the file offset not to read past (a zstd log's whole frames)."""
        if end is not None and end <= start:
            return
        with open(self.path, "rb") as fh:
            if not self.zstd:
                pos = self.pos + start
                stop = None if end is None else self.pos + end
                if limit is not None:
                    stop = limit if stop is None else min(stop, limit)
                size = FIRST_WINDOW
                while stop is None or pos < stop:
                    want = size if stop is None else min(size, stop - pos)
                    chunk = os.pread(fh.fileno(), want, pos)
                    if not chunk:
                        return
                    yield chunk
                    pos += len(chunk)
                    size = min(size * 2, WINDOW)
                return
            fh.seek(self.pos)
            source: Any = fh if limit is None else _Limited(fh, limit - self.pos)
            count = None if end is None else end - start
            yield from _decompressed(source, self.skip + start, count)


class _Limited:
    """A binary file read no further than `left` more bytes."""

    def __init__(self, fh: BinaryIO, left: int) -> None:
        self._fh = fh
        self._left = max(0, left)

    def read(self, n: int = -1) -> bytes:
        if n < 0 or n > self._left:
            n = self._left
        data = self._fh.read(n)
        self._left -= len(data)
        return data


def _decompressed(fh: Any, skip: int, count: int | None) -> Iterator[bytes]:
    """A multi-frame zstd stream's content from `skip` bytes on (`count` bytes, None: to
    the end), decompressed a window at a time; stops quietly at a bad or cut frame."""
    reader = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True)
    try:
        while skip > 0:
            got = reader.read(min(skip, WINDOW))
            if not got:
                return
            skip -= len(got)
        size = FIRST_WINDOW
        while count is None or count > 0:
            got = reader.read(size if count is None else min(size, count))
            if not got:
                return
            if count is not None:
                count -= len(got)
            yield got
            size = min(size * 2, WINDOW)
    except zstandard.ZstdError:
        return


# -- decoding a long line ----------------------------------------------------------------


def _run_before(buf: bytes, at: int, lo: int) -> int:
    """How many backslashes come just before `buf[at]` (not before `lo`)."""
    k = at
    while k > lo and buf[k - 1] == 0x5C:
        k -= 1
    return at - k


#: Escaped quotes `_closing_quote` checks one by one before it masks them all.
_QUOTE_TRIES: Final = 32


def _closing_quote(buf: bytes, lo: int, hi: int) -> int:
    """Where the string body that starts at `buf[lo]` (between two characters) ends:
    its first quote not escaped, within `[lo, hi)`; -1 if none is."""
    q = buf.find(b'"', lo, hi)
    tries = 0
    while q > lo and buf[q - 1] == 0x5C:
        if _run_before(buf, q, lo) % 2 == 0:
            return q
        tries += 1
        if tries > _QUOTE_TRIES:
            # Many escaped quotes (JSON inside JSON): mask the escaped backslashes, then
            # the escaped quotes (same lengths), and find the first quote left, in C.
            masked = buf[q:hi].replace(b"\\\\", b"__").replace(b'\\"', b"__")
            k = masked.find(b'"', 1)
            return -1 if k < 0 else q + k
        q = buf.find(b'"', q + 1, hi)
    return q


def _tail_cut(buf: bytes, lo: int, hi: int) -> int:
    """The largest `cut <= hi` such that `buf[lo:cut]` (a string body starting between
    two characters) ends between two whole characters: no escape, surrogate pair or
    UTF-8 sequence cut in two."""
    cut = hi
    p = buf.rfind(b"\\", max(lo, hi - 6), hi)
    if p >= 0 and _run_before(buf, p, lo) % 2 == 0:  # an escape starts at p
        width = 6 if buf[p + 1 : p + 2] == b"u" else 2
        if p + width > hi:
            cut = p
    if (
        cut - 6 >= lo
        and _HIGH_SURROGATE.fullmatch(buf, cut - 6, cut)
        and _run_before(buf, cut - 6, lo) % 2 == 0
    ):
        cut -= 6  # maybe a pair's first half: keep it with its second
    elif cut == hi:
        k = cut
        while k > lo and cut - k < 3 and 0x80 <= buf[k - 1] < 0xC0:
            k -= 1
        if k > lo and buf[k - 1] >= 0xC0:
            lead = buf[k - 1]
            need = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
            if cut - (k - 1) < need:
                cut = k - 1
    return cut


def _decode(body: bytes | memoryview) -> str:
    """The text of a string body cut between two characters (lone surrogates kept)."""
    try:
        text = loads(b"".join((b'"', body, b'"')))
    except orjson.JSONDecodeError as exc:
        raise LongLineError(f"a string does not decode ({exc})") from None
    return text if isinstance(text, str) else ""


def _pieces(buf: bytes, lo: int, hi: int) -> Iterator[str]:
    """The text of the string body `buf[lo:hi]` (cut between two characters at both
    ends), decoded `DECODE_PIECE` bytes at a time."""
    view = memoryview(buf)
    while hi - lo > DECODE_PIECE:
        cut = _tail_cut(buf, lo, lo + DECODE_PIECE)
        yield _decode(view[lo:cut])
        lo = cut
    yield _decode(view[lo:hi])


def decode_body(raw: bytes) -> str:
    """The text of a whole string body (`raw` sits between a string's quotes), lone
    surrogates as U+FFFD."""
    return _LONE_SURROGATE.sub("\ufffd", _decode(raw))


class _Stream:
    """A window iterator with the current buffer and its position in the line."""

    def __init__(self, buf: bytes, more: Iterator[bytes]) -> None:
        self.buf = buf
        self.base = 0  # line offset of buf[0]
        self.more = more

    def refill(self, keep_from: int) -> bool:
        """Drop `buf[:keep_from]`, append the next window; False at the end."""
        nxt = next(self.more, b"")
        if not nxt:
            return False
        self.base += keep_from
        self.buf = self.buf[keep_from:] + nxt
        return True


def decode_long(
    first: bytes, more: Iterator[bytes], place: LinePlace | None
) -> tuple[Any, int, bytes]:
    """Decode one long line bounded (see the module doc).

    Args:
        first: The line's first bytes (maybe more: the line ends at its first newline).
        more: The bytes after `first`, window by window (consumed as far as needed).
        place: Where the line starts, recorded in each `Clipped` (None: nowhere).

    Returns:
        The decoded value, the line's length (without its newline), and the bytes
        after the newline that were read already.

    Raises:
        LongLineError: The line is not one valid JSON value, or has no newline.
    """
    stream = _Stream(first, more)
    skeleton: list[bytes] = []
    size = 0
    clips: dict[str, Clipped] = {}
    nonce = os.urandom(8).hex()  # (`secrets.token_hex`, without loading `secrets`)
    i = 0
    while True:
        buf = stream.buf
        found = _OUTSIDE.search(buf, i)
        if found is None:
            skeleton.append(buf[i:])
            size += len(buf) - i
            if size > SKELETON_LIMIT:
                raise LongLineError("the line holds too much structure to read bounded")
            if not stream.refill(len(buf)):
                raise LongLineError("the line has no newline")
            i = 0
            continue
        j = found.start()
        skeleton.append(buf[i:j])
        size += j - i
        if buf[j] == 0x0A:
            length = stream.base + j
            rest = buf[j + 1 :]
            break
        i, literal = _string(stream, j + 1, place)
        if isinstance(literal, Clipped):
            token = f"\x00turnline-clip-{nonce}-{len(clips)}"
            clips[token] = literal
            skeleton.append(orjson.dumps(token))
            size += 48
        else:
            skeleton.append(literal)
            size += len(literal)
        if size > SKELETON_LIMIT:
            raise LongLineError("the line holds too much structure to read bounded")
    try:
        value = loads(b"".join(skeleton))
    except orjson.JSONDecodeError as exc:
        raise LongLineError(f"the line is not valid JSON ({exc})") from None
    if clips:
        value = _put_back(value, clips)
    return value, length, rest


def _string(stream: _Stream, i: int, place: LinePlace | None) -> tuple[int, bytes | Clipped]:
    """Scan the string whose content starts at `stream.buf[i]` (just past its opening
    quote). Returns the buffer index just past its closing quote, and the literal
    (quotes included) if it is short, else a `Clipped`."""
    buf = stream.buf
    q = _closing_quote(buf, i, min(len(buf), i + CLIP_BYTES + 1))
    if q >= 0:
        return q + 1, buf[i - 1 : q + 1]  # the common case: a short string, kept as is
    start = stream.base + i
    kept: list[bytes] = []
    kept_len = 0
    texts: list[str] = []
    text_len = 0
    chars = 0
    while True:
        buf = stream.buf
        q = _closing_quote(buf, i, len(buf))
        cut = q if q >= 0 else _tail_cut(buf, i, len(buf))
        if kept_len <= CLIP_BYTES:
            kept.append(buf[i : min(cut, i + CLIP_BYTES + 1)])
            kept_len += cut - i
        for text in _pieces(buf, i, cut):
            chars += len(text)
            if text_len < PREFIX_CHARS:
                texts.append(text[: PREFIX_CHARS - text_len])
                text_len += len(texts[-1])
            del text
        if q >= 0:
            end = stream.base + q
            if end - start <= CLIP_BYTES:
                return q + 1, b'"' + b"".join(kept) + b'"'
            if chars <= PREFIX_CHARS:  # short after all: the whole text is known
                return q + 1, json.dumps("".join(texts)).encode()
            prefix = _LONE_SURROGATE.sub("\ufffd", "".join(texts))
            source = FieldSource(place, start, end) if place is not None else None
            return q + 1, Clipped(prefix, chars, end - start, source)
        if not stream.refill(cut):
            raise LongLineError("a string has no end")
        i = 0


def _put_back(value: Any, clips: dict[str, Clipped]) -> Any:
    if isinstance(value, str):
        return clips.get(value, value)
    if isinstance(value, dict):
        return {key: _put_back(item, clips) for key, item in value.items()}
    if isinstance(value, list):
        return [_put_back(item, clips) for item in value]
    return value


# -- reading a range of lines --------------------------------------------------------


class LongRecord(msgspec.Struct, frozen=True):
    """A long line decoded bounded (`value`), or why it does not decode (`error`);
    `length`: its bytes without the newline (-1 when it does not decode)."""

    value: Any
    error: str | None = None
    length: int = -1


_cache_lock = threading.Lock()
#: Recently decoded long lines by (device, inode, place): a turn is read again each
#: time it is highlighted, and the turns after it look back into it for the model.
_cache: OrderedDict[tuple[int, int, int, int], tuple[Any, int]] = OrderedDict()
_CACHE_SIZE: Final = 8


def _cache_key(place: LinePlace) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(place.path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, place.pos, place.skip)


def lines(place: LinePlace, limit: int | None = None) -> Generator[bytes | LongRecord, None, None]:
    """The whole lines from `place` on: short ones as bytes, long ones decoded bounded.

    Args:
        place: Where the first line starts.
        limit: The file offset not to read past (raw: a line start; zstd: a frame
            start). None: the file's end. An unfinished last line is left out.
    """
    windows = place.windows(limit=limit)
    buf = b""
    base = 0  # offset from `place` of buf[0]
    i = 0
    while True:
        nl = buf.find(b"\n", i)
        if nl >= 0 and nl - i < LONG_LINE:
            yield buf[i:nl]
            i = nl + 1
            continue
        if nl < 0 and len(buf) - i < LONG_LINE:
            nxt = next(windows, b"")
            if not nxt:
                return
            base += i
            buf = buf[i:] + nxt
            i = 0
            continue
        here = place.at(base + i)
        record, length, rest = _long(here, buf[i:], windows)
        yield record
        if length < 0:
            return
        base += i + length + 1
        buf, i = rest, 0


def _long(here: LinePlace, first: bytes, windows: Iterator[bytes]) -> tuple[LongRecord, int, bytes]:
    """Decode (or take from the cache) the long line at `here`; -1 length: stop."""
    key = _cache_key(here)
    with _cache_lock:
        hit = _cache.get(key) if key is not None else None
        if hit is not None:
            _cache.move_to_end(key)  # type: ignore[arg-type]
    if hit is not None:
        value, length = hit
        rest = _skip_to(first, windows, length)
        if rest is not None:
            return LongRecord(value, None, length), length, rest
        return LongRecord(None, "the line has no newline"), -1, b""
    try:
        value, length, rest = decode_long(first, windows, here)
    except LongLineError as exc:
        return LongRecord(None, str(exc)), -1, b""
    if key is not None:
        with _cache_lock:
            _cache[key] = (value, length)
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return LongRecord(value, None, length), length, rest


def _skip_to(first: bytes, windows: Iterator[bytes], length: int) -> bytes | None:
    """The bytes after the newline at offset `length` (a line known from the cache),
    reading on from `first`; None if the stream ends first."""
    buf, base = first, 0
    while base + len(buf) <= length:
        base += len(buf)
        buf = next(windows, b"")
        if not buf:
            return None
    if buf[length - base] != 0x0A:
        return None
    return buf[length - base + 1 :]


def full_text(text: str) -> Iterator[str]:
    """A field's whole text, a window at a time: a `Clipped` one streamed from the log
    (decoded as its prefix was: lone surrogates as U+FFFD), any other as it is."""
    if not isinstance(text, Clipped):
        yield text
        return
    if text.source is None:
        if not text.parts:
            yield str(text)
        for part in text.parts:
            yield from full_text(part)
        return
    source = text.source
    carry = b""
    for window in source.line.windows(source.start, source.end):
        buf = carry + window
        cut = _tail_cut(buf, 0, len(buf))
        if cut:
            yield decode_body(buf[:cut])
        carry = buf[cut:]
    if carry:
        yield decode_body(carry)


def zstd_inflates_past(source: Path | bytes, limit: int) -> bool:
    """True if a zstd log's content (a file, or its bytes) is longer than `limit` bytes:
    decompressed a window at a time, stopping as soon as it is, so a small file that
    inflates to gigabytes costs `limit` bytes of work, never its size."""
    total = 0
    try:
        if isinstance(source, bytes):
            chunks: Iterator[bytes] = _decompressed(io.BytesIO(source), 0, None)
            for chunk in chunks:
                total += len(chunk)
                if total > limit:
                    return True
            return False
        with open(source, "rb") as fh:
            for chunk in _decompressed(fh, 0, None):
                total += len(chunk)
                if total > limit:
                    return True
    except OSError:
        return False
    return False
