"""Which documents a question names, wherever it names them, and what it asks: :class:`DocumentLocator`.

People name the contract they ask about anywhere in the question: "Consider the NDA between CEII and NDA; does the
document ...?", "Does the agreement ..., in the Non-Disclosure Agreement between CEII and NDA?", "Does the CEII NDA
...?", "Under Motorola's NDA, ...", or not at all ("Which of our NDAs let the recipient keep copies?").
:meth:`DocumentLocator.locate` finds the documents by their names, not by the position of a clause:

1. **Names.** Each document's identity words: its distinctive names (capitalised words of its text that few legal
   documents use, :mod:`.document_names`), the words of its file name (the last part of its id: ``Keep.txt``,
   ``nda_form_motorola.txt``) and the distinctive words of its summary (the file name and title a SAC summary
   carries; with the distinctive parts of hyphenated words, ``AGProjects-NDA`` gives ``agprojects``) and the acronym
   of the title in its summary (``msa`` for "Master Services Agreement", :func:`title_acronyms`). A word names
   documents only when at most ``max_documents`` documents of the index have it (``CEII`` does, ``NDA`` and
   ``privacy`` do not).
   **Name phrases.** A party or product named by common words ("General Electric Capital", "Florida Chemical
   Company", "Information System Associates") has no distinctive word, and its words name many documents or the
   wrong one. Two adjacent capitalised words of a document's summary (its title and parties: blanks only between
   them, no function word such as "of", "the", "under"; not both document-type words or legal suffixes) and two
   adjacent words of its file name form a name phrase, looked up as one unit (``"florida_chemical"``), which names
   the document when at most ``max_documents`` documents have it, however common its words.
2. **The question's names.** The words the question writes as names (an upper-case first letter or a digit; every
   word when the question capitalises none: "what does the acme nda say"), stop words out unless written as a name
   inside the sentence (``Keep's privacy policy``); the first two words of a run of such words (blanks only between
   them) are also looked up as a name phrase (a name is told apart by its first words: "Juniper Capital Partners LP"
   is "Juniper Capital", not "Capital Partners"). A phrase, as a name, counts only inside a phrase that reads as a
   document's name (point 3), unless one of its words is a file-name word of the document. A document's score is the
   sum, over the distinct question words and phrases that name it, of ``weight / (documents named by the word)`` (a
   name of its text weighs 1, a file-name word or a name phrase 2); a word inside a matched name phrase counts only
   through the phrase (the longer name outweighs its words: "Information System Associates" names the document whose
   title has it, not the one whose file name says "System"). The located documents are those scoring at least
   ``min_share`` of the best, best first.
3. **The asked text.** Each name the question uses is widened to the phrase that names the document: the adjacent
   capitalised words, document-type words ("merger agreement", "NDA", "privacy policy"), the words that join them
   ("between", "and", "of", "'s", quotes, commas) and a leading preposition ("in", "under", "consider", "of" ...).
   The question without those phrases is what it asks ("Does the agreement ...?"); a phrase that was the subject
   ("Does the CEII NDA allow ...") leaves "it".

A question that names no document locates none (and a ranking reads it as plain retrieval). One linear pass over the
question (one bounded regular expression); the names and name phrases are looked up in dictionaries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote

from llama_index_sac.constants import (
    DEFAULT_LOCATOR_MAX_DOCUMENTS,
    DEFAULT_LOCATOR_MIN_SHARE,
    DEFAULT_MAX_DOCUMENT_FREQUENCY,
)
from llama_index_sac.retrievers.document_names import (
    PAIR_SEPARATOR,
    pair_token,
    with_word_parts,
    word_tokens,
)
from llama_index_sac.summarizers.terms import TermStatistics, stop_words

__all__ = ["DEFAULT_LOCATOR_MAX_DOCUMENTS", "DEFAULT_LOCATOR_MIN_SHARE", "DocumentLocator", "Located",
           "title_acronyms"]

# weight of a word of a document's file name (a name of its text weighs 1), and of one that is a stop word ("Keep")
_FILE_NAME_WEIGHT = 2.0
_STOP_FILE_NAME_WEIGHT = 0.5
# weight of a name phrase (two adjacent capitalised words of a document's title or parties, or of its file name)
_PHRASE_WEIGHT = 2.0
# the most blanks between the two words of a name phrase in a question
_MAX_PHRASE_GAP = 3
# word runs with their offsets (hyphens inside words kept, an apostrophe ends a word); each character read once
_RUN_RE = re.compile(r"(?<![\w\-])[^\W_][\w\-]*")
# the words that join the parts of a document's name, and those that open a phrase naming a document
_GLUE = frozenset({"the", "between", "and", "of", "to", "for", "s", "a", "an", "among", "by", "with", "on"})
_OPENERS = frozenset({"in", "under", "consider", "regarding", "re", "per", "within", "from", "for", "of", "about",
                      "on", "according", "by", "with", "into"})
_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "our", "their", "its", "my", "your"})
# words that end a name phrase (a name is not "Bank Of" or "Under Acme")
_FUNCTION_WORDS = _GLUE | _OPENERS | _DETERMINERS
#: Lower-case legal suffixes of party names ("Inc.", "LLC"...): part of a phrase that names a document.
LEGAL_SUFFIXES = frozenset({"inc", "incorporated", "llc", "ltd", "limited", "corp", "corporation", "co", "plc",
                            "lp", "llp", "gmbh", "ag", "sa", "nv", "bv", "pty", "se", "company"})
#: Lower-case words of document types: part of a phrase that names a document when next to a name.
DOCUMENT_TYPE_WORDS = frozenset({
    "agreement", "agreements", "contract", "contracts", "nda", "ndas", "policy", "policies", "privacy", "terms",
    "merger", "acquisition", "license", "licence", "amendment", "service", "services", "sponsorship", "supply",
    "distribution", "lease", "employment", "consulting", "cooperation", "alliance", "strategic", "mutual",
    "non-disclosure", "confidentiality", "disclosure", "addendum", "undertaking", "master", "purchase", "franchise",
    "joint", "venture", "development", "marketing", "reseller", "hosting", "maintenance", "support",
    "transportation", "endorsement", "outsourcing", "collaboration", "promotion", "agency", "affiliate",
    "co-branding", "non-competition", "intellectual", "property", "plan", "deal", "statement", "notice",
    "document", "documents", "form", "mou", "msa", "sow", "loi",
})
# the last word of a document's title, whose initials make its acronym ("MSA"), and the most letters of one
_TITLE_HEADS = frozenset({"agreement", "contract", "lease", "license", "licence", "policy", "amendment", "addendum",
                          "undertaking", "memorandum"})
_MAX_ACRONYM = 6
# characters allowed between two words of one phrase: blanks, quotes, apostrophes, commas, ampersands, periods
_JOIN_RE = re.compile(r"[\s\"'\u2019\u201c\u201d,&.()]*")


@dataclass(frozen=True)
class Located:
    """What :meth:`DocumentLocator.locate` found in a question.

    Attributes:
        documents: the ids of the documents the question names, best first (empty: it names none).
        question: the question without the phrases that name documents (characters of the question, in order); the
            question itself when it names none.
        spans: the ``(start, end)`` character offsets of those phrases in the question, in order.
    """

    documents: tuple[str, ...]
    question: str
    spans: tuple[tuple[int, int], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.documents)


def file_name_words(doc_id: str) -> list[str]:
    """The words of a document id's file name: its last path part, URL-decoded, without the extension, split at
    anything but letters and digits, lower-cased (``"privacy_qa/Keep.txt"`` gives ``["keep"]``)."""
    name = unquote(PurePosixPath(doc_id.replace("\\", "/")).name)
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return [w.lower() for w in re.split(r"[^0-9A-Za-z\u00c0-\uffff]+", stem) if len(w) >= 2
            and any(c.isalpha() for c in w)]


class DocumentLocator:
    """The documents a question names and what it asks (module docstring).

    Args:
        names: document id -> its distinctive names (:func:`~.document_names.distinctive_names`; two-word names
            ``"blue_apron"`` too). Every document of the collection is a key here or in ``summaries`` (an empty
            collection of names is fine: the file name of its id still names it).
        summaries: document id -> its summary, whose distinctive words (and parts of hyphenated words) name it too.
        statistics: the reference table deciding which words are distinctive (default: the shipped one).
        max_document_frequency: a word is distinctive below this share of the table's documents; in (0, 1].
        max_documents: a word names documents only when at most this many have it; >= 1.
        min_share: a document is located at this share of the best score; in (0, 1].

    Raises:
        ValueError: ``max_documents`` below 1, ``min_share`` outside (0, 1], ``max_document_frequency`` outside
            (0, 1].
        TypeError: ``names`` is not a mapping, ``statistics`` not a ``TermStatistics``.
    """

    def __init__(self, names: Mapping[str, Iterable[str]], summaries: Mapping[str, str] | None = None, *,
                 statistics: TermStatistics | None = None,
                 max_document_frequency: float = DEFAULT_MAX_DOCUMENT_FREQUENCY,
                 max_documents: int = DEFAULT_LOCATOR_MAX_DOCUMENTS,
                 min_share: float = DEFAULT_LOCATOR_MIN_SHARE) -> None:
        if not isinstance(names, Mapping):
            raise TypeError(f"names must be a mapping document id -> names, got {type(names).__name__}")
        if isinstance(max_documents, bool) or not isinstance(max_documents, int) or max_documents < 1:
            raise ValueError(f"max_documents must be an int >= 1, got {max_documents!r}")
        if isinstance(min_share, bool) or not isinstance(min_share, (int, float)) or not 0 < min_share <= 1:
            raise ValueError(f"min_share must be a number in (0, 1], got {min_share!r}")
        self._table = TermStatistics.default() if statistics is None else statistics
        with_word_parts([], statistics=self._table, max_document_frequency=max_document_frequency)  # checks both
        self._limit = max_document_frequency * self._table.n_documents
        self.max_documents = max_documents
        self.min_share = float(min_share)
        self._stop = stop_words()
        holders: dict[str, dict[str, float]] = {}
        summaries = summaries or {}
        if not isinstance(summaries, Mapping):
            raise TypeError(f"summaries must be a mapping document id -> summary, got {type(summaries).__name__}")
        for doc_id in dict.fromkeys([*names, *summaries]):
            known = set(names.get(doc_id, ()))
            summary = summaries.get(doc_id)
            if isinstance(summary, str):  # the file name and title a SAC summary carries
                known.update(w for w in with_word_parts(word_tokens(summary), statistics=self._table,
                                                        max_document_frequency=max_document_frequency)
                             if self._table.df(w) < self._limit and w not in DOCUMENT_TYPE_WORDS)
            if isinstance(summary, str):  # "MSA" for its "Master Services Agreement"
                known.update(title_acronyms(summary))
            for word in known:
                holders.setdefault(word, {})[doc_id] = 1.0
            for word in file_name_words(doc_id):  # the file name says more than a name somewhere in the text
                if word not in DOCUMENT_TYPE_WORDS and self._table.df(word) < self._limit:
                    weight = _STOP_FILE_NAME_WEIGHT if word in self._stop else _FILE_NAME_WEIGHT
                    holders.setdefault(word, {})[doc_id] = max(weight, holders.get(word, {}).get(doc_id, 0.0))
        # only the words few documents hold name documents
        self._holders = {w: d for w, d in holders.items() if len(d) <= max_documents}
        phrases: dict[str, set[str]] = {}
        for doc_id in dict.fromkeys([*names, *summaries]):
            summary = summaries.get(doc_id)
            pairs = _capitalised_pairs(summary) if isinstance(summary, str) else []
            words = file_name_words(doc_id)
            pairs += zip(words, words[1:])
            for a, b in pairs:
                if _phrase_word(a) and _phrase_word(b) and not (_generic(a) and _generic(b)):
                    phrases.setdefault(pair_token(a, b), set()).add(doc_id)  # not "Supply Agreement", "Inc"
        # only the phrases few documents hold name documents, however common their words
        self._phrases = {p: dict.fromkeys(d, _PHRASE_WEIGHT) for p, d in phrases.items() if len(d) <= max_documents}

    def documents_of(self, word: str) -> dict[str, float]:
        """The documents a lower-case word names, each with its weight (1; 2 when the word is in the document's file
        name); empty when it names none or too many."""
        return self._holders.get(word, {})

    def documents_of_phrase(self, first: str, second: str) -> dict[str, float]:
        """The documents the name phrase of two lower-case words names (``("florida", "chemical")``), each with its
        weight; empty when it names none or too many."""
        return self._phrases.get(pair_token(first, second), {})

    def _distinctive(self, word: str) -> bool:
        return self._table.df(word) < self._limit and word not in self._stop

    def locate(self, query: str) -> Located:
        """The documents ``query`` names and the text it asks (module docstring).

        Raises:
            TypeError: ``query`` is not a str."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        runs = _runs(query)
        written = [cap and not (word in self._stop and _sentence_start(query, start)) for start, _, word, cap in runs]
        lowercase = not any(written)  # "what does the acme nda say": its distinctive words may name documents
        # the name phrases: two adjacent words written as names, looked up as one unit (module docstring)
        # at the start of each run of them: a name is told apart by its first words ("Juniper Capital Partners
        # LP" is "Juniper Capital", not "Capital Partners")
        name_word = [written[i] and _phrase_word(word) for i, (_, _, word, _) in enumerate(runs)]
        joined = [i > 0 and _adjacent(query, runs[i - 1][1], runs[i][0]) for i in range(len(runs))]
        phrase_at: dict[int, dict[str, float]] = {}
        for i in range(len(runs) - 1):
            if name_word[i] and name_word[i + 1] and joined[i + 1] and not (i > 0 and name_word[i - 1] and joined[i]):
                found = self.documents_of_phrase(runs[i][2], runs[i + 1][2])
                if found:
                    phrase_at[i] = found
        in_phrase = set(phrase_at) | {i + 1 for i in phrase_at}
        score: dict[str, float] = {}
        counted: set[str] = set()
        spans: list[tuple[int, int]] = []
        covered, last_evidence = -1, False
        for i, (_, _, word, _) in enumerate(runs):
            if not (written[i] or (lowercase and self._distinctive(word))):
                continue
            if i in in_phrase:  # a word of a matched name phrase counts only through the phrase
                found = phrase_at.get(i, {})
                key = pair_token(word, runs[i + 1][2]) if found else word
            else:
                found, key = self._word_documents(word), word
                if not found and i + 1 < len(runs) and written[i] and written[i + 1]:  # a two-word name
                    found = self.documents_of(f"{word}{PAIR_SEPARATOR}{runs[i + 1][2]}")
            if not found:
                continue
            if i <= covered:  # inside the phrase of an earlier name: its phrase, read once (linear)
                evidence = last_evidence
            else:
                _, right, start, end, evidence = _phrase(query, runs, i, self._holders)
            if not evidence and not self._named_without_more(found, word if key == word else (word, runs[i + 1][2])):
                continue  # a rare capitalised word (or name phrase) that is not a document's name here
            if i > covered:
                spans.append((start, end))
                covered, last_evidence = right, evidence
            if key not in counted:
                counted.add(key)
                for doc_id, weight in found.items():
                    score[doc_id] = score.get(doc_id, 0.0) + weight / len(found)
        if not score:
            return Located((), query)
        best = max(score.values())
        documents = tuple(sorted((d for d, s in score.items() if s >= self.min_share * best - 1e-12),
                                 key=lambda d: (-score[d], d)))
        return Located(documents, _without(query, spans), tuple(spans))

    def _named_without_more(self, found: dict[str, float], words: str | tuple[str, str]) -> bool:
        """Whether a word (a str) names its documents ``found`` outside a phrase that reads as a document's name: a
        word of their file names does. A name phrase (two words) does when one of its words does."""
        if isinstance(words, str):
            return max(found.values()) >= _FILE_NAME_WEIGHT
        return any(self._word_documents(w).get(d, 0.0) >= _FILE_NAME_WEIGHT for w in words for d in found)

    def _word_documents(self, word: str) -> dict[str, float]:
        """The documents a word names, or (a hyphenated word naming none) those of its distinctive parts."""
        found = self.documents_of(word)
        if found or ("-" not in word and "_" not in word):
            return found
        for part in re.split(r"[-_]", word):
            if part not in DOCUMENT_TYPE_WORDS and self._distinctive(part):
                found = self.documents_of(part)
                if found:
                    return found
        return {}


