"""The explorer's web server: Starlette routes over `tilewise.web.api`, plus the static page.

Routes (GET and HEAD only):

    /                    the page (static/index.html)
    /static/<file>       a file of the package's static folder, and nothing else
    /api/gpus            the GPU registry, for the page's GPU menu
    /api/panels          every panel, in page order
    /api/row?file=&row=  the committed measurement a figure came from (tilewise.web.measured)
    /api/exercise?topic=&variant=&answer=   a problem; with an answer, the model's answer and why
    /api/<panel>?...     one panel's numbers; bad parameters -> 400 {"error": message}

Static files are served from a table built once at start-up by walking the package's
static folder: a request names a key of that table or gets a 404, so no path, however
encoded, can reach a file outside the folder.
"""

from __future__ import annotations

import json
import mimetypes
import socket
import threading
import time
import webbrowser
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from tilewise.errors import InputError
from tilewise.web import api, exercises, measured
from tilewise.web.params import Params

if TYPE_CHECKING:
    import uvicorn  # imported when a server starts: the explorer's pages import without it

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
}

# The page loads nothing from outside the server: no CDN, no fonts, no trackers.
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def static_dir() -> Path:
    return Path(str(resources.files("tilewise.web") / "static"))


def load_static(root: Path | None = None) -> dict[str, tuple[bytes, str]]:
    """Every regular file under the static folder: relative posix path -> (content, media type)."""
    root = (root or static_dir()).resolve()
    table: dict[str, tuple[bytes, str]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        real = path.resolve()
        if root not in real.parents:
            continue
        rel = real.relative_to(root).as_posix()
        media = _TYPES.get(real.suffix.lower()) or mimetypes.guess_type(real.name)[0] or "application/octet-stream"
        table[rel] = (real.read_bytes(), media)
    return table


def _json(data: Any, status: int = 200) -> Response:
    body = json.dumps(api.clean(data), allow_nan=False, separators=(",", ":"))
    return Response(body, status_code=status, media_type="application/json", headers=_HEADERS)


def _error(status: int, message: str) -> Response:
    return _json({"error": message, "status": status}, status)


class RefuseBodyOnRead:
    """ASGI middleware: a GET or HEAD that carries a body gets a 400 and the connection is closed.

    The explorer's routes read only the URL. A body on a read (Content-Length above 0, or any
    Transfer-Encoding) is refused before routing, with `Connection: close` so the unread body
    cannot be taken for the next request on the connection.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            for name, value in scope["headers"]:
                if name == b"transfer-encoding" or (name == b"content-length" and value.strip() not in (b"0", b"")):
                    body = json.dumps({"error": f"{scope['method']} requests take no body", "status": 400}).encode()
                    headers = [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"connection", b"close"),
                    ]
                    headers += [(k.lower().encode(), v.encode()) for k, v in _HEADERS.items()]
                    await send({"type": "http.response.start", "status": 400, "headers": headers})
                    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
                    return
        await self.app(scope, receive, send)


def http_protocol() -> type[Any]:
    """uvicorn's h11 protocol, with its mid-request 400 made final.

    When a request's headers parse but its body does not (a GET with a malformed chunked
    body), uvicorn has already started the app for the request; it answers 400 itself and
    closes, and the app's own answer then hits a closed h11 connection, which uvicorn logs as
    a LocalProtocolError traceback. Here uvicorn's 400 marks the request's cycle disconnected,
    so the app's later answer is dropped, as for a client that went away; and if the app has
    already begun its answer, the connection is just closed.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Protocol(H11Protocol):  # type: ignore[misc]  # uvicorn is read as Any (pyproject [tool.mypy])
        def send_400_response(self, msg: str) -> None:
            cycle = getattr(self, "cycle", None)
            if cycle is not None:
                cycle.disconnected = True
            if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                super().send_400_response(msg)
            else:
                self.transport.close()

    return Protocol


