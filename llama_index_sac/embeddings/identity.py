"""What names an embedding model: its identity in cache keys (class, which names the runtime, precision, graph,
device), the space its vectors live in (which models' vectors can be compared), and the device it runs on.

Torch and float32 ONNX all-MiniLM-L6-v2 give the same vectors up to float rounding: one space; int8 is another. A
wrapper that exposes ``wrapped_embedding`` (``CachedEmbedding``) is looked through (:func:`innermost_model`).
"""

from __future__ import annotations

from llama_index.core.base.embeddings.base import BaseEmbedding

__all__ = ["device_kind", "embedding_identity", "embedding_space", "innermost_model"]


def embedding_identity(embed_model: BaseEmbedding) -> dict[str, str]:
    """What identifies an embedding model in a cache key: ``{"class_name": ..., "model_name": ...}``, plus
    ``"precision"`` for a model that declares one (``OnnxEmbedding``: the class names the backend, the precision its
    graph; a torch model whose weights are not float32 names their dtype, ``"float16"``), ``"graph"`` for a model whose
    ``graph_identity`` names a rewritten graph (``OnnxEmbedding`` with the fused graph: its vectors equal the plain
    graph's only up to float rounding, so caches keep them apart) and ``"device"`` for a model on another device
    than the CPU (its kind, ``"cuda"``: a GPU's vectors equal the CPU's up to float rounding). A wrapper that exposes
    ``wrapped_embedding`` is looked through for all of them."""
    identity = {"class_name": embed_model.class_name(), "model_name": str(embed_model.model_name)}
    inner = innermost_model(embed_model)
    precision = getattr(inner, "precision", None)
    if isinstance(precision, str):
        identity["precision"] = precision
    else:
        dtype = _torch_dtype(inner)
        if dtype is not None and dtype != "float32":  # sentence-transformers' weights in half precision
            identity["precision"] = dtype
    graph = getattr(inner, "graph_identity", None)
    if isinstance(graph, str):
        identity["graph"] = graph
    device = device_kind(inner)
    if device is not None and device != "cpu":
        identity["device"] = device
    return identity


def device_kind(embed_model: BaseEmbedding) -> str | None:
    """The kind of device ``embed_model`` runs on (``"cpu"``, ``"cuda"``...; ``None``: unknown): its ``device``
    string (``OnnxEmbedding``), else the device of its sentence-transformers model (``HuggingFaceEmbedding``)."""
    device = getattr(embed_model, "device", None)
    if not isinstance(device, str):
        device = getattr(getattr(embed_model, "_model", None), "device", None)
    kind = getattr(device, "type", device)  # torch.device: its type
    return kind.partition(":")[0] if isinstance(kind, str) else None


def _torch_dtype(embed_model: BaseEmbedding) -> str | None:
    """The dtype of the first weight of the model's torch module (``"float32"``, ``"float16"``...), or ``None``."""
    parameters = getattr(getattr(embed_model, "_model", None), "parameters", None)
    if not callable(parameters):
        return None
    try:
        first = next(iter(parameters()), None)
    except TypeError:
        return None
    dtype = getattr(first, "dtype", None)
    return str(dtype).removeprefix("torch.") if dtype is not None else None


def embedding_space(embed_model: BaseEmbedding) -> dict[str, str]:
    """What decides whether two models' vectors can be compared: ``{"model_name": ..., "precision": ...}``.

    The runtime is left out: all-MiniLM-L6-v2 on torch (``HuggingFaceEmbedding``) and on ONNX Runtime in float32
    (``OnnxEmbedding``, plain or fused graph) give the same vectors up to float rounding (cosine 1 to about six
    decimals), so they are one space; ``precision`` is ``"float32"`` for models that declare none, ``"int8"`` for the
    int8 graph.
    """
    precision = getattr(innermost_model(embed_model), "precision", None)
    return {"model_name": str(embed_model.model_name),
            "precision": precision if isinstance(precision, str) else "float32"}


def innermost_model(embed_model: BaseEmbedding) -> BaseEmbedding:
    """The model a wrapper delegates to (a wrapper, e.g. ``CachedEmbedding``, exposes it as ``wrapped_embedding``)."""
    seen = {id(embed_model)}
    while isinstance(inner := getattr(embed_model, "wrapped_embedding", None), BaseEmbedding) and id(inner) not in seen:
        seen.add(id(inner))
        embed_model = inner
    return embed_model

