"""A GET or HEAD with a body: a clean 400, never a uvicorn/h11 traceback in the log.

Before the fix, every GET with a malformed chunked body logged "Exception in ASGI application
... LocalProtocolError: can't handle event type Response when role=SERVER and state=MUST_CLOSE":
uvicorn answered 400 itself while the app, already started, answered too.
"""

import logging
import socket
import time

import pytest

pytest.importorskip("uvicorn")

from tilewise.web.server import BackgroundServer

BAD_CHUNK = b"GET /api/occupancy HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n"
CASES = [
    # (what is sent at once, what is sent 0.2 s later)
    (BAD_CHUNK, b""),  # a malformed chunk in the same packet as the headers
    (BAD_CHUNK[: BAD_CHUNK.index(b"ZZZ")], b"ZZZ\r\n"),  # ...or after the app has started
    (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", b""),
    (b"HEAD / HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", b""),
    (b"GET /api/gpus HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello", b""),
    (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffffff\r\n", b""),
]


class Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def exchange(port: int, first: bytes, later: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(first)
        if later:
            time.sleep(0.2)
            try:
                s.sendall(later)
            except OSError:
                pass  # the server answered and closed before the rest of the body: that is a refusal too
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_get_with_a_body_is_refused_without_a_traceback():
    with BackgroundServer(log_level="warning") as url:
        port = int(url.rsplit(":", 1)[1].strip("/"))
        handler = Records()
        for name in ("uvicorn", "uvicorn.error", "asyncio"):
            logging.getLogger(name).addHandler(handler)
        try:
            for first, later in CASES:
                resp = exchange(port, first, later)
                assert resp.startswith(b"HTTP/1.1 400 "), (first, resp[:200])
                if b"HEAD" not in first[:4] and b"ZZZ" not in first + later and b"fffff" not in first:
                    assert b"requests take no body" in resp  # the explorer's own refusal, as JSON
            time.sleep(0.3)  # let any late task finish logging
            # a GET without a body still answers on the same server
            ok = exchange(port, b"GET /api/occupancy?threads=256 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", b"")
            assert ok.startswith(b"HTTP/1.1 200 ") and b'"blocks_per_sm"' in ok
        finally:
            for name in ("uvicorn", "uvicorn.error", "asyncio"):
                logging.getLogger(name).removeHandler(handler)
    loud = [r for r in handler.records if r.levelno >= logging.ERROR or r.exc_info]
    assert loud == [], [(r.getMessage(), r.exc_info and r.exc_info[1]) for r in loud]
