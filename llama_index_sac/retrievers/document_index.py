"""The document prior's index: each document's summary and distinctive names, and the prior of a query over them.

:class:`DocumentIndex` holds, per document, the SAC summary and the distinctive names of its text
(:mod:`.document_names`), with a BM25 index (bm25s) over each. The prior of a query is, per document,
``(1 - name_weight) * S + name_weight * N``: ``S`` the BM25 match of the query's words (of the phrases naming
documents: below) against the summaries, ``N`` that of its name tokens against the names, each divided by its
maximum over the documents for this query (so in [0, 1]).

**Only a match that stands out counts** (``prior_margin``, ``require_name_match``). Divided by its maximum, a weak or
generic match still gives some document 1.0: a query that names no document ("Does the document permit ...") makes
the summary most like its generic words (often the shortest summary of its kind, which BM25's length normalisation
favours) a hub, lifted in every such query. So each part counts only when its best document's raw BM25 score is at
least ``1 + prior_margin`` times the runner-up's (else that part is 0 for every document), and with
``require_name_match`` the whole prior is 0 unless one of the query's name tokens is a distinctive name of some
document. Both leave the prior of a query that names its document unchanged.

**The prior reads the document's name, not the question** (``locator_only``): only the phrases of the query that
name documents (:meth:`DocumentIndex.locate`, :mod:`.locator`: wherever they are, "Consider Acme's NDA; ...", "...,
in Acme's NDA?", "Does the Acme NDA ...?") are matched against the summaries and names, and a query that names no
document has no prior at all. The question's own words ("Confidential Information", "Receiving Party") are in every
NDA and would lift the summaries most like them. **A hyphenated word also gives its distinctive parts** (``word_parts``,
:func:`~llama_index_sac.retrievers.document_names.with_word_parts`) on both sides of the summary match, so a summary
that names ``AGProjects-NDA.txt`` matches a query about "AGProjects"; the name match reads the query's name tokens as
written ("AGProjects-NDA" in a query matches only through the summaries). **The share of the prior outside the
documents the locator names** (``outside_prior`` = s): the prior is ``s * P + (1 - s) * K``, ``P`` the prior read from
the naming phrases over every document and ``K`` the prior kept to the named documents (``P`` there divided by its
maximum over them, 1 each when their match is 0; 0 for every other document). So a document the question does not
name keeps the share s of its prior, and at s = 0 the documents whose summaries merely share the phrase's common
words ("merger agreement") get none. The ranking still chooses the documents it searches and orders in clause order
(the located documents of :func:`~.ranking.located_documents`) by ``P`` (``prior(query, whole=True)``), so s moves
the fused score only.

:class:`~llama_index_sac.retrievers.document_aware.DocumentAwareRetriever` and
:class:`~llama_index_sac.retrievers.postprocessor.DocumentAwarePostprocessor` fuse it with the chunk scores.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore

from llama_index_sac._json_io import PersistedFileError, read_json
from llama_index_sac._util import require_extra
from llama_index_sac.documents import reconstruct_text
from llama_index_sac.evaluation.locations import stored_nodes
from llama_index_sac.retrievers.document_names import distinctive_names, query_tokens, with_word_parts, word_tokens
from llama_index_sac.retrievers.locator import DocumentLocator, Located
from llama_index_sac.retrievers.options import DocumentPriorOptions, options_from
from llama_index_sac.summarizers.terms import TermStatistics

__all__ = ["FORMAT", "LOAD_MAX_BYTES", "MAX_NAME_OCCURRENCES", "PERSIST_FNAME", "DocumentIndex"]

#: The format :meth:`DocumentIndex.save` writes and :meth:`DocumentIndex.load` reads.
FORMAT = "llama-index-sac/document-index/v4"
#: The most name occurrences (the sum of every document's counts) a :class:`DocumentIndex` accepts: its name index
#: holds one token per occurrence, so the counts are checked before anything is allocated.
MAX_NAME_OCCURRENCES = 1 << 24
#: The largest file :meth:`DocumentIndex.load` reads, in bytes.
LOAD_MAX_BYTES = 1 << 30
#: File name of :meth:`DocumentIndex.persist` in a ``persist_dir`` (beside LlamaIndex's ``docstore.json``...).
PERSIST_FNAME = "document_index.json"
#: Queries whose :meth:`DocumentIndex.locate` answer is remembered (oldest out).
LOCATE_CACHE_SIZE = 1024


def _bm25(rows: list[list[str]]) -> Any:
    bm25s = require_extra("bm25s", "bm25", "DocumentIndex")
    quiet = logging.getLogger("bm25s")
    if quiet.level == logging.DEBUG:  # bm25s sets its own logger to DEBUG on import: a line per index otherwise
        quiet.setLevel(logging.WARNING)
    index = bm25s.BM25()
    index.index([row or ["\x00"] for row in rows], show_progress=False)  # an empty row would be dropped
    return index


def _scores(index: Any, tokens: list[str], n: int) -> np.ndarray:
    """Raw BM25 scores of ``tokens`` over the ``n`` rows of ``index`` (all 0 without tokens)."""
    if not tokens:
        return np.zeros(n, dtype=np.float64)
    return np.asarray(index.get_scores(tokens), dtype=np.float64)


def _normalised(scores: np.ndarray, margin: float = 0.0) -> np.ndarray:
    """``scores`` divided by their maximum; all 0 when nothing matches, or when the best score is below
    ``1 + margin`` times the runner-up's (``margin > 0``: the match does not stand out)."""
    top = float(scores.max()) if scores.size else 0.0
    if top <= 0:
        return np.zeros_like(scores)
    if margin > 0 and scores.size > 1 and top < (1.0 + margin) * float(np.partition(scores, -2)[-2]):
        return np.zeros_like(scores)
    return scores / top


