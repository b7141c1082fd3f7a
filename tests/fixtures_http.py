"""HTTP fixtures; a test module imports the fixture functions it uses by name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from replay_server import ReplayServer


@pytest.fixture(name="replay")
def replay_fixture() -> Iterator[ReplayServer]:
    """A started replay server on 127.0.0.1; every reply a test queues must be asked for."""
    with ReplayServer() as server:
        yield server
        assert server.pending == 0, f"{server.pending} queued replies were never requested"
