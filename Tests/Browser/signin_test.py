#!/usr/bin/env python3
"""The built-in sign-in page in a real headless Chromium with a WebAuthn virtual authenticator.

Starts the built `portvakt serve` on a free port with a throwaway data directory, then walks the
page as a user would: sign up, sign out, sign in with the discoverable passkey, add a second
passkey, rename and remove one, see and end sessions, sign in through autofill (conditional
mediation), and the ceremonies once more through
the page's fallback for browsers without the WebAuthn Level 3 JSON helpers, an administrator's
enrollment link, and the BankID journey against the built-in simulator: link BankID by scanning
the page's QR code, sign in with BankID, lose the authenticator, get back in with "Lost your
passkey?" and a new passkey (the server revokes the old passkey and session), sign in with
it, and create an account with BankID; the automatic passkey upgrade after a BankID login
(conditional create, or the button where this Chromium makes none, which the step says), and the
Signal API (the page's signal* calls, seen through a hook the test injects: after sign-in, after
a removal with the ids left, and for a passkey whose account was deleted, which Chromium's
virtual authenticator then forgets); "Your account": rename, download the export, and delete
the account behind its dialog with the inline re-authentication (a passkey; for a BankID-only
account a BankID signature) once the 30 s recent sign-in has been waited out; then, on a second server that keeps BankID's rule against
ID switching, BankID sign-up with no passkey, link or recovery offered. Each step saves a screenshot under .build/browser-screenshots/. The last line is
`N passed, N failed` (CI reads it).

When the passkey routes are missing from /openapi.json (the API is not merged yet) only the
page-level checks run and the ceremony steps are reported as skipped, with a message saying why.

Usage: signin_test.py --binary .build/debug/portvakt
"""

import argparse
from datetime import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.common.virtual_authenticator import VirtualAuthenticatorOptions
from selenium.webdriver.support.ui import Select, WebDriverWait

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / ".build" / "browser-screenshots"
EXPECTED_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
PASSKEY_ROUTES = [
    "/v1/passkeys/registration/initialize",
    "/v1/passkeys/registration/finalize",
    "/v1/passkeys/login/initialize",
    "/v1/passkeys/login/finalize",
    "/v1/me/passkeys",
    "/v1/me/passkeys/{id}",
]
WAIT_SECONDS = 15
REAUTHENTICATION_SECONDS = 30
DOWNLOADS = ROOT / ".build" / "browser-downloads"


class StepFailed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise StepFailed(message)


# ---- The server. ----


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`portvakt serve` on a free port, its state in a temporary directory."""

    def __init__(self, binary, extra_config=None):
        self.binary = binary
        self.port = free_port()
        self.admin_port = free_port()
        # Each port was released before the next was chosen, so the kernel may repeat one.
        while self.admin_port == self.port:
            self.admin_port = free_port()
        # The admin API mints enrollment links; its token comes from the environment (never stored).
        self.admin_token = "pva_browser-test-" + os.urandom(16).hex()
        self.url = f"http://localhost:{self.port}"
        self.dir = Path(tempfile.mkdtemp(prefix="portvakt-browser-"))
        config = {
            "publicURL": self.url,
            "dataDirectory": str(self.dir / "data"),
            "listen": {"public": {"host": "127.0.0.1", "port": self.port},
                       "admin": {"host": "127.0.0.1", "port": self.admin_port}},
            "logging": {"level": "info", "accessLog": True},
            # The BankID recovery journey checks that the old passkey goes (the default keeps it).
            "recovery": {"revokeOtherSessions": True, "revokeOldPasskeys": True},
            # A recovery asks for the passport/ID-card check (the simulated app's "approve" does it
            # at once; "open" stops at userMrtd, which step_bankid_text_and_mrtd shows).
            "bankid": {"requirements": {"recovery": {"mrtd": True}}},
            # The shortest window a recent sign-in counts for, so step_account_delete can outwait it
            # (the server has no clock to move; 30 s is the least the configuration accepts).
            "account": {"reauthenticationSeconds": REAUTHENTICATION_SECONDS},
        }
        config.update(extra_config or {})
        (self.dir / "config.json").write_text(json.dumps(config))
        # The server refuses unknown PORTVAKT_ variables; give it a clean environment.
        env = {k: v for k, v in os.environ.items() if not k.startswith("PORTVAKT_")}
        env["PORTVAKT_ADMIN_TOKEN"] = self.admin_token
        self.log = open(self.dir / "server.log", "wb")
        self.process = subprocess.Popen(
            [binary, "serve", "--config", str(self.dir / "config.json")],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            check(self.process.poll() is None, "portvakt serve exited:\n" + self.log_tail())
            try:
                with urllib.request.urlopen(self.url + "/health/alive", timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise StepFailed("portvakt serve did not answer /health/alive within 20 s")

    def get(self, path):
        """(status, headers, body) of a GET without cookies."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read()

    def admin(self, method, path, body=None):
        """The JSON answer of an admin API call (with the admin token)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.admin_port}{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.admin_token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as response:
            answer = response.read()
            return json.loads(answer) if answer else None

    def post(self, path, body):
        """(status, JSON answer) of a POST on the public listener, without cookies."""
        request = urllib.request.Request(
            self.url + path, method="POST", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def log_tail(self, lines=30):
        # Only the JSON log lines: the first start also prints the admin token, which stays out.
        text = (self.dir / "server.log").read_text(errors="replace").splitlines()
        return "\n".join(line for line in text if line.startswith("{"))[-lines * 200:]

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# ---- The browser. ----


def start_browser():
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=900,1300", "--lang=en-US", "--no-first-run"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(options=options, service=service)


def add_authenticator(driver):
    """A platform authenticator (like Touch ID) that holds discoverable credentials and verifies the user."""
    options = VirtualAuthenticatorOptions(
        protocol=VirtualAuthenticatorOptions.Protocol.CTAP2,
        transport=VirtualAuthenticatorOptions.Transport.INTERNAL,
        has_resident_key=True, has_user_verification=True, is_user_verified=True)
    driver.add_virtual_authenticator(options)


def credential_id(credential):
    """A virtual authenticator credential's id as the server writes it: unpadded base64url."""
    return credential.id.rstrip("=")


