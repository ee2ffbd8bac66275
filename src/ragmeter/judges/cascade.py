"""An escalating judge (Trust or Escalate, Jung et al., ICLR 2025): a cheap judge answers the calibrated metric
when its verdict's confidence reaches the calibrated threshold; the strong judge answers the rest.

Confidence is the verdict tokens' probability (ragmeter.judges.confidence), so the cheap client asks for
log-probabilities. A cheap judgment that failed, or whose server sent no log-probabilities, has confidence 0
and escalates (as it counted in calibration: answered only by a threshold of 0). Judge metrics other than the
calibrated one, and everything that is not a scored judgment (nugget assignment), go to the cheap judge. Every
value says who made it: details["judged_by"] ("cheap" or "strong") and details["judge_model"].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.models import MetricResult

STRONG_ROLE = "judge_strong"  # the usage role of the strong judge's calls (the cheap one's is "judge")


class Cascade:
    """`cheap` and `strong` LLM clients, the calibrated `metric` and its `threshold` (None: all escalate)."""

    def __init__(self, cheap: Any, strong: Any, *, metric: str, threshold: float | None) -> None:
        self.cheap = cheap
        self.strong = strong
        self.metric = metric
        self.threshold = threshold
        _ask_logprobs(cheap)

    def __getattr__(self, name: str) -> Any:  # anything else (complete, model, usage) is the cheap judge's
        return getattr(self.cheap, name)

    def metered(self, wrap: Any) -> Cascade:
        """The same cascade over clients wrapped by `wrap(client, role)` (ragmeter.llm.meter.MeteredLLM)."""
        strong = wrap(self.strong, STRONG_ROLE, spend_role="judge")  # under the judge's spend cap too
        return Cascade(wrap(self.cheap, "judge"), strong, metric=self.metric, threshold=self.threshold)

    async def judge(self, names: Sequence[str], *, llm: Any = None, **inputs: Any) -> dict[str, MetricResult]:
        """The judges `names` on one query (`inputs`: run_judges' keywords; `llm`, this cascade, is ignored)."""
        from ragmeter.judges import run_judges

        out = await run_judges(list(names), llm=self.cheap, **inputs)
        for name in out:
            if name != self.metric:
                out[name] = _tag(out[name], "cheap", self.cheap)
        first = out.get(self.metric)
        if first is None:
            return out
        confidence = first.details.get("confidence") if first.value is not None else None
        conf = float(confidence) if isinstance(confidence, int | float) else 0.0
        if first.value is not None and self.threshold is not None and conf >= self.threshold:
            out[self.metric] = _tag(first, "cheap", self.cheap)
            return out
        strong = (await run_judges([self.metric], llm=self.strong, **inputs))[self.metric]
        extra = {"cheap_confidence": conf, "cheap_value": first.value}
        out[self.metric] = _tag(strong, "strong", self.strong, extra)
        return out


def _tag(result: MetricResult, who: str, client: Any, extra: dict[str, Any] | None = None) -> MetricResult:
    details = {
        **result.details,
        **(extra or {}),
        "judged_by": who,
        "judge_model": str(getattr(client, "model", "")),
    }
    return result.model_copy(update={"details": details})


def _ask_logprobs(client: Any) -> None:
    from ragmeter.llm.meter import MeteredLLM

    inner = client._client if isinstance(client, MeteredLLM) else client
    inner.logprobs = True
