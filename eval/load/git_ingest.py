"""Time the git-history importer: ``iter_changes`` (the first-parent walk the importer reads) + ``commit_to_experience`` over a whole repo.

Without ``--repo`` it first writes a synthetic but realistically shaped history (default 5,000
commits) with one ``git fast-import`` run: Python packages whose functions and methods get
edited, new files, renames, a few JS files, the occasional binary and giant vendored commit,
and commit messages that name exceptions and symbols. The budget it checks against: reading
and parsing 5,000 commits well under 60 s on 2 cores.

    python -m eval.load.git_ingest                 # synthetic, 5,000 commits
    python -m eval.load.git_ingest --repo PATH     # a real repository
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from codemem.git.cards import commit_to_experience  # noqa: E402
from codemem.git.log import iter_changes  # noqa: E402
from eval._paths import RESULTS  # noqa: E402
from eval._provenance import provenance, write_result  # noqa: E402

WORDS = (
    "user account order invoice cache session token config report query index record event "
    "payload batch queue worker job schedule retry timeout limit buffer stream chunk file path "
    "node graph edge price cart item stock metric label parser lexer frame client server route"
).split()
VERBS = "load save fetch build parse render apply merge compute resolve validate flush".split()
EXCEPTIONS = [
    "KeyError", "ValueError", "TypeError", "AttributeError", "IndexError", "TimeoutError",
    "ZeroDivisionError", "UnicodeDecodeError", "FileNotFoundError", "PermissionError",
]  # fmt: skip
CONDITIONS = [
    "the cache is empty", "the input has no header", "two workers race", "the path has spaces",
    "the token expired", "the batch is larger than the limit", "the config file is missing",
    "the payload is not UTF-8", "the queue is closed", "retries are exhausted",
]  # fmt: skip


@dataclass
class Func:
    name: str
    args: list[str]
    body: list[str]


@dataclass
class Module:
    path: str
    cls: str
    methods: list[Func] = field(default_factory=list)
    funcs: list[Func] = field(default_factory=list)

    def render(self) -> str:
        out = ["import logging", "import os", "", "log = logging.getLogger(__name__)", "", ""]
        out.append(f"class {self.cls}:")
        out.append(f'    """{self.cls} keeps its state on the instance."""')
        out.append("")
        for m in self.methods:
            out.append(f"    def {m.name}(self, {', '.join(m.args)}):")
            out += [f"        {line}" for line in m.body]
            out.append("")
        out.append("")
        for f in self.funcs:
            out.append(f"def {f.name}({', '.join(f.args)}):")
            out += [f"    {line}" for line in f.body]
            out += ["", ""]
        return "\n".join(out).rstrip() + "\n"


class Generator:
    """Random but plausible edits; every choice comes from one seeded RNG."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.modules: list[Module] = []
        self.js: dict[str, list[str]] = {}

    def ident(self) -> str:
        return f"{self.rng.choice(VERBS)}_{self.rng.choice(WORDS)}"

    def body(self, args: list[str]) -> list[str]:
        r = self.rng
        a = r.choice(args)
        lines = [f"{r.choice(WORDS)} = {a}"]
        for _ in range(r.randint(2, 9)):
            w = r.choice(WORDS)
            lines.append(
                r.choice(
                    [
                        f"{w} = {r.choice(WORDS)} + {r.randint(0, 99)}",
                        f"if not {w}:\n    raise {r.choice(EXCEPTIONS)}('{w} missing')",
                        f"log.debug('%s %s', {a!s}, {r.randint(0, 9)})",
                        f"{w} = os.environ.get('{w.upper()}', '{r.choice(WORDS)}')",
                        f"for x in range({r.randint(1, 20)}):\n    {w} = x * {r.randint(2, 5)}",
                    ]
                )
            )
        lines.append(f"return {r.choice(WORDS)}")
        return [piece for line in lines for piece in line.split("\n")]

    def func(self) -> Func:
        args = self.rng.sample(WORDS, self.rng.randint(1, 3))
        return Func(self.ident(), args, self.body(args))

    def new_module(self) -> Module:
        r = self.rng
        path = f"src/{r.choice(WORDS)}_{r.choice(WORDS)}/{r.choice(WORDS)}_{len(self.modules)}.py"
        cls = r.choice(WORDS).title() + r.choice(WORDS).title()
        mod = Module(path, cls, [self.func() for _ in range(r.randint(2, 8))],
                     [self.func() for _ in range(r.randint(2, 10))])  # fmt: skip
        self.modules.append(mod)
        return mod

    def edit(self, mod: Module) -> tuple[str, str]:
        """Change one function or method; returns (qualified name, exception it mentions)."""
        r = self.rng
        use_method = bool(mod.methods) and r.random() < 0.5
        fn = r.choice(mod.methods if use_method else mod.funcs)
        qual = f"{mod.cls}.{fn.name}" if use_method else fn.name
        exc = r.choice(EXCEPTIONS)
        roll = r.random()
        if roll < 0.4:
            i = r.choice([k for k, line in enumerate(fn.body) if not line.startswith(" ")])
            fn.body.insert(i, f"if {fn.args[0]} is None:")
            fn.body.insert(i + 1, f"    raise {exc}('{fn.args[0]} is required')")
        elif roll < 0.8:
            i = r.randrange(len(fn.body))
            if not fn.body[i].startswith(" "):
                fn.body[i] = f"{r.choice(WORDS)} = {fn.args[0]} or {r.randint(0, 99)}"
        elif roll < 0.9 and len(mod.funcs) < 40:
            mod.funcs.append(self.func())
            qual = mod.funcs[-1].name
        else:
            fn.body = self.body(fn.args)
        return qual, exc

    def message(self, qual: str, exc: str, path: str) -> str:
        r = self.rng
        cond = r.choice(CONDITIONS)
        subject = r.choice([
            f"Fix {exc} in {qual} when {cond}",
            f"Handle {cond} in {qual}",
            f"Refactor {qual} for readability",
            f"Speed up {qual}",
            f"{Path(path).stem}: guard against {exc}",
        ])  # fmt: skip
        if r.random() < 0.5:
            return subject
        body = f"{qual} failed when {cond}.\n"
        if r.random() < 0.4:
            body += (
                f"\nTraceback (most recent call last):\n"
                f'  File "{path}", line {r.randint(5, 200)}, in {qual.split(".")[-1]}\n'
                f"{exc}: {r.choice(WORDS)} missing\n"
            )
        return f"{subject}\n\n{body}"


