"""Grouping the partial summaries of a long document for the reduce step of ``LLMSummarizer`` (map_reduce)."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["group_by_length"]


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
