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

Who the token's signer is, EKS learns from STS by replaying the URL; here
moto's STS GetCallerIdentity answers for the token's access key ID (and
session token): an IAM user, an assumed role (whose role is the principal,
as access entries name it), or moto's default user for the rehearsal's own
key. moto keeps no secret apart, so every signature is checked with the
rehearsal's one secret key; the access key ID names the principal.

Then, as EKS does with access entries (the rehearsal's moto keeps them, see
moto_ext_eks.py):

- a principal with an access entry in the cluster is its username (the
  entry's, `{{SessionName}}` filled in) in the entry's Kubernetes groups,
  plus `system:masters` (cluster-admin) when AmazonEKSClusterAdminPolicy is
  associated with it at cluster scope;
- a principal without one is refused in authentication mode API; in
  CONFIG_MAP and API_AND_CONFIG_MAP the aws-auth ConfigMap would decide: the
  rehearsal has none, and its own principal (the AWS_ACCESS_KEY_ID this
  authenticator runs with, which creates every cluster of the rehearsal)
  stands in for the creator EKS maps to an administrator there, as
  `rehearsal-admin` in `system:masters`; other principals are refused;
- a cluster whose description has no accessConfig (a moto without these
  additions) maps every valid token to `rehearsal-admin`, as before.

Everything else is refused with a reason.

Usage: python eks_authenticator.py HOST PORT
  env: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the rehearsal's fake
  credentials), AWS_ENDPOINT_URL (the rehearsal's AWS API, an accepted STS
  host and where clusters, callers and access entries are looked up).
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
ADMIN_USER = "rehearsal-admin"
ADMIN_GROUP = "system:masters"
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
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
    """Return ("rehearsal-admin", access key ID, cluster name) for a valid token; raise TokenError otherwise."""
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


def iam_principal(caller_arn):
    """The IAM principal an STS caller ARN stands for, as access entries name it.

    ``arn:aws:sts::111122223333:assumed-role/Admin/alice`` is the role
    ``arn:aws:iam::111122223333:role/Admin``; moto's ``arn:aws:sts::...:user/moto``
    (its answer for a key it did not issue) is the user ``arn:aws:iam::...:user/moto``.
    """
    parts = caller_arn.split(":", 5)
    if len(parts) != 6 or parts[2] != "sts":
        return caller_arn
    resource = parts[5]
    if resource.startswith("assumed-role/"):
        resource = "role/" + resource.split("/")[1]
    return ":".join(parts[:2] + ["iam", "", parts[4], resource])


def session_name(caller_arn):
    """The session of an assumed-role caller ARN; empty for anything else."""
    resource = caller_arn.split(":", 5)[-1]
    return resource.split("/", 2)[2] if resource.startswith("assumed-role/") and resource.count("/") >= 2 else ""


def _client(service, endpoint, region, access_key=None, secret_key=None, session_token=None):
    import boto3  # pylint: disable=import-outside-toplevel

    return boto3.client(service, region_name=region, endpoint_url=endpoint, aws_access_key_id=access_key,
                        aws_secret_access_key=secret_key, aws_session_token=session_token)


def list_clusters(endpoint):
    """{name: region} of the EKS clusters the rehearsal's AWS API knows, in every region it was asked about."""
    regions = {}
    for region in reversed(os.environ.get("TRAINIUM_REHEARSAL_REGIONS", "us-west-2,us-east-1,us-east-2").split(",")):
        regions.update((name, region) for name in _client("eks", endpoint, region).list_clusters()["clusters"])
    return regions


def caller(endpoint, region, secret_key, token):
    """The caller ARN moto's STS answers for the token's access key ID (and session token)."""
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(decode_token(token)).query))
    access_key = query["X-Amz-Credential"].split("/")[0]
    sts = _client("sts", endpoint, region, access_key, secret_key, query.get("X-Amz-Security-Token"))
    return sts.get_caller_identity()["Arn"]


def authorize(eks, cluster_name, caller_arn, is_rehearsal_key):
    """(username, groups) the cluster's access entries give the caller; TokenError when it has no access.

    ``eks`` is an EKS client of the cluster's region; ``is_rehearsal_key``
    says whether the token was signed with the authenticator's own key.
    """
    from botocore.exceptions import ClientError  # pylint: disable=import-outside-toplevel

    mode = (eks.describe_cluster(name=cluster_name)["cluster"].get("accessConfig") or {}).get("authenticationMode")
    if mode is None:
        return ADMIN_USER, [ADMIN_GROUP]
    principal = iam_principal(caller_arn)
    entry = None
    if mode != "CONFIG_MAP":
        try:
            entry = eks.describe_access_entry(clusterName=cluster_name, principalArn=principal)["accessEntry"]
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
    if entry is not None:
        groups = list(entry.get("kubernetesGroups") or [])
        policies = eks.list_associated_access_policies(clusterName=cluster_name, principalArn=principal)["associatedAccessPolicies"]
        if any(p["policyArn"].endswith("/" + ADMIN_POLICY) and p["accessScope"]["type"] == "cluster" for p in policies):
            groups.append(ADMIN_GROUP)
        username = (entry.get("username") or principal).replace("{{SessionName}}", session_name(caller_arn) or "session")
        return username, groups
    if mode != "API" and is_rehearsal_key:
        return ADMIN_USER, [ADMIN_GROUP]
    raise TokenError(f"{principal} has no access entry in EKS cluster {cluster_name} (authentication mode {mode})")


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
        from botocore.exceptions import BotoCoreError, ClientError  # pylint: disable=import-outside-toplevel

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
            clusters = list_clusters(config["endpoint"])
            _user, access_key, cluster = review(token, config["secret_key"], config["sts_hosts"], sorted(clusters))
            region = clusters[cluster]
            caller_arn = caller(config["endpoint"], region, config["secret_key"], token)
            user, groups = authorize(_client("eks", config["endpoint"], region), cluster, caller_arn, access_key == config["access_key"])
        except (TokenError, BotoCoreError, ClientError) as e:
            reply["status"] = {"authenticated": False, "error": str(e)}
            self.log_message("refused a token: %s", e)
        else:
            reply["status"] = {
                "authenticated": True,
                "user": {"username": user, "uid": f"aws:{access_key}", "groups": groups,
                         "extra": {"trainium.eks/cluster": [cluster], "arn": [caller_arn]}},
            }
        self._answer(200, reply)


def main(argv):
    host, port = argv[1], int(argv[2])
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    server = ThreadingHTTPServer((host, port), Handler)
    server.config = {
        "access_key": os.environ["AWS_ACCESS_KEY_ID"],
        "secret_key": os.environ["AWS_SECRET_ACCESS_KEY"],
        "endpoint": endpoint,
        # The rehearsal's AWS API is the STS endpoint its clients sign for.
        "sts_hosts": {urllib.parse.urlsplit(endpoint).netloc},
    }
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv)
