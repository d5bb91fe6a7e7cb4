"""Pydantic wire models, one module per method family."""

from pydantic import BaseModel, ConfigDict


class Params(BaseModel):
    """Base of every method's params: unknown keys are `invalid_params`, never ignored."""

    model_config = ConfigDict(extra="forbid")


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid")
