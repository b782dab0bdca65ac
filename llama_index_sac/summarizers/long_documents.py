"""Documents longer than the LLM's input window, for :class:`~llama_index_sac.summarizers.llm.LLMSummarizer`.

* ``"map_reduce"`` (:func:`map_reduce_input`): the text is cut into windows of at most ``window`` characters at
  paragraph / line / sentence / word boundaries (the recursive splitter; windows tile the text, so every character is
  read), each window is summarized, and the partial summaries (in order, numbered ``"Part 1: ..."``) are summarized
  in groups (:func:`group_by_length`), in as many rounds as it takes for them to fit one window.
* ``"head_tail"`` (:func:`head_tail_excerpt`): the first two thirds of the window taken from the start of the
  document and the last third from its end, joined by :data:`HEAD_TAIL_MARK`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from llama_index_sac.node_parser.recursive import recursive_chunk_spans
from llama_index_sac.summarizers.base import cut_at_word_boundary
from llama_index_sac.summarizers.retry import RequestRun, gather_or_cancel

__all__ = ["HEAD_TAIL_MARK", "group_by_length", "head_tail_excerpt", "map_reduce_input", "numbered_parts"]

#: What joins the head and the tail of a document read by ``"head_tail"``.
HEAD_TAIL_MARK = "\n[...]\n"


def head_tail_excerpt(text: str, window: int) -> str:
    """The start and the end of ``text`` joined by :data:`HEAD_TAIL_MARK`, at most ``window`` characters: the head
    two thirds of the room, cut at a word boundary, the tail the rest (starting at a word when one starts within its
    first quarter)."""
    body = window - len(HEAD_TAIL_MARK)
    head = cut_at_word_boundary(text, max(1, (2 * body) // 3))
    tail_len = body - len(head)
    tail = text[len(text) - tail_len:]
    space = tail.find(" ")
    if 0 <= space < len(tail) // 4:  # start the tail at a word
        tail = tail[space + 1:]
    return head + HEAD_TAIL_MARK + tail


def numbered_parts(parts: list[str]) -> str:
    """Partial summaries as one text, one ``"Part i: ..."`` line each (1-based, in order)."""
    return "\n".join(f"Part {i + 1}: {p}" for i, p in enumerate(parts))


def group_by_length(items: list[str], limit: int, overhead: Callable[[int], int] = lambda i: 10) -> list[list[str]]:
    """Consecutive groups of ``items`` whose rendered length stays within ``limit`` (every group has at least two
    items when there are two or more, so each reduce round shrinks the list)."""
    groups: list[list[str]] = []
    current: list[str] = []
    size = 0
    for item in items:
        cost = len(item) + overhead(len(current))
        if current and size + cost > limit and len(current) >= 2:
            groups.append(current)
            current, size = [], 0
        current.append(item)
        size += cost
    if current:
        if len(current) == 1 and groups:
            groups[-1].append(current[0])
        else:
            groups.append(current)
    return groups


async def map_reduce_input(text: str, window: int, partial_chars: int,
                           summarize_window: Callable[[str], Awaitable[str]],
                           reduce_parts: Callable[[str], Awaitable[str]], run: RequestRun) -> str:
    """The numbered partial summaries of ``text`` (:func:`numbered_parts`), reduced until they fit ``window``
    characters (or only one is left): what the final summary request reads.

    Args:
        text: the document, longer than ``window``.
        window: the input window in characters.
        partial_chars: the length target of a partial summary; each is cut at a word boundary to at most
            ``max(20, min(2 * partial_chars, window // 2 - 16))`` characters, so that any two fit one reduce window.
        summarize_window: the partial summary of one window of ``text``.
        reduce_parts: the summary of a group of numbered partial summaries.
        run: the document's request run: when one request fails, the others are cancelled (:func:`gather_or_cancel`).
    """
    spans = recursive_chunk_spans(text, chunk_size=window)
    partial_limit = max(20, min(2 * partial_chars, window // 2 - 16))
    partials = await gather_or_cancel((summarize_window(text[s:e]) for s, e in spans), run)
    partials = [cut_at_word_boundary(p, partial_limit) for p in partials]
    while True:
        joined = numbered_parts(partials)
        if len(joined) <= window or len(partials) == 1:
            return joined
        groups = group_by_length(partials, window)
        partials = await gather_or_cancel((reduce_parts(numbered_parts(group)) for group in groups), run)
        partials = [cut_at_word_boundary(p, partial_limit) for p in partials]
