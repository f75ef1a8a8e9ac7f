"""Topic types: dataclasses whose members carry CDR kinds, decorated with `@topic_type`.

Members are annotated with the aliases below (``int32``, ``float64``, ``sequence[int32]``,
``array[uint8, 4]``, ``bounded_str[128]`` ...) or with plain Python types (``bool``,
``int`` = int64, ``float`` = float64, ``str`` = string, ``bytes`` = sequence<octet>,
``list[T]`` = sequence<T>). Key members are marked with ``Key[...]`` or listed in
``@topic_type(keys=...)``. The decorator turns the class into a dataclass (if it is not one
already) and records a description that the native module reads once per topic; the
serialization itself runs in Rust (XCDR1, as the IDL type ``@final``/``@appendable struct``
with the members in declaration order).
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from typing import Any, Callable, Iterable, Optional, Tuple, TypeVar, Union

if sys.version_info >= (3, 9):
    from typing import Annotated
else:  # pragma: no cover - requires-python is 3.9
    raise ImportError("ferrodds needs Python 3.9 or newer")

__all__ = [
    "topic_type",
    "Key",
    "key",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float32",
    "float64",
    "sequence",
    "array",
    "bounded_str",
    "bounded_bytes",
]


class _Kind:
    """A CDR kind attached to an annotation (``Annotated[int, _Kind(("int32",))]``)."""

    __slots__ = ("spec",)

    def __init__(self, spec: tuple) -> None:
        self.spec = spec

    def __repr__(self) -> str:
        return f"CdrKind{self.spec!r}"


class _KeyMarker:
    __slots__ = ()

    def __repr__(self) -> str:
        return "Key"


_KEY = _KeyMarker()

#: The key marker for ``Annotated``: ``color: Annotated[str, key]`` is ``Key[str]`` in a form
#: static type checkers read as ``str``.
key = _KEY

int8 = Annotated[int, _Kind(("int8",))]
uint8 = Annotated[int, _Kind(("uint8",))]
int16 = Annotated[int, _Kind(("int16",))]
uint16 = Annotated[int, _Kind(("uint16",))]
int32 = Annotated[int, _Kind(("int32",))]
uint32 = Annotated[int, _Kind(("uint32",))]
int64 = Annotated[int, _Kind(("int64",))]
uint64 = Annotated[int, _Kind(("uint64",))]
float32 = Annotated[float, _Kind(("float32",))]
float64 = Annotated[float, _Kind(("float64",))]


class Key:
    """``Key[T]`` marks a key member of type ``T``."""

    def __class_getitem__(cls, item: Any) -> Any:
        return Annotated[item, _KEY]


class sequence:
    """``sequence[T]`` or ``sequence[T, N]`` (bounded): a Python list of ``T``."""

    def __class_getitem__(cls, item: Any) -> Any:
        elem, bound = item if isinstance(item, tuple) else (item, None)
        if bound is not None and (not isinstance(bound, int) or bound < 0):
            raise TypeError(f"sequence bound must be a non-negative int, got {bound!r}")
        return Annotated[list, _Kind(("seq", _spec_of(elem, "sequence element"), bound))]


class array:
    """``array[T, N]``: a Python list of exactly ``N`` elements of ``T``."""

    def __class_getitem__(cls, item: Any) -> Any:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError("array needs an element type and a length: array[T, N]")
        elem, n = item
        if not isinstance(n, int) or n <= 0:
            raise TypeError(f"array length must be a positive int, got {n!r}")
        return Annotated[list, _Kind(("array", _spec_of(elem, "array element"), n))]


class bounded_str:
    """``bounded_str[N]``: a string of at most ``N`` bytes (UTF-8)."""

    def __class_getitem__(cls, bound: int) -> Any:
        if not isinstance(bound, int) or bound < 0:
            raise TypeError(f"string bound must be a non-negative int, got {bound!r}")
        return Annotated[str, _Kind(("str", bound))]


class bounded_bytes:
    """``bounded_bytes[N]``: ``sequence<octet, N>`` as ``bytes``."""

    def __class_getitem__(cls, bound: int) -> Any:
        if not isinstance(bound, int) or bound < 0:
            raise TypeError(f"bytes bound must be a non-negative int, got {bound!r}")
        return Annotated[bytes, _Kind(("bytes", bound))]


_PLAIN = {
    bool: ("bool",),
    int: ("int64",),
    float: ("float64",),
    str: ("str", None),
    bytes: ("bytes", None),
}


def _split(annotation: Any) -> Tuple[Any, tuple]:
    """The base type and the metadata of an (possibly nested) ``Annotated``."""
    if typing.get_origin(annotation) is Annotated:
        base, *meta = typing.get_args(annotation)
        inner_base, inner_meta = _split(base)
        return inner_base, tuple(inner_meta) + tuple(meta)
    return annotation, ()


def _spec_of(annotation: Any, where: str) -> tuple:
    base, meta = _split(annotation)
    kinds = [m for m in meta if isinstance(m, _Kind)]
    if kinds:
        return kinds[-1].spec
    if base in _PLAIN:
        return _PLAIN[base]
    origin = typing.get_origin(base)
    if origin in (list, typing.List) or base is list:
        args = typing.get_args(base)
        if len(args) != 1:
            raise TypeError(f"{where}: a list needs its element type, e.g. list[int32]")
        return ("seq", _spec_of(args[0], f"{where} element"), None)
    raise TypeError(
        f"{where}: {annotation!r} has no CDR mapping (use int32, uint32, int64, float64, "
        "bool, str, bytes, sequence[...], array[..., N], bounded_str[N])"
    )


T = TypeVar("T")


def topic_type(
    cls: Optional[type] = None,
    *,
    typename: Optional[str] = None,
    keys: Iterable[str] = (),
    extensibility: str = "final",
) -> Any:
    """Makes a class a topic type: ``@topic_type`` or ``@topic_type(typename=..., keys=...)``.

    ``typename`` is the DDS type name announced in discovery (default: the class name; for
    interoperability it must equal the other side's, e.g. ``"ShapeType"``).
    ``extensibility`` is ``"final"`` or ``"appendable"``.
    """
    if extensibility not in ("final", "appendable"):
        raise ValueError(f"extensibility must be 'final' or 'appendable', got {extensibility!r}")
    key_names = tuple(keys)
    # Names local to the function defining the class (string annotations of a class made
    # inside a function refer to them).
    caller = sys._getframe(1)
    local_names = dict(caller.f_locals) if caller.f_code.co_name != "<module>" else None

    def wrap(c: type) -> type:
        if not isinstance(c, type):
            raise TypeError(f"@topic_type decorates a class, got {c!r}")
        if not dataclasses.is_dataclass(c):
            c = dataclasses.dataclass(c)
        try:
            hints = typing.get_type_hints(c, localns=local_names, include_extras=True)
        except NameError as e:
            raise TypeError(f"{c.__name__}: an annotation names something unknown ({e})") from e
        members = []
        names = set()
        for f in dataclasses.fields(c):
            ann = hints.get(f.name, f.type)
            _, meta = _split(ann)
            is_key = any(m is _KEY for m in meta) or f.name in key_names
            members.append((f.name, _spec_of(ann, f"{c.__name__}.{f.name}"), is_key))
            names.add(f.name)
        unknown = [k for k in key_names if k not in names]
        if unknown:
            raise ValueError(f"{c.__name__}: keys {unknown} are not members")
        if not members:
            raise TypeError(f"{c.__name__}: a topic type needs at least one member")
        c.__ferrodds_type__ = (typename or c.__name__, extensibility, tuple(members))  # type: ignore[attr-defined]
        return c

    if cls is None:
        return wrap
    return wrap(cls)