class Page:
    """What the test does on the sign-in page, by the ids and data attributes the page sets."""

    def __init__(self, driver, url):
        self.driver = driver
        self.url = url
        self.overrides = {}
        self.screenshot_prefix = "00"

    def override(self, name, source):
        """Runs `source` before the page's own script on every later load (until `restore`)."""
        result = self.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": source})
        self.overrides[name] = result["identifier"]

    def restore(self, name):
        identifier = self.overrides.pop(name)
        self.driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": identifier})

    def find(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def all(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def wait(self, condition, what):
        try:
            WebDriverWait(self.driver, WAIT_SECONDS, ignored_exceptions=[StaleElementReferenceException]).until(
                lambda _: condition())
        except TimeoutException:
            raise StepFailed(f"timed out waiting for {what}; status: {self.status()!r}")

    def status(self):
        try:
            return self.find("#status").text
        except Exception:
            return "?"

    def state(self):
        return self.find("body").get_attribute("data-state")

    def idle(self):
        return self.find("body").get_attribute("aria-busy") is None

    def wait_state(self, state):
        self.wait(lambda: self.state() == state and self.idle(), f"the {state} view")

    def wait_status(self, text):
        self.wait(lambda: text in self.status(), f"status {text!r}")

    def open(self):
        self.driver.get(self.url + "/")
        self.wait(lambda: self.state() in ("signed-in", "signed-out") and self.idle(), "the page to load")

    def type(self, css, text):
        field = self.find(css)
        field.clear()
        field.send_keys(text)

    def passkey_names(self):
        # One script call, so a list being redrawn cannot go stale under the test.
        return self.driver.execute_script(
            "return [...document.querySelectorAll('#passkeys li .name')].map(n => n.textContent)")

    def passkey_item(self, name):
        for item in self.all("#passkeys li"):
            if item.find_element(By.CSS_SELECTOR, ".name").text == name:
                return item
        raise StepFailed(f"no passkey named {name!r} in {self.passkey_names()}")

    def sessions(self):
        return self.all("#sessions li")

    def session_count(self):
        return self.driver.execute_script("return document.querySelectorAll('#sessions li').length")

    def fetch_status(self, method, path):
        """The status of a same-origin fetch from the page (with its cookie)."""
        return self.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch(arguments[1], {method: arguments[0], credentials: 'same-origin'})"
            ".then(r => done(r.status), e => done(String(e)));", method, path)

    def screenshot(self, label):
        """An extra screenshot within a step, beside the step's own."""
        self.driver.save_screenshot(str(SCREENSHOTS / f"{self.screenshot_prefix}-{label}.png"))

    def bankid_qr(self):
        """The QR code's text as the page shows it (the image's data-qr), once the code is shown."""
        self.wait(lambda: self.find("#bankid-qr").is_displayed()
                  and (self.find("#bankid-qr-image").get_attribute("data-qr") or "").startswith("bankid."),
                  "the BankID QR code")
        return self.find("#bankid-qr-image").get_attribute("data-qr")

    def console_errors(self):
        return [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]

    def passkey_ids(self):
        return self.driver.execute_script(
            "return [...document.querySelectorAll('#passkeys li')].map(n => n.dataset.id)")

    def recorded(self, key):
        """What a hook (SIGNAL_HOOK, CREATE_HOOK) recorded in this tab, across page loads."""
        return self.driver.execute_script(f"return JSON.parse(sessionStorage.getItem('{key}') || '[]')")

    def forget_recorded(self, key):
        self.driver.execute_script(f"sessionStorage.removeItem('{key}')")

    def signal_calls(self, method):
        return [call["argument"] for call in self.recorded("test.signals") if call["method"] == method]


# ---- The steps. ----


def step_page_served(server, page):
    status, headers, body = server.get("/")
    check(status == 200, f"GET / answered {status}")
    check(headers["Content-Security-Policy"] == EXPECTED_CSP, f"CSP was {headers['Content-Security-Policy']!r}")
    check(headers["Referrer-Policy"] == "no-referrer", "Referrer-Policy is not no-referrer")
    check(headers["Content-Type"].startswith("text/html"), "GET / is not HTML")
    html = body.decode()
    check("<script>" not in html and " style=" not in html and " onclick=" not in html,
          "the HTML has inline script or style")
    for pattern, kind in ((r'src="(/assets/app\.[0-9a-f]{16}\.js)"', "text/javascript"),
                          (r'href="(/assets/app\.[0-9a-f]{16}\.css)"', "text/css")):
        found = re.search(pattern, html)
        check(found, f"the page does not load {pattern}")
        path = found.group(1)
        asset_status, asset_headers, _ = server.get(path)
        check(asset_status == 200, f"{path} answered {asset_status}")
        check(asset_headers["Content-Type"].startswith(kind), f"{path} is {asset_headers['Content-Type']}")
        check("immutable" in asset_headers["Cache-Control"], f"{path} is not cached as immutable")


# Chromium's virtual authenticator answers a conditional (autofill) request at once, as if the
# user had picked the passkey from autofill; a real user has to choose. So autofill stays off
# (the page asks isConditionalMediationAvailable) except in the step that tests it.
WITHOUT_AUTOFILL = "PublicKeyCredential.isConditionalMediationAvailable = async () => false;"

# Records every call the page makes to the Signal API (in sessionStorage, so reloads keep it) and
# passes it on to Chromium's own method, which applies it to the virtual authenticator. Where a
# method is missing the recorder stands in (and says so), so the page's calls are still seen.
SIGNAL_HOOK = """
(() => {
  if (!window.PublicKeyCredential) return;
  for (const method of ['signalUnknownCredential', 'signalAllAcceptedCredentials', 'signalCurrentUserDetails']) {
    const original = PublicKeyCredential[method];
    PublicKeyCredential[method] = function (argument) {
      const calls = JSON.parse(sessionStorage.getItem('test.signals') || '[]');
      calls.push({ method, argument, native: typeof original === 'function' });
      sessionStorage.setItem('test.signals', JSON.stringify(calls));
      return typeof original === 'function' ? original.call(PublicKeyCredential, argument) : Promise.resolve();
    };
  }
})();
"""

# Chromium reports conditionalCreate, and an automatic upgrade that succeeded would add a passkey
# the steps below do not expect; the page is told there is none, except in the step that tests it.
WITHOUT_UPGRADE = """
(() => {
  const original = PublicKeyCredential.getClientCapabilities;
  if (typeof original !== 'function') return;
  PublicKeyCredential.getClientCapabilities = async () => ({ ...(await original.call(PublicKeyCredential)),
                                                            conditionalCreate: false });
})();
"""

# Records the page's navigator.credentials.create calls: their mediation, hints and outcome.
CREATE_HOOK = """
(() => {
  const original = navigator.credentials.create.bind(navigator.credentials);
  const record = (entry) => {
    const calls = JSON.parse(sessionStorage.getItem('test.creates') || '[]');
    calls.push(entry);
    sessionStorage.setItem('test.creates', JSON.stringify(calls));
  };
  navigator.credentials.create = (options) => {
    const call = { mediation: options.mediation ?? null, hints: options.publicKey?.hints ?? [] };
    record({ ...call, outcome: 'started' });
    return original(options).then(
      (credential) => { record({ ...call, outcome: 'created' }); return credential; },
      (error) => { record({ ...call, outcome: error.name }); throw error; });
  };
})();
"""


def step_page_loads(server, page):
    page.override("signal-hook", SIGNAL_HOOK)
    page.override("no-upgrade", WITHOUT_UPGRADE)
    page.override("no-autofill", WITHOUT_AUTOFILL)
    page.open()
    check(page.state() == "signed-out", f"a new visitor sees {page.state()!r}")
    check(page.find("#signin-heading").text == "Sign in", "the English heading is missing")
    field = page.find("#signin-username")
    check(field.get_attribute("autocomplete") == "username webauthn", "no webauthn autocomplete")
    label = page.find('label[for="signin-username"]').text
    check(label == "Username", f"the username field's label is {label!r}")
    check(page.find("#status").get_attribute("class") != "error", f"an error is shown: {page.status()!r}")
    errors = [e for e in page.console_errors() if "Content Security Policy" in e or "Refused" in e]
    check(not errors, f"CSP violations: {errors}")


def step_swedish(server, page):
    page.find("#language").click()
    page.wait(lambda: page.find("#signin-heading").text == "Logga in", "the Swedish heading")
    check(page.driver.execute_script("return document.documentElement.lang") == "sv", "lang is not sv")
    check(page.find("#signin-button").text == "Logga in med lösennyckel", "the button is not Swedish")
    page.find("#language").click()
    page.wait(lambda: page.find("#signin-heading").text == "Sign in", "English again")


def step_sign_up(server, page):
    page.type("#signup-username", "ada")
    page.type("#signup-display", "Ada Lovelace")
    page.find("#signup-button").click()
    page.wait_state("signed-in")
    page.wait_status("Your account is ready")
    check(page.find("#account-heading").text == "Signed in as Ada Lovelace", "wrong account heading")
    check(len(page.passkey_names()) == 1, f"passkeys after sign-up: {page.passkey_names()}")
    check(len(page.driver.get_credentials()) == 1, "the authenticator holds no credential")
    focused = page.driver.switch_to.active_element.get_attribute("id")
    check(focused == "account-heading", f"focus went to {focused!r}, not the account heading")


def step_sign_out(server, page):
    page.find("#signout").click()
    page.wait_state("signed-out")
    page.wait_status("You are signed out.")
    check(page.fetch_status("GET", "/v1/me") == 401, "GET /v1/me still answers after sign-out")


def step_sign_in_discoverable(server, page):
    page.forget_recorded("test.signals")
    page.find("#signin-username").clear()
    page.find("#signin-button").click()
    page.wait_state("signed-in")
    page.wait_status("You are signed in.")
    check(page.find("#account-heading").text == "Signed in as Ada Lovelace", "signed in as someone else")
    # After sign-in the password manager hears the account's passkeys and names (the Signal API).
    accepted = page.signal_calls("signalAllAcceptedCredentials")
    check(accepted and accepted[0]["rpId"] == "localhost"
          and accepted[0]["allAcceptedCredentialIds"] == page.passkey_ids(),
          f"signalAllAcceptedCredentials after sign-in: {accepted}, passkeys {page.passkey_ids()}")
    details = page.signal_calls("signalCurrentUserDetails")
    check(details and details[0]["name"] == "ada" and details[0]["displayName"] == "Ada Lovelace"
          and details[0]["userId"] == accepted[0]["userId"],
          f"signalCurrentUserDetails after sign-in: {details}")
    check(all(call["native"] for call in page.recorded("test.signals")),
          "this Chromium lacks a Signal API method the page called")


def step_add_passkey(server, page):
    # The first authenticator already holds a passkey for this account (the server excludes
    # it), so the second passkey comes from a second device: swap the virtual authenticator.
    page.driver.remove_virtual_authenticator()
    add_authenticator(page.driver)
    page.type("#new-passkey-name", "Backup key")
    page.find("#add-passkey-button").click()
    page.wait(lambda: len(page.passkey_names()) == 2, "a second passkey in the list")
    page.wait_status("The passkey was added.")
    check("Backup key" in page.passkey_names(), f"passkeys: {page.passkey_names()}")
    item = page.passkey_item("Backup key")
    check("Created" in item.text and "Last used" in item.text, "passkey details are missing")


def step_rename(server, page):
    first = next(name for name in page.passkey_names() if name != "Backup key")
    page.passkey_item(first).find_element(By.CSS_SELECTOR, ".rename").click()
    field = page.driver.switch_to.active_element
    check(field.tag_name == "input", "focus did not move to the rename field")
    field.clear()
    field.send_keys("Old laptop")
    field.send_keys(Keys.ENTER)
    page.wait(lambda: "Old laptop" in page.passkey_names(), "the new name")
    page.wait_status("The passkey was renamed.")


def step_remove(server, page):
    ids = dict(zip(page.passkey_names(), page.passkey_ids()))
    before = page.signal_calls("signalAllAcceptedCredentials")
    check(before, "no signalAllAcceptedCredentials before the removal")
    page.forget_recorded("test.signals")
    page.passkey_item("Old laptop").find_element(By.CSS_SELECTOR, ".remove").click()
    page.wait(lambda: page.passkey_names() == ["Backup key"], "one passkey left")
    page.wait_status("The passkey was removed.")
    # The page told the password manager which passkeys are left (DELETE's signals), once.
    accepted = page.signal_calls("signalAllAcceptedCredentials")
    check(len(accepted) == 1, f"signalAllAcceptedCredentials after the removal: {accepted}")
    check(accepted[0] == {**before[-1], "allAcceptedCredentialIds": [ids["Backup key"]]},
          f"signalled {accepted[0]}, expected only {ids['Backup key']!r} for {before[-1]['userId']!r}")
    check(ids["Old laptop"] not in accepted[0]["allAcceptedCredentialIds"], "the removed passkey is still listed")
    # The virtual authenticator holds the passkey that stays, and keeps it.
    held = [credential_id(c) for c in page.driver.get_credentials()]
    check(held == [ids["Backup key"]], f"the authenticator holds {held}, not the passkey that stays")
    # The last passkey is the last way in: the server refuses, and the page says why.
    page.passkey_item("Backup key").find_element(By.CSS_SELECTOR, ".remove").click()
    page.wait_status("last passkey")
    check(page.find("#status").get_attribute("class") == "error", "the refusal is not shown as an error")
    check(page.passkey_names() == ["Backup key"], "the last passkey disappeared")


def step_sessions(server, page):
    sessions = page.sessions()
    check(len(sessions) == 1, f"{len(sessions)} sessions listed, expected the current one only")
    # A second session: forget the cookie (as another browser would not have it) and sign in again.
    page.driver.delete_all_cookies()
    page.open()
    check(page.state() == "signed-out", "still signed in without a cookie")
    page.find("#signin-button").click()
    page.wait_state("signed-in")
    page.wait(lambda: page.session_count() == 2, "two sessions")
    current = [s for s in page.sessions() if "current" in s.get_attribute("class")]
    check(len(current) == 1 and "(this session)" in current[0].text, "the current session is not marked")
    other = next(s for s in page.sessions() if "current" not in s.get_attribute("class"))
    check("Chrome" in other.text and "passkey" in other.text, f"session details: {other.text!r}")
    other.find_element(By.CSS_SELECTOR, ".end-session").click()
    page.wait_status("The session was ended.")
    page.wait(lambda: page.session_count() == 1, "one session left")
    check(page.state() == "signed-in", "ending the other session signed this one out")
    check(not page.find("#end-other-sessions").is_displayed(), "'everywhere else' offered with no other session")
    # Two more sessions (each sign-in after forgetting the cookie leaves the one before live), then
    # every other one at once: DELETE /v1/me/sessions, a protected act (the sign-in is recent here).
    for _ in range(2):
        page.driver.delete_all_cookies()
        page.open()
        page.find("#signin-button").click()
        page.wait_state("signed-in")
    page.wait(lambda: page.session_count() == 3, "three sessions")
    page.find("#end-other-sessions").click()
    page.wait_status("Your 2 other sessions were ended.")
    page.wait(lambda: page.session_count() == 1, "only this session left")
    check(page.state() == "signed-in", "ending the other sessions signed this one out")
    check(not page.find("#end-other-sessions").is_displayed(), "'everywhere else' still offered")


def step_autofill(server, page):
    page.restore("no-autofill")
    page.open()
    check(page.driver.execute_script("return document.activeElement.id") != "signin-button", "focus moved")
    check(page.state() == "signed-in", "not signed in")
    # Signing out starts the conditional request; the virtual authenticator answers it at once.
    page.find("#signout").click()
    page.wait(lambda: page.status() == "You are signed in." and page.state() == "signed-in",
              "sign-in through autofill")
    page.override("no-autofill", WITHOUT_AUTOFILL)


# Removes the Level 3 JSON helpers before any page script runs, so the page takes its fallback.
WITHOUT_JSON_HELPERS = """
delete PublicKeyCredential.parseCreationOptionsFromJSON;
delete PublicKeyCredential.parseRequestOptionsFromJSON;
delete PublicKeyCredential.prototype.toJSON;
"""


def step_fallback(server, page):
    page.override("no-json-helpers", WITHOUT_JSON_HELPERS)
    page.open()  # a new document, so the overrides (and no autofill) are in place
    page.find("#signout").click()
    page.wait_state("signed-out")
    check(page.driver.execute_script("return PublicKeyCredential.parseRequestOptionsFromJSON") is None,
          "the JSON helpers are still there")
    page.type("#signin-username", "ada")  # by username this time: allowCredentials in the fallback
    page.find("#signin-button").click()
    page.wait_state("signed-in")
    page.find("#signout").click()
    page.wait_state("signed-out")
    page.type("#signup-username", "grace")
    page.type("#signup-display", "Grace Hopper")
    page.find("#signup-button").click()
    page.wait_state("signed-in")
    check(page.find("#account-heading").text == "Signed in as Grace Hopper", "fallback sign-up failed")


def step_enrollment_link(server, page):
    # An administrator creates an account without a passkey and mints a one-time enrollment link.
    user = server.admin("POST", "/admin/v1/users", {"username": "linus", "displayName": "Linus Link"})
    link = server.admin("POST", f"/admin/v1/users/{user['id']}/enrollment-links", {})
    check(link["url"].startswith(server.url + "/#enroll=pve_"), f"unexpected link {link['url']!r}")
    page.find("#signout").click()
    page.wait_state("signed-out")
    page.driver.get("about:blank")  # a real load: the same page with a new fragment would not reload
    page.driver.get(link["url"])
    page.wait(lambda: page.find("#enroll-form").is_displayed() and page.idle(), "the enrollment form")
    check("enroll" not in page.driver.current_url, "the one-time token stayed in the address bar")
    page.find("#enroll-button").click()
    page.wait_state("signed-in")
    page.wait_status("Your passkey is ready")
    check(page.find("#account-heading").text == "Signed in as Linus Link", "enrolled into the wrong account")
    check(len(page.passkey_names()) == 1, f"passkeys after enrollment: {page.passkey_names()}")
    # The link works once.
    page.find("#signout").click()
    page.wait_state("signed-out")
    page.driver.get("about:blank")
    page.driver.get(link["url"])
    page.wait(lambda: page.find("#enroll-form").is_displayed() and page.idle(), "the enrollment form again")
    page.find("#enroll-button").click()
    page.wait_status("This link has been used or has expired")


# ---- BankID, against the simulator that `portvakt serve` runs in-process by default. ----

BANKID_NAME = "Tolvan Tolvansson"  # the simulator's test person; the page shows only the name


def scan_as_person(server, qr_data, name=BANKID_NAME):
    """What the BankID app does: scan the code the page shows, as the test person, and approve."""
    status, _, body = server.get("/sim/v1/persons")
    check(status == 200, f"GET /sim/v1/persons answered {status}")
    persons = json.loads(body)["persons"]
    person = next((p for p in persons if p["name"] == name), None)
    check(person, f"the simulator has no {name}")
    # The personal number goes to the simulator only; it is never printed.
    status, answer = server.post("/sim/v1/scan", {
        "qrData": qr_data, "personalNumber": person["personalNumber"], "action": "approve"})
    check(status == 200, f"the simulator refused the scan: {status} {answer.get('code') or answer}")


def run_bankid_qr(server, page, buttons, name=BANKID_NAME):
    """Starts an order with the "another device" button in `buttons` and scans its QR code."""
    page.find(f"{buttons} button[data-device='other']").click()
    qr = page.bankid_qr()
    check(page.driver.switch_to.active_element.get_attribute("id") == "bankid-heading",
          "focus did not move to the BankID panel")
    message = page.find("#bankid-message").text
    check(message, "no BankID message is shown")
    check("valid for" in page.find("#bankid-countdown").text, "no countdown")
    src = page.find("#bankid-qr-image").get_attribute("src")
    check(src.startswith("data:image/svg+xml;base64,"), f"the QR code is not an SVG image: {src[:40]!r}")
    scan_as_person(server, page.bankid_qr(), name)  # the current code: the app refuses a stale one
    return qr


def step_bankid_sign_up(server, page):
    # A new account for the BankID journey (its state stays apart from the passkey steps above).
    if page.state() == "signed-in":
        page.find("#signout").click()
        page.wait_state("signed-out")
    # Tove's own phone: a fresh authenticator, which the journey loses later.
    page.driver.remove_virtual_authenticator()
    add_authenticator(page.driver)
    page.open()
    for block in ("#bankid-login", "#bankid-signup", "#bankid-recovery"):
        check(page.find(block).is_displayed(), f"{block} is hidden although /v1/methods has it on")
    page.type("#signup-username", "tove")
    page.type("#signup-display", "Tove Test")
    page.find("#signup-button").click()
    page.wait_state("signed-in")
    page.wait_status("Your account is ready")
    check(page.find("#bankid-link-state").text == "BankID is not linked to your account.",
          f"BankID state: {page.find('#bankid-link-state').text!r}")


def step_bankid_link(server, page):
    page.find("#bankid-link button[data-device='other']").click()
    page.bankid_qr()
    check(page.find("#bankid-heading").text == "Link BankID", "the panel is not for linking")
    # The code is a toggle button: full screen and back, also with Escape.
    qr_button = page.find("#bankid-qr")
    check(qr_button.get_attribute("aria-label") == "Show the QR code full screen", "the QR button has no name")
    qr_button.click()
    check(qr_button.get_attribute("aria-pressed") == "true", "the QR code did not go full screen")
    size = page.find("#bankid-qr-image").size
    check(size["width"] > 400, f"the full-screen QR code is {size['width']} px wide")
    page.screenshot("bankid_qr_full_screen")
    qr_button.send_keys(Keys.ESCAPE)
    check(qr_button.get_attribute("aria-pressed") == "false", "Escape did not close the full screen")
    # The countdown: visible every second, read to screen readers only every 10 s.
    check(page.find("#bankid-countdown").get_attribute("aria-hidden") == "true", "the countdown is announced")
    check(page.find("#bankid-countdown-live").get_attribute("aria-live") == "polite", "no polite countdown")
    page.screenshot("bankid_qr")
    scan_as_person(server, page.bankid_qr())
    page.wait_status("BankID is now linked to your account.")
    page.wait(lambda: page.find("#bankid-link-state").text == f"BankID is linked to your account ({BANKID_NAME}).",
              "the account to show BankID linked")
    check(not page.find("#bankid-link").is_displayed(), "the link buttons are still offered")
    check(not page.find("#bankid").is_displayed(), "the BankID panel is still open")


def step_bankid_qr_expires(server, page):
    # A QR code works for 30 s: then the page ends the order and offers a new one. The test moves
    # the order's start back rather than waiting.
    page.driver.delete_all_cookies()
    page.open()
    page.find("#bankid-login button[data-device='other']").click()
    first = page.bankid_qr()
    page.driver.execute_script("order.startedAt -= 31000")
    page.wait(lambda: "no longer valid" in page.find("#bankid-message").text, "the QR code to expire")
    check(not page.find("#bankid-qr").is_displayed(), "the expired QR code is still shown")
    restart = page.find("#bankid-restart")
    check(page.driver.switch_to.active_element == restart, "focus did not move to Start again")
    page.screenshot("bankid_qr_expired")
    # The page's own message follows the language button (BankID's come in the request's language).
    page.find("#language").click()
    check(page.find("#bankid-message").text.startswith("QR-koden gäller inte längre"), "not redrawn in Swedish")
    page.find("#language").click()
    check(page.find("#bankid-message").text.startswith("The QR code is no longer valid"), "not back in English")
    restart = page.find("#bankid-restart")
    restart.click()
    page.wait(lambda: page.bankid_qr().split(".")[1] != first.split(".")[1], "a new order's QR code")


def step_bankid_cancel(server, page):
    # Cancelling the running order: the panel goes, the order is cancelled at BankID.
    page.bankid_qr()
    order_path = page.driver.execute_script("return order && `/v1/bankid/orders/${order.id}`")
    check(order_path, "no order is running")
    page.find("#bankid-cancel").click()
    page.wait_status("BankID was cancelled.")
    check(not page.find("#bankid").is_displayed(), "the panel is still open")
    page.wait(lambda: "RFA3" in page.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0]).then(r => r.json()).then(j => done(JSON.stringify(j)), e => done(String(e)));",
        order_path), "the order to be cancelled (RFA3)")


