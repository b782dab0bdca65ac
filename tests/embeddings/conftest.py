"""Fixtures of the embedding tests."""

from __future__ import annotations

import pytest

from llama_index_sac.embeddings.default import default_embedding_model


@pytest.fixture(scope="module")
def minilm():
    return default_embedding_model(backend="torch")  # the ONNX runtime: tests/embeddings/test_onnx.py
