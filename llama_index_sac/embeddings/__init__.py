"""The embedding model: all-MiniLM-L6-v2 offline and sha256-checked, its identity and input limits."""

from llama_index_sac.embeddings.model import (
    DEFAULT_EMBED_BATCH_SIZE,
    DEFAULT_EMBED_MODEL_NAME,
    MINILM_HUB_REVISION,
    MINILM_MAX_INPUT_TOKENS,
    MINILM_SAFETENSORS_SHA256,
    EmbeddingModelError,
    EmbedLimitWarning,
    OverflowPolicy,
    check_embed_limit,
    check_text_limit,
    default_embedding_model,
    embedding_identity,
    embedding_max_tokens,
    embedding_token_counter,
    offline_model_path,
    token_length_function,
)

__all__ = [
    "DEFAULT_EMBED_BATCH_SIZE",
    "DEFAULT_EMBED_MODEL_NAME",
    "EmbedLimitWarning",
    "EmbeddingModelError",
    "MINILM_HUB_REVISION",
    "MINILM_MAX_INPUT_TOKENS",
    "MINILM_SAFETENSORS_SHA256",
    "OverflowPolicy",
    "check_embed_limit",
    "check_text_limit",
    "default_embedding_model",
    "embedding_identity",
    "embedding_max_tokens",
    "embedding_token_counter",
    "offline_model_path",
    "token_length_function",
]
