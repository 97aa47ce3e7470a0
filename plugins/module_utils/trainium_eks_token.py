# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""EKS bearer tokens, made with botocore alone.

An EKS token is ``k8s-aws-v1.`` followed by the URL-safe base64 (no padding)
of a presigned STS ``GetCallerIdentity`` GET URL whose SigV4 signature covers
the headers ``host`` and ``x-k8s-aws-id`` (the cluster name). This is what
``aws eks get-token`` and aws-iam-authenticator produce: the URL is presigned
for 60 seconds, and the EKS authenticator accepts it for 15 minutes after it
was signed, so the token is reported to expire 14 minutes after it was made.

The file has three uses and needs only the Python standard library and
botocore, so that it also runs outside Ansible:

- the lookup ``trainium.eks.eks_token`` calls ``make_token`` with an STS
  client built from its AWS options;
- the role ``trainium.eks.eks_cluster`` copies this file next to the
  kubeconfig it writes and names it as the kubeconfig's exec credential
  plugin: ``python3 <cluster>-eks-token.py --cluster-name N --region R
  [--endpoint-url U] [--profile P]`` prints an ExecCredential
  (``client.authentication.k8s.io/v1beta1``) on stdout;
- tests import the pure helpers.

As the exec plugin it runs under whatever ``python3`` kubectl finds on PATH
(no virtualenv path is written into the kubeconfig, so rebuilding or moving
one breaks nothing). That Python signs with botocore when it has it;
without botocore the token comes from ``aws eks get-token`` when the AWS CLI
is on PATH (the same token, the CLI's STS endpoint set by
``AWS_ENDPOINT_URL_STS`` when ``--endpoint-url`` is given), and otherwise the
helper fails with a message that says what to install.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import json
import os
import shutil
import subprocess
import sys

try:
    import botocore.session
    from botocore.exceptions import BotoCoreError
    from botocore.exceptions import ClientError
    HAS_BOTOCORE = True
except ImportError:  # reported by the callers; the exec plugin falls back to the AWS CLI
    BotoCoreError = ClientError = Exception
    HAS_BOTOCORE = False

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
PRESIGN_SECONDS = 60
TOKEN_LIFETIME = datetime.timedelta(minutes=15)
EXPIRY_MARGIN = datetime.timedelta(minutes=1)
EXEC_CREDENTIAL_API_VERSION = "client.authentication.k8s.io/v1beta1"


def sts_client(region, endpoint_url=None, profile=None, access_key=None, secret_key=None, session_token=None):
    """A botocore STS client for the region's own STS endpoint (or endpoint_url)."""
    session = botocore.session.Session(profile=profile or None)
    # The global endpoint is not what EKS expects in every partition; ask the
    # region's endpoint explicitly (the default of current botocore anyway).
    session.set_config_variable("sts_regional_endpoints", "regional")
    return session.create_client(
        "sts",
        region_name=region,
        endpoint_url=endpoint_url or None,
        aws_access_key_id=access_key or None,
        aws_secret_access_key=secret_key or None,
        aws_session_token=session_token or None,
    )


def presign_url(client, cluster_name, expires_in=PRESIGN_SECONDS):
    """A presigned GetCallerIdentity URL with x-k8s-aws-id signed in."""
    if not cluster_name:
        raise ValueError("cluster_name: got an empty name; allowed: the name of an EKS cluster")

    def add_cluster_header(request, **_kwargs):
        request.headers[CLUSTER_ID_HEADER] = cluster_name

    event = "before-sign.sts.GetCallerIdentity"
    unique_id = "trainium-eks-token-" + cluster_name
    client.meta.events.register(event, add_cluster_header, unique_id=unique_id)
    try:
        return client.generate_presigned_url(
            "get_caller_identity", Params={}, ExpiresIn=expires_in, HttpMethod="GET",
        )
    finally:
        client.meta.events.unregister(event, add_cluster_header, unique_id=unique_id)


def token_from_url(url):
    """k8s-aws-v1. + base64url(url) without padding."""
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode("utf-8")).decode("ascii").rstrip("=")


