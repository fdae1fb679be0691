"""The explorer's server under abuse: path traversal, 10,000 random and malformed requests on loopback.

Everything here talks to a real uvicorn server on 127.0.0.1 (raw sockets, so nothing normalises
the paths first) or to the ASGI app directly; nothing leaves the machine.
"""

import asyncio
import http.client
import random
import socket
import time
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from tilewise.web import server
from tilewise.web.server import BackgroundServer, create_app, load_static, static_dir

PACKAGE = Path(server.__file__).parent
SECRET_MARKERS = (b"root:", b"def create_app", b"[build-system]", b"import ", b"PRIVATE KEY")

TRAVERSALS = [
    "/static/../server.py",
    "/static/..%2fserver.py",
    "/static/%2e%2e/server.py",
    "/static/%2e%2e%2fserver.py",
    "/static/js/../../server.py",
    "/static/js/..%2f..%2fserver.py",
    "/static/..\\server.py",
    "/static/..%5cserver.py",
    "/static/%252e%252e/server.py",
    "/static/....//....//server.py",
    "/static/../../../../../../../../etc/passwd",
    "/static/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/static//etc/passwd",
    "/static/%2fetc%2fpasswd",
    "/static/C:/Windows/win.ini",
    "/static/~/.bashrc",
    "/static/index.html%00.py",
    "/static/js/%00core.js",
    "/static/%c0%ae%c0%ae/server.py",
    "/static/..;/server.py",
    "/../../../../etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/api/../web/server.py",
    "/api/..%2f..%2fserver.py",
    "/static/" + "../" * 40 + "etc/passwd",
    "/static/__init__.py",
    "/static/../__init__.py",
    "/static/../../pyproject.toml",
]


