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
  second and later parties must follow an ``and`` or, in a list, directly follow a suffixed name. Jurisdictions,
  places and role words (``Delaware``, ``England and Wales``, ``Recipient``) are not parties. Fallbacks: ``X, a
  Delaware corporation`` patterns, and for policies ``X ("we", "us")``. All-caps names are title-cased;
* the DATE is the first ``dated`` / ``as of`` / ``effective`` date of the lead, else its first full date;
* the KEY TERMS are the document's highest TF-IDF terms (scikit-learn, sublinear tf, l2) against the corpus given
  to :meth:`ExtractiveSummarizer.fit`, shown in their most frequent spelling in the document, skipping words
  already in the summary and near-duplicates. Terms are read from at most ``term_sample_chars`` characters of each
  document: the whole text when shorter, else its first third plus four evenly spaced windows, so later sections
  count too at a bounded cost.

Parts are added in that order while they fit; if the type and the parties alone exceed ``max_chars``, the result is
cut at a word boundary and flagged (``cut=True``). With ``metadata_keys`` the named metadata values are put first
(e.g. the file name), so results can be reported content-only (the default) and metadata-aware.

Corpus rule (identity and cache key): :meth:`fit` stores ``corpus_fingerprint``, the ``sha256`` of the sorted
``sha256``\\ s of the fitted texts (order and document ids do not matter) plus the settings that shape the TF-IDF
model. It is part of :meth:`identity`, so a summary cached for one corpus is never served for another; refitting on
the same texts gives the same fingerprint (and hits the cache). A fitted text's TF-IDF row is found by the text itself
(the summarizer keeps references to the fitted texts); any other text is transformed with the fitted model.

Speed: about 1 ms per document after :meth:`fit` (LegalBench-RAG, 112k characters per document on average), which
reads at most ``lead_chars`` + ``term_sample_chars`` characters of each; see ``bench/bench_summaries.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

import numpy as np
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode

from llama_index_sac.summarizers.base import BaseSummarizer, SummaryResult, cut_at_word_boundary

__all__ = ["ExtractiveSummarizer", "find_date", "find_document_type", "find_parties"]

_VERSION = "extractive-v2"  # v2: "Exhibits 2.1" cover lines; privacy label by density, not count

# -- document type ---------------------------------------------------------------------------------------------
_TYPE_WORDS = (
    r"plan\s+of\s+(?:merger|reorganization|arrangement)|non[\s\-]?disclosure\s+agreement|agreement|contract|"
    r"policy|notice|licen[cs]e|lease|amendment|addendum|memorandum|undertaking|deed|indenture|"
    r"terms\s+of\s+(?:use|service)|terms\s+and\s+conditions|statement|charter|NDA|covenant|guarant(?:ee|y)|"
    r"warrant|promissory\s+note|protocol|consent|letter|bylaws|certificate|arrangement|understanding|commitment"
)
_TYPE_RE = re.compile(rf"\b(?:{_TYPE_WORDS})\b", re.IGNORECASE)
_THIS_TYPE_RE = re.compile(
    rf"\b(?:THIS|This)\s+((?:[A-Z][\w\-’'&,]*\s+(?:and\s+|of\s+|to\s+)?){{0,6}}?(?i:{_TYPE_WORDS}))\b"
)
_NOISE_PREFIX_RE = re.compile(
    r"^(?:\ufeff|exhibits?\s+[\w.\-()]+|execution\s+(?:copy|version)|final\s+(?:form|version)|"
    r"confidential\s+treatment\s+requested|\[?\*+\]?)[\s:.,;\-]*",
    re.IGNORECASE,
)
_NOISE_RE = re.compile(
    r"^(?:exhibit|confidential\b|table\s+of\s+contents|page\b|source:|article\s+[ivxlc\d]+\b|"
    r"section\s+\d|certain\s+(?:identified\s+)?(?:information|portions)|redacted|form\s+of\b)",
    re.IGNORECASE,
)
_NOT_TITLE_RE = re.compile(r"\b(?:you|your|please|if|we|our|shall|will|must|is|are|be|been|was|were)\b",
                           re.IGNORECASE)
