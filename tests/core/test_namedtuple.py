"""`core._namedtuple`: `typing.NamedTuple`'s class syntax without `typing`."""

from __future__ import annotations

import subprocess
import sys
import typing

import pytest
from turnline.core._namedtuple import NamedTuple


class Ours(NamedTuple):
    """A doc."""

    name: str
    count: int
    tag: str | None = None
    more: int = 3

    def twice(self) -> int:
        return 2 * self.count


class Theirs(typing.NamedTuple):
    """A doc."""

    name: str
    count: int
    tag: str | None = None
    more: int = 3

    def twice(self) -> int:
        return 2 * self.count


@pytest.mark.parametrize("args", [("a", 1), ("a", 1, "t"), ("a", 1, None, 7)])
def test_it_behaves_as_typing_does(args: tuple[object, ...]) -> None:
    ours, theirs = Ours(*args), Theirs(*args)  # type: ignore[arg-type]
    assert tuple(ours) == tuple(theirs) and ours == theirs
    assert hash(ours) == hash(theirs)
    assert Ours._fields == Theirs._fields
    assert Ours._field_defaults == Theirs._field_defaults
    assert ours.twice() == theirs.twice()
    assert ours._replace(count=5) == theirs._replace(count=5)
    assert Ours._make(tuple(theirs)) == ours
    assert repr(ours) == repr(theirs).replace("Theirs", "Ours")
    assert Ours.__doc__ == "A doc." and Ours.__module__ == __name__
    assert not hasattr(ours, "__dict__")  # slotted, as a plain tuple
    with pytest.raises(AttributeError):
        ours.name = "b"  # type: ignore[misc]


def test_a_field_without_a_default_after_one_is_refused() -> None:
    with pytest.raises(TypeError):

        class Bad(NamedTuple):
            a: int = 1
            b: int


def test_the_search_modules_load_no_typing() -> None:
    """A warm search's child loads these; `typing` would cost it 3 ms."""
    code = (
        "import sys, sqlite3, turnline.core.search, turnline.core.fresh\n"
        "print(sorted(m for m in ('typing', 'dataclasses', 'orjson') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "[]", proc.stderr
