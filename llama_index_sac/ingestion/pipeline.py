"""Production ingestion with SAC: failed summaries come back by running the same pipeline again.

:func:`failed_documents` lists the documents whose summary failed in a set of nodes (``summary_error``).

:class:`SACIngestionPipeline` is LlamaIndex's ``IngestionPipeline`` (same fields, same ``run``/``arun``, drop-in)
plus one rule: a document whose summary failed is not recorded as done. LlamaIndex's pipeline writes the hash of
every input document to the docstore after the transformations, whatever happened to its nodes, so with
``DocstoreStrategy.UPSERTS`` an unchanged document is never looked at again and a failed summary would stay missing
for good. After each run this pipeline

1. removes every failed document from the docstore (its hash and record) and its rows from the vector store, so
   the next run treats it as new and writes it whole; the failure is reported by the returned nodes
   (``summary_error``) and one ``SummaryFailureWarning`` naming the documents;
2. raises the ``failure_epoch`` of its :class:`~llama_index_sac.SummaryAugmentationTransformation`
   steps and keeps it in the ingestion cache (so it travels with ``persist``/``load``), so the cached output that
   holds the failed nodes is not served again.

The next run (same object, or a new one after ``load``) summarizes exactly the failed documents; every other
document is skipped by the docstore, or served by the summary cache when there is no docstore. Works with
``num_workers`` (the failed nodes come back from the workers) and ``arun``.

It also remembers (in the ingestion cache, beside the epoch) a fingerprint of the transformations' settings and warns
(``SettingsChangedWarning``) when a run with a docstore uses other settings than the run that built the index: the
docstore compares document hashes only, so unchanged documents would silently keep rows made with the old settings.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.ingestion.pipeline import remove_unstable_values
from llama_index.core.schema import BaseNode

from llama_index_sac._warn import caller_stacklevel
from llama_index_sac.augmentation.transformation import SummaryAugmentationTransformation

__all__ = ["SACIngestionPipeline", "SettingsChangedWarning", "SummaryFailureWarning", "failed_documents"]

_EPOCH_KEY = "llama-index-sac/failure-epoch"
_SETTINGS_KEY = "llama-index-sac/settings"


class SettingsChangedWarning(UserWarning):
    """The transformations' settings differ from those the docstore's documents were ingested with."""


class SummaryFailureWarning(UserWarning):
    """Some documents have no summary after this run (``on_error="skip"``); running again retries them."""


def failed_documents(nodes: Iterable[BaseNode], error_key: str = "summary_error") -> dict[str, str]:
    """``{document id: error}`` for every document with a node carrying ``error_key`` (in first-seen order).

    The document id is the node's ``ref_doc_id`` (its SOURCE document), or the node's own id for a Document.

    Raises:
        TypeError: an item is not a LlamaIndex node.
    """
    out: dict[str, str] = {}
    for node in nodes:
        if not isinstance(node, BaseNode):
            raise TypeError(f"failed_documents takes LlamaIndex nodes, got {type(node).__name__}")
        error = node.metadata.get(error_key)
        if error is not None:
            out.setdefault(node.ref_doc_id or node.node_id, str(error))
    return out


class SACIngestionPipeline(IngestionPipeline):
    """``IngestionPipeline`` that never records a document whose summary failed as done (module docstring).

    Example::

        pipeline = SACIngestionPipeline(
            transformations=[RecursiveCharacterNodeParser(chunk_size=500),
                             SummaryAugmentationTransformation(summarizer=..., on_error="skip",
                                                               cache_dir="~/.cache/llama-index-sac/summaries"),
                             embed_model],
            docstore=SimpleDocumentStore(), vector_store=vector_store)
        nodes = pipeline.run(documents=documents)       # the LLM fails for some documents: SummaryFailureWarning
        nodes = pipeline.run(documents=documents)       # later: exactly those documents are summarized
    """

    @classmethod
    def class_name(cls) -> str:
        return "SACIngestionPipeline"

    # -- the failure epoch, kept in the ingestion cache -----------------------------------------------------
    def _sac_steps(self) -> list[SummaryAugmentationTransformation]:
        return [t for t in self.transformations if isinstance(t, SummaryAugmentationTransformation)]

    def _cache_collection(self, cache_collection: str | None) -> str:
        return cache_collection or self.cache.collection

    def _stored_epoch(self, cache_collection: str | None) -> int:
        if self.disable_cache:
            return 0
        value = self.cache.cache.get(_EPOCH_KEY, collection=self._cache_collection(cache_collection))
        epoch = value.get("epoch", 0) if isinstance(value, dict) else 0
        return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else 0

    def _settings_fingerprint(self) -> str:
        parts = []
        for step in self.transformations:
            data = step.to_dict()
            data.pop("failure_epoch", None)
            parts.append(remove_unstable_values(json.dumps(data, sort_keys=True, default=str)))
        return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()

    def _before(self, cache_collection: str | None) -> None:
        stored = self._stored_epoch(cache_collection)
        for step in self._sac_steps():
            step.note_failure_epoch(stored)
        if self.disable_cache or self.docstore is None:
            return
        collection = self._cache_collection(cache_collection)
        current = self._settings_fingerprint()
        previous = self.cache.cache.get(_SETTINGS_KEY, collection=collection)
        if not isinstance(previous, dict):
            self.cache.cache.put(_SETTINGS_KEY, {"fingerprint": current}, collection=collection)
        elif previous.get("fingerprint") != current:  # kept: the index stays mixed until it is rebuilt
            warnings.warn(
                "the transformations' settings differ from those of the run that ingested the docstore's documents: "
                "unchanged documents are skipped and keep the rows made with the old settings. Rebuild the index "
                "(new vector store and docstore) to apply the new settings to every document.",
                SettingsChangedWarning, stacklevel=caller_stacklevel(),
            )

    def _after(self, nodes: Sequence[BaseNode], cache_collection: str | None) -> dict[str, str]:
        failed = failed_documents(nodes)
        if not failed:
            return failed
        steps = self._sac_steps()
        epoch = max([self._stored_epoch(cache_collection)] + [s.failure_epoch for s in steps]) + 1
        for step in steps:
            step.note_failure_epoch(epoch)
        if not self.disable_cache:
            self.cache.cache.put(_EPOCH_KEY, {"epoch": epoch}, collection=self._cache_collection(cache_collection))
        return failed

    def _warn(self, failed: dict[str, str]) -> None:
        names = ", ".join(repr(d) for d in list(failed)[:5]) + (" ..." if len(failed) > 5 else "")
        first = next(iter(failed.values()))
        warnings.warn(
            f"{len(failed)} document(s) have no summary ({first}); they were not recorded as ingested and will be "
            f"summarized again on the next run: {names}",
            SummaryFailureWarning, stacklevel=caller_stacklevel(),
        )

    # -- runs ------------------------------------------------------------------------------------------------
    def run(self, *args: Any, **kwargs: Any) -> Sequence[BaseNode]:  # type: ignore[override]
        """``IngestionPipeline.run``; then failed documents are taken out of the docstore and vector store."""
        collection = kwargs.get("cache_collection")
        self._before(collection)
        nodes = super().run(*args, **kwargs)
        failed = self._after(nodes, collection)
        if failed:
            for doc_id in failed:
                if self.docstore is not None:
                    self.docstore.delete_document(doc_id, raise_error=False)
                    self.docstore.delete_ref_doc(doc_id, raise_error=False)
                if self.vector_store is not None:
                    self.vector_store.delete(doc_id)
            self._warn(failed)
        return nodes

    async def arun(self, *args: Any, **kwargs: Any) -> Sequence[BaseNode]:  # type: ignore[override]
        """``IngestionPipeline.arun``; then failed documents are taken out of the docstore and vector store."""
        collection = kwargs.get("cache_collection")
        self._before(collection)
        nodes = await super().arun(*args, **kwargs)
        failed = self._after(nodes, collection)
        if failed:
            for doc_id in failed:
                if self.docstore is not None:
                    await self.docstore.adelete_document(doc_id, raise_error=False)
                    await self.docstore.adelete_ref_doc(doc_id, raise_error=False)
                if self.vector_store is not None:
                    await self.vector_store.adelete(doc_id)
            self._warn(failed)
        return nodes
