"""A different OpenAI-compatible server — raw asyncio HTTP, written only from docs/agents.md —
drives the CPU example to `optimized` through the agents planner."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import threading
from pathlib import Path

import pytest
from kernelopt_tests_support import counted_cpu_example, kernelopt, last_run, summary


def reply(body: dict) -> dict:
    """The whole 'model': recognise the role, use the documented tools in order."""
    messages = body["messages"]
    system = messages[0]["content"]
    tool_results = [m["content"] for m in messages if m["role"] == "tool"]

    def call(name: str, **arguments: object) -> dict:
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"t{len(messages)}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}]}

    if system.startswith("You are the Planner"):
        if not tool_results:
            return call("read_file", path="kernel.cpp")
        return call("submit_plan", plan="Use 8x8 tiles (TILE 8) so reads and writes stay in cache")
    if system.startswith("You are the Editor"):
        if not tool_results:
            return call("read_file", path="kernel.cpp")
        if len(tool_results) == 1:
            numbered = tool_results[0].splitlines()
            source = "\n".join(re.sub(r"^\s*\d+\| ?", "", line) for line in numbered
                               if re.match(r"^\s*\d+\|", line)) + "\n"
            return call("write_file", path="kernel.cpp",
                        content=source.replace("#define TILE 1\n", "#define TILE 8\n"))
        return {"role": "assistant", "content": "Set TILE to 8."}
    return {"role": "assistant", "content": json.dumps(
        {"strategy": "cache tiling", "lesson": "8x8 tiles", "action": "append"})}


class RawServer:
    """HTTP/1.1 by hand on asyncio streams: one request per connection."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.port = 0
        ready = threading.Event()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))
            body = json.loads(await reader.readexactly(length))
            data = json.dumps({"choices": [{"index": 0, "message": reply(body)}],
                               "usage": {"prompt_tokens": length // 4,
                                         "completion_tokens": 20}}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(data) + data)
            await writer.drain()
            writer.close()

        async def main() -> None:
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            async with server:
                await server.serve_forever()

        self.thread = threading.Thread(target=lambda: self.loop.run_until_complete(main()),
                                       daemon=True)
        self.thread.start()
        ready.wait(10)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake and a C++ compiler")
def test_a_foreign_server_drives_the_cpu_example_to_optimized(tmp_path: Path) -> None:
    server = RawServer()
    example = counted_cpu_example(tmp_path / "cmake-cpu")  # the verdict rides on the HTTP path, not the load
    # the HTTP path is the subject: one candidate and the shortest confirmation of its win
    result = kernelopt("run", str(example), "--planner", "agents", "--provider", "vllm",
                       "--base-url", f"http://127.0.0.1:{server.port}/v1", "--model", "any",
                       "--iterations", "1", "--final-rounds", "2", "--screen-runs", "1",
                       "--seeds", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    s = summary(last_run(tmp_path / ".kernelopt"))
    assert s["status"] == "optimized" and s["planner"] == "agents" and s["speedup"] > 1.3
    assert s["llm"]["calls"] == 6  # planner 2, editor 3, summarizer 1
