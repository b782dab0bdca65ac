"""Default values of the components' options, each written once (like ``llama_index.core.constants``).

The components' pydantic fields take their defaults from here; everything else (``from_defaults``, the settings
models of :mod:`llama_index_sac.settings`, the command line) reads those fields. Sizes are in characters; the
document-aware weights are in the units of the chunks' scores (cosine similarity for a vector index).
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "COSINE_SPAN",
    "DEFAULT_BREAKPOINT_METHOD",
    "DEFAULT_BUFFER_SIZE",
    "DEFAULT_CANDIDATE_TOP_K",
    "DEFAULT_CHUNK_OVERLAP",
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_FOCUS_DOCUMENTS",
    "DEFAULT_LEXICAL_SCOPE",
    "DEFAULT_LEXICAL_WEIGHT",
    "DEFAULT_LOCATOR_MAX_DOCUMENTS",
    "DEFAULT_LOCATOR_MIN_SHARE",
    "DEFAULT_LOCATOR_ONLY",
    "DEFAULT_MAX_CHUNK_SIZE",
    "DEFAULT_MAX_DOCUMENT_FREQUENCY",
    "DEFAULT_MIN_CHUNK_SIZE",
    "DEFAULT_NAME_PAIRS",
    "DEFAULT_NAME_WEIGHT",
    "DEFAULT_OUTSIDE_PRIOR",
    "DEFAULT_PRIOR_MARGIN",
    "DEFAULT_PRIOR_WEIGHT",
    "DEFAULT_QUESTION_WEIGHT",
    "DEFAULT_REQUIRE_NAME_MATCH",
    "DEFAULT_SCORE_SCALE",
    "DEFAULT_SEMANTIC_BATCH_SIZE",
    "DEFAULT_SENTENCE_BACKEND",
    "DEFAULT_SEPARATOR_HIERARCHY",
    "DEFAULT_SIMILARITY_TOP_K",
    "DEFAULT_SUMMARY_CHARS",
    "DEFAULT_WORD_PARTS",
    "LexicalScope",
    "ScoreScale",
    "SeparatorHierarchy",
]

#: Recursive and hybrid parsers: maximum chunk length and overlap (the SAC paper's and LegalBench-RAG's setting).
DEFAULT_CHUNK_SIZE = 500
DEFAULT_CHUNK_OVERLAP = 0

#: The recursive parser's separator hierarchy by name, for settings and command lines (the lists are
#: :data:`~llama_index_sac.node_parser.recursive.SEPARATOR_HIERARCHIES`): ``"sentences"`` paragraphs, lines, sentence
#: ends (``". "``), words, characters; ``"words"`` the same without sentence ends (LangChain's hierarchy).
SeparatorHierarchy = Literal["sentences", "words"]
DEFAULT_SEPARATOR_HIERARCHY: SeparatorHierarchy = "sentences"

#: Semantic parser (and the hybrid parser's section finder).
DEFAULT_SENTENCE_BACKEND: Literal["nupunkt"] = "nupunkt"
DEFAULT_BUFFER_SIZE = 1
DEFAULT_BREAKPOINT_METHOD: Literal["percentile"] = "percentile"
DEFAULT_MIN_CHUNK_SIZE = 100
DEFAULT_MAX_CHUNK_SIZE = 1000
DEFAULT_SEMANTIC_BATCH_SIZE = 64

#: Summarizers: target summary length.
DEFAULT_SUMMARY_CHARS = 150

#: The document prior (:class:`~llama_index_sac.retrievers.options.DocumentPriorOptions`): the names' share of the
#: prior, two-word names, the margin by which a match must stand out, whether a name must match, whether a leading
#: locator clause is read alone, the share of the prior kept outside the documents the question
#: names, whether hyphenated words give their parts, and the share of the reference table's
#: documents below which a name is distinctive.
DEFAULT_NAME_WEIGHT = 0.5
DEFAULT_NAME_PAIRS = False
DEFAULT_PRIOR_MARGIN = 0.0
DEFAULT_REQUIRE_NAME_MATCH = False
DEFAULT_LOCATOR_ONLY = True
#: The share of the prior kept outside the documents the locator names (1: the whole prior; 0: none); chosen
#: leave-one-dataset-out and leave-one-form-out (``bench/tune_chunk_ranking.py --grid outside``).
DEFAULT_OUTSIDE_PRIOR = 0.0
DEFAULT_WORD_PARTS = True
DEFAULT_MAX_DOCUMENT_FREQUENCY = 0.02
#: The document locator (``retrievers/locator.py``): a word names documents when at most this many documents hold
#: it, and a document is located at this share of the best score; chosen leave-one-dataset-out and
#: leave-one-form-out, never on the queries they are scored on.
DEFAULT_LOCATOR_MAX_DOCUMENTS = 3
DEFAULT_LOCATOR_MIN_SHARE = 1.0

#: Document-aware ranking (:class:`~llama_index_sac.retrievers.options.RankingOptions`): chunks returned, the
#: prior's weight, the documents that get a filtered dense query over a vector index, the dense candidates fetched,
#: the weight of the question's lexical score and the chunks it ranks, the question's share in the clause order.
DEFAULT_SIMILARITY_TOP_K = 10
DEFAULT_PRIOR_WEIGHT = 0.3
DEFAULT_FOCUS_DOCUMENTS = 2
DEFAULT_CANDIDATE_TOP_K = 100
DEFAULT_LEXICAL_WEIGHT = 0.1
#: ``"located"``: the chunks of the documents the prior located (every chunk when it located none);
#: ``"candidates"``: every candidate chunk.
LexicalScope = Literal["located", "candidates"]
DEFAULT_LEXICAL_SCOPE: LexicalScope = "located"
DEFAULT_QUESTION_WEIGHT = 0.5
#: The scale the candidates' scores are put on before the prior and the lexical score are added
#: (:func:`~llama_index_sac.retrievers.ranking.scaled_scores`): ``"as-is"``; ``"band"``: the best 1, the worst
#: ``1 - COSINE_SPAN``, linear between; ``"max"``: each divided by the query's largest absolute score; ``"auto"``: as
#: they are when every score lies in [-1, 1] (a vector index's cosine similarity, the scale the weights were chosen
#: on), else ``"band"``.
ScoreScale = Literal["auto", "as-is", "band", "max"]
DEFAULT_SCORE_SCALE: ScoreScale = "auto"
#: The span ``"band"`` gives the candidates: the median over the queries of the default embedding's cosine of the
#: best minus the ``DEFAULT_CANDIDATE_TOP_K``-th dense candidate, measured on contracts and queries the benchmarks
#: do not score.
COSINE_SPAN = 0.4
