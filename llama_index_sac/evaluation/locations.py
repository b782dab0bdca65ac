"""Where things are, in characters: the ``node_id -> (doc_id, start, end)`` map of an index, and gold spans.

Span metrics need two kinds of location, both as :class:`~llama_index_sac.evaluation.metrics.LocatedSpan`
(``(doc_id, start, end)``, a half-open range of Python string indices, i.e. characters, into the ORIGINAL document):

* :func:`node_locations` builds the ``node_id -> LocatedSpan`` map of everything indexed, which the
  ``RetrieverEvaluator`` metrics (:mod:`~llama_index_sac.evaluation.llamaindex_metrics`) take, straight from where
  the nodes live: a vector store that keeps them (``NumpyVectorStore``, Chroma, Qdrant: read page by page), a
  docstore, a ``VectorStoreIndex``, or plain nodes.
* :func:`gold_span` turns a quoted answer into the exact span of that quote in a document, refusing a quote that is
  absent or ambiguous instead of guessing.

Both are linear in their input (stored nodes; document plus quote), adversarial inputs included.
"""

from __future__ import annotations

import bisect
import json
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from llama_index.core.indices.vector_store.base import VectorStoreIndex
from llama_index.core.schema import BaseNode, Document, NodeWithScore
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import BasePydanticVectorStore
from llama_index.core.vector_stores.utils import metadata_dict_to_node

from llama_index_sac.evaluation.evaluator import NodeLocationError, locate_node
from llama_index_sac.evaluation.metrics import LocatedSpan

__all__ = ["DEFAULT_PAGE_SIZE", "gold_span", "node_locations", "stored_nodes"]

#: Rows fetched per request when reading a Chroma collection or scrolling a Qdrant collection.
DEFAULT_PAGE_SIZE = 512

_SHOWN_OFFSETS = 5  # offsets named in an "ambiguous quote" error


# -- node_locations -----------------------------------------------------------------------------------------------


def node_locations(
    source: Any, doc_id_metadata_key: str | None = None, *, page_size: int = DEFAULT_PAGE_SIZE
) -> dict[str, LocatedSpan]:
    """``node_id -> LocatedSpan(doc_id, start, end)`` of every node held by ``source``.

    Args:
        source: where the indexed nodes are:

            * a ``VectorStoreIndex``: its vector store when that keeps the nodes (``stores_text``), else its docstore
              (the nodes of its index struct);
            * a Chroma (``ChromaVectorStore``) or Qdrant (``QdrantVectorStore``, sync client) store: every stored row,
              read through the store's client ``page_size`` rows at a time from the ``_node_content`` JSON that
              LlamaIndex writes with each row;
            * any other LlamaIndex vector store that keeps the nodes and implements ``get_nodes()``
              (e.g. :class:`~llama_index_sac.NumpyVectorStore`);
            * a docstore (``BaseDocumentStore``, every node of its ``docs``) or its ``docs`` mapping;
            * an iterable of nodes (``BaseNode`` or ``NodeWithScore``), e.g. the output of an ``IngestionPipeline``.
        doc_id_metadata_key: metadata key holding the document id of a node without a SOURCE relationship (as in
            :func:`~llama_index_sac.evaluation.evaluator.locate_node`); ``None``: the SOURCE relationship only.
        page_size: rows per request for Chroma and Qdrant (an int >= 1).

    Returns:
        A dict keyed by node id (the ids a retriever over ``source`` returns); offsets in characters.

    Raises:
        TypeError: ``source`` is none of the above (the message names its type), e.g. a vector store that keeps
            only embeddings (``SimpleVectorStore``: pass the index or its docstore), an iterable holding something
            other than nodes, or a ``page_size`` / ``doc_id_metadata_key`` of the wrong type.
        ValueError: a node lacks its document id or offsets (a :class:`NodeLocationError`, naming the node), a
            stored row has no ``_node_content`` (naming the row), one node id appears with two different locations,
            ``page_size < 1``, or a Qdrant store without a sync client.
    """
    if isinstance(page_size, bool) or not isinstance(page_size, int):
        raise TypeError(f"page_size must be an int, got {type(page_size).__name__} {page_size!r}")
    if page_size < 1:
        raise ValueError(f"page_size must be >= 1, got {page_size}")
    if doc_id_metadata_key is not None and not isinstance(doc_id_metadata_key, str):
        raise TypeError(f"doc_id_metadata_key must be a str or None, got {type(doc_id_metadata_key).__name__}")
    out: dict[str, LocatedSpan] = {}
    for node in _nodes_of(source, page_size):
        if isinstance(node, Document):
            raise NodeLocationError(
                f"{_describe(source)} holds the whole document {node.node_id!r}, not a chunk of one: a document has "
                "no offsets into a parent (an IngestionPipeline's docstore keeps the input documents: pass the vector "
                "store or the index instead)"
            )
        span = locate_node(node, doc_id_metadata_key)
        previous = out.setdefault(node.node_id, span)
        if previous != span:
            raise ValueError(
                f"node id {node.node_id!r} appears twice in {_describe(source)} with different locations "
                f"{tuple(previous)} and {tuple(span)}"
            )
    return out


