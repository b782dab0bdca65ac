"""The in-memory form of a retrieval benchmark: documents, queries with gold spans, dataset names."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from llama_index.core.schema import Document

from llama_index_sac.evaluation.metrics import LocatedSpan

__all__ = ["BenchmarkQuery", "RetrievalBenchmark"]


@dataclass(frozen=True)
class BenchmarkQuery:
    """One benchmark test: a query and its gold spans (character ranges into corpus documents).

    ``dataset`` names the group the query is averaged in (LegalBench-RAG: the benchmark file's stem).
    """

    query_id: str
    query: str
    gold: tuple[LocatedSpan, ...]
    dataset: str

    @property
    def gold_doc_ids(self) -> set[str]:
        return {span.doc_id for span in self.gold}


@dataclass
class RetrievalBenchmark:
    """Documents (``doc_id -> text``, ids are corpus-relative file paths such as ``"cuad/foo.txt"``) and queries.

    ``doc_datasets`` maps each document id to its dataset (the first path component for LegalBench-RAG).
    """

    name: str
    documents: dict[str, str]
    queries: list[BenchmarkQuery]
    doc_datasets: dict[str, str] = field(default_factory=dict)
    description: str = ""

    def __post_init__(self) -> None:
        """Check the benchmark.

        Raises:
            TypeError: ``documents`` is not a ``str -> str`` mapping, a query is not a :class:`BenchmarkQuery`, a
                gold span is not a ``(doc_id, start, end)`` triple of str and ints.
            ValueError: duplicate ``query_id``; a gold span on a document not in ``documents`` or outside it
                (``0 <= start <= end <= len(text)`` in characters).
        """
        for doc_id, text in self.documents.items():
            if not isinstance(doc_id, str) or not doc_id or not isinstance(text, str):
                raise TypeError(f"benchmark {self.name!r}: documents must map non-empty str ids to str texts, got "
                                f"{type(doc_id).__name__} {doc_id!r:.80} -> {type(text).__name__}")
            self.doc_datasets.setdefault(doc_id, PurePosixPath(doc_id).parts[0] if "/" in doc_id else self.name)
        seen: set[str] = set()
        missing: set[str] = set()
        for query in self.queries:
            if not isinstance(query, BenchmarkQuery):
                raise TypeError(f"benchmark {self.name!r}: queries must be BenchmarkQuery, got {type(query).__name__}")
            if query.query_id in seen:
                raise ValueError(f"benchmark {self.name!r}: duplicate query_id {query.query_id!r}")
            seen.add(query.query_id)
            for span in query.gold:
                self._check_span(query.query_id, span, missing)
        if missing:
            raise ValueError(
                f"benchmark {self.name!r}: gold spans refer to documents not in the corpus: {sorted(missing)[:5]}"
            )

    def _check_span(self, query_id: str, span: object, missing: set[str]) -> None:
        if not (isinstance(span, tuple) and len(span) == 3):
            raise TypeError(f"benchmark {self.name!r}: query {query_id!r}: gold span {span!r:.80} is not a "
                            "(doc_id, start, end) LocatedSpan")
        doc_id, start, end = span
        if not isinstance(doc_id, str) or not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
            raise TypeError(f"benchmark {self.name!r}: query {query_id!r}: gold span {span!r:.80} needs a str "
                            "doc_id and int start/end")
        text = self.documents.get(doc_id)
        if text is None:
            missing.add(doc_id)
        elif not 0 <= start <= end <= len(text):
            raise ValueError(f"benchmark {self.name!r}: query {query_id!r}: gold span {tuple(span)!r:.80} is outside "
                             f"{doc_id!r} ({len(text)} characters): expected 0 <= start <= end <= length")

    @property
    def datasets(self) -> list[str]:
        """Dataset names in first-appearance order of the queries."""
        return list(dict.fromkeys(q.dataset for q in self.queries))

    @property
    def n_characters(self) -> int:
        return sum(len(text) for text in self.documents.values())

    def to_documents(
        self, doc_ids: Iterable[str] | None = None, embed_metadata_keys: Iterable[str] = ()
    ) -> list[Document]:
        """LlamaIndex ``Document`` objects with ``id_ = doc_id`` (the corpus file path), so every chunk's
        ``ref_doc_id`` names its file and DRM is attributed by file path.

        Metadata: ``file_path`` (``"corpus/<doc_id>"``), ``file_name`` and ``dataset``. Only the keys listed in
        ``embed_metadata_keys`` are seen by the embedding (default: none, the SAC paper's setting; pass
        ``["file_path"]`` to reproduce ``SimpleDirectoryReader``, which embeds ``file_path`` and hides file
        name/type/size/dates); every key is hidden from the LLM.
        """
        embed_keys = set(embed_metadata_keys)
        out = []
        for doc_id in doc_ids if doc_ids is not None else self.documents:
            out.append(
                Document(
                    id_=doc_id,
                    text=self.documents[doc_id],
                    metadata={
                        "file_path": f"corpus/{doc_id}",
                        "file_name": PurePosixPath(doc_id).name,
                        "dataset": self.doc_datasets[doc_id],
                    },
                    excluded_embed_metadata_keys=[
                        key for key in ("file_path", "file_name", "dataset") if key not in embed_keys
                    ],
                    excluded_llm_metadata_keys=["file_path", "file_name", "dataset"],
                )
            )
        return out
