"""A real HTTP server on loopback that speaks OpenAI's Chat Completions API and answers from a
script: a function of the request (model name, messages, seed) that returns a reply or a fault
(an HTTP status, a delay past the client's timeout, a truncated answer). It keeps every request
it received, with the call id accelopt sends in its X-Accelopt-Call header, unless told not to.

It ships in the package, not only with the tests, because `accelopt bench soak` runs the daemon
with its agents on against it: a benchmark must not depend on an LLM endpoint or its bill."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = ["Reply", "Request", "ScriptedLLM", "running_llm", "usage"]


@dataclass(frozen=True)
class Request:
    model: str
    messages: list[dict[str, str]]
    seed: int | None
    call_id: str
    body: dict[str, Any]

    @property
    def system(self) -> str:
        return next((m["content"] for m in self.messages if m["role"] == "system"), "")

    @property
    def user(self) -> str:
        return next((m["content"] for m in self.messages if m["role"] == "user"), "")


@dataclass(frozen=True)
class Reply:
    text: str = ""
    status: int = 200
    delay_s: float = 0.0
    finish_reason: str = "stop"
    raw: bytes | None = None
    """Sent as the body instead of a Chat Completion (a broken gateway's HTML page, say)."""
    trickle_s: float = 0.0
    """Seconds between bytes of the body: sent one at a time (a slowloris endpoint)."""
    headers: tuple[tuple[str, str], ...] = ()
    """Extra response headers (`Retry-After` on a 429, say)."""
    usage: Literal["reported", "missing", "negative"] = "reported"
    """What the answer says it billed: the counts of `usage()`, no `usage` object at all, or
    -1,000,000 for each count (an endpoint a budget must not believe)."""


def usage(request: Request, reply: Reply) -> tuple[int, int]:
    """Deterministic token counts: about four characters a token."""
    prompt = sum(len(m["content"]) for m in request.messages) // 4 + 1
    return prompt, len(reply.text) // 4 + 1


@dataclass
class ScriptedLLM:
    script: Callable[[Request], Reply]
    requests: list[Request] = field(default_factory=list)
    served: list[tuple[Request, Reply]] = field(default_factory=list)
    """Requests answered with 200, and their replies (the usage the client was billed)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None
    keep: bool = True
    """Keep every request and answer (tests read them); a soak of hours only counts them, so
    that the benchmark's own memory does not grow with every call."""
    received: int = 0
    answered: int = 0
    """Requests answered with 200."""

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address
        return f"http://{host}:{port}/v1"

    def call_ids(self) -> list[str]:
        with self.lock:
            return [r.call_id for r in self.requests]

    def billed(self) -> tuple[int, int, int]:
        """(calls, prompt tokens, completion tokens) of the successful answers."""
        with self.lock:
            counts = [usage(r, reply) for r, reply in self.served]
        return len(counts), sum(c[0] for c in counts), sum(c[1] for c in counts)

    def handle(self, body: dict[str, Any], call_id: str) -> tuple[Reply, dict[str, Any] | bytes]:
        """The scripted reply to a request, and the body to send with its status."""
        request = Request(
            model=body["model"],
            messages=body["messages"],
            seed=body.get("seed"),
            call_id=call_id,
            body=body,
        )
        with self.lock:
            self.received += 1
            number = self.received
            if self.keep:
                self.requests.append(request)
        reply = self.script(request)
        if reply.raw is not None:
            return reply, reply.raw
        if reply.status != 200:
            error = {"error": {"message": f"scripted fault {reply.status}", "type": "server"}}
            return reply, error
        prompt, completion = usage(request, reply)
        with self.lock:
            self.answered += 1
            if self.keep:
                self.served.append((request, reply))
        return (
            reply,
            {
                "id": f"chatcmpl-{number}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": request.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.text},
                        "finish_reason": reply.finish_reason,
                    }
                ],
                **_usage_field(reply.usage, prompt, completion),
            },
        )


def _usage_field(kind: str, prompt: int, completion: int) -> dict[str, Any]:
    if kind == "missing":
        return {}
    if kind == "negative":
        prompt = completion = -1_000_000
    return {
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    }


def _handler(llm: ScriptedLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if not self.path.endswith("/chat/completions"):
                self.send_error(404)
                return
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            reply, payload = llm.handle(body, self.headers.get("X-Accelopt-Call", ""))
            status, delay = reply.status, reply.delay_s
            if delay:
                time.sleep(delay)
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers:
                    self.send_header(name, value)
                self.end_headers()
                if reply.trickle_s:
                    for byte in data:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(reply.trickle_s)
                else:
                    self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout) or was killed

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def running_llm(script: Callable[[Request], Reply], *, keep: bool = True) -> Iterator[ScriptedLLM]:
    """The server on a free loopback port for the duration of the block."""
    llm = ScriptedLLM(script, keep=keep)
    llm.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(llm))
    llm.server.daemon_threads = True
    thread = threading.Thread(target=llm.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield llm
    finally:
        llm.server.shutdown()
        llm.server.server_close()
