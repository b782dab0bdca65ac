"""Reading what a user writes for the command line: the lines of a text file (a questions file) and JSON objects (a
line of a JSON Lines file, a ``llama-sac serve`` request), with the same rules everywhere.

* :func:`text_lines`: strict UTF-8 lines; a UTF-8 byte order mark at the start of the file (as Windows Notepad and
  Excel write it) is accepted, and a byte that is not UTF-8 is named by its line and its offset in that line.
* :func:`unique_keys`: the ``object_pairs_hook`` of ``json.loads`` that refuses an object with a key twice (plain
  ``json.loads`` keeps the last value without a word).
"""

from __future__ import annotations

import codecs
from typing import Any

__all__ = ["DuplicateKeyError", "TextInputError", "text_lines", "unique_keys"]


class TextInputError(ValueError):
    """A text file that is not UTF-8; the message names the line and the byte (``line 2 is not UTF-8 text (byte
    0xff at byte 8)``), not the file, which the caller names."""


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
