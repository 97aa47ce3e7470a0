# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The lookup trainium.eks.eks_token, loaded by Ansible's plugin loader."""

from __future__ import annotations

import importlib.util
import pathlib
import urllib.parse

import pytest

from ansible.errors import AnsibleLookupError

from ansible_collections.trainium.eks.plugins.module_utils.trainium_eks_token import url_from_token

ROOT = pathlib.Path(__file__).resolve().parents[4]
_SPEC = importlib.util.spec_from_file_location("eks_authenticator", ROOT / "tools" / "rehearsal" / "eks_authenticator.py")
authenticator = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(authenticator)

SECRET = "not-a-real-secret-key"
CREDENTIALS = {"access_key": "AKIAIOSFODNN7EXAMPLE", "secret_key": SECRET}


@pytest.fixture(autouse=True)
def no_aws_environment(monkeypatch):
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_URL", "EC2_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")


class Lookup:
    """The plugin with Ansible's option handling replaced by the given options (the rest is real)."""

    def run(self, terms, variables, **options):
        from ansible_collections.trainium.eks.plugins.lookup import eks_token  # pylint: disable=import-outside-toplevel

        plugin = eks_token.LookupModule()
        plugin.set_options = lambda var_options=None, direct=None: None
        plugin.get_option = lambda name, hostvars=None: options.get(name)
        plugin.get_options = lambda hostvars=None: dict(options)
        return plugin.run(terms, variables, **options)


@pytest.fixture
def lookup():
    return Lookup()


def test_token_for_the_named_cluster(lookup):
    [token] = lookup.run([], {}, cluster_name="trn-rehearsal", region="us-west-2", endpoint_url="http://127.0.0.1:5000", **CREDENTIALS)
    assert urllib.parse.urlsplit(url_from_token(token)).netloc == "127.0.0.1:5000"
    assert authenticator.review(token, SECRET, {"127.0.0.1:5000"}, ["trn-rehearsal"])[2] == "trn-rehearsal"
    with pytest.raises(authenticator.TokenError):
        authenticator.review(token, SECRET, {"127.0.0.1:5000"}, ["another-cluster"])


def test_terms_give_one_token_each_on_the_regional_sts(lookup):
    tokens = lookup.run(["a", "b"], {}, region="eu-central-1", **CREDENTIALS)
    assert len(tokens) == 2
    hosts = {urllib.parse.urlsplit(url_from_token(t)).netloc for t in tokens}
    assert hosts == {"sts.eu-central-1.amazonaws.com"}
    assert authenticator.review(tokens[1], SECRET, hosts, ["a", "b"])[2] == "b"


def test_missing_cluster_name_or_region_is_refused(lookup):
    with pytest.raises(AnsibleLookupError, match="cluster_name: got nothing"):
        lookup.run([], {}, region="us-west-2", **CREDENTIALS)
    with pytest.raises(AnsibleLookupError, match="region: got nothing"):
        lookup.run(["c"], {}, **CREDENTIALS)
