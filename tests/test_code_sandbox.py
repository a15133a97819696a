"""run_code's sandbox: each escape a program might try is refused with a clear error, each limit stops the
program with one, and a program that never ends neither holds the gateway nor outlives its timeout.

Through a real SDK client on the gateway in code mode (tests/helpers/code_gateway.py); every program
runs in a Monty worker process of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from tests.helpers.code_gateway import Probe, audit_lines, code_client, code_gateway, error_of, run, text_of
from toolscout.config.code import CodeConfig
from toolscout.modes.sandbox import refusal

pytestmark = [pytest.mark.anyio, pytest.mark.processes]

ESCAPES = {
    "import os": ("import os\nos.listdir('/')", "import os"),
    "import subprocess": ("import subprocess", "import subprocess"),
    "import socket": ("import json, socket", "import socket"),
    "from pathlib": ("from pathlib import Path\nPath('/etc/passwd').read_text()", "import pathlib"),
    "__import__": ("__import__('os')", "__import__"),
    "open": ("open('/etc/passwd').read()", "open is refused"),
    "mro walk": ("().__class__.__mro__[1].__subclasses__()", "__class__"),
    "globals walk": ("def f():\n    pass\nf.__globals__", "__globals__"),
    "getattr dunder": ("getattr((), '__cl' + 'ass__')", "AttributeError"),
    "eval": ("eval('1 + 1')", "eval()"),
    "exec": ("exec('import os')", "exec()"),
    "compile": ("compile('1', 'x', 'eval')", "compile()"),
    "eval in an f-string": ("x = f\"{eval('1')}\"", "eval()"),
    "globals()": ("globals()['x'] = 1", "globals()"),
    "class bases": ("class E(Exception):\n    pass", "class inheritance"),
    "generator": ("def g():\n    yield 1", "yield"),
}


@pytest.mark.parametrize(("code", "said"), list(ESCAPES.values()), ids=list(ESCAPES))
async def test_each_escape_is_refused_with_a_clear_error(code: str, said: str) -> None:
    async with code_gateway() as gateway, code_client(gateway) as client:
        result = await run(client, code)
    error = error_of(result)
    assert error["code"] == "CODE_ERROR", error
    assert said in error["message"]
    assert error["message"].startswith("line ")  # the program's own line
    assert "Traceback" not in text_of(result) and "site-packages" not in text_of(result)


def test_the_token_check_refuses_before_running_and_leaves_strings_and_comments_alone() -> None:
    assert refusal("print('eval exec __import__')  # eval(x)") is None
    assert refusal("import json, math as m\nfrom datetime import date") is None
    refused = refusal("x = 1\nif x:\n    import os")
    assert refused is not None and refused.details["line"] == 3
    assert refusal("from . import x") is not None
    assert refusal("x = (") is None  # Monty's parser says what is wrong with it


LIMITS = {
    "deep recursion": ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
    "huge string": ('x = "x" * 10**10', "MemoryError"),
    "huge list": ("x = [0] * 10**9", "MemoryError"),
    "growing list": ("x = []\nwhile True:\n    x.append('y' * 1000)", "MemoryError"),
    "infinite generator": ("sum(x for x in iter(int, 1))", "MemoryError"),
    "endless count": ("import itertools\nlist(itertools.count())", "MemoryError"),
}


@pytest.mark.parametrize(("code", "said"), list(LIMITS.values()), ids=list(LIMITS))
async def test_each_resource_limit_stops_the_program_with_a_clear_error(code: str, said: str) -> None:
    async with code_gateway() as gateway, code_client(gateway, code=CodeConfig(max_memory=16 * 1024 * 1024)) as client:
        result = await run(client, code, timeout=60)
    error = error_of(result)
    assert error["code"] == "CODE_LIMIT_EXCEEDED", error
    assert said in error["message"]


async def test_a_program_that_never_ends_is_stopped_at_its_timeout_while_the_gateway_answers() -> None:
    # An infinite generator expression and a `while True`: both run until the deadline. Meanwhile the same
    # client's search_tools is answered; the program's answer comes after it, at the deadline.
    probe = Probe()
    order: list[str] = []
    results: dict[str, Any] = {}
    program = "await probe.started()\nn = 0\nwhile True:\n    n += 1"

    async with code_gateway(probe=probe) as gateway, code_client(gateway) as client:
        with anyio.fail_after(60):
            await client.call_tool("search_tools", {"query": "weather"})  # the index built before the race

            async def looping() -> None:
                results["loop"] = await client.call_tool("run_code", {"code": program, "timeout": 5})
                order.append("loop")

            async with anyio.create_task_group() as group:
                group.start_soon(looping)
                await probe.started.wait()
                results["search"] = await client.call_tool("search_tools", {"query": "weather"})
                order.append("search")
            again = await run(client, "sum(x for x in range(10))")
    assert not results["search"].is_error and order == ["search", "loop"]
    error = error_of(results["loop"])
    assert error["code"] == "CODE_LIMIT_EXCEEDED" and "code.timeout" in error["message"]
    assert cast(dict[str, Any], again.structured_content)["result"] == 45  # the next program runs as usual


async def test_a_programs_timeout_is_capped_by_the_config() -> None:
    code = CodeConfig(timeout=1, max_timeout=2)
    async with code_gateway() as gateway, code_client(gateway, code=code) as client:
        result = await run(client, "while True:\n    pass", timeout=3600)
    assert "2 s" in error_of(result)["message"]


async def test_tool_calls_in_a_loop_stop_at_max_tool_calls(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    program = "for i in range(100):\n    await kitchen.get_weather(city='Paris')"
    async with code_gateway(audit_path=audit) as gateway, code_client(gateway, code=CodeConfig(max_tool_calls=5)) as c:
        result = await run(c, program)
    error = error_of(result)
    assert error["code"] == "CODE_LIMIT_EXCEEDED" and "code.maxToolCalls" in error["message"]
    assert len(audit_lines(audit)) == 5  # the sixth call never left the gateway


async def test_a_huge_tool_result_stays_bounded() -> None:
    # The gateway cuts a result over maxResultBytes (1,000,000 bytes by default) before the program sees it.
    program = "r = await probe.blob(size=5_000_000)\nprint(len(r) < 1_000_000, 'maxResultBytes' in r)"
    async with code_gateway() as gateway, code_client(gateway) as client:
        result = await run(client, program)
    assert not result.is_error, text_of(result)
    assert text_of(result) == "True True\n"


async def test_the_answer_is_cut_at_max_output_chars_and_a_long_program_is_refused() -> None:
    code = CodeConfig(max_output_chars=1000, max_code_chars=500)
    async with code_gateway() as gateway, code_client(gateway, code=code) as client:
        printed = await run(client, "for i in range(10000):\n    print('line', i)")
        too_long = await run(client, "x = 1\n" * 200)
    assert not printed.is_error
    assert text_of(printed).startswith("line 0\n") and "code.maxOutputChars" in text_of(printed)
    assert len(text_of(printed)) < 1200
    assert error_of(too_long)["code"] == "INVALID_ARGUMENTS" and "code.maxCodeChars" in error_of(too_long)["message"]


async def test_a_syntax_error_names_its_line() -> None:
    async with code_gateway() as gateway, code_client(gateway) as client:
        result = await run(client, "x = 1\ny = (\n")
    error = error_of(result)
    assert error["code"] == "CODE_ERROR" and "line" in error["message"]


async def test_the_allowed_modules_work_and_sleeping_returns_at_once() -> None:
    program = """
import json, re, math, datetime, time, asyncio, collections, itertools
time.sleep(3600)
await asyncio.sleep(3600)
now = datetime.datetime.now()
counts = collections.Counter(re.findall(r"[a-z]+", "a b a"))
pairs = list(itertools.pairwise([1, 2, 3]))
json.dumps({"sqrt": math.sqrt(16), "pairs": pairs, "a": counts["a"], "year": now.year > 2000})
"""
    async with code_gateway() as gateway, code_client(gateway, code=CodeConfig(timeout=30)) as client:
        result = await run(client, program)
    assert not result.is_error, text_of(result)
    assert text_of(result) == '{"sqrt": 4.0, "pairs": [[1, 2], [2, 3]], "a": 2, "year": true}'
