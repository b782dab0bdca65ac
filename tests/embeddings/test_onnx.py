"""The ONNX Runtime backend's model (embeddings/onnx.py): batches by token count (it tokenizes once, orders by
tokens, bounds the padding); and (slow, real model) the same vectors as torch without importing torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler

import llama_index_sac.embeddings.limits as limits
from llama_index_sac.embeddings import OnnxEmbedding, default_embedding_model
from llama_index_sac.embeddings.model import offline_model_path
from llama_index_sac.embeddings.onnx import (
    DEFAULT_MAX_PADDING,
    padding_overhead,
    token_batches,
    token_order,
)
from tests.conftest import offline_installed

REPO = Path(__file__).resolve().parents[2]


# -- token batches --------------------------------------------------------------------------------------------------


def test_token_batches_worked_by_hand() -> None:
    # sorted: 10, 10, 11, 20, 21 (indices 0, 1, 4, 2, 3). [10, 10] + 11 would pad 3 x 11 = 33 > 1.05 x 31 = 32.55: cut;
    # [11] + 20: 40 > 1.05 x 31: cut; [20] + 21: 42 <= 1.05 x 41 = 43.05: kept
    lengths = [10, 10, 20, 21, 11]
    assert token_order(lengths) == [0, 1, 4, 2, 3]
    assert token_batches(lengths, 16) == [[0, 1], [4], [2, 3]]
    assert padding_overhead(lengths, [[0, 1], [4], [2, 3]]) == pytest.approx((20 + 11 + 42) / 72 - 1)  # 1/72
    assert token_batches(lengths, 2, max_padding=1.0) == [[0, 1], [4, 2], [3]]  # the size cap, padding allowed
    assert padding_overhead(lengths, [[0, 1, 4, 2, 3]]) == pytest.approx(5 * 21 / 72 - 1)
    assert token_batches([], 16) == []
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        token_batches(lengths, 0)
    with pytest.raises(ValueError, match="max_padding must be at least 0"):
        token_batches(lengths, 4, max_padding=-0.1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=256), max_size=300), st.integers(min_value=1, max_value=64),
       st.sampled_from([0.0, 0.05, 0.2]))
def test_token_batches_cover_every_text_once_within_the_padding(lengths: list[int], size: int, pad: float) -> None:
    batches = token_batches(lengths, size, max_padding=pad)
    flat = [i for batch in batches for i in batch]
    assert flat == token_order(lengths)  # every text once, in order of tokens
    assert all(1 <= len(batch) <= size for batch in batches)
    for batch in batches:  # each batch, hence all together, pads at most max_padding of its real tokens
        assert padding_overhead(lengths, [batch]) <= pad + 1e-12
    assert padding_overhead(lengths, batches) <= pad + 1e-12


def _mixed_chunks(n: int, seed: int = 0) -> list[str]:
    """``n`` chunks of 120 to 900 characters at seeded offsets of the built-in synthetic contracts."""
    import random

    from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts

    documents = [d for d in synthetic_contracts(n_documents=12, seed=seed).documents.values() if len(d) > 1000]
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        doc, size = rng.choice(documents), rng.randint(120, 900)
        start = rng.randrange(len(doc) - size)
        out.append(doc[start : start + size])
    return out


@offline_installed
def test_padding_by_tokens_is_within_five_percent_on_mixed_chunks() -> None:
    from llama_index_sac.embeddings.onnx import _load_tokenizer

    folder = offline_model_path()
    assert folder is not None
    tokenizer = _load_tokenizer(folder / "tokenizer.json", 256)
    texts = _mixed_chunks(256)
    lengths = [len(e.ids) for e in tokenizer.encode_batch(texts)]
    by_chars = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    chars16 = [by_chars[i : i + 16] for i in range(0, len(texts), 16)]
    batches = token_batches(lengths, 16)
    assert padding_overhead(lengths, batches) <= DEFAULT_MAX_PADDING
    assert padding_overhead(lengths, chars16) > padding_overhead(lengths, batches)  # what ordering by tokens saves
    assert sum(len(b) for b in batches) / len(batches) >= 8  # the bound does not shred the batches


@pytest.mark.slow
@offline_installed
def test_onnx_tokenizes_once_and_gives_the_same_vectors(tmp_path: Path) -> None:
    debug = LlamaDebugHandler()
    model = OnnxEmbedding(num_threads=2, callback_manager=CallbackManager([debug]))  # what the default model is
    texts = _mixed_chunks(40, seed=1) + ["", "word " * 400, _mixed_chunks(1, seed=2)[0]] * 2  # repeats, a cut text
    calls: list[int] = []
    tokenizer = model._tokenizer

    class Counting:
        def encode_batch(self, batch: list[str]) -> Any:
            calls.append(len(batch))
            return tokenizer.encode_batch(batch)

    model._tokenizer = Counting()
    together = np.array(model.get_text_embedding_batch(texts))
    assert calls == [len(texts)]  # one tokenization for the whole call, reused by every batch
    starts = [e for e in debug.get_event_pairs(CBEventType.EMBEDDING)]
    assert len(starts) == len(token_batches([len(e.ids) for e in tokenizer.encode_batch(texts)], 16))
    model._tokenizer = tokenizer
    alone = np.array([model.get_text_embedding(t) for t in texts])  # batches of one: no padding at all
    as_array = model.embed_array(texts).astype(np.float64)
    cosine = (together * alone).sum(1) / np.linalg.norm(together, axis=1) / np.linalg.norm(alone, axis=1)
    assert cosine.min() >= 0.9999
    assert np.array_equal(together, as_array)  # the same batches either way


# -- the real model (slow): same vectors as torch, no torch at run time ---------------------------------------------


TEXTS = [
    "The Tenant shall pay the Landlord a monthly rent of $2,000 on the first day of each month.",
    "This Agreement shall be governed by and construed in accordance with the laws of the State of Delaware.",
    "  Leading and trailing spaces  ",
    "",
    "Ünïcödé, 中文 and emoji 🙂 in a clause.",
    "word " * 400,  # 402 tokens: cut at 256 like sentence-transformers
    "CONFIDENTIALITY.\n\n\tEach party shall keep the other party's Confidential Information secret. " * 3,
]


@pytest.fixture(scope="module")
def both_models():
    onnx = default_embedding_model(backend="onnx", num_threads=2)
    torch_model = default_embedding_model(backend="torch")
    return onnx, torch_model


@offline_installed
@pytest.mark.slow
def test_the_fused_graph_gives_the_plain_graphs_vectors(both_models) -> None:
    from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts

    fused = both_models[0]
    plain = default_embedding_model(backend="onnx", graph="plain", num_threads=2)
    assert isinstance(fused, OnnxEmbedding) and isinstance(plain, OnnxEmbedding)
    assert (fused.graph, plain.graph) == ("fused", "plain") and fused.graph_path != plain.graph_path
    contracts = synthetic_contracts(n_documents=4, seed=1)
    texts = TEXTS + [text[i: i + 600] for text in contracts.documents.values() for i in range(0, 2400, 600)]
    a = np.array(fused.get_text_embedding_batch(texts))
    b = np.array(plain.get_text_embedding_batch(texts))
    assert (a * b).sum(axis=1).min() > 1 - 1e-5


@offline_installed
@pytest.mark.slow
def test_onnx_float32_vectors_equal_torch(both_models) -> None:
    from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts

    onnx, torch_model = both_models
    assert isinstance(onnx, OnnxEmbedding) and type(torch_model).__name__ == "HuggingFaceEmbedding"
    contracts = synthetic_contracts(n_documents=6, seed=0)
    texts = TEXTS + [text[i: i + 600] for text in contracts.documents.values() for i in range(0, 3000, 600)]
    a = np.array(onnx.get_text_embedding_batch(texts))
    b = np.array(torch_model.get_text_embedding_batch(texts))
    assert a.shape == b.shape == (len(texts), 384)
    cosine = (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cosine.min() > 1 - 1e-5, cosine.min()
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    query = "Which law governs the agreement?"
    assert np.dot(onnx.get_query_embedding(query), torch_model.get_query_embedding(query)) > 1 - 1e-5
    # the order given is kept although batches run in order of length
    assert np.allclose(onnx.get_text_embedding_batch(texts[::-1]), a[::-1], atol=1e-6)


@offline_installed
@pytest.mark.slow
def test_onnx_model_pickles_as_its_options(both_models) -> None:
    import pickle

    onnx = both_models[0]
    copy = pickle.loads(pickle.dumps(onnx))  # what Ray does with a model handed to the workers
    assert isinstance(copy, OnnxEmbedding) and copy.num_threads == 2 and copy.graph_path == onnx.graph_path
    assert np.allclose(copy.get_text_embedding(TEXTS[0]), onnx.get_text_embedding(TEXTS[0]), atol=1e-7)


@offline_installed
@pytest.mark.slow
def test_onnx_counts_tokens_like_torch(both_models) -> None:
    onnx, torch_model = both_models
    count, reference = limits.embedding_token_counter(onnx), limits.embedding_token_counter(torch_model)
    assert count is not None and reference is not None
    assert count("hello world") == 4  # [CLS] hello world [SEP]
    assert [count(t) for t in TEXTS] == [reference(t) for t in TEXTS]
    assert count("word " * 400) == 402 and limits.embedding_max_tokens(onnx) == 256


@offline_installed
@pytest.mark.slow
def test_onnx_path_imports_no_torch(both_models) -> None:
    graph = both_models[0].graph_path  # made (once) by the fixture, in the cache folder the child uses too
    code = ("import sys\n"
            "from llama_index_sac import default_embedding_model\n"
            "model = default_embedding_model(num_threads=1)\n"
            "vector = model.get_text_embedding('The lease ends in May.')\n"
            "assert type(model).__name__ == 'OnnxEmbedding' and len(vector) == 384\n"
            "print(str(model.graph_path), 'torch' in sys.modules, 'transformers' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(graph), "False", "False"]
