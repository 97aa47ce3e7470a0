# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's stand-in for the EKS token authenticator.

kube-apiserver sends every bearer token it does not know to this webhook
(--authentication-token-webhook-config-file) as a TokenReview. On EKS the
authenticator replays the presigned STS GetCallerIdentity URL inside a
`k8s-aws-v1.` token; moto server cannot answer such a replay (it routes a
presigned GET to S3), so this checks the URL itself instead:

- the token is `k8s-aws-v1.` + base64url(presigned URL), the URL's host is an
  STS endpoint this authenticator was told about, Action=GetCallerIdentity;
- SigV4 query signing (AWS4-HMAC-SHA256, service sts) with `host` and
  `x-k8s-aws-id` among the signed headers, X-Amz-Date no more than 15 minutes
  old and not in the future, X-Amz-Expires between 1 and 900 s and not past;
- the signature verifies with the rehearsal's secret key and x-k8s-aws-id set
  to the name of an EKS cluster that exists in the rehearsal's AWS API.

A token that passes maps to the user `rehearsal-admin` in `system:masters`,
as EKS maps the cluster creator to an administrator. Everything else is
refused with a reason.

Usage: python eks_authenticator.py HOST PORT
  env: AWS_SECRET_ACCESS_KEY (the rehearsal's fake key), AWS_ENDPOINT_URL (the
  rehearsal's AWS API, an accepted STS host and where clusters are listed).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import hmac
import json
import os
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer

TOKEN_PREFIX = "k8s-aws-v1."
MAX_AGE = datetime.timedelta(minutes=15)
CLOCK_SKEW = datetime.timedelta(minutes=5)
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


class TokenError(Exception):
    pass


def decode_token(token):
    """Return the presigned URL inside a k8s-aws-v1. token."""
    if not token.startswith(TOKEN_PREFIX):
        raise TokenError("not a k8s-aws-v1. token")
    body = token[len(TOKEN_PREFIX):]
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_", validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as e:
        raise TokenError(f"token is not base64url: {e}") from e


def _sign(key, msg):
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def sigv4_signature(secret_key, method, host, path, query, headers, date_stamp, region, service, amz_date):
    """SigV4 signature of a presigned request (query without X-Amz-Signature)."""
    canonical_query = "&".join(
        f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}" for k, v in sorted(query)
    )
    signed = sorted(headers)
    canonical_headers = "".join(f"{name}:{headers[name].strip()}\n" for name in signed)
    canonical_request = "\n".join([method, path, canonical_query, canonical_headers, ";".join(signed), EMPTY_SHA256])
    scope = f"{date_stamp}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical_request.encode("utf-8")).hexdigest()])
    key = _sign(("AWS4" + secret_key).encode("utf-8"), date_stamp)
    for part in (region, service, "aws4_request"):
        key = _sign(key, part)
    return hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def review(token, secret_key, sts_hosts, cluster_names, now=None):
    """Return (username, account) for a valid token; raise TokenError otherwise."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    url = urllib.parse.urlsplit(decode_token(token))
    if url.netloc not in sts_hosts:
        raise TokenError(f"host {url.netloc!r} is not an STS endpoint of this cluster")
    pairs = urllib.parse.parse_qsl(url.query, keep_blank_values=True)
    query = dict(pairs)
    if len(query) != len(pairs):
        raise TokenError("a query parameter appears twice")
    if query.get("Action") != "GetCallerIdentity":
        raise TokenError("the URL does not call GetCallerIdentity")
    if query.get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256":
        raise TokenError("not signed with AWS4-HMAC-SHA256")
    try:
        access_key, date_stamp, region, service, terminator = query["X-Amz-Credential"].split("/")
        signed_at = datetime.datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
        expires = int(query["X-Amz-Expires"])
        signed_headers = query["X-Amz-SignedHeaders"].split(";")
        signature = query["X-Amz-Signature"]
    except (KeyError, ValueError) as e:
        raise TokenError(f"malformed presigned URL: {e}") from e
    if service != "sts" or terminator != "aws4_request" or date_stamp != query["X-Amz-Date"][:8]:
        raise TokenError("the credential scope is not an STS one")
    if not 0 < expires <= 900:
        raise TokenError(f"X-Amz-Expires {expires} is outside 1..900")
    # Like aws-iam-authenticator, a token is good for 15 minutes after signing
    # whatever X-Amz-Expires says (`aws eks get-token` presigns for 60 s and
    # caches the token for 14 minutes).
    if signed_at > now + CLOCK_SKEW or now - signed_at > MAX_AGE:
        raise TokenError("the token has expired or is dated in the future")
    if set(signed_headers) != {"host", "x-k8s-aws-id"}:
        raise TokenError("the signed headers must be host and x-k8s-aws-id")
    unsigned = [(k, v) for k, v in pairs if k != "X-Amz-Signature"]
    for cluster in cluster_names:
        expected = sigv4_signature(
            secret_key, "GET", url.netloc, url.path or "/", unsigned,
            {"host": url.netloc, "x-k8s-aws-id": cluster}, date_stamp, region, "sts", query["X-Amz-Date"],
        )
        if hmac.compare_digest(expected, signature):
            return "rehearsal-admin", access_key, cluster
    raise TokenError("the signature does not match any cluster of this account")


def list_clusters(endpoint):
    """Names of the EKS clusters the rehearsal's AWS API knows, in every region it was asked about."""
    import boto3  # pylint: disable=import-outside-toplevel

    names = set()
    for region in os.environ.get("TRAINIUM_REHEARSAL_REGIONS", "us-west-2,us-east-1,us-east-2").split(","):
        eks = boto3.client("eks", region_name=region, endpoint_url=endpoint)
        names.update(eks.list_clusters()["clusters"])
    return sorted(names)


class Handler(BaseHTTPRequestHandler):
    server_version = "rehearsal-eks-authenticator"

    def _answer(self, status, body):
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 - http.server naming
        if urllib.parse.urlsplit(self.path).path == "/healthz":
            self._answer(200, {"status": "ok"})
        else:
            self._answer(404, {"error": "not found"})

    def do_POST(self):  # noqa: N802 - http.server naming
        # kube-apiserver adds ?timeout=...
        if urllib.parse.urlsplit(self.path).path != "/authenticate":
            self._answer(404, {"error": "not found"})
            return
        length = int(self.headers.get("Content-Length", "0"))
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
            token = request["spec"]["token"]
        except (ValueError, KeyError, TypeError):
            self._answer(400, {"error": "expected a TokenReview"})
            return
        reply = {"apiVersion": request.get("apiVersion", "authentication.k8s.io/v1"), "kind": "TokenReview"}
        config = self.server.config
        try:
            user, access_key, cluster = review(token, config["secret_key"], config["sts_hosts"], list_clusters(config["endpoint"]))
        except TokenError as e:
            reply["status"] = {"authenticated": False, "error": str(e)}
            self.log_message("refused a token: %s", e)
        else:
            reply["status"] = {
                "authenticated": True,
                "user": {"username": user, "uid": f"aws:{access_key}", "groups": ["system:masters"],
                         "extra": {"trainium.eks/cluster": [cluster]}},
            }
        self._answer(200, reply)


def main(argv):
    host, port = argv[1], int(argv[2])
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    server = ThreadingHTTPServer((host, port), Handler)
    server.config = {
        "secret_key": os.environ["AWS_SECRET_ACCESS_KEY"],
        "endpoint": endpoint,
        # The rehearsal's AWS API is the STS endpoint its clients sign for.
        "sts_hosts": {urllib.parse.urlsplit(endpoint).netloc},
    }
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv)
