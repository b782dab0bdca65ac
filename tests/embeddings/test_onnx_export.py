"""The cache of exported ONNX graphs (embeddings/onnx_export.py): made once, verified, made again when damaged or
named for other weights, int8 and the fused graph made from the plain one; and (slow, real weights) the one-time
export prints no progress bar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llama_index.core.bridge.pydantic import ValidationError

from llama_index_sac.embeddings import EmbeddingModelError, OnnxCacheWarning, OnnxEmbedding, onnx_model_file
from llama_index_sac.embeddings.onnx_export import EXPORT_VERSION, FUSION_RECIPE
from tests.conftest import offline_installed

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


# -- the real weights (slow) ------------------------------------------------------------------------------------------


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
