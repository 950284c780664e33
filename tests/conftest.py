from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from codemem.config import Settings
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory
from tests.shared_data import SWE_LITE_TAR, require

# Tests never write into the user's own data or cache directories (every command's default
# data directory, the cached ONNX query encoder); child processes inherit these.
_HOME = tempfile.mkdtemp(prefix="codemem-tests-")
os.environ["XDG_DATA_HOME"] = os.path.join(_HOME, "data")
os.environ["XDG_CACHE_HOME"] = os.path.join(_HOME, "cache")


@pytest.fixture(scope="session")
def swe_lite_tar() -> Path:
    """The SWE-ContextBench Lite trajectories; skip, or fail under CI=true, when missing."""
    return require(SWE_LITE_TAR)


# Mark a test (or a module, as `pytestmark`) that reads the shared trajectories.
needs_swe_lite = pytest.mark.usefixtures("swe_lite_tar")


@pytest.fixture(scope="session")
def embedder() -> ShippedEmbedder:
    """The real packaged model, loaded once per test session."""
    e = ShippedEmbedder()
    e.warm()
    return e


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings().replace({"storage.data_dir": str(tmp_path / "data"), "maintenance.interval_s": 0})


@pytest.fixture
def memory(settings: Settings, embedder: ShippedEmbedder) -> Iterator[Memory]:
    m = Memory(settings, embedder=embedder)
    yield m
    m.close()


def make_client(settings: Settings, memory: Memory) -> TestClient:
    return TestClient(create_app(settings, memory=memory))


@pytest.fixture
def client(settings: Settings, memory: Memory) -> Iterator[TestClient]:
    with make_client(settings, memory) as c:
        yield c


@pytest.fixture
def keyed_client(settings: Settings, memory: Memory) -> Iterator[TestClient]:
    with make_client(settings.replace({"server.api_key": "s3cret-key"}), memory) as c:
        yield c


def add_body(request_id: str, user_id: str = "u1", session_id: str = "s1", texts: tuple[str, ...] = ("hello",)) -> dict:
    return {
        "request_id": request_id,
        "user_id": user_id,
        "session_id": session_id,
        "messages": [
            {"role": "user" if i % 2 == 0 else "assistant", "content": t, "timestamp": 1704067200000 + i}
            for i, t in enumerate(texts)
        ],
    }
