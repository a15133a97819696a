"""The Python API (`toolscout.open_gateway`, `toolscout.api`): a gateway opened in process from a
configuration, over the bundled demo servers run as real stdio children, searched, read and called as
an agent's meta-tools would; and `import toolscout` still loading none of the MCP SDK."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
import mcp_types as types
import pytest

import toolscout
from tests.helpers.config_files import BOUND
from tests.helpers.paths import PYTHON
from toolscout.api import API_STEPS, Scout, load_gateway_config, open_gateway
from toolscout.errors import (
    ArgumentValidationError,
    ConfigurationError,
    GatewayNotOpen,
    InvalidArguments,
    ServerNotFound,
    ToolDisabled,
    ToolNotFound,
)

pytestmark = pytest.mark.anyio


def demo(name: str, *args: str, **entry: Any) -> dict[str, Any]:
    """A bundled demo server's entry, run by this Python."""
    return {"command": PYTHON, "args": ["-m", f"toolscout.demo.{name}", *args], **entry}


def write_config(tmp_path: Path, **extra: Any) -> Path:
    """A YAML-free JSON config of the notes (stored in `tmp_path`) and units demo servers, audited to `tmp_path`."""
    config = {
        "mcpServers": {
            "notes": demo("notes", "--store", str(tmp_path / "notes.json"), description="Notes kept for the user."),
            "units": demo("units"),
        },
        "toolRules": [{"server": "notes", "pattern": "delete_*", "enabled": False}],
        "audit": {"path": str(tmp_path / "audit.jsonl")},
        **extra,
    }
    path = tmp_path / "toolscout.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def test_a_gateway_opened_from_a_config_file_searches_details_and_executes(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    with anyio.fail_after(BOUND):
        async with toolscout.open_gateway(path) as scout:
            # Entering waited for both servers: they are connected, with their descriptions.
            servers = {s.name: s for s in scout.servers()}
            assert {name: s.status for name, s in servers.items()} == {"notes": "connected", "units": "connected"}
            assert servers["notes"].description == "Notes kept for the user."
            assert servers["notes"].enabled_count == servers["notes"].tool_count - 1  # delete_note is disabled
            assert sorted(scout.connected()) == ["notes", "units"]

            hits = await scout.search("create a note", limit=3)
            best = hits[0]
            assert (best.server, best.tool, best.name) == ("notes", "create_note", "notes__create_note")
            assert best.signature.startswith("create_note({title: string, body: string")
            assert best.summary and 0 < best.relevance <= 1
            assert [h.relevance for h in hits] == sorted((h.relevance for h in hits), reverse=True)
            # Steps of a task: each step's best tool is in the answer, saying which step it answers.
            steps = await scout.search(["convert miles to kilometers", "write a note"], limit=2)
            answered = {(h.server, h.tool): h.steps for h in steps}
            assert 0 in answered[("units", "convert_units")] and 1 in answered[("notes", "create_note")]
            only_units = await scout.search("note", server="units")
            assert all(h.server == "units" for h in only_units)

            details = await scout.tool_details("notes", "create_note")
            assert details.name == "notes__create_note" and details.definition.name == "create_note"
            assert details.input_schema["required"] == ["title", "body"]
            assert [p.get("name") for p in details.parameters][:2] == ["title", "body"]
            assert details.examples and set(details.examples[0]["arguments"]) == {"title", "body"}
            assert details.annotations is not None and details.annotations.destructive_hint is False

            result = await scout.execute("notes", "create_note", {"title": "Groceries", "body": "milk"})
            assert not result.is_error, result.content
            created = json.loads(text_of(result))
            assert created["title"] == "Groceries"
            found = await scout.execute("notes", "get_note", {"id": created["id"]})
            assert json.loads(text_of(found))["body"] == "milk"

            every = await scout.tools()
            assert {(t.server, t.tool) for t in every} >= {("notes", "create_note"), ("units", "convert_units")}
            assert ("notes", "delete_note") not in {(t.server, t.tool) for t in every}
            assert [t.tool for t in await scout.tools("units")] == [t.tool for t in every if t.server == "units"]
    # The store is the server's own file: the call reached the real server.
    assert "Groceries" in (tmp_path / "notes.json").read_text(encoding="utf-8")
    audited = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["server"], r["tool"], r["client"]) for r in audited] == [
        ("notes", "create_note", "python-api"),
        ("notes", "get_note", "python-api"),
    ]


