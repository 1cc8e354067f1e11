"""The GitHub Actions recipes (every workflow under examples/ci/ and every workflow block of the
docs) are workflows GitHub would run, and every `harness` and `pytest` command in them parses
with this release's command line: an option renamed or removed fails here, not in a user's CI.

No JSON Schema of GitHub workflows ships in an installed package and nothing is downloaded at test
time, so the workflow checks are structural: the keys GitHub accepts at each level, the events,
the permission scopes, the contexts each expression names, and each action pinned to a major tag.
The `harness` commands are parsed by the real click commands (`make_context`, which checks every
option and argument without running anything); the `pytest` commands by pytest's own parser with
pytest-xdist and the harness plugin loaded, as a project that installs both has them.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from _pytest.config import get_config
from yaml.constructor import ConstructorError

from harness.cassettes.modes import RecordMode
from harness.cli import main
from tests.docs.fences import ROOT, all_fences, documents
from tests.support.node import installed_node

RECIPES = ROOT / "examples" / "ci"
SNIPPET = '--8<-- "examples/ci/{name}"'
"""How a page shows a recipe: the file itself, included when the site is built."""

EXISTING_FILE = str(Path(__file__))
"""Stands for a shell variable in a `harness` command: its arguments that must name an existing
file are checked for existence, never read."""

WORKFLOW_KEYS = frozenset(
    ["name", "run-name", "on", "permissions", "env", "defaults", "concurrency", "jobs"]
)
JOB_KEYS = frozenset(
    [
        "name",
        "needs",
        "permissions",
        "if",
        "runs-on",
        "environment",
        "concurrency",
        "outputs",
        "env",
        "defaults",
        "steps",
        "timeout-minutes",
        "strategy",
        "continue-on-error",
        "container",
        "services",
    ]
)
STEP_KEYS = frozenset(
    [
        "id",
        "if",
        "name",
        "uses",
        "run",
        "shell",
        "with",
        "env",
        "continue-on-error",
        "timeout-minutes",
        "working-directory",
    ]
)
EVENTS = frozenset(
    [
        "branch_protection_rule",
        "check_run",
        "check_suite",
        "create",
        "delete",
        "deployment",
        "deployment_status",
        "discussion",
        "discussion_comment",
        "fork",
        "gollum",
        "issue_comment",
        "issues",
        "label",
        "merge_group",
        "milestone",
        "page_build",
        "public",
        "pull_request",
        "pull_request_review",
        "pull_request_review_comment",
        "pull_request_target",
        "push",
        "registry_package",
        "release",
        "repository_dispatch",
        "schedule",
        "status",
        "watch",
        "workflow_call",
        "workflow_dispatch",
        "workflow_run",
    ]
)
PERMISSION_SCOPES = frozenset(
    [
        "actions",
        "attestations",
        "checks",
        "contents",
        "deployments",
        "discussions",
        "id-token",
        "issues",
        "models",
        "packages",
        "pages",
        "pull-requests",
        "repository-projects",
        "security-events",
        "statuses",
    ]
)
PERMISSION_LEVELS = frozenset({"read", "write", "none"})
CONTEXTS = frozenset(
    [
        "github",
        "env",
        "vars",
        "job",
        "jobs",
        "steps",
        "runner",
        "secrets",
        "strategy",
        "matrix",
        "needs",
        "inputs",
    ]
)
FUNCTIONS = frozenset(
    [
        "always",
        "success",
        "failure",
        "cancelled",
        "contains",
        "startsWith",
        "endsWith",
        "format",
        "join",
        "toJSON",
        "fromJSON",
        "hashFiles",
    ]
)
PINNED_ACTION = re.compile(r"[A-Za-z0-9-]+/[A-Za-z0-9._-]+(/[A-Za-z0-9._/-]+)?@v\d+")
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
NAME = re.compile(r"(?<![\w.-])[A-Za-z_][\w-]*")
REFERENCE = re.compile(r"(?<![\w.-])(steps|needs|matrix)\.([A-Za-z_][\w-]*)")

SHELL_PUNCTUATION = frozenset("();<>|&")
SHELL_PREFIXES = frozenset({"if", "then", "elif", "else", "do", "while", "until", "!", "time"})
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys; GitHub refuses the file."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [self.construct_object(key, deep=deep) for key, _ in node.value]
        repeated = sorted({str(key) for key in keys if keys.count(key) > 1})
        if repeated:
            raise ConstructorError(None, None, f"key {repeated[0]!r} given twice", node.start_mark)
        return super().construct_mapping(node, deep=deep)


@dataclass(frozen=True, kw_only=True)
class Workflow:
    where: str
    document: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Command:
    """A `harness` or `pytest` command of a `run:` step, its arguments after the program name."""

    where: str
    program: str
    arguments: list[str]


def recipe_files() -> list[Path]:
    return sorted([*RECIPES.glob("*.yml"), *RECIPES.glob("*.yaml")])


def load_workflow(text: str) -> Any:
    return yaml.load(text, Loader=_UniqueKeyLoader)


def is_workflow(document: object) -> bool:
    # PyYAML reads the key `on` as the boolean true (YAML 1.1); GitHub reads it as the word
    return (
        isinstance(document, dict) and "jobs" in document and bool({"on", True} & document.keys())
    )


def workflows() -> list[Workflow]:
    found = [
        Workflow(where=str(path.relative_to(ROOT)), document=load_workflow(path.read_text()))
        for path in recipe_files()
    ]
    for fence in all_fences():
        if fence.language == "yaml":
            try:
                document = load_workflow(fence.source)
            except yaml.YAMLError:
                continue  # tests/docs/test_examples.py reports it
            if is_workflow(document):
                found.append(Workflow(where=fence.where, document=document))
    return found


# -- the workflow's shape ---------------------------------------------------------------------------


def workflow_problems(document: Mapping[Any, Any]) -> list[str]:
    """Every way `document` is not a workflow GitHub would run, as far as these checks see."""
    problems: list[str] = []
    keys = {"on" if key is True else key for key in document}
    problems += [f"unknown key {key!r}" for key in sorted(map(str, keys - WORKFLOW_KEYS))]
    trigger = document.get("on", document.get(True))
    events = [trigger] if isinstance(trigger, str) else list(trigger or [])
    if not events:
        problems.append("no `on`: the events that start the workflow")
    problems += [f"on: unknown event {event!r}" for event in events if event not in EVENTS]
    problems += _permission_problems("permissions", document.get("permissions", {}))
    jobs = document.get("jobs")
    if not isinstance(jobs, dict) or not jobs:
        return [*problems, "jobs: expected a mapping of one job or more"]
    for name, job in jobs.items():
        problems += [f"jobs.{name}: {problem}" for problem in _job_problems(job, set(jobs))]
    return problems


def _permission_problems(where: str, permissions: object) -> list[str]:
    if permissions in ("read-all", "write-all"):
        return []
    if not isinstance(permissions, dict):
        return [f"{where}: expected read-all, write-all or a mapping of scopes"]
    return [
        f"{where}.{scope}: expected a scope of {sorted(PERMISSION_SCOPES)} set to read, write "
        f"or none but got {scope}={level!r}"
        for scope, level in permissions.items()
        if scope not in PERMISSION_SCOPES or level not in PERMISSION_LEVELS
    ]


def _job_problems(job: object, job_names: set[str]) -> list[str]:
    if not isinstance(job, dict):
        return ["expected a mapping"]
    problems = [f"unknown key {key!r}" for key in sorted(job.keys() - JOB_KEYS)]
    problems += [f"missing {key}" for key in ("runs-on", "steps") if key not in job]
    problems += _permission_problems("permissions", job.get("permissions", {}))
    needs = job.get("needs", [])
    needs = [needs] if isinstance(needs, str) else list(needs)
    problems += [f"needs {need!r}, which is not a job" for need in needs if need not in job_names]
    matrix = job.get("strategy", {}).get("matrix", {})
    steps = job.get("steps", [])
    if not isinstance(steps, list) or not steps:
        return [*problems, "steps: expected a list of one step or more"]
    ids = [step.get("id") for step in steps if isinstance(step, dict)]
    # the job's own keys (its `outputs`) may name any step; a step only the steps before it
    names: dict[str, set[str]] = {
        "steps": set(filter(None, ids)),
        "needs": set(needs),
        "matrix": set(matrix),
    }
    problems += _expression_problems("", {k: v for k, v in job.items() if k != "steps"}, names)
    for index, step in enumerate(steps, start=1):
        names["steps"] = set(filter(None, ids[: index - 1]))
        problems += [f"step {index}: {problem}" for problem in _step_problems(step, names)]
    return problems


def _step_problems(step: object, names: Mapping[str, set[str]]) -> list[str]:
    if not isinstance(step, dict):
        return ["expected a mapping"]
    problems = [f"unknown key {key!r}" for key in sorted(step.keys() - STEP_KEYS)]
    if ("uses" in step) == ("run" in step):
        problems.append("expected one of `uses` (an action) or `run` (a shell script)")
    uses = step.get("uses")
    if uses is not None and not PINNED_ACTION.fullmatch(str(uses)):
        problems.append(f"uses: expected owner/repository@vN (a major tag) but got {uses!r}")
    for key in ("with", "env"):
        values = step.get(key, {})
        if not isinstance(values, dict) or any(
            isinstance(value, dict | list) for value in values.values()
        ):
            problems.append(f"{key}: expected a mapping of strings, numbers and booleans")
    return [*problems, *_expression_problems("", step, names)]


def _expression_problems(where: str, value: object, names: Mapping[str, set[str]]) -> list[str]:
    """Each expression names a context or function GitHub has, and each `steps.X` an earlier
    step's id, `needs.X` a job the job needs and `matrix.X` a key of its matrix."""
    if isinstance(value, dict):
        return [
            problem
            for key, item in value.items()
            for problem in (
                _expression_text_problems(f"{where}{key}", item, names)
                if key == "if" and isinstance(item, str)
                else _expression_problems(f"{where}{key}.", item, names)
            )
        ]
    if isinstance(value, list):
        return [
            problem
            for index, item in enumerate(value)
            for problem in _expression_problems(f"{where}{index}.", item, names)
        ]
    if isinstance(value, str):
        return [
            problem
            for expression in EXPRESSION.findall(value)
            for problem in _expression_text_problems(where.rstrip("."), expression, names)
        ]
    return []


