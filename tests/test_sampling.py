"""Sampling one token from logits: greedy, by temperature, by nucleus."""

from __future__ import annotations

import numpy as np
import pytest

from localagent.backends.decoding import Sampling, sample_token


@pytest.mark.parametrize("temperature", [2.2250738585072014e-308, 1e-300, 1e-9])
def test_a_tiny_temperature_samples_the_likeliest_token(temperature: float) -> None:
    logits = np.array([1.0, 3.0, 2.0, -np.inf], dtype=np.float32)
    rng = np.random.default_rng(0)
    assert {sample_token(logits, Sampling(temperature=temperature), rng) for _ in range(20)} == {1}


def test_a_high_temperature_samples_every_allowed_token_and_never_a_masked_one() -> None:
    logits = np.array([1.0, 3.0, 2.0, -np.inf], dtype=np.float32)
    rng = np.random.default_rng(0)
    assert {sample_token(logits, Sampling(temperature=5.0), rng) for _ in range(200)} == {0, 1, 2}