def step_bankid_text_and_mrtd(server, page):
    # What the user is asked to approve: the simulated BankID app (/sim/, in a second tab) shows
    # the order's text, the recovery's built-in one naming the service in the browser's language
    # (English); the recovery requires the ID-document check, so the app asks for it (userMrtd)
    # and the sign-in page shows BankID's RFA23 message.
    page.driver.delete_all_cookies()
    page.open()
    page.find("#bankid-recovery button[data-device='other']").click()
    qr = page.bankid_qr()
    main_window = page.driver.current_window_handle
    page.driver.switch_to.new_window("tab")
    try:
        page.driver.get(server.url + "/sim/")
        page.wait(lambda: len(page.all("#person option")) > 0, "the simulator's test persons")
        page.type("#code", qr)
        Select(page.find("#action")).select_by_visible_text("open")
        page.find("#go").click()
        page.wait(lambda: page.find("#asked").is_displayed(), "the text the app asks to approve")
        text = page.find("#text").text
        check(text == "Recover access to your account with Portvakt. You then add a new passkey.",
              f"the simulated app shows {text!r}")
        check("userMrtd" in page.find("#hint").text, f"no ID-document step: {page.find('#hint').text!r}")
        page.screenshot("bankid_simulator_text")
    finally:
        page.driver.close()
        page.driver.switch_to.window(main_window)
    rfa23 = "Take a photo of, and scan, your ID document with the BankID app."
    page.wait(lambda: page.find("#bankid-message").text == rfa23, "the RFA23 message")
    check(not page.find("#bankid-qr").is_displayed(), "the QR code is still shown after the app opened it")
    page.screenshot("bankid_mrtd")
    page.find("#bankid-cancel").click()
    page.wait_status("BankID was cancelled.")


