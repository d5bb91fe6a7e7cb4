"""Pydantic wire models, one module per method family."""

from pydantic import BaseModel, ConfigDict


class Params(BaseModel):
    """Base of every method's params: unknown keys are `invalid_params`, never ignored."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class Result(BaseModel):
    """Base of every result model. Schemas build on first use (defer_build) to keep start-up fast."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