_TITLE_STOP_RE = re.compile(
    r"\s+(?:between|by\s+and|among|dated|made|entered|is\s+made|this|effective)\b|\(|“|\"", re.IGNORECASE
)
_SEGMENT_RE = re.compile(r"\n|\s{2,}")
#: "Privacy policy" when no title is found: privacy vocabulary ("privacy", "personal information", "personal data")
#: at least this often per 10,000 characters of the term sample. LegalBench-RAG: its 7 privacy policies 20-44,
#: its 707 contracts at most 9.3 (a merger agreement's data-protection representations, a reseller agreement's
#: privacy clause), so a contract whose title is missed is never called a privacy policy.
_PRIVACY_PER_10K = 12
_SMALL_WORDS = {"of", "and", "to", "the", "for", "in", "on", "by", "a", "an", "or", "with", "at", "as"}

# -- parties ---------------------------------------------------------------------------------------------------
_SUFFIX = (
    r"Inc|Incorporated|Corp|Corporation|Co|Company|LLC|L\.L\.C|Ltd|Limited|LLP|L\.L\.P|LP|L\.P|plc|PLC|GmbH|AG|"
    r"S\.A|SA|S\.p\.A|N\.V|B\.V|SE|S\.A\.S|Pty|S\.L|K\.K|Bancorp|Bancshares|Trust"
)
_SUFFIX_TOKEN = rf"(?i:{_SUFFIX})\.?(?![\w\-])"
_WORD = rf"(?!{_SUFFIX_TOKEN})(?!(?i:and)\b)(?:[A-Z0-9][\w&'’.\-]*|&)"
_CONNECT = r"(?:of|de|du|der|la|le|von|van|for|&)"
_ENTITY_RE = re.compile(
    rf"(?<![\w\-])(?:{_WORD})(?:[ \t]+(?:{_WORD}|{_CONNECT}(?=[ \t]+[A-Z])))*"
    rf"(?:,?[ \t]+{_SUFFIX_TOKEN}|,?[ \t]*(?<=[ \t,]){_SUFFIX_TOKEN})?"
)
_SUFFIX_END_RE = re.compile(rf"(?:^|[\s,]){_SUFFIX_TOKEN}$")
_BETWEEN_RE = re.compile(r"\b(?:by\s+and\s+between|by\s+and\s+among|between|among)\b\s*:?\s*", re.IGNORECASE)
_WINDOW_STOP_RE = re.compile(
    r"\n\s*(?=THIS\b|This\b)|\b(?:WHEREAS|RECITALS|NOW,?\s+THEREFORE|W\s*I\s*T\s*N\s*E\s*S\s*S|BACKGROUND|DATED|Dated|TABLE\s+OF\s+CONTENTS|"
    r"Table\s+of\s+Contents|ARTICLE|Article\s+[IVX\d]|SECTION\s+\d|Section\s+\d)\b"
)
_SENTENCE_END_RE = re.compile(r"\.\s+(?=[A-Z])")
_ABBREV_END_RE = re.compile(rf"(?:(?:^|[\s,])(?i:{_SUFFIX})|\b(?:No|Dr|Mr|Mrs|Ms|St|Jr|Sr)|\b[A-Z])$")
_PAREN_RE = re.compile(r"\([^()]{0,300}\)|“[^”]{0,120}”|\"[^\"]{0,120}\"|ʺ[^ʺ]{0,120}ʺ")
# ``X, a Delaware corporation`` and ``X ("we", "us")``. Each TAIL (the part after the name) is a cheap necessary
# condition: without a tail match there is no match, and an ``X, a ...`` name never spans a newline, so its scan
# can start at the line of the first tail (the name patterns are slow to try at every position of a lead).
_A_CORP_TAIL = (
    r",\s+an?\s+(?:[A-Z][\w\-]*\s+){0,3}(?:corporation|company|limited|partnership|bank|association|trust|"
    r"limited\s+liability\s+company|société|gmbh)\b"
)
_A_CORP_RE = re.compile(
    r"((?:[A-Z0-9][\w&'’.\-]*[ \t]+){0,6}?(?:[A-Z0-9][\w&'’.\-]*)(?:,?[ \t]+(?i:" + _SUFFIX + r")\.?)?)" + _A_CORP_TAIL
)
_A_CORP_TAIL_RE = re.compile(_A_CORP_TAIL)
_WE_TAIL = r"\(\s*(?:collectively,?\s+|together\s+)?(?:the\s+)?[\"“']?(?:we|us|our)\b"
_WE_RE = re.compile(
    r"([A-Z][\w.&'’\-]*(?:[ \t]+[A-Z][\w.&'’\-]*){0,3}(?:,?[ \t]+(?i:" + _SUFFIX + r")\.?)?)\s*" + _WE_TAIL
)
_WE_TAIL_RE = re.compile(_WE_TAIL)
_STATES = (
    "alabama alaska arizona arkansas california colorado connecticut delaware florida georgia hawaii idaho illinois "
    "indiana iowa kansas kentucky louisiana maine maryland massachusetts michigan minnesota mississippi missouri "
    "montana nebraska nevada ohio oklahoma oregon pennsylvania tennessee texas utah vermont virginia washington "
    "wisconsin wyoming england wales scotland ireland canada ontario quebec germany france switzerland netherlands "
    "luxembourg china japan india israel singapore australia brazil mexico bermuda cayman sweden denmark norway "
    "finland italy spain belgium austria korea"
).split()
_NOT_PARTY = set(_STATES) | {
    "new york", "new jersey", "new hampshire", "new mexico", "north carolina", "south carolina", "north dakota",
    "south dakota", "west virginia", "rhode island", "district of columbia", "united states", "united kingdom",
    "hong kong", "cayman islands", "british virgin islands", "state", "city", "county", "agreement", "company",
    "party", "parties", "recipient", "disclosing party", "receiving party", "licensor", "licensee", "seller",
    "buyer", "purchaser", "parent", "merger sub", "client", "customer", "supplier", "vendor", "employee", "employer",
    "contractor", "consultant", "lender", "borrower", "landlord", "tenant", "section", "article", "exhibit",
    "schedule", "recitals", "whereas", "effective date", "execution date", "this", "the", "name", "address",
    "date", "by", "its", "each", "both", "any", "such", "all", "january", "february", "march", "april", "may",
    "june", "july", "august", "september", "october", "november", "december", "representative", "affiliates",
    "officers", "directors", "exhibits", "schedules", "annex", "appendix", "bylaws", "effective time",
}
_SHORT_WORDS = {"sub", "gas", "oil", "one", "two", "new", "air", "sea", "law", "tax", "end", "top", "key", "non", "art"}
_SUFFIX_CASE = {
    "inc": "Inc.", "corp": "Corp.", "co": "Co.", "ltd": "Ltd.", "llc": "LLC", "l.l.c": "L.L.C.", "llp": "LLP",
    "lp": "LP", "l.p": "L.P.", "plc": "plc", "gmbh": "GmbH", "ag": "AG", "sa": "SA", "s.a": "S.A.", "nv": "NV",
    "n.v": "N.V.", "bv": "BV", "b.v": "B.V.", "se": "SE", "pty": "Pty", "s.p.a": "S.p.A.",
}
_ADDRESS_WORDS = re.compile(
    r"\b(?:avenue|street|road|boulevard|drive|suite|floor|lane|way|place|plaza|blvd|st|ave|rd|p\.?o\.? box)\b\.?",
    re.IGNORECASE,
)