def step_bankid_login(server, page):
    # Another browser: no session cookie (the passkey session stays alive on the server, like a
    # phone that is about to be lost).
    page.driver.delete_all_cookies()
    page.open()
    check(page.state() == "signed-out", "still signed in without a cookie")
    run_bankid_qr(server, page, "#bankid-login")
    page.wait_state("signed-in")
    page.wait_status("Add a passkey on this device")
    check(page.find("#account-heading").text == "Signed in as Tove Test", "BankID signed in someone else")
    current = [s for s in page.sessions() if "current" in s.get_attribute("class")]
    check(current and "bankid" in current[0].text, "the session is not a BankID session")


def step_lose_authenticator(server, page):
    check(len(page.passkey_names()) == 1, f"passkeys before the loss: {page.passkey_names()}")
    page.driver.remove_virtual_authenticator()
    page.find("#signout").click()
    page.wait_state("signed-out")
    page.wait_status("You are signed out.")


def step_bankid_recovery(server, page):
    check(page.find("#recovery-heading").text == "Lost your passkey?", "no recovery offer")
    run_bankid_qr(server, page, "#bankid-recovery")
    page.wait(lambda: page.find("#enroll-form").is_displayed(), "the new-passkey form")
    page.wait_status("BankID confirmed who you are.")
    check("get back into your account" in page.find("#enroll-hint").text, "the recovery hint is missing")
    add_authenticator(page.driver)
    page.find("#enroll-button").click()
    page.wait_state("signed-in")
    page.wait_status("Your new passkey is ready and you are signed in.")
    check(page.find("#account-heading").text == "Signed in as Tove Test", "recovered into the wrong account")
    # The policy: the old passkey and the lost phone's session are gone, and the page says so.
    status = page.status()
    check("Your other session was ended." in status, f"no word on the ended session: {status!r}")
    check("Your old passkey was removed." in status, f"no word on the removed passkey: {status!r}")
    check(page.session_count() == 1, f"{page.session_count()} sessions after the recovery")


