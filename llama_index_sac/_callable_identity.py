"""A stable string naming a callable, for cache keys and ``to_dict()``.

Options such as ``length_function``, ``id_func``, ``embed_length_function`` or an LLM's ``completion_to_prompt`` are
callables; the LlamaIndex ingestion cache and this package's summary cache key on their serialized form, so that
form must (a) be the same in every run for the same callable and (b) differ when the callable computes something
else. :func:`callable_identity` gives:

- a module-level function or class: ``module.qualname`` (its import path; see the note below);
- a lambda or nested function: ``module.qualname#<hash>``, the hash covering its bytecode, the names and constants
  it uses (nested code such as comprehensions included), its default arguments and the values its closure captured;
- a bound method: the function's identity plus the bound object's;
- ``functools.partial``: the function's identity plus the bound arguments;
- any other callable object: ``module.qualname:<repr>``.

A value whose ``repr`` names a memory address (``<Foo object at 0x...>``) has no identity that outlives the
process; it is keyed by that address, so a cache keyed on it is never reused by another run (a miss, never a stale
hit).

Not followed: the globals a function reads and the functions it calls, and the code of a module-level function.
A module-level function is named by its import path so that a cache survives a restart and a reinstall; when you
change what such a function computes, rename it (or pass a new one) to start a new cache entry.
"""

from __future__ import annotations

import functools
import hashlib
import types
from collections.abc import Callable
from typing import Any

__all__ = ["callable_identity"]

_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_MAX_DEPTH = 8
_MAX_CHARS = 512


def callable_identity(fn: Callable[..., Any] | None) -> str | None:
    """Name ``fn`` for a cache key (see the module docstring for what each kind of callable gives).

    Args:
        fn: any callable, or ``None``.

    Returns:
        A string, the same in every run for the same callable (except values keyed by a memory address, see the
        module docstring); ``None`` for ``None``.
    """
    if fn is None:
        return None
    name = _identity(fn, 0)
    if len(name) > _MAX_CHARS:  # large bound or captured values: keep the key short, still telling them apart
        name = f"{name[:_MAX_CHARS // 2]}...#{hashlib.sha256(name.encode()).hexdigest()[:16]}"
    return name


def _identity(fn: Any, depth: int) -> str:
    if isinstance(fn, functools.partial):
        bound = _value(fn.args, depth + 1), _value(fn.keywords, depth + 1)
        return f"functools.partial({_identity(fn.func, depth + 1)}, {bound[0]}, {bound[1]})"
    if isinstance(fn, types.MethodType):
        return f"{_identity(fn.__func__, depth + 1)}@{_value(fn.__self__, depth + 1)}"
    name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__qualname__)}"
    if isinstance(fn, types.FunctionType):
        if "<lambda>" in name or "<locals>" in name:
            digest = hashlib.sha256()
            digest.update(_code(fn.__code__, depth).encode())
            digest.update(_value(fn.__defaults__, depth + 1).encode())
            digest.update(_value(fn.__kwdefaults__, depth + 1).encode())
            cells = tuple(_cell(cell) for cell in fn.__closure__ or ())
            digest.update(_value(cells, depth + 1).encode())
            name = f"{name}#{digest.hexdigest()[:12]}"
        return name
    if isinstance(fn, (type, types.BuiltinFunctionType)):
        return name
    return f"{name}:{_repr(fn)}"


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell: a name bound later in the enclosing function
        return _EMPTY


class _Empty:
    def __repr__(self) -> str:
        return "<empty cell>"


_EMPTY = _Empty()


def _code(code: types.CodeType, depth: int) -> str:
    """Bytecode, names and constants of ``code``, nested code objects followed (their ``repr`` holds an address)."""
    consts = ",".join(_code(c, depth + 1) if isinstance(c, types.CodeType) else _value(c, depth + 1)
                      for c in code.co_consts)
    parts = (code.co_code.hex(), code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
             code.co_argcount, code.co_kwonlyargcount, code.co_flags)
    return f"code({parts!r}, [{consts}])"


def _value(value: Any, depth: int) -> str:
    """A stable text for a default, captured or bound value."""
    if depth > _MAX_DEPTH:
        return f"<deep {type(value).__qualname__}@{id(value):x}>"
    if isinstance(value, _PLAIN):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}[{','.join(_value(v, depth + 1) for v in value)}]"
    if isinstance(value, (set, frozenset)):
        return f"{type(value).__name__}{{{','.join(sorted(_value(v, depth + 1) for v in value))}}}"
    if isinstance(value, dict):
        items = sorted(f"{_value(k, depth + 1)}={_value(v, depth + 1)}" for k, v in value.items())
        return f"dict{{{','.join(items)}}}"
    if isinstance(value, types.ModuleType):
        return f"module:{value.__name__}"
    if callable(value) and not isinstance(value, _Empty):
        return _identity(value, depth + 1)
    return f"{type(value).__module__}.{type(value).__qualname__}:{_repr(value)}"


def _repr(value: Any) -> str:
    text = repr(value)
    if " at 0x" in text:  # the default object repr: no identity beyond this process
        return f"<{type(value).__qualname__}@{id(value):x}>"
    return text
