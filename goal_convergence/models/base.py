"""What every model shares: the base class, ids, timestamps, whole numbers and the small vocabularies."""

from __future__ import annotations

import re
import secrets
import string
from datetime import UTC, datetime
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel

TRIAGE_ID_RE = re.compile(r"^tri-[a-z0-9]{8}$")
# [0-9], not \d: \d matches any Unicode digit in Python and in pydantic's regex engine, and a
# timestamp of Arabic-Indic digits would pass the pattern and then fail to parse.
TIMESTAMP_PATTERN = (
    r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)
DURATION_PATTERN = r"^([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?$"
# A metric condition's target: a comparison and a number ("<= 0", ">= 90", "< 200").
TARGET_PATTERN = r"^\s*(<=|>=|==|<|>)\s*[-+]?[0-9]+(\.[0-9]+)?\s*$"

ConditionType = Literal["test_pass", "lint_clean", "coverage_threshold", "build_pass", "custom_command", "metric"]
StopReason = Literal[
    "converged", "unfixable", "stuck", "timeout", "ceiling", "budget-exhausted", "cancelled", "judge-error",
    "tampered", "flagged",
]
Blocker = Literal["needs_user_input", "external_wait", "run_failed"]

# Every end of a run has one stop reason, and that is the headless runner's exit code.
EXIT_CODES: dict[str, int] = {
    "converged": 0,
    "unfixable": 1,
    "stuck": 2,
    "timeout": 3,
    "ceiling": 4,
    "budget-exhausted": 5,
    "cancelled": 6,
    "judge-error": 7,
    "tampered": 8,
    "flagged": 9,
}


def _whole(value: object) -> object:
    # JSON Schema counts 3.0 as an integer (and Python's json writes floats that way); strict
    # pydantic would not. Bools stay bools, so `true` is still refused where a number belongs.
    return int(value) if type(value) is float and value.is_integer() else value


# The bounds come before the validator: bounds put on a validator's result are checked but reach the
# JSON Schema as "ge"/"le", which no validator knows (schema.py refuses to write such a schema).
_WHOLE = BeforeValidator(_whole)
Int = Annotated[int, _WHOLE]
NonNegInt = Annotated[int, Field(ge=0), _WHOLE]
PosInt = Annotated[int, Field(ge=1), _WHOLE]
SchemaVersion = Annotated[int, Field(ge=1, le=1), _WHOLE]
NonNegFloat = Annotated[float, Field(ge=0)]
Timestamp = Annotated[str, Field(pattern=TIMESTAMP_PATTERN)]

_ALPHABET = string.ascii_lowercase + string.digits


def new_id(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(8))


def now_iso(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


M = TypeVar("M", bound="Model")


class Model(BaseModel):
    """Keys are camelCase on disk and snake_case in Python. The models are the contract: strict
    mode, ``extra="forbid"`` and the bounds on each field are what a document must satisfy, and
    the JSON Schemas in ``schemas/`` are generated from them (``python -m goal_convergence.models.schema``)."""

    # str_min_length=0 changes no length rule; it makes pydantic check every string as real Unicode,
    # so a lone surrogate (an undecodable argv byte) is refused here instead of breaking a write.
    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, validate_by_alias=True, extra="forbid", strict=True,
        validate_assignment=True, allow_inf_nan=False, str_min_length=0,
    )

    @classmethod
    def from_doc(cls: type[M], doc: object) -> M:
        """Validate a document as it is on disk: camelCase keys only, exactly as the schema has them."""
        return cls.model_validate(doc, by_alias=True, by_name=False)

    def dump(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)