def step_sign_in_new_passkey(server, page):
    page.find("#signout").click()
    page.wait_state("signed-out")
    page.find("#signin-username").clear()
    page.find("#signin-button").click()
    page.wait_state("signed-in")
    page.wait_status("You are signed in.")
    check(page.find("#account-heading").text == "Signed in as Tove Test", "the new passkey opened another account")


def step_old_passkey_revoked(server, page):
    # recovery.revokeOldPasskeys is on: only the passkey enrolled in the recovery is left.
    check(len(page.passkey_names()) == 1, f"passkeys after the recovery: {page.passkey_names()}")
    found = server.admin("GET", "/admin/v1/users?search=tove")
    user = next(u for u in found["users"] if u.get("username") == "tove")
    detail = server.admin("GET", f"/admin/v1/users/{user['id']}")
    check(len(detail["passkeys"]) == 1, f"the server keeps {len(detail['passkeys'])} passkeys")
    check(detail["bankId"]["name"] == BANKID_NAME, "the BankID link is gone")


def step_bankid_first_sign_up(server, page):
    # Someone without an account signs in with BankID: no account, and the page points to BankID
    # sign-up, which creates one. The order runs in Swedish first: BankID's message follows the
    # page's language (Accept-Language), not the browser's.
    page.driver.delete_all_cookies()
    page.open()
    page.find("#language").click()
    page.find("#bankid-login button[data-device='other']").click()
    page.bankid_qr()
    page.wait(lambda: page.find("#bankid-message").text == "Starta BankID-appen.", "BankID's message in Swedish")
    check(page.find("#bankid-heading").text == "Logga in med BankID", "the panel is not in Swedish")
    check(page.find("#bankid-countdown").text.startswith("QR-koden gäller"), "the countdown is not in Swedish")
    page.screenshot("bankid_swedish")
    page.find("#language").click()
    page.wait(lambda: page.find("#bankid-message").text == "Start your BankID app.", "BankID's message in English")
    scan_as_person(server, page.bankid_qr(), "Anna Testsson")
    page.wait_status("No account is linked to this BankID. You can create one with BankID.")
    focused = page.driver.switch_to.active_element.get_attribute("id")
    check(focused == "bankid-signup-heading", f"focus went to {focused!r}, not BankID sign-up")
    run_bankid_qr(server, page, "#bankid-signup", "Anna Testsson")
    page.wait_state("signed-in")
    page.wait_status("Your account is ready and you are signed in. Add a passkey")
    check(page.find("#account-heading").text == "Signed in as Anna Testsson", "the account has another name")
    check(page.find("#bankid-link-state").text == "BankID is linked to your account (Anna Testsson).",
          "the new account does not show its BankID")


