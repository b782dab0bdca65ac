"""A check of a Chroma store's vector index, before any native code reads it.

``chromadb.PersistentClient`` keeps each collection's rows in ``chroma.sqlite3`` and its HNSW vector index in a folder
named after the collection's vector segment (``<segment id>/``: ``header.bin``, ``data_level0.bin``, ``length.bin``,
``link_lists.bin``, ``index_metadata.pickle``), written once the collection passed its sync threshold. Chroma trusts
that folder: without it a query silently searches only the rows not yet indexed, and a damaged ``data_level0.bin``
crashes the process (a segmentation fault) in hnswlib. :func:`check_chroma_index` compares the folder with what
``chroma.sqlite3`` says (read-only, with the standard library) and checks the index's structure with numpy:

* the segment's ``max_seq_id`` says rows were indexed: the folder and its files must exist;
* ``header.bin`` (hnswlib's header behind a format version) must be self-consistent and name the collection's
  dimension; ``data_level0.bin`` must hold a record per element (at most one per allocated element), ``length.bin``
  a norm per element;
* every level-0 record must be well formed: at most ``maxM0`` neighbours, each an existing element, finite vector
  values, distinct labels; the entry point an existing element.

A problem is one :class:`~llama_index_sac.apps.ingest.files.IngestError` naming the store, the damage and the repair.
Damage that keeps this structure (noise over ``link_lists.bin``, the upper layers of the graph) is caught by the
checksums ``ingest`` records (:mod:`~llama_index_sac.apps.ingest.chroma_digest`).
What ``chroma.sqlite3`` itself holds is left to Chroma (its own errors are reported by the store module).
"""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

import numpy as np

from llama_index_sac.apps.ingest.files import IngestError, StoreSpec

__all__ = ["check_chroma_index", "store_segment"]

_HEADER = struct.Struct("<iQQQQQQiIQQQdQ")  # version, then hnswlib's saveIndex header
_FILES = ("header.bin", "data_level0.bin", "length.bin", "link_lists.bin")


def _segment(database: Path, collection: str) -> tuple[str, int, int] | None:
    """(vector segment id, rows indexed according to ``max_seq_id``, dimension) of ``collection``; None when the
    database does not say (no such collection, another layout, an unreadable file: Chroma reports those)."""
    try:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute(
            "SELECT s.id, c.dimension FROM segments s JOIN collections c ON s.collection = c.id "
            "WHERE c.name = ? AND s.scope = 'VECTOR'", (collection,)).fetchone()
        if row is None:
            return None
        seq = conn.execute("SELECT seq_id FROM max_seq_id WHERE segment_id = ?", (row[0],)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    seq_id = seq[0] if seq is not None and isinstance(seq[0], int) else 0
    return str(row[0]), seq_id, int(row[1]) if isinstance(row[1], int) else 0


def _index_problem(folder: Path, dimension: int) -> str | None:
    """What is wrong with the HNSW files in ``folder`` (None: they look whole)."""
    missing = [name for name in _FILES if not (folder / name).is_file()]
    if missing:
        return f"{', '.join(missing)} missing"
    header = (folder / "header.bin").read_bytes()
    if len(header) != _HEADER.size:
        return f"header.bin has {len(header)} bytes, not {_HEADER.size}"
    (version, offset_level0, max_elements, count, size, label_offset, offset_data, max_level, entry, max_m,
     max_m0, _m, _mult, _ef) = _HEADER.unpack(header)
    if (version != 1 or offset_level0 != 0 or count > max_elements or offset_data != 4 + 4 * max_m0
            or label_offset != offset_data + 4 * dimension or size != label_offset + 8 or not -1 <= max_level < 64
            or max_m0 > 4096 or max_m > max_m0 or (count and entry >= count)):
        return "header.bin is inconsistent"
    level0 = folder / "data_level0.bin"
    stored = level0.stat().st_size
    if stored % size or not count * size <= stored <= max_elements * size:
        return f"data_level0.bin has {stored} bytes, not {count} records of {size} (at most {max_elements})"
    norms = (folder / "length.bin").stat().st_size
    if norms % 4 or not 4 * count <= norms <= 4 * max_elements:
        return f"length.bin has {norms} bytes, not {4 * count}"
    if count == 0:
        return None
    records = np.fromfile(level0, dtype=np.uint8, count=count * size).reshape(count, size)
    links = records[:, :2].copy().view(np.uint16).ravel()
    if int(links.max()) > max_m0:
        return "data_level0.bin has records with more neighbours than the index allows"
    neighbours = records[:, 4:offset_data].copy().view(np.uint32)
    used = np.arange(max_m0)[None, :] < links[:, None]
    if bool((neighbours[used] >= count).any()):
        return "data_level0.bin has links to elements that do not exist"
    if not bool(np.isfinite(records[:, offset_data:label_offset].copy().view(np.float32)).all()):
        return "data_level0.bin has vectors that are not finite"
    labels = records[:, label_offset:].copy().view(np.uint64).ravel()
    if np.unique(labels).size != count:
        return "data_level0.bin has repeated labels"
    return None


def store_segment(spec: StoreSpec, collection: str) -> tuple[str, int, int] | None:
    """:func:`_segment` of a ``chroma:DIR`` store's ``chroma.sqlite3``; None when there is no such file."""
    database = spec.path / "chroma.sqlite3"
    return _segment(database, collection) if database.is_file() else None


def check_chroma_index(spec: StoreSpec, collection: str) -> None:
    """Refuse a Chroma store whose vector index of ``collection`` is missing or damaged (module docstring).

    Raises:
        IngestError: naming the store, the folder, what is wrong and the repair.
    """
    found = store_segment(spec, collection)
    if found is None:
        return
    segment, indexed, dimension = found
    folder = spec.path / segment
    if not folder.is_dir():
        if indexed <= 0:
            return  # nothing was indexed yet: Chroma has not written the folder
        problem = f"its vector index folder {segment}/ is missing ({indexed} rows were indexed)"
    else:
        try:
            why = _index_problem(folder, dimension)
        except (OSError, ValueError) as exc:
            why = f"unreadable ({type(exc).__name__}: {exc})"
        if why is None:
            return
        problem = f"its vector index {segment}/ is damaged: {why}"
    raise IngestError(f"the chroma store {spec.path} is damaged (collection {collection!r}): {problem}; queries "
                      "would return wrong results or crash. Ingest again into a new --vector-store (or restore the "
                      "folder from a copy)")
