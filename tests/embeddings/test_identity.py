"""Identities and vector spaces of embedding models (embeddings/identity.py, the settings' model_identity,
model_space and recorded_space, embedding_from_identity): a GPU and half precision are named in cache keys; cache keys
name the runtime, precision and graph; torch and float32 ONNX are one vector space."""

from __future__ import annotations

from typing import Any

import pytest

from llama_index_sac.apps.benchmark.cache import content_key
from llama_index_sac.embeddings import DEFAULT_EMBED_MODEL_NAME, OnnxEmbedding, embedding_identity, embedding_space
from llama_index_sac.embeddings.default import embedding_from_identity, is_default_model
from llama_index_sac.embeddings.identity import device_kind
from llama_index_sac.embeddings.onnx_export import EXPORT_VERSION
from llama_index_sac.settings import model_backend, model_identity, model_space, recorded_space
from tests.conftest import FakeEmbedding


class _Parameter:
    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


class _Module:
    """Stands for a sentence-transformers model: a device with a type, weights with a dtype."""

    def __init__(self, device: str, dtype: str) -> None:
        self.device = type("device", (), {"type": device})()
        self._dtype = dtype

    def parameters(self) -> Any:
        return iter([_Parameter(self._dtype)])


class _OnDevice(FakeEmbedding):
    device: str = "cuda:0"


def test_a_gpu_and_half_precision_are_cached_apart_but_one_vector_space() -> None:
    cpu, gpu = FakeEmbedding(), _OnDevice()
    assert device_kind(cpu) is None and device_kind(gpu) == "cuda"
    assert embedding_identity(gpu) == {**embedding_identity(cpu), "device": "cuda"}
    half = FakeEmbedding()
    half._model = _Module("cuda", "torch.float16")  # type: ignore[attr-defined]
    assert embedding_identity(half) == {**embedding_identity(cpu), "device": "cuda", "precision": "float16"}
    full = FakeEmbedding()
    full._model = _Module("cpu", "torch.float32")  # type: ignore[attr-defined]
    assert embedding_identity(full) == embedding_identity(cpu)  # the CPU in float32: the key it always had
    # FakeEmbedding is not a runtime of the default model: its class stays in the space, the device does not matter
    # to the comparison of the default model's runtimes only
    assert model_space(gpu)["class_name"] == "FakeEmbedding"


# -- identities: cache keys name the runtime and precision; torch and float32 ONNX are one vector space -------------


class TorchLike(FakeEmbedding):
    """Identity of the torch runtime's model (``HuggingFaceEmbedding``) without loading torch."""

    max_length: int = 256
    normalize: bool = True

    @classmethod
    def class_name(cls) -> str:
        return "HuggingFaceEmbedding"


def _onnx(precision: str, graph: str = "plain") -> OnnxEmbedding:
    return OnnxEmbedding.model_construct(model_name=DEFAULT_EMBED_MODEL_NAME, precision=precision, graph=graph,
                                         max_length=256, normalize=True)


def test_cache_keys_differ_between_runtimes_and_precisions() -> None:
    torch_like = TorchLike(model_name=DEFAULT_EMBED_MODEL_NAME)
    identities = [model_identity(m) for m in (torch_like, _onnx("float32"), _onnx("int8"))]
    assert identities[0] == {"class_name": "HuggingFaceEmbedding", "model_name": DEFAULT_EMBED_MODEL_NAME,
                             "max_length": "256", "normalize": "True"}  # unchanged: existing caches stay valid
    assert identities[1] == {"class_name": "OnnxEmbedding", "model_name": DEFAULT_EMBED_MODEL_NAME,
                             "precision": "float32", "max_length": "256", "normalize": "True"}
    assert identities[2]["precision"] == "int8"
    keys = {content_key(identity, "text") for identity in identities}
    assert len(keys) == 3
    assert embedding_identity(_onnx("int8")) == {"class_name": "OnnxEmbedding", "model_name": DEFAULT_EMBED_MODEL_NAME,
                                                 "precision": "int8"}


def test_the_fused_graph_has_its_own_cache_key_but_the_plain_graphs_vector_space() -> None:
    plain, fused = _onnx("float32"), _onnx("float32", "fused")
    assert OnnxEmbedding.model_construct().graph == "fused"  # the default graph
    assert model_identity(fused) == {**model_identity(plain), "graph": f"fused.v{EXPORT_VERSION}"}
    assert "graph" not in model_identity(plain)  # the plain graph's keys are the ones it had before graph kinds
    assert content_key(model_identity(fused), "text") != content_key(model_identity(plain), "text")
    torch_like = TorchLike(model_name=DEFAULT_EMBED_MODEL_NAME)
    assert model_space(fused) == model_space(plain) == model_space(torch_like)
    assert recorded_space(model_identity(fused)) == recorded_space(model_identity(plain))
    assert is_default_model(fused) and is_default_model(plain) and not is_default_model(_onnx("int8"))


def test_an_identity_rebuilds_the_graph_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_index_sac.embeddings.default as default

    calls: list[dict] = []

    def build(**kw: object) -> FakeEmbedding:
        calls.append(kw)
        return FakeEmbedding()

    monkeypatch.setattr(default, "default_embedding_model", build)
    for graph in ("plain", "fused"):
        embedding_from_identity(embedding_identity(_onnx("float32", graph)))
    assert calls == [{"backend": "onnx", "graph": "plain"}, {"backend": "onnx", "graph": "fused"}]
    old_recipe = {**embedding_identity(_onnx("float32", "fused")), "graph": "fused.v0"}
    with pytest.raises(ValueError, match="cannot be rebuilt from its identity"):
        embedding_from_identity(old_recipe)


def test_torch_and_float32_onnx_are_one_vector_space() -> None:
    torch_like = TorchLike(model_name=DEFAULT_EMBED_MODEL_NAME)
    assert model_space(torch_like) == model_space(_onnx("float32")) == {
        "model_name": DEFAULT_EMBED_MODEL_NAME, "precision": "float32", "max_length": "256", "normalize": "True"}
    assert model_space(_onnx("int8")) != model_space(_onnx("float32"))
    assert embedding_space(FakeEmbedding(model_name="fake")) == {"model_name": "fake", "precision": "float32"}
    # a record written before the ONNX backend: the torch class, no precision
    old = {"class_name": "HuggingFaceEmbedding", "model_name": DEFAULT_EMBED_MODEL_NAME, "max_length": "256",
           "normalize": "True"}
    assert recorded_space(old) == model_space(_onnx("float32"))
    fake = FakeEmbedding(model_name="fake")
    assert (model_backend(_onnx("int8")), model_backend(torch_like), model_backend(fake)) == (
        "onnx", "torch", "FakeEmbedding")


def test_the_default_models_space_leaves_the_device_out() -> None:
    from llama_index_sac.settings import recorded_space

    on_gpu = {"class_name": "HuggingFaceEmbedding", "model_name": "sentence-transformers/all-MiniLM-L6-v2",
              "device": "cuda", "precision": "float32"}
    on_cpu = {"class_name": "OnnxEmbedding", "model_name": "sentence-transformers/all-MiniLM-L6-v2",
              "precision": "float32", "graph": "fused.v1"}
    assert recorded_space(on_gpu) == recorded_space(on_cpu)