def blob(lines: list[bytes], path: str, data: bytes) -> None:
    lines.append(f"M 100644 inline {path}\n".encode())
    lines.append(f"data {len(data)}\n".encode() + data + b"\n")


def write_history(root: Path, n_commits: int, seed: int) -> None:
    """Stream ``n_commits`` commits into ``git fast-import`` on refs/heads/main."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    gen = Generator(seed)
    r = gen.rng
    authors = [f"Dev {name.title()} <{name}@example.com>" for name in WORDS[:12]]
    stamp = 1_546_300_800  # 2019-01-01
    proc = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=root, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    for n in range(1, n_commits + 1):
        stamp += r.randint(600, 20_000)
        out: list[bytes] = []
        if n == 1:
            mods = [gen.new_module() for _ in range(40)]
            for mod in mods:
                blob(out, mod.path, mod.render().encode())
            gen.js["web/app.js"] = [
                f"export function {w}(x) {{\n  return x;\n}}\n" for w in WORDS[:6]
            ]
            blob(out, "web/app.js", "".join(gen.js["web/app.js"]).encode())
            message = "Initial import"
        else:
            roll = r.random()
            if roll < 0.03:
                mod = gen.new_module()
                blob(out, mod.path, mod.render().encode())
                message = f"Add {mod.cls} in {mod.path}"
            elif roll < 0.04:
                mod = r.choice(gen.modules)
                old = mod.path
                mod.path = str(Path(old).with_name(f"{r.choice(WORDS)}_{n}.py"))
                out.append(f'R "{old}" "{mod.path}"\n'.encode())
                blob(out, mod.path, mod.render().encode())
                message = f"Move {Path(old).name} to {Path(mod.path).name}"
            elif roll < 0.045:
                blob(out, f"assets/img_{n}.png", b"\x89PNG\r\n\x1a\n\x00" + r.randbytes(4096))
                message = "Add image asset"
            elif roll < 0.047:
                vendored = "".join(f"var v{i} = '{r.choice(WORDS) * 8}';\n" for i in range(20_000))
                blob(out, f"vendor/lib_{n}.min.js", vendored.encode())
                message = "Vendor third-party library"
            elif roll < 0.08:
                funcs = gen.js["web/app.js"]
                i = r.randrange(len(funcs))
                funcs[i] = funcs[i].replace("return x", f"return x + {r.randint(1, 9)}", 1)
                blob(out, "web/app.js", "".join(funcs).encode())
                message = "Tweak web helpers"
            else:
                width = min(len(gen.modules), r.choice([1, 1, 1, 2, 2, 3, 5]))
                touched = r.sample(gen.modules, width)
                qual, exc = "", ""
                for mod in touched:
                    qual, exc = gen.edit(mod)
                    blob(out, mod.path, mod.render().encode())
                message = gen.message(qual, exc, touched[-1].path)
        author = r.choice(authors)
        msg = message.encode()
        head = (
            (
                f"commit refs/heads/main\nmark :{n}\nauthor {author} {stamp} +0000\n"
                f"committer {author} {stamp} +0000\ndata {len(msg)}\n"
            ).encode()
            + msg
            + b"\n"
        )
        if n > 1:
            head += f"from :{n - 1}\n".encode()
        proc.stdin.write(head + b"".join(out) + b"\n")
    proc.stdin.close()
    if proc.wait() != 0:
        raise SystemExit("git fast-import failed")


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bench(repo: str) -> dict[str, object]:
    """Read and convert every commit; wall time plus CPU time (git's apart), since a loaded
    machine stretches wall time but not CPU time."""
    load_before = os.getloadavg()[0]
    t0, c0, g0 = time.perf_counter(), time.process_time(), _child_cpu()
    records = list(iter_changes(repo))
    t_read, c_read, g_read = (time.perf_counter() - t0, time.process_time() - c0, _child_cpu() - g0)
    t1, c1 = time.perf_counter(), time.process_time()
    experiences = [commit_to_experience(rec) for rec in records]
    t_parse, c_parse = time.perf_counter() - t1, time.process_time() - c1
    total = t_read + t_parse
    n = len(records)
    steps = sum(len(e.steps) for e in experiences)
    with_symbols = sum(1 for e in experiences if e.card.edited_symbols)
    diff_mb = sum(len(r.diff) for r in records) / 1e6
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"repo: {repo}  (load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}, "
          f"{os.cpu_count()} cpus)")  # fmt: skip
    print(f"commits: {n}  steps: {steps}  diff kept: {diff_mb:.1f} MB  "
          f"with symbols: {with_symbols / max(n, 1):.0%}  truncated: "
          f"{sum(r.diff_truncated for r in records)}")  # fmt: skip
    rate = n / max(t_read, 1e-9)
    print(f"iter_changes:         {t_read:7.2f} s wall ({rate:6.0f} commits/s)  "
          f"cpu: python {c_read:.2f} s + git {g_read:.2f} s")  # fmt: skip
    rate = n / max(t_parse, 1e-9)
    print(f"commit_to_experience: {t_parse:7.2f} s wall ({rate:6.0f} commits/s)  "
          f"cpu: {c_parse:.2f} s")  # fmt: skip
    print(f"total:                {total:7.2f} s wall ({n / max(total, 1e-9):6.0f} commits/s)")
    print(f"peak RSS: {rss_mb:.0f} MB")
    return {"repo": repo, "commits": n, "steps": steps, "with_symbols": with_symbols, "diff_mb": round(diff_mb, 1),
            "truncated": sum(r.diff_truncated for r in records),
            "iter_changes": {"wall_s": round(t_read, 2), "python_cpu_s": round(c_read, 2), "git_cpu_s": round(g_read, 2)},
            "commit_to_experience": {"wall_s": round(t_parse, 2), "cpu_s": round(c_parse, 2)},
            "total_wall_s": round(total, 2), "peak_rss_mb": round(rss_mb)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", help="an existing repository to read instead of a synthetic one")
    ap.add_argument("--commits", type=int, default=5_000, help="synthetic history length")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", help="write the synthetic repository here and keep it")
    ap.add_argument("--out", type=Path, default=RESULTS / "git_ingest.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.load.git_ingest", argv)
    if args.repo:
        result = {"synthetic": False, **bench(args.repo)}
    else:
        with tempfile.TemporaryDirectory(prefix="codemem-gitbench-") as tmp:
            root = Path(args.keep or tmp) / "repo"
            t0 = time.perf_counter()
            write_history(root, args.commits, args.seed)
            generate_s = time.perf_counter() - t0
            print(f"generated {args.commits} commits in {generate_s:.1f} s")
            result = {"synthetic": True, "seed": args.seed, "generate_s": round(generate_s, 1), **bench(str(root))}
    write_result(args.out, result, prov)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
