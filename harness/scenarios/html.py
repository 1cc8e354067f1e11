"""The HTML report: one self-contained file (styles and script inlined, nothing fetched) with
the summary, filters, and each cell's mismatch lines, source link and timeline.

`harness run --html` and the pytest plugin's `--harness-html` both write it with `write_html`
from `CellView`s, which travel as JSON (from a pytest-xdist worker to the controller). Every
text is redacted (`harness.scrub`) before it is rendered, and the page is redacted
again as a whole, as every other report is.
"""

from __future__ import annotations

import difflib
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

import jinja2

from harness.files import write_atomically
from harness.llm.models import (
    AssistantMessage,
    LlmRequest,
    Message,
    NamedToolChoice,
    ReasoningDisabled,
    ReasoningEffort,
    ToolResultMessage,
)
from harness.protocol._base import WireModel
from harness.scenarios.detail import CallDetail, CellDetail
from harness.scenarios.report import ScenarioPaths, failure_lines, skip_lines
from harness.scenarios.run import CellResult
from harness.scrub import redact, redact_json, secrets_sent

CellStatus = Literal["passed", "failed", "error", "skipped"]
TEMPLATE: Final = "report.html.j2"


class CellView(WireModel):
    """One cell as the HTML report shows it; built from a `CellResult` by `cell_view`."""

    id: str
    scenario: str
    description: str = ""
    kind: str
    file: str
    line: int
    runtime: str
    store: str
    engine: str = "simulated"
    tags: tuple[str, ...] = ()
    status: CellStatus
    duration_seconds: float = 0.0
    failure_lines: tuple[str, ...] = ()
    skip_lines: tuple[str, ...] = ()
    detail: CellDetail | None = None


def cell_view(result: CellResult, *, paths: ScenarioPaths | None = None) -> CellView:
    """What the report shows of `result`: its failure and skip lines as the terminal prints
    them (redacted, files named by `paths`), and its run detail when one was collected."""
    loaded = result.cell.loaded
    status: CellStatus = (
        "passed"
        if result.passed
        else "skipped"
        if result.skipped is not None
        else "error"
        if result.error is not None
        else "failed"
    )
    return CellView(
        id=result.cell.id,
        scenario=loaded.scenario.name,
        description=loaded.scenario.description,
        kind=loaded.scenario.kind,
        file=str(loaded.path),
        line=loaded.line,
        runtime=result.cell.runtime,
        store=result.cell.store,
        engine=result.engine,
        tags=tuple(loaded.scenario.tags),
        status=status,
        duration_seconds=round(result.duration, 6),
        failure_lines=tuple(failure_lines(result, paths=paths)),
        skip_lines=tuple(skip_lines([result], paths=paths)),
        detail=result.detail,
    )


def write_html(cells: Sequence[CellView], path: Path, *, title: str = "harness run") -> None:
    """Write the report atomically (a reader sees the previous report or this one, whole)."""
    write_atomically(path, render_html(cells, title=title).encode("utf-8"))


def render_html(cells: Sequence[CellView], *, title: str = "harness run") -> str:
    """The report page, rendered with HTML escaping on from values redacted while they are
    still JSON: the known secret shapes, the environment's secrets, and the values of
    credential members (by name), which are then also redacted wherever they appear as text."""
    page = _page(cells, title)
    named = secrets_sent((), "", json.dumps(page).encode("utf-8"))
    return redact(_template().render(redact_json(page, secrets=named)), secrets=named)


def _json_filter(value: Any, indent: int | None = 2) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False)


_ENVIRONMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("harness.scenarios", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENVIRONMENT.filters["json"] = _json_filter


def _template() -> jinja2.Template:
    return _ENVIRONMENT.get_template(TEMPLATE)


# -- the page ---------------------------------------------------------------------------------------


def _page(cells: Sequence[CellView], title: str) -> dict[str, Any]:
    statuses = [cell.status for cell in cells]
    return {
        "title": title,
        "summary": {
            "cells": len(cells),
            "passed": statuses.count("passed"),
            "failed": statuses.count("failed") + statuses.count("error"),
            "skipped": statuses.count("skipped"),
            "errors": statuses.count("error"),
        },
        "runtimes": sorted({cell.runtime for cell in cells}),
        "stores": sorted({cell.store for cell in cells}),
        "tags": sorted({tag for cell in cells for tag in cell.tags}),
        "cells": [_cell(cell) for cell in cells],
    }


def _cell(cell: CellView) -> dict[str, Any]:
    detail = cell.detail
    return {
        "id": cell.id,
        "scenario": cell.scenario,
        "description": cell.description,
        "kind": cell.kind,
        "source": f"{cell.file}:{cell.line}",
        "link": _file_link(cell.file, cell.line),
        "runtime": cell.runtime,
        "store": cell.store,
        "engine": cell.engine,
        "tags": list(cell.tags),
        "status": cell.status,
        "failing": cell.status in ("failed", "error"),
        "milliseconds": round(cell.duration_seconds * 1000),
        "failure_lines": list(cell.failure_lines),
        "skip_lines": list(cell.skip_lines),
        "detail": None if detail is None else _detail(detail),
    }


def _file_link(file: str, line: int) -> str:
    """A `file:` URL of the scenario file, with its line as the fragment (`#L12`)."""
    try:
        return f"{Path(file).resolve().as_uri()}#L{line}"
    except (OSError, ValueError):  # a path that cannot be resolved still shows as text
        return ""


def _detail(detail: CellDetail) -> dict[str, Any]:
    calls: list[dict[str, Any]] = []
    last_work: CallDetail | None = None
    for number, call in enumerate(detail.calls, start=1):
        entry = _call(number, call)
        if call.kind == "forced" and last_work is not None:
            entry["diff"] = {
                "against": _call_label(detail.calls.index(last_work) + 1, last_work),
                "rows": diff_rows(request_lines(last_work.request), request_lines(call.request)),
            }
        if call.kind == "work":
            last_work = call
        calls.append(entry)
    return {
        "status": detail.status,
        "error_code": detail.error_code,
        "calls": calls,
        "chunks": [chunk.model_dump(mode="json") for chunk in detail.chunks],
        "forced_state_reported": detail.forced_state_reported,
        "forced_state": _dumped(detail.forced_state),
        "outcome_record": _dumped(detail.outcome_record),
        "envelope": _dumped(detail.envelope),
    }


def _dumped(record: WireModel | None) -> Any:
    return None if record is None else record.model_dump(mode="json")


def _call_label(number: int, call: CallDetail) -> str:
    if call.kind == "work":
        step = "" if call.step is None else f", step {call.step}"
        return f"call {number}: work{step}"
    attempt = "" if call.attempt is None else f", attempt {call.attempt}"
    trigger = "" if call.trigger is None else f", trigger {call.trigger}"
    return f"call {number}: forced{attempt}{trigger}"


def _call(number: int, call: CallDetail) -> dict[str, Any]:
    request = call.request
    reply = call.reply
    return {
        "label": _call_label(number, call),
        "kind": call.kind,
        "step": call.step,
        "attempt": call.attempt,
        "trigger": call.trigger,
        "model": request.model,
        "fragments": [{"name": f.name, "text": f.text} for f in request.system],
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in request.tools
        ],
        "tool_choice": _tool_choice(request),
        "reasoning": _reasoning(request),
        "settings": _settings(request),
        "messages": [_message(message) for message in request.messages],
        "reply": None
        if reply is None
        else {
            "text": reply.text,
            "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls],
            "stop_reason": reply.stop_reason,
        },
        "diff": None,
    }


def _tool_choice(request: LlmRequest) -> str:
    choice = request.tool_choice
    return choice.name if isinstance(choice, NamedToolChoice) else choice