def stored_nodes(source: Any, *, page_size: int = DEFAULT_PAGE_SIZE) -> Iterator[BaseNode]:
    """The nodes held by ``source`` (any source :func:`node_locations` takes), lazily, ``page_size`` rows per request
    from Chroma and Qdrant.

    Raises:
        TypeError: ``source`` is not a source of nodes (see :func:`node_locations`)."""
    return _nodes_of(source, page_size)


def _describe(source: Any) -> str:
    return f"the {type(source).__name__}"


def _instance_of(obj: Any, module: str, name: str) -> bool:
    """``isinstance(obj, module.name)`` without importing ``module`` (an optional extra): an object of that class
    exists only once its module is imported."""
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and isinstance(obj, cls)


def _nodes_of(source: Any, page_size: int) -> Iterator[BaseNode]:
    """The nodes held by ``source`` (see :func:`node_locations`), lazily where the source is paged."""
    if isinstance(source, VectorStoreIndex):
        store = source.vector_store
        if store.stores_text:
            yield from _nodes_of(store, page_size)
            return
        node_ids = list(source.index_struct.nodes_dict.values())
        yield from source.docstore.get_nodes(node_ids)
        return
    if _instance_of(source, "llama_index.vector_stores.chroma.base", "ChromaVectorStore"):
        yield from _chroma_nodes(source, page_size)
        return
    if _instance_of(source, "llama_index.vector_stores.qdrant.base", "QdrantVectorStore"):
        yield from _qdrant_nodes(source, page_size)
        return
    if isinstance(source, BasePydanticVectorStore):
        yield from _store_nodes(source)
        return
    if isinstance(source, BaseDocumentStore):
        yield from _checked(source.docs.values(), source)
        return
    if isinstance(source, Mapping):
        yield from _checked(source.values(), source)
        return
    if isinstance(source, (str, bytes)) or not isinstance(source, Iterable):
        raise TypeError(
            f"node_locations() takes a vector store that keeps nodes, a docstore, a VectorStoreIndex or an iterable of "
            f"nodes; got {type(source).__name__} {source!r:.80}"
        )
    yield from _checked(source, source)


def _checked(items: Iterable[Any], source: Any) -> Iterator[BaseNode]:
    for i, item in enumerate(items):
        node = item.node if isinstance(item, NodeWithScore) else item
        if not isinstance(node, BaseNode):
            raise TypeError(
                f"node_locations(): item {i} of {_describe(source)} is a {type(item).__name__} ({item!r:.80}), "
                "not a node (BaseNode or NodeWithScore)"
            )
        yield node


