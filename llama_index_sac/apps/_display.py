"""What the command line prints of names it did not choose (file names, store paths, document ids, texts).

A file name may hold a newline, a carriage return, a terminal escape sequence (``ESC [2K``), bidirectional-text
controls or, on POSIX, bytes that are not UTF-8 (decoded by Python as lone surrogates). Printed raw, such a name can
start a line of its own (a forged ``error:`` line), rewrite the terminal's line, or reorder what the reader sees.
:func:`printable` is the one escaping every output line of ``llama-sac`` goes through.
"""

from __future__ import annotations

import re

__all__ = ["counted", "printable"]

#: C0 controls but tab, DEL, C1 controls, the Unicode line/paragraph separators, bidirectional-text controls and lone
#: surrogates (undecodable bytes of a file name).
_UNPRINTABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                          "\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every character that could split, rewrite or reorder a terminal line written as a Python-style
    escape (``\\n``, ``\\x1b``, ``\\u202e``, ``\\udcff``); the rest unchanged, so ordinary names print as they are.

    Args:
        text: what to print.
        keep_newlines: keep ``\\n`` (a message of several lines whose line breaks are the program's own).
    """
    if keep_newlines:
        return "\n".join(_UNPRINTABLE.sub(_escape, line) for line in text.split("\n"))
    return _UNPRINTABLE.sub(_escape, text)


def counted(number: int, noun: str) -> str:
    """``number`` and ``noun``, the noun in the plural unless the number is one: ``"1 chunk"``, ``"3 chunks"``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