def url_from_token(token):
    """The presigned URL inside a token (the inverse of token_from_url)."""
    if not token.startswith(TOKEN_PREFIX):
        raise ValueError("not a k8s-aws-v1. token")
    body = token[len(TOKEN_PREFIX):]
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8")


def expiration_for(signed_at):
    """When a token signed at signed_at should be replaced: 15 minutes minus a margin."""
    return signed_at + TOKEN_LIFETIME - EXPIRY_MARGIN


def format_timestamp(moment):
    """RFC 3339 in UTC with a Z, as Kubernetes expects."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_token(client, cluster_name, now=None):
    """Return {'token', 'expiration' (RFC 3339)} for the cluster."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    url = presign_url(client, cluster_name)
    return {"token": token_from_url(url), "expiration": format_timestamp(expiration_for(now))}


def exec_credential(token, expiration):
    """The ExecCredential a kubeconfig exec plugin prints."""
    return {
        "kind": "ExecCredential",
        "apiVersion": EXEC_CREDENTIAL_API_VERSION,
        "spec": {},
        "status": {"expirationTimestamp": expiration, "token": token},
    }


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Print an ExecCredential with an EKS token (kubeconfig exec credential plugin).",
    )
    parser.add_argument("--cluster-name", required=True, help="EKS cluster name (signed as x-k8s-aws-id)")
    parser.add_argument("--region", required=True, help="AWS region of the cluster")
    parser.add_argument("--endpoint-url", default=None, help="STS endpoint URL (default: the region's STS endpoint)")
    parser.add_argument("--profile", default=None, help="AWS profile (default: the usual credential chain)")
    return parser.parse_args(argv)


class TokenError(Exception):
    """No token could be made; the message says why and what to do."""


def cli_command(args, aws):
    """(argv, environment) of ``aws eks get-token`` for the helper's arguments."""
    argv = [aws, "eks", "get-token", "--cluster-name", args.cluster_name, "--region", args.region, "--output", "json"]
    if args.profile:
        argv += ["--profile", args.profile]
    env = dict(os.environ)
    if args.endpoint_url:
        # get-token has no option for its STS endpoint; botocore reads this one.
        env["AWS_ENDPOINT_URL_STS"] = args.endpoint_url
    return argv, env


def token_from_cli(args, which=shutil.which, run=subprocess.run):
    """{'token', 'expiration'} from ``aws eks get-token``; TokenError when there is no AWS CLI or it fails."""
    aws = which("aws")
    if not aws:
        raise TokenError(
            f"{sys.executable} cannot import botocore and there is no AWS CLI (aws) on PATH; install botocore for this Python "
            f"({os.path.basename(sys.executable)} -m pip install --user botocore), install the AWS CLI, or put a Python "
            "that has botocore first on PATH as python3 (for example a virtualenv's bin directory)"
        )
    argv, env = cli_command(args, aws)
    done = run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise TokenError(f"{' '.join(argv[:3])} failed ({done.returncode}): {done.stderr.strip()}")
    try:
        status = json.loads(done.stdout)["status"]
        token, expiration = status["token"], status["expirationTimestamp"]
    except (ValueError, KeyError, TypeError) as e:
        raise TokenError(f"{' '.join(argv[:3])} printed no ExecCredential: {e}") from e
    if not str(token).startswith(TOKEN_PREFIX):
        raise TokenError(f"{' '.join(argv[:3])} printed a token that is not a {TOKEN_PREFIX} token")
    return {"token": token, "expiration": expiration}


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if HAS_BOTOCORE:
            client = sts_client(args.region, endpoint_url=args.endpoint_url, profile=args.profile)
            token = make_token(client, args.cluster_name)
        else:
            token = token_from_cli(args)
    except (BotoCoreError, ClientError, ValueError, TokenError) as e:
        sys.stderr.write(f"trainium_eks_token: cannot make a token for cluster {args.cluster_name}: {e}\n")
        return 1
    sys.stdout.write(json.dumps(exec_credential(token["token"], token["expiration"])) + "\n")
    return 0


if __name__ == "__main__":
    # Run as the kubeconfig's exec credential plugin; the exit status tells kubectl.
    raise SystemExit(main())
