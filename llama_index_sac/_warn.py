"""Where a warning of this package points: at the user's line, not at ours or LlamaIndex's."""

from __future__ import annotations

import sys
from types import FrameType

__all__ = ["caller_stacklevel"]

#: Packages whose frames a warning skips to reach the user's line: this package, LlamaIndex (a parser runs inside
#: ``TransformComponent.__call__``, ``get_nodes_from_documents``, ``run_transformations``, ..., each wrapped by the
#: instrumentation dispatcher of ``llama_index_instrumentation``; workflows run in ``workflows``) and the machinery
#: that runs them (event loop, thread pools, progress bars). A module is internal when its ``__name__`` is one of
#: these or inside one (``llama_index.core.ingestion``), never by a bare prefix (``llama_index_myapp`` is yours).
_INTERNAL_PACKAGES = (
    "llama_index_sac", "llama_index", "llama_index_instrumentation", "workflows",
    "asyncio", "concurrent", "threading", "tqdm", "nest_asyncio", "pydantic",
)


def _is_internal(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in _INTERNAL_PACKAGES)


def caller_stacklevel() -> int:
    """The ``stacklevel`` that makes ``warnings.warn``, called by the function that calls this, point at the first
    frame outside :data:`_INTERNAL_PACKAGES`: the user's line (e.g. ``pipeline.run(...)``, ``parser(nodes)``,
    ``asyncio.run(parser.acall(nodes))``), however deep LlamaIndex called the component. 1 (the warning's own
    line) when every frame of the current thread is internal, e.g. a parse submitted to a thread pool: the user's
    frame is on another thread's stack. Under ``asyncio.gather`` the user's frame found is the one running the event
    loop (the ``asyncio.run`` line), not the ``gather`` line.

    Consequence for filters: ``warnings.filterwarnings(..., module=...)`` matches the module of that user line, not
    ``llama_index_sac...``; filter by category instead (e.g. :class:`~llama_index_sac.EmbedLimitWarning`).
    Python 3.12's ``skip_file_prefixes`` does the same, but this package supports Python 3.10 and 3.11."""
    # the caller of this function, the one that calls warnings.warn, is stacklevel 1
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None:
        if not _is_internal(frame.f_globals.get("__name__", "")):
            return level
        frame, level = frame.f_back, level + 1
    return 1
