"""``ExtractiveSummarizer``: an offline, deterministic, contrastive document fingerprint (no LLM).

This is our own contribution, not the SAC paper's: instead of a general summary, it writes what Document-Level
Retrieval Mismatch (DRM) needs, i.e. what tells THIS document apart from its look-alikes:

    "<Document type> between <Party A> and <Party B>, dated <date>. Key terms: <t1>, <t2>, ..."

within ``max_chars`` characters, where

* the document TYPE is the title found in the lead (the first ``lead_chars`` characters), skipping cover-page noise
  (``Exhibit 10.1``, ``EXECUTION COPY``, confidentiality legends, tables of contents): the first short line that
  contains a document-type noun (agreement, plan of merger, licence, policy, NDA...) and is in capitals or title
  case, else a ``This ... Agreement`` phrase, else ``Privacy policy`` for text dominated by privacy vocabulary
  (at least ``_PRIVACY_PER_10K`` mentions of "privacy", "personal information" or "personal data" per 10,000
  characters of the term sample), else ``Document``. The same density turns a bare ``Policy`` / ``Notice`` /
  ``Statement`` title into ``Privacy policy`` / ``Privacy notice`` / ``Privacy statement``;
* the PARTIES are found where contracts name them: the entity names after ``between`` / ``by and among`` (an entity
  is a run of capitalized words, optionally closed by a corporate suffix such as ``Inc.``, ``LLC``, ``S.A.``); the
  second and later parties must follow an ``and`` or, in a list, directly follow a suffixed name. A name may close
  with two suffixes (``Co., Ltd.``, ``Bancorp, Inc.``, ``Trust Company``). Jurisdictions, places and role words
  (``Delaware``, ``England and Wales``, ``Recipient``) are not parties, but a name may begin with one (``Kansas City
  Southern``, ``County Bancorp, Inc.``). Repeats are dropped, and the principals come first: the first party, then
  the others, then deal vehicles (``Merger Sub``, ``Mergeco``, ``Holdco``, ``Acquisition Corp.``) and affiliates of
  an earlier party (same first word), so a merger agreement keeps its buyer and its target when only two names fit.
  Fallbacks: ``X, a Delaware corporation`` patterns, and for policies ``X ("we", "us")``. All-caps names are
  title-cased;
* the DATE is the first ``dated`` / ``as of`` / ``effective`` date of the lead, else its first full date;
* the KEY TERMS are the document's highest TF-IDF terms weighted against a fixed document-frequency table
  (:class:`~llama_index_sac.summarizers.terms.TermStatistics`: the shipped ``legal-terms-v1`` by default, or one
  the user builds from their corpus), shown in their most frequent spelling in the document, skipping words
  already in the summary and near-duplicates. Terms are read from at most ``term_sample_chars`` characters of each
  document: the whole text when shorter, else its first third plus four evenly spaced windows, so later sections
  count too at a bounded cost.

Parts are added in that order while they fit; if the type and the parties alone exceed ``max_chars``, the result is
cut at a word boundary and flagged (``cut=True``). With ``metadata_keys`` the named metadata values are put first
(e.g. the file name), so results can be reported content-only (the default) and metadata-aware.

A summary is a pure function of the document: its text, the ``metadata_keys`` values, the settings and
the term table, nothing else. The batch it arrives in, the worker that runs it, the order of documents and earlier
runs do not matter, so a plain run, ``IngestionPipeline(num_workers=2)``, ``arun``, one-document-at-a-time docstore
upserts and a pickled summarizer write byte-identical summaries. The table is part of :meth:`identity` by its
fingerprint, so a summary cached under one table is never served for another. Why a table and not a fit on the
documents at hand: a fit on the batch is exactly what made summaries depend on the batch; a table fixed before the
run (shipped, or built once from the user's corpus with :meth:`fit` / ``TermStatistics.from_texts`` and saved) gives
the same contrast for every document, and a new document is weighed against the same statistics as the old ones.

Cost: each document is read up to ``lead_chars`` + ``term_sample_chars`` characters, whatever its length.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from llama_index.core.bridge.pydantic import Field, field_serializer, field_validator
from llama_index.core.schema import BaseNode, MetadataMode

from llama_index_sac.summarizers.base import BaseSummarizer, SummaryResult, cut_at_word_boundary
from llama_index_sac.summarizers.legal_identity import (
    find_date,
    find_document_type,
    find_parties,
    find_policy_owner,
    is_privacy_text,
)
from llama_index_sac.summarizers.terms import TermStatistics, term_sample

__all__ = ["ExtractiveSummarizer", "find_date", "find_document_type", "find_parties"]  # re-exported

_VERSION = "extractive-v3"  # v3: parties deduplicated, principals before deal vehicles; v2: "Exhibits 2.1" lines

_SURFACE_BLOCK = 8000  # characters per block when counting spellings
_SURFACE_OVERHANG = 64  # a block's scan may read this far past its end (a run starting in it may end there)


def _whole_runs(term: str, sample: str, low: str) -> Iterator[int]:
    """Start offsets, in order, of ``term`` in ``sample`` as a whole ``[\\w-]`` run (``re``'s ``\\w`` for ``str``:
    alphanumeric or ``_``), ignoring case; ``low`` is ``sample.lower()``, of the same length."""
    width, size = len(term), len(sample)
    pos = low.find(term)
    while pos >= 0:
        before = sample[pos - 1] if pos else " "
        after = sample[pos + width] if pos + width < size else " "
        if not (before.isalnum() or before in "_-" or after.isalnum() or after in "_-"):
            yield pos
        pos = low.find(term, pos + 1)


def _count_spellings(terms: list[str], sample: str, low: str) -> dict[str, Counter[str]]:
    """Spellings of ASCII ``terms`` (lower case, at most ``_SURFACE_OVERHANG`` characters) in ``sample``: whole
    ``[\\w-]`` runs whose lower case is the term, counted up to the end of the block in which every term reached 3
    (all of them when a term has fewer). ``low`` is ``sample.lower()``, of the same length. Same counts as
    :func:`_count_spellings_regex` (non-ASCII letters that ``re`` also equates with ASCII ones, such as ``ſ``,
    never lower-case to the ASCII term, so that scan does not count them either)."""
    runs = {term: _whole_runs(term, sample, low) for term in terms}
    starts = {term: list(islice(found, 3)) for term, found in runs.items()}
    stop = len(sample)
    if all(len(first) == 3 for first in starts.values()):  # stop after the block where the last term reached 3
        stop = max((first[2] // _SURFACE_BLOCK + 1) * _SURFACE_BLOCK for first in starts.values())
        for term, found in runs.items():
            first = starts[term]
            for pos in found:
                if pos >= stop:
                    break
                first.append(pos)
    else:
        for term, found in runs.items():
            starts[term].extend(found)
    return {term: Counter(sample[pos: pos + len(term)] for pos in found if pos < stop)
            for term, found in starts.items()}


def _count_spellings_regex(terms: list[str], sample: str) -> dict[str, Counter[str]]:
    """Spellings of any ``terms`` in ``sample`` (rule of :func:`_count_spellings`), with one case-insensitive
    regular expression scanned block by block."""
    pattern = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
    regex = re.compile(rf"(?<![\w\-])(?:{pattern})(?![\w\-])", re.IGNORECASE)
    forms: dict[str, Counter[str]] = {t: Counter() for t in terms}
    step = _SURFACE_BLOCK
    for block in range(0, len(sample), step):
        for match in regex.finditer(sample, block, min(len(sample), block + step + _SURFACE_OVERHANG)):
            if match.start() >= block + step:
                break
            found = match.group(0)
            counter = forms.get(found.lower())
            if counter is not None:
                counter[found] += 1
        if all(sum(c.values()) >= 3 for c in forms.values()):
            break
    return forms


class ExtractiveSummarizer(BaseSummarizer):
    """Offline contrastive summary: document type, parties, date and the TF-IDF terms that set the document apart
    from the corpus (rules, corpus/caching rule in the module docstring). Deterministic; no network, no model.

    Usage::

        summarizer = ExtractiveSummarizer(max_chars=150)         # key terms against the shipped legal-terms-v1
        summarizer.summarize(text).summary
        # 'Agency Agreement between General Electric Capital Corporation and Duckwall-Alco Stores, Inc., dated
        #  November 9, 2005. Key terms: ...'
        stats = TermStatistics.from_texts(my_corpus_texts, name="my-contracts")   # or: your own corpus' table,
        stats.save("terms.json.gz")                                               # built once, used everywhere
        ExtractiveSummarizer(term_statistics="terms.json.gz")

    Raises:
        ValueError: ``term_statistics`` is neither None, a ``TermStatistics`` nor a loadable table file.
    """

    max_terms: int = Field(default=8, ge=0, description="Most distinctive terms to add (fewer if max_chars is "
                           "reached).")
    lead_chars: int = Field(default=6000, gt=0, description="Characters at the start searched for the title, "
                            "parties and date.")
    term_sample_chars: int = Field(default=30000, gt=0, description="Characters of each document read for its key "
                                   "terms (whole text if shorter, else first third plus four evenly spaced windows).")
    include_date: bool = Field(default=True, description="Add the document's date when found and room is left.")
    term_statistics: TermStatistics | None = Field(
        default=None,
        description="Document frequencies the key terms are weighted against: None for the table shipped with the "
        "package (TermStatistics.default(), legal-terms-v1), a TermStatistics, or the path of a file written by "
        "TermStatistics.save(). Part of the identity by its fingerprint.",
    )

    @field_validator("term_statistics", mode="before")
    @classmethod
    def _load_statistics(cls, value: Any) -> TermStatistics | None:
        if value is None or isinstance(value, TermStatistics):
            return value
        if isinstance(value, (str, os.PathLike)):
            return TermStatistics.load(value)
        if isinstance(value, dict) and "df" in value:
            return TermStatistics.from_json(value)
        if isinstance(value, dict) and value.get("fingerprint") == TermStatistics.default().fingerprint:
            return None  # the serialized identity of the shipped table
        raise ValueError(
            "term_statistics must be None (the shipped table), a TermStatistics or the path of a saved table; "
            f"got {type(value).__name__} (a serialized identity of a custom table cannot be turned back into the "
            "table: load it with TermStatistics.load(path))"
        )

    @field_serializer("term_statistics")
    def _serialize_statistics(self, value: TermStatistics | None) -> dict[str, Any]:
        return self.statistics.identity()

    @classmethod
    def class_name(cls) -> str:
        return "ExtractiveSummarizer"

    @property
    def statistics(self) -> TermStatistics:
        """The table in use (``term_statistics`` or the shipped default)."""
        return self.term_statistics if self.term_statistics is not None else TermStatistics.default()

    def max_summary_chars(self) -> int:
        """``max_chars``: a longer summary is cut at a word boundary."""
        return self.max_chars

    def identity(self) -> dict[str, Any]:
        ident = super().identity()
        ident.update(version=_VERSION, max_terms=self.max_terms, lead_chars=self.lead_chars,
                     term_sample_chars=self.term_sample_chars, include_date=self.include_date,
                     term_statistics=self.statistics.identity())
        return ident

    def fit(self, texts: Iterable[str | BaseNode]) -> ExtractiveSummarizer:
        """Use document frequencies of ``texts`` (full document texts or nodes/Documents) instead of the shipped
        table; returns ``self``. Same as ``term_statistics=TermStatistics.from_texts(texts)``: save that table
        (:meth:`TermStatistics.save`) and pass it to every later run, worker and update so they summarize alike.

        Raises:
            TypeError: an item is neither a str nor a node.
            ValueError: no non-blank text."""
        docs = [t.get_content(metadata_mode=MetadataMode.NONE) if isinstance(t, BaseNode) else t for t in texts]
        self.term_statistics = TermStatistics.from_texts(docs, name="fitted", sample_chars=self.term_sample_chars)
        return self

    # -- terms ----------------------------------------------------------------------------------------------
    def _term_scores(self, sample: str) -> list[str]:
        if self.max_terms == 0:
            return []
        return self.statistics.top_terms(sample, 6 * self.max_terms + 10)

    @staticmethod
    def _surfaces(terms: list[str], sample: str, low: str | None = None) -> dict[str, str]:
        """Each term's most frequent spelling in ``sample`` (ties: alphabetical; long all-caps words lower-cased).

        A spelling is a whole ``[\\w-]`` run equal to the term ignoring case. Runs are counted in blocks of 8,000
        characters until every term was seen 3 times (the text is long, terms few). ``low`` is ``sample.lower()``
        when the caller has it. ASCII terms (the usual case) are found with ``str.find`` in ``low``; other terms
        with one case-insensitive regular expression, which gives the same counts."""
        if not terms:
            return {}
        low = sample.lower() if low is None else low
        if len(low) == len(sample) and all(t.isascii() and len(t) <= _SURFACE_OVERHANG for t in terms):
            forms = _count_spellings(terms, sample, low)
        else:
            forms = _count_spellings_regex(terms, sample)
        out = {}
        for term, counter in forms.items():
            if not counter:
                out[term] = term
                continue
            form = max(sorted(counter), key=lambda f: counter[f])
            out[term] = term if form.isupper() and len(form) > 4 else form
        return out

    # -- the body -------------------------------------------------------------------------------------------
    def _summarize(self, text: str, metadata: dict[str, str]) -> SummaryResult:
        max_chars, max_terms = self.max_chars, self.max_terms
        lead = text[: self.lead_chars]
        sample = term_sample(text, self.term_sample_chars)
        doc_type = find_document_type(lead)
        low = sample.lower()
        privacy = is_privacy_text(low)
        if privacy and (doc_type is None or doc_type.lower() in ("policy", "notice", "statement")):
            doc_type = "Privacy policy" if doc_type is None else f"Privacy {doc_type.lower()}"
        if doc_type is not None and "privacy" in doc_type.lower():
            parties = find_policy_owner(lead)
        else:
            parties = find_parties(lead)
        terms = self._term_scores(sample)
        if not parties and doc_type is not None and "privacy" in doc_type.lower():
            surfaces = self._surfaces(terms[:5], sample, low)
            for term in terms[:5]:
                form = surfaces[term]
                if form[:1].isupper() or form[:1].isdigit():
                    parties = [form]
                    break
        prefix = "; ".join(metadata.values())
        head = doc_type or "Document"
        if len(parties) > 2 and len(head) + sum(len(p) + 2 for p in parties) + 10 > max_chars:
            parties = parties[:2]  # the third named party (often a merger sub) only if it fits
        if len(parties) == 1:
            head = f"{head}: {parties[0]}"
        elif parties:
            joined = parties[0] if len(parties) == 2 else ", ".join(parties[:-1])
            head = f"{head} {'between' if len(parties) == 2 else 'among'} {joined} and {parties[-1]}"
        if prefix:
            head = f"{prefix}. {head}"
        summary = head
        if self.include_date:
            date = find_date(lead)
            if date and len(summary) + len(date) + 8 <= max_chars:
                summary = f"{summary}, dated {date}"
        chosen: list[str] = []
        prefixes: set[str] = set()
        seen = summary.lower()
        label = " Key terms: " if summary.endswith(".") else ". Key terms: "
        used = len(summary) + len(label) + 1  # +1: the final period
        for term in terms:
            if len(chosen) >= max_terms:
                break
            if len(term) < 3 or term in seen or term[:5] in prefixes or (
                not term.isalpha() and any(c.isdigit() for c in term)
            ):
                continue
            cost = len(term) + (2 if chosen else 0)  # a spelling differs from the term only in case
            if used + cost > max_chars:
                continue
            chosen.append(term)
            prefixes.add(term[:5])  # no two terms with the same first five letters
            used += cost
        if chosen:
            surfaces = self._surfaces(chosen, sample, low)
            summary = f"{summary}{label}{', '.join(surfaces[t] for t in chosen)}"
        summary = summary.rstrip(".") + "."
        cut = len(summary) > max_chars
        if cut:
            summary = cut_at_word_boundary(summary, max_chars)
        return SummaryResult(summary=summary, strategy="extractive", cut=cut)
