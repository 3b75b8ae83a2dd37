"""The base of every scenario config: strict, so unknown keys are errors, and every number finite."""

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

# The longest duration any model may produce or imply (about 32 years): times stay
# far from float overflow through loads, slowdowns and sums over iterations.
MAX_SECONDS = 1e9

Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS)]


class Config(BaseModel):
    """A YAML-facing config: unknown keys and non-finite numbers (inf, nan) are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def internal(default: Any) -> Any:
    """A field a class fixes for its own rules (the asynchronous policies' ``distinct``), not a parameter for users:
    listings (`gcbench policies`) leave it out. It still validates and is recorded with the scenario, so a stored
    run's scenario reads back as it was written."""
    return Field(default, json_schema_extra={"internal": True})


def is_internal(field: FieldInfo) -> bool:
    """Whether the field was declared with ``internal``."""
    extra = field.json_schema_extra
    return isinstance(extra, dict) and extra.get("internal") is True