def _reasoning(request: LlmRequest) -> str:
    reasoning = request.reasoning
    if reasoning is None:
        return "not set"
    if isinstance(reasoning, ReasoningDisabled):
        return "disabled"
    assert isinstance(reasoning, ReasoningEffort)
    budget = "" if reasoning.budget_tokens is None else f" (budget {reasoning.budget_tokens})"
    return f"{reasoning.effort}{budget}"


def _settings(request: LlmRequest) -> str:
    return ", ".join(
        f"{name} {value}"
        for name, value in (
            ("model", request.model),
            ("max_tokens", request.max_tokens),
            ("temperature", request.temperature),
            ("top_p", request.top_p),
            ("response_format", None if request.response_format is None else "json schema"),
        )
        if value is not None
    )


def _message(message: Message) -> dict[str, Any]:
    metadata = dict(message.metadata)
    if isinstance(message, AssistantMessage):
        calls = "\n".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
        text = "\n".join(part for part in (message.text or "", calls) if part)
        return {"role": "assistant", "text": text, "metadata": metadata}
    if isinstance(message, ToolResultMessage):
        role = f"tool result: {message.name}" + (" (error)" if message.is_error else "")
        return {"role": role, "text": message.content, "metadata": metadata}
    return {"role": "user", "text": message.content, "metadata": metadata}


# -- the forced-vs-work diff ------------------------------------------------------------------------


def request_lines(request: LlmRequest) -> list[str]:
    """The parts of a request that forced completion trims, one line each: every system
    fragment under its name, the tools, the tool choice, the reasoning and the call settings."""
    lines: list[str] = []
    for fragment in request.system:
        lines.append(f"[fragment {fragment.name}]")
        lines.extend(fragment.text.splitlines() or [""])
    lines.append("[tools]")
    lines.extend(f"{tool.name}: {tool.description}".rstrip() for tool in request.tools)
    lines.append(f"[tool_choice] {_tool_choice(request)}")
    lines.append(f"[reasoning] {_reasoning(request)}")
    lines.append(f"[settings] {_settings(request)}")
    return lines


DiffTag = Literal["equal", "removed", "added", "changed"]
_TAGS: Final[dict[str, DiffTag]] = {
    "equal": "equal",
    "delete": "removed",
    "insert": "added",
    "replace": "changed",
}


def diff_rows(before: Sequence[str], after: Sequence[str]) -> list[dict[str, Any]]:
    """A side-by-side line diff: rows of `{tag, left, right}`, `left` from `before` and `right`
    from `after` (`None` where a side has no line); `tag` is equal, removed, added or changed."""
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    rows: list[dict[str, Any]] = []
    for opcode, i1, i2, j1, j2 in matcher.get_opcodes():
        tag = _TAGS[opcode]
        for left, right in itertools.zip_longest(before[i1:i2], after[j1:j2]):
            rows.append({"tag": tag, "left": left, "right": right})
    return rows


# -- the pytest plugin's report ---------------------------------------------------------------------

REPORT_ATTRIBUTE: Final = "harness_cell"
"""The attribute of a scenario item's call report holding its `CellView` as JSON: pytest-xdist
carries a report's attributes from the worker that ran the item to the controller."""


class PytestHtmlReport:
    """`--harness-html PATH`: registered on the controller only, it gathers each scenario
    cell's view from the reports and writes the report when the session ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cells: list[CellView] = []

    def pytest_runtest_logreport(self, report: Any) -> None:
        view = getattr(report, REPORT_ATTRIBUTE, None)
        if isinstance(view, str):
            self.cells.append(CellView.model_validate_json(view))

    def pytest_sessionfinish(self) -> None:
        # the order the cells were collected in, whichever worker finished first
        cells = sorted(self.cells, key=lambda cell: (cell.file, cell.line, cell.id))
        write_html(cells, self.path, title="harness scenarios (pytest)")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_sep("-", f"harness HTML report: {self.path}")
