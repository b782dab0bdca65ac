"""Distinctive names of a document: the capitalised words it uses that few legal documents contain.

Users name the contract they ask about ("Consider Motorola's Non-Disclosure Agreement; ...", "the NDA between CEII
and ...", "In the Acme MSA, ..."). The names in such a query are capitalised words (parties, products, acronyms)
that the document itself uses, and that most other legal documents do not: "Motorola", "CEII", "Seeed", "HNBA".
Words every contract capitalises ("Agreement", "Confidential Information", "Receiving Party", "Section") carry no
identity, and a fixed 150-character summary has room for a few names only. :func:`distinctive_names` keeps the
first kind from the WHOLE document text:

* **name tokens** (:func:`name_tokens`): ``TOKEN_PATTERN`` words of the original text (at least two characters and
  a letter, inner hyphens kept; an apostrophe ends a word, so a possessive ``Motorola's`` gives ``motorola``) whose
  first character is an upper-case letter, or a digit (``23andMe``, ``3M``); lower-cased; English stop words out;
* **distinctive** ones: contained in fewer than ``max_document_frequency`` of the documents of a reference table of
  document frequencies (:class:`~llama_index_sac.summarizers.terms.TermStatistics`, the shipped ``legal-terms-v1`` by
  default: 714 legal documents). A word the table has never seen counts as the rarest.

Everything here is a function of the text and the (versioned, fingerprinted) table: no model, no batch statistics.
Every function is one linear pass over its input (one bounded regular expression).
"""

from __future__ import annotations

import re
from collections import Counter

from llama_index_sac.summarizers.terms import TermStatistics, stop_words

__all__ = ["DEFAULT_MAX_DOCUMENT_FREQUENCY", "distinctive_names", "name_tokens", "query_tokens", "word_tokens"]

#: A name is distinctive when fewer than this share of the reference table's documents contain it (2%: at most 14
#: of the 714 documents of ``legal-terms-v1``). Set in a document-identification exploration, before the retrieval
#: runs (``docs/results.md`` section 6 says how; it is not a held-out choice).
DEFAULT_MAX_DOCUMENT_FREQUENCY = 0.02
# maximal runs of word characters and hyphens (each character is read once: no look-ahead that a long run of
# "1-1-1-..." would make quadratic); the ``TOKEN_PATTERN`` rules are applied to each run in ``_words``
_RUN_RE = re.compile(r"(?<![\w\-])\w[\w\-]*")
# the runs that start with an upper-case or non-ASCII letter or a digit: the candidate names, found by the regular
# expression itself so that the Python loop sees a small share of the words only
_CANDIDATE_RE = re.compile(r"(?<![\w\-])[^\W_a-z][\w\-]*")


def _words(text: str, names_only: bool) -> list[str]:
    """``TOKEN_PATTERN`` words of ``text`` (at least two characters, a letter, no edge hyphen), lower-cased, stop
    words out; with ``names_only`` only those starting with an upper-case letter or a digit. Raises ``TypeError``
    when ``text`` is not a str."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    stop = stop_words()
    out = []
    for run in (_CANDIDATE_RE if names_only else _RUN_RE).findall(text):
        token = run.strip("-_")
        if len(token) < 2 or (names_only and not (token[0].isupper() or token[0].isdigit())):
            continue
        if not any(c.isalpha() for c in token):
            continue
        low = token.lower()
        if low not in stop:
            out.append(low)
    return out


def name_tokens(text: str) -> list[str]:
    """The name tokens of ``text`` (module docstring), lower-cased, in order; stop words left out.

    Raises:
        TypeError: ``text`` is not a str."""
    return _words(text, names_only=True)


def word_tokens(text: str) -> list[str]:
    """Every ``TOKEN_PATTERN`` word of ``text``, lower-cased, stop words out (a possessive ``Fiverr's`` gives
    ``fiverr``).

    Raises:
        TypeError: ``text`` is not a str."""
    return _words(text, names_only=False)


def query_tokens(query: str) -> list[str]:
    """The words of a query to look up among the documents' names: its name tokens, or every word (lower-cased,
    stop words out) when it capitalises nothing but stop words ("what does the acme nda say about notice?").

    Raises:
        TypeError: ``query`` is not a str."""
    names = name_tokens(query)
    return names if names else word_tokens(query)


def distinctive_names(text: str, *, statistics: TermStatistics | None = None,
                      max_document_frequency: float = DEFAULT_MAX_DOCUMENT_FREQUENCY) -> Counter[str]:
    """The distinctive names of a document and how often it uses each (module docstring).

    Args:
        text: the document's whole text (characters).
        statistics: the reference document frequencies (default: the shipped ``legal-terms-v1`` table).
        max_document_frequency: a name is kept when fewer than this share of the table's documents contain it;
            in (0, 1].

    Returns:
        ``Counter`` lower-cased name -> occurrences in ``text``.

    Raises:
        TypeError: ``text`` is not a str or ``statistics`` not a ``TermStatistics``.
        ValueError: ``max_document_frequency`` outside (0, 1].
    """
    if isinstance(max_document_frequency, bool) or not isinstance(max_document_frequency, (int, float)) or not (
            0 < max_document_frequency <= 1):
        raise ValueError(f"max_document_frequency must be in (0, 1], got {max_document_frequency!r}")
    table = TermStatistics.default() if statistics is None else statistics
    if not isinstance(table, TermStatistics):
        raise TypeError(f"statistics must be a TermStatistics, got {type(statistics).__name__}")
    limit = max_document_frequency * table.n_documents
    return Counter(name for name in name_tokens(text) if table.df(name) < limit)
