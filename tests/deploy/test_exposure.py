"""A reachable `serve` or `mcp --transport http` needs a key, and `serve`'s TLS files are
checked before anything starts: one line and exit 2, or the server answers."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import trustme

from cli.exposure import Refused, check_key, reachable, tls_files
from cli.main import main
from codemem.config import Server as ServerSettings
from tests.server import Server


@pytest.mark.parametrize("host, outside", [
    ("127.0.0.1", False), ("127.8.9.10", False), ("::1", False), ("[::1]", False), ("localhost", False),
    ("0.0.0.0", True), ("::", True), ("", True), ("10.1.2.3", True), ("203.0.113.7", True),
    ("memory.example.org", True),
])
def test_only_loopback_is_unreachable(host: str, outside: bool) -> None:
    assert reachable(host) is outside


@pytest.mark.parametrize("command, args", [
    ("serve", ["serve", "--host", "0.0.0.0"]),
    ("mcp --transport http", ["mcp", "--transport", "http", "--host", "0.0.0.0"]),
])
def test_a_reachable_server_without_a_key_stops_with_one_line(
        command: str, args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("CODEMEM_API_KEY", raising=False)
    monkeypatch.delenv("CODEMEM_ALLOW_OPEN", raising=False)
    assert main([*args, "--port", "1", "--data-dir", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"codemem: {command} on 0.0.0.0 without a key")
    assert "CODEMEM_API_KEY" in err and "--allow-open" in err and "CODEMEM_ALLOW_OPEN=true" in err
    assert not (tmp_path / "data").exists()  # stopped before it opened anything


def test_a_key_the_opt_out_or_loopback_lets_it_serve() -> None:
    check_key(ServerSettings(host="0.0.0.0", api_key="k"), "serve")
    check_key(ServerSettings(host="0.0.0.0", allow_open=True), "serve")
    check_key(ServerSettings(host="127.0.0.1"), "serve")
    with pytest.raises(Refused):
        check_key(ServerSettings(host="192.0.2.1", port=9000), "serve")


def test_allow_open_serves_every_address(tmp_path: Path) -> None:
    server = Server(tmp_path / "data", args=("--host", "0.0.0.0", "--allow-open"))
    try:
        server.start(wait_for_model=False)
        assert httpx.get(server.url + "/health", timeout=5).status_code == 200
    finally:
        server.kill()
    assert "auth: open" in server.log()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert = trustme.CA().issue_cert("localhost", "127.0.0.1")
    cert.cert_chain_pems[0].write_to_path(str(folder / "cert.pem"))
    cert.private_key_pem.write_to_path(str(folder / "key.pem"))
    return folder / "cert.pem", folder / "key.pem"


def test_a_good_pair_loads(pair: tuple[Path, Path]) -> None:
    files = tls_files(ServerSettings(tls_cert=str(pair[0]), tls_key=str(pair[1])))
    assert files is not None and (files.cert, files.key) == (str(pair[0]), str(pair[1]))
    assert tls_files(ServerSettings()) is None


@pytest.mark.parametrize("which, says", [
    ("missing cert", "TLS certificate {dir}/none.pem cannot be read: No such file or directory"),
    ("missing key", "TLS key {dir}/none.pem cannot be read: No such file or directory"),
    ("cert only", "--tls-cert and --tls-key (CODEMEM_TLS_CERT, CODEMEM_TLS_KEY) go together"),
    ("not pem", "do not load as a PEM certificate and its unencrypted private key"),
    ("swapped", "do not load as a PEM certificate and its unencrypted private key"),
    ("other key", "do not load as a PEM certificate and its unencrypted private key"),
    ("encrypted key", "do not load as a PEM certificate and its unencrypted private key"),
])
def test_an_unusable_pair_stops_serve_with_one_line(
        which: str, says: str, pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cert, key = str(pair[0]), str(pair[1])
    none = str(tmp_path / "none.pem")
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    other = trustme.CA().issue_cert("localhost").private_key_pem
    other.write_to_path(str(tmp_path / "other.pem"))
    encrypted = _encrypted(pair[1], tmp_path / "encrypted.pem")
    args = {"missing cert": ["--tls-cert", none, "--tls-key", key],
            "missing key": ["--tls-cert", cert, "--tls-key", none],
            "cert only": ["--tls-cert", cert],
            "not pem": ["--tls-cert", str(tmp_path / "junk.pem"), "--tls-key", key],
            "swapped": ["--tls-cert", key, "--tls-key", cert],
            "other key": ["--tls-cert", cert, "--tls-key", str(tmp_path / "other.pem")],
            "encrypted key": ["--tls-cert", cert, "--tls-key", str(encrypted)]}[which]
    assert main(["serve", "--port", "1", "--data-dir", str(tmp_path / "data"), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("codemem: ")
    assert says.format(dir=tmp_path) in err
    assert not (tmp_path / "data").exists()


def _encrypted(key: Path, out: Path) -> Path:
    from cryptography.hazmat.primitives import serialization

    private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    out.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.BestAvailableEncryption(b"secret")))
    return out
