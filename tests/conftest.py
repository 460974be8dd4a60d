"""Shared test helpers: where the copied real fixtures live."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
MS_SWIFT = FIXTURES / "ms-swift"
TRL = FIXTURES / "trl"


@pytest.fixture
def ms_swift_fixtures() -> Path:
    return MS_SWIFT
