"""The operator's commands of docs/deploy.md, run as written: deploy/backup.sh and restore.sh
around a real `codemem serve` (a stand-in `systemctl` stops and starts it), certbot's deploy
hook, the units (`systemd-analyze verify`) and the Caddyfile without a domain."""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import httpx
import pytest

from cli.subcommands import SERVICE_DATA_DIR
from codemem.config import Settings
from codemem.contract.types import AddRequest, Message
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory
from eval._caddy import caddy_binary
from tests.server import free_port
from tests.shared_data import in_ci

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ROOT = DEPLOY.parent

# `systemctl stop|start|restart codemem`, as the scripts call it: records each call and runs
# the real server on the state directory's data (stop: SIGTERM, and wait for it to end).
SYSTEMCTL = """#!/bin/sh
echo "$*" >> "$FAKE_SYSTEMD/calls"
case "$1" in
  stop|restart)
    if [ -f "$FAKE_SYSTEMD/pid" ]; then
      pid=$(cat "$FAKE_SYSTEMD/pid"); kill "$pid" 2>/dev/null
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done; rm -f "$FAKE_SYSTEMD/pid"
    fi ;;
esac
case "$1" in
  start|restart)
    if [ -n "$FAKE_SERVE_PORT" ]; then
      cd "$FAKE_ROOT" && nohup "$FAKE_PYTHON" -m cli serve --port "$FAKE_SERVE_PORT" \\
        --data-dir "$CODEMEM_STATE_DIR/data" >> "$FAKE_SYSTEMD/serve.log" 2>&1 &
      echo $! > "$FAKE_SYSTEMD/pid"
    fi ;;
esac
"""


def _systemd(tmp_path: Path, serve_port: int | None = None) -> dict[str, str]:
    fake = tmp_path / "systemd"
    (fake / "bin").mkdir(parents=True)
    (fake / "bin" / "systemctl").write_text(SYSTEMCTL)
    (fake / "bin" / "systemctl").chmod(0o755)
    return {**os.environ, "PATH": f"{fake / 'bin'}:{os.environ['PATH']}", "FAKE_SYSTEMD": str(fake),
            "FAKE_ROOT": str(ROOT), "FAKE_PYTHON": sys.executable, "FAKE_SERVE_PORT": str(serve_port or ""),
            "CODEMEM_COMPACT_INTERVAL_S": "0"}


def _calls(env: dict[str, str]) -> list[str]:
    path = Path(env["FAKE_SYSTEMD"]) / "calls"
    return path.read_text().splitlines() if path.exists() else []


def _store(data: Path, embedder: ShippedEmbedder, session: str, text: str) -> None:
    with Memory(Settings().replace({"storage.data_dir": str(data), "maintenance.interval_s": 0}),
                embedder=embedder) as memory:
        memory.add(AddRequest(f"r-{session}", "ops", session, [Message("user", text)]))


def _found(url: str) -> set[str]:
    hits = httpx.post(url + "/search", json={"user_id": "ops", "query": "vendored zlib checksum", "top_k": 10},
                      timeout=120).json()["data"]
    return {hit["session_id"] for hit in hits}