def _store_nodes(store: BasePydanticVectorStore) -> list[BaseNode]:
    if not store.stores_text:
        raise TypeError(
            f"the {type(store).__name__} keeps only embeddings, not the nodes (stores_text is False): pass the "
            "VectorStoreIndex built on it, or its docstore (index.docstore)"
        )
    try:
        return list(store.get_nodes(node_ids=None))
    except NotImplementedError as exc:
        raise TypeError(
            f"the {type(store).__name__} cannot list its nodes (get_nodes is not implemented): pass the nodes you "
            "indexed, or the index's docstore"
        ) from exc


def _row_node(row_id: Any, metadata: Mapping[str, Any] | None, store: Any, text: str | None = None) -> BaseNode:
    """The node LlamaIndex stored as ``metadata["_node_content"]`` (JSON) in row ``row_id`` of ``store``, with
    ``text`` when the store keeps the text beside the metadata (Chroma)."""
    if not metadata or "_node_content" not in metadata:
        raise ValueError(
            f"row {row_id!r} of the {type(store).__name__} has no '_node_content' metadata: it was not written by "
            "LlamaIndex's vector store, so it names no node, document or offsets"
        )
    try:
        return metadata_dict_to_node(dict(metadata), text=text)
    except (ValueError, TypeError, json.JSONDecodeError) as exc:  # pydantic's ValidationError is a ValueError
        raise ValueError(f"row {row_id!r} of the {type(store).__name__}: unreadable '_node_content': {exc}") from exc


def _chroma_nodes(store: Any, page_size: int) -> Iterator[BaseNode]:
    collection = store._collection  # the chromadb Collection the store writes to
    if collection is None:
        raise ValueError("the ChromaVectorStore has no collection: pass chroma_collection= when creating it")
    total = collection.count()
    for offset in range(0, total, page_size):  # one request per page, never the whole collection at once
        page = collection.get(limit=page_size, offset=offset, include=["metadatas", "documents"])
        texts = page.get("documents") or [None] * len(page["ids"])
        for row_id, metadata, text in zip(page["ids"], page["metadatas"] or [], texts):
            yield _row_node(row_id, metadata, store, text)


def _qdrant_nodes(store: Any, page_size: int) -> Iterator[BaseNode]:
    client = store.client
    if client is None:
        raise ValueError("the QdrantVectorStore has no sync client (aclient only): pass client=QdrantClient(...)")
    name = store.collection_name
    if not client.collection_exists(name):
        return  # nothing was ever added
    pages = client.count(name, exact=True).count // page_size + 2  # bounded even if rows are added meanwhile
    offset = None
    for _ in range(pages):
        points, offset = client.scroll(name, limit=page_size, offset=offset, with_payload=True, with_vectors=False)
        for point in points:
            yield _row_node(point.id, point.payload, store)
        if offset is None:
            return
    raise ValueError(f"the Qdrant collection {name!r} kept growing while it was read: read it again when it is idle")


# -- gold_span ----------------------------------------------------------------------------------------------------

_WS_RUN = re.compile(r"\s+")


