"""Typed views of LlamaIndex nodes for the tests.

LlamaIndex types parser and transformation outputs as ``BaseNode``; the text, the character offsets
(``start_char_idx``/``end_char_idx``) and the single SOURCE relationship live on subclasses or are optional. These
helpers check, with an ``assert``, what the tests rely on, so that a node of another kind fails loudly instead of
being read through a missing attribute, and the type checker sees the narrowed type.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

from llama_index.core.schema import BaseNode, NodeRelationship, RelatedNodeInfo, TextNode

if TYPE_CHECKING:

    class LocatedNode(TextNode):
        """Type-checking view of a :class:`TextNode` whose character offsets are set (ints, not ``None``); never
        instantiated: :func:`located_nodes` checks real ``TextNode`` objects and returns them as this type."""

        start_char_idx: int
        end_char_idx: int

else:
    LocatedNode = TextNode


def text_node(node: BaseNode) -> TextNode:
    """``node`` itself, asserted to be a :class:`TextNode` (text plus character offsets).

    Raises:
        AssertionError: ``node`` is another kind of node (a ``Document``, an ``ImageNode``...).
    """
    assert isinstance(node, TextNode), f"expected a TextNode, got {type(node).__name__}"
    return node


def text_nodes(nodes: Iterable[BaseNode]) -> list[TextNode]:
    """``nodes`` in their order, each asserted to be a :class:`TextNode` (see :func:`text_node`).

    Raises:
        AssertionError: one of ``nodes`` is not a ``TextNode``.
    """
    return [text_node(node) for node in nodes]


def located_node(node: BaseNode) -> LocatedNode:
    """``node`` itself, asserted to be a :class:`TextNode` with both character offsets set (ints).

    Raises:
        AssertionError: ``node`` is not a ``TextNode``, or ``start_char_idx``/``end_char_idx`` is not an int.
    """
    checked = text_node(node)
    assert isinstance(checked.start_char_idx, int) and isinstance(checked.end_char_idx, int), (
        f"node {node.node_id!r} has no exact offsets: {checked.start_char_idx!r}, {checked.end_char_idx!r}"
    )
    return cast(LocatedNode, checked)


def located_nodes(nodes: Iterable[BaseNode]) -> list[LocatedNode]:
    """``nodes`` in their order, each checked by :func:`located_node` (a ``TextNode`` with int offsets).

    Raises:
        AssertionError: one of ``nodes`` is not a ``TextNode`` or lacks an offset.
    """
    return [located_node(node) for node in nodes]


def source_id(node: BaseNode) -> str:
    """The ``node_id`` of ``node``'s SOURCE relationship (the document it was cut from).

    Raises:
        AssertionError: ``node`` has no SOURCE relationship.
    """
    source = node.source_node
    assert source is not None, f"node {node.node_id!r} has no SOURCE relationship"
    return source.node_id


def related_id(node: BaseNode, relation: NodeRelationship) -> str:
    """The ``node_id`` of ``node``'s single ``relation`` (PREV, NEXT, PARENT or SOURCE; not CHILD, a list).

    Raises:
        KeyError: ``node`` has no ``relation``.
        AssertionError: ``relation`` holds a list of nodes (CHILD), not one.
    """
    related = node.relationships[relation]
    assert isinstance(related, RelatedNodeInfo), f"{relation.name} of {node.node_id!r} is a list, not one node"
    return related.node_id
