"""Bounded YAML reading (`harness.bounded_yaml`), as scenario files and vcrpy imports use it:
only regular files, and limits on size, aliases, expanded nodes and characters, and depth,
each named with the environment variable that raises it."""

from __future__ import annotations

import os
import socket
import tracemalloc
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harness.bounded_yaml import YamlLimitSettingError
from harness.cassettes.vcr import import_vcr
from harness.cli import main
from harness.errors import CassetteFormatError
from harness.scenarios import load_scenarios
from tests.support.scenario_files import refusal, write

LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n"
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
)
ALIAS_BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + LAUGHS
"""The billion laughs: 1 KB of YAML, 9**9 strings once expanded."""

GOOD = "name: ok\nkind: completion\ninput: {agentFinalAnswer: &answer hi}\nexpect: {status: completed}\n"


def test_an_alias_bomb_is_refused_while_reading_without_growing_memory(tmp_path: Path) -> None:
    path = write(tmp_path, ALIAS_BOMB)
    assert path.stat().st_size < 1_100
    tracemalloc.start()
    try:
        message = refusal(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert message.startswith(f"{path}:6:8: it holds more than 100000 nodes once its aliases")
    assert "set HARNESS_MAX_SCENARIO_NODES to a larger number" in message
    assert peak < 1_000_000, "refused before the aliases were expanded (9**9 strings)"


def test_the_limits_environment_variables_raise_each_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + LAUGHS.split("d:")[0] + "name: ok\n"
    path = write(tmp_path, small_bomb)  # 1 + 9 + 81 + 729 nodes under b, c, and the top
    assert "more than 100000 nodes" not in refusal(path)  # it loads, then is not a scenario
    monkeypatch.setenv("HARNESS_MAX_SCENARIO_NODES", "500")
    assert "set HARNESS_MAX_SCENARIO_NODES" in refusal(path)
    monkeypatch.setenv("HARNESS_MAX_SCENARIO_ALIASES", "10")
    assert "more than 10 aliases; simplify the file, or set HARNESS_MAX_SCENARIO_ALIASES" in (
        refusal(path)
    )


def completion(extra_input: str) -> str:
    return f"name: ok\nkind: completion\ninput: {{agentFinalAnswer: hi, {extra_input}}}\n"


@pytest.mark.parametrize(
    ("variable", "value", "text", "complaint"),
    [
        ("HARNESS_MAX_SCENARIO_BYTES", "40", GOOD, "the file is larger than 40 bytes"),
        (
            "HARNESS_MAX_SCENARIO_DEPTH",
            "3",
            completion("deep: [[[x]]]"),
            "nests more than 3 levels",
        ),
        (
            "HARNESS_MAX_SCENARIO_CHARACTERS",
            "60",
            completion("a: &a 0123456789012345678901234567890123456789, b: [*a, *a]"),
            "its values hold more than 60 characters once its aliases are expanded",
        ),
    ],
)
def test_each_limit_names_its_variable_which_raises_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    text: str,
    complaint: str,
) -> None:
    path = write(tmp_path, text)
    monkeypatch.setenv(variable, value)
    message = refusal(path)
    assert complaint in message
    assert f"set {variable} to a larger number" in message
    monkeypatch.setenv(variable, str(int(value) * 100))
    assert load_scenarios([path])


def test_the_default_limits_read_the_library(tmp_path: Path) -> None:
    """Every limit has room for what the repository's scenarios hold (one has 187 aliases)."""
    root = Path(__file__).resolve().parents[2] / "scenarios"
    assert load_scenarios([root])


@pytest.mark.parametrize("value", ["lots", "-1", "0", "1e6", "٣"])
def test_a_limit_setting_that_is_not_a_positive_whole_number_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("HARNESS_MAX_SCENARIO_ALIASES", value)
    with pytest.raises(YamlLimitSettingError) as caught:
        load_scenarios([write(tmp_path, GOOD)])
    assert str(caught.value) == (
        f"expected a whole number of at least 1 but got HARNESS_MAX_SCENARIO_ALIASES={value!r} "
        "(type=str)"
    )


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "name: &loop [a, *loop]\n")
    assert refusal(path).startswith(f"{path}:1:17: the alias *loop is inside the node it names")


