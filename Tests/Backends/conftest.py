"""Shared helpers for the backend tests: a `portvakt serve` of the debug build on free loopback
ports, with a throwaway data directory and only the PORTVAKT_* variables a test gives it."""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

BINARY = os.environ.get("PORTVAKT_BINARY", ".build/debug/portvakt")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)


class Portvakt:
    """One server. `environment` holds its PORTVAKT_* secrets; nothing else of the caller's
    PORTVAKT_* environment reaches it (the server refuses unknown ones)."""

    def __init__(self, config, environment):
        self.dir = tempfile.mkdtemp(prefix="portvakt-backends-")
        port, admin_port = free_port(), free_port()
        while admin_port == port:
            admin_port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.admin_url = f"http://127.0.0.1:{admin_port}"
        base = {
            "publicURL": self.url,
            "dataDirectory": os.path.join(self.dir, "data"),
            "listen": {"public": {"host": "127.0.0.1", "port": port},
                       "admin": {"host": "127.0.0.1", "port": admin_port}},
            "logging": {"level": "info", "accessLog": False},
        }
        base.update(config)
        self.config_path = os.path.join(self.dir, "config.json")
        with open(self.config_path, "w") as f:
            json.dump(base, f)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PORTVAKT_")}
        self.env.update(environment)
        self.log_path = os.path.join(self.dir, "server.log")
        self.process = None

    def start(self):
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [BINARY, "serve", "--config", self.config_path], env=self.env, stdout=log, stderr=log)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if self.request("GET", "/health/alive").status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"portvakt serve did not answer /health/alive within 20 s:\n{self.log()}")

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-4000:]

    def request(self, method, path, body=None, headers=None, base=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request((base or self.url) + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return Response(response.status, response.headers, response.read())
        except urllib.error.HTTPError as error:
            return Response(error.code, error.headers, error.read())

    def cli(self, *arguments):
        """Runs `portvakt ARGUMENTS --config CONFIG` with the server's environment."""
        done = subprocess.run([BINARY, *arguments, "--config", self.config_path], env=self.env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"portvakt {' '.join(arguments)}: {done.stdout}{done.stderr}"
        return done.stdout

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def portvakt_server():
    """A factory: `portvakt_server(config, environment)` starts one; all stop after the test."""
    started = []

    def start(config, environment):
        server = Portvakt(config, environment)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()