def step_bankid_login_of_its_own(server, page):
    # A deployment that keeps BankID's rule against ID switching (rehearsed on the simulator with
    # bankid.idSwitching acknowledged false): BankID signs up and in, and nothing on the page offers
    # to turn that identification into a passkey, link it, or recover a passkey with it.
    strict = Server(server.binary, {
        "bankid": {"idSwitching": {"acknowledged": False}},
        "methods": {"bankid": {"link": False, "recovery": False}},
    })
    try:
        other = Page(page.driver, strict.url)
        other.screenshot_prefix = page.screenshot_prefix
        page.driver.delete_all_cookies()
        other.open()
        check(not other.find("#bankid-recovery").is_displayed(), "recovery is offered although it is off")
        run_bankid_qr(strict, other, "#bankid-signup", "Maria Exempelsson")
        other.wait_state("signed-in")
        other.wait_status("Your account is ready and you are signed in.")
        check("passkey" not in other.find("#status").text, f"a passkey is suggested: {other.find('#status').text!r}")
        check(not other.find("#add-passkey-form").is_displayed(), "a BankID session is offered to add a passkey")
        check(not other.find("#bankid-link").is_displayed(), "linking is offered although it is off")
        other.screenshot("bankid_login_of_its_own")
    finally:
        strict.stop()


def step_bankid_same_device(server, page):
    # BankID on this device: the page opens BankID's launch link (there is no app here, so the
    # navigation fails and the test reads the token from the address), the simulator plays the app
    # and hands back the returnUrl it would open, and the page, loaded at that address, finishes
    # the order with the nonce and signs the user in.
    page.driver.delete_all_cookies()
    page.open()
    page.find("#bankid-login button[data-device='same']").click()
    page.wait(lambda: "autostarttoken=" in page.driver.current_url, "the BankID launch link")
    launched = urllib.parse.urlparse(page.driver.current_url)
    check(launched.netloc == "app.bankid.com", f"the launch link goes to {launched.netloc}")
    token = urllib.parse.parse_qs(launched.query)["autostarttoken"][0]
    status, _, body = server.get("/sim/v1/persons")
    person = next(p for p in json.loads(body)["persons"] if p["name"] == "Anna Testsson")
    status, answer = server.post("/sim/v1/autostart", {
        "autoStartToken": token, "personalNumber": person["personalNumber"], "action": "approve"})
    check(status == 200, f"the simulator refused the autostart: {status}")
    return_url = answer.get("returnUrl", "")
    check(return_url.startswith(server.url + "/?nonce="), "the app has no returnUrl with a nonce to open")
    page.driver.get(return_url)
    page.wait_state("signed-in")
    check(page.find("#account-heading").text == "Signed in as Anna Testsson", "BankID signed in someone else")
    check("nonce" not in page.driver.current_url, "the nonce stays in the address bar")
    check(page.driver.execute_script("return localStorage.getItem('portvakt.bankid')") is None,
          "the finished order is still remembered")


def step_bankid_without_passkeys(server, page):
    # A browser without WebAuthn: the passkey forms and recovery (which ends with a new passkey)
    # are gone, and BankID still signs the user in.
    page.driver.delete_all_cookies()
    page.override("no-webauthn", "delete window.PublicKeyCredential;")
    try:
        page.open()
        page.wait_status("This browser cannot use passkeys. You can sign in with BankID.")
        check(not page.find("#signin-form").is_displayed(), "the passkey sign-in form is shown")
        check(not page.find("#signup-form").is_displayed(), "the passkey sign-up form is shown")
        check(not page.find("#bankid-recovery").is_displayed(), "recovery is offered without passkeys")
        check(page.find("#bankid-login").is_displayed(), "BankID login is not offered")
        page.screenshot("no_webauthn")
        run_bankid_qr(server, page, "#bankid-login", "Anna Testsson")
        page.wait_state("signed-in")
        page.wait_status("You are signed in.")
        check("passkey" not in page.status(), "a passkey is suggested to a browser that cannot make one")
        check(page.find("#account-heading").text == "Signed in as Anna Testsson", "BankID signed in someone else")
        check(not page.find("#add-passkey-form").is_displayed(), "adding a passkey is offered without WebAuthn")
    finally:
        page.restore("no-webauthn")


def step_unknown_credential(server, page):
    # A passkey whose account an administrator deleted is unknown to the server: the refused login
    # carries signals.unknownCredential, the page hands it to signalUnknownCredential, and
    # Chromium's virtual authenticator forgets the passkey.
    page.driver.delete_all_cookies()
    page.driver.remove_virtual_authenticator()
    add_authenticator(page.driver)
    page.open()
    page.type("#signup-username", "zed")
    page.type("#signup-display", "Zed Zero")
    page.find("#signup-button").click()
    page.wait_state("signed-in")
    (zed_passkey,) = page.passkey_ids()
    check([credential_id(c) for c in page.driver.get_credentials()] == [zed_passkey],
          "the authenticator does not hold zed's passkey")
    found = server.admin("GET", "/admin/v1/users?search=zed")
    user = next(u for u in found["users"] if u.get("username") == "zed")
    server.admin("DELETE", f"/admin/v1/users/{user['id']}")
    page.open()
    page.wait_state("signed-out")
    page.forget_recorded("test.signals")
    page.find("#signin-username").clear()
    page.find("#signin-button").click()
    page.wait(lambda: page.find("#status").get_attribute("class") == "error" and page.idle(),
              "the refusal of the unknown passkey")
    check(page.state() == "signed-out", "an unknown passkey signed in")
    unknown = page.signal_calls("signalUnknownCredential")
    check(unknown == [{"rpId": "localhost", "credentialId": zed_passkey}],
          f"signalUnknownCredential calls: {unknown}, expected zed's {zed_passkey!r}")
    check(not page.signal_calls("signalAllAcceptedCredentials"), "a refusal named an account's passkeys")
    page.wait(lambda: not page.driver.get_credentials(), "the virtual authenticator to forget the passkey")