# -- dates -----------------------------------------------------------------------------------------------------
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_DATE = (
    rf"{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:day\s+of\s+)?{_MONTH},?\s+"
    r"\d{4}"
)
_DATED_RE = re.compile(  # (?=[adelm]): the keywords' first letters, a quick first test at each position
    rf"(?=[adelm])\b(?:dated|as\s+of|effective(?:\s+date)?|made(?:\s+and\s+entered\s+into)?(?:\s+on)?|"
    rf"entered\s+into\s+on|last\s+(?:updated|modified|revised))\s*:?\s*(?:as\s+of\s+)?(?:this\s+)?(?:the\s+)?({_DATE})",
    re.IGNORECASE,
)
_ANY_DATE_RE = re.compile(rf"\b({_DATE})", re.IGNORECASE)

# -- terms -----------------------------------------------------------------------------------------------------
_TOKEN_PATTERN = r"(?u)\b(?=[\w\-]*[^\W\d_])\w[\w\-]*\w\b"


_WS_RE = re.compile(r"\s+")


def _clean(text: str) -> str:
    return _WS_RE.sub(" ", text).strip(" ,;:.-–—")


def _smart_case(text: str) -> str:
    """Title-case a string that is mostly in capitals (``AGREEMENT AND PLAN OF MERGER`` -> ``Agreement and Plan
    of Merger``); keep acronyms of up to three letters and mixed-case strings as they are."""
    letters = [c for c in text if c.isalpha()]
    if not letters or sum(c.isupper() for c in letters) / len(letters) < 0.7:
        return text
    words = text.split(" ")
    out = []
    for i, word in enumerate(words):
        lower = word.lower()
        core = re.sub(r"[^\w&]", "", word)
        bare = lower.rstrip(".,")
        if i > 0 and lower in _SMALL_WORDS:
            out.append(lower)
        elif i > 0 and bare in _SUFFIX_CASE:
            out.append(_SUFFIX_CASE[bare] if not _SUFFIX_CASE[bare].endswith(".") or not word.endswith(",")
                       else _SUFFIX_CASE[bare] + ",")
        elif lower in ("no.", "no"):
            out.append(word[:1] + word[1:].lower())
        elif core.replace("&", "").isalpha() and len(core) <= 3 and core.lower() not in _SMALL_WORDS | _SHORT_WORDS:
            out.append(word)  # acronyms: NDA, DSP, UDC
        else:
            out.append("-".join(p[:1].upper() + p[1:].lower() for p in word.split("-")))
    return " ".join(out)


