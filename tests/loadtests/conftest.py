"""Fixtures of the load-test tests: a load-test fixture file's bytes (`read`) and its JSON
(`load`)."""

import json

import pytest


@pytest.fixture
def read(fixtures_dir):
    def read(name: str) -> bytes:
        return (fixtures_dir / "loadtests" / name).read_bytes()

    return read


@pytest.fixture
def load(read):
    def load(name: str):
        return json.loads(read(name))

    return load
