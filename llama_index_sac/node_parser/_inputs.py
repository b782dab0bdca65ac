"""Checks of a node parser's inputs and options, run before any work (see :func:`unique_inputs`)."""

from __future__ import annotations

import re
import typing
from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode

__all__ = ["check_input_types", "numeric_annotation", "unique_inputs"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def numeric_annotation(annotation: Any) -> bool:
    """True for an ``int`` or ``float`` field annotation, optional or not (``bool`` fields are not numeric)."""
    if annotation in (int, float):
        return True
    args = typing.get_args(annotation)
    return bool(args) and bool not in args and any(arg in (int, float) for arg in args)


def _identical(a: BaseNode, b: BaseNode) -> bool:
    """Two inputs that would give the same nodes: the same object, or equal in every field."""
    return a is b or (type(a) is type(b) and a == b)


def _describe(node: BaseNode, text: str) -> str:
    return f"{type(node).__name__} of {len(text):,} characters"


def check_input_types(nodes: Any) -> None:
    """``TypeError`` unless ``nodes`` is a sequence (not a single node, a string or a generator, which LlamaIndex
    would consume before parsing) of LlamaIndex nodes; the message names the position of a wrong item."""
    if isinstance(nodes, (BaseNode, str)) or not isinstance(nodes, Sequence):
        raise TypeError(f"documents must be a list of LlamaIndex nodes, got an object of type {type(nodes).__name__}")
    for position, node in enumerate(nodes):
        if not isinstance(node, BaseNode):
            raise TypeError(
                f"input {position} is of type {type(node).__name__}, not a LlamaIndex node: pass Document(text=...) "
                "objects"
            )


def unique_inputs(nodes: Sequence[Any]) -> tuple[list[BaseNode], list[str]]:
    """The inputs of a parse, checked before any work, each distinct input once, and their texts.

    Node ids derive from the input's id (its SOURCE document's id for a chunk), so two inputs with one id must be
    the same input. Decision: an input repeated with the same id and equal in every field (text, metadata,
    relationships, ...) is parsed once (its nodes would be the same nodes, ids included); the first occurrence is
    kept. Anything else sharing an id is an error.

    Text with a surrogate code point (``"\\ud800"``, from bytes decoded with ``errors="surrogateescape"`` or a JSON
    ``\\ud83d`` escape) is refused: it has no UTF-8 encoding, which LlamaIndex's ``Document.hash``, tokenizers and
    vector stores need (each would fail later, without naming the document).

    Returns:
        ``(nodes, texts)``: the distinct inputs in their first order and their ``MetadataMode.NONE`` contents.

    Raises:
        TypeError: an input that is not a LlamaIndex ``BaseNode`` (e.g. a ``str``), naming its position.
        ValueError: two different inputs with the same id (naming the id and both positions), or a surrogate in an
            input's text (naming the input id and the character offset).
    """
    check_input_types(nodes)
    seen: dict[str, int] = {}
    kept: list[BaseNode] = []
    texts: list[str] = []
    for position, node in enumerate(nodes):
        node_id = node.node_id
        if node_id in seen:
            first = seen[node_id]
            if _identical(kept[first], node):
                continue
            this = _describe(node, node.get_content(metadata_mode=MetadataMode.NONE))
            raise ValueError(
                f"inputs {first} and {position} share the id {node_id!r} but differ "
                f"({_describe(kept[first], texts[first])} vs {this}): node ids derive from the document id, so their "
                "nodes would collide. Give each document a unique id_ (e.g. its file path)."
            )
        text = node.get_content(metadata_mode=MetadataMode.NONE)
        if not text.isascii():
            bad = _SURROGATE.search(text)
            if bad is not None:
                raise ValueError(
                    f"input {node_id!r} has a surrogate code point U+{ord(bad.group()):04X} at character "
                    f"{bad.start()}: it has no UTF-8 encoding, which LlamaIndex's Document.hash, tokenizers and vector "
                    "stores need. Fix the text, e.g. text.encode('utf-8', 'replace').decode('utf-8'), or decode the "
                    "source with errors='replace'."
                )
        seen[node_id] = len(kept)
        kept.append(node)
        texts.append(text)
    return kept, texts
