"""Default values of the components' options, each written once (like ``llama_index.core.constants``).

The components' pydantic fields take their defaults from here; everything else (``from_defaults``, the settings
models of :mod:`llama_index_sac.settings`, the command line) reads those fields. Sizes are in characters.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "DEFAULT_BREAKPOINT_METHOD",
    "DEFAULT_BUFFER_SIZE",
    "DEFAULT_CHUNK_OVERLAP",
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_MAX_CHUNK_SIZE",
    "DEFAULT_MIN_CHUNK_SIZE",
    "DEFAULT_SEMANTIC_BATCH_SIZE",
    "DEFAULT_SENTENCE_BACKEND",
    "DEFAULT_SUMMARY_CHARS",
]

#: Recursive and hybrid parsers: maximum chunk length and overlap (the SAC paper's and LegalBench-RAG's setting).
DEFAULT_CHUNK_SIZE = 500
DEFAULT_CHUNK_OVERLAP = 0

#: Semantic parser (and the hybrid parser's section finder).
DEFAULT_SENTENCE_BACKEND: Literal["nupunkt"] = "nupunkt"
DEFAULT_BUFFER_SIZE = 1
DEFAULT_BREAKPOINT_METHOD: Literal["percentile"] = "percentile"
DEFAULT_MIN_CHUNK_SIZE = 100
DEFAULT_MAX_CHUNK_SIZE = 1000
DEFAULT_SEMANTIC_BATCH_SIZE = 64

#: Summarizers: target summary length.
DEFAULT_SUMMARY_CHARS = 150