def _is_privacy_text(low: str) -> bool:
    """Privacy vocabulary in lower-cased ``low`` at least ``_PRIVACY_PER_10K`` times per 10,000 characters (and at
    least 3 times)."""
    mentions = low.count("privacy") + low.count("personal information") + low.count("personal data")
    return mentions >= 3 and mentions * 10_000 >= _PRIVACY_PER_10K * max(1, len(low))


def _segments(lead: str) -> Iterator[str]:
    """``_SEGMENT_RE.split(lead)``, lazily (the title is usually among the first few segments)."""
    pos = 0
    for match in _SEGMENT_RE.finditer(lead):
        yield lead[pos: match.start()]
        pos = match.end()
    yield lead[pos:]


def find_document_type(lead: str) -> str | None:
    """The document's type/title from its lead, or ``None`` (rules in the module docstring)."""
    for count, raw in enumerate(_segments(lead)):
        if count > 60:
            break
        seg = _clean(raw)
        while True:
            stripped = _NOISE_PREFIX_RE.sub("", seg, count=1)
            if stripped == seg:
                break
            seg = stripped
        if len(seg) < 3 or _NOISE_RE.match(seg):
            continue
        stop = _TITLE_STOP_RE.search(seg)
        title = _clean(seg[: stop.start()]) if stop and stop.start() > 0 else seg
        if not 3 <= len(title) <= 100 or not _TYPE_RE.search(title) or _NOT_TITLE_RE.search(title):
            continue
        letters = [c for c in title if c.isalpha()]
        upper = sum(c.isupper() for c in letters) / max(1, len(letters))
        words = [w for w in re.findall(r"[A-Za-z][\w\-’']*", title) if w.lower() not in _SMALL_WORDS]
        capitalized = sum(w[0].isupper() for w in words) / max(1, len(words))
        if upper >= 0.7 or (capitalized >= 0.8 and len(title) <= 80 and not re.search(r"[.;:]\s", title)):
            title = re.sub(r"(?:\s*,\s*\d{4}|[\s,;:\-–—]+)$", "", title)
            return _smart_case(title)
    match = _THIS_TYPE_RE.search(lead)
    if match and not _NOT_TITLE_RE.search(match.group(1)):
        return _smart_case(_clean(match.group(1)))
    return None


