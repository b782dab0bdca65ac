"""``TermStatistics``: the explicit, versioned corpus statistics behind the extractive summary's key terms.

Why an artefact: a summary must be a function of the document, never of the batch it was ingested with. Fitting
TF-IDF on "the documents of the call" would make the same contract's key terms change with the batch, with
``IngestionPipeline(num_workers=2)``, with an update run and after pickling. The term weights come from a
document-frequency table that is fixed before summarizing and named by a content fingerprint:

* the table shipped with the package (:meth:`TermStatistics.default`, ``legal-terms-v1``): document frequencies
  of the 714 documents of LegalBench-RAG (Pipitone & Alami 2024, arXiv 2408.10343: ContractNLI NDAs, CUAD
  commercial contracts, MAUD merger agreements, PrivacyQA privacy policies), terms seen in at least two documents;
  built by ``scripts/build_term_statistics.py``, provenance inside the file; or
* a table the user builds from their own corpus (:meth:`TermStatistics.from_texts`), saved with :meth:`save` and
  passed back with :meth:`load`, so every run, worker and update sees the same statistics.

The table is part of the summarizer's identity by its :attr:`fingerprint` (``sha256`` of its canonical content), so
the summary cache, ``to_dict()`` and LlamaIndex's ingestion cache tell two tables apart; it is pickled whole with the
summarizer.

Weights (identical to scikit-learn's ``TfidfVectorizer(sublinear_tf=True, smooth_idf=True, norm="l2",
dtype=float32)`` fitted on the table's corpus, which the published results used): tokens are ``TOKEN_PATTERN``
runs of the lower-cased text minus scikit-learn's English stop words; ``w(t) = (1 + ln tf) * (ln((1 + n) / (1 +
df)) + 1)``, rows L2-normalised in float32; terms in more than half of the documents (``max_df=0.5`` when ``n >=
4``) are ignored. A term the table has never seen counts as ``df = 0`` (the rarest possible), so a new contract's
own names can be key terms.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from llama_index_sac._json_io import PersistedFileError, gunzip_bounded, parse_json, read_regular_file
from llama_index_sac._warn import caller_stacklevel

__all__ = ["TOKEN_PATTERN", "TermStatistics", "stop_words", "term_sample"]

#: Word tokens: at least two characters, at least one letter; inner hyphens kept.
TOKEN_PATTERN = r"(?u)\b(?=[\w\-]*[^\W\d_])\w[\w\-]*\w\b"
_TOKEN_RE = re.compile(TOKEN_PATTERN)
_FORMAT = "llama-index-sac/term-statistics/v1"
_DEFAULT_FILE = "legal-terms-v1.json.gz"
#: The default size cap of :meth:`TermStatistics.load`, in bytes, compressed and decompressed.
LOAD_MAX_BYTES = 256 << 20
#: Below this many documents a fitted table is flagged: its document frequencies say little.
MIN_DOCUMENTS = 20


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """scikit-learn's English stop words, shipped as a data file (so scikit-learn is not a dependency)."""
    data = resources.files("llama_index_sac.summarizers").joinpath("data")
    text = data.joinpath("stop_words_en.txt").read_text("utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def term_sample(text: str, budget: int) -> str:
    """At most ``budget`` characters of ``text`` (characters): all of it, or its first third plus four evenly spaced
    windows joined by newlines, so later sections count too at a bounded cost."""
    if len(text) <= budget:
        return text
    head = budget // 3
    width = (budget - head) // 4
    parts = [text[:head]]
    span = len(text) - head - width
    for i in range(1, 5):
        start = head + (span * i) // 4
        parts.append(text[start: start + width])
    return "\n".join(parts)


def _term_counts(sample: str) -> Counter[str]:
    """Occurrences of each term of ``sample``: lower-cased ``TOKEN_PATTERN`` tokens minus the stop words."""
    counts = Counter(_TOKEN_RE.findall(sample.lower()))
    for word in counts.keys() & stop_words():
        del counts[word]
    return counts


class TermStatistics:
    """A document-frequency table: ``n_documents`` documents, ``df[term]`` of them contain ``term``.

    Build one with :meth:`from_texts`, read one with :meth:`load` or :meth:`default`; it is immutable. Equality and
    :attr:`fingerprint` are by content.

    Args:
        df: term -> number of documents containing it (ints >= 1, terms as :data:`TOKEN_PATTERN` tokens).
        n_documents: how many documents the table counts (>= 1, >= every df).
        name: a label for people (``"legal-terms-v1"``, ``"my-contracts-2026-11"``); not part of the fingerprint.
        sample_chars: the ``term_sample`` budget the documents were read with (recorded, part of the fingerprint).
        provenance: free text: where the documents came from, licence, how it was built.

    Raises:
        ValueError: a df outside ``1..n_documents``, an empty term, or ``n_documents < 1``.
        TypeError: ``df`` is not a mapping of str to int.
    """

    __slots__ = ("_df", "n_documents", "name", "sample_chars", "provenance", "_fingerprint", "_idf_cache")

    def __init__(self, df: Mapping[str, int], n_documents: int, *, name: str = "custom",
                 sample_chars: int = 30000, provenance: str = "") -> None:
        if isinstance(n_documents, bool) or not isinstance(n_documents, int) or n_documents < 1:
            raise ValueError(f"n_documents must be an int >= 1, got {n_documents!r}")
        if not isinstance(df, Mapping):
            raise TypeError(f"df must be a mapping term -> document count, got {type(df).__name__}")
        clean: dict[str, int] = {}
        for term, count in df.items():
            if not isinstance(term, str) or not term:
                raise ValueError(f"df keys must be non-empty strings, got {term!r}")
            if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= n_documents:
                raise ValueError(f"df[{term!r}] must be an int in 1..{n_documents}, got {count!r}")
            clean[term] = count
        self._df = clean
        self.n_documents = n_documents
        self.name = name
        self.sample_chars = sample_chars
        self.provenance = provenance
        blob = json.dumps([_FORMAT, n_documents, sample_chars, TOKEN_PATTERN, sorted(clean.items())],
                          ensure_ascii=False, separators=(",", ":"))
        self._fingerprint = hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()
        self._idf_cache: dict[str, float] = {}

    # -- building --------------------------------------------------------------------------------------------
    @classmethod
    def from_texts(cls, texts: Iterable[str], *, name: str = "custom", sample_chars: int = 30000,
                   provenance: str = "", min_df: int = 1) -> TermStatistics:
        """Count document frequencies over ``texts`` (full document texts; duplicates by content and blank texts
        are counted once / not at all, so the table does not depend on order or repetition).

        Each text is read through :func:`term_sample` (``sample_chars`` characters). ``min_df`` drops rarer terms
        (they then count as never seen). Warns (``UserWarning``) below :data:`MIN_DOCUMENTS` documents.

        Raises:
            TypeError: an item is not a ``str``.
            ValueError: no non-blank text.
        """
        unique: dict[str, str] = {}
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"from_texts takes document texts (str), got {type(text).__name__}")
            if text.strip():
                unique.setdefault(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), text)
        if not unique:
            raise ValueError("TermStatistics.from_texts needs at least one non-blank document")
        counts: Counter[str] = Counter()
        for text in unique.values():
            counts.update(_term_counts(term_sample(text, sample_chars)).keys())
        if len(unique) < MIN_DOCUMENTS:
            warnings.warn(
                f"term statistics from only {len(unique)} document(s): document frequencies that few say little "
                f"about which terms are distinctive (at least {MIN_DOCUMENTS} recommended; the shipped "
                "TermStatistics.default() is built from 714 legal documents)",
                UserWarning, stacklevel=caller_stacklevel(),
            )
        df = {t: c for t, c in counts.items() if c >= min_df}
        return cls(df, len(unique), name=name, sample_chars=sample_chars, provenance=provenance)

    # -- persistence -----------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The whole table as a JSON-serializable dict (what :meth:`save` writes)."""
        return {"format": _FORMAT, "name": self.name, "n_documents": self.n_documents,
                "sample_chars": self.sample_chars, "token_pattern": TOKEN_PATTERN, "provenance": self.provenance,
                "fingerprint": self.fingerprint, "df": dict(sorted(self._df.items()))}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, source: str = "term statistics") -> TermStatistics:
        """Inverse of :meth:`to_json`. Raises ``ValueError`` naming ``source`` on a wrong format, a different
        token pattern or a fingerprint that does not match the content."""
        if not isinstance(data, Mapping) or data.get("format") != _FORMAT:
            raise ValueError(f"{source}: not a {_FORMAT} file")
        if data.get("token_pattern") != TOKEN_PATTERN:
            raise ValueError(f"{source}: built with another token pattern ({data.get('token_pattern')!r})")
        try:
            stats = cls(data["df"], data["n_documents"], name=str(data.get("name", "custom")),
                        sample_chars=int(data.get("sample_chars", 30000)), provenance=str(data.get("provenance", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{source}: malformed term statistics ({exc})") from exc
        if data.get("fingerprint") not in (None, stats.fingerprint):
            raise ValueError(f"{source}: fingerprint does not match the content (file edited or damaged)")
        return stats

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the table as JSON (gzip-compressed when the name ends in ``.gz``); returns the path."""
        out = Path(path).expanduser()
        blob = json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        out.write_bytes(gzip.compress(blob, mtime=0) if out.name.endswith(".gz") else blob)
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, max_bytes: int = LOAD_MAX_BYTES) -> TermStatistics:
        """Read a table written by :meth:`save`.

        Bounded: a regular file of at most ``max_bytes`` bytes, whose JSON (after gzip decompression, stopped as
        soon as it passes ``max_bytes``) is at most ``max_bytes`` bytes and nested at most 64 levels.

        Raises:
            FileNotFoundError: there is no such file.
            ValueError: not a term-statistics file (not a regular file, too large compressed or decompressed, not
                gzip/UTF-8 JSON, too deep), or damaged (see :meth:`from_json`); the message names the file."""
        source = Path(path).expanduser()
        try:
            raw = read_regular_file(source, max_bytes=max_bytes)
            if raw[:2] == b"\x1f\x8b":
                raw = gunzip_bounded(raw, source, max_bytes=max_bytes)
            data = parse_json(raw, source, expect=None)
        except PersistedFileError as exc:
            raise ValueError(f"{path}: not a term-statistics file ({exc.problem})") from None
        return cls.from_json(data, source=str(path))

    @classmethod
    def default(cls) -> TermStatistics:
        """The table shipped with the package (``legal-terms-v1``; see the module docstring). Loaded once."""
        return _default_statistics()

    # -- identity --------------------------------------------------------------------------------------------
    @property
    def fingerprint(self) -> str:
        """``sha256`` (hex) of the canonical content: format, n_documents, sample_chars, token pattern, df."""
        return self._fingerprint

    def identity(self) -> dict[str, Any]:
        """What names the table in a summarizer's identity (cache keys, ``to_dict``)."""
        return {"name": self.name, "n_documents": self.n_documents, "fingerprint": self.fingerprint}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TermStatistics) and other.fingerprint == self.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __len__(self) -> int:
        return len(self._df)

    def __repr__(self) -> str:
        return (f"TermStatistics(name={self.name!r}, n_documents={self.n_documents}, terms={len(self._df)}, "
                f"fingerprint={self.fingerprint[:12]!r})")

    def __getstate__(self) -> dict[str, Any]:
        return self.to_json()

    def __setstate__(self, state: dict[str, Any]) -> None:
        other = TermStatistics.from_json(state)
        for slot in TermStatistics.__slots__:
            object.__setattr__(self, slot, getattr(other, slot))

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.is_instance_schema(cls)

    def df(self, term: str) -> int:
        """Documents containing ``term`` (0 when the table has never seen it)."""
        return self._df.get(term, 0)

    # -- weights ---------------------------------------------------------------------------------------------
    def top_terms(self, sample: str, keep: int) -> list[str]:
        """The ``keep``-odd highest-weighted terms of ``sample`` (ties at the cut included), by weight then term.

        Deterministic: a function of ``sample`` and the table only. Terms in more than half of the documents
        (``n_documents >= 4``) are ignored (see the module docstring for the weights)."""
        counts = _term_counts(sample)
        if not counts or keep <= 0:
            return []
        n = self.n_documents
        max_df = 0.5 * n if n >= 4 else float(n)
        get = self._df.get
        rows = sorted((t, c, d) for t, c in counts.items() if (d := get(t, 0)) <= max_df)  # CSR order: by term
        if not rows:
            return []
        terms, tfs, dfs = zip(*rows)
        tf = np.array(tfs, dtype=np.float32)
        df = np.array(dfs, dtype=np.float32) + np.float32(1.0)
        idf = np.full_like(df, fill_value=n + 1, dtype=np.float32)
        idf /= df
        np.log(idf, out=idf)
        idf += np.float32(1.0)
        np.log(tf, out=tf)
        tf += np.float32(1.0)
        data = tf * idf
        norm = float(np.sqrt(np.cumsum((data * data).astype(np.float64))[-1]))
        if norm > 0.0:
            data = (data.astype(np.float64) / norm).astype(np.float32)
        names = np.array(terms, dtype=object)
        if len(data) > keep:  # the top weights (plus ties at the cut), then an exact deterministic order
            threshold = np.partition(data, len(data) - keep)[len(data) - keep]
            mask = data >= threshold
            data, names = data[mask], names[mask]
        order = np.lexsort((names, -data))
        return [str(names[i]) for i in order[:keep]]


@lru_cache(maxsize=1)
def _default_statistics() -> TermStatistics:
    resource = resources.files("llama_index_sac.summarizers").joinpath("data").joinpath(_DEFAULT_FILE)
    data = json.loads(gzip.decompress(resource.read_bytes()).decode("utf-8"))
    return TermStatistics.from_json(data, source=f"llama_index_sac/summarizers/data/{_DEFAULT_FILE}")
