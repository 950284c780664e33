"""Fresh by content, not by name: every text written for training is compared with every
validation text, and a training file that copies one is refused, with the pair named.

`train/data.py` refuses a validation set by its path and its tasks by their ids. That let a
training project retell a fresh validation project's story under another name (issue 53), so
this check reads the words. A training file is flagged where, against any validation text:

- **8-word run:** it shares a run of `RUN` words after normalising (lower case, Unicode folded,
  punctuation dropped, fenced code and diffs left out: `prose`);
- **near-duplicate question or sentence:** a question (or a decision sentence) whose words
  overlap a validation one's by at least `OVERLAP` (Jaccard over the words that carry content,
  function words left out, texts of at least `MIN_WORDS` such words);
- **same project:** the same project name, or the same chain of values (an update question's
  `values`, two or more, in order).

What it reads (paths relative to the repository, and the shared data folder):
- training: the dated projects written for training (`train/ranker/projects`), the timeline
  projects trained on (`eval/data/timeline`), the decision reader's sentences (`train/decisions`);
- validation: the fresh timeline sets (`eval/data/timeline-fresh*`, spent ones included: a
  spent set is no longer fresh, and still never copied), the decision suites
  (`eval/data/decisions/suite*.jsonl`), LoCoMo dev's conversations and questions, and the
  problem statements of past-fixes dev and SWE-ContextBench Lite's related tasks.
Public data trained on (agent runs, histories, `swe-verified-reuse`) is kept apart from
evaluation by task and repository (`train/data.py`), and its issue templates share runs of
words by design, so it is not compared here.

    python -m train.content_check [--shared DIR]     # exit 1 and the pairs when a file matches

`python -m train` runs it before any work, and `tests/train/test_content_check.py` on the
repository's data.
"""

from __future__ import annotations

import argparse
import json
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from eval._paths import SHARED_DATA
from train.provenance import REPO_ROOT

RUN = 8
OVERLAP = 0.6
MIN_WORDS = 4
TRAINING = ("train/ranker/projects/*.json", "eval/data/timeline/*.json", "train/decisions/*.jsonl",
            "train/encoder/reports.jsonl")
VALIDATION = ("eval/data/timeline-fresh*/*.json", "eval/data/decisions/suite*.jsonl")
SHARED_VALIDATION = ("locomo-dev/*.json", "past-fixes-dev/tasks.json", "swe-contextbench-lite/related_tasks.jsonl")


@dataclass(frozen=True)
class Text:
    """One text of a file: where it is (file and place), what it is, its words."""

    file: str
    place: str
    kind: str  # "body", "question", "sentence", "name" or "chain"
    text: str


@dataclass(frozen=True)
class Match:
    rule: str  # "8-word run", "near-duplicate", "same project name", "same chain of values"
    training: Text
    validation: Text
    detail: str

    def line(self) -> str:
        return (f"{self.training.file} ({self.training.place}) and {self.validation.file} ({self.validation.place}): "
                f"{self.rule}: {self.detail}")


# Function words a question is built from ("are we still on X?", "what did we use for X
# before Y?"): two questions that share only these ask about different things.
FUNCTION_WORDS = frozenset("""a an the and or but of to in on at for from by with about as into over after before
since until is are was were be been being am do does did done have has had we our us i me my you your it its
they them their he she his her this that these those what which who whom whose when where why how still now
currently these days use used using uses any some all no not there here then than so if can could would should
will shall may might must s t""".split())
FENCE = re.compile(r"```.*?(```|$)", re.S)
DIFF = re.compile(r"^diff --git .*", re.S | re.M)


def words(text: str) -> list[str]:
    """Lower-case words, accents folded, punctuation dropped ("don't" is one word)."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower().replace("'", "")
    return re.findall(r"[a-z0-9]+", folded)


def prose(text: str) -> str:
    """`text` without its fenced code blocks and diffs: config files, manifests and workflow
    files repeat by their format's grammar (`runs-on: ubuntu-latest`, `edition = "2021"`),
    not by the story told around them, which the chains of values compare."""
    return DIFF.sub(" ", FENCE.sub(" ", text))


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in FUNCTION_WORDS}


def runs(tokens: list[str], n: int = RUN) -> set[str]:
    return {" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def project_texts(path: Path, name: str) -> Iterator[Text]:
    """A dated project's messages, questions, name and chains of values."""
    project = json.loads(path.read_text())
    yield Text(name, "project", "name", str(project.get("project", "")))
    for session in project.get("sessions", []):
        for i, message in enumerate(session.get("messages", [])):
            yield Text(name, f"{session.get('id')} message {i + 1}", "body", str(message.get("content", "")))
    for i, q in enumerate(project.get("questions", [])):
        yield Text(name, f"question {i + 1}", "question", str(q.get("question", "")))
        values = [" ".join(words(str(v))) for v in q.get("values") or []]
        if len(values) >= 2:
            yield Text(name, f"question {i + 1} values", "chain", " -> ".join(values))


def sentence_texts(path: Path, name: str) -> Iterator[Text]:
    for i, line in enumerate(path.read_text().splitlines()):
        if line.strip():
            yield Text(name, f"line {i + 1}", "sentence", str(json.loads(line)["text"]))


