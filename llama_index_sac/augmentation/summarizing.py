"""One summary per document group: cache lookups, bounded concurrency, the error policy, cache-write faults.

:func:`summarize_groups` is the loop behind :class:`~llama_index_sac.SummaryAugmentationTransformation`:
blank documents get ``SummaryResult("", "empty")`` without a call; hits come from the summary cache (or, without
one, from an in-memory memo); the rest are summarized (LLM summarizers concurrently, at most ``concurrency``
requests; CPU-bound ones in order). A failure raises :class:`SummarizationError` naming the document
(``on_error="raise"``; an ``LLMUnavailableError`` keeps its type) or is recorded on the group (``"skip"``). A summary
that cannot be stored in the cache is kept and reported (``group.cache_error``, one ``CacheWriteWarning``). Each
document sends its instrumentation events (:mod:`.events`): a cache hit, or a start and an end or a failure.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import MutableMapping

from tqdm.auto import tqdm

from llama_index_sac._warn import caller_stacklevel
from llama_index_sac.augmentation.events import (
    SummaryCacheHitEvent,
    SummaryEndEvent,
    SummaryFailureEvent,
    SummaryStartEvent,
    dispatcher,
)
from llama_index_sac.documents import DocumentGroup
from llama_index_sac.summarizers.base import BaseSummarizer, SummarizationError, SummaryResult
from llama_index_sac.summarizers.cache import CacheReadWarning, CacheWriteWarning, SummaryCache, summary_cache_key
from llama_index_sac.summarizers.retry import LLMUnavailableError

__all__ = ["summarize_groups"]

logger = logging.getLogger(__name__)


async def summarize_groups(
    groups: list[DocumentGroup],
    summarizer: BaseSummarizer,
    *,
    cache: SummaryCache | None,
    memo: MutableMapping[str, SummaryResult],
    on_error: str = "raise",
    concurrency: int = 4,
    show_progress: bool = False,
) -> int:
    """Set ``result`` (or ``error``/``cache_error``) on every group; returns how many summaries were computed.

    Args:
        groups: documents with their full text (``group.text``) and metadata.
        summarizer: writes the summaries.
        cache: the on-disk summary cache, or ``None`` (then ``memo`` keeps the summaries by the same key).
        memo: in-memory summaries by cache key, used when ``cache`` is ``None``.
        on_error: ``"raise"`` or ``"skip"`` (see the module docstring).
        concurrency: most concurrent requests of an LLM summarizer (``uses_llm``).
        show_progress: a progress bar over the documents to summarize.

    Raises:
        SummarizationError: a summary failed and ``on_error="raise"`` (documents not started are cancelled).
    """
    identity = summarizer.identity()
    name = summarizer.class_name()
    longest = summarizer.max_summary_chars()
    rejected = cache.rejected if cache is not None else 0
    pending: list[tuple[DocumentGroup, str]] = []
    for group in groups:
        text = group.text or ""
        if not text.strip():
            group.result = SummaryResult(summary="", strategy="empty")  # no call for blank documents
            continue
        key = summary_cache_key(text, identity, summarizer.folded_metadata(group.metadata))
        hit = cache.get(key, max_chars=longest) if cache is not None else memo.get(key)
        if hit is not None:
            group.result = hit
            dispatcher.event(SummaryCacheHitEvent(doc_id=group.doc_id, summarizer=name))
        else:
            pending.append((group, key))
    if cache is not None and cache.rejected > rejected:
        warnings.warn(f"{cache.rejected - rejected} summary-cache entries in {cache.directory} were unusable "
                      "(damaged, too large, not a regular file, or a summary longer than the summarizer writes; "
                      "each is logged): they are summarized again", CacheReadWarning, stacklevel=caller_stacklevel())
    if not pending:
        return 0
    limiter = asyncio.Semaphore(concurrency) if summarizer.uses_llm else None
    bar = tqdm(total=len(pending), desc="Summarizing documents", disable=not show_progress)
    computed = 0

    async def run(group: DocumentGroup, key: str) -> None:
        nonlocal computed
        dispatcher.event(SummaryStartEvent(doc_id=group.doc_id, summarizer=name))
        try:
            result = await summarizer.asummarize(group.text or "", group.metadata, limiter=limiter)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            dispatcher.event(SummaryFailureEvent(doc_id=group.doc_id, summarizer=name,
                                                 error=f"{type(exc).__name__}: {exc}"))
            if on_error == "raise":
                if isinstance(exc, LLMUnavailableError):  # the endpoint is down: keep the documented type
                    exc.doc_id = group.doc_id
                    raise
                raise SummarizationError(
                    f"summary of document {group.doc_id!r} failed: {type(exc).__name__}: {exc}",
                    doc_id=group.doc_id, attempts=getattr(exc, "attempts", 0),
                ) from exc
            group.error = f"{type(exc).__name__}: {exc}"
            logger.warning("summary of document %r failed, recorded as summary_error: %s", group.doc_id, group.error)
            return
        finally:
            bar.update(1)
        computed += 1
        group.result = result
        dispatcher.event(SummaryEndEvent(doc_id=group.doc_id, summarizer=name, strategy=result.strategy,
                                         summary_chars=len(result.summary)))
        if cache is None:
            memo[key] = result
            return
        try:
            cache.put(key, result, identity)
        except OSError as exc:  # the summary stands; only storing it failed
            group.cache_error = f"{type(exc).__name__}: {exc}"

    try:
        if limiter is None:  # CPU-bound summarizer: run in order, no concurrency to manage
            for group, key in pending:
                await run(group, key)
        else:
            tasks = [asyncio.ensure_future(run(group, key)) for group, key in pending]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
    finally:
        bar.close()
        _warn_cache_errors(groups, cache)
    return computed


def _warn_cache_errors(groups: list[DocumentGroup], cache: SummaryCache | None) -> None:
    failed = [g for g in groups if g.cache_error is not None]
    if not failed:
        return
    names = ", ".join(repr(g.doc_id) for g in failed[:5]) + (" ..." if len(failed) > 5 else "")
    warnings.warn(
        f"{len(failed)} summaries could not be stored in the summary cache {cache.directory if cache else ''} "
        f"({failed[0].cache_error}); their nodes carry summary_cache_error and the next run will summarize them "
        f"again: {names}",
        CacheWriteWarning, stacklevel=caller_stacklevel(),
    )
