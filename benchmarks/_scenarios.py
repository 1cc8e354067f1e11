"""Deterministic agent scenarios for the scenario-library benchmark, in two shapes.

Both shapes cycle through the five ways an outputSchema agent finishes (index % 5): `__finish__`
in the work phase, terminal text, a reply cut off at max_tokens, running out of steps, and
forced completion exhausted. Each scenario runs on the five runtime profiles, and no two
scenarios send the same request.

- **realistic** (the default): the agent of `_traffic.py`, the traffic the cassette benchmark
  calls real: a 1.4 KiB system prompt, a 320-character ticket, the five support tools with their
  JSON schemas and ~420-character results, a four-field output schema, 3 to 6 tool calls before
  the ending (8 when it runs out of steps), answers of about 600 characters.
- **minimal**: one parameterless tool, one-sentence prompts, one or three tool calls: the
  smallest scenario that still exercises each ending, to show the runner's floor.
"""

from __future__ import annotations

import random
from typing import Any, Final, Literal

from benchmarks._traffic import TOOLS, _paragraph, _tool_arguments
from harness.runtimes.base import RUNTIME_NAMES

Shape = Literal["realistic", "minimal"]
SHAPES: Final[tuple[Shape, ...]] = ("realistic", "minimal")
RUNTIMES: Final = list(RUNTIME_NAMES)
EXHAUSTED: Final = "framework_forced_completion_exhausted"


def scenario(index: int, shape: Shape) -> dict[str, Any]:
    """Scenario `index` of a library of `shape`, as the mapping a scenario file holds."""
    return realistic_scenario(index) if shape == "realistic" else minimal_scenario(index)


# -- realistic ----------------------------------------------------------------------------------

REALISTIC_STEPS: Final = 8
OUTPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "resolution": {"type": "string", "enum": ["refunded", "shipped", "escalated", "none"]},
        "order_id": {"type": "string", "pattern": "^ORD-[0-9]{5}$"},
        "refund_amount": {"type": "number", "minimum": 0},
        "summary": {"type": "string", "maxLength": 2000},
    },
    "required": ["resolution", "order_id", "refund_amount", "summary"],
    "additionalProperties": False,
}


def realistic_scenario(index: int) -> dict[str, Any]:
    rng = random.Random(index)
    tools = [
        {
            "name": tool["function"]["name"],
            "description": tool["function"]["description"],
            "parameters": tool["function"]["parameters"],
            "result": {"ok": True, "result": _paragraph(rng, 420)},
        }
        for tool in TOOLS
    ]
    agent = {
        "system_prompt": "You are a support agent for a logistics company. "
        + _paragraph(rng, 1400),
        "user_message": f"Ticket T-{index:06d}: " + _paragraph(rng, 320),
        "output_schema": OUTPUT_SCHEMA,
        "max_steps": REALISTIC_STEPS,
        "tools": tools,
    }
    calls = [_tool_call(rng, index) for _ in range(rng.randint(3, 6))]
    finish = {
        "tool_calls": [
            {
                "name": "__finish__",
                "arguments": {
                    "resolution": "refunded",
                    "order_id": f"ORD-{10000 + index % 90000:05d}",
                    "refund_amount": round(rng.uniform(5, 300), 2),
                    "summary": _paragraph(rng, 200),
                },
            }
        ]
    }
    answer = {"text": _paragraph(rng, 600)}
    ending = index % 5
    if ending == 0:
        script, expect = [*calls, finish], {"status": "completed", "forced_calls": 0}
    elif ending == 1:
        script, expect = [*calls, answer, finish], {"status": "completed", "forced_calls": 1}
    elif ending == 2:
        cut = {**answer, "truncated": True}
        script, expect = [*calls, cut, finish], {"status": "completed", "forced_calls": 1}
    elif ending == 3:
        steps = [_tool_call(rng, index) for _ in range(REALISTIC_STEPS)]
        script, expect = [*steps, finish], {"status": "completed", "forced_calls": 1}
    else:
        prose = [answer, {"text": _paragraph(rng, 300)}, {"text": _paragraph(rng, 300)}]
        script, expect = [*calls, *prose], {"status": "failed", "error_code": EXHAUSTED}
    return _scenario(index, agent, script, expect)


def _tool_call(rng: random.Random, index: int) -> dict[str, Any]:
    name = TOOLS[rng.randrange(len(TOOLS))]["function"]["name"]
    return {"tool_calls": [{"name": name, "arguments": _tool_arguments(rng, name, index)}]}


# -- minimal ------------------------------------------------------------------------------------

MINIMAL_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "confidence": {"type": "number"}},
    "required": ["city", "confidence"],
    "additionalProperties": False,
}
MINIMAL_FINISH: Final = {
    "tool_calls": [{"name": "__finish__", "arguments": {"city": "Paris", "confidence": 0.9}}]
}


def minimal_scenario(index: int) -> dict[str, Any]:
    def search(n: int) -> dict[str, Any]:
        return {"tool_calls": [{"name": "search", "arguments": {"q": f"capital {n}"}}]}

    ending = index % 5
    script: list[dict[str, Any]]
    expect: dict[str, Any]
    if ending == 0:
        script, expect = [search(index), MINIMAL_FINISH], {"status": "completed", "forced_calls": 0}
    elif ending == 1:
        script = [search(index), {"text": f"It is Paris ({index})."}, MINIMAL_FINISH]
        expect = {"status": "completed", "forced_calls": 1}
    elif ending == 2:
        script = [search(index), {"text": f"It is Pa ({index})", "truncated": True}, MINIMAL_FINISH]
        expect = {"status": "completed", "forced_calls": 1}
    elif ending == 3:
        script = [search(index), search(index + 1), search(index + 2), MINIMAL_FINISH]
        expect = {"status": "completed", "forced_calls": 1}
    else:
        script = [{"text": f"Paris ({index})."}, {"text": "still prose"}, {"text": "again"}]
        expect = {"status": "failed", "error_code": EXHAUSTED}
    agent = {
        "system_prompt": f"You find capitals (variant {index}).",
        "user_message": f"Capital of France, case {index}?",
        "output_schema": MINIMAL_SCHEMA,
        "max_steps": 3,
        "tools": [
            {"name": "search", "description": "Search the web", "result": {"hits": ["Paris"]}}
        ],
    }
    return _scenario(index, agent, script, expect)


def _scenario(
    index: int, agent: dict[str, Any], script: list[dict[str, Any]], expect: dict[str, Any]
) -> dict[str, Any]:
    return {
        "name": f"library-{index:04d}",
        "runtimes": RUNTIMES,
        "provider": "openai",
        "script": script,
        "agent": agent,
        "expect": expect,
    }
