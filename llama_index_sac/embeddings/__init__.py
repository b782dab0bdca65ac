"""The embedding model: all-MiniLM-L6-v2 offline and sha256-checked on ONNX Runtime or torch, its identity and input
limits."""

from llama_index_sac.embeddings.default import (
    EMBED_BACKENDS,
    EMBED_PRECISIONS,
    EmbedBackend,
    EmbeddingBackendOptions,
    default_embedding_model,
    embedding_from_identity,
    is_default_model,
)
from llama_index_sac.embeddings.identity import embedding_identity, embedding_space
from llama_index_sac.embeddings.limits import (
    EmbedLimitWarning,
    OverflowPolicy,
    check_embed_limit,
    check_text_limit,
    embedding_max_tokens,
    embedding_token_counter,
    token_length_function,
)
from llama_index_sac.embeddings.model import (
    DEFAULT_EMBED_BATCH_SIZE,
    DEFAULT_EMBED_MODEL_NAME,
    MINILM_HUB_REVISION,
    MINILM_MAX_INPUT_TOKENS,
    MINILM_SAFETENSORS_SHA256,
    EmbeddingModelError,
    offline_model_path,
    torch_embedding_model,
)
from llama_index_sac.embeddings.onnx import OnnxEmbedding
from llama_index_sac.embeddings.onnx_export import OnnxCacheWarning, onnx_model_file

__all__ = [
    "DEFAULT_EMBED_BATCH_SIZE",
    "DEFAULT_EMBED_MODEL_NAME",
    "EMBED_BACKENDS",
    "EMBED_PRECISIONS",
    "EmbedBackend",
    "EmbedLimitWarning",
    "EmbeddingBackendOptions",
    "EmbeddingModelError",
    "MINILM_HUB_REVISION",
    "MINILM_MAX_INPUT_TOKENS",
    "MINILM_SAFETENSORS_SHA256",
    "OnnxCacheWarning",
    "OnnxEmbedding",
    "OverflowPolicy",
    "check_embed_limit",
    "check_text_limit",
    "default_embedding_model",
    "embedding_from_identity",
    "embedding_identity",
    "embedding_max_tokens",
    "embedding_space",
    "embedding_token_counter",
    "is_default_model",
    "offline_model_path",
    "onnx_model_file",
    "token_length_function",
    "torch_embedding_model",
]
