"""`codemem serve --tls-cert FILE --tls-key FILE` answers HTTPS in its own process: Add and
Search with the key, `codemem search` beside it through the server it announced, and no
plain HTTP on that port."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest

from cli.main import main
from tests.conftest import add_body
from tests.https import certificate
from tests.server import Server


def test_serve_answers_https_with_its_certificate(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    files, ca = certificate(tmp_path)
    data = tmp_path / "data"
    server = Server(data, env={"CODEMEM_API_KEY": "k3y"}, scheme="https",
                    verify=ssl.create_default_context(cafile=ca),  # type: ignore[arg-type]
                    args=("--tls-cert", files.cert, "--tls-key", files.key))
    key = {"Authorization": "Bearer k3y"}
    try:
        server.start()
        with httpx.Client(base_url=server.url, verify=ssl.create_default_context(cafile=ca), timeout=60) as client:
            body = add_body("r-1", user_id="u-tls", texts=("The nightly export job fails with a UnicodeDecodeError",))
            added = client.post("/add", json=body, headers=key)
            assert added.status_code == 200 and added.json()["request_id"] == "r-1"
            assert client.post("/add", json=body).status_code == 401
            found = client.post("/search", json={"query": "export UnicodeDecodeError", "user_id": "u-tls", "top_k": 5},
                                headers=key).json()["data"]
            assert any("UnicodeDecodeError" in hit["content"] for hit in found)
        with pytest.raises(httpx.HTTPError):  # the port speaks TLS only
            httpx.get(server.url.replace("https:", "http:") + "/health", timeout=5)

        # `codemem search` over the same data directory asks this server, over HTTPS.
        monkeypatch.setenv("CODEMEM_API_KEY", "k3y")
        capsys.readouterr()
        assert main(["search", "--data-dir", str(data), "--user-id", "u-tls", "nightly export"]) == 0
        out = capsys.readouterr()
        assert "UnicodeDecodeError" in out.out and "searching" not in out.err
    finally:
        assert server.stop() == 0
    assert "codemem serving on https://" in server.log()