async def test_refused_calls_raise_toolscout_errors_and_reach_no_server(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    with anyio.fail_after(BOUND):
        async with open_gateway(path, client="my-agent") as scout:
            with pytest.raises(ToolNotFound) as unknown:
                await scout.execute("notes", "create_nte", {"title": "x", "body": "y"})
            assert "create_note" in unknown.value.message
            assert unknown.value.explain(API_STEPS).endswith("Search the tools again for the right name.")
            with pytest.raises(ServerNotFound, match="notes"):
                await scout.execute("note", "create_note", {})
            with pytest.raises(ToolDisabled):
                await scout.execute("notes", "delete_note", {"id": "1"})
            with pytest.raises(ArgumentValidationError) as invalid:
                await scout.execute("notes", "create_note", {"title": 3})
            assert invalid.value.code == "VALIDATION_ERROR" and "body" in invalid.value.message
            with pytest.raises(ToolNotFound):
                await scout.tool_details("units", "convert")
            with pytest.raises(ServerNotFound):
                await scout.search("convert", server="unit")
            with pytest.raises(InvalidArguments):
                await scout.search("convert", limit=0)
            with pytest.raises(ToolNotFound, match="notes__create_note"):
                await scout.tool_named("notes__create_nte")
            assert await scout.tool_named("notes__create_note") == ("notes", "create_note")
            assert await scout.tool_named("convert_units") == ("units", "convert_units")  # one server has it
            assert scout.native_name("notes", "create_note") == "notes__create_note"
            with pytest.raises(ServerNotFound, match="'notes'"):
                scout.native_name("note", "create_note")  # no name is made up for what does not exist
            with pytest.raises(ToolNotFound, match="create_note"):
                scout.native_name("notes", "create_nte")
    assert not (tmp_path / "notes.json").exists()  # no call reached the notes server
    audited = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["client"] for r in audited} == {"my-agent"} and all(r["outcome"] == "error" for r in audited)


async def test_a_server_that_fails_is_waited_for_until_it_has_failed(tmp_path: Path) -> None:
    path = write_config(tmp_path, mcpServers={"units": demo("units"), "broken": {"command": str(tmp_path / "none")}})
    with anyio.fail_after(BOUND):
        async with open_gateway(path) as scout:
            statuses = {s.name: s for s in scout.servers()}
            assert statuses["units"].status == "connected"
            assert statuses["broken"].status == "error" and statuses["broken"].error
            assert (await scout.search("convert miles to km"))[0].server == "units"


async def test_wait_bounds_how_long_entering_waits_for_the_servers(tmp_path: Path) -> None:
    # A server that never answers its handshake: entering returns once `wait` is over, and says it is connecting.
    silent = Path(__file__).parent / "fixtures" / "silent_server.py"
    path = write_config(tmp_path, mcpServers={"silent": {"command": PYTHON, "args": [str(silent)]}})
    with anyio.fail_after(BOUND):
        async with open_gateway(path, wait=0) as scout:
            assert [s.status for s in scout.servers()] == ["connecting"]


async def test_a_config_is_a_file_a_dict_or_a_gateway_config_and_mistakes_name_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    as_dict = {"mcpServers": {"units": demo("units", description="${UNITS_ABOUT}")}}
    monkeypatch.setenv("UNITS_ABOUT", "Units from a dict")
    loaded = load_gateway_config(as_dict)
    assert loaded.mcp_servers["units"].description == "Units from a dict"  # `${VAR}` filled in, as in a file
    assert load_gateway_config(loaded) is loaded

    with pytest.raises(ConfigurationError, match="mcpServer"):
        load_gateway_config({"mcpServer": {}})
    with pytest.raises(ConfigurationError, match="JSON values"):
        load_gateway_config({"mcpServers": {"units": {"command": Path("python")}}})
    with pytest.raises(ConfigurationError, match="does not exist"):
        open_gateway(tmp_path / "missing.yaml")

    for wrong in (42, ["a"], b"/p", 2.5):
        with pytest.raises(ConfigurationError, match=r"path of a configuration file .* a dict of its keys"):
            open_gateway(cast(Any, wrong))
    with pytest.raises(InvalidArguments, match="`wait` must be a number of seconds"):
        open_gateway(as_dict, wait=cast(Any, "5"))

    yaml_file = tmp_path / "toolscout.yaml"
    yaml_file.write_text("mcpServers:\n  units:\n    command: python\n", encoding="utf-8")
    assert list(load_gateway_config(str(yaml_file)).mcp_servers) == ["units"]


async def test_no_config_means_the_file_serve_would_find_else_the_built_in_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-config"))
    monkeypatch.delenv("TOOLSCOUT_CONFIG", raising=False)
    assert load_gateway_config(None).mcp_servers == {}
    assert "no configuration file found" in caplog.text

    write_config(tmp_path)  # ./toolscout.json
    assert list(load_gateway_config(None).mcp_servers) == ["notes", "units"]
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"mcpServers": {"units": demo("units")}}), encoding="utf-8")
    monkeypatch.setenv("TOOLSCOUT_CONFIG", str(elsewhere))
    assert list(load_gateway_config(None).mcp_servers) == ["units"]

    # The built-in default opens a gateway with no servers, which answers with nothing.
    monkeypatch.setenv("TOOLSCOUT_CONFIG", "")
    (tmp_path / "toolscout.json").unlink()
    with anyio.fail_after(BOUND):
        async with open_gateway() as scout:
            assert scout.servers() == [] and await scout.search("anything") == []