def gold_span(
    text: str,
    quote: str,
    *,
    doc_id: str,
    occurrence: int | None = None,
    normalize_whitespace: bool = False,
) -> LocatedSpan:
    """The exact span of ``quote`` in ``text`` (document ``doc_id``), as a gold span for the span metrics.

    Args:
        text: the document, exactly as indexed (offsets are into this string, in characters).
        quote: the answer, quoted from the document.
        doc_id: the document's id (as the nodes' ``ref_doc_id``), a non-empty string.
        occurrence: ``None`` (the default): the quote must occur exactly once. ``i`` (0-based): take its ``i``-th
            occurrence, counting every start position left to right, overlapping ones included.
        normalize_whitespace: match any run of whitespace (spaces, tabs, line breaks) in ``text`` with any run in
            ``quote``, and ignore the quote's leading and trailing whitespace (a quote re-flowed by a PDF viewer or an
            e-mail). The span returned still indexes the ORIGINAL ``text``: it starts at the quote's first
            non-blank character and ends after its last one.

    Returns:
        ``LocatedSpan(doc_id, start, end)`` with ``text[start:end] == quote`` (without normalization).

    Raises:
        TypeError: ``text``, ``quote`` or ``doc_id`` is not a str, ``occurrence`` not an int or None (bools refused).
        ValueError: ``doc_id`` or ``quote`` is empty (blank, with normalization); the quote is not in the text
            ("quote not found in doc_id ...", with the longest part of it that is, and a hint when whitespace
            normalization or letter case would have matched); it occurs more than once and ``occurrence`` is None
            (the message names how many times and the first offsets); ``occurrence`` is negative or past the last
            occurrence.
    """
    for name, value in (("text", text), ("quote", quote), ("doc_id", doc_id)):
        if not isinstance(value, str):
            raise TypeError(f"gold_span(): {name} must be a str, got {type(value).__name__} {value!r:.80}")
    if occurrence is not None and (isinstance(occurrence, bool) or not isinstance(occurrence, int)):
        raise TypeError(f"gold_span(): occurrence must be an int or None, got {type(occurrence).__name__}")
    if not doc_id:
        raise ValueError("gold_span(): doc_id must be a non-empty string")
    if occurrence is not None and occurrence < 0:
        raise ValueError(f"gold_span(): occurrence must be >= 0, got {occurrence}")
    needle, haystack = quote, text
    positions: _PositionMap | None = None
    if normalize_whitespace:
        needle = _WS_RUN.sub(" ", quote).strip(" ")
        haystack, positions = _normalized(text)
    if not needle:
        raise ValueError(f"gold_span(): the quote for {doc_id!r} is empty" + (" once whitespace is normalized"
                                                                               if quote else ""))
    wanted = 1 if occurrence is None else occurrence + 1
    starts = _first_occurrences(haystack, needle, max(wanted, _SHOWN_OFFSETS + 1) if occurrence is None else wanted)
    if not starts:
        raise ValueError(_not_found(text, quote, doc_id, needle, haystack, positions))
    if positions is not None:
        spans = [(positions.start(s), positions.end(s + len(needle))) for s in starts]
    else:
        spans = [(s, s + len(needle)) for s in starts]
    if occurrence is None:
        if len(spans) > 1:
            count = _count_occurrences(haystack, needle)
            shown = ", ".join(f"[{s}:{e}]" for s, e in spans[:_SHOWN_OFFSETS]) + (", ..." if count > _SHOWN_OFFSETS
                                                                                  else "")
            raise ValueError(
                f"quote {_clip(quote)} is ambiguous in doc_id {doc_id!r}: found {count} times, at {shown}; pass "
                "occurrence=i (0-based) to pick one, or quote more of the text"
            )
        return LocatedSpan(doc_id, *spans[0])
    if len(spans) <= occurrence:
        raise ValueError(f"gold_span(): occurrence={occurrence} but quote {_clip(quote)} occurs only {len(spans)} "
                         f"time(s) in doc_id {doc_id!r}")
    return LocatedSpan(doc_id, *spans[occurrence])


def _smallest_period(s: str) -> int:
    """The smallest ``p >= 1`` with ``s[i] == s[i + p]`` for every valid ``i`` (prefix function; O(len(s)))."""
    fail = [0] * len(s)
    k = 0
    for i in range(1, len(s)):
        while k and s[i] != s[k]:
            k = fail[k - 1]
        if s[i] == s[k]:
            k += 1
        fail[i] = k
    return len(s) - fail[-1]


