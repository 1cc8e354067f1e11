"""Scenarios for the HTML report's tests: passing cells, a failing forced-completion cell whose
forced calls trim the skills fragments, a plain agent cell on two stores, and canary secrets
that must never reach a report."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from harness.scenarios import RunOptions, run_cell
from harness.scenarios.load import load_file
from harness.scenarios.run import CellResult, expand

SHAPED_SECRET: Final = "sk-proj-HTMLCANARY0000000000000000"
"""An OpenAI key shape in the scenario text: redacted by its shape."""
NAMED_SECRET: Final = "CANARY-named-credential-7Qw3"
"""A tool result's `api_key` member: redacted by its name, and wherever it appears as text."""

SCENARIOS: Final = f"""\
- name: forced-call-is-trimmed
  description: The forced call sends the base prompt only.
  tags: [forced, prompt]
  runtimes: [js, dbos]
  stores: [memory]
  script:
    - tool_calls: [{{name: load_skill, arguments: {{name: geography}}}}]
    - text: The capital of France is Paris.
    - tool_calls: [{{name: __finish__, arguments: {{city: Paris, confidence: 0.9}}}}]
  agent: &agent
    system_prompt: You find capitals. Finish with the structured answer.
    user_message: What is the capital of France?
    reasoning: high
    output_schema:
      type: object
      properties: {{city: {{type: string}}, confidence: {{type: number}}}}
      required: [city, confidence]
      additionalProperties: false
    tools:
      - name: search
        description: Search the web
        result: {{hits: [Paris], api_key: {NAMED_SECRET}}}
    skills:
      catalog:
        - {{name: geography, description: Look up countries and capitals, body: Use an atlas.}}
      preloaded:
        - {{name: citations, body: SKILL-BODY-MARKER always cite the source of a capital.}}
  expect:
    status: completed
    output: {{city: Paris, confidence: 0.9}}
- name: forced-completion-gives-up
  description: "The model never finishes properly: <b>not bold</b>."
  tags: [forced]
  runtimes: [js]
  stores: [memory]
  script:
    - tool_calls: [{{name: search, arguments: {{q: capital of France}}}}]
    - text: The capital of France is Paris.
    - tool_calls: [{{name: __finish__, arguments: {{city: 7}}}}]
    - tool_calls: [{{name: __finish__, arguments: {{town: Paris}}}}]
  agent: *agent
  expect:
    status: completed
    output: {{city: Paris, confidence: 0.9}}
- name: plain-answer
  tags: [smoke]
  runtimes: [temporal]
  stores: [memory, sqlite]
  script:
    - text: It is Paris.
  agent: {{user_message: "Capital? My key is {SHAPED_SECRET}"}}
  expect: {{status: completed}}
"""

CELLS: Final = 5
FAILING_CELL: Final = "forced-completion-gives-up[js-memory]"


def write_scenarios(folder: Path) -> Path:
    """The scenario file, written as `folder/scenarios/report.yaml`."""
    path = folder / "scenarios" / "report.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SCENARIOS, encoding="utf-8")
    return path


def run_with_detail(path: Path, workdir: Path) -> list[CellResult]:
    """Every cell of the file, run with the detail the HTML report shows."""
    options = RunOptions(collect_detail=True, workdir=workdir)
    return [run_cell(cell, options) for cell in expand(load_file(path), options)]