def _expression_text_problems(
    where: str, expression: str, names: Mapping[str, set[str]]
) -> list[str]:
    expression = EXPRESSION.sub(r"\1", expression)
    code = re.sub(r"'(?:[^']|'')*'", "''", expression)  # string literals name nothing
    problems = [
        f"{where}: {name!r} is neither a context nor a function in {expression.strip()!r}"
        for name in NAME.findall(code)
        if name not in CONTEXTS | FUNCTIONS | {"true", "false", "null"}
    ]
    return problems + [
        f"{where}: {context}.{name} names no {_WHAT[context]}"
        for context, name in REFERENCE.findall(code)
        if name not in names[context]
    ]


_WHAT = {"steps": "earlier step's id", "needs": "job in `needs`", "matrix": "key of the matrix"}


# -- the commands -----------------------------------------------------------------------------------


def simple_commands(script: str) -> Iterator[list[str]]:
    """The words of each simple command of a shell script, as far as the recipes need: commands
    split at operators (`&&`, `||`, `|`, `;`, parentheses), redirections and their targets
    dropped, leading `VAR=value` and keywords (`if`, `then`, `do`, ...) skipped. Not read: here
    documents and file-descriptor redirections (`2>&1`), which the recipes do not use."""
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = iter(lexer)
        words: list[str] = []
        for token in tokens:
            if not set(token) <= SHELL_PUNCTUATION:
                words.append(token)
            elif set(token) & {"<", ">"}:  # a redirection: its target is no argument
                next(tokens, None)
            else:  # an operator (`&&`, `||`, `|`, `;`, `);`, ...) ends a command
                yield from _command_words(words)
                words = []
        yield from _command_words(words)


