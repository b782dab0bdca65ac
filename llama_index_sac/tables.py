"""Markdown tables in document text : a chunk cut from the middle of a table loses its header row.

:func:`markdown_table_header` finds the header a chunk's data rows belong to, so
:class:`~llama_index_sac.SummaryAugmentationTransformation` can embed it with the chunk
(``metadata["table_header"]``). A table is a block of at least two consecutive lines starting with ``|`` (after
spaces/tabs) whose lines include a GitHub-style delimiter row (``|---|:--:|``). Linear in the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["markdown_table_header", "markdown_tables"]

_TABLE_LINE = re.compile(r"[ \t]*\|")
_DELIMITER = re.compile(r"[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*")


@dataclass
class _Table:
    start: int  # first header line
    header_end: int  # end of the delimiter row
    end: int  # end of the last row
    header: str  # header rows + delimiter row, as in the text


def _tables(text: str) -> list[_Table]:
    tables: list[_Table] = []
    block: list[tuple[int, int]] = []
    pos = 0
    lines = []
    for line in text.splitlines(keepends=True):
        lines.append((pos, pos + len(line.rstrip("\r\n"))))
        pos += len(line)
    lines.append((pos, pos))  # sentinel
    for start, end in lines:
        if start < end and _TABLE_LINE.match(text, start, end):
            block.append((start, end))
            continue
        if len(block) >= 2:
            for s, e in block[1:]:
                if _DELIMITER.fullmatch(text, s, e):
                    tables.append(_Table(block[0][0], e, block[-1][1], text[block[0][0]: e]))
                    break
        block = []
    return tables


def markdown_table_header(text: str, start: int, end: int, tables: list[Any] | None = None) -> str | None:
    """The header of the markdown table whose DATA rows the span ``text[start:end]`` holds while the header itself
    is not wholly inside the span (a chunk cut from the middle of a table); else ``None``.

    The header is the table's first row(s) up to and including the ``|---|`` delimiter row, exactly as in the text.
    Only the first such table of the span counts (any later table starts inside the span, header included).
    ``tables`` may pass a precomputed ``_tables(text)`` list."""
    for table in tables if tables is not None else _tables(text):
        if table.end <= start or table.start >= end:
            continue
        if table.header_end < end and table.end > max(start, table.header_end):  # the span holds data rows
            if not (start <= table.start and table.header_end <= end):
                return table.header
        return None
    return None




def markdown_tables(text: str) -> list[Any]:
    """The markdown tables of ``text`` in order (opaque records for :func:`markdown_table_header`'s ``tables``)."""
    return _tables(text)