def test_a_file_too_deep_for_python_is_refused_before_it_recurses(tmp_path: Path) -> None:
    path = write(tmp_path, "- " * 5_000 + "x\n")
    assert "it nests more than 100 levels" in refusal(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_is_refused_at_once_given_or_found(tmp_path: Path) -> None:
    fifo = tmp_path / "x.yaml"
    os.mkfifo(fifo)
    assert (
        refusal(fifo)
        == f"{fifo}: it is a FIFO (named pipe), not a regular file; give the path of a YAML file"
    )
    assert refusal(tmp_path).startswith(f"{fifo}: it is a FIFO (named pipe), not a regular file")


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets are POSIX")
def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        assert (
            refusal(path)
            == f"{path}: it is a socket, not a regular file; give the path of a YAML file"
        )


def test_a_device_is_refused(tmp_path: Path) -> None:
    if not Path(os.devnull).exists() or os.name != "posix":
        pytest.skip("needs a POSIX character device")
    assert refusal(Path(os.devnull)).endswith(
        "it is a character device, not a regular file; give the path of a YAML file"
    )


def test_a_folder_named_like_a_scenario_is_searched_not_read(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").mkdir()
    write(tmp_path / "suite.yaml", GOOD, "inner.yaml")
    [loaded] = load_scenarios([tmp_path])
    assert loaded.path == tmp_path / "suite.yaml" / "inner.yaml"


def test_harness_run_refuses_an_alias_bomb_with_exit_2(tmp_path: Path) -> None:
    path = write(tmp_path, ALIAS_BOMB)
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 2
    assert "HARNESS_MAX_SCENARIO_NODES" in result.output
    assert "Traceback" not in result.output


# -- vcrpy cassettes are read with the same limits, larger by default --------------------------------


def vcr_cassette(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "vcr"
    folder.mkdir(exist_ok=True)
    return write(folder, text, "cassette.yaml")


def test_import_vcr_refuses_an_alias_bomb(tmp_path: Path) -> None:
    bomb = (
        "interactions: []\n" + ALIAS_BOMB.replace("lol", "lol" * 5) + "j: [" + "*i, " * 20 + "]\n"
    )
    source = vcr_cassette(tmp_path, bomb)
    with pytest.raises(CassetteFormatError) as caught:
        import_vcr([source], tmp_path / "out")
    message = str(caught.value)
    assert message.startswith(f"{source}:")
    assert "nodes once its aliases are expanded" in message
    assert "HARNESS_MAX_VCR_CASSETTE_NODES" in message
    result = CliRunner().invoke(main, ["cassettes", "import-vcr", str(source), "--out", "out"])
    assert result.exit_code == 2
    assert "HARNESS_MAX_VCR_CASSETTE_NODES" in result.output


def test_import_vcr_limits_have_their_own_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = vcr_cassette(tmp_path, yaml.safe_dump({"interactions": [], "version": 1}))
    monkeypatch.setenv("HARNESS_MAX_VCR_CASSETTE_BYTES", "8")
    with pytest.raises(CassetteFormatError, match="larger than 8 bytes; set HARNESS_MAX_VCR"):
        import_vcr([source], tmp_path / "out")
    monkeypatch.setenv("HARNESS_MAX_SCENARIO_BYTES", "8")  # scenario limits do not apply
    monkeypatch.delenv("HARNESS_MAX_VCR_CASSETTE_BYTES")
    assert import_vcr([source], tmp_path / "out").cassettes


def test_import_vcr_locates_yaml_errors_without_quoting_the_line(tmp_path: Path) -> None:
    source = vcr_cassette(tmp_path, "interactions:\n- {[CANARY-secret]: 1}\n")
    with pytest.raises(CassetteFormatError) as caught:
        import_vcr([source], tmp_path / "out")
    assert str(caught.value) == (
        f"{source}:2:4: not a vcrpy cassette: invalid YAML: found unhashable key"
    )
