"""``SpanNodeParser``: the base of every node parser in this package.

A subclass only decides *where to cut*: it returns ``(start, end)`` character spans into a text. This base turns the
spans into LlamaIndex ``TextNode``s with exact ``start_char_idx``/``end_char_idx`` into the ORIGINAL document,
SOURCE/PREVIOUS/NEXT relationships, inherited metadata and deterministic ids. Offsets are never searched for
(LlamaIndex's ``NodeParser._postprocess_parsed_nodes`` uses ``str.find``, which points a repeated clause at its first
occurrence; this class replaces that step).

Chaining: when the input is itself a chunk (a ``TextNode`` with ``start_char_idx`` and a SOURCE document), the new
nodes' offsets are shifted by the input's start and their SOURCE is the input's SOURCE, so offsets and SOURCE
always refer to the original document.
"""

from __future__ import annotations

import gc
import hashlib
import json
from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from llama_index.core.bridge.pydantic import Field, ValidationInfo, field_serializer, field_validator
from llama_index.core.node_parser.interface import NodeParser
from llama_index.core.schema import (
    BaseNode,
    Document,
    MetadataMode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.utils import get_tqdm_iterable

from llama_index_sac._callable_identity import callable_identity
from llama_index_sac.node_parser._inputs import check_input_types, numeric_annotation, unique_inputs
from llama_index_sac.spans import Span

__all__ = ["SpanNodeParser", "callable_identity", "unique_inputs"]


def _plain_model(cls: type[Any]) -> bool:
    """True when a pydantic model class has no validators, private attributes or extra fields: then an instance
    made of already-validated field values (:func:`_new_model`) equals one built by validation."""
    decorators = cls.__pydantic_decorators__
    return (
        not decorators.model_validators
        and not decorators.field_validators
        and not decorators.root_validators
        and not cls.__private_attributes__
        and cls.model_config.get("extra") in (None, "ignore")
        and cls.__pydantic_post_init__ is None
    )


_FAST_COPY = _plain_model(TextNode) and _plain_model(RelatedNodeInfo)
_BASE_AS_RELATED = BaseNode.as_related_node_info
_RELATED_FIELDS = frozenset(RelatedNodeInfo.model_fields)


def _new_model(cls: type[Any], fields: dict[str, Any], fields_set: Any) -> Any:
    """An instance of the pydantic model ``cls`` from field values that validation already produced (what
    ``cls.model_construct`` does, without its per-field default handling: ``fields`` must hold every field)."""
    model = object.__new__(cls)
    object.__setattr__(model, "__dict__", fields)
    object.__setattr__(model, "__pydantic_fields_set__", set(fields_set))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector while nodes are built; restore its previous state after.

    Building nodes allocates only objects that stay alive (the nodes, their dicts, lists and relationships) and no
    reference cycles, so a collection during it frees nothing; but as the heap grows, the collector's repeated full
    passes over all those new objects can cost more than building them. A caller that disabled the collector keeps
    it disabled."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class SpanNodeParser(NodeParser):
    """Base class: subclasses implement :meth:`_chunk_indices`, everything else is shared.

    Node ids: with ``id_func=None`` (the default) a node's id is derived from the source document id, the span and
    a hash of the parser's settings (``sha256``, formatted like a UUID), so the same input and settings give the
    same ids in every run and process. A custom ``id_func(i, document)`` is called as in LlamaIndex.

    Metadata and size: by default ``chunk_size`` (or the subclass's size limit) measures the chunk's own text, the
    SAC paper's setting (500 characters of content; the document summary and metadata come on top). With
    ``count_metadata=True`` the rendered metadata (the longer of the EMBED and LLM renderings; keys excluded from a
    mode cost nothing in it) is reserved from the limit, as LlamaIndex's ``SentenceSplitter`` does.

    Input checks, before any work (:func:`unique_inputs`): the inputs must be a list of LlamaIndex nodes
    (``TypeError``); two different inputs with one id are refused and an identical repeat is parsed once
    (``ValueError`` naming the id); text with a surrogate code point is refused (``ValueError`` naming the input and
    the offset). Options: every int/float option of every parser refuses ``True``/``False`` (pydantic reads them
    as 1/0).
    """

    id_func: Callable[[int, BaseNode], str] | None = Field(  # type: ignore[assignment]
        default=None,
        description="Node id function (i, document) -> str; None gives deterministic ids from (document id, span, "
        "parser settings).",
    )
    count_metadata: bool = Field(
        default=False,
        description="Reserve room for the rendered metadata inside the size limit (LlamaIndex SentenceSplitter "
        "behaviour). False: the limit measures the chunk text only (SAC paper setting).",
    )

    @field_serializer("id_func")
    def _serialize_id_func(self, fn: Callable[..., Any] | None) -> str | None:
        return callable_identity(fn)

    @field_validator("*", mode="before")
    @classmethod
    def _refuse_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """Every int/float option of every parser refuses ``True``/``False`` (pydantic would read ``True`` as 1)."""
        if isinstance(value, bool) and info.field_name is not None:
            field = cls.model_fields.get(info.field_name)
            if field is not None and numeric_annotation(field.annotation):
                raise ValueError(f"{info.field_name} must be a number, got the bool {value!r}")
        return value

    # -- what subclasses implement ---------------------------------------------------------------------------
    @abstractmethod
    def _chunk_indices(self, text: str, reserve: int = 0) -> list[Span]:
        """Spans of ``text`` with the size limit lowered by ``reserve`` (in the parser's length unit)."""

    def _length(self, text: str) -> int:
        """Length in the parser's unit (characters unless a subclass says otherwise)."""
        return len(text)

    def _size_limit(self) -> int:
        """The size limit that ``count_metadata`` reserves room in."""
        raise NotImplementedError(f"{type(self).__name__} does not support count_metadata=True")

    def _chunk_indices_many(self, texts: list[str], reserves: list[int], show_progress: bool) -> list[list[Span]]:
        """Spans for several texts; a subclass may batch work across documents (e.g. embeddings)."""
        iterable = get_tqdm_iterable(list(zip(texts, reserves)), show_progress, "Parsing nodes")
        return [self._chunk_indices(text, reserve) for text, reserve in iterable]

    async def _achunk_indices_many(
        self, texts: list[str], reserves: list[int], show_progress: bool
    ) -> list[list[Span]]:
        return self._chunk_indices_many(texts, reserves, show_progress)

    # -- public, text level ----------------------------------------------------------------------------------
    def chunk_indices(self, text: str) -> list[Span]:
        """Chunks of ``text`` as ``(start, end)`` code-point spans, in order; ``text[start:end]`` is each chunk."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        return self._chunk_indices(text, 0)

    def chunks(self, text: str) -> list[str]:
        """Chunks of ``text`` as strings (``[text[s:e] for s, e in chunk_indices(text)]``)."""
        return [text[start:end] for start, end in self.chunk_indices(text)]

    def split_text(self, text: str) -> list[str]:
        """Alias of :meth:`chunks`, the name LlamaIndex text splitters use."""
        return self.chunks(text)

    # -- LlamaIndex node parsing -----------------------------------------------------------------------------
    def _metadata_reserve(self, node: BaseNode) -> int:
        if not self.count_metadata:
            return 0
        reserve = 0
        for mode in (MetadataMode.EMBED, MetadataMode.LLM):
            metadata_str = node.get_metadata_str(mode=mode)
            if metadata_str:
                rendered = node.text_template.format(metadata_str=metadata_str, content="")  # type: ignore[attr-defined]
                reserve = max(reserve, self._length(rendered))
        limit = self._size_limit()
        if reserve >= limit:
            raise ValueError(
                f"Metadata length ({reserve}) is longer than chunk size ({limit}) for document {node.node_id!r}: "
                "exclude long metadata keys from EMBED/LLM (excluded_embed_metadata_keys / "
                "excluded_llm_metadata_keys), raise the chunk size, or set count_metadata=False."
            )
        return reserve

    def _settings_hash(self) -> str:
        settings = self.to_dict()
        return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()

    def _nodes_for(self, node: BaseNode, spans: list[Span], settings_hash: str) -> list[BaseNode]:
        text = node.get_content(metadata_mode=MetadataMode.NONE)
        if isinstance(node, TextNode) and not isinstance(node, Document) and node.source_node is not None:
            # the input is itself a chunk: keep offsets and SOURCE relative to its original document
            if node.start_char_idx is None:
                raise ValueError(
                    f"node {node.node_id!r} has a SOURCE document but no start_char_idx: its chunks' offsets could "
                    "not refer to the original document"
                )
            offset, source_info = node.start_char_idx, node.source_node
        else:
            offset, source_info = 0, node.as_related_node_info()
        if not spans:
            return []
        # Speed: pydantic validation of every TextNode would dominate node building. One
        # prototype per document is validated with exactly the arguments each node would get; every node is then
        # a copy of it whose per-node fields are the values validation would give (fresh dict/list copies, the
        # same SOURCE info). The nodes are equal, field for field and in ``model_fields_set``, to validated ones.
        def validated(node_id: str, start: int, end: int, abs_start: int, abs_end: int) -> TextNode:
            return TextNode(
                id_=node_id,
                text=text[start:end],
                start_char_idx=abs_start,
                end_char_idx=abs_end,
                metadata=dict(node.metadata) if self.include_metadata else {},
                excluded_embed_metadata_keys=list(node.excluded_embed_metadata_keys),
                excluded_llm_metadata_keys=list(node.excluded_llm_metadata_keys),
                metadata_seperator=node.metadata_separator,
                metadata_template=node.metadata_template,
                text_template=getattr(node, "text_template", TextNode.model_fields["text_template"].default),
                relationships={NodeRelationship.SOURCE: source_info},
            )

        proto = validated("", 0, 0, offset, offset)
        base_fields, fields_set = proto.__dict__, proto.model_fields_set
        metadata = proto.metadata
        embed_keys, llm_keys = proto.excluded_embed_metadata_keys, proto.excluded_llm_metadata_keys
        source_key = NodeRelationship.SOURCE
        # json.dumps([source id, start, end, settings hash]) with the constant parts encoded once per document
        key_head, key_tail = json.dumps(source_info.node_id) + ", ", ", " + json.dumps(settings_hash) + "]"
        sha256 = hashlib.sha256
        nodes: list[BaseNode] = []
        for i, (start, end) in enumerate(spans):
            abs_start, abs_end = start + offset, end + offset
            if self.id_func is None:
                digest = sha256(f"[{key_head}{abs_start}, {abs_end}{key_tail}".encode()).hexdigest()
                node_id = f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
            else:
                node_id = self.id_func(i, node)
            if not (_FAST_COPY and isinstance(node_id, str) and type(abs_start) is int and type(abs_end) is int):
                nodes.append(validated(node_id, start, end, abs_start, abs_end))  # raises on a bad id or offset
                continue
            fields = base_fields.copy()
            fields["id_"] = node_id
            fields["text"] = text[start:end]
            fields["start_char_idx"] = abs_start
            fields["end_char_idx"] = abs_end
            fields["metadata"] = metadata.copy()
            fields["excluded_embed_metadata_keys"] = embed_keys.copy()
            fields["excluded_llm_metadata_keys"] = llm_keys.copy()
            fields["relationships"] = {source_key: source_info}
            nodes.append(_new_model(TextNode, fields, fields_set))
        return nodes

    def _prepare(self, nodes: Sequence[BaseNode]) -> tuple[list[BaseNode], list[str], list[int]]:
        """The distinct inputs (:func:`unique_inputs`, which raises before any work), their texts and metadata
        reserves."""
        unique, texts = unique_inputs(nodes)
        reserves = [
            self._metadata_reserve(node) if text and not text.isspace() else 0 for node, text in zip(unique, texts)
        ]
        return unique, texts, reserves

    def _assemble(self, nodes: Sequence[BaseNode], all_spans: list[list[Span]]) -> list[BaseNode]:
        settings_hash = self._settings_hash()
        out: list[BaseNode] = []
        with _gc_paused():
            for node, spans in zip(nodes, all_spans):
                out.extend(self._nodes_for(node, spans, settings_hash))
        self._check_nodes(out)
        return out

    def _check_nodes(self, nodes: list[BaseNode]) -> None:
        """Called with the nodes of every parse (sync and async); a subclass may check them (e.g. the embedding
        model's input limit). The base checks nothing."""

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        unique, texts, reserves = self._prepare(nodes)
        return self._assemble(unique, self._chunk_indices_many(texts, reserves, show_progress))

    async def _aparse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        unique, texts, reserves = self._prepare(nodes)
        return self._assemble(unique, await self._achunk_indices_many(texts, reserves, show_progress))

    def get_nodes_from_documents(
        self, documents: Sequence[Document], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        """Parse documents (or chunks, see the module docstring) into nodes. Raises ``TypeError`` for an input that
        is not a list of LlamaIndex nodes and ``ValueError`` for a repeated id or a surrogate (see
        :func:`unique_inputs`), before any work."""
        check_input_types(documents)  # LlamaIndex reads doc.id_ before _parse_nodes
        return super().get_nodes_from_documents(documents, show_progress=show_progress, **kwargs)

    async def aget_nodes_from_documents(
        self, documents: Sequence[Document], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        """Async :meth:`get_nodes_from_documents` (the same checks)."""
        check_input_types(documents)
        return await super().aget_nodes_from_documents(documents, show_progress=show_progress, **kwargs)

    def _postprocess_parsed_nodes(
        self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]
    ) -> list[BaseNode]:
        """PREVIOUS/NEXT links between consecutive nodes of the same source; offsets and metadata are already
        exact (no ``str.find``)."""
        if not self.include_prev_next_rel:
            return nodes
        sources = [node.source_node for node in nodes]
        infos: dict[int, tuple[str, Any, str]] = {}  # node index -> (node_id, node_type, hash), computed once

        def related(i: int) -> RelatedNodeInfo:
            """``nodes[i].as_related_node_info()``: a new object each time, the hash computed once per node."""
            node = nodes[i]
            if not _FAST_COPY or type(node).as_related_node_info is not _BASE_AS_RELATED:
                return node.as_related_node_info()
            if i not in infos:
                infos[i] = (node.node_id, node.get_type(), node.hash)
            node_id, node_type, digest = infos[i]
            fields = {"node_id": node_id, "node_type": node_type, "metadata": dict(node.metadata), "hash": digest}
            return _new_model(RelatedNodeInfo, fields, _RELATED_FIELDS)

        with _gc_paused():
            for i in range(1, len(nodes)):
                prev_src, cur_src = sources[i - 1], sources[i]
                if prev_src is not None and cur_src is not None and prev_src.node_id == cur_src.node_id:
                    nodes[i - 1].relationships[NodeRelationship.NEXT] = related(i)
                    nodes[i].relationships[NodeRelationship.PREVIOUS] = related(i - 1)
        return nodes
