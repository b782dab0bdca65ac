"""Small helpers every layer of the package may use (the lowest module: it imports nothing of the package).

* :func:`require_extra`: import an optional dependency, or raise one ``ImportError`` naming the extra to install.
* :func:`stable_hash`: the ``sha256`` of the canonical JSON of a value (the summary cache's key builder).
* :func:`default_cache_dir`: the package's cache folder (embeddings, summaries, ONNX graphs).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["default_cache_dir", "file_sha256", "require_extra", "stable_hash"]


def require_extra(module: str, extra: str, what: str) -> ModuleType:
    """``importlib.import_module(module)``, or ``ImportError`` saying which extra brings it.

    Args:
        module: the module to import (``"llama_index.embeddings.huggingface"``).
        extra: the package extra that installs it (``"hf"``).
        what: what needs it, for the message (``"default_embedding_model()"``).

    Raises:
        ImportError: ``"<what> needs <module>: pip install 'llama-index-sac[<extra>]'"`` (the original error chained).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{what} needs {module}, which is not installed: pip install 'llama-index-sac[{extra}]' ({exc})"
        ) from exc


def stable_hash(value: Any, domain: str = "") -> str:
    """``sha256`` (hex) of ``[domain, value]`` as canonical JSON (sorted keys, no spaces, NaN refused).

    JSON quotes and escapes every string, so two different values never give the same bytes (unlike a plain
    concatenation). Lone surrogates are hashed as they are (``surrogatepass``).

    Raises:
        TypeError: ``value`` is not JSON-serializable (or holds NaN/inf).
    """
    try:
        blob = json.dumps([domain, value], sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"stable_hash needs a JSON-serializable value: {exc}") from exc
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def default_cache_dir() -> Path:
    """``$LLAMA_SAC_CACHE_DIR``, else ``$XDG_CACHE_HOME/llama-index-sac``, else ``~/.cache/llama-index-sac``."""
    explicit = os.environ.get("LLAMA_SAC_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "llama-index-sac"


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 hex digest of the file at ``path``, read in 1 MiB blocks.

    Raises:
        OSError: the file cannot be read.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