def _command_words(words: list[str]) -> Iterator[list[str]]:
    while words and (words[0] in SHELL_PREFIXES or ASSIGNMENT.match(words[0])):
        words = words[1:]
    if words[:2] == ["uv", "run"]:
        words = words[2:]
        while words and words[0].startswith("-"):
            words = words[1:]
    elif words[:2] == ["uvx", "--from"]:
        words = words[3:]
    elif len(words) > 2 and words[0] in ("python", "python3") and words[1] == "-m":
        words = words[2:]
    if words:
        yield words


def commands(workflow: Workflow) -> Iterator[Command]:
    for job_name, job in workflow.document["jobs"].items():
        matrix = job.get("strategy", {}).get("matrix", {})
        for index, step in enumerate(job["steps"], start=1):
            if "run" not in step:
                continue
            where = f"{workflow.where}: jobs.{job_name}, step {index}"
            for words in simple_commands(_substituted(step["run"], matrix)):
                if words[0] in ("harness", "pytest"):
                    yield Command(where=where, program=words[0], arguments=words[1:])
                elif "harness" in words:
                    pytest.fail(
                        f"{where}: `harness` in {shlex.join(words)!r} is not read as a command"
                    )


def _substituted(script: str, matrix: Mapping[str, Any]) -> str:
    """`script` with each expression replaced as the runner would: a matrix value by its first
    entry, anything else by a word."""

    def value(expression: re.Match[str]) -> str:
        name = re.fullmatch(r"\s*matrix\.([\w-]+)\s*", expression[1])
        if name and isinstance(matrix.get(name[1]), list):
            return str(matrix[name[1]][0])
        return "value"

    return EXPRESSION.sub(value, script)


