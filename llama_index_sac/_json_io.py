"""Bounded reading of persisted files: one reader for every JSON file the package and its tools load.

A persisted file (a store's record, a cache entry, a saved table, a result) may have been damaged, replaced or
crafted. Reading it must cost at most a stated number of bytes and nesting levels, never block, and fail with one
error naming the file and the problem:

* :func:`read_regular_file`: the bytes of a regular file, at most ``max_bytes``. The file is opened with
  ``O_NONBLOCK`` and checked with ``fstat`` (``S_ISREG``) before a byte is read, so a FIFO or a device in place of
  the file (``/dev/zero``) is refused at once instead of blocking or reading for ever.
* :func:`read_json`: :func:`read_regular_file`, then :func:`parse_json`.
* :func:`parse_json`: JSON text (``bytes`` or ``str``) parsed with a nesting cap and an expected top-level type.
* :func:`gunzip_bounded`: gzip data decompressed while streaming, stopped as soon as the output passes a cap.
* :func:`has_lone_surrogate`: whether a string holds a UTF-16 surrogate code point (not encodable as UTF-8).

Every problem is one :class:`PersistedFileError` (a ``ValueError``), except a missing file, which stays a
``FileNotFoundError`` (a caller usually treats it as "not saved yet").
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import zlib
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_MAX_BYTES", "DEFAULT_MAX_DEPTH", "PersistedFileError", "gunzip_bounded", "has_lone_surrogate",
    "parse_json",
    "read_json", "read_regular_file",
]

#: Default size cap of :func:`read_regular_file` and :func:`read_json`, in bytes (1 GiB).
DEFAULT_MAX_BYTES = 1 << 30
#: Default nesting cap of :func:`parse_json`: arrays and objects inside each other, the top level counting 1.
DEFAULT_MAX_DEPTH = 64

_SURROGATE = re.compile("[\ud800-\udfff]")
_TYPE_NAMES = {dict: "a JSON object", list: "a JSON array", str: "a JSON string", int: "a JSON integer",
               float: "a JSON number", bool: "true or false", type(None): "null"}


class PersistedFileError(ValueError):
    """A persisted file that cannot be used: not a regular file, too large, not JSON, too deep, or the wrong shape.

    Attributes:
        path: the file (or the source named by the caller, e.g. ``"bomb.json.gz (decompressed)"``).
        problem: what is wrong, without the name (``"nested deeper than 64 levels"``).
    """

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


def read_regular_file(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``max_bytes`` bytes (symbolic links followed).

    Opened non-blocking and checked with ``fstat`` before reading: a FIFO, socket or device is refused without
    waiting for a writer or reading a byte. At most ``max_bytes + 1`` bytes are read even if the file grows meanwhile.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        PersistedFileError: not a regular file, larger than ``max_bytes``, or unreadable (permission, a folder, ...).
    """
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise PersistedFileError(path, f"cannot be opened ({exc.strerror or exc})") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PersistedFileError(path, "is not a regular file (a FIFO, device, socket or folder)")
        if info.st_size > max_bytes:
            raise PersistedFileError(path, f"is {info.st_size} bytes, more than the limit of {max_bytes} bytes")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise PersistedFileError(path, f"grew past the limit of {max_bytes} bytes while being read")
        return b"".join(chunks)
    except OSError as exc:
        raise PersistedFileError(path, f"cannot be read ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)


def _depth_exceeds(value: Any, max_depth: int) -> bool:
    """Whether ``value`` nests arrays/objects deeper than ``max_depth`` (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(
    data: bytes | str,
    source: str | os.PathLike[str],
    *,
    expect: type | tuple[type, ...] | None = dict,
    max_depth: int = DEFAULT_MAX_DEPTH,
    allow_nan: bool = False,
) -> Any:
    """``json.loads(data)`` with a nesting cap and an expected top-level type; linear in the input.

    Args:
        data: the JSON text; ``bytes`` must be UTF-8 (or UTF-16/32, as ``json.loads`` detects).
        source: what to name in an error (a path, or e.g. ``"x.json.gz (decompressed)"``).
        expect: the type(s) the top level must have (``dict``: an object, ``list``: an array); ``None``: any.
        max_depth: arrays/objects nested deeper than this are refused (the top level is depth 1).
        allow_nan: accept ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON; Python writes them by default).

    Raises:
        PersistedFileError: not UTF-8, not JSON, nested deeper than ``max_depth``, or not of type ``expect``.
    """
    try:
        value = json.loads(data, parse_constant=None if allow_nan else _refuse_constant)
    except RecursionError:
        raise PersistedFileError(source, f"is nested deeper than {max_depth} levels (too deep to parse)") from None
    except UnicodeDecodeError as exc:
        raise PersistedFileError(source, f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise PersistedFileError(source, f"is not valid JSON ({exc})") from None
    if _depth_exceeds(value, max_depth):
        raise PersistedFileError(source, f"is nested deeper than {max_depth} levels")
    wanted = () if expect is None else expect if isinstance(expect, tuple) else (expect,)
    if wanted and (not isinstance(value, wanted) or isinstance(value, bool) and bool not in wanted):
        raise PersistedFileError(
            source, f"holds {_TYPE_NAMES.get(type(value), type(value).__name__)}, not "
            + " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in wanted))
    if not allow_nan and isinstance(value, float) and not math.isfinite(value):
        raise PersistedFileError(source, "holds a number that is not finite")
    return value


def read_json(
    path: str | os.PathLike[str],
    *,
    expect: type | tuple[type, ...] | None = dict,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    allow_nan: bool = False,
) -> Any:
    """The JSON value of the regular file ``path``: :func:`read_regular_file` then :func:`parse_json`.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        PersistedFileError: every other problem (see the two functions), naming ``path``.
    """
    raw = read_regular_file(path, max_bytes=max_bytes)
    return parse_json(raw, Path(path), expect=expect, max_depth=max_depth, allow_nan=allow_nan)


def gunzip_bounded(data: bytes, source: str | os.PathLike[str], *, max_bytes: int) -> bytes:
    """The decompressed content of gzip ``data`` (concatenated members too), at most ``max_bytes`` bytes.

    Decompression streams in steps of at most 1 MiB of output and stops as soon as the output passes ``max_bytes``,
    so a small file that expands to gigabytes costs at most ``max_bytes + 1 MiB`` of memory.

    Raises:
        PersistedFileError: not gzip data, truncated, or more than ``max_bytes`` bytes decompressed.
    """
    out: list[bytes] = []
    size = 0
    rest = data
    try:
        while rest:
            inflater = zlib.decompressobj(wbits=31)  # one gzip member
            pending = rest
            while not inflater.eof:
                chunk = inflater.decompress(pending, 1 << 20)
                pending = inflater.unconsumed_tail
                size += len(chunk)
                if size > max_bytes:
                    raise PersistedFileError(source, f"decompresses to more than the limit of {max_bytes} bytes")
                out.append(chunk)
                if not chunk and not pending:
                    raise PersistedFileError(source, "is truncated gzip data")
            rest = inflater.unused_data.lstrip(b"\x00")  # members may be followed by zero padding
    except zlib.error as exc:
        raise PersistedFileError(source, f"is not valid gzip data ({exc})") from None
    return b"".join(out)


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a UTF-16 surrogate code point (U+D800..U+DFFF), which UTF-8 cannot encode."""
    return _SURROGATE.search(text) is not None
