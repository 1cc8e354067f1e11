"""Deterministic agent traffic for the cassette benchmarks: OpenAI chat-completions exchanges.

Each conversation is `TURNS_PER_CONVERSATION` requests long. Every request carries the system
prompt, the five tool schemas and the whole history so far, so bodies grow turn by turn (about
5 KiB on the first turn, about 12 KiB on the last); each turn the model calls a tool, and on the
last turn it answers. Traffic of size N is the first N/10 conversations, so the mix of body sizes
is the same at every N and a per-request time can be compared across sizes.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from typing import Any, Final

TURNS_PER_CONVERSATION: Final = 10
CHAT_COMPLETIONS_PATH: Final = "/v1/chat/completions"
MODEL: Final = "gpt-4o-2024-08-06"

_WORDS: Final = (
    "agent",
    "invoice",
    "shipment",
    "customer",
    "refund",
    "ledger",
    "warehouse",
    "order",
    "status",
    "policy",
    "account",
    "balance",
    "carrier",
    "tracking",
    "parcel",
    "delay",
    "exception",
    "approval",
    "manager",
    "region",
    "quarter",
    "report",
    "forecast",
    "inventory",
    "supplier",
    "contract",
    "renewal",
    "discount",
    "escalation",
    "ticket",
    "priority",
    "audit",
    "compliance",
    "threshold",
    "currency",
    "exchange",
    "settlement",
    "reconciliation",
    "batch",
    "schedule",
    "retry",
    "timeout",
    "window",
    "backlog",
    "capacity",
    "route",
    "depot",
    "customs",
    "declaration",
    "tariff",
    "dispatch",
)


@dataclass(frozen=True, kw_only=True)
class Exchange:
    """One recorded call: the JSON request body and the JSON response body, both encoded."""

    request_json: dict[str, Any]
    response_bytes: bytes


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _paragraph(rng: random.Random, characters: int) -> str:
    parts: list[str] = []
    length = 0
    while length < characters:
        sentence = _sentence(rng, rng.randint(8, 18))
        parts.append(sentence)
        length += len(sentence) + 1
    return " ".join(parts)


def _tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": sorted(properties),
                "additionalProperties": False,
            },
        },
    }


def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


TOOLS: Final[list[dict[str, Any]]] = [
    _tool(
        "lookup_order",
        "Fetch an order with its lines, shipment events and payment state by order id.",
        {
            "order_id": _string("Order id, e.g. ORD-12345.", pattern="^ORD-[0-9]{5}$"),
            "include_events": {"type": "boolean", "description": "Add shipment events."},
        },
    ),
    _tool(
        "search_tickets",
        "Full-text search over support tickets, newest first, with optional filters.",
        {
            "query": _string("Words to search for."),
            "status": _string("Ticket status.", enum=["open", "pending", "closed"]),
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
        },
    ),
    _tool(
        "issue_refund",
        "Refund part or all of a paid order; needs a reason the customer will see.",
        {
            "order_id": _string("Order id to refund."),
            "amount": {"type": "number", "exclusiveMinimum": 0, "description": "In EUR."},
            "reason": _string("Reason shown to the customer.", maxLength=500),
        },
    ),
    _tool(
        "get_shipment_status",
        "Current carrier status and estimated delivery of a tracked parcel.",
        {
            "tracking_number": _string("Carrier tracking number."),
            "carrier": _string("Carrier code.", enum=["dhl", "ups", "fedex", "dpd", "gls"]),
        },
    ),
    _tool(
        "escalate_to_human",
        "Hand the conversation to a human agent with a summary and a priority.",
        {
            "summary": _string("What the human needs to know, in two or three sentences."),
            "priority": _string("Escalation priority.", enum=["low", "normal", "high"]),
            "queue": _string("Team queue.", enum=["billing", "logistics", "retention"]),
        },
    ),
]


def _system_prompt(rng: random.Random) -> str:
    return "You are a support agent for a logistics company. " + _paragraph(rng, 1400)


def _tool_arguments(rng: random.Random, name: str, conversation: int) -> dict[str, Any]:
    order = f"ORD-{10000 + conversation % 90000:05d}"
    if name == "lookup_order":
        return {"order_id": order, "include_events": rng.random() < 0.5}
    if name == "search_tickets":
        return {"query": _sentence(rng, 4), "status": "open", "limit": rng.randint(5, 20)}
    if name == "issue_refund":
        return {
            "order_id": order,
            "amount": round(rng.uniform(5, 300), 2),
            "reason": _sentence(rng, 10),
        }
    if name == "get_shipment_status":
        return {"tracking_number": f"1Z{rng.randrange(10**12):012d}", "carrier": "ups"}
    return {"summary": _paragraph(rng, 200), "priority": "normal", "queue": "logistics"}


def _completion(
    request_digest: str, message: dict[str, Any], finish_reason: str, prompt_chars: int
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-" + request_digest[:29],
        "object": "chat.completion",
        "created": 1_760_000_000,
        "model": MODEL,
        "system_fingerprint": "fp_bench0001",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": {
            "prompt_tokens": prompt_chars // 4,
            "completion_tokens": 40 + len(json.dumps(message)) // 4,
            "total_tokens": prompt_chars // 4 + 40 + len(json.dumps(message)) // 4,
        },
    }


def build_traffic(size: int, *, seed: int = 1234) -> list[Exchange]:
    """`size` distinct exchanges (a multiple of `TURNS_PER_CONVERSATION`), same for a seed."""
    if size <= 0 or size % TURNS_PER_CONVERSATION:
        raise ValueError(
            f"expected a positive multiple of {TURNS_PER_CONVERSATION} but got size={size!r} "
            f"(type={type(size).__name__})"
        )
    rng = random.Random(seed)
    system = {"role": "system", "content": _system_prompt(rng)}
    exchanges: list[Exchange] = []
    for conversation in range(size // TURNS_PER_CONVERSATION):
        messages: list[dict[str, Any]] = [
            system,
            {
                "role": "user",
                "content": f"Ticket T-{conversation:06d}: " + _paragraph(rng, 320),
            },
        ]
        for turn in range(TURNS_PER_CONVERSATION):
            request = {
                "model": MODEL,
                "messages": [dict(message) for message in messages],
                "tools": TOOLS,
                "tool_choice": "auto",
                "parallel_tool_calls": False,
                "temperature": 0.2,
                "max_completion_tokens": 1024,
            }
            digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode("utf-8")).hexdigest()
            prompt_chars = len(json.dumps(request))
            if turn == TURNS_PER_CONVERSATION - 1:
                answer = {"role": "assistant", "content": _paragraph(rng, 600), "refusal": None}
                response = _completion(digest, answer, "stop", prompt_chars)
            else:
                name = TOOLS[rng.randrange(len(TOOLS))]["function"]["name"]
                call_id = f"call_{digest[:24]}"
                arguments = json.dumps(_tool_arguments(rng, name, conversation))
                call = {
                    "role": "assistant",
                    "content": None,
                    "refusal": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        }
                    ],
                }
                response = _completion(digest, call, "tool_calls", prompt_chars)
                messages.append({k: v for k, v in call.items() if k != "refusal"})
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "content": json.dumps({"ok": True, "result": _paragraph(rng, 420)}),
                    }
                )
            encoded = json.dumps(response, separators=(",", ":")).encode("utf-8")
            exchanges.append(Exchange(request_json=request, response_bytes=encoded))
    return exchanges
