"""The base of every scenario config: strict, so unknown keys are errors."""

from pydantic import BaseModel, ConfigDict


class Config(BaseModel):
    """A YAML-facing config: unknown keys are rejected, values are validated on assignment."""

    model_config = ConfigDict(extra="forbid", frozen=True)