def _occurrences(text: str, needle: str) -> Iterator[int]:
    """Every start of ``needle`` in ``text`` (overlapping ones included), left to right, in O(len(text) +
    len(needle)) total: inside a run of overlapping matches each next one costs O(period) (the needle repeats with its
    smallest period ``p``, so a match at ``s + p`` follows from one at ``s`` iff the ``p`` characters after it
    continue the pattern); after a run, the next match is at least ``max(p, m - p + 1) >= m / 2`` characters on
    (Fine and Wilf), so each ``str.find`` pays for itself."""
    m, n = len(needle), len(text)
    p = _smallest_period(needle)
    tail = needle[m - p:]
    s = text.find(needle)
    while s != -1:
        yield s
        while s + m + p <= n and text[s + m:s + m + p] == tail:
            s += p
            yield s
        s = text.find(needle, s + 1)


def _first_occurrences(text: str, needle: str, limit: int) -> list[int]:
    out: list[int] = []
    for s in _occurrences(text, needle):
        out.append(s)
        if len(out) >= limit:
            break
    return out


def _count_occurrences(text: str, needle: str) -> int:
    return sum(1 for _ in _occurrences(text, needle))


class _PositionMap:
    """Maps indices of the whitespace-normalized text back to the original text (one entry per token)."""

    def __init__(self) -> None:
        self.norm_starts: list[int] = []
        self.orig_starts: list[int] = []
        self.orig_ends: list[int] = []

    def _token(self, norm_index: int) -> int:
        return bisect.bisect_right(self.norm_starts, norm_index) - 1

    def start(self, norm_index: int) -> int:
        """Original index of the character at ``norm_index`` (a blank token maps to its first character)."""
        t = self._token(norm_index)
        return min(self.orig_starts[t] + norm_index - self.norm_starts[t], self.orig_ends[t] - 1)

    def end(self, norm_end: int) -> int:
        """Original end (exclusive) of a span ending at ``norm_end`` (exclusive) on a non-blank character."""
        return self.start(norm_end - 1) + 1


def _normalized(text: str) -> tuple[str, _PositionMap]:
    """``text`` with every whitespace run replaced by one space, and the map back to ``text``'s indices."""
    positions = _PositionMap()
    parts: list[str] = []
    norm = orig = 0
    for match in _WS_RUN.finditer(text):
        if match.start() > orig:  # the non-blank token before this run, kept as is
            positions.norm_starts.append(norm)
            positions.orig_starts.append(orig)
            positions.orig_ends.append(match.start())
            parts.append(text[orig:match.start()])
            norm += match.start() - orig
        positions.norm_starts.append(norm)
        positions.orig_starts.append(match.start())
        positions.orig_ends.append(match.end())
        parts.append(" ")
        norm += 1
        orig = match.end()
    if orig < len(text):
        positions.norm_starts.append(norm)
        positions.orig_starts.append(orig)
        positions.orig_ends.append(len(text))
        parts.append(text[orig:])
    return "".join(parts), positions


def _clip(s: str, width: int = 60) -> str:
    return repr(s if len(s) <= width else s[: width - 3] + "...")


def _not_found(text: str, quote: str, doc_id: str, needle: str, haystack: str, positions: _PositionMap | None) -> str:
    """The "quote not found" message, with the longest prefix of the quote that the document does hold."""
    message = f"quote {_clip(quote)} not found in doc_id {doc_id!r} ({len(text)} characters)"
    # the longest prefix found: prefixes that occur form an initial range of lengths, so bisect (O(log m) finds)
    lo, hi = 0, len(needle)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if haystack.find(needle[:mid]) != -1:
            lo = mid
        else:
            hi = mid - 1
    if lo:
        at = haystack.find(needle[:lo])
        start = positions.start(at) if positions is not None else at
        message += (f"; its first {lo} of {len(needle)} characters are at offset {start}, then the document reads "
                    f"{_clip(haystack[at + lo:at + lo + 40], 44)} where the quote reads "
                    f"{_clip(needle[lo:lo + 40], 44)}")
    loose = _WS_RUN.sub(" ", quote).strip(" ")
    if positions is None and loose and loose in _normalized(text)[0]:
        message += "; it matches with normalize_whitespace=True"
    elif needle.casefold() in haystack.casefold():
        message += "; it matches if letter case is ignored (quote the document's own case)"
    return message