def _strip_role_words(name: str) -> str:
    words = name.split(" ")
    while len(words) > 1 and words[0].lower().strip(",.:") in _NOT_PARTY | {"parties", "the"}:
        words = words[1:]
    return " ".join(words)


def _is_party_name(name: str) -> bool:
    bare = name.strip(" ,")
    low = bare.lower().rstrip(".")
    if len(bare) < 3 or low in _NOT_PARTY or not re.search(r"[A-Za-z]{2}", bare):
        return False
    suffixed = bool(_SUFFIX_END_RE.search(bare))
    if not suffixed and (bare[0].isdigit() or re.search(r"(?:^|\s)[\d.]+(?:\s|$)", bare)):
        return False
    if _ADDRESS_WORDS.search(bare):
        return False
    words = low.replace(",", " ").split()
    return not all(w in _NOT_PARTY or w in _SMALL_WORDS for w in words)


def _entities(window: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, name)`` of the capitalized runs of ``window``, lazily (the caller stops at the last party)."""
    for match in _ENTITY_RE.finditer(window):
        name = match.group(0).rstrip(" ,")
        if name.endswith(".") and not _SUFFIX_END_RE.search(name) and not re.search(r"\b[A-Z]\.$", name):
            name = name[:-1]
        end = match.start() + len(name)
        stripped = _strip_role_words(name)
        yield end - len(stripped), end, stripped


def _blank_parentheticals(window: str) -> str:
    """Parenthesized and quoted text replaced by spaces (innermost first), and the window cut at an unclosed
    parenthesis, so defined terms and descriptions never read as parties."""
    while True:
        blanked = _PAREN_RE.sub(lambda m: " " * len(m.group(0)), window)
        if blanked == window:
            break
        window = blanked
    open_paren = window.find("(")
    return window[:open_paren] if open_paren >= 0 else window


def _party_window(lead: str, start: int) -> str:
    window = lead[start: start + 700]
    stop = _WINDOW_STOP_RE.search(window)
    if stop:
        window = window[: stop.start()]
    window = _blank_parentheticals(window)
    for end in _SENTENCE_END_RE.finditer(window):  # the first real sentence end closes the list of parties
        # an abbreviation match is at most 13 characters long (plus a final newline before ``$``): search only
        # the end of ``window[: end.start()]``; with ``pos``, ``^`` and ``\b`` still see the text before it
        if not _ABBREV_END_RE.search(window, max(0, end.start() - 32), end.start()):
            return window[: end.start()]
    return window


def find_parties(lead: str, max_parties: int = 3) -> list[str]:
    """Party names from a document's lead, in order of appearance (rules in the module docstring)."""
    found: list[str] = []
    match = _BETWEEN_RE.search(lead)
    if match:
        window = _party_window(lead, match.end())
        prev_end, prev_suffixed = None, False
        for start, end, name in _entities(window):
            if not _is_party_name(name):
                continue
            if prev_end is None:
                accepted = start < 40  # the first party opens the window
            else:
                between = window[prev_end:start]
                suffixed = bool(_SUFFIX_END_RE.search(name))
                accepted = bool(re.search(r"\band\s+(?:the\s+)?$", between, re.IGNORECASE)) or (
                    prev_suffixed and suffixed and re.fullmatch(r"[\s,;]*", between) is not None
                )
            if accepted:
                found.append(name)
                prev_end, prev_suffixed = end, bool(_SUFFIX_END_RE.search(name))
                if len(found) >= max_parties:
                    break
            elif prev_end is None:
                break
    if not found:
        for regex, tail in ((_A_CORP_RE, _A_CORP_TAIL_RE), (_WE_RE, _WE_TAIL_RE)):
            first = tail.search(lead)
            if first is None:  # no match possible
                continue
            start = lead.rfind("\n", 0, first.start()) + 1 if regex is _A_CORP_RE else 0
            for m in regex.finditer(lead, start):
                name = _clean(m.group(1))
                name = re.sub(r"^(?:and|And|AND)\s+", "", name)
                if _is_party_name(name) and name.lower() not in (f.lower() for f in found):
                    found.append(name)
                if len(found) >= 2:
                    break
            if found:
                break
    return [_smart_case(re.sub(r"\s+", " ", name).strip(" ,;:")) for name in found]


