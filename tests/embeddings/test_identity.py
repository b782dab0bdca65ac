"""embedding_identity and device_kind (embeddings/identity.py): a GPU and half precision are named in cache keys."""

from __future__ import annotations

from typing import Any

from llama_index_sac.embeddings import embedding_identity
from llama_index_sac.embeddings.identity import device_kind
from llama_index_sac.settings import model_space
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
