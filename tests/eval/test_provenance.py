"""Every result file says how it was made; the shared-data path is defined once; a test
that needs the shared data fails under CI=true when it is missing. Fast: no server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eval._paths import REPO_ROOT, SHARED_DATA
from eval._provenance import PROVENANCE_KEYS, command_line, finish, header, provenance, write_result
from tests.shared_data import require

EVAL = REPO_ROOT / "eval"


def test_provenance_names_command_date_commit_and_machine() -> None:
    prov = finish(provenance("eval.replay", ["--smoke", "--out", "a b"]))
    assert set(PROVENANCE_KEYS) <= set(prov) and "_t0" not in prov
    assert prov["command"] == "python -m eval.replay --smoke --out 'a b'"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", prov["date_utc"])
    assert prov["git_head"] is None or re.fullmatch(r"[0-9a-f]{40}", prov["git_head"])
    m = prov["machine"]
    assert m["cpu_count"] >= 1 and m["platform"] and m["processor"] and m["python"]
    assert len(m["loadavg_at_start"]) == len(m["loadavg_at_end"]) == 3
    assert isinstance(prov["wall_s"], float)
    assert header(prov).startswith(prov["date_utc"])
    assert command_line("eval/experience_stats.py", []) == "python eval/experience_stats.py"


def test_every_eval_command_writes_its_result_through_write_result() -> None:
    benchmarks = [p for pkg in ("replay", "load", "quality") for p in sorted((EVAL / pkg).glob("*.py"))]
    assert [p.name for p in EVAL.glob("*.py") if '"--out"' in p.read_text()] == ["render.py"]  # writes a page
    writers = [p for p in benchmarks if '"--out"' in p.read_text()]
    assert {p.stem for p in writers} >= {"run", "latency", "sustained", "fragments", "ingest", "memoryarena",
                                         "ceiling", "experience_stats", "git_ingest", "locomo", "past_fixes",
                                         "restart", "staleness", "ui_latency",
                                         "cli_latency"}
    for path in writers:
        text = path.read_text()
        assert "provenance(" in text and "write_result(" in text, f"{path.name} writes a result without provenance"
        assert ".write_text(json" not in text, f"{path.name} writes JSON by hand"


def test_write_result_puts_provenance_first_and_the_report_beside_it(tmp_path: Path) -> None:
    prov = provenance("eval.load.latency", ["--out", "x"])
    result: dict[str, object] = {"figure": 1.5, "provenance": "placeholder"}
    out = write_result(tmp_path / "sub" / "r.json", result, prov,
                       markdown=lambda r: f"{r['figure']} at {r['provenance']['git_head']}\n")
    written = json.loads(out.read_text())
    assert list(written) == ["provenance", "figure"] and written["figure"] == 1.5
    assert set(PROVENANCE_KEYS) <= set(written["provenance"]) and "_t0" not in written["provenance"]
    assert result["provenance"] == written["provenance"]
    assert (tmp_path / "sub" / "r.md").read_text() == f"1.5 at {written['provenance']['git_head']}\n"


def test_the_shared_data_path_is_defined_once() -> None:
    # Code that builds the path, not prose that names it.
    pattern = re.compile(r"""["']shared["']\s*/\s*["']data|Path\(["'][^"']*/shared/data|/\s*["']swe-contextbench-lite["']""")
    sources = [p for d in ("eval", "tests", "codemem", "api", "integrations", "parsers")
               for p in (REPO_ROOT / d).rglob("*.py") if p.name not in ("_paths.py", Path(__file__).name)]
    assert [str(p.relative_to(REPO_ROOT)) for p in sources if pattern.search(p.read_text())] == []
    assert "swe-contextbench-lite" in (EVAL / "_paths.py").read_text()
    assert SHARED_DATA.name == "data"


def test_missing_shared_data_skips_locally_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-data"
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="shared data not found"):
        require(missing)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true and shared data not found"):
        require(missing)
    assert require(tmp_path) == tmp_path