def title_acronyms(text: str) -> set[str]:
    """The acronyms of the document titles in ``text`` (a summary), lower-cased: for each run of adjacent capitalised
    words (blanks only between them; a hyphenated word gives one initial per part) that ends with a head word of a
    title ("Agreement", "Lease", "License", "Policy"...), the initials of its last three to six words, each at least
    three letters: "Master Services Agreement" gives ``{"msa"}``, "Mutual Non-Disclosure Agreement" gives
    ``{"mnda", "nda"}``, "Supply Agreement" none. One pass over ``text``."""
    found: set[str] = set()
    initials: list[str] = []  # of the current run of capitalised words, at most the last six words' worth
    previous_end = -1
    for start, end, word, cap in _runs(text):
        if not cap or not word[0].isalpha() or (initials and not _adjacent(text, previous_end, start)):
            initials = []
        if cap and word[0].isalpha():
            initials = (initials + [part[0] for part in word.split("-") if part])[-_MAX_ACRONYM:]
            if word in _TITLE_HEADS:
                found.update("".join(initials[i:]) for i in range(len(initials) - 2))
        previous_end = end
    return found


def _runs(query: str) -> list[tuple[int, int, str, bool]]:
    """``(start, end, lower-case word, capitalised)`` of each word run of ``query`` (edge hyphens out)."""
    runs = []
    for match in _RUN_RE.finditer(query):
        text = match.group().strip("-")
        if text:
            start = match.start() + match.group().index(text)
            runs.append((start, start + len(text), text.lower(), text[0].isupper() or text[0].isdigit()))
    return runs


