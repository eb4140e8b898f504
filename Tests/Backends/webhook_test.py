"""Webhooks checked the way an app's server receives them: every delivery is verified with the
Standard Webhooks library from PyPI (`standardwebhooks`), against a real `portvakt serve` whose
events come from real admin API calls."""

import base64
import json
import os
import secrets
import signal
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from standardwebhooks import Webhook

from conftest import free_port

SECRET = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
ADMIN_TOKEN = "backends-admin-" + secrets.token_hex(24)


class Receiver:
    """A ThreadingHTTPServer that verifies every request and records id, type, start and end.
    `statuses` are answered in turn (200 once they run out); `hold` delays each answer."""

    def __init__(self, port=None, statuses=(), hold=0.0):
        self.port = port or free_port()
        self.statuses = list(statuses)
        self.hold = hold
        self.deliveries = []
        self.arrivals = []
        self.failures = []
        self.lock = threading.Lock()
        self.server = None

    def start(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                started = time.monotonic()
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.arrivals.append(self.headers["webhook-id"])
                try:
                    event = Webhook(SECRET).verify(body, dict(self.headers))
                except Exception as error:  # noqa: BLE001 - any refusal is a failure to record
                    with receiver.lock:
                        receiver.failures.append(repr(error))
                    self.send_response(400)
                    self.end_headers()
                    return
                if receiver.hold:
                    time.sleep(receiver.hold)
                with receiver.lock:
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.deliveries.append({
                        "id": self.headers["webhook-id"], "type": event["type"], "data": event["data"],
                        "status": status, "start": started, "end": time.monotonic(),
                    })
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def delivered(self):
        with self.lock:
            return [d for d in self.deliveries if 200 <= d["status"] < 300]

    def wait(self, predicate, seconds=30):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self.lock:
                if predicate(list(self.deliveries)):
                    return True
            time.sleep(0.05)
        return False


def webhook_config(port, **settings):
    return {"webhooks": {"endpoints": [{"name": "app", "url": f"http://127.0.0.1:{port}/hook",
                                        "events": ["*"], "secretVariable": "PORTVAKT_WEBHOOK_APP"}],
                         "timeoutSeconds": 2, **settings}}


ENVIRONMENT = {"PORTVAKT_WEBHOOK_APP": SECRET, "PORTVAKT_ADMIN_TOKEN": ADMIN_TOKEN}
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def admin(server, method, path, body=None):
    response = server.request(method, path, body, headers=ADMIN, base=server.admin_url)
    assert response.status < 300, (method, path, response.status, response.body)
    return response.json() if response.body else None


def create_user(server, name):
    return admin(server, "POST", "/admin/v1/users", {"username": name})["id"]


@pytest.fixture
def receiver():
    started = []

    def make(**options):
        r = Receiver(**options).start()
        started.append(r)
        return r

    yield make
    for r in started:
        r.stop()


def test_admin_changes_arrive_verified(portvakt_server, receiver):
    r = receiver()
    server = portvakt_server(webhook_config(r.port), ENVIRONMENT)
    user = create_user(server, "hook.one")
    admin(server, "PATCH", f"/admin/v1/users/{user}", {"disabled": True})
    admin(server, "PATCH", f"/admin/v1/users/{user}", {"disabled": False})
    admin(server, "DELETE", f"/admin/v1/users/{user}")
    assert r.wait(lambda d: len(d) >= 4), server.log()
    assert not r.failures
    by_type = {d["type"]: d for d in r.delivered()}
    assert set(by_type) == {"user.created", "user.disabled", "user.enabled", "user.deleted"}
    assert by_type["user.created"]["data"] == {"userId": user, "method": "admin"}
    assert by_type["user.disabled"]["data"]["sessionsRevoked"] == 0
    assert all(d["data"]["userId"] == user for d in r.delivered())
    assert len({d["id"] for d in r.delivered()}) == 4


def test_500_three_times_then_200(portvakt_server, receiver):
    r = receiver(statuses=[500, 500, 500])
    server = portvakt_server(webhook_config(r.port, retry={"initialDelaySeconds": 1}), ENVIRONMENT)
    started = time.monotonic()
    create_user(server, "hook.retry")
    assert r.wait(lambda d: len(d) >= 4, seconds=40), server.log()
    took = time.monotonic() - started
    attempts = r.deliveries[:4]
    assert [a["status"] for a in attempts] == [500, 500, 500, 200]
    assert len({a["id"] for a in attempts}) == 1, "one webhook-id across attempts"
    # 1 s, 2 s, 4 s apart, each ±20 %: about 7 s.
    assert 5 <= attempts[3]["start"] - attempts[0]["start"] <= 12, took
    listed = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        listed = admin(server, "GET", "/admin/v1/webhooks/deliveries")["deliveries"][0]
        if listed["state"] == "delivered":
            break
        time.sleep(0.1)
    assert listed["state"] == "delivered" and listed["attempts"] == 4 and listed["lastStatus"] == 200
    assert listed["eventId"] == attempts[0]["id"]


def test_sigkill_between_commit_and_delivery(portvakt_server, receiver):
    port = free_port()
    server = portvakt_server(webhook_config(port, retry={"initialDelaySeconds": 1}), ENVIRONMENT)
    create_user(server, "hook.kill")
    # The receiver is down: the first attempt fails (connection refused) and is recorded.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        rows = admin(server, "GET", "/admin/v1/webhooks/deliveries")["deliveries"]
        if rows and rows[0]["attempts"] >= 1:
            break
        time.sleep(0.1)
    assert rows[0]["state"] == "pending" and rows[0]["lastError"] == "connection_failed", rows
    event_id = rows[0]["eventId"]
    server.process.send_signal(signal.SIGKILL)
    server.process.wait()
    r = receiver(port=port)
    server.start()
    assert r.wait(lambda d: any(x["id"] == event_id for x in d), seconds=30), server.log()
    assert r.delivered()[0]["type"] == "user.created" and not r.failures


def test_sigkill_mid_attempt_the_lease_expires_and_it_arrives_again(portvakt_server, receiver):
    r = receiver(hold=60)
    server = portvakt_server(webhook_config(r.port, timeoutSeconds=5), ENVIRONMENT)
    create_user(server, "hook.lease")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not r.arrivals:
        time.sleep(0.05)
    assert r.arrivals, server.log()
    first_id = r.arrivals[0]
    # Killed while the receiver holds the attempt: its lease (5 s + 15 s) stays in the database.
    server.process.send_signal(signal.SIGKILL)
    server.process.wait()
    killed = time.monotonic()
    r.hold = 0
    server.start()
    assert r.wait(lambda d: any(x["id"] == first_id for x in d), seconds=40), server.log()
    again = next(x for x in r.deliveries if x["id"] == first_id)
    # Not before the lease ran out: no second instance of the attempt while the first could run.
    assert again["start"] - killed >= 10
    assert not r.failures


POSTGRES_URL = os.environ.get("PORTVAKT_TEST_POSTGRES_URL")


@pytest.mark.skipif(not POSTGRES_URL and not os.environ.get("PORTVAKT_REQUIRE_POSTGRES"),
                    reason="needs the PostgreSQL test cluster (Tools/postgres-test-cluster.sh run)")
def test_two_instances_on_one_postgresql_database(portvakt_server, receiver):
    assert POSTGRES_URL, "PORTVAKT_REQUIRE_POSTGRES is set but PORTVAKT_TEST_POSTGRES_URL is not"
    name = "hooks_" + secrets.token_hex(6)
    subprocess.run(["psql", POSTGRES_URL, "-v", "ON_ERROR_STOP=1", "-c", f"CREATE DATABASE {name}"],
                   check=True, capture_output=True)
    parts = urllib.parse.urlsplit(POSTGRES_URL)
    url = urllib.parse.urlunsplit(parts._replace(path="/" + name))
    try:
        r = receiver(hold=0.3)
        environment = {**ENVIRONMENT, "PORTVAKT_DATABASE_URL": url}
        config = {**webhook_config(r.port, maxInFlightPerEndpoint=2), "storage": {"engine": "postgresql"}}
        first = portvakt_server(config, environment)
        second = portvakt_server(config, environment)
        for n in range(60):
            create_user(first if n % 2 == 0 else second, f"hook.pair{n}")
        created = 60
        assert r.wait(lambda d: len({x["id"] for x in d}) >= created, seconds=90), first.log()
        assert not r.failures
        by_id = {}
        for d in r.deliveries:
            by_id.setdefault(d["id"], []).append(d)
        assert len(by_id) == created
        # Nothing failed, so each arrived exactly once, and no two deliveries of one id overlap.
        assert all(len(ds) == 1 for ds in by_id.values()), {k: len(v) for k, v in by_id.items() if len(v) > 1}
        for ds in by_id.values():
            ds.sort(key=lambda d: d["start"])
            for a, b in zip(ds, ds[1:]):
                assert a["end"] <= b["start"]
    finally:
        subprocess.run(["psql", POSTGRES_URL, "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"],
                       capture_output=True)
