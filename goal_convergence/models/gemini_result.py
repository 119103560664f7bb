"""What Gemini CLI prints in headless mode (`gemini -p --output-format json`), as the headless maker reads it:
the session's id, its last answer, and each model's tokens (checked against Gemini CLI 0.61.0)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class GeminiTokens(BaseModel):
    """A model's tokens over the session: ``prompt`` is the prompts' total, ``cached`` its cached part."""

    model_config = ConfigDict(extra="ignore")
    prompt: int = 0
    candidates: int = 0
    cached: int = 0
    thoughts: int = 0
    tool: int = 0
    total: int = 0


class GeminiModelStats(BaseModel):
    model_config = ConfigDict(extra="ignore")
    tokens: GeminiTokens = Field(default_factory=GeminiTokens)


class GeminiStats(BaseModel):
    model_config = ConfigDict(extra="ignore")
    models: dict[str, GeminiModelStats] = Field(default_factory=dict)


class GeminiResult(BaseModel):
    """What `gemini -p --output-format json` prints: on success a response, on failure an error (fields we do not
    read are ignored)."""

    model_config = ConfigDict(extra="ignore")
    session_id: str | None = None
    response: str | None = None
    stats: GeminiStats = Field(default_factory=GeminiStats)
    error: dict[str, Any] | None = None

    @classmethod
    def from_output(cls, stdout: bytes, stderr: str) -> GeminiResult:
        """The result from what `gemini -p` printed: on stdout, or, when a session failed, on stderr after the
        error's trace. Raises pydantic's ValidationError when neither holds one."""
        at = stderr.rfind('{\n  "session_id"')
        return cls.model_validate_json(stdout.strip() or (stderr[at:].encode() if at >= 0 else b"{}"))

    @property
    def calls(self) -> dict[str, tuple[int, int, int, int, int]]:
        """Each model's tokens: (prompt, cached, output, thoughts, tool), as cost.gemini_counts takes them."""
        return {m: (s.tokens.prompt, s.tokens.cached, s.tokens.candidates, s.tokens.thoughts, s.tokens.tool)
                for m, s in self.stats.models.items()}

    @property
    def main_model(self) -> str | None:
        """The model that used the most tokens: the one doing the work (side requests use small models)."""
        models = self.stats.models
        return max(models, key=lambda m: models[m].tokens.total, default=None)
