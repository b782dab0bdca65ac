"""The options of document-aware retrieval, each declared once: :class:`DocumentPriorOptions` (how a
:class:`~llama_index_sac.retrievers.document_index.DocumentIndex` reads a query; saved with the index) and
:class:`RankingOptions` (how :class:`~llama_index_sac.retrievers.document_aware.DocumentAwareRetriever` and
:class:`~llama_index_sac.retrievers.postprocessor.DocumentAwarePostprocessor` rank the chunks,
:func:`~llama_index_sac.retrievers.ranking.rank`). Their defaults are in :mod:`llama_index_sac.constants`;
:class:`~llama_index_sac.settings.DocumentRetrievalSettings` and the command line read these fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field, ValidationError

from llama_index_sac.constants import (
    DEFAULT_CANDIDATE_TOP_K,
    DEFAULT_LEXICAL_SCOPE,
    DEFAULT_LEXICAL_WEIGHT,
    DEFAULT_LOCATOR_ONLY,
    DEFAULT_MAX_DOCUMENT_FREQUENCY,
    DEFAULT_NAME_PAIRS,
    DEFAULT_NAME_WEIGHT,
    DEFAULT_OUTSIDE_PRIOR,
    DEFAULT_PRIOR_MARGIN,
    DEFAULT_PRIOR_WEIGHT,
    DEFAULT_QUESTION_WEIGHT,
    DEFAULT_REQUIRE_NAME_MATCH,
    DEFAULT_SCORE_SCALE,
    DEFAULT_WORD_PARTS,
    LexicalScope,
    ScoreScale,
)

__all__ = ["DocumentPriorOptions", "RankingOptions", "options_from"]

_Options = TypeVar("_Options", bound=BaseModel)


class DocumentPriorOptions(BaseModel):
    """How the document prior reads a query (:class:`~llama_index_sac.retrievers.document_index.DocumentIndex`).

    ``prior(d) = (1 - name_weight) * summary_match(d) + name_weight * names_match(d)``, each match BM25 divided by
    its maximum over the documents for the query, so in [0, 1]."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name_weight: float = Field(default=DEFAULT_NAME_WEIGHT, ge=0.0, le=1.0, allow_inf_nan=False,
                               description="Share of the distinctive-names match in the document prior, in [0, 1].")
    name_pairs: bool = Field(default=DEFAULT_NAME_PAIRS,
                             description="Also two adjacent capitalised words that are rare together as a name.")
    prior_margin: float = Field(default=DEFAULT_PRIOR_MARGIN, ge=0.0, allow_inf_nan=False,
                                description="A prior part counts only when its best document's score is at least "
                                            "1 + this times the runner-up's (0: every match counts).")
    require_name_match: bool = Field(default=DEFAULT_REQUIRE_NAME_MATCH,
                                     description="The prior is 0 unless a query name is some document's name.")
    locator_only: bool = Field(default=DEFAULT_LOCATOR_ONLY,
                               description="The prior reads only the phrases of the query that name documents, "
                                           "wherever they are ('..., under Acme's NDA?'); none named: no prior.")
    outside_prior: float = Field(default=DEFAULT_OUTSIDE_PRIOR, ge=0.0, le=1.0, allow_inf_nan=False,
                                 description="With locator_only, the share of the prior kept outside the documents "
                                             "the question names (the locator's), in [0, 1]: 1 the whole prior; 0 "
                                             "none, the named documents' divided by its maximum over them.")
    word_parts: bool = Field(default=DEFAULT_WORD_PARTS,
                             description="A hyphenated word also gives its distinctive parts in the summary match.")
    max_document_frequency: float = Field(default=DEFAULT_MAX_DOCUMENT_FREQUENCY, gt=0.0, le=1.0,
                                          allow_inf_nan=False,
                                          description="A name is distinctive below this share of the reference "
                                                      "table's documents, in (0, 1].")


class RankingOptions(BaseModel):
    """How the chunks are ranked: ``score + prior_weight * prior(document) + lexical_weight * lexical(chunk)``, then
    each located document's places in clause order (:func:`~llama_index_sac.retrievers.ranking.rank`). ``score`` is
    the chunk's score put on one scale (``score_scale``): a vector index's cosine similarity as it is, the scores of
    another retriever (BM25; fusion with ``score_scale="band"``) mapped onto a cosine's spread, so each weight means the
    same everywhere."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prior_weight: float = Field(default=DEFAULT_PRIOR_WEIGHT, ge=0.0, allow_inf_nan=False,
                                description="Weight of the document prior added to the chunk's score (0: off).")
    focus_documents: int | None = Field(
        default=None, ge=0,
        description="Top-prior documents that also get a dense query filtered to them, and the documents located "
        "(at least one); None: 2 over a vector index, 0 over another retriever or in the postprocessor.")
    candidate_top_k: int = Field(default=DEFAULT_CANDIDATE_TOP_K, ge=1,
                                 description="Dense candidates fetched over a vector index (at least the chunks "
                                             "returned).")
    lexical_weight: float = Field(default=DEFAULT_LEXICAL_WEIGHT, ge=0.0, allow_inf_nan=False,
                                  description="Weight of the question's BM25 over the candidate chunks (0: off).")
    lexical_scope: LexicalScope = Field(
        default=DEFAULT_LEXICAL_SCOPE, description="The candidates the question's BM25 ranks: those of the located "
        "documents (all when none is located), or every candidate.")
    question_weight: float = Field(default=DEFAULT_QUESTION_WEIGHT, ge=0.0, le=1.0, allow_inf_nan=False,
                                   description="Share of the question's own dense score (the query without its "
                                               "locator clause) in the order of a located document's chunks, in "
                                               "[0, 1]; over a vector index only.")
    score_scale: ScoreScale = Field(
        default=DEFAULT_SCORE_SCALE, description="The scale of the candidates' scores before the prior and the "
        "lexical score are added, per query: as-is; band (the best 1, the worst 1 - COSINE_SPAN, a cosine's "
        "spread); max (each divided by the largest absolute score); auto: as they are when all lie in [-1, 1] "
        "(cosine), else band (BM25). Set band around reciprocal-rank fusion, whose scores are small.")


def options_from(cls: type[_Options], options: _Options | None, values: Mapping[str, Any]) -> _Options:
    """``options`` (None: the defaults) with ``values`` (keyword arguments of a component) set, validated strictly
    (no string or bool where a number is expected).

    Raises:
        TypeError: ``options`` is not a ``cls``.
        ValueError: an unknown option or a bad value, one line naming the option and the value."""
    if options is not None and not isinstance(options, cls):
        raise TypeError(f"options must be a {cls.__name__}, got {type(options).__name__}")
    if not values:
        return options if options is not None else cls()
    base = options.model_dump() if options is not None else {}
    try:
        return cls.model_validate({**base, **values}, strict=True)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            name = ".".join(str(part) for part in error["loc"])
            if error["type"] == "extra_forbidden":
                problems.append(f"unknown option {name!r} (the options: {', '.join(cls.model_fields)})")
            else:
                problems.append(f"{name}: {error['msg']}, got {error['input']!r}")
        raise ValueError("; ".join(problems)) from None
