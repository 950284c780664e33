"""A task text turned into what the retrievers look for.

Issue bodies run to thousands of words: templates ("Description", "Steps to reproduce"),
environment lists, logs, tracebacks. Sent whole to BM25, every word is a posting list to
merge (a tail latency many times a short query's) and boilerplate votes as much
as the words that name the problem. The query keeps its code references and exact identifiers whole
(for the references index, `parsers.exact`) and its MAX_WORDS most telling words: those of
its code references first, then the words the text repeats, then the earliest.

A report's title and the opening words of its prose (`prose_words`: outside code blocks,
headings, quotes, tables, shell prompts and log lines) say in a few words what is wrong:
what the commit rankings (`Searcher._commit_ranks`) match with a change's text.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from parsers import exact_terms, extract_text_refs

MAX_WORDS = 48
MAX_REFS = 64
MAX_EXACT = 64
MAX_PROSE = 64
# A report's summary, which the commit title ranking matches with each change's text: its title
# and the first telling words of its prose (10 was the best of 0, 10, 20 and 40 on 118 public
# past-fix tasks of six repositories, and in each of their leave-one-repository-out folds).
SUMMARY_PROSE_WORDS = 10

# Split as the index's "simple" tokenizer does (on anything not a letter or digit).
_WORD = re.compile(r"[A-Za-z0-9]+")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
# How the lines of a report body that are not prose begin: headings, quotes, tables, shell
# prompts, bold template headings ("**Describe the bug**") and log lines.
_NOT_PROSE = ("#", ">", "|", "$", "**", "DEBUG", "TRACE")

# English function words and the words of issue templates and bug-report boilerplate:
# they occur in nearly every task, so they only add cost and noise.
IGNORED = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just
    let me more most my no nor not now of off on once only or other our out over own same she
    should so some such than that the their them then there these they this those through to too
    under until up us very was we were what when where which while who whom why will with would
    you your yes get got use used using way like want make made see seems seem think thing things
    one two new now still even well also currently instead actually however something anything
    description describe described issue issues bug bugs problem report reported reproduce
    reproduced reproduction steps step expected behavior behaviour actual result results output
    outputs version versions environment env system os platform python information info
    example examples minimal code following below above please thanks thank hi hello work works
    working happen happens happened case cases note notes see also additional context ticket
    fixed fix fixes patch pull request pr summary motivation proposal solution alternatives
    """.split()
)


@dataclass(frozen=True)
class Query:
    text: str
    words: list[str]  # for BM25 over item text, lowercase, at most MAX_WORDS
    refs: list[str]  # code-reference keys, for the references index
    title: str = ""  # the first non-empty line: a report's title (matched with commit subjects)
    prose: tuple[str, ...] = ()  # the body's first telling words (`prose_words`), at most MAX_PROSE

    @property
    def bm25(self) -> str:
        return " ".join(self.words)

    @property
    def title_bm25(self) -> str:
        """The title's words, for BM25 over commit experiences' text."""
        return " ".join(_WORD.findall(self.title))

    def summary(self, prose_words: int = SUMMARY_PROSE_WORDS) -> str:
        """The title's words and the body's first `prose_words` telling words, for BM25."""
        return " ".join([*_WORD.findall(self.title), *self.prose[:prose_words]])


def prose_words(text: str, limit: int) -> list[str]:
    """The first `limit` words of a report's body (what follows its title line) that say
    something, in order: outside code blocks and the lines that are not prose (`_NOT_PROSE`),
    without function words, template words and numbers."""
    lines = _FENCE.sub(" ", text).splitlines()
    start = next((i + 1 for i, line in enumerate(lines) if line.strip()), len(lines))
    words: list[str] = []
    for line in lines[start:]:
        if line.lstrip().startswith(_NOT_PROSE):
            continue
        words += [w for w in _WORD.findall(line) if len(w) > 2 and not w.isdigit() and w.lower() not in IGNORED]
        if len(words) >= limit:
            break
    return words[:limit]


def parse_query(text: str) -> Query:
    code_refs = extract_text_refs(text).terms()[:MAX_REFS]
    exact = exact_terms(text)
    refs = list(dict.fromkeys([*code_refs, *exact]))[:MAX_REFS + MAX_EXACT]
    # Digits count where they are part of an exact identifier (module_377, E501): elsewhere
    # (versions, line numbers, counts) they only add noise.
    exact_words = {t for term in exact for t in _WORD.findall(term)}
    tokens = [t.lower() for t in _WORD.findall(text)]
    counts = Counter(
        t for t in tokens
        if t not in IGNORED and ((len(t) > 2 and not t.isdigit()) or t in exact_words)
    )
    first: dict[str, int] = {}
    for i, t in enumerate(tokens):
        first.setdefault(t, i)
    from_refs = {t.lower() for ref in code_refs for t in _WORD.findall(ref)}
    ranked = sorted(counts, key=lambda t: (t not in from_refs, -counts[t], first[t]))
    title = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return Query(text=text, words=ranked[:MAX_WORDS], refs=refs, title=title,
                 prose=tuple(prose_words(text, MAX_PROSE)))