def create_app(
    static: dict[str, tuple[bytes, str]] | None = None, allowed_hosts: tuple[str, ...] | None = LOOPBACK_HOSTS
) -> Starlette:
    """The ASGI app. `allowed_hosts` guards against DNS rebinding: only loopback names are served."""
    files = load_static() if static is None else static

    async def page(request: Request) -> Response:
        return _file("index.html", request)

    async def static_file(request: Request) -> Response:
        return _file(request.path_params["path"], request)

    def _file(rel: str, request: Request) -> Response:
        entry = files.get(rel)
        if entry is None:
            return Response("not found\n", status_code=404, media_type="text/plain", headers=_HEADERS)
        body, media = entry
        return Response(b"" if request.method == "HEAD" else body, media_type=media, headers=_HEADERS)

    async def gpus(request: Request) -> Response:
        if request.query_params:
            return _error(400, "/api/gpus takes no parameters")
        return _json(api.gpus_list())

    async def panels(request: Request) -> Response:
        if request.query_params:
            return _error(400, "/api/panels takes no parameters")
        return _json({"panels": [{"id": p.id, "title": p.title, "params": sorted(p.params)} for p in api.available()]})

    async def measured_row(request: Request) -> Response:

        try:
            params = Params(request.query_params.multi_items(), {"file", "row"})
            file = params.values.get("file", "")
            index = params.int("row", -1, 0, 1 << 31)
        except InputError as e:
            return _error(400, str(e))
        hit = measured.row(file, index)
        if hit is None:
            return _error(404, f"no packaged measurement names file={file[:80]!r} row={index}")
        return _json(hit)

    async def exercise(request: Request) -> Response:
        try:
            return _json(exercises.exercise(request.query_params.multi_items()))
        except InputError as e:
            return _error(400, str(e))

    async def endpoint(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in api.PANELS:
            known = ", ".join(["gpus", "panels", *api.PANELS])
            return _error(404, f"unknown endpoint /api/{name[:40]}; expected one of: {known}")
        try:
            query = request.query_params.multi_items()
        except (UnicodeDecodeError, ValueError):  # undecodable query strings
            return _error(400, "the query string could not be decoded")
        try:
            return _json(api.call(name, query))
        except InputError as e:
            return _error(400, str(e))
        except (ValueError, OverflowError) as e:  # a model's own range check
            return _error(400, f"bad parameters for {name}: {e}")

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        return _error(status, getattr(exc, "detail", "") or "not found")

    routes = [
        Route("/", page, methods=["GET", "HEAD"]),
        Route("/index.html", page, methods=["GET", "HEAD"]),
        Route("/static/{path:path}", static_file, methods=["GET", "HEAD"]),
        Route("/api/gpus", gpus, methods=["GET", "HEAD"]),
        Route("/api/panels", panels, methods=["GET", "HEAD"]),
        Route("/api/row", measured_row, methods=["GET", "HEAD"]),
        Route("/api/exercise", exercise, methods=["GET", "HEAD"]),
        Route("/api/{name}", endpoint, methods=["GET", "HEAD"]),
    ]
    middleware = [Middleware(RefuseBodyOnRead)]
    if allowed_hosts:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    return Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={404: not_found, 405: not_found},
    )


def bind_loopback(port: int = 0, host: str = "127.0.0.1") -> socket.socket:
    """A listening TCP socket on host:port (port 0: any free one), for uvicorn to serve on. Binding here and
    handing the socket over leaves no window in which another process (a parallel test worker) takes the
    port between choosing it and serving on it. Raises OSError when the port is in use."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, port))
        s.listen(128)
    except OSError:
        s.close()
        raise
    return s


def serve(
    port: int = 8765, open_browser: bool = True, host: str = "127.0.0.1", sock: socket.socket | None = None
) -> None:
    """Run the explorer with uvicorn on the loopback interface until interrupted (on `sock` when given,
    a socket from `bind_loopback`)."""
    import uvicorn

    if sock is None:
        sock = bind_loopback(port, host)
    host, port = sock.getsockname()[:2]
    app = create_app()
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, lifespan="off", http=http_protocol()
    )
    server = uvicorn.Server(config)
    url = f"http://{host}:{port}/"

    def announce() -> None:
        # Wait until uvicorn is listening, then tell the user (and open the browser).
        while not server.started and not server.should_exit:
            threading.Event().wait(0.05)
        if server.started:
            print(f"tilewise explorer: {url}  (Ctrl-C to stop)", flush=True)
            if open_browser:
                webbrowser.open(url)

    threading.Thread(target=announce, daemon=True).start()
    server.run(sockets=[sock])


class BackgroundServer:
    """The explorer served by uvicorn in a daemon thread on a free loopback port (for tests and scripts).

    with BackgroundServer() as url:
        urllib.request.urlopen(url + "api/gpus")
    """

    def __init__(self, port: int = 0, host: str = "127.0.0.1", log_level: str = "error") -> None:
        self._sock = bind_loopback(port, host)  # bound now: no other worker can take the port before uvicorn
        self.host, self.port = self._sock.getsockname()[:2]
        self.log_level = log_level
        self.url = f"http://{self.host}:{self.port}/"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> str:
        import uvicorn

        config = uvicorn.Config(
            create_app(),
            host=self.host,
            port=self.port,
            log_level=self.log_level,
            access_log=False,
            lifespan="off",
            http=http_protocol(),
        )
        server = self._server = uvicorn.Server(config)
        thread = self._thread = threading.Thread(target=server.run, kwargs={"sockets": [self._sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError(f"the explorer did not start on {self.url}")
            time.sleep(0.02)
        return self.url

    def __exit__(self, *exc: object) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._sock.close()
