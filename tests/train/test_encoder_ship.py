"""The encoder's ship rule (`train.encoder.ship`) on constructed figures, and a tuned build's
wiring: every step that runs the product embeds with the build's own fine-tuned encoder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codemem.config import SHIPPED_ENCODER
from eval._paths import SHARED_DATA as SHARED
from train.encoder.ship import decide, paired
from train.pipeline import Step, execute, plan
from train.provenance import tree_state
from train.steps import ENCODERS, TUNED, shipped


def _figures(all_: float, session: float, commit: float, check: float, chat_queries: int = 40) -> dict:
    return {"all": {"mrr": all_, "queries": 2415}, "session": {"mrr": session, "queries": 509},
            "commit": {"mrr": commit, "queries": 331}, "chat": {"mrr": 0.3, "queries": chat_queries},
            "check: openhands": {"mrr": check, "queries": 170}}


def test_the_tuned_encoder_ships_only_when_every_condition_holds() -> None:
    base = _figures(0.700, 0.620, 0.670, 0.600)
    assert decide(base, _figures(0.706, 0.611, 0.700, 0.591))["ships"]
    assert not decide(base, _figures(0.704, 0.620, 0.700, 0.600))["ships"]  # gains too little overall
    assert not decide(base, _figures(0.720, 0.608, 0.700, 0.600))["ships"]  # a kind of 509 loses 0.012
    assert not decide(base, _figures(0.720, 0.620, 0.700, 0.588))["ships"]  # the check loses 0.012
    # a kind of fewer than 100 queries is not a condition, whatever it loses
    few = decide(base, _figures(0.720, 0.620, 0.700, 0.600) | {"chat": {"mrr": 0.1, "queries": 40}})
    assert few["ships"] and not any(name.startswith("chat") for name in few["conditions"])


def _per_query(folder: Path, rows: list[tuple[str, bool, str, float]]) -> Path:
    folder.mkdir()
    (folder / "per_query.jsonl").write_text("".join(
        json.dumps({"repo": "r", "kind": kind, "source": "s", "trains": trains, "asked": "", "query": query,
                    "model_rr": rr}) + "\n" for kind, trains, query, rr in rows))
    return folder


def test_the_builds_are_compared_query_by_query(tmp_path: Path) -> None:
    minilm = _per_query(tmp_path / "a", [("session", True, "q1", 1.0), ("session", True, "q2", 0.5),
                                         ("commit", True, "q3", 0.25), ("session", False, "q4", 1.0)])
    tuned = _per_query(tmp_path / "b", [("session", True, "q1", 0.5), ("session", True, "q2", 1.0),
                                        ("commit", True, "q3", 1.0), ("session", False, "q4", 0.5)])
    got = paired(minilm, tuned)
    # the check is its own group, never in "all"
    assert got["all"]["queries"] == 3 and got["all"]["tuned better"] == 2 and got["all"]["minilm better"] == 1
    assert got["all"]["mrr difference [mean, 2.5%, 97.5%]"][0] == pytest.approx((-0.5 + 0.5 + 0.75) / 3, abs=1e-4)
    assert got["check: openhands"]["queries"] == 1 and got["check: openhands"]["minilm better"] == 1
    assert got["commit"]["mrr difference [mean, 2.5%, 97.5%]"] == [0.75, 0.75, 0.75]
    # the same query asked twice in one memory: both are compared, neither stands in for the other
    twice_a = _per_query(tmp_path / "d", [("session", True, "q1", 1.0), ("session", True, "q1", 0.5)])
    twice_b = _per_query(tmp_path / "e", [("session", True, "q1", 1.0), ("session", True, "q1", 1.0)])
    assert paired(twice_a, twice_b)["all"] | {"mrr difference [mean, 2.5%, 97.5%]": None} == {
        "queries": 2, "tuned better": 1, "minilm better": 0, "mrr difference [mean, 2.5%, 97.5%]": None}
    other = _per_query(tmp_path / "c", [("session", True, "q1", 1.0)])
    with pytest.raises(SystemExit, match="different queries"):
        paired(minilm, other)


def test_a_tuned_build_embeds_every_product_step_with_its_own_encoder() -> None:
    minilm = {s.name: s for s in shipped(SHARED, True, None, "minilm")}
    tuned = {s.name: s for s in shipped(SHARED, True, None, "tuned")}
    assert set(tuned) - set(minilm) == {"pairs", TUNED}
    for name, step in tuned.items():
        runs_product = "codemem" in step.code and name not in ("pairs", TUNED)
        assert (step.env_paths.get("CODEMEM_EMBEDDER") == f"after:{TUNED}") is runs_product, name
        assert (TUNED in step.after) is runs_product, name
        assert name not in minilm or not minilm[name].env_paths
    # reads no vector: the same step in both builds
    assert (tuned["history"].code, tuned["history"].after, tuned["history"].env_paths) == \
        (minilm["history"].code, minilm["history"].after, {})


def test_a_variable_set_to_a_step_s_output_is_part_of_the_key(tmp_path: Path) -> None:
    first = Step("first", "train.noop", lambda path: [], code=())
    plain = Step("second", "train.noop", lambda path: [], code=(), after=("first",))
    reading = Step("second", "train.noop", lambda path: [], code=(), after=("first",),
                   env_paths={"CODEMEM_EMBEDDER": "after:first"})
    tree = tree_state()
    keys = [plan([first, s], tmp_path, tmp_path, tree)[1].key for s in (plain, reading)]
    assert None not in keys and keys[0] != keys[1]


def test_a_step_runs_with_the_variable_set_to_the_output_it_names(tmp_path: Path, monkeypatch) -> None:
    """What the key says is what the process gets: the encoder step's own folder."""
    monkeypatch.delenv("CODEMEM_EMBEDDER", raising=False)
    first = Step("first", "tests.train.env_step", lambda path: ["--out", path("out")], code=())
    second = Step("second", "tests.train.env_step", lambda path: ["--out", path("out")], code=(), after=("first",),
                  env_paths={"CODEMEM_EMBEDDER": "after:first"})
    outputs = execute(plan([first, second], tmp_path, tmp_path, tree_state()), tmp_path, tmp_path, install=False)
    assert (outputs["second"] / "encoder.txt").read_text() == str(outputs["first"])
    assert (outputs["first"] / "encoder.txt").read_text() == ""