def step_bankid_conditional_create(server, page):
    # After a BankID login that suggests a passkey, the page asks for one with conditional create
    # where the browser reports conditionalCreate. Which path ran depends on this Chromium, and
    # the step says which: a passkey made without a click, or the button after the browser did
    # not make one.
    page.restore("no-upgrade")
    page.override("create-hook", CREATE_HOOK)
    try:
        page.driver.delete_all_cookies()
        page.driver.remove_virtual_authenticator()
        add_authenticator(page.driver)
        page.forget_recorded("test.creates")
        page.open()
        run_bankid_qr(server, page, "#bankid-login", "Anna Testsson")
        page.wait_state("signed-in")
        check(page.find("#account-heading").text == "Signed in as Anna Testsson", "BankID signed in someone else")
        check(page.passkey_names() == [], f"Anna already has passkeys: {page.passkey_names()}")
        capable = page.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "(PublicKeyCredential.getClientCapabilities?.() ?? Promise.resolve({}))"
            ".then(c => done(Boolean(c.conditionalCreate)), () => done(false));")
        version = page.driver.capabilities.get("browserVersion", "?")
        if capable:
            page.wait(lambda: any(c["mediation"] == "conditional" for c in page.recorded("test.creates")),
                      "the page's conditional create")
            asked = next(c for c in page.recorded("test.creates") if c["mediation"] == "conditional")
            check(asked["hints"] == ["client-device"], f"the conditional options hint {asked['hints']}")
            # A browser with nothing to upgrade may never answer: a few seconds tell.
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not page.passkey_names() and all(
                    c["outcome"] == "started" for c in page.recorded("test.creates")):
                time.sleep(0.2)
            outcomes = [c["outcome"] for c in page.recorded("test.creates")]
            if page.passkey_names():
                page.wait_status("your browser saved a passkey")
                check(outcomes == ["started", "created"], f"create calls: {outcomes}")
                check(len(page.driver.get_credentials()) == 1, "no passkey in the authenticator")
                print(f"  conditional create (Chromium {version}) registered a passkey without a click "
                      "(UP clear accepted for it)")
                return
            print(f"  Chromium {version} reports conditionalCreate and the page asked with mediation "
                  f"'conditional' and hints client-device, but it made no passkey (outcome: {outcomes[-1]}: "
                  "without a recently used saved password it has nothing to upgrade); the button path follows")
        else:
            check(not any(c["mediation"] == "conditional" for c in page.recorded("test.creates")),
                  "the page asked for conditional create although the browser cannot do it")
            print(f"  Chromium {version} does not report conditionalCreate; the button path follows")
        page.wait_status("Add a passkey on this device")
        check(page.find("#add-passkey-form").is_displayed(), "the Add a passkey button is not offered")
        page.find("#add-passkey-button").click()
        page.wait(lambda: len(page.passkey_names()) == 1, "the passkey the button made")
        page.wait_status("The passkey was added.")
        outcomes = [(c["mediation"], c["outcome"]) for c in page.recorded("test.creates")]
        check(outcomes[-1] == (None, "created"), f"the button's create: {outcomes}")
        if capable:
            check(("conditional", "AbortError") in outcomes or ("conditional", "NotAllowedError") in outcomes,
                  f"the pending conditional create was not ended before the button's: {outcomes}")
        check(len(page.driver.get_credentials()) == 1, "no passkey in the authenticator")
    finally:
        page.restore("create-hook")
        page.override("no-upgrade", WITHOUT_UPGRADE)


# Records the page's fetch calls (method, path, status) in sessionStorage, across page loads.
FETCH_HOOK = """
(() => {
  const original = window.fetch.bind(window);
  window.fetch = async (path, options = {}) => {
    const response = await original(path, options);
    const calls = JSON.parse(sessionStorage.getItem('test.fetches') || '[]');
    calls.push({ method: options.method || 'GET', path: String(path), status: response.status });
    sessionStorage.setItem('test.fetches', JSON.stringify(calls));
    return response;
  };
})();
"""


def me(page):
    """GET /v1/me from the page, with its cookie: (status, JSON or None)."""
    return page.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/v1/me', {credentials: 'same-origin'})"
        ".then(async r => done([r.status, r.ok ? await r.json() : null]), e => done([String(e), null]));")


def outwait_recent_sign_in(page):
    """Sleeps until this session's last proof of presence is older than the window (at most 31 s)."""
    authenticated = me(page)[1]["session"]["authenticatedAt"]
    proof = datetime.fromisoformat(authenticated.replace("Z", "+00:00")).timestamp()
    left = proof + REAUTHENTICATION_SECONDS + 1 - time.time()
    check(left <= REAUTHENTICATION_SECONDS + 1, f"the proof is {left:.0f} s from stale: clocks disagree")
    if left > 0:
        time.sleep(left)


def confirm_deletion(page):
    page.find("#delete-account").click()
    page.find("#delete-confirm").click()
    page.find("#delete-confirm-button").click()


def step_account_names(server, page):
    # A new account on a fresh authenticator, for the account steps (name, export, deletion).
    page.driver.delete_all_cookies()
    page.driver.remove_virtual_authenticator()
    add_authenticator(page.driver)
    page.override("fetch-hook", FETCH_HOOK)
    page.open()
    page.type("#signup-username", "edith")
    page.type("#signup-display", "Edith Export")
    page.find("#signup-button").click()
    page.wait_state("signed-in")
    check(page.find("#account-heading").text == "Signed in as Edith Export", "wrong account heading")
    check(page.find("#your-account-heading").text == "Your account", "no 'Your account' section")
    field = page.find("#account-display-field")
    check(field.get_attribute("value") == "Edith Export", f"the name field holds {field.get_attribute('value')!r}")
    label = page.find('label[for="account-display-field"]').text
    check(label == "Your name", f"the name field's label is {label!r}")
    page.forget_recorded("test.signals")
    page.type("#account-display-field", "Edith Exportsson")
    page.find("#account-display-field").send_keys(Keys.ENTER)
    page.wait_status("Your name was saved.")
    check(page.find("#account-heading").text == "Signed in as Edith Exportsson", "the heading kept the old name")
    status, answer = me(page)
    check(status == 200 and answer["user"]["displayName"] == "Edith Exportsson"
          and answer["user"]["username"] == "edith", f"GET /v1/me after the rename: {status} {answer}")
    # PATCH's signals reached the password manager: the new name, for this account.
    details = page.signal_calls("signalCurrentUserDetails")
    check(details and details[-1]["displayName"] == "Edith Exportsson" and details[-1]["name"] == "edith",
          f"signalCurrentUserDetails after the rename: {details}")
    # A taken username is refused and shown; nothing changes.
    page.type("#account-username-field", "ada")
    page.find("#names-button").click()
    page.wait_status("That username is taken.")
    check(page.find("#status").get_attribute("class") == "error", "the refusal is not shown as an error")
    check(me(page)[1]["user"]["username"] == "edith", "a taken username changed the account")
    page.type("#account-username-field", "edith")
    # In Swedish too.
    page.find("#language").click()
    page.wait(lambda: page.find("#your-account-heading").text == "Ditt konto", "the Swedish account section")
    check(page.find("#download-data").text == "Ladda ner mina uppgifter", "the download button is not Swedish")
    check(page.find("#delete-account").text == "Radera mitt konto", "the delete button is not Swedish")
    page.screenshot("account_swedish")
    page.find("#language").click()
    page.wait(lambda: page.find("#your-account-heading").text == "Your account", "English again")


def step_account_export(server, page):
    shutil.rmtree(DOWNLOADS, ignore_errors=True)
    DOWNLOADS.mkdir(parents=True)
    page.driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(DOWNLOADS)})
    page.find("#download-data").click()
    page.wait_status("Your data was downloaded as portvakt-account-")
    deadline = time.monotonic() + WAIT_SECONDS
    files = []
    while time.monotonic() < deadline:
        files = [f for f in DOWNLOADS.iterdir() if f.suffix == ".json"]
        if files:
            break
        time.sleep(0.2)
    check(len(files) == 1, f"downloaded files: {list(DOWNLOADS.iterdir())}")
    check(re.fullmatch(r"portvakt-account-\d{4}-\d{2}-\d{2}\.json", files[0].name), f"file name {files[0].name}")
    text = files[0].read_text()
    export = json.loads(text)
    user = me(page)[1]["user"]
    check(export["format"] == "portvakt.account-export.v1", f"format {export.get('format')!r}")
    check(export["user"]["id"] == user["id"] and export["user"]["username"] == "edith"
          and export["user"]["displayName"] == "Edith Exportsson", f"the export's user: {export['user']}")
    check([p["id"] for p in export["passkeys"]] == page.passkey_ids(), "the export's passkeys differ from the list")
    # No secret in it: no session or enrollment token, not this session's cookie value.
    cookie = next(c["value"] for c in page.driver.get_cookies() if c["name"].endswith("portvakt_session"))
    check("pvs_" not in text and "pve_" not in text and cookie not in text, "the export holds a token")
    page.driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "default"})