def find_date(lead: str) -> str | None:
    """The document's date from its lead (``dated``/``as of``/``effective``... first, else the first full date)."""
    match = _DATED_RE.search(lead) or _ANY_DATE_RE.search(lead[:3000])
    return _clean(match.group(1)) if match else None


def _sample(text: str, budget: int) -> str:
    """At most ``budget`` characters of ``text``: all of it, or its first third plus four evenly spaced windows."""
    if len(text) <= budget:
        return text
    head = budget // 3
    width = (budget - head) // 4
    parts = [text[:head]]
    span = len(text) - head - width
    for i in range(1, 5):
        start = head + (span * i) // 4
        parts.append(text[start: start + width])
    return "\n".join(parts)


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

        summarizer = ExtractiveSummarizer(max_chars=150).fit(corpus_texts)
        summarizer.summarize(text).summary
        # 'Agency Agreement between General Electric Capital Corporation and Duckwall-Alco Stores, Inc., dated
        #  November 9, 2005. Key terms: ...'

    Raises:
        RuntimeError: :meth:`summarize` before :meth:`fit` (``SummaryAugmentationTransformation`` fits it on the
            documents it sees when it is not fitted yet).
    """

    requires_fit = True

    max_terms: int = Field(default=8, ge=0, description="Most distinctive terms to add (fewer if max_chars is "
                           "reached).")
    lead_chars: int = Field(default=6000, gt=0, description="Characters at the start searched for the title, "
                            "parties and date.")
    term_sample_chars: int = Field(default=30000, gt=0, description="Characters of each document read for TF-IDF "
                                   "(whole text if shorter, else first third plus four evenly spaced windows).")
    include_date: bool = Field(default=True, description="Add the document's date when found and room is left.")
    corpus_fingerprint: str | None = Field(
        default=None, description="Set by fit(): sha256 of the sorted sha256s of the fitted texts and the TF-IDF "
        "settings; part of the identity (cache key)."
    )

    _vectorizer: Any = PrivateAttr(default=None)
    _matrix: Any = PrivateAttr(default=None)  # CSR, one row per fitted text
    _row_of: dict[str, int] = PrivateAttr(default_factory=dict)  # fitted text -> its row
    _terms: Any = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "ExtractiveSummarizer"

    def identity(self) -> dict[str, Any]:
        ident = super().identity()
        ident.update(version=_VERSION, max_terms=self.max_terms, lead_chars=self.lead_chars,
                     term_sample_chars=self.term_sample_chars, include_date=self.include_date,
                     corpus_fingerprint=self.corpus_fingerprint)
        return ident

    @property
    def is_fitted(self) -> bool:
        return self.corpus_fingerprint is not None

    def fit(self, texts: Iterable[str | BaseNode]) -> ExtractiveSummarizer:
        """Fit the TF-IDF model on the corpus (full document texts or nodes/Documents); returns ``self``.

        Blank texts are ignored. Raises ``ValueError`` when no non-blank text is given."""
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

        docs = [t.get_content(metadata_mode=MetadataMode.NONE) if isinstance(t, BaseNode) else t for t in texts]
        for doc in docs:
            if not isinstance(doc, str):
                raise TypeError(f"fit() takes texts (str) or nodes, got {type(doc).__name__}")
        unique = sorted({hashlib.sha256(d.encode("utf-8", "surrogatepass")).hexdigest(): d
                         for d in docs if d.strip()}.items())
        if not unique:
            raise ValueError("ExtractiveSummarizer.fit needs at least one non-blank document")
        samples = [_sample(d, self.term_sample_chars) for _, d in unique]
        vectorizer = TfidfVectorizer(
            lowercase=True, token_pattern=_TOKEN_PATTERN, stop_words=sorted(ENGLISH_STOP_WORDS),
            max_df=0.5 if len(unique) >= 4 else 1.0, sublinear_tf=True, dtype=np.float32,
        )
        try:
            matrix = vectorizer.fit_transform(samples).tocsr()
            terms = vectorizer.get_feature_names_out()
        except ValueError:  # empty vocabulary (e.g. only numbers or stop words)
            vectorizer, matrix, terms = None, None, np.array([], dtype=object)
        self._vectorizer, self._matrix, self._terms = vectorizer, matrix, terms
        self._row_of = {doc: i for i, (_, doc) in enumerate(unique)}
        settings = {"version": _VERSION, "term_sample_chars": self.term_sample_chars, "token": _TOKEN_PATTERN}
        blob = json.dumps([settings, [digest for digest, _ in unique]], sort_keys=True)
        self.corpus_fingerprint = hashlib.sha256(blob.encode()).hexdigest()
        return self

    # -- terms ----------------------------------------------------------------------------------------------
    def _term_scores(self, text: str, sample: str) -> list[str]:
        max_terms, matrix = self.max_terms, self._matrix
        if matrix is None or max_terms == 0:
            return []
        row = self._row_of.get(text)  # a fitted text: read its row of the CSR matrix directly
        if row is None:
            matrix, row = self._vectorizer.transform([sample]).tocsr(), 0
        start, stop = matrix.indptr[row], matrix.indptr[row + 1]
        if start == stop:
            return []
        data, indices = matrix.data[start:stop], matrix.indices[start:stop]
        terms = self._terms
        keep = 6 * max_terms + 10
        if len(data) > keep:  # the top weights (plus ties at the cut), then an exact deterministic order
            threshold = np.partition(data, len(data) - keep)[len(data) - keep]
            mask = data >= threshold
            data, indices = data[mask], indices[mask]
        top = terms[indices]
        order = np.lexsort((top, -data))  # by weight, ties by term: deterministic
        return [str(top[i]) for i in order[:keep]]

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
        if not self.is_fitted:
            raise RuntimeError(
                "ExtractiveSummarizer is not fitted: call fit(texts) on the corpus being ingested first "
                "(SummaryAugmentationTransformation fits it on the documents it sees)"
            )
        max_chars, max_terms = self.max_chars, self.max_terms
        lead = text[: self.lead_chars]
        sample = _sample(text, self.term_sample_chars)
        doc_type = find_document_type(lead)
        low = sample.lower()
        privacy = _is_privacy_text(low)
        if privacy and (doc_type is None or doc_type.lower() in ("policy", "notice", "statement")):
            doc_type = "Privacy policy" if doc_type is None else f"Privacy {doc_type.lower()}"
        if doc_type is not None and "privacy" in doc_type.lower():
            match = _WE_RE.search(lead) if _WE_TAIL_RE.search(lead) else None
            parties = [_smart_case(_clean(match.group(1)))] if match and _is_party_name(match.group(1)) else []
        else:
            parties = find_parties(lead)
        terms = self._term_scores(text, sample)
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
