"""Crash failures: a crashed worker sends nothing until it recovers (or never).

A worker alive at the start of an iteration crashes during it with
``probability`` (per iteration) or, with ``rate``, at an exponential time (per
second of computing); it is down for ``downtime`` seconds from the iteration's
start, or for good when ``downtime`` is null.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from gcbench.models._config import Config, Seconds


class NoFailures(Config):
    model: Literal["none"] = "none"

    def crashes(self, rng: np.random.Generator, busy: np.ndarray) -> np.ndarray:
        return np.zeros(busy.shape, dtype=bool)


class CrashFailures(Config):
    model: Literal["crash"]
    probability: Annotated[float, Field(ge=0, le=1)] | None = None
    rate: Annotated[float, Field(ge=0)] | None = None
    downtime: Seconds | None = None

    @model_validator(mode="after")
    def _one_of_probability_and_rate(self) -> CrashFailures:
        if (self.probability is None) == (self.rate is None):
            raise ValueError("give exactly one of probability (per iteration) and rate (per second)")
        return self

    def crashes(self, rng: np.random.Generator, busy: np.ndarray) -> np.ndarray:
        """Which workers crash this iteration, given how long each would be busy."""
        u = rng.random(busy.shape)
        if self.probability is not None:
            return u < self.probability
        return u < -np.expm1(-self.rate * busy)


Failures = Annotated[NoFailures | CrashFailures, Field(discriminator="model")]
