"""The embedding backend's options (embeddings/default.py: EmbeddingBackendOptions, default_embedding_model,
check_device): backend, precision, threads, graph and device validated and resolved, a GPU that is not there is one
clear error, and the applications' settings and commands give the same checks (one error line)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from llama_index.core.bridge.pydantic import ValidationError
from typer.testing import CliRunner

import llama_index_sac.embeddings.model as emb
from llama_index_sac.apps.benchmark.config import RunSettings
from llama_index_sac.apps.cli import app
from llama_index_sac.apps.ingest.ray_engine import RayStages
from llama_index_sac.apps.ingest.steps import IngestSettings, settings_from_options
from llama_index_sac.embeddings import EmbeddingBackendOptions, EmbeddingModelError, default_embedding_model
from llama_index_sac.embeddings.default import check_device, embedding_from_identity
from tests.conftest import offline_installed

# -- options ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"backend": "tensorflow"}, "Input should be 'onnx' or 'torch'"),
        ({"precision": "fp16"}, "Input should be 'float32'"),
        ({"precision": "int8"}, "Input should be 'float32'"),  # measured, not offered (bench/README.md)
        ({"num_threads": 0}, "greater than or equal to 1"),
        ({"backend": "torch", "num_threads": 2}, "num_threads applies to backend 'onnx'"),
    ],
)
def test_backend_options_are_validated(options: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        EmbeddingBackendOptions(**options)
    with pytest.raises(ValidationError, match=message):
        default_embedding_model(**options)


def test_backend_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    assert EmbeddingBackendOptions().resolved("some/other-model") == "torch"
    assert EmbeddingBackendOptions(num_threads=2).resolved(None) == "onnx"
    assert EmbeddingBackendOptions(backend="torch").resolved(None) == "torch"
    monkeypatch.setattr(emb, "_offline_package_dir", lambda: None)  # no offline weights: torch (hub cache)
    assert EmbeddingBackendOptions().resolved(None) == "torch"
    assert EmbeddingBackendOptions().problem("some/other-model") is None
    assert "runs only" in (EmbeddingBackendOptions(backend="onnx").problem("some/other-model") or "")
    with pytest.raises(EmbeddingModelError, match="runs only sentence-transformers/all-MiniLM-L6-v2"):
        default_embedding_model("some/other-model", backend="onnx")


def test_the_graph_is_an_option_of_the_backend_and_of_eval() -> None:
    from llama_index_sac.apps.benchmark.eval_job import run_settings
    from llama_index_sac.apps.benchmark.factories import EvaluationSetupError

    assert EmbeddingBackendOptions().graph == "fused"
    with pytest.raises(ValidationError, match="graph applies to backend 'onnx'"):
        EmbeddingBackendOptions(backend="torch", graph="plain")
    assert run_settings(embed_graph="plain").embed_options().graph == "plain"
    with pytest.raises(EvaluationSetupError, match="graph applies to backend 'onnx'"):
        run_settings(embed_backend="torch", embed_graph="plain")
    result = CliRunner().invoke(app, ["eval", "--embed-graph", "tuned"])
    assert result.exit_code == 2 and "tuned" in result.output


def test_ingest_settings_validate_the_backend_options() -> None:
    assert IngestSettings(embed_threads=2).embed_options().num_threads == 2
    with pytest.raises(ValidationError, match="Input should be 'float32'"):
        IngestSettings(embed_precision="int8")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="runs only"):
        IngestSettings(embed_backend="onnx", embed_model="BAAI/bge-small-en")


runner = CliRunner()


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["eval", "--embed-backend", "tf"], "error: invalid value for '--embed-backend': 'tf' is not one of 'onnx', "
                                            "'torch'"),
        (["eval", "--embed-precision", "fp16"], "error: invalid value for '--embed-precision'"),
        (["eval", "--embed-threads", "0"], "error: invalid value for '--embed-threads'"),
        (["eval", "--embed-precision", "int8"], "error: invalid value for '--embed-precision': 'int8' is not one of "
                                                "'float32'"),
        (["eval", "--embed-backend", "torch", "--embed-threads", "2"], "error: num_threads applies to backend 'onnx'"),
        (["ingest", "{dir}", "--vector-store", "chroma:{dir}/s", "--embed-backend", "tf"],
         "error: --embed-backend: Input should be 'onnx' or 'torch'"),
        (["ingest", "{dir}", "--vector-store", "chroma:{dir}/s", "--embed-backend", "torch", "--embed-threads", "2"],
         "error: num_threads applies to backend 'onnx'"),
        (["query", "q", "--vector-store", "chroma:{dir}/s", "--embed-precision", "int4"],
         "error: --embed-precision: Input should be 'float32'"),
    ],
)
def test_cli_embed_options_give_one_error_line(tmp_path: Path, command: list[str], message: str) -> None:
    args = [a.replace("{dir}", str(tmp_path)) for a in command]
    if args[0] == "eval":
        args += ["-o", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists() and not (tmp_path / "s").exists()


# -- devices --------------------------------------------------------------------------------------------------------


def _cuda_visible() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


no_gpu = pytest.mark.skipif(_cuda_visible(), reason="a CUDA GPU is visible here: the no-GPU error path cannot run")


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


def test_device_reaches_every_settings_model() -> None:
    assert RunSettings(embed_device="cuda").embed_options().device == "cuda"
    settings_ = IngestSettings(embed_device="cuda:0", engine="ray")
    assert settings_.embed_options().device == "cuda:0" and settings_.embed_gpus() == 1.0
    assert IngestSettings().embed_gpus() == 0.0
    assert settings_from_options(device="cuda").embed_device == "cuda"
    with pytest.raises(ValidationError, match="runs on a GPU only"):
        IngestSettings(embed_precision="float16")
    assert RayStages(parse_and_summarize=list, embed=list, embed_gpus=1.0).embed_gpus == 1.0


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