def step_account_delete(server, page):
    # The confirmation: a modal dialog, focus inside, Escape cancels, and nothing happens unticked.
    page.find("#delete-account").click()
    dialog = page.find("#delete-dialog")
    check(dialog.get_attribute("open") is not None, "the confirmation did not open")
    check("cannot be undone" in page.find("#delete-consequence").text, "the dialog does not say what happens")
    check(page.driver.switch_to.active_element.get_attribute("id") == "delete-confirm", "focus is not in the dialog")
    page.screenshot("delete_dialog")
    page.driver.switch_to.active_element.send_keys(Keys.ESCAPE)
    page.wait(lambda: page.find("#delete-dialog").get_attribute("open") is None, "Escape to close the dialog")
    page.wait(lambda: page.driver.switch_to.active_element.get_attribute("id") == "delete-account",
              "focus back on the delete button")
    page.find("#delete-account").click()
    page.find("#delete-confirm-button").click()  # not ticked: the form does not submit
    check(page.find("#delete-dialog").get_attribute("open") is not None, "the dialog closed without the tick")
    check(me(page)[0] == 200, "the account went without the tick")
    # Outwait the recent sign-in: the server then asks for a re-authentication, which the page does
    # inline with the virtual authenticator, then deletes.
    outwait_recent_sign_in(page)
    page.forget_recorded("test.fetches")
    page.find("#delete-confirm").click()
    page.find("#delete-confirm-button").click()
    page.wait_state("signed-out")
    page.wait_status("Your account was deleted. You are signed out.")
    calls = [(c["method"], c["path"], c["status"]) for c in page.recorded("test.fetches")]
    expected = [("DELETE", "/v1/me", 403), ("POST", "/v1/me/reauthenticate/initialize", 200),
                ("POST", "/v1/me/reauthenticate/finalize", 200), ("DELETE", "/v1/me", 204)]
    check(calls[:4] == expected, f"the deletion's calls: {calls}")
    check(page.find("#signin-heading").is_displayed(), "the sign-in page is not shown")
    check(page.driver.switch_to.active_element.get_attribute("id") == "signin-heading", "focus is not on sign-in")
    check(me(page)[0] == 401, "GET /v1/me still answers after the deletion")
    found = server.admin("GET", "/admin/v1/users?search=edith")
    check(not [u for u in found["users"] if u.get("username") == "edith"], "the account is still there")
    page.restore("fetch-hook")


def step_account_delete_bankid(server, page):
    # An account with BankID and no passkey re-authenticates with a BankID signature: the page runs
    # a sign order in its BankID panel, then deletes. Cancelling the signature changes nothing.
    page.driver.delete_all_cookies()
    page.override("fetch-hook", FETCH_HOOK)
    try:
        page.open()
        run_bankid_qr(server, page, "#bankid-signup", "Maria Exempelsson")
        page.wait_state("signed-in")
        check(page.passkey_names() == [], f"Maria has passkeys: {page.passkey_names()}")
        outwait_recent_sign_in(page)
        confirm_deletion(page)
        page.wait(lambda: page.find("#bankid").is_displayed() and page.find("#bankid-qr").is_displayed(),
                  "the BankID signature's panel")
        check(page.find("#bankid-heading").text == "Confirm that it is you", "the panel is not the re-authentication")
        page.screenshot("reauthenticate_bankid")
        page.find("#bankid-cancel").click()
        page.wait_status("You did not confirm that it is you, so nothing was changed.")
        check(page.state() == "signed-in" and me(page)[0] == 200, "a cancelled signature deleted the account")
        page.forget_recorded("test.fetches")
        confirm_deletion(page)
        scan_as_person(server, page.bankid_qr(), "Maria Exempelsson")
        page.wait_state("signed-out")
        page.wait_status("Your account was deleted. You are signed out.")
        calls = [(c["method"], c["path"].split("?")[0], c["status"]) for c in page.recorded("test.fetches")]
        check(calls[0] == ("DELETE", "/v1/me", 403) and calls[1] == ("POST", "/v1/bankid/orders", 201)
              and calls[-1] == ("DELETE", "/v1/me", 204), f"the deletion's calls: {calls}")
        check(me(page)[0] == 401, "GET /v1/me still answers after the deletion")
    finally:
        page.restore("fetch-hook")


PAGE_STEPS = [step_page_served, step_page_loads, step_swedish]
CEREMONY_STEPS = [step_sign_up, step_sign_out, step_sign_in_discoverable, step_add_passkey, step_rename,
                  step_remove, step_sessions, step_autofill, step_fallback, step_enrollment_link,
                  step_bankid_sign_up, step_bankid_link, step_bankid_qr_expires, step_bankid_cancel,
                  step_bankid_text_and_mrtd,
                  step_bankid_login, step_lose_authenticator, step_bankid_recovery, step_sign_in_new_passkey,
                  step_old_passkey_revoked, step_bankid_first_sign_up, step_bankid_same_device,
                  step_bankid_without_passkeys, step_bankid_conditional_create, step_unknown_credential,
                  step_account_names, step_account_export, step_account_delete, step_account_delete_bankid,
                  step_bankid_login_of_its_own]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    binary = parser.parse_args().binary

    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    SCREENSHOTS.mkdir(parents=True)
    passed, failed, skipped = 0, 0, 0
    server = driver = None
    try:
        server = Server(binary)
        _, _, document = server.get("/openapi.json")
        paths = json.loads(document).get("paths", {})
        missing = [route for route in PASSKEY_ROUTES if route not in paths]
        steps = PAGE_STEPS + ([] if missing else CEREMONY_STEPS)
        if missing:
            skipped = len(CEREMONY_STEPS)
            print(f"SKIP: the passkey API is not in this build (/openapi.json lacks {', '.join(missing)}); "
                  f"only the page-level checks run, {skipped} ceremony steps skipped.")

        driver = start_browser()
        add_authenticator(driver)
        page = Page(driver, server.url)
        broken = None
        for number, step in enumerate(steps, start=1):
            name = step.__name__.removeprefix("step_")
            if broken:
                failed += 1
                print(f"FAIL {name}: not run, {broken} failed")
                continue
            started = time.monotonic()
            page.screenshot_prefix = f"{number:02d}"
            try:
                step(server, page)
                passed += 1
                print(f"ok   {name} ({time.monotonic() - started:.1f} s)")
            except Exception as error:
                failed += 1
                broken = name
                detail = str(error) if isinstance(error, StepFailed) else traceback.format_exc()
                print(f"FAIL {name}: {detail}")
                print("  browser console:", page.console_errors()[-5:])
                print("  server log (last lines):\n" + server.log_tail(10))
            finally:
                driver.save_screenshot(str(SCREENSHOTS / f"{number:02d}-{name}.png"))
    except Exception:
        failed += 1
        print("FAIL setup:", traceback.format_exc())
    finally:
        if driver:
            driver.quit()
        if server:
            server.stop()

    print(f"screenshots: {SCREENSHOTS.relative_to(ROOT)}/")
    if skipped:
        print(f"{skipped} skipped (passkey API absent)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
