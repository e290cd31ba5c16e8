"""`typing.NamedTuple`'s class syntax without loading `typing`.

A warm `turnline search` loads `core.query`, `core.search` and `core.textsafe` in
its forked child, and `typing` would be most of their cost (3 ms of a query that
takes a tenth of a second). Those modules take this `NamedTuple` at run time and
`typing.NamedTuple` when type-checked (`if TYPE_CHECKING:`), so checkers see the
real thing and the classes behave the same: a `collections.namedtuple` of the
annotated fields, their values as defaults, and the class body's methods on a
slotted subclass.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class _Maker(type):
    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        if not bases:  # `NamedTuple` itself
            return super().__new__(mcs, name, bases, ns)
        fields = list(ns.get("__annotations__", {}))
        defaults = [ns[f] for f in fields if f in ns]
        if any(f not in ns for f in fields[len(fields) - len(defaults) :]):
            raise TypeError(f"{name}: a field without a default follows one with")
        base = namedtuple(name, fields, defaults=defaults, module=ns.get("__module__"))  # type: ignore[misc]
        body = {k: v for k, v in ns.items() if k not in fields and k != "__annotations__"}
        body["__slots__"] = ()
        return type(name, (base,), body)


class NamedTuple(metaclass=_Maker):
    """Subclass it as `typing.NamedTuple`."""