async def test_arguments_of_a_wrong_type_are_refused_naming_the_parameter_and_what_it_takes() -> None:
    async with open_gateway({"mcpServers": {"units": demo("units")}}) as scout:
        wrong = cast(Any, scout)  # (called as a program without a type checker would)
        calls: dict[str, tuple[Callable[[], object], str]] = {
            "query None": (lambda: wrong.search(None), "query"),
            "query int": (lambda: wrong.search(5), "query"),
            "query bytes": (lambda: wrong.search(b"x"), "query"),
            "query mixed steps": (lambda: wrong.search(["note", 5]), "query"),
            "query dict": (lambda: wrong.search({"q": 1}), "query"),
            "limit str": (lambda: wrong.search("note", limit="5"), "limit"),
            "limit float": (lambda: wrong.search("note", limit=2.5), "limit"),
            "limit bool": (lambda: wrong.search("note", limit=True), "limit"),
            "min_relevance str": (lambda: wrong.search("note", min_relevance="x"), "min_relevance"),
            "server int": (lambda: wrong.search("note", server=5), "server"),
            "execute tool int": (lambda: wrong.execute("units", 5, {}), "tool"),
            "execute server None": (lambda: wrong.execute(None, "list_units", {}), "server"),
            "execute arguments str": (lambda: wrong.execute("units", "list_units", "{}"), "arguments"),
            "max_output_chars -1": (
                lambda: wrong.execute("units", "list_units", {}, max_output_chars=-1),
                "max_output_chars",
            ),
            "max_output_chars str": (
                lambda: wrong.execute("units", "list_units", max_output_chars="9"),
                "max_output_chars",
            ),
            "tool_details tool None": (lambda: wrong.tool_details("units", None), "tool"),
            "tools server int": (lambda: wrong.tools(5), "server"),
            "tools include_hidden str": (lambda: wrong.tools(include_hidden="yes"), "include_hidden"),
            "native_name server int": (lambda: wrong.native_name(1, "convert_units"), "server"),
            "tool_named None": (lambda: wrong.tool_named(None), "name"),
        }
        for label, (call, parameter) in calls.items():
            with anyio.fail_after(BOUND):
                message = (await raised(call, InvalidArguments)).message
            assert message.startswith(f"`{parameter}` must be "), (label, message)
        assert (await scout.search("convert units", limit=1))[0].tool == "convert_units"  # still answering


def every_method(scout: Scout) -> dict[str, Callable[[], object]]:
    """A call of each of the scout's methods, as a program would make it (those that are async not awaited)."""
    return {
        "servers": scout.servers,
        "connected": scout.connected,
        "search": lambda: scout.search("convert units"),
        "tools": lambda: scout.tools(),
        "tool_details": lambda: scout.tool_details("units", "convert_units"),
        "execute": lambda: scout.execute("units", "list_units", {}),
        "native_name": lambda: scout.native_name("units", "convert_units"),
        "tool_named": lambda: scout.tool_named("units__convert_units"),
    }


E = TypeVar("E", bound=Exception)


async def raised(call: Callable[[], object], kind: type[E]) -> E:
    """The `kind` of error `call` raises (awaited, when it is async)."""
    try:
        answer = call()
        if inspect.isawaitable(answer):
            await answer
    except kind as error:
        return error
    raise AssertionError(f"no {kind.__name__} was raised")


async def refusal(call: Callable[[], object]) -> str:
    """The message of the `GatewayNotOpen` `call` raises at once."""
    with anyio.fail_after(2):
        error = await raised(call, GatewayNotOpen)
    assert error.code == "GATEWAY_NOT_OPEN"
    return error.message


async def test_a_scout_answers_only_inside_its_async_with_block_which_it_enters_once() -> None:
    scout = open_gateway({"mcpServers": {"units": demo("units")}})
    for name, call in every_method(scout).items():
        assert "async with toolscout.open_gateway(" in await refusal(call), name
    with anyio.fail_after(BOUND):
        async with scout:
            assert (await scout.search("convert units"))[0].tool == "convert_units"
            assert "entered once" in await refusal(scout.__aenter__)
    for name, call in every_method(scout).items():
        assert "was closed" in await refusal(call), name  # never an answer from the stopped gateway
    assert "entered once" in await refusal(scout.__aenter__)


def test_importing_toolscout_loads_no_sdk_until_the_api_is_named() -> None:
    loaded = "print(*(name in sys.modules for name in ('mcp_types', 'toolscout.gateway.core', 'anthropic', 'openai')))"
    probe = f"import sys, toolscout; {loaded}; toolscout.open_gateway; {loaded}"
    done = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True, timeout=BOUND, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    before, after = done.stdout.splitlines()
    assert before.split() == ["False", "False", "False", "False"], done.stdout
    assert after.split() == ["True", "True", "False", "False"], done.stdout  # (the providers' with their helpers)
