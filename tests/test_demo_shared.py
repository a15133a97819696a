"""README's shared-gateway pipeline (`scripts/demo-shared`) end to end, as a user runs it: a gateway with an
admin key, an MCP endpoint registered before it is up and a callback tool registered into run-1, a
token for run-1, an agent that searches and executes with it, another run's token that sees
nothing, and the audit lines with the token's label and namespace, never a credential."""

from __future__ import annotations

import json
import os
import subprocess

from benchmarks.processes import free_port

from tests.helpers.paths import ROOT


def test_the_readme_pipeline_runs_end_to_end() -> None:
    env = {
        **os.environ,
        "TOOLSCOUT_SKIP_SETUP": "1",  # the test run has its .venv already
        "GATEWAY_PORT": str(free_port()),
        "UNITS_PORT": str(free_port()),
        "CALLBACK_PORT": str(free_port()),
    }
    env.pop("TOOLSCOUT_CONFIG", None)
    done = subprocess.run(
        [str(ROOT / "scripts" / "demo-shared")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    first, other = out.split("# list_mcp_servers")[1:3]
    assert "run-1.units-demo [connected]" in first and "run-1.ip-reputation [connected]" in first
    assert "server run-1.units-demo:\n- convert_units(" in first
    assert "5 mi = 8.04672 km" in first and "9.9.9.9: abuse confidence" in first
    assert "0 servers" in other and "No tools match" in other and "run-1" not in other.split("# audit log")[0]
    audit = [json.loads(line) for line in out.split("# audit log\n")[1].splitlines() if line.strip()]
    assert [(a["server"], a["tool"], a["outcome"]) for a in audit] == [
        ("run-1.units-demo", "convert_units", "ok"),
        ("run-1.ip-reputation", "ip-reputation", "ok"),
    ]
    assert all(a["label"] == "run-1 agent" and a["namespace"] == "run-1" for a in audit)
    assert "ts_" not in out + done.stderr  # the tokens were only ever in the script's variables
