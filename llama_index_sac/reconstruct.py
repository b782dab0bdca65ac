"""Rebuild a document's text from its chunks by their exact offsets (SAC placed after the parser).

:class:`~llama_index_sac.augmentation.SummaryAugmentationTransformation` needs the FULL text of a document to
summarize it. After a parser it may only have the chunks; every chunk of this package's parsers (and of any parser
that sets ``start_char_idx``/``end_char_idx``) says exactly where its text stands in the document, so the text is
rebuilt from them. Characters no chunk covers (whitespace a parser stripped, e.g. LlamaIndex's ``SentenceSplitter``)
are filled with as many spaces so every offset stays valid; their count is returned, so a caller can tell an exact
rebuild (``gaps == 0``: the same text, so the same summary, as from the Document) from an approximate one.
Linear in the total length of the chunks.
"""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.schema import BaseNode, MetadataMode

__all__ = ["reconstruct_text"]


def reconstruct_text(doc_id: str, nodes: Sequence[BaseNode]) -> tuple[str, int]:
    """The text of document ``doc_id`` rebuilt from ``nodes`` (its chunks, any order), and how many characters
    were not covered by any chunk (filled with spaces; the text before the first chunk counts, the end after the last
    chunk is unknown and not added).

    Raises:
        ValueError: a node has no exact offsets (``start_char_idx``/``end_char_idx`` missing or not spanning its
            text), or two overlapping nodes disagree on a character; the message names the document and node.
    """
    spans: list[tuple[int, int, str, str]] = []
    for node in nodes:
        start = getattr(node, "start_char_idx", None)
        end = getattr(node, "end_char_idx", None)
        text = node.get_content(metadata_mode=MetadataMode.NONE)
        if start is None or end is None or start < 0 or end - start != len(text):
            raise ValueError(
                f"cannot reconstruct document {doc_id!r}: node {node.node_id!r} has no exact offsets "
                f"(start_char_idx={start}, end_char_idx={end}, len(text)={len(text)}). Pass documents=[...] to the "
                "transformation, include the Documents in its input, or place it before the parser."
            )
        spans.append((start, end, text, node.node_id))
    spans.sort(key=lambda s: (s[0], s[1]))
    parts: list[str] = []
    cursor = gaps = 0
    for start, end, text, _ in spans:
        if start > cursor:
            parts.append(" " * (start - cursor))
            gaps += start - cursor
            cursor = start
        if end > cursor:
            parts.append(text[cursor - start:])
            cursor = end
    rebuilt = "".join(parts)
    for start, end, text, node_id in spans:  # every node must read back exactly (overlaps agree)
        if rebuilt[start:end] != text:
            raise ValueError(
                f"cannot reconstruct document {doc_id!r}: node {node_id!r} disagrees with an overlapping node at "
                f"characters {start}..{end}; pass documents=[...]"
            )
    return rebuilt, gaps