def _document_texts(nodes: Iterable[BaseNode]) -> dict[str, str]:
    """Each document's text rebuilt from its chunks by :func:`~llama_index_sac.documents.reconstruct_text`; when a
    document's chunks lack exact offsets (or disagree), their texts joined by newlines in the order seen."""
    chunks: dict[str, list[BaseNode]] = {}
    for node in nodes:
        if node.ref_doc_id is not None:
            chunks.setdefault(node.ref_doc_id, []).append(node)
    texts = {}
    for doc_id, members in chunks.items():
        try:
            texts[doc_id] = reconstruct_text(doc_id, members)[0]
        except ValueError:
            texts[doc_id] = "\n".join(n.get_content(metadata_mode=MetadataMode.NONE) for n in members)
    return texts


class DocumentIndex:
    """Per-document identity for the document prior: each document's summary and its distinctive names, with a
    BM25 index over each (``bm25s``, the ``bm25`` extra).

    ``prior(query) = (1 - name_weight) * s + name_weight * n``, where ``s`` is the BM25 score of the query's words
    (with ``locator_only``, those of the phrases naming documents: module docstring) against the summaries and
    ``n`` that of its name tokens against the documents' distinctive names (:mod:`.document_names`), each divided by
    its maximum over the documents for this query (so in [0, 1]; 0 for every document when nothing matches, when
    the match does not stand out, or when the query names no document: module docstring).
    Without names (``names=None``) the prior is ``s``.

    Args:
        summaries: document id -> summary text (the SAC ``document_summary``; empty texts are kept, they never match).
        names: document id -> {distinctive name: occurrences} (:func:`~llama_index_sac.retrievers.document_names.
            distinctive_names` of the document's text), or None.
        options: how the prior reads a query (:class:`~llama_index_sac.retrievers.options.DocumentPriorOptions`;
            None: the defaults); saved with the index.
        statistics: the reference table of ``word_parts`` (default: the shipped ``legal-terms-v1``).
        **option_values: single options (``name_weight=0.5``...), set over ``options``.

    Raises:
        TypeError: ``summaries``, ``names``, ``options`` or ``statistics`` of the wrong type.
        ValueError: no document, a ``names`` id without a summary, a bad or unknown option (one line naming it),
            ``require_name_match`` or ``name_pairs`` without names.
    """

    def __init__(self, summaries: Mapping[str, str], names: Mapping[str, Mapping[str, int]] | None = None, *,
                 options: DocumentPriorOptions | None = None, statistics: TermStatistics | None = None,
                 **option_values: Any) -> None:
        if not isinstance(summaries, Mapping):
            raise TypeError(f"summaries must be a mapping document id -> summary, got {type(summaries).__name__}")
        for doc_id, summary in summaries.items():
            if not isinstance(doc_id, str) or not isinstance(summary, str):
                raise TypeError(f"summaries[{doc_id!r}] must map a str id to a str summary, got {summary!r:.60}")
        if not summaries:
            raise ValueError("DocumentIndex needs at least one document")
        opts = options_from(DocumentPriorOptions, options, option_values)
        for flag in ("name_pairs", "require_name_match"):
            if getattr(opts, flag) and names is None:
                raise ValueError(f"{flag}=True needs the documents' names (names=None)")
        if statistics is not None and not isinstance(statistics, TermStatistics):
            raise TypeError(f"statistics must be a TermStatistics, got {type(statistics).__name__}")
        if names is not None:
            if not isinstance(names, Mapping):
                raise TypeError(f"names must be a mapping document id -> {{name: count}}, got {type(names).__name__}")
            unknown = sorted(set(names) - set(summaries))
            if unknown:
                raise ValueError(f"names of documents without a summary: {unknown[:5]}")
            for doc_id, counts in names.items():
                if not isinstance(counts, Mapping) or not all(
                        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v > 0
                        for k, v in counts.items()):
                    raise TypeError(f"names[{doc_id!r}] must map str names to counts >= 1")
            total = sum(sum(counts.values()) for counts in names.values())
            if total > MAX_NAME_OCCURRENCES:
                raise ValueError(f"names hold {total} occurrences in all, more than {MAX_NAME_OCCURRENCES} (the "
                                 "name index keeps one token per occurrence)")
        self.doc_ids: list[str] = list(summaries)
        self.summaries: dict[str, str] = dict(summaries)
        self.names: dict[str, dict[str, int]] | None = (
            None if names is None else {d: dict(names.get(d, {})) for d in self.doc_ids})
        #: How the prior reads a query (saved with the index).
        self.options: DocumentPriorOptions = opts
        self._statistics = statistics  # None: the shipped table (not copied into a pickle)
        self._locator: DocumentLocator | None = None  # built on first use, not pickled
        self._located: dict[str, Located] = {}
        self._last_prior: tuple[str, np.ndarray] | None = None  # the naming phrases last read and their whole prior
        self._summary_bm25 = _bm25([self._summary_tokens(self.summaries[d]) for d in self.doc_ids])
        self._names_bm25 = None if self.names is None else _bm25(
            [[name for name, count in sorted(self.names[d].items()) for _ in range(count)] for d in self.doc_ids])

    @classmethod
    def from_nodes(cls, nodes: Iterable[BaseNode | NodeWithScore], summary_key: str = "document_summary", *,
                   names: bool = True, options: DocumentPriorOptions | None = None,
                   statistics: TermStatistics | None = None, **option_values: Any) -> DocumentIndex:
        """The summaries carried by ``nodes`` (SAC chunks: per ``ref_doc_id``, the longest) and, with
        ``names``, the distinctive names of each document's text rebuilt from its chunks (offset order, overlaps
        read once; ``statistics`` and the options' ``max_document_frequency`` and ``name_pairs`` as in
        :func:`~llama_index_sac.retrievers.document_names.distinctive_names`; the first two also judge the word
        parts). No model call. Without ``names``, ``name_pairs`` and ``require_name_match`` are off (there are no
        names to pair or match). ``options`` and ``option_values`` as in the constructor.

        Raises:
            ValueError: no node carries ``summary_key``; the constructor's errors."""
        opts = options_from(DocumentPriorOptions, options, option_values)
        if not names:
            opts = opts.model_copy(update={"name_pairs": False, "require_name_match": False})
        chunks = [item.node if isinstance(item, NodeWithScore) else item for item in nodes]
        summaries: dict[str, str] = {}
        for node in chunks:  # a document's longest summary: chunks may carry it trimmed to the embedding limit
            doc_id, summary = node.ref_doc_id, node.metadata.get(summary_key)
            if doc_id is not None and isinstance(summary, str) and len(summary) >= len(summaries.get(doc_id, " ")):
                summaries[doc_id] = summary
        if not summaries:
            raise ValueError(f"no node carries metadata[{summary_key!r}] with a document id: were the nodes "
                             "augmented by SummaryAugmentationTransformation?")
        found = None
        if names:
            texts = _document_texts(node for node in chunks if node.ref_doc_id in summaries)
            found = {doc_id: dict(distinctive_names(text, statistics=statistics,
                                                    max_document_frequency=opts.max_document_frequency,
                                                    pairs=opts.name_pairs))
                     for doc_id, text in texts.items()}
        return cls(summaries, found, options=opts, statistics=statistics)

    @classmethod
    def from_source(cls, source: Any, summary_key: str = "document_summary", **kwargs: Any) -> DocumentIndex:
        """:meth:`from_nodes` over the nodes stored in a vector store (Chroma/Qdrant read in pages, any store
        keeping nodes), a docstore or a ``VectorStoreIndex`` (see
        :func:`~llama_index_sac.evaluation.locations.stored_nodes`); ``kwargs`` as :meth:`from_nodes`'s."""
        return cls.from_nodes(stored_nodes(source), summary_key, **kwargs)

    # -- persistence -----------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the summaries, names and options as JSON (the BM25 indexes are rebuilt on :meth:`load`).

        The file is written beside ``path`` under a temporary name and then renamed over it, so a crash never leaves
        a truncated index (an existing file stays as it was).

        Returns:
            The path written (``~`` expanded).

        Raises:
            OSError: the folder does not exist or cannot be written.
        """
        out = Path(path).expanduser()
        data = json.dumps({"format": FORMAT, **self.options.model_dump(), "statistics": self.statistics.identity(),
                           "summaries": self.summaries, "names": self.names}, ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(data)
            os.replace(tmp, out)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, statistics: TermStatistics | None = None) -> DocumentIndex:
        """Read a file written by :meth:`save` (format :data:`FORMAT`: the options beside the texts).
        ``statistics``: the reference table the index was saved with (default: the shipped one).

        Read by the bounded reader: a regular file of at most :data:`LOAD_MAX_BYTES` bytes, nested at most 64
        levels; name counts are checked (:data:`MAX_NAME_OCCURRENCES`) before an index is built.

        Raises:
            ValueError: the file is not a document index (not a regular file, too large, not UTF-8 JSON, too deep,
                another format, bad or missing fields, too many name occurrences), or it reads word parts with
                another reference table than ``statistics``; the message names the file.
            TypeError: ``statistics`` is not a ``TermStatistics``.
            OSError: the file cannot be read (``FileNotFoundError``, ...).
        """
        try:
            data = read_json(Path(path).expanduser(), expect=None, max_bytes=LOAD_MAX_BYTES)
        except PersistedFileError as exc:
            raise ValueError(f"{path}: not a document index file ({exc.problem})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else None
            raise ValueError(f"{path}: not a {FORMAT} file" + (f" (format {found!r:.80})" if found else ""))
        if statistics is not None and not isinstance(statistics, TermStatistics):
            raise TypeError(f"statistics must be a TermStatistics, got {type(statistics).__name__}")
        table = TermStatistics.default() if statistics is None else statistics
        saved = data.get("statistics")
        if not isinstance(saved, dict):
            raise ValueError(f"{path}: bad document index (statistics must be the identity of a term table, "
                             f"got {saved!r:.80})")
        if data.get("word_parts") is True and saved != table.identity():
            raise ValueError(f"{path}: saved with the term statistics {saved!r:.200}, not "
                             f"{table.identity()!r}: pass statistics= the table it was built with")
        missing = [key for key in DocumentPriorOptions.model_fields if key not in data]
        if missing or "summaries" not in data:
            raise ValueError(f"{path}: bad document index (missing {', '.join(missing or ['summaries'])})")
        try:
            options = {key: data[key] for key in DocumentPriorOptions.model_fields}
            return cls(data["summaries"], data.get("names"), statistics=table, **options)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path}: bad document index ({exc})") from exc

    def persist(self, persist_dir: str | os.PathLike[str] = "./storage", fname: str = PERSIST_FNAME) -> Path:
        """:meth:`save` into ``persist_dir`` beside a ``StorageContext.persist(persist_dir)`` (created if missing)."""
        (folder := Path(persist_dir).expanduser()).mkdir(parents=True, exist_ok=True)
        return self.save(folder / fname)

    @classmethod
    def from_persist_dir(cls, persist_dir: str | os.PathLike[str] = "./storage", fname: str = PERSIST_FNAME, *,
                         statistics: TermStatistics | None = None) -> DocumentIndex:
        """:meth:`load` the index :meth:`persist` wrote into ``persist_dir`` (raises as :meth:`load` does)."""
        return cls.load(Path(persist_dir).expanduser() / fname, statistics=statistics)

    def __len__(self) -> int:
        return len(self.doc_ids)

    def names_of(self, doc_id: str) -> frozenset[str]:
        """The distinctive names (pairs included) of one document; empty without names or for an unknown id."""
        return frozenset(self.names.get(doc_id, ())) if self.names is not None else frozenset()

    # -- scores ----------------------------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """The index without its locator and remembered answers (rebuilt on use; the locator holds the table)."""
        return {**self.__dict__, "_locator": None, "_located": {}, "_last_prior": None}

    @property
    def locator(self) -> DocumentLocator:
        """The :class:`~.locator.DocumentLocator` of these documents' names, summaries and file names (built once)."""
        if self._locator is None:
            self._locator = DocumentLocator({d: (self.names or {}).get(d, {}) for d in self.doc_ids}, self.summaries,
                                            statistics=self.statistics,
                                            max_document_frequency=self.options.max_document_frequency)
        return self._locator

    def locate(self, query: str) -> Located:
        """The documents ``query`` names and what it asks (:meth:`.locator.DocumentLocator.locate`; the last
        :data:`LOCATE_CACHE_SIZE` queries are remembered: the prior, the lexical score and the clause order of one
        query ask for the same answer).

        Raises:
            TypeError: ``query`` is not a str."""
        found = self._located.get(query) if isinstance(query, str) else None
        if found is None:
            found = self.locator.locate(query)
            if len(self._located) >= LOCATE_CACHE_SIZE:
                self._located.pop(next(iter(self._located)))
            self._located[query] = found
        return found

    def prior(self, query: str, *, whole: bool = False) -> np.ndarray:
        """The document prior of ``query`` for every document (in ``doc_ids`` order), shape ``(len(self),)``, in
        [0, 1] (class docstring). With ``locator_only``, only the phrases that name documents are read, wherever
        they are in the query (:meth:`locate`), a query that names no document has no prior (all 0), and a
        document the question does not name keeps the share ``outside_prior`` of its prior (module docstring).
        ``whole``: the prior before that share is applied (as with ``outside_prior=1``), by which the ranking
        chooses its located documents.

        Raises:
            TypeError: ``query`` is not a str."""
        if not self.options.locator_only:
            if not isinstance(query, str):
                raise TypeError(f"query must be a str, got {type(query).__name__}")
            return self._prior(query)
        located = self.locate(query)
        if not located:
            return np.zeros(len(self.doc_ids), dtype=np.float64)
        phrases = " ".join(query[start:end] for start, end in located.spans)
        last = self._last_prior  # the ranking asks for the prior and the whole prior of one query: matched once
        if last is not None and last[0] == phrases:
            prior = last[1].copy()
        else:
            prior = self._prior(phrases)
            self._last_prior = (phrases, prior.copy())
        share = self.options.outside_prior
        if whole or share >= 1.0:
            return prior
        named = np.isin(np.asarray(self.doc_ids, dtype=object), list(located.documents))
        kept = np.where(named, prior, 0.0)  # kept to the documents the question names, the best of them 1
        top = float(kept.max())
        kept = kept / top if top > 0 else named.astype(np.float64)
        return kept if share <= 0.0 else share * prior + (1.0 - share) * kept

    def _prior(self, query: str) -> np.ndarray:
        """The prior of ``query`` read whole."""
        n = len(self.doc_ids)
        names = None
        if self._names_bm25 is not None and (self.options.name_weight > 0 or self.options.require_name_match):
            names = _scores(self._names_bm25, query_tokens(query, pairs=self.options.name_pairs), n)
            if self.options.require_name_match and not (names > 0).any():
                return np.zeros(n, dtype=np.float64)
        prior = _normalised(_scores(self._summary_bm25, self._summary_tokens(query), n), self.options.prior_margin)
        if names is not None and self.options.name_weight > 0:
            prior *= 1.0 - self.options.name_weight
            prior += self.options.name_weight * _normalised(names, self.options.prior_margin)
        return prior

    @property
    def statistics(self) -> TermStatistics:
        """The reference table of ``word_parts``."""
        return TermStatistics.default() if self._statistics is None else self._statistics

    def _summary_tokens(self, text: str) -> list[str]:
        """The words of ``text`` for the summary match (:func:`word_tokens`, with ``word_parts`` their parts)."""
        words = word_tokens(text)
        if not self.options.word_parts:
            return words
        return with_word_parts(words, statistics=self.statistics,
                               max_document_frequency=self.options.max_document_frequency)

    def prior_of(self, query: str, *, whole: bool = False) -> dict[str, float]:
        """:meth:`prior` as ``{doc_id: prior}`` for the documents with a positive prior (``whole`` as there)."""
        values = self.prior(query, whole=whole)
        return {self.doc_ids[i]: float(values[i]) for i in np.flatnonzero(values > 0)}

    def priors_of(self, query: str) -> tuple[dict[str, float], dict[str, float]]:
        """``(prior, whole)``: :meth:`prior_of` the query, and the whole prior by which the ranking chooses its
        located documents (``prior_of(query, whole=True)``; the prior itself with ``outside_prior=1``, or when the
        whole prior is 0 everywhere because the named documents match nothing).

        Raises:
            TypeError: ``query`` is not a str."""
        prior = self.prior_of(query)
        if self.options.outside_prior >= 1.0:
            return prior, prior
        return prior, self.prior_of(query, whole=True) or prior