def locomo_texts(path: Path, name: str) -> Iterator[Text]:
    conversation = json.loads(path.read_text())
    for key, turns in conversation.items():
        if key.startswith("session_") and isinstance(turns, list):
            for turn in turns:
                yield Text(name, f"{key} {turn.get('dia_id')}", "body", str(turn.get("text", "")))
    for i, qa in enumerate(conversation.get("qa", [])):
        yield Text(name, f"qa {i + 1}", "question", str(qa.get("question", "")))


def task_texts(path: Path, name: str) -> Iterator[Text]:
    rows = json.loads(path.read_text()) if path.suffix == ".json" else \
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for row in rows:
        yield Text(name, str(row.get("instance_id")), "body", str(row.get("problem_statement", "")))


def report_texts(path: Path, name: str) -> Iterator[Text]:
    """The written reports of `train/encoder/written_reports.py`, each named by its change."""
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            yield Text(name, f"{row['repo']}@{row['sha']}", "body", row["report"])


def read(path: Path, name: str) -> Iterator[Text]:
    """The texts of one file, by what kind of file it is."""
    if path.name == "reports.jsonl":
        yield from report_texts(path, name)
    elif path.suffix == ".jsonl" and "decisions" in path.parts:
        yield from sentence_texts(path, name)
    elif "locomo-dev" in path.parts:
        yield from locomo_texts(path, name)
    elif path.name in ("tasks.json", "related_tasks.jsonl"):
        yield from task_texts(path, name)
    else:
        yield from project_texts(path, name)


def gather(root: Path, patterns: Iterable[str], prefix: str = "") -> list[Text]:
    out: list[Text] = []
    for pattern in patterns:
        for path in sorted(root.glob(pattern)):
            out += read(path, prefix + str(path.relative_to(root)))
    return out


def check(training: list[Text], validation: list[Text]) -> list[Match]:
    """Every match between a training text and a validation text, at most one per rule and
    pair of files (the first found), in a stable order."""
    found: dict[tuple[str, str, str], Match] = {}

    def add(rule: str, t: Text, v: Text, detail: str) -> None:
        found.setdefault((rule, t.file, v.file), Match(rule, t, v, detail))

    # 8-word runs: an index of the validation runs, then each training text's runs looked up.
    index: dict[str, Text] = {}
    for v in validation:
        if v.kind in ("body", "question", "sentence"):
            for r in runs(words(prose(v.text))):
                index.setdefault(r, v)
    for t in training:
        if t.kind in ("body", "question", "sentence"):
            for r in sorted(runs(words(prose(t.text)))):
                if r in index:
                    add("8-word run", t, index[r], repr(r))
                    break
    # Near-duplicate questions and sentences: candidates share a word, then Jaccard.
    short = [(v, content_words(v.text)) for v in validation if v.kind in ("question", "sentence")]
    by_word: dict[str, list[int]] = defaultdict(list)
    for j, (_, ws) in enumerate(short):
        if len(ws) >= MIN_WORDS:
            for w in ws:
                by_word[w].append(j)
    for t in training:
        if t.kind not in ("question", "sentence"):
            continue
        ws = content_words(t.text)
        if len(ws) < MIN_WORDS:
            continue
        for j in sorted({j for w in ws for j in by_word.get(w, ())}):
            v, vs = short[j]
            if v.kind == t.kind and (score := jaccard(ws, vs)) >= OVERLAP:
                add("near-duplicate", t, v, f"{t.text!r} ~ {v.text!r} (overlap {score:.2f})")
                break
    # The same project name, or the same chain of values.
    for kind, rule in (("name", "same project name"), ("chain", "same chain of values")):
        held = {(" ".join(words(v.text)) if kind == "name" else v.text): v for v in validation if v.kind == kind}
        for t in training:
            key = " ".join(words(t.text)) if kind == "name" else t.text
            if t.kind == kind and key and key in held:
                add(rule, t, held[key], repr(t.text))
    return sorted(found.values(), key=lambda m: (m.training.file, m.rule, m.validation.file))


def validation_texts(root: Path = REPO_ROOT, shared: Path = SHARED_DATA) -> list[Text]:
    """Every validation set's texts (the shared data's too: a missing shared folder is an
    error, not a pass)."""
    if not shared.is_dir():
        raise FileNotFoundError(f"the shared data folder {shared} is missing: the content check needs its dev sets")
    return gather(root, VALIDATION) + gather(shared, SHARED_VALIDATION, prefix="shared/data/")


def repository_matches(root: Path = REPO_ROOT, shared: Path = SHARED_DATA) -> list[Match]:
    """The check on this repository's training files and every validation set."""
    return check(gather(root, TRAINING), validation_texts(root, shared))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=SHARED_DATA, help="the shared data folder")
    args = ap.parse_args(argv)
    matches = repository_matches(REPO_ROOT, args.shared)
    for m in matches:
        print(m.line())
    print(f"{len(matches)} match(es) between training and validation text")
    return 1 if matches else 0


if __name__ == "__main__":
    raise SystemExit(main())