def _phrase_word(word: str) -> bool:
    """Whether a lower-case word can be part of a name phrase: a letter in it, not a function word ("the", "of",
    "and", "under"...; a capitalised stop word that is a content word, "System", "Fire", is)."""
    return word not in _FUNCTION_WORDS and any(c.isalpha() for c in word)


def _capitalised_pairs(text: str) -> list[tuple[str, str]]:
    """The two adjacent capitalised words (blanks only between them) of ``text``, lower-cased, in order (one pass)."""
    runs = _runs(text)
    return [(a[2], b[2]) for a, b in zip(runs, runs[1:]) if a[3] and b[3] and _adjacent(text, a[1], b[0])]


def _generic(word: str) -> bool:
    """Whether a word of a name phrase says only what kind of document or party it is ("Supply", "Agreement",
    "Inc"): a phrase of two such words names no one."""
    return word in DOCUMENT_TYPE_WORDS or word in LEGAL_SUFFIXES


def _adjacent(query: str, end: int, start: int) -> bool:
    """Whether only one to three blanks (spaces or tabs) lie between two words: the words of one name phrase."""
    return 0 < start - end <= _MAX_PHRASE_GAP and query[end:start].strip(" \t") == ""


def _sentence_start(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence (only blanks and quotes after a ``.?!;:`` or the start)."""
    i = start - 1
    steps = 0
    while i >= 0 and text[i] in " \t\n\"'\u201c(" and steps < 64:
        i -= 1
        steps += 1
    return i < 0 or text[i] in ".?!;:\n"


def _joined(query: str, end: int, start: int) -> bool:
    """Whether only joining characters (blanks, quotes, commas, ``&``, periods) lie between two words."""
    gap = query[end:start]
    return len(gap) <= 8 and _JOIN_RE.fullmatch(gap) is not None and gap.count(",") <= 1 and "?" not in gap


def _phrase(query: str, runs: list[tuple[int, int, str, bool]], hit: int,
            holders: Mapping[str, object]) -> tuple[int, int, int, int, bool]:
    """The phrase naming a document around the run ``hit`` (module docstring): ``(first run, last run, start, end,
    evidence)``, ``evidence`` saying that it reads as a document's name: it holds a document-type word, a legal
    suffix, "between" or a possessive, or a preposition opens it ("in", "under", "consider" ...)."""
    def part(i: int) -> bool:
        _, _, word, cap = runs[i]
        return cap or word in DOCUMENT_TYPE_WORDS or word in _GLUE or word in LEGAL_SUFFIXES

    left = hit
    while left > 0 and _joined(query, runs[left - 1][1], runs[left][0]) and part(left - 1) and (
            runs[left - 1][2] in holders or not _sentence_start(query, runs[left - 1][0])):
        left -= 1  # not over the first word of a sentence ("Does", "What"), unless it is a name itself
    right = hit
    while right + 1 < len(runs) and _joined(query, runs[right][1], runs[right + 1][0]) and part(right + 1):
        right += 1
    while left < hit and runs[left][2] in _GLUE:  # no joining word at the edges
        left += 1
    while right > hit and runs[right][2] in _GLUE and runs[right][2] != "s":
        right -= 1
    words = [runs[i][2] for i in range(left, right + 1)]
    evidence = any(w in DOCUMENT_TYPE_WORDS or w in LEGAL_SUFFIXES or w == "between" for w in words) or any(
        runs[i][2] == "s" and query[runs[i][0] - 1:runs[i][0]] in ("'", "\u2019") for i in range(left + 1, right + 1))
    back = left - 1
    if back > 0 and runs[back][2] in _DETERMINERS and _joined(query, runs[back][1], runs[left][0]):
        back -= 1
    if back > 0 and runs[back][2] == "to" and runs[back - 1][2] == "according":
        back -= 1
    if back >= 0 and runs[back][2] in _OPENERS and all(
            _joined(query, runs[i][1], runs[i + 1][0]) for i in range(back, left)):
        left, evidence = back, True  # "in the", "under", "consider", "according to" ... opens the phrase
    elif left > 0 and runs[left - 1][2] in _DETERMINERS and _joined(query, runs[left - 1][1], runs[left][0]):
        left -= 1  # "the Acme NDA"
    end = runs[right][1]
    if end < len(query) and query[end] in "'\u2019":  # the possessive "'s" / "'" of the last word
        evidence = True
        end += 2 if query[end + 1:end + 2].lower() == "s" and not query[end + 2:end + 3].isalnum() else 1
    return left, right, runs[left][0], end, evidence


def _without(query: str, spans: list[tuple[int, int]]) -> str:
    """``query`` without ``spans``: a span after which the sentence goes on with a lower-case verb ("Does the CEII NDA
    allow ...") leaves "it"; separators left at the edges are dropped; blanks collapsed."""
    pieces = []
    last = 0
    for start, end in spans:
        pieces.append(query[last:start])
        after = query[end:].lstrip(" \t")
        before = query[:start].rstrip(" \t")
        subject = bool(before) and before.split()[-1].lower() in {"does", "do", "is", "are", "can", "will", "did",
                                                                   "has", "have", "should", "would", "may", "must"}
        pieces.append(" it " if subject and after[:1].isalpha() else " ")
        last = end
    pieces.append(query[last:])
    text = " ".join("".join(pieces).split())
    text = re.sub(r"\s+([,;:?.!])", r"\1", text)
    text = re.sub(r"^[\s,;:.]+", "", text)
    text = re.sub(r"[,;:]+(?=[?.!]?$)", "", text).strip()
    return text if any(c.isalnum() for c in text) else query

