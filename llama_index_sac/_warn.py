"""Where a warning of this package points: at the user's line, not at ours or LlamaIndex's."""

from __future__ import annotations

import sys
from types import FrameType

__all__ = ["caller_stacklevel"]

#: Modules whose frames a warning skips to reach the user's line: this package, LlamaIndex (a parser runs inside
#: ``TransformComponent.__call__``, ``get_nodes_from_documents``, ``run_transformations``, ...) and the machinery
#: that runs them (event loop, thread pools, progress bars).
_INTERNAL_MODULES = ("llama_index", "asyncio", "concurrent", "threading", "tqdm", "nest_asyncio", "pydantic")


def caller_stacklevel() -> int:
    """The ``stacklevel`` that makes ``warnings.warn``, called by the function that calls this, point at the first
    frame outside :data:`_INTERNAL_MODULES`: the user's line (e.g. ``pipeline.run(...)`` or ``parser(nodes)``),
    however deep LlamaIndex called the component. 1 (the warning's own line) when every frame is internal.
    Python 3.12's ``skip_file_prefixes`` does the same, but this package supports 3.11."""
    # the caller of this function, the one that calls warnings.warn, is stacklevel 1
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None:
        if not frame.f_globals.get("__name__", "").startswith(_INTERNAL_MODULES):
            return level
        frame, level = frame.f_back, level + 1
    return 1
