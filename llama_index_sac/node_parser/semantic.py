"""``SemanticNodeParser``: break a document where the meaning of consecutive sentences shifts.

The recipe of Kamradt's "5 levels of text splitting", LlamaIndex's ``SemanticSplitterNodeParser`` and LangChain's
``SemanticChunker`` (sentences -> embeddings -> distances between neighbours -> breakpoints), rebuilt on exact spans
and with each sentence embedded once. The SAC paper (Reuter et al., 2025, arXiv 2510.06999, section 3) compares it
with recursive character splitting for legal retrieval.

Steps for one document (``text``), all spans being code-point offsets into ``text``:

1. **Units.** ``sentence_spans(text, sentence_backend)`` tiles the text into sentences (each keeps its trailing
   whitespace). A sentence longer than ``max_chunk_size`` characters is cut by :func:`recursive_chunk_spans` into
   pieces of at most ``max_chunk_size``; the sentences and pieces are the *units*, the atoms of every chunk.
2. **Embedding, once per unit text.** Each unit's stripped text is embedded exactly once: across all documents of a
   call, the distinct unit texts are sorted by length and sent in batches of ``embed_batch_size`` (similar lengths
   in one batch means little padding, which dominates the cost of a transformer on CPU). A repeated text (the same
   boilerplate sentence twice, in one document or in two) is embedded once. A blank document has no unit and a
   one-unit document is one chunk: neither costs an embedding.
3. **Buffer windows without re-embedding.** LlamaIndex and LangChain embed, for every sentence, the concatenation
   of it and ``buffer_size`` neighbours on each side: each sentence is embedded ``2 * buffer_size + 1`` times. Here
   the window vector of unit ``i`` is the length-weighted mean of the unit vectors ``i - buffer_size .. i +
   buffer_size`` (prefix sums, ``O(n * dim)``), then normalized. For a mean-pooling model such as all-MiniLM-L6-v2
   this approximates the embedding of the concatenated window (the pooled vector is the token-weighted mean of the
   token vectors; the character count stands in for the token count), without the repeated cost.
4. **Distances** ``d[k] = 1 - cos(window[k], window[k + 1])`` for a cut between unit ``k`` and unit ``k + 1``.
5. **Breakpoints** (``breakpoint_method``; ``breakpoint_threshold_amount`` defaults per method, in brackets):

   * ``"percentile"`` (95): cut where ``d[k]`` exceeds the given percentile of ``d`` (LlamaIndex, LangChain);
   * ``"standard_deviation"`` (3): cut where ``d[k] > mean(d) + amount * std(d)`` (LangChain);
   * ``"interquartile"`` (1.5): cut where ``d[k] > mean(d) + amount * (q75 - q25)`` (LangChain's formula);
   * ``"gradient"`` (95): cut where the rise ``d[k] - d[k - 1]`` exceeds the given percentile of the rises (0 for
     ``k = 0``); needs at least two distances. LangChain uses ``np.gradient(d)``, a central difference, which puts
     a single jump at ``k`` on ``k - 1`` (``+0.5``) and ``k + 1`` (``-0.5``), so it cuts one unit BEFORE the shift;
     the backward difference peaks at the shift itself;
   * ``"threshold"`` (0.5): the running-chunk recipe: walk the units, keep the length-weighted centroid of the
     current chunk, and start a new chunk when the cosine similarity between that centroid and the next unit's
     *forward* window (the unit and the ``buffer_size`` units after it, so the candidate never contains text of the
     chunk it is compared with) drops below ``amount``, an absolute similarity in ``[-1, 1]``. 0.5 suits MiniLM,
     whose same-topic sentence pairs score about 0.4 to 0.7 and unrelated ones below 0.3 (recipes quoting 0.8 are
     for OpenAI models, whose similarities are all high).

   ``number_of_chunks = n`` replaces the threshold of the four distance-based methods (LangChain's option of the
   same name, which turns ``n`` into an approximate percentile): each document is cut at its ``n - 1`` largest
   scores (distances; rises for ``"gradient"``), counting only scores above zero, ties to the earlier cut. So a
   document with fewer than ``n`` units, or with fewer than ``n - 1`` real shifts (identical sentences), gets fewer
   chunks, never an error; step 6 then applies, so ``max_chunk_size`` can add cuts and ``min_chunk_size`` remove
   some. Two consequences of the windows: with ``buffer_size >= 1`` a two-sentence document has one distance of 0
   (both windows hold both sentences) and stays one chunk (``buffer_size=0`` compares the sentences themselves);
   ``"gradient"`` never cuts after the first unit (its rise is 0 by definition), so it can give fewer chunks than
   the other methods for the same ``n``.

   A distance must exceed its threshold by more than ``1e-9``, so floating-point noise never cuts a document of
   identical sentences (zero variance gives no breakpoint). Fewer than two units: no distance, no breakpoint.
6. **Size.** A group longer than ``max_chunk_size`` is cut greedily from its start: each chunk ends, among the unit
   boundaries that keep it within ``max_chunk_size`` (and, where possible, at least half of it), at the boundary
   with the largest distance (the weakest semantic link; ties go to the longer chunk). Then every chunk shorter than
   ``min_chunk_size`` merges into the neighbour whose centroid is more similar (smallest chunk first), when the
   merged chunk stays within ``max_chunk_size``; a fragment that fits with neither neighbour stays as it is.

Guarantees: ``text[start:end]`` is each chunk (exact offsets); starts and ends strictly increase; no chunk is empty
or whitespace-only; no chunk is longer than ``max_chunk_size`` characters (minus the metadata reserve with
``count_metadata=True``); consecutive chunks touch, so ``"".join(chunks) == text`` (P-LOSSLESS), except where the
recursive fallback of step 1 left out a whitespace run that fits neither in the chunk before nor in the chunk after
it within ``max_chunk_size`` (P-COVER still holds: only whitespace is ever left out, and only next to a sentence
longer than ``max_chunk_size``, e.g. ``"\n\n\nSECTION 1. ..."`` with a limit of 30); the same
texts and settings give the same chunks. 0 sentences (``""``, blank) -> ``[]``; 1 sentence -> ``[text]`` when it fits;
2 sentences -> 1 or 2 chunks.

Cost: linear in the text apart from the embedding calls (sentence splitting, see :mod:`llama_index_sac.sentences`;
steps 3 to 6 are ``O(k log k)`` in the ``k`` units, ``llama_index_sac.node_parser._semantic_steps``), adversarial text
included. Memory is per unit: about six float64 vectors of the embedding dimension for each sentence of the document
being parsed, plus one vector per distinct sentence of the call.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, Literal

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, field_serializer, field_validator, model_validator
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.utils import get_tqdm_iterable

from llama_index_sac.constants import (
    DEFAULT_BREAKPOINT_METHOD,
    DEFAULT_BUFFER_SIZE,
    DEFAULT_MAX_CHUNK_SIZE,
    DEFAULT_MIN_CHUNK_SIZE,
    DEFAULT_SEMANTIC_BATCH_SIZE,
    DEFAULT_SENTENCE_BACKEND,
)
from llama_index_sac.embeddings.default import default_embedding_model, embedding_from_identity, is_default_model
from llama_index_sac.embeddings.identity import embedding_identity
from llama_index_sac.embeddings.limits import OverflowPolicy, check_embed_limit
from llama_index_sac.node_parser._semantic_steps import (
    DocumentGeometry,
    breakpoints,
    cap_group,
    close_gaps,
    merge_small,
)
from llama_index_sac.node_parser.base import SpanNodeParser
from llama_index_sac.node_parser.recursive import recursive_chunk_spans
from llama_index_sac.sentences import SentenceBackend, sentence_spans
from llama_index_sac.spans import Span

__all__ = ["BreakpointMethod", "DEFAULT_BREAKPOINT_AMOUNTS", "SemanticNodeParser"]

BreakpointMethod = Literal["threshold", "percentile", "standard_deviation", "interquartile", "gradient"]

#: Default ``breakpoint_threshold_amount`` per method.
DEFAULT_BREAKPOINT_AMOUNTS: dict[str, float] = {
    "threshold": 0.5,
    "percentile": 95.0,
    "standard_deviation": 3.0,
    "interquartile": 1.5,
    "gradient": 95.0,
}

#: The embedding requests of a parse: yields a batch of texts, receives their vectors, returns the spans.
_Plan = Generator[list[str], Sequence[Sequence[float]], list[list[Span]]]


class SemanticNodeParser(SpanNodeParser):
    """Semantic splitting as a LlamaIndex node parser, with exact offsets and each sentence embedded once.

    See the module docstring for the algorithm, the breakpoint methods and the guarantees. Sizes are in characters.

    Example::

        parser = SemanticNodeParser()                    # all-MiniLM-L6-v2 via default_embedding_model()
        nodes = parser.get_nodes_from_documents(documents)        # batched across documents
        nodes = await parser.aget_nodes_from_documents(documents) # same body, async embedding calls
        spans = parser.chunk_indices(contract_text)               # [(0, 812), (812, 1490), ...]

    Embedding limit: every node built (``get_nodes_from_documents``, its async twin, an ``IngestionPipeline``) is
    measured with the model's tokenizer, EMBED string included; nodes longer than the model reads (256 tokens for
    MiniLM) give one :class:`~llama_index_sac.embeddings.limits.EmbedLimitWarning` per parse, or ``ValueError`` with
    ``on_embed_overflow="raise"``. ``chunk_indices`` / ``chunks`` return spans and are not measured.

    Ingestion cache: the embedding model is not serialized, but its identity (class name and ``model_name``) is in
    ``to_dict()``, so two parsers with different models or settings never share cache entries or node ids.
    ``from_dict(parser.to_dict())`` and pickle rebuild the default model from that identity (a pickled parser does
    not carry the weights); a parser with another model round-trips with ``from_dict(data, embed_model=model)``
    and pickles with its model.

    Args:
        embed_model: any LlamaIndex ``BaseEmbedding``; default all-MiniLM-L6-v2 from :func:`default_embedding_model`.
        sentence_backend: ``"nupunkt"`` (default, Punkt trained on legal text) or ``"nltk"``.
        buffer_size: neighbouring units on each side averaged into a unit's window vector; default 1.
        breakpoint_method: ``"percentile"`` (default), ``"standard_deviation"``, ``"interquartile"``,
            ``"gradient"`` or ``"threshold"`` (module docstring, step 5).
        breakpoint_threshold_amount: the method's parameter; ``None`` takes the method's default.
        number_of_chunks: cut each document at its ``number_of_chunks - 1`` largest scores instead of a threshold;
            ``None`` (default) lets the threshold decide. Not with ``"threshold"``.
        min_chunk_size: chunks shorter than this many characters merge into a neighbour (0: off); default 100.
        max_chunk_size: no chunk is longer than this many characters (``None``: no limit); default 1000.
        embed_batch_size: texts per call to the embedding model; default 64.
        on_embed_overflow: a node longer than the model reads: ``"warn"`` (default), ``"raise"`` or ``"ignore"``.
        show_progress: show a progress bar over the embedding batches.
        count_metadata: reserve room for the rendered metadata inside ``max_chunk_size`` (see
            :class:`~llama_index_sac.node_parser.base.SpanNodeParser`).
        id_func: node id function ``(i, document) -> str``; ``None`` gives deterministic ids.

    Raises:
        ValueError: a pydantic ``ValidationError`` for ``buffer_size < 0``; sizes out of range or
            ``min_chunk_size > max_chunk_size``; a ``breakpoint_threshold_amount`` outside ``[0, 100]`` for
            ``percentile``/``gradient``, negative for ``standard_deviation``/``interquartile``, outside ``[-1, 1]``
            for ``threshold``; ``count_metadata=True`` without ``max_chunk_size``; ``number_of_chunks < 1`` or
            ``number_of_chunks`` with ``breakpoint_method="threshold"`` or with a ``breakpoint_threshold_amount``.
        EmbeddingModelError: when no ``embed_model`` is given and the default model cannot be loaded.
        ValueError: at parse time, when the embedding model returns a wrong number of vectors or non-finite values.
    """

    embed_model: BaseEmbedding = Field(
        default_factory=lambda: default_embedding_model(),
        description="Embedding model (any LlamaIndex BaseEmbedding); default all-MiniLM-L6-v2 from "
        "default_embedding_model(). Serialized as its identity (class name + model_name) only.",
    )
    sentence_backend: SentenceBackend = Field(
        default=DEFAULT_SENTENCE_BACKEND,
        description="Sentence segmentation backend: 'nupunkt' (legal Punkt) or 'nltk'.",
    )
    buffer_size: int = Field(
        default=DEFAULT_BUFFER_SIZE,
        ge=0,
        description="Neighbouring units on each side averaged into a unit's window vector (0: the unit alone). "
        "Windows are combined from the units' vectors, never re-embedded.",
    )
    breakpoint_method: BreakpointMethod = Field(
        default=DEFAULT_BREAKPOINT_METHOD,
        description="How breakpoints are chosen: 'threshold' (absolute cosine similarity against the running "
        "chunk), 'percentile', 'standard_deviation', 'interquartile' or 'gradient'.",
    )
    breakpoint_threshold_amount: float | None = Field(
        default=None,
        description="The method's parameter (None: 0.5 for threshold, 95 for percentile and gradient, 3 for "
        "standard_deviation, 1.5 for interquartile).",
    )
    number_of_chunks: int | None = Field(
        default=None,
        ge=1,
        description="Instead of a threshold, cut each document at its number_of_chunks - 1 largest scores "
        "(distances; rises for 'gradient'), only where the score is above zero; then max_chunk_size and "
        "min_chunk_size apply. None: the method's threshold decides. Not with 'threshold'.",
    )
    min_chunk_size: int = Field(
        default=DEFAULT_MIN_CHUNK_SIZE,
        ge=0,
        description="Chunks shorter than this many characters merge into a neighbour (0: off).",
    )
    max_chunk_size: int | None = Field(
        default=DEFAULT_MAX_CHUNK_SIZE,
        gt=0,
        description="No chunk is longer than this many characters (about 256 MiniLM tokens of English legal text); "
        "over-long sentences are cut by recursive character splitting. None: no limit.",
    )
    embed_batch_size: int = Field(
        default=DEFAULT_SEMANTIC_BATCH_SIZE,
        gt=0,
        description="Texts per call to the embedding model (the model may split a call further by its own "
        "embed_batch_size).",
    )
    on_embed_overflow: OverflowPolicy = Field(
        default="warn",
        exclude=True,
        description="When a node's EMBED string (chunk + embedded metadata) is longer than the embedding model "
        "reads (256 tokens for MiniLM; measured with the model's tokenizer when it exposes one): one "
        "EmbedLimitWarning per parse ('warn'), ValueError ('raise') or nothing ('ignore'). Chunks are never cut, "
        "so it is not part of the cache key or the node ids.",
    )
    show_progress: bool = Field(
        default=False, exclude=True, description="Show a progress bar over embedding batches (not in the cache key)."
    )

    @field_serializer("embed_model")
    def _serialize_embed_model(self, model: BaseEmbedding) -> dict[str, str]:
        return embedding_identity(model)

    @field_validator("embed_model", mode="before")
    @classmethod
    def _embed_model_from_identity(cls, value: Any) -> Any:
        return embedding_from_identity(value) if isinstance(value, dict) else value

    def __getstate__(self) -> dict[str, Any]:
        model = self.embed_model
        if not is_default_model(model):
            return super().__getstate__()
        self.__dict__["embed_model"] = embedding_identity(model)  # rebuilt from its identity where it is unpickled
        try:
            state = super().__getstate__()
            state["__dict__"] = dict(state["__dict__"])
        finally:
            self.__dict__["embed_model"] = model
        return state

    @model_validator(mode="after")
    def _check_settings(self) -> SemanticNodeParser:
        amount = self.threshold_amount
        method = self.breakpoint_method
        if not np.isfinite(amount):
            raise ValueError(f"breakpoint_threshold_amount must be finite, got {amount}")
        if method in ("percentile", "gradient") and not 0 <= amount <= 100:
            raise ValueError(f"breakpoint_threshold_amount for {method!r} is a percentile in [0, 100], got {amount}")
        if method in ("standard_deviation", "interquartile") and amount < 0:
            raise ValueError(f"breakpoint_threshold_amount for {method!r} must be >= 0, got {amount}")
        if method == "threshold" and not -1 <= amount <= 1:
            raise ValueError(
                f"breakpoint_threshold_amount for 'threshold' is a cosine similarity in [-1, 1], got {amount}"
            )
        if self.number_of_chunks is not None and self.breakpoint_threshold_amount is not None:
            raise ValueError(
                "number_of_chunks and breakpoint_threshold_amount both set: number_of_chunks replaces the threshold, "
                "give one of them"
            )
        if self.number_of_chunks is not None and method == "threshold":
            raise ValueError(
                "number_of_chunks needs a distance-based breakpoint_method (percentile, standard_deviation, "
                "interquartile or gradient); 'threshold' compares each unit with the running chunk and has no "
                "score to rank"
            )
        if self.max_chunk_size is not None and self.min_chunk_size > self.max_chunk_size:
            raise ValueError(
                f"min_chunk_size ({self.min_chunk_size}) must not exceed max_chunk_size ({self.max_chunk_size})"
            )
        if self.count_metadata and self.max_chunk_size is None:
            raise ValueError("count_metadata=True needs a max_chunk_size to reserve the metadata length in")
        return self

    @property
    def threshold_amount(self) -> float:
        """The effective ``breakpoint_threshold_amount`` (the method's default when unset)."""
        if self.breakpoint_threshold_amount is not None:
            return float(self.breakpoint_threshold_amount)
        return DEFAULT_BREAKPOINT_AMOUNTS[self.breakpoint_method]

    @classmethod
    def class_name(cls) -> str:
        return "SemanticNodeParser"

    @classmethod
    def from_defaults(cls, embed_model: BaseEmbedding | None = None, **kwargs: Any) -> SemanticNodeParser:
        """Build a parser; ``embed_model=None`` means :func:`default_embedding_model` (all-MiniLM-L6-v2); every other
        keyword is a field, and a field not given keeps its default."""
        if embed_model is not None:
            kwargs["embed_model"] = embed_model
        return cls(**kwargs)

    def _size_limit(self) -> int:
        if self.max_chunk_size is None:  # pragma: no cover - refused by the validator
            raise ValueError("count_metadata=True needs a max_chunk_size")
        return self.max_chunk_size

    # -- the algorithm -----------------------------------------------------------------------------------------
    def _units(self, text: str, limit: int | None) -> list[Span]:
        """Step 1: sentences, with those longer than ``limit`` cut recursively."""
        if not text or text.isspace():  # (not text.strip(): no copy of a long text)
            return []
        units: list[Span] = []
        for start, end in sentence_spans(text, self.sentence_backend):
            if limit is None or end - start <= limit:
                units.append((start, end))
            else:
                pieces = recursive_chunk_spans(text[start:end], chunk_size=limit)
                units.extend((start + a, start + b) for a, b in pieces)
        return units

    def _chunks_from_vectors(
        self, text: str, units: list[Span], vectors: np.ndarray, limit: int | None
    ) -> list[Span]:
        """Steps 3 to 6 for one document."""
        if not units:
            return []
        if len(units) == 1:
            return close_gaps(len(text), [units[0]], limit)
        weights = np.array([max(end - start, 1) for start, end in units], dtype=float)
        geo = DocumentGeometry(units, vectors, weights, self.buffer_size)
        cuts = breakpoints(geo, self.breakpoint_method, self.threshold_amount, self.number_of_chunks)
        bounds = [-1, *cuts, len(units) - 1]
        chunks: list[tuple[int, int]] = []
        for a, b in zip(bounds, bounds[1:]):
            chunks.extend(cap_group(geo, a + 1, b, limit))
        chunks = merge_small(geo, chunks, self.min_chunk_size, limit)
        return close_gaps(len(text), [geo.span(lo, hi) for lo, hi in chunks], limit)

    def _plan(self, texts: list[str], reserves: list[int], show_progress: bool) -> _Plan:
        """The whole parse as a generator of embedding requests, shared by the sync and async drivers.

        Yields batches of texts (distinct unit texts of ALL documents, sorted by length) and receives their vectors;
        returns the spans of every document."""
        limits = [None if self.max_chunk_size is None else self.max_chunk_size - r for r in reserves]
        doc_units = [self._units(text, limit) for text, limit in zip(texts, limits)]
        index: dict[str, int] = {}
        doc_keys: list[list[int]] = []
        for text, units in zip(texts, doc_units):
            # a document of one unit is one chunk: it needs no embedding
            spans = units if len(units) > 1 else []
            doc_keys.append([index.setdefault(text[start:end].strip(), len(index)) for start, end in spans])
        distinct = list(index)
        order = sorted(range(len(distinct)), key=lambda i: (len(distinct[i]), i))
        rows: dict[int, np.ndarray] = {}
        batches = [order[i : i + self.embed_batch_size] for i in range(0, len(order), self.embed_batch_size)]
        for batch in get_tqdm_iterable(batches, show_progress, "Embedding sentences"):
            vectors = yield [distinct[i] for i in batch]
            if len(vectors) != len(batch):
                raise ValueError(
                    f"{type(self.embed_model).__name__} returned {len(vectors)} embeddings for {len(batch)} texts"
                )
            for i, vector in zip(batch, vectors):
                rows[i] = np.asarray(vector, dtype=float)
        matrix = np.vstack([rows[i] for i in range(len(distinct))]) if distinct else np.zeros((0, 1))
        if matrix.ndim != 2 or not np.all(np.isfinite(matrix)):
            raise ValueError(f"{type(self.embed_model).__name__} returned non-finite or ragged embeddings")
        return [
            self._chunks_from_vectors(text, units, matrix[keys] if keys else matrix[:0], limit)
            for text, units, keys, limit in zip(texts, doc_units, doc_keys, limits)
        ]

    def _check_nodes(self, nodes: list[BaseNode]) -> None:
        check_embed_limit(
            [node.get_content(metadata_mode=MetadataMode.EMBED) for node in nodes],
            self.embed_model,
            what="SemanticNodeParser nodes (EMBED string: chunk + embedded metadata)",
            advice=("set max_chunk_size" if self.max_chunk_size is None else "lower max_chunk_size")
            + " (English legal text has about 4 characters per MiniLM token, so 1,000 characters can exceed 256 "
            "tokens) or exclude metadata keys from embedding.",
            on_overflow=self.on_embed_overflow,
        )

    # -- drivers: the same plan, sync or async embedding calls ---------------------------------------------------
    def _chunk_indices_many(self, texts: list[str], reserves: list[int], show_progress: bool) -> list[list[Span]]:
        plan = self._plan(texts, reserves, show_progress or self.show_progress)
        try:
            batch = next(plan)
            while True:
                batch = plan.send(self.embed_model.get_text_embedding_batch(batch))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    async def _achunk_indices_many(
        self, texts: list[str], reserves: list[int], show_progress: bool
    ) -> list[list[Span]]:
        plan = self._plan(texts, reserves, show_progress or self.show_progress)
        try:
            batch = next(plan)
            while True:
                batch = plan.send(await self.embed_model.aget_text_embedding_batch(batch))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def _chunk_indices(self, text: str, reserve: int = 0) -> list[Span]:
        return self._chunk_indices_many([text], [reserve], False)[0]
