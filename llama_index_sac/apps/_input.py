"""Reading what a user writes for the command line: the lines of a text file (a questions file) and JSON objects (a
line of a JSON Lines file, a ``llama-sac serve`` request), with the same rules everywhere.

* :func:`read_input_file`: the bytes of a file the user names (``query --questions``, ``eval --questions``), at most
  a cap: a regular file only (a FIFO, a device such as ``/dev/zero``, a socket or a folder is refused without being
  read or blocking on it), or standard input (``-``), read only up to the cap.
* :func:`text_lines`: strict UTF-8 lines; a UTF-8 byte order mark at the start of the file (as Windows Notepad and
  Excel write it) is accepted, and a byte that is not UTF-8 is named by its line and its offset in that line.
* :func:`unique_keys`: the ``object_pairs_hook`` of ``json.loads`` that refuses an object with a key twice (plain
  ``json.loads`` keeps the last value without a word).
"""

from __future__ import annotations

import codecs
import os
import stat
import sys
from typing import Any, BinaryIO

__all__ = ["MAX_QUESTIONS_BYTES", "DuplicateKeyError", "InputFileError", "TextInputError", "read_input_file",
           "text_lines", "unique_keys"]

#: The largest questions file read (bytes): about 80,000 questions of 100 characters.
MAX_QUESTIONS_BYTES = 8 * 1024 * 1024
_BLOCK = 1 << 20


class TextInputError(ValueError):
    """A text file that is not UTF-8; the message names the line and the byte (``line 2 is not UTF-8 text (byte
    0xff at byte 8)``), not the file, which the caller names."""


class InputFileError(ValueError):
    """A file the user named that is not read: the message says why (``is a FIFO (named pipe), not a regular file``,
    ``is larger than 8,388,608 bytes``), not the file, which the caller names."""


class DuplicateKeyError(ValueError):
    """A JSON object with the same key twice; the message names the key."""


def text_lines(data: bytes) -> list[str]:
    """The lines of ``data`` decoded as strict UTF-8 (split at ``\\n``, ``\\r\\n`` and ``\\r``, without them).

    A UTF-8 byte order mark is dropped at the start of ``data`` only; anywhere else it stays part of the text.

    Raises:
        TextInputError: a line is not UTF-8: the message gives its number (from 1), the first bad byte and its offset
            in the line (from 1, the byte order mark counted, as an editor shows the file).
    """
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    lines = []
    for number, line in enumerate(data[bom:].splitlines(), 1):
        try:
            lines.append(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            offset = exc.start + 1 + (bom if number == 1 else 0)
            raise TextInputError(f"line {number} is not UTF-8 text (byte 0x{line[exc.start]:02x} at byte "
                                 f"{offset})") from None
    return lines


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is when it is not a regular file ("a FIFO (named pipe)", "a folder"...)."""
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def _read_capped(handle: BinaryIO, max_bytes: int) -> bytes:
    data = bytearray()
    while len(data) <= max_bytes and (block := handle.read(min(_BLOCK, max_bytes + 1 - len(data)))):
        data += block
    if len(data) > max_bytes:
        raise InputFileError(f"is larger than {max_bytes:,} bytes")
    return bytes(data)


def read_input_file(source: str | os.PathLike[str], max_bytes: int = MAX_QUESTIONS_BYTES,
                    stdin: BinaryIO | None = None) -> bytes:
    """The bytes of the file ``source`` (``"-"``: standard input, or ``stdin`` when given), at most ``max_bytes``.

    The file is opened with ``O_NONBLOCK`` and checked with ``fstat`` on the open descriptor, so what is checked is
    what is read: a FIFO with no writer, ``/dev/zero`` or a socket is refused at once. Standard input may be a pipe;
    it is read up to ``max_bytes + 1`` bytes, never further.

    Raises:
        InputFileError: not a regular file, larger than ``max_bytes`` (by its size, or grown past it while read).
        OSError: the file cannot be opened or read (missing, permission denied).
    """
    if str(source) == "-":
        return _read_capped(stdin if stdin is not None else sys.stdin.buffer, max_bytes)
    fd = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(f"is {file_kind(info.st_mode)}, not a regular file (not read)")
        if info.st_size > max_bytes:
            raise InputFileError(f"is larger than {max_bytes:,} bytes ({info.st_size:,} bytes)")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb", buffering=0) as handle:
        return _read_capped(handle, max_bytes)  # type: ignore[arg-type]


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads(text, object_pairs_hook=unique_keys)``: the object of ``pairs``, refused if a key comes twice.

    Raises:
        DuplicateKeyError: a key appears twice in the object (the message names it).
    """
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise DuplicateKeyError(f"duplicate key {key[:100]!r}")
        obj[key] = value
    return obj
