"""mcp/interrupts.py: Ctrl-C stops a server with KeyboardInterrupt every time, even when the event loop's main
task shuts down cleanly on the cancellation that asyncio turns Ctrl-C into (then asyncio.run returns normally,
and the CLI took a Ctrl-C for a client that hung up: test_ctrl_c.py failed now and then)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = """
import asyncio, os, signal, sys
from perseus_vault_integrations.mcp.interrupts import interruptible
before = signal.getsignal(signal.SIGINT)  # Python's default, or SIG_IGN where the parent ignored Ctrl-C

async def main():
    asyncio.get_running_loop().call_later(0.3, os.kill, os.getpid(), signal.SIGINT)  # Ctrl-C while serving
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        return  # a server that shuts down cleanly when cancelled
try:
    if sys.argv[1] == "kept":
        with interruptible():
            asyncio.run(main())
    else:
        asyncio.run(main())
    print("returned")
except KeyboardInterrupt:
    print("interrupted", signal.getsignal(signal.SIGINT) is before)  # the handler it found is back
"""

pytestmark = pytest.mark.usefixtures("ctrl_c_reaches_children")


@pytest.mark.parametrize("how, expected", [("kept", "interrupted True"), ("plain", "returned")])
def test_ctrl_c_raises_keyboard_interrupt_even_when_the_loop_ends_cleanly(how: str, expected: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, how], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.stdout.strip() == expected, (
        done.stderr
    )  # plain: asyncio alone swallows it (why interruptible exists)
