"""What Claude Code prints in print mode (`claude -p --output-format json`), as the claude-cli oracle and the
headless maker read it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ModelUsage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    inputTokens: int = 0
    outputTokens: int = 0
    cacheReadInputTokens: int = 0
    cacheCreationInputTokens: int = 0
    costUSD: float = 0.0


class PrintResult(BaseModel):
    """What `claude -p --output-format json` prints (fields we do not read are ignored)."""

    model_config = ConfigDict(extra="ignore")
    type: Literal["result"]
    subtype: str
    is_error: bool = False
    total_cost_usd: float
    num_turns: int = 0
    session_id: str | None = None
    result: str | None = None
    structured_output: Any = None
    errors: list[Any] = Field(default_factory=list)
    modelUsage: dict[str, ModelUsage] = Field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return sum(u.inputTokens + u.outputTokens + u.cacheReadInputTokens + u.cacheCreationInputTokens
                   for u in self.modelUsage.values())

    @property
    def main_model(self) -> str | None:
        """The model that cost the most: the one doing the work (side requests use small models)."""
        return max(self.modelUsage, key=lambda m: self.modelUsage[m].costUSD, default=None)