def why_harness_refuses(arguments: list[str]) -> str | None:
    """Why `harness ARGUMENTS` would be refused before running (None: it parses)."""
    arguments = [EXISTING_FILE if "$" in argument else argument for argument in arguments]
    command: click.Command = main
    name = "harness"
    while isinstance(command, click.Group):
        if not arguments or arguments[0] not in command.commands:
            return f"{name} has no command {arguments[:1]}; it has {sorted(command.commands)}"
        name, arguments = arguments[0], arguments[1:]
        command = command.commands[name]
    try:
        with command.make_context(name, arguments):
            pass
    except click.ClickException as error:
        return error.format_message()
    return None


@pytest.fixture(scope="module")
def option_parser() -> pytest.Parser:
    """Pytest's option parser with pytest-xdist and the harness plugin registered."""
    config = get_config()
    for plugin in ("xdist.plugin", "harness.pytest_plugin"):
        config.pluginmanager.import_plugin(plugin)
    return config._parser  # the parser pytest's own command line goes through


def why_pytest_refuses(parser: pytest.Parser, arguments: list[str]) -> str | None:
    """Why `pytest ARGUMENTS` would be refused before collecting (None: it parses)."""
    try:
        options = parser.parse(arguments)
        RecordMode.parse(options.harness_record_mode)
    except (pytest.UsageError, ValueError) as error:
        return str(error).splitlines()[-1]
    return None


# -- the tests --------------------------------------------------------------------------------------

WORKFLOWS = workflows()


def test_both_recipes_are_found_and_shown_on_a_page() -> None:
    names = {path.name for path in recipe_files()}
    assert {"github-actions-shards.yml", "github-actions-pytest.yml"} <= names
    pages = "\n".join(page.read_text(encoding="utf-8") for page in documents())
    assert [name for name in sorted(names) if SNIPPET.format(name=name) not in pages] == []


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda workflow: workflow.where)
def test_each_recipe_is_a_workflow(workflow: Workflow) -> None:
    assert workflow_problems(workflow.document) == []


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda workflow: workflow.where)
def test_each_command_of_each_recipe_parses(
    workflow: Workflow, option_parser: pytest.Parser
) -> None:
    found = list(commands(workflow))
    assert found, f"{workflow.where}: no harness or pytest command found"
    problems = [
        f"{command.where}: {command.program} {shlex.join(command.arguments)}: {problem}"
        for command in found
        if (
            problem := why_harness_refuses(command.arguments)
            if command.program == "harness"
            else why_pytest_refuses(option_parser, command.arguments)
        )
    ]
    assert problems == []


