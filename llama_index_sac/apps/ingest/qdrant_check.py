"""A check of a Qdrant local store's rows before ``QdrantClient(path=...)`` loads them.

Qdrant's local mode keeps each collection's points in ``collection/<name>/storage.sqlite`` as Python pickles and
unpickles every one of them when the client opens the folder: a row crafted to name another callable than a point
class would run code then (``os.system``...). :func:`check_qdrant_points` reads every row first (read-only, with the
standard library) through an unpickler that resolves only what plain points are made of: the pydantic model and
enum classes of ``qdrant_client.http.models`` and a few builtins (``set``, ``frozenset``, ``copyreg`` helpers). A
row that names anything else is refused with one
:class:`~llama_index_sac.apps.ingest.files.IngestError` before the client sees it. The cost is one more reading of
the rows, which the client reads anyway.

This narrows what a store folder can do; it does not make a foreign folder safe to open in general (see
``docs/security.md``: a store folder is trusted like a database file).
"""

from __future__ import annotations

import enum
import io
import pickle
import sqlite3
from pathlib import Path
from typing import Any

from llama_index_sac.apps.ingest.files import IngestError, StoreSpec

__all__ = ["check_qdrant_points"]

_MODELS = "qdrant_client.http.models.models"
_BUILTINS = {("builtins", "set"), ("builtins", "frozenset"), ("copyreg", "__newobj__"), ("copyreg", "_reconstructor"),
             ("builtins", "object")}


class _Forbidden(pickle.UnpicklingError):
    """A pickle names something a plain point is not made of."""


class _PlainPoints(pickle.Unpickler):
    """Resolves only the classes a plain Qdrant point is made of (module docstring)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _BUILTINS:
            return super().find_class(module, name)
        if module == _MODELS and "." not in name:
            from pydantic import BaseModel

            found = super().find_class(module, name)
            if isinstance(found, type) and issubclass(found, (BaseModel, enum.Enum)):
                return found
        raise _Forbidden(f"{module}.{name} is not part of a plain point")


def _refused(database: Path) -> str | None:
    """Why a row of ``database`` is refused (None: every row is a plain point, or the file is left to Qdrant)."""
    try:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        for (blob,) in conn.execute("SELECT point FROM points"):
            if not isinstance(blob, bytes):
                return "a row that is not a pickled point"
            try:
                point = _PlainPoints(io.BytesIO(blob)).load()
            except _Forbidden as exc:
                return f"a row that would run other code when loaded ({exc})"
            except Exception as exc:  # noqa: BLE001 - any malformed pickle: refused, never half-loaded
                return f"a row that is not a plain point ({type(exc).__name__})"
            if type(point).__name__ != "PointStruct" or type(point).__module__ != _MODELS:
                return f"a row that is not a plain point (a {type(point).__name__})"
    except sqlite3.Error:
        return None  # a damaged database: Qdrant's own error names it
    finally:
        conn.close()
    return None


def check_qdrant_points(spec: StoreSpec, collections: list[str]) -> None:
    """Refuse a Qdrant local store one of whose ``collections`` holds a row that is not a plain point.

    Raises:
        IngestError: naming the store, the collection and the row's problem.
    """
    for name in collections:
        database = spec.path / "collection" / name / "storage.sqlite"
        why = _refused(database) if database.is_file() else None
        if why is not None:
            raise IngestError(f"the qdrant store {spec.path} holds {why} in collection {name!r}: it is refused "
                              "unopened (a store folder is trusted like a database file: open only stores you or "
                              "your tools wrote; see docs/security.md)")