def test_a_build_on_an_encoder_that_does_not_ship_installs_nothing(tmp_path: Path, capsys) -> None:
    """Its models read another encoder's vectors than the service's: it is for comparison only."""
    from train.__main__ import REFUSED
    from train.__main__ import main as make_train

    cache = tmp_path / "cache"
    other = next(e for e in ENCODERS if e != SHIPPED_ENCODER)  # whichever ships, the other one
    assert make_train(["--cache", str(cache), "--allow-dirty", "--encoder", other]) == REFUSED
    assert "give --no-install" in capsys.readouterr().out and not cache.exists()


def test_only_the_shipped_encoder_is_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The package holds the encoder the service embeds with, and not the other (an encoder is
    90 MB of the installed service)."""
    import train.steps

    def installs(root: Path | None) -> dict[str, bool]:
        steps = {s.name: s for s in shipped(SHARED, True, root, train.steps.SHIPPED_ENCODER)}
        return {name: steps[name].install is not None for name in ("encoder", TUNED) if name in steps}

    monkeypatch.setattr(train.steps, "SHIPPED_ENCODER", "tuned")
    assert installs(tmp_path) == {"encoder": False, TUNED: True}
    monkeypatch.setattr(train.steps, "SHIPPED_ENCODER", "minilm")
    assert installs(tmp_path) == {"encoder": True}
    assert installs(None) == {"encoder": False}


def test_the_dev_guard_stops_only_a_loss_its_interval_puts_below_zero() -> None:
    from train.encoder.dev_guard import compared, past_fix_ranks

    minilm = {f"t{i}": 1.0 for i in range(30)}
    assert compared(minilm, {k: 0.5 for k in minilm})["a loss (interval below 0)"]  # every query worse
    mixed = {k: (0.5 if i % 2 else 1.0) for i, k in enumerate(minilm)} | {"t0": 1.0}
    assert not compared({k: 0.75 for k in minilm}, mixed)["a loss (interval below 0)"]  # as often better as worse
    assert compared(minilm, minilm)["difference [mean, 2.5%, 97.5%]"] == [0.0, 0.0, 0.0]
    with pytest.raises(SystemExit, match="different queries"):
        compared(minilm, {"t0": 1.0})
    with pytest.raises(SystemExit, match="not complete"):
        past_fix_ranks({"complete": False, "per_task": []})
    assert past_fix_ranks({"complete": True, "per_task": [{"instance_id": "a", "codemem_rank": 4},
                                                          {"instance_id": "b", "codemem_rank": None}]}) == {"a": 0.25, "b": 0.0}
