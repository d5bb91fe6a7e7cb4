"""Pydantic wire models, one module per method family."""

from pydantic import BaseModel, ConfigDict


class Params(BaseModel):
    """Base of every method's params: unknown keys are `invalid_params`, never ignored, and values are not
    coerced (strict: "5" is not an int, 1 is not a bool), so what the published schema allows is what passes."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    def check(self) -> None:
        """Cross-field rules, run by the server right after validation. Raise InvalidParams naming the fields
        (a pydantic model validator could not say which fields are at fault)."""


class NoParams(Params):  # the schema of a method declared `@method(..., params=None)`
    """No params: `params` is omitted or `{}`."""


class Result(BaseModel):
    """Base of every result model. Schemas build on first use (defer_build) to keep start-up fast."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
