"""Request paths: which cassette or session, which endpoint, and nothing outside the folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.serve.routing import Route, RouteError, cassette_path, route


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "/c/agent/weather/v1/chat/completions",
            Route("cassette", "agent/weather", "/v1/chat/completions"),
        ),
        ("/c/weather/v1/messages", Route("cassette", "weather", "/v1/messages")),
        ("/c/v1/old/v1/responses", Route("cassette", "v1/old", "/v1/responses")),
        ("/s/abc123/v1/messages", Route("session", "abc123", "/v1/messages")),
    ],
)
def test_a_path_names_its_cassette_or_session_and_endpoint(path: str, expected: Route) -> None:
    assert route(path) == expected


@pytest.mark.parametrize(
    "path",
    ["/v1/chat/completions", "/c/weather/v1/embeddings", "/c/v1/messages", "/x/y/v1/messages"],
)
def test_a_path_the_server_does_not_serve_is_a_404(path: str) -> None:
    with pytest.raises(RouteError) as caught:
        route(path)
    assert caught.value.status == 404


@pytest.mark.parametrize("name", ["", "../outside", "a/../../b", "/etc/passwd", "a\\b", "nul\x00"])
def test_a_cassette_name_that_would_leave_the_folder_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(RouteError) as caught:
        cassette_path(tmp_path, name)
    assert caught.value.status == 400


def test_a_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "cassettes").mkdir()
    (tmp_path / "cassettes" / "escape").symlink_to(tmp_path)
    with pytest.raises(RouteError, match="outside the cassettes folder"):
        cassette_path(tmp_path / "cassettes", "escape/secret")


def test_a_cassette_name_with_dots_keeps_them(tmp_path: Path) -> None:
    assert (
        cassette_path(tmp_path, "agent/weather.v2")
        == tmp_path.resolve() / "agent" / "weather.v2.json"
    )
