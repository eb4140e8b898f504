"""Signed access tokens checked the way an app's server checks them: PyJWT (an independent JWT
library from PyPI) with PyJWKClient against /.well-known/jwks.json, before and after a key
rotation made with `portvakt admin keys rotate` while the server runs."""

import base64
import json
import secrets
import time

import jwt
import pytest

AUDIENCE = "https://api.example.se"
REVIEWER = "backends.reviewer"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.fixture
def server(portvakt_server):
    code = "backends-" + secrets.token_hex(16)
    unlimited = {"burst": 100000, "perSecond": 100000}
    started = portvakt_server(
        {
            "rateLimits": {"default": unlimited, "auth": unlimited, "backend": unlimited},
            "reviewAccount": {"enabled": True, "username": REVIEWER},
            "accessTokens": {"enabled": True, "audience": AUDIENCE, "lifetimeSeconds": 60},
        },
        {
            "PORTVAKT_REVIEW_CODE": code,
            "PORTVAKT_ACCESS_TOKEN_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
        },
    )
    login = started.request("POST", "/v1/review/login",
                            {"username": REVIEWER, "code": code, "client": "native"})
    assert login.status == 200, login.body
    started.session = login.json()["session"]["token"]
    me = started.request("GET", "/v1/me", headers={"Authorization": f"Bearer {started.session}"})
    assert me.status == 200, me.body
    started.me = me.json()
    return started


def access_token(server):
    response = server.request("POST", "/v1/session/access-token",
                              headers={"Authorization": f"Bearer {server.session}"})
    assert response.status == 200, response.body
    assert response.headers["Cache-Control"] == "no-store"
    return response.json()


def verify(server, token, **options):
    # A new client each time: no key cached from an earlier fetch.
    keys = jwt.PyJWKClient(server.url + "/.well-known/jwks.json", cache_keys=False, cache_jwk_set=False)
    key = keys.get_signing_key_from_jwt(token).key
    return jwt.decode(token, key, algorithms=["ES256"], audience=AUDIENCE, issuer=server.url, **options)


def kid(token):
    return jwt.get_unverified_header(token)["kid"]


def published_kids(server):
    response = server.request("GET", "/.well-known/jwks.json")
    assert response.status == 200
    assert response.headers["Cache-Control"] == "public, max-age=300"
    return [key["kid"] for key in response.json()["keys"]]


def test_verifies_with_every_claim(server):
    issued = access_token(server)
    token = issued["accessToken"]
    header = jwt.get_unverified_header(token)
    assert header["alg"] == "ES256" and header["typ"] == "JWT"
    claims = verify(server, token)
    assert claims["sub"] == server.me["user"]["id"]
    assert claims["sid"] == server.me["session"]["id"]
    assert claims["amr"] == ["review"]
    assert claims["aud"] == AUDIENCE and claims["iss"] == server.url
    assert claims["exp"] - claims["iat"] == 60
    assert len(unb64url(claims["jti"])) == 16
    # expiresAt is the same instant as exp, in RFC 3339.
    assert issued["expiresAt"] == time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(claims["exp"]))
    # Every token has its own id.
    assert verify(server, access_token(server)["accessToken"])["jti"] != claims["jti"]


def test_rotation_keeps_old_tokens_valid_and_new_ones_carry_the_new_kid(server):
    before = access_token(server)["accessToken"]
    old_kid = kid(before)
    assert published_kids(server) == [old_kid]
    output = server.cli("admin", "keys", "rotate")
    assert "New signing key" in output
    # The running server picks the rotation up within seconds (its ring reloads every 5 s and the
    # new key signs 10 s after the rotation): bounded, with a clear failure.
    deadline = time.monotonic() + 20
    after = None
    while time.monotonic() < deadline:
        candidate = access_token(server)["accessToken"]
        if kid(candidate) != old_kid:
            after = candidate
            break
        time.sleep(0.5)
    assert after is not None, "no token with a new kid within 20 s of `portvakt admin keys rotate`"
    new_kid = kid(after)
    assert verify(server, after)["sub"] == server.me["user"]["id"]
    # The old token still verifies: its key stays published until its last token has expired.
    assert verify(server, before)["sub"] == server.me["user"]["id"]
    assert published_kids(server) == [old_kid, new_kid]
    listed = server.cli("admin", "keys", "list")
    assert old_kid in listed and new_kid in listed


def test_tampered_token_is_refused(server):
    token = access_token(server)["accessToken"]
    header, payload, signature = token.split(".")
    claims = json.loads(unb64url(payload))
    claims["sub"] = "usr_someone_else"
    forged = ".".join([header, b64url(json.dumps(claims).encode()), signature])
    with pytest.raises(jwt.InvalidSignatureError):
        verify(server, forged)
    # A changed signature byte (in the middle, so it is not lost in base64url's padding bits).
    raw = bytearray(unb64url(signature))
    raw[10] ^= 0x01
    with pytest.raises(jwt.InvalidSignatureError):
        verify(server, ".".join([header, payload, b64url(bytes(raw))]))


def test_expired_token_is_refused(server):
    token = access_token(server)["accessToken"]
    assert verify(server, token)
    # The verifier's clock a lifetime (60 s) and a second ahead: a negative leeway. The iat check
    # would call the token issued in the future at that clock, so only it is off.
    with pytest.raises(jwt.ExpiredSignatureError):
        verify(server, token, leeway=-61, options={"verify_iat": False})


def test_wrong_audience_and_issuer_are_refused(server):
    token = access_token(server)["accessToken"]
    keys = jwt.PyJWKClient(server.url + "/.well-known/jwks.json")
    key = keys.get_signing_key_from_jwt(token).key
    with pytest.raises(jwt.InvalidAudienceError):
        jwt.decode(token, key, algorithms=["ES256"], audience="https://other.example.se", issuer=server.url)
    with pytest.raises(jwt.InvalidIssuerError):
        jwt.decode(token, key, algorithms=["ES256"], audience=AUDIENCE, issuer="https://other.example.se")
    # A token of another algorithm under the same kid is refused by the pinned algorithm.
    forged = jwt.encode({"sub": "x", "aud": AUDIENCE}, secrets.token_bytes(32), algorithm="HS256",
                        headers={"kid": kid(token)})
    with pytest.raises(jwt.InvalidAlgorithmError):
        jwt.decode(forged, key, algorithms=["ES256"], audience=AUDIENCE)


def test_no_token_without_a_session(server):
    response = server.request("POST", "/v1/session/access-token")
    assert response.status == 401
    assert response.json()["code"] == "session.missing"