def test_the_pytest_recipe_replays_in_workers_and_comments_the_cassette_diff() -> None:
    """What the page promises of it: four workers, replay only, a JUnit report, no secret, and
    a cassette diff in markdown from the one job that may write to the pull request."""
    path = RECIPES / "github-actions-pytest.yml"
    workflow = Workflow(where=path.name, document=load_workflow(path.read_text()))
    found = {command.program: command.arguments for command in commands(workflow)}
    assert found["pytest"][:4] == ["-n", "4", "--harness-record-mode", "none"]
    assert "--junitxml" in found["pytest"]
    assert found["harness"][:2] == ["cassettes", "diff"]
    assert found["harness"][-2:] == ["--format", "markdown"]
    assert "secrets." not in path.read_text()
    writers = [
        name
        for name, job in workflow.document["jobs"].items()
        if job.get("permissions", {}).get("pull-requests") == "write"
    ]
    assert writers == ["cassette-diff"]
    assert workflow.document["permissions"] == {"contents": "read"}


def test_the_checks_find_what_they_look_for(option_parser: pytest.Parser) -> None:
    broken = load_workflow(
        """
name: broken
on: [push, pull_requests]
permissions: {contents: reed}
jobs:
  test:
    runs-on: ubuntu-latest
    needs: build
    steps:
      - uses: actions/checkout@main
      - run: harness run -n ${{ matix.workers }}
        if: steps.later.outputs.ok
        uses: actions/setup-python@v5
      - id: later
        run: pytest --harness-record-mode sometimes --no-such-option
      - run: harness cassettes diff a.json b.json --no-such-option
"""
    )
    problems = workflow_problems(broken)
    assert any("unknown event 'pull_requests'" in problem for problem in problems)
    assert any("permissions.contents" in problem for problem in problems)
    assert any("needs 'build'" in problem for problem in problems)
    assert any("(a major tag) but got 'actions/checkout@main'" in problem for problem in problems)
    assert any("one of `uses`" in problem for problem in problems)
    assert any("'matix' is neither a context" in problem for problem in problems)
    assert any("steps.later names no earlier step's id" in problem for problem in problems)
    with pytest.raises(ConstructorError, match="'run' given twice"):
        load_workflow("jobs: {a: {steps: [{run: x, run: y}]}}")

    found = list(commands(Workflow(where="broken", document=broken)))
    assert [command.program for command in found] == ["harness", "pytest", "harness"]
    assert found[0].arguments == ["run", "-n", "value"]
    assert "expected one of none, once, new_episodes, all" in str(
        why_pytest_refuses(option_parser, ["--harness-record-mode", "sometimes"])
    )
    assert "--no-such-option" in str(why_pytest_refuses(option_parser, found[1].arguments[2:]))
    refused = str(why_harness_refuses(found[2].arguments))
    assert "No such option" in refused
    assert "--no-such-option" in refused
    assert "has no command ['rn']" in str(why_harness_refuses(["rn"]))


def test_the_commands_of_a_script_are_found_where_bash_runs_them() -> None:
    script = (
        'out=$(harness a "$x" > o.md || code=$?); if pytest -n 2; then uv run --frozen pytest; fi'
    )
    assert list(simple_commands(script)) == [
        ["harness", "a", "$x"],
        ["pytest", "-n", "2"],
        ["pytest"],
        ["fi"],
    ]


