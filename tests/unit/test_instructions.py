"""The server's instructions: within their byte limit, and naming only tools that
exist (an agent told to call a tool that is not there learns nothing)."""

from __future__ import annotations

import re

from memory_server.domain.limits import INSTRUCTIONS_MAX_BYTES
from memory_server.protocol.instructions import INSTRUCTIONS
from memory_server.protocol.prompts import BRIEFING
from memory_server.protocol.tools import TOOLS


def test_the_instructions_fit_their_limit() -> None:
    assert 0 < len(INSTRUCTIONS.encode("utf-8")) <= INSTRUCTIONS_MAX_BYTES


def test_the_instructions_name_real_tools_and_say_what_the_contract_asks() -> None:
    named = set(re.findall(r"\bmemory_[a-z]+\b", INSTRUCTIONS))
    assert named <= set(TOOLS), named - set(TOOLS)
    assert {"memory_brief", "memory_search", "memory_remember"} <= named
    assert BRIEFING in INSTRUCTIONS and "supersedes" in INSTRUCTIONS
