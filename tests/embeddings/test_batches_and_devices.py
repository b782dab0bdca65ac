"""Batches by token count (the ONNX backend tokenizes once, orders by tokens, bounds the padding) and the device
option (a GPU that is not there is one clear error; a GPU's vectors are cached apart but stay in the CPU's space)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.bridge.pydantic import ValidationError
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from typer.testing import CliRunner

from llama_index_sac.apps.benchmark.config import RunSettings
from llama_index_sac.apps.cli import app
from llama_index_sac.apps.ingest.ray_engine import RayStages
from llama_index_sac.apps.ingest.steps import IngestSettings, settings_from_options
from llama_index_sac.embeddings import EmbeddingBackendOptions, default_embedding_model
from llama_index_sac.embeddings.default import check_device, embedding_from_identity
from llama_index_sac.embeddings.model import offline_model_path
from llama_index_sac.embeddings.onnx import (
    DEFAULT_MAX_PADDING,
    OnnxEmbedding,
    padding_overhead,
    token_batches,
    token_order,
)
from tests.conftest import offline_installed


def _cuda_visible() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


no_gpu = pytest.mark.skipif(_cuda_visible(), reason="a CUDA GPU is visible here: the no-GPU error path cannot run")


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


# -- devices --------------------------------------------------------------------------------------------------------


def test_device_options_are_validated() -> None:
    assert EmbeddingBackendOptions(device="cuda:1").device == "cuda:1"
    for bad in ("gpu", "cuda:", "CUDA", "cuda:1:2", "mps"):
        with pytest.raises(ValidationError, match="String should match pattern"):
            EmbeddingBackendOptions(device=bad)
    with pytest.raises(ValidationError, match="precision 'float16' runs on a GPU only"):
        EmbeddingBackendOptions(precision="float16")
    with pytest.raises(ValidationError, match="precision 'float16' runs on backend 'torch'"):
        EmbeddingBackendOptions(precision="float16", device="cuda", backend="onnx")
    assert EmbeddingBackendOptions(precision="float16", device="cuda").resolved(None) == "torch"
    assert EmbeddingBackendOptions(device="cuda", backend="onnx").resolved(None) == "onnx"
    with pytest.raises(ValueError, match="device 'tpu' is not one of cpu, cuda, cuda:N"):
        check_device("tpu")
    check_device(None)
    check_device("cpu")


@no_gpu
def test_a_gpu_that_is_not_there_is_one_value_error_naming_it() -> None:
    for device in ("cuda", "cuda:1"):
        with pytest.raises(ValueError, match=f"device '{device}': "):
            default_embedding_model(backend="torch", device=device)
        with pytest.raises(ValueError, match=f"device '{device}': "):
            default_embedding_model(device=device)  # resolved to torch without onnxruntime's CUDA provider
    with pytest.raises(ValueError, match="device 'cuda': "):
        embedding_from_identity({"class_name": "HuggingFaceEmbedding", "model_name": "all-MiniLM-L6-v2",
                                 "device": "cuda"})


@offline_installed
def test_onnx_without_its_cuda_provider_names_the_device() -> None:
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("onnxruntime-gpu is installed here: the missing-provider error cannot run")
    with pytest.raises(ValueError, match="device 'cuda:0': this ONNX Runtime has no CUDA execution provider"):
        default_embedding_model(backend="onnx", device="cuda:0")


def test_the_default_models_space_leaves_the_device_out() -> None:
    from llama_index_sac.settings import recorded_space

    on_gpu = {"class_name": "HuggingFaceEmbedding", "model_name": "sentence-transformers/all-MiniLM-L6-v2",
              "device": "cuda", "precision": "float32"}
    on_cpu = {"class_name": "OnnxEmbedding", "model_name": "sentence-transformers/all-MiniLM-L6-v2",
              "precision": "float32", "graph": "fused.v1"}
    assert recorded_space(on_gpu) == recorded_space(on_cpu)


def test_device_reaches_every_settings_model() -> None:
    assert RunSettings(embed_device="cuda").embed_options().device == "cuda"
    settings_ = IngestSettings(embed_device="cuda:0", engine="ray")
    assert settings_.embed_options().device == "cuda:0" and settings_.embed_gpus() == 1.0
    assert IngestSettings().embed_gpus() == 0.0
    assert settings_from_options(device="cuda").embed_device == "cuda"
    with pytest.raises(ValidationError, match="runs on a GPU only"):
        IngestSettings(embed_precision="float16")
    assert RayStages(parse_and_summarize=list, embed=list, embed_gpus=1.0).embed_gpus == 1.0


runner = CliRunner()


@no_gpu
@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["eval", "--synthetic", "--device", "gpu"], "error: "),
        (["ingest", "{dir}/docs", "--vector-store", "chroma:{dir}/s", "--device", "gpu"],
         "error: --device: String should match pattern"),
        (["ingest", "{dir}/docs", "--vector-store", "chroma:{dir}/s", "--device", "cuda"], "device 'cuda': "),
        (["ingest", "{dir}/docs", "--vector-store", "chroma:{dir}/s", "--embed-precision", "float16"],
         "precision 'float16' runs on a GPU only"),
        (["serve", "--vector-store", "chroma:{dir}/s", "--device", "tpu"], "error: --device: String should match"),
    ],
)
def test_cli_device_errors_are_one_line(tmp_path: Path, command: list[str], message: str) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("This Agreement is governed by the laws of Delaware. " * 20)
    args = [a.replace("{dir}", str(tmp_path)) for a in command]
    if args[0] == "eval":
        args += ["-o", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c"), "-q"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()
