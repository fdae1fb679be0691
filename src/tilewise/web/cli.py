"""`tilewise explore`: interactive panels in a browser (warps to tile sizes), every number from the model.

Starlette and uvicorn (the `web` extra) are imported only when the command runs.
"""

from __future__ import annotations

import argparse
import socket

from tilewise import gpus
from tilewise.errors import InputError, positive_int, require_extra

DEFAULT_PORT = 8765


def _bind(port: int) -> socket.socket:
    """The socket the explorer serves on, bound now (port 0: any free one), so the port cannot be taken
    between checking it and serving on it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        s.listen(128)
    except OSError:
        s.close()
        raise InputError(f"--port {port} is in use on 127.0.0.1; pick another (or --port 0 for any free one)") from None
    return s


def run(args: argparse.Namespace) -> int:
    require_extra("starlette", "web")
    require_extra("uvicorn", "web")
    port = positive_int("--port", args.port, minimum=0, maximum=65535)
    for path in args.gpu_file or ():  # a user's GPU files join the registry, so the GPU menu lists them
        gpus.load(path)
    sock = _bind(port)
    from tilewise.web.server import serve

    try:
        serve(open_browser=not args.no_browser, sock=sock)
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "explore",
        help="open the explorer: interactive panels from warps to tile sizes, live, in a browser",
        description=(
            "Start a local web server on 127.0.0.1 and open the explorer: the grid over the SMs, occupancy's "
            "limits, the GEMM tiling animation, decode padding, the MoE tile scheduler and the Hopper panels, "
            "for any GPU in the registry. Every number on the page comes from tilewise.model."
        ),
        epilog="examples:\n  tilewise explore\n  tilewise explore --port 9000 --no-browser\n  tilewise explore --gpu my-gpu.toml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0 = any)"
    )
    p.add_argument("--no-browser", action="store_true", help="do not open a browser; just print the address")
    p.add_argument(
        "--gpu",
        dest="gpu_file",
        action="append",
        metavar="FILE",
        help="a GPU file (.toml/.json) to add to the explorer's GPU menu (repeatable)",
    )
    p.set_defaults(func=run)