@pytest.mark.subprocess
@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda workflow: workflow.where)
def test_each_script_of_each_recipe_is_valid_bash_and_javascript(
    workflow: Workflow, tmp_path: Path
) -> None:
    """`bash -n` on every `run:` script; `node --check` on every `actions/github-script` script,
    wrapped as the action wraps it (an async function, so `await` and `return` are allowed)."""
    node = installed_node(None)
    for job_name, job in workflow.document["jobs"].items():
        for index, step in enumerate(job["steps"], start=1):
            where = f"{workflow.where}: jobs.{job_name}, step {index}"
            if "run" in step:
                script = EXPRESSION.sub("value", step["run"])
                checked = subprocess.run(
                    ["bash", "-n", "-c", script], capture_output=True, text=True, check=False
                )
                assert checked.returncode == 0, f"{where}: {checked.stderr}"
            if str(step.get("uses", "")).startswith("actions/github-script@"):
                source = tmp_path / f"{job_name}-{index}.js"
                source.write_text(f"(async function () {{\n{step['with']['script']}\n}})();\n")
                checked = subprocess.run(
                    [node, "--check", str(source)], capture_output=True, text=True, check=False
                )
                assert checked.returncode == 0, f"{where}: {checked.stderr}"


@pytest.mark.subprocess
def test_the_compare_step_reports_each_changed_cassette(tmp_path: Path) -> None:
    """The pytest recipe's compare step, run as written with this release's `harness`, on a pull
    request that changes, adds, deletes and breaks a cassette: a changed one gets the Markdown of
    `harness cassettes diff`, naming both sides; an added or deleted one a heading; one that is
    not a cassette a heading and the step's `unreadable=true`. Files outside the cassette folder,
    and other files in it, are left out."""
    path = RECIPES / "github-actions-pytest.yml"
    document = load_workflow(path.read_text())
    step = next(s for s in document["jobs"]["cassette-diff"]["steps"] if s.get("id") == "diff")
    folder = document["env"]["CASSETTES"]
    repository, runner = tmp_path / "repository", tmp_path / "runner"
    (repository / folder).mkdir(parents=True)
    (repository / "elsewhere").mkdir()
    runner.mkdir()
    recorded = ROOT / "cassettes" / "agent"
    environment = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }

    def git(*arguments: str) -> None:
        subprocess.run(
            ["git", *arguments], cwd=repository, env=environment, check=True, capture_output=True
        )

    def write(name: str, content: bytes) -> None:
        (repository / name).write_bytes(content)

    git("init", "-q", "-b", "main")
    write(f"{folder}/changed.json", (recorded / "trigger-max-steps-openai.json").read_bytes())
    write(f"{folder}/deleted.json", (recorded / "trigger-max-tokens-anthropic.json").read_bytes())
    write(f"{folder}/broken.json", (recorded / "trigger-max-tokens-openai.json").read_bytes())
    write(f"{folder}/notes.txt", b"notes\n")
    write("elsewhere/other.json", b"{}\n")
    git("add", ".")
    git("commit", "-q", "-m", "base")
    git("update-ref", "refs/remotes/origin/main", "HEAD")
    git("checkout", "-q", "-b", "pull-request")
    write(f"{folder}/changed.json", (recorded / "trigger-max-tokens-openai.json").read_bytes())
    (repository / folder / "deleted.json").unlink()
    write(f"{folder}/added.json", (recorded / "trigger-max-steps-anthropic.json").read_bytes())
    write(f"{folder}/broken.json", b'{"format": 1}\n')
    write(f"{folder}/notes.txt", b"more notes\n")
    write("elsewhere/other.json", b"[]\n")
    git("add", "-A")
    git("commit", "-q", "-m", "pull request")

    completed = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=repository,
        env={
            **environment,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "CASSETTES": folder,
            "BASE_REF": "main",
            "GITHUB_WORKSPACE": str(repository),
            "RUNNER_TEMP": str(runner),
            "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
            "GITHUB_OUTPUT": str(tmp_path / "output"),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    report = (repository / "cassette-diff.md").read_text()
    assert f"`main/{folder}/changed.json` → `pull-request/{folder}/changed.json`" in report
    assert f"### New cassette: `{folder}/added.json`" in report
    assert f"### Deleted cassette: `{folder}/deleted.json`" in report
    assert f"### Not compared: `{folder}/broken.json`" in report
    assert "notes" not in report
    assert "other.json" not in report
    assert "broken.json: unknown cassette format" in completed.stderr, "the log says why"
    assert (tmp_path / "summary.md").read_text() == report
    assert (tmp_path / "output").read_text() == "unreadable=true\n"
