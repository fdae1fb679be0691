"""`tilewise explore`: the sub-command, its options, a real start on loopback, and a port already in use."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tilewise.cli import build_parser, main


def test_explore_is_registered():
    p = build_parser()
    a = p.parse_args(["explore", "--port", "9123", "--no-browser"])
    assert a.port == 9123 and a.no_browser and callable(a.func)
    a = p.parse_args(["explore"])
    assert a.port == 8765 and not a.no_browser


def test_cli_module_does_not_import_the_server():
    code = "import sys, tilewise.cli; tilewise.cli.build_parser(); print('starlette' in sys.modules, 'uvicorn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False False"


def test_port_in_use_is_a_clear_error(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        assert main(["explore", "--port", str(port), "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert f"--port {port} is in use on 127.0.0.1" in err
    assert main(["explore", "--port", "70000", "--no-browser"]) == 2
    assert "--port must be an integer <= 65535, got 70000" in capsys.readouterr().err


def test_explore_serves_on_loopback_and_stops():
    pytest.importorskip("uvicorn")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tilewise.cli", "explore", "--port", "0", "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()  # "tilewise explorer: http://127.0.0.1:PORT/  (Ctrl-C to stop)"
        assert line.startswith("tilewise explorer: http://127.0.0.1:"), line + proc.stderr.read()
        url = line.split()[2]
        with urllib.request.urlopen(url + "api/panels", timeout=10) as r:
            panels = json.load(r)["panels"]
        assert any(p["id"] == "occupancy" for p in panels)
        with urllib.request.urlopen(url, timeout=10) as r:
            assert b"tilewise explorer" in r.read()
        # bound to loopback only: the port is not open on the machine's other addresses
        host_ips = {ai[4][0] for ai in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)} - {"127.0.0.1"}
        port = int(url.rsplit(":", 1)[1].strip("/"))
        for ip in host_ips:
            with socket.socket() as s:
                s.settimeout(1)
                assert s.connect_ex((ip, port)) != 0
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode in (0, -signal.SIGINT), proc.stderr.read()


def test_background_server_helper():
    pytest.importorskip("uvicorn")
    from tilewise.web.server import BackgroundServer

    with BackgroundServer() as url:
        with urllib.request.urlopen(url + "api/occupancy?threads=256&registers=64&smem=48K", timeout=10) as r:
            d = json.load(r)
        assert d["result"]["blocks_per_sm"] == 4
        t0 = time.monotonic()
        try:
            urllib.request.urlopen(url + "api/occupancy?threads=0", timeout=10)
        except urllib.error.HTTPError as e:
            assert e.code == 400 and "threads must be an integer in [1, 1024], got 0" in json.load(e)["error"]
        assert time.monotonic() - t0 < 5
