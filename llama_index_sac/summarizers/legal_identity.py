"""Document identity in the lead of a legal document: its TYPE (title), PARTIES and DATE, by rules.

Used by :class:`~llama_index_sac.summarizers.extractive.ExtractiveSummarizer` (rules in its module docstring):
:func:`find_document_type`, :func:`find_parties` and :func:`find_date` read the first characters of a document (the
"lead", about 6,000 characters) and return what contracts state there: "Mutual Non-Disclosure Agreement", ["Kestrel
Analytics, Inc.", "Marlow Biotech Ltd."], "June 1, 2021". Every pattern is bounded (no nested unbounded repetition),
so each function is linear in the lead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["find_date", "find_document_type", "find_parties", "find_policy_owner", "is_privacy_text"]

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
#: at least this often per 10,000 characters of the term sample: privacy policies use it far more often than a
#: contract's data-protection clause does, so a contract whose title
#: is missed is not called a privacy policy.
_PRIVACY_PER_10K = 12
_SMALL_WORDS = {"of", "and", "to", "the", "for", "in", "on", "by", "a", "an", "or", "with", "at", "as"}

# -- parties ---------------------------------------------------------------------------------------------------
_SUFFIX = (
    r"Inc|Incorporated|Corp|Corporation|Co|Company|LLC|L\.L\.C|Ltd|Limited|LLP|L\.L\.P|LP|L\.P|plc|PLC|GmbH|AG|"
    r"S\.A|SA|S\.p\.A|N\.V|B\.V|SE|S\.A\.S|Pty|S\.L|K\.K|Bancorp|Bancshares|Trust"
)
_SUFFIX_TOKEN = rf"(?i:{_SUFFIX})\.?(?![\w\-])"
#: A second suffix, "Co., Ltd.", "Bancorp, Inc.", "Pty Ltd", "Trust Company": a capitalised legal form (never
#: "Inc., Company" or "Limited, incorporated").
_FORM = r"Inc|Incorporated|Ltd|Limited|LLC|L\.L\.C|LLP|L\.L\.P|LP|L\.P|plc|GmbH|AG|S\.A|SA|S\.p\.A|N\.V|B\.V|SE|Pty"
_FORM_TOKEN = rf"(?i:{_FORM})\.?(?![\w\-])"
_WORD = rf"(?!{_SUFFIX_TOKEN})(?!(?i:and)\b)(?:[A-Z0-9][\w&'’.\-]*|&)"
_CONNECT = r"(?:of|de|du|der|la|le|von|van|for|&)"
_ENTITY_RE = re.compile(
    rf"(?<![\w\-])(?:{_WORD})(?:[ \t]+(?:{_WORD}|{_CONNECT}(?=[ \t]+[A-Z])))*"
    rf"(?:,?[ \t]+{_SUFFIX_TOKEN}|,?[ \t]*(?<=[ \t,]){_SUFFIX_TOKEN})?"
    rf"(?:,?[ \t]+(?=[A-Z]){_FORM_TOKEN}|[ \t]+(?:Company|Corporation|COMPANY|CORPORATION)(?![\w\-]))?"
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
_MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"}
_NOT_PARTY = set(_STATES) | _MONTHS | {
    "new york", "new jersey", "new hampshire", "new mexico", "north carolina", "south carolina", "north dakota",
    "south dakota", "west virginia", "rhode island", "district of columbia", "united states", "united kingdom",
    "hong kong", "cayman islands", "british virgin islands", "state", "city", "county", "agreement", "company",
    "party", "parties", "recipient", "disclosing party", "receiving party", "licensor", "licensee", "seller",
    "buyer", "purchaser", "parent", "merger sub", "client", "customer", "supplier", "vendor", "employee", "employer",
    "contractor", "consultant", "lender", "borrower", "landlord", "tenant", "section", "article", "exhibit",
    "schedule", "recitals", "whereas", "effective date", "execution date", "this", "the", "name", "address",
    "date", "by", "its", "each", "both", "any", "such", "all", "representative", "affiliates",
    "officers", "directors", "exhibits", "schedules", "annex", "appendix", "bylaws", "effective time", "solely",
    "purposes", "shipper",
}
#: Words stripped from the front of a party name ("Parent Acme Inc."): the role words, never a place or a month,
#: which begin real names ("Kansas City Southern", "County Bancorp, Inc.", "May Department Stores").
_LEADING_ROLE_WORDS = (_NOT_PARTY - set(_STATES) - _MONTHS - {"state", "city", "county"}) | {"parties", "the"}
#: A party created for the deal ("Longhorn Merger Sub I, Inc.", "Magic Mergeco, Inc.", "Appleseed Holdco LLC",
#: "Rams MD Subsidiary I, Inc."): listed after the principals, so a summary that has room for two names keeps
#: the buyer and the target of a merger agreement.
_VEHICLE_RE = re.compile(
    r"\b(?:sub|merger\s*co|merge\s*co|acquire\s*co|holdco|mergersub|acquisition\s+(?:sub|corp|corporation|co|inc|"
    r"llc|company))\b|\bsubsidiary\s+(?:[IVX]+|\d+)\b",
    re.IGNORECASE,
)
#: How many names :func:`find_parties` reads from the list of parties before it ranks them.
_MAX_CANDIDATES = 8
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


def is_privacy_text(low: str) -> bool:
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
    while len(words) > 1 and words[0].lower().strip(",.:") in _LEADING_ROLE_WORDS:
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
    """Up to ``max_parties`` party names from a document's lead (rules in the module docstring).

    Reads up to eight names from the list of parties, drops repeats ("Delta Omega Sub Holdings Inc." named twice)
    and puts the principals first: the first party, then the others in order of appearance, then the deal vehicles
    and affiliates of an earlier party. A merger agreement "among Parent, Merger Sub I, Merger Sub II and Target"
    gives ``[Parent, Target, Merger Sub I]``.
    """
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
                if len(found) >= _MAX_CANDIDATES:
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
    names = [_smart_case(re.sub(r"\s+", " ", name).strip(" ,;:")) for name in found]
    return _rank_parties(names)[:max_parties]


def _rank_parties(names: list[str]) -> list[str]:
    """``names`` without repeats, the principals first: the first name, then each name that is neither a deal
    vehicle (:data:`_VEHICLE_RE`) nor an affiliate of an earlier name (same first word, "Lake Holdings, LP" then
    "Lake Guarantor, LLC"), then those, each group in order of appearance."""
    unique: list[str] = []
    keys: set[str] = set()
    for name in names:
        key = re.sub(r"[^a-z0-9]", "", name.lower())
        if key and key not in keys:
            keys.add(key)
            unique.append(name)
    principals: list[str] = unique[:1]
    others: list[str] = []
    seen_first = {_first_word(name) for name in unique[:1]}
    for name in unique[1:]:
        first = _first_word(name)
        (others if _VEHICLE_RE.search(name) or first in seen_first else principals).append(name)
        seen_first.add(first)
    return principals + others


def _first_word(name: str) -> str:
    words = re.findall(r"[a-z0-9&]+", name.lower())
    return next((w for w in words if w != "the"), "")


def find_date(lead: str) -> str | None:
    """The document's date from its lead (``dated``/``as of``/``effective``... first, else the first full date)."""
    match = _DATED_RE.search(lead) or _ANY_DATE_RE.search(lead[:3000])
    return _clean(match.group(1)) if match else None


def find_policy_owner(lead: str) -> list[str]:
    """The company a privacy policy speaks for: ``[name]`` from ``X ("we", "us")`` in ``lead``, else ``[]``."""
    match = _WE_RE.search(lead) if _WE_TAIL_RE.search(lead) else None
    return [_smart_case(_clean(match.group(1)))] if match and _is_party_name(match.group(1)) else []