def _me() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def test_backup_is_private_and_restore_brings_a_working_service_back(tmp_path: Path, embedder: ShippedEmbedder) -> None:
    state, backups = tmp_path / "state", tmp_path / "backups"
    _store(state / "data", embedder, "before", "The vendored zlib fails its checksum test on big-endian builds")
    port = free_port()
    env = _systemd(tmp_path, port) | {"CODEMEM_STATE_DIR": str(state), "CODEMEM_BACKUP_DIR": str(backups),
                                      "CODEMEM_USER": _me(), "CODEMEM_HEALTH_URL": f"http://127.0.0.1:{port}/health"}

    # The backup's stop and start, with no server to run: the test writes the store itself below.
    backup = subprocess.run([DEPLOY / "backup.sh"], env=env | {"FAKE_SERVE_PORT": ""}, capture_output=True, text=True,
                            timeout=120)
    assert backup.returncode == 0, backup.stderr
    (archive,) = backups.glob("codemem-*.tar.gz")
    assert stat.S_IMODE(backups.stat().st_mode) == 0o700 and stat.S_IMODE(archive.stat().st_mode) == 0o600
    assert f"backup: {archive}" in backup.stdout
    assert _calls(env) == ["stop codemem", "start codemem"]  # stopped for a consistent copy, started again

    try:
        # Written after the backup: the restore takes the memory back to the archive's.
        _store(state / "data", embedder, "after", "A second vendored zlib checksum failure, on arm64")
        restore = subprocess.run([DEPLOY / "restore.sh", str(archive)], env=env, capture_output=True, text=True,
                                 timeout=180)
        assert restore.returncode == 0, restore.stdout + restore.stderr
        assert "answers at" in restore.stdout
        assert _found(f"http://127.0.0.1:{port}") == {"before"}
        (aside,) = state.glob("data.before-restore-*")  # what it replaced is kept
        assert all(path.stat().st_uid == os.geteuid() for path in (state / "data").rglob("*"))
        assert aside.is_dir()
    finally:
        subprocess.run(["systemctl", "stop", "codemem"], env=env, timeout=60)

    refused = subprocess.run([DEPLOY / "restore.sh", str(tmp_path / "nothing.tar.gz")], env=env,
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "usage" in refused.stderr


def test_a_backup_without_a_data_directory_stops_nothing(tmp_path: Path) -> None:
    env = _systemd(tmp_path) | {"CODEMEM_STATE_DIR": str(tmp_path / "empty"), "CODEMEM_BACKUP_DIR": str(tmp_path / "b")}
    done = subprocess.run([DEPLOY / "backup.sh"], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "no data directory" in done.stderr and _calls(env) == []


def test_the_certbot_hook_hands_the_service_a_key_it_alone_can_read(tmp_path: Path) -> None:
    live, tls = tmp_path / "live", tmp_path / "etc-codemem"
    live.mkdir()
    tls.mkdir()
    (live / "privkey.pem").write_text("KEY")
    (live / "fullchain.pem").write_text("CHAIN")
    (live / "privkey.pem").chmod(0o600)
    group = grp.getgrgid(os.getegid()).gr_name
    env = _systemd(tmp_path) | {"RENEWED_LINEAGE": str(live), "CODEMEM_TLS_DIR": str(tls), "CODEMEM_GROUP": group}
    done = subprocess.run([DEPLOY / "certbot-deploy-hook.sh"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    key, chain = tls / "privkey.pem", tls / "fullchain.pem"
    assert key.read_text() == "KEY" and chain.read_text() == "CHAIN"
    assert stat.S_IMODE(key.stat().st_mode) == 0o640 and key.stat().st_gid == os.getegid()
    assert stat.S_IMODE(chain.stat().st_mode) == 0o644
    assert _calls(env) == ["restart codemem"]  # codemem reads its certificate at start-up
    assert sorted(p.name for p in tls.iterdir()) == ["fullchain.pem", "privkey.pem"]


def test_the_units_verify_and_agree_on_the_data_directory() -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        msg = "no systemd-analyze (apt-get install systemd)"
        if in_ci():
            pytest.fail(f"CI=true and {msg}", pytrace=False)
        pytest.skip(msg)
    units = [DEPLOY / "codemem.service", DEPLOY / "codemem-purge.service", DEPLOY / "codemem-purge.timer"]
    verified = subprocess.run([analyze, "verify", *map(str, units)], capture_output=True, text=True)
    # /opt/codemem is not installed here: that one complaint is expected, nothing else.
    problems = [line for line in verified.stderr.splitlines()
                if line.strip() and "/opt/codemem/.venv/bin/codemem" not in line and "codemem.service" not in line]
    assert problems == [], verified.stderr
    for unit in units[:2]:
        assert SERVICE_DATA_DIR in unit.read_text()
    assert "OnCalendar=daily" in units[2].read_text()


def test_caddy_serves_a_name_that_says_so_without_a_domain_and_never_takes_codemem_down() -> None:
    """A missing CODEMEM_DOMAIN must not quietly serve localhost: Caddy's errors name it. With
    one upstream, no health check may mark codemem down (a slow /health under load did: 503s)."""
    caddy = caddy_binary()
    if caddy is None:
        msg = "no caddy on the PATH (apt-get install caddy)"
        if in_ci():
            pytest.fail(f"CI=true and {msg}", pytrace=False)
        pytest.skip(msg)
    env = {k: v for k, v in os.environ.items() if k != "CODEMEM_DOMAIN"}
    adapted = subprocess.run([caddy, "adapt", "--config", str(DEPLOY / "Caddyfile"), "--adapter", "caddyfile"],
                             env=env, capture_output=True, text=True, check=True)
    routes = json.loads(adapted.stdout)["apps"]["http"]["servers"]["srv0"]["routes"]
    assert routes[0]["match"] == [{"host": ["codemem-domain-not-set.invalid"]}]
    proxies = [h for h in _handlers(routes) if h.get("handler") == "reverse_proxy"]
    assert len(proxies) == 1 and len(proxies[0]["upstreams"]) == 1
    assert "health_checks" not in proxies[0]


def _handlers(routes: list[dict[str, object]]) -> list[dict[str, object]]:
    """Every handler in Caddy's adapted routes, subroutes included."""
    found: list[dict[str, object]] = []
    for route in routes:
        for handler in route.get("handle", []):  # type: ignore[attr-defined]
            found.append(handler)
            found += _handlers(handler.get("routes", []))
    return found


def test_the_archive_holds_the_data_directory_alone(tmp_path: Path, embedder: ShippedEmbedder) -> None:
    state = tmp_path / "state"
    _store(state / "data", embedder, "only", "The vendored zlib checksum")
    (state / "cache").mkdir()  # the service's ONNX cache: not memory, not backed up
    env = _systemd(tmp_path) | {"CODEMEM_STATE_DIR": str(state), "CODEMEM_BACKUP_DIR": str(tmp_path / "b")}
    subprocess.run([DEPLOY / "backup.sh"], env=env, check=True, capture_output=True)
    (archive,) = (tmp_path / "b").glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        assert {name.split("/")[0] for name in tar.getnames()} == {"data"}
