"""What a run records about the machine it ran on: package versions and peak memory."""

from __future__ import annotations

import importlib.metadata
import platform
import resource
import sys

__all__ = ["RECORDED_PACKAGES", "peak_memory_mb", "versions"]

#: The distributions whose versions every results.json records (besides Python and the platform).
RECORDED_PACKAGES: tuple[str, ...] = (
    "llama-index-sac", "llama-index-core", "llama-index-embeddings-huggingface", "llama-index-retrievers-bm25",
    "sentence-transformers", "transformers", "torch", "numpy",
)


def versions() -> dict[str, str]:
    """``{"python": "3.11.7", "platform": "...", <distribution>: <version or "not installed">}`` for
    :data:`RECORDED_PACKAGES`."""
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in RECORDED_PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def peak_memory_mb() -> float:
    """Peak resident memory of this process so far, in MiB (``ru_maxrss``: KiB on Linux, bytes on macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024
