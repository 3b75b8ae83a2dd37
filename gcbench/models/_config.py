"""The base of every scenario config: strict, so unknown keys are errors, and every number finite."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# The longest duration any model may produce or imply (about 32 years): times stay
# far from float overflow through loads, slowdowns and sums over iterations.
MAX_SECONDS = 1e9

Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS)]


class Config(BaseModel):
    """A YAML-facing config: unknown keys and non-finite numbers (inf, nan) are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
