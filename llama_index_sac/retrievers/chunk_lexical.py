"""A lexical score of the question against the candidate chunks: which clause of the document, not which document.

The document prior finds the contract a query names; the gold clause is then often not the right document's top
dense chunk. The words of the QUESTION ("... permit the Receiving Party to create a copy ...") say which clause, and
a chunk that uses them is more likely the one asked about. :func:`lexical_scores` scores the candidate chunks the
retriever already holds (no index of the store is needed) by BM25 of the question's words, each divided by the best
candidate's score, so in [0, 1] and added with a small weight to the dense score (``lexical_weight`` of
:class:`~llama_index_sac.retrievers.options.RankingOptions`).

The question is the query without what locates the document (:func:`question_tokens`): a leading clause ended by a
semicolon that starts with a locating word ("Consider the Non-Disclosure Agreement between CEII and NDA; ..."), and
the words that are distinctive names of the documents the query names. Those words are in many chunks of that
document (parties are named throughout) and say nothing of the clause; left in, they favour the preamble.

BM25 (Okapi, ``k1`` and ``b`` below, Lucene's idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``) is computed over the
candidates only: the document frequencies are those of the ``N`` candidate chunks of this query, so a word every
candidate shares (the document's own vocabulary) weighs little and a word few candidates use weighs much. Each
distinct question word counts once. Words are :func:`~llama_index_sac.retrievers.document_names.word_tokens`
(lower-cased, stop words out), each reduced to its Snowball English stem (PyStemmer) on both sides, so "copies",
"copy" and "copying" meet, as do "terminate" and "termination". One pass over each candidate's text; the word
counts of the last :data:`TEXT_CACHE_SIZE` texts are kept (least recently used out), since the questions about one
contract score its chunks again and again, and a candidate seen before costs one look-up per question word.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
import Stemmer

from llama_index_sac.retrievers.document_names import word_tokens

__all__ = ["BM25_B", "BM25_K1", "LOCATOR_WORDS", "TEXT_CACHE_SIZE", "lexical_scores", "question_text",
           "question_tokens", "stems"]

#: Okapi BM25 term-frequency saturation and length normalisation (the usual values).
BM25_K1 = 1.5
BM25_B = 0.75
#: Words that open a leading clause locating the document ("Consider ...;", "In ...;", "Regarding ...;").
LOCATOR_WORDS = ("consider", "in", "regarding", "under", "for", "about", "re", "per", "within", "from")
#: Chunk texts whose words (and stems) are kept between queries, least recently used out.
TEXT_CACHE_SIZE = 4096
# Snowball English (the Porter2 stemmer); its own cache of recent words
_STEMMER = Stemmer.Stemmer("english")
# a leading locator clause: a locating word, then up to 400 characters without a semicolon or line break, then ";"
_LOCATOR_RE = re.compile(r"\s*(?:" + "|".join(LOCATOR_WORDS) + r")\b[^;\n]{0,400};", re.IGNORECASE)


def question_text(query: str) -> str:
    """``query`` without a leading locator clause (module docstring); ``query`` itself when it has none, or when
    nothing but blanks would be left.

    Raises:
        TypeError: ``query`` is not a str."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, got {type(query).__name__}")
    match = _LOCATOR_RE.match(query)
    if match is None or not query[match.end():].strip():
        return query
    return query[match.end():]


def question_tokens(query: str, locator_names: Iterable[str] = ()) -> list[str]:
    """The distinct words of the question (:func:`question_text`), in order, without ``locator_names`` (the
    distinctive names of the documents the query names; pair tokens among them are ignored).

    Raises:
        TypeError: ``query`` is not a str."""
    drop = set(locator_names)
    seen: dict[str, None] = {}
    for word in word_tokens(question_text(query)):
        if word not in drop:
            seen.setdefault(word)
    return list(seen)


def stems(words: Sequence[str]) -> list[str]:
    """The Snowball English stem of each of ``words`` (lower-case words, e.g. :func:`word_tokens`), in order."""
    return list(_STEMMER.stemWords(words))


@functools.lru_cache(maxsize=TEXT_CACHE_SIZE)
def _terms(text: str, stem: bool) -> tuple[dict[str, tuple[int, int]], int]:
    """The words of ``text`` (:func:`word_tokens`, as Snowball stems with ``stem``): word -> (its place among the
    distinct words in order of first occurrence, its occurrences), and the number of words."""
    words = word_tokens(text)
    counts = Counter(stems(words) if stem else words)  # keys in order of first occurrence
    return {w: (place, count) for place, (w, count) in enumerate(counts.items())}, len(words)


def lexical_scores(question: Sequence[str], texts: Sequence[str], *, stem: bool = True) -> np.ndarray:
    """BM25 of the ``question`` words against each of ``texts`` (the candidates, module docstring), divided by the
    largest: shape ``(len(texts),)``, in [0, 1]; all 0 when no candidate holds a question word (or no question word,
    or no text). ``stem``: compare Snowball stems (the default) or the words as they are.

    Raises:
        TypeError: a text is not a str."""
    n = len(texts)
    if n == 0 or not question:
        return np.zeros(n, dtype=np.float64)
    wanted = list(dict.fromkeys(stems(question) if stem else question))
    lengths = np.empty(n, dtype=np.float64)
    rows: list[int] = []
    columns: list[int] = []
    places: list[int] = []
    counts: list[int] = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"a candidate's text must be a str, got {type(text).__name__}")
        table, lengths[i] = _terms(text, stem)
        for j, word in enumerate(wanted):
            found = table.get(word)
            if found is not None:
                rows.append(i)
                columns.append(j)
                places.append(found[0])
                counts.append(found[1])
    if not rows:
        return np.zeros(n, dtype=np.float64)
    tf = np.zeros((n, len(wanted)), dtype=np.float64)
    tf[rows, columns] = counts
    idf = np.array([math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for d in np.count_nonzero(tf, axis=0).tolist()])
    mean_length = float(lengths.mean()) or 1.0
    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths / mean_length)
    terms = idf * tf * (BM25_K1 + 1.0) / (tf + norm[:, None])  # 0 where a text lacks the word
    # each text's sum runs over its words in the order they first occur in it, the absent words (0) last: one
    # order of the float additions, whatever the question's word order
    first = np.full((n, len(wanted)), len(wanted) + max(places), dtype=np.int64)
    first[rows, columns] = places
    terms = np.take_along_axis(terms, np.argsort(first, axis=1, kind="stable"), axis=1)
    scores = terms[:, 0].copy()
    for column in range(1, terms.shape[1]):
        scores += terms[:, column]
    top = float(scores.max())
    return scores / top if top > 0 else scores