def raw_request(port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """Send bytes as they are and read until the server closes or a full response has arrived."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)  # nothing more is coming: an incomplete request ends here
        chunks = []
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
                buf = b"".join(chunks)
                head, sep, body = buf.partition(b"\r\n\r\n")
                if sep:
                    length = next(
                        (
                            int(h.split(b":", 1)[1])
                            for h in head.split(b"\r\n")
                            if h.lower().startswith(b"content-length:")
                        ),
                        None,
                    )
                    if length is not None and len(body) >= length:
                        break
        except (TimeoutError, ConnectionResetError):
            pass
    return b"".join(chunks)


def status_of(resp: bytes) -> int | None:
    if not resp.startswith(b"HTTP/"):
        return None  # the server closed the connection without answering: not a 5xx
    return int(resp.split(b" ", 2)[1])


@pytest.fixture(scope="module")
def live():
    with BackgroundServer() as url:
        yield int(url.rsplit(":", 1)[1].strip("/"))


def test_static_table_holds_only_the_static_folder():
    root = static_dir().resolve()
    table = load_static()
    assert "index.html" in table and "js/core.js" in table
    for rel in table:
        assert (root / rel).resolve().is_relative_to(root)
        assert not rel.endswith(".py")


def test_index_references_only_local_files(live):
    table = load_static()
    html = table["index.html"][0].decode()
    import re

    refs = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert refs
    for ref in refs:
        assert ref.startswith("/static/"), ref
        assert ref[len("/static/") :] in table, ref
    # Offline: no CDN, no remote fonts (the SVG namespace URI is an identifier, not a fetch).
    for rel, (body, _) in table.items():
        text = body.decode("utf-8", "replace").replace("http://www.w3.org/2000/svg", "")
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, rel


@pytest.mark.parametrize("path", TRAVERSALS)
def test_no_path_outside_static_over_the_wire(live, path):
    resp = raw_request(live, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    st = status_of(resp)
    assert st is None or st in (400, 404), (path, resp[:200])
    for marker in SECRET_MARKERS:
        assert marker not in resp, (path, marker)


def _asgi_get(app, raw_path: bytes) -> tuple[int, bytes]:
    """Call the ASGI app with a path exactly as given (no client-side normalisation at all)."""
    out = {"status": None, "body": b""}

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(msg):
        if msg["type"] == "http.response.start":
            out["status"] = msg["status"]
        elif msg["type"] == "http.response.body":
            out["body"] += msg.get("body", b"")

    path = raw_path.decode("latin-1")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": raw_path,
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    asyncio.run(app(scope, receive, send))
    return out["status"], out["body"]


def test_no_path_outside_static_in_the_app():
    app = create_app()
    secret = (PACKAGE / "server.py").read_bytes()
    for raw in [
        b"/static/../server.py",
        b"/static/../../web/server.py",
        b"/static/" + str(PACKAGE / "server.py").encode(),
        b"/static//" + str(PACKAGE / "server.py").encode().lstrip(b"/"),
        b"/static/../api.py",
        b"/static/\x00",
        b"/static/js/../../cli.py",
        b"/static/js/../index.html",  # inside the folder, but not a table key: still 404
    ]:
        status, body = _asgi_get(app, raw)
        assert status in (400, 404), (raw, status)
        assert body != secret and b"def " not in body
    status, body = _asgi_get(app, b"/static/js/core.js")
    assert status == 200 and b"const TW" in body


# ---------------------------------------------------------------------------- random abuse

N_REQUESTS = 10_000
TIME_LIMIT_S = 600  # names how far it got if the server stalls; pytest-timeout (1200 s) is the hang guard

ENDPOINTS = [
    "gpus",
    "panels",
    "hierarchy",
    "occupancy",
    "tiling",
    "decode",
    "moe",
    "tensorcore",
    "registers",
    "l2",
    "latency",
    "pipeline",
    "access",
    "divergence",
    "advisor",
    "exercise",
    "row",
    "nope",
    "",
    "..",
    "%00",
]
PARAMS = [
    "gpu",
    "threads",
    "registers",
    "smem",
    "carveout",
    "barriers",
    "m",
    "n",
    "k",
    "tile_m",
    "tile_n",
    "block_m",
    "block_n",
    "block_k",
    "batch",
    "dtype",
    "rows",
    "programs",
    "hit",
    "head_dim",
    "stages",
    "tiles",
    "kind",
    "latency",
    "width",
    "ilp",
    "stage_kb",
    "expr",
    "space",
    "preset",
    "topic",
    "kernel",
    "top_k",
    "seq",
    "kv_heads",
    "experts",
    "causal",
    "layout",
    "variant",
    "answer",
    "file",
    "row",
    "x",
    "",
    "%00",
    "a[b]",
]
VALUES = [
    "0",
    "1",
    "-1",
    "2",
    "7",
    "8",
    "16",
    "31",
    "32",
    "33",
    "64",
    "100",
    "128",
    "255",
    "256",
    "1024",
    "1025",
    "4096",
    "65536",
    "99999999999999999999999",
    "-99999999999999999999",
    "1e3",
    "1e309",
    "-0",
    "0.5",
    "0.99",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "0x10",
    "1_000",
    " 12 ",
    "",
    "abc",
    "h100",
    "h200",
    "a100",
    "b200",
    "v100",
    "bf16",
    "fp8",
    "fp64",
    "memory",
    "issue",
    "48K",
    "227K",
    "1M",
    "9999G",
    "1,2,3",
    "40,0,130",
    ",,,",
    "1," * 70,
    "%00",
    "%ff%fe",
    "\u00e9\u6f22",
    "../../etc/passwd",
    "<script>",
    "'; DROP",
    "9" * 300,
    "a" * 500,
    "lane*33",
    "access",
    "moe",
    "pipeline",
    "pingpong",
    "benchmarks/results/h200/gemm.json",
    "tests/data/occupancy/h200.csv.gz",
    "lane ** 99",
    "(" * 50,
]
PATHS = [
    "/",
    "/index.html",
    "/static/explorer.css",
    "/static/js/core.js",
    "/static/nope.js",
    "/favicon.ico",
    "/api",
    "/api/",
    "/api//occupancy",
    "/static/",
    "/static",
    *TRAVERSALS[:8],
]


def _random_target(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.7:
        ep = rng.choice(ENDPOINTS)
        q = "&".join(
            f"{quote(rng.choice(PARAMS), safe='%[]')}={quote(rng.choice(VALUES), safe='%,*()<>;')}"
            if rng.random() < 0.9
            else rng.choice(PARAMS)
            for _ in range(rng.randint(0, 5))
        )
        return f"/api/{ep}" + (f"?{q}" if q or rng.random() < 0.1 else "")
    if r < 0.9:
        return rng.choice(PATHS)
    # random bytes as a path (percent-encoded where http.client would refuse them)
    n = rng.randint(1, 40)
    return "/" + "".join(rng.choice("abc/%.?&=;~-_0123456789") for _ in range(n))


MALFORMED = [
    b"GARBAGE\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET / HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET / HTTP/1.1\r\n\r\n",  # no Host
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n",
    b"GET /api/occupancy?threads=\xff\xfe HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET /\x00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X: " + b"a" * 70000 + b"\r\n\r\n",
    b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS hello
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"TRACE / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET /api/occupancy?" + b"threads=1&" * 2000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"",
]


def test_ten_thousand_random_and_malformed_requests(live):
    rng = random.Random(20261130)
    start = time.monotonic()
    statuses: dict[int, int] = {}
    conn = http.client.HTTPConnection("127.0.0.1", live, timeout=10)
    methods = ["GET"] * 12 + ["HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]
    sent = 0
    for i in range(N_REQUESTS):
        assert time.monotonic() - start < TIME_LIMIT_S, f"only {i} requests in {TIME_LIMIT_S} s"
        if i % 50 == 49:  # a malformed request on its own connection
            resp = raw_request(live, rng.choice(MALFORMED), timeout=3)
            st = status_of(resp)
            if st is not None:
                statuses[st] = statuses.get(st, 0) + 1
                assert st < 500, (resp[:300], st)
            sent += 1
            continue
        method = rng.choice(methods)
        target = _random_target(rng)
        headers = {"Host": "127.0.0.1"} if rng.random() < 0.97 else {"Host": rng.choice(["evil", "", "127.0.0.1:1"])}
        try:
            body = rng.choice([None, b"{}", b"x" * 100]) if method in ("POST", "PUT", "PATCH") else None
            conn.request(method, target, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
        except (http.client.HTTPException, ConnectionError, OSError):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", live, timeout=10)
            continue
        statuses[r.status] = statuses.get(r.status, 0) + 1
        assert r.status < 500, (method, target, r.status, data[:300])
        if r.status == 400 and target.startswith("/api/") and method == "GET" and headers["Host"] == "127.0.0.1":
            assert b'"error"' in data  # a message, not an empty 400
        if r.will_close:
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", live, timeout=10)
        sent += 1
    conn.close()
    print("statuses:", dict(sorted(statuses.items())), f"in {time.monotonic() - start:.1f} s")
    assert sent >= N_REQUESTS * 0.99
    assert statuses.get(200, 0) > 100 and statuses.get(400, 0) > 1000, statuses
    # ...and the server still answers.
    c = http.client.HTTPConnection("127.0.0.1", live, timeout=10)
    c.request("GET", "/api/occupancy?threads=256&registers=64")
    r = c.getresponse()
    assert r.status == 200 and b'"blocks_per_sm":4' in r.read()
