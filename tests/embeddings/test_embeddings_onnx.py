"""The ONNX Runtime backend: the cached, verified export; identities and vector spaces; the options; and (slow, real
model) the same vectors as torch without importing torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from llama_index.core.bridge.pydantic import ValidationError
from typer.testing import CliRunner

import llama_index_sac.embeddings.limits as limits
import llama_index_sac.embeddings.model as emb
from llama_index_sac.apps.benchmark.cache import content_key
from llama_index_sac.apps.benchmark.factories import model_backend, model_identity, model_space, recorded_space
from llama_index_sac.apps.cli import app
from llama_index_sac.apps.ingest.steps import IngestSettings
from llama_index_sac.embeddings import (
    DEFAULT_EMBED_MODEL_NAME,
    EmbeddingBackendOptions,
    EmbeddingModelError,
    OnnxCacheWarning,
    OnnxEmbedding,
    default_embedding_model,
    embedding_identity,
    embedding_space,
    onnx_model_file,
)
from llama_index_sac.embeddings.default import embedding_from_identity, is_default_model
from llama_index_sac.embeddings.onnx_export import EXPORT_VERSION, FUSION_RECIPE
from tests.conftest import FakeEmbedding, offline_installed

REPO = Path(__file__).resolve().parents[2]


# -- the cache of exported graphs (a stand-in exporter: the files' management, not the export) -----------------------


class Exporter:
    """Writes ``payload`` as the 'graph' and counts its calls."""

    def __init__(self, payload: bytes = b"graph-1") -> None:
        self.payload = payload
        self.calls: list[Path] = []

    def __call__(self, source: Path, out: Path) -> None:
        self.calls.append(source)
        out.write_bytes(self.payload + b"|" + str(source).encode())


def test_a_graph_is_made_once_then_reused(tmp_path: Path) -> None:
    export = Exporter()
    first = onnx_model_file(cache_dir=tmp_path, weights_folder=tmp_path / "w", weights_sha256="ab" * 32, export=export)
    again = onnx_model_file(cache_dir=tmp_path, weights_folder=tmp_path / "w", weights_sha256="ab" * 32, export=export)
    assert first == again and len(export.calls) == 1
    assert first.name == f"all-MiniLM-L6-v2.{'ab' * 8}.v{EXPORT_VERSION}.float32.onnx"  # 16 hex digits of the digest
    manifest = json.loads(first.with_suffix(".json").read_text())
    assert manifest["weights_sha256"] == "ab" * 32 and manifest["precision"] == "float32"
    assert manifest["export_version"] == EXPORT_VERSION and len(manifest["sha256"]) == 64
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".lock") == sorted([first.name, first.stem + ".json"])


def test_other_weights_get_another_graph(tmp_path: Path) -> None:
    export = Exporter()
    old = onnx_model_file(cache_dir=tmp_path, weights_folder=tmp_path, weights_sha256="ab" * 32, export=export)
    new = onnx_model_file(cache_dir=tmp_path, weights_folder=tmp_path, weights_sha256="cd" * 32, export=export)
    assert old != new and len(export.calls) == 2
    assert json.loads(new.with_suffix(".json").read_text())["weights_sha256"] == "cd" * 32


def test_a_manifest_naming_other_weights_is_made_again(tmp_path: Path) -> None:
    export = Exporter()
    path = onnx_model_file(cache_dir=tmp_path, weights_folder=tmp_path, weights_sha256="ab" * 32, export=export)
    manifest = json.loads(path.with_suffix(".json").read_text())
    path.with_suffix(".json").write_text(json.dumps({**manifest, "weights_sha256": "ef" * 32}))
    with pytest.warns(OnnxCacheWarning, match="names weights_sha256="):
        assert onnx_model_file(cache_dir=tmp_path, weights_folder=tmp_path, weights_sha256="ab" * 32,
                               export=export) == path
    assert len(export.calls) == 2
    assert json.loads(path.with_suffix(".json").read_text())["weights_sha256"] == "ab" * 32


@pytest.mark.parametrize("damage", ["truncate", "flip", "no-manifest", "bad-manifest"])
def test_a_damaged_graph_is_made_again(tmp_path: Path, damage: str) -> None:
    export = Exporter()
    path = onnx_model_file(cache_dir=tmp_path, weights_folder=tmp_path, weights_sha256="ab" * 32, export=export)
    good = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(good[:3])
    elif damage == "flip":
        path.write_bytes(bytes([good[0] ^ 1]) + good[1:])
    elif damage == "no-manifest":
        path.with_suffix(".json").unlink()
    else:
        path.with_suffix(".json").write_text("{not json")
    if damage == "no-manifest":  # a missing file is simply made (nothing to warn about)
        onnx_model_file(cache_dir=tmp_path, weights_folder=tmp_path, weights_sha256="ab" * 32, export=export)
    else:
        with pytest.warns(OnnxCacheWarning, match="cannot be used"):
            onnx_model_file(cache_dir=tmp_path, weights_folder=tmp_path, weights_sha256="ab" * 32, export=export)
    assert path.read_bytes() == good and len(export.calls) == 2


def test_a_damaged_graph_that_cannot_be_made_again_is_one_clear_error(tmp_path: Path) -> None:
    path = onnx_model_file(cache_dir=tmp_path, weights_folder=tmp_path, weights_sha256="ab" * 32, export=Exporter())
    path.write_bytes(b"garbage")

    def no_torch(source: Path, out: Path) -> None:
        raise EmbeddingModelError("the one-time ONNX export of all-MiniLM-L6-v2 needs torch, which is not installed")

    with pytest.warns(OnnxCacheWarning), pytest.raises(EmbeddingModelError, match="needs torch"):
        onnx_model_file(cache_dir=tmp_path, weights_folder=tmp_path, weights_sha256="ab" * 32, export=no_torch)
    assert path.read_bytes() == b"garbage"  # nothing half-written: the old file is still what it was
    assert not list(tmp_path.glob("*.tmp"))


def test_int8_is_made_from_the_float32_graph(tmp_path: Path) -> None:
    made: list[tuple[Path, bytes]] = []

    def quantize(source: Path, out: Path) -> None:
        made.append((source, source.read_bytes()))
        out.write_bytes(b"int8 of " + source.read_bytes())

    export = Exporter()
    path = onnx_model_file("int8", cache_dir=tmp_path, weights_folder=tmp_path, weights_sha256="ab" * 32,
                           export=export, quantize=quantize)
    (source, content), = made
    assert source.name.endswith(".float32.onnx") and path.name.endswith(".int8.onnx")
    assert path.read_bytes() == b"int8 of " + content
    manifest = json.loads(path.with_suffix(".json").read_text())
    assert manifest["precision"] == "int8" and manifest["recipe"]["op_types_to_quantize"] == ["MatMul"]
    assert len(manifest["float32_sha256"]) == 64


def test_unknown_precision_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="precision must be 'float32' or 'int8'"):
        onnx_model_file("fp16", cache_dir=tmp_path)  # type: ignore[arg-type]


def test_the_fused_graph_is_made_from_the_plain_graph_and_named_apart(tmp_path: Path) -> None:
    made: list[tuple[Path, bytes]] = []

    def fuse(source: Path, out: Path) -> None:
        made.append((source, source.read_bytes()))
        out.write_bytes(b"fused " + source.read_bytes())

    export = Exporter()
    fused = onnx_model_file(graph="fused", cache_dir=tmp_path, weights_folder=tmp_path, weights_sha256="ab" * 32,
                            export=export, fuse=fuse)
    plain = onnx_model_file(cache_dir=tmp_path, weights_folder=tmp_path, weights_sha256="ab" * 32, export=export)
    (source, content), = made
    assert source == plain and len(export.calls) == 1  # the plain graph was made once, and kept
    assert plain.name == f"all-MiniLM-L6-v2.{'ab' * 8}.v{EXPORT_VERSION}.float32.onnx"  # as before graph kinds
    assert fused.name == f"all-MiniLM-L6-v2.{'ab' * 8}.v{EXPORT_VERSION}.float32-fused.onnx"
    assert fused.read_bytes() == b"fused " + content
    manifest = json.loads(fused.with_suffix(".json").read_text())
    assert manifest["graph"] == "fused" and manifest["recipe"] == FUSION_RECIPE and manifest["precision"] == "float32"
    assert manifest["float32_sha256"] == json.loads(plain.with_suffix(".json").read_text())["sha256"]
    assert "graph" not in json.loads(plain.with_suffix(".json").read_text())
    # a fused manifest is not a plain one: renamed into the plain graph's place, it is refused and made again
    fused.with_suffix(".json").replace(plain.with_suffix(".json"))
    fused.replace(plain)
    with pytest.warns(OnnxCacheWarning, match="names graph='fused', not None"):
        onnx_model_file(cache_dir=tmp_path, weights_folder=tmp_path, weights_sha256="ab" * 32, export=export)
    assert len(export.calls) == 2


def test_unknown_or_impossible_graphs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="graph must be one of 'plain', 'fused', got 'tuned'"):
        onnx_model_file(graph="tuned", cache_dir=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="int8 graph is made from the plain float32 graph"):
        onnx_model_file("int8", graph="fused", cache_dir=tmp_path)
    with pytest.raises(ValidationError, match="'plain' or 'fused'"):
        OnnxEmbedding(graph="tuned")
    assert not list(tmp_path.iterdir())


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


@pytest.mark.slow
@offline_installed
def test_the_one_time_export_prints_no_progress_bar(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The export of the real weights writes a graph and prints nothing: transformers' "Loading weights" bar is off
    for the export (and back on after it, as the caller had it)."""
    import transformers

    from llama_index_sac.embeddings.model import offline_model_path
    from llama_index_sac.embeddings.onnx_export import export_float32

    weights = offline_model_path()
    assert weights is not None
    assert transformers.utils.logging.is_progress_bar_enabled()
    export_float32(weights, tmp_path / "model.onnx")
    captured = capfd.readouterr()
    assert (tmp_path / "model.onnx").stat().st_size > 1_000_000
    assert "Loading weights" not in captured.err + captured.out
    assert transformers.utils.logging.is_progress_bar_enabled()
