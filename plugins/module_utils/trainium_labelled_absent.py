# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Objects of several kinds found by all of some labels, deleted in one
process, then waited for until they are gone (module ``labelled_objects_absent``).

``delete_labelled`` decides and waits; ``KubeObjects`` makes its calls
(discovery of a kind's resource, a paged list by label selector, a delete by
name) through ``trainium_kube``. The tests give ``delete_labelled`` a stand-in
with the same three methods, a clock and a sleep.
"""

from __future__ import annotations

import re
import time

from ansible_collections.trainium.eks.plugins.module_utils import trainium_kube as kube
from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import DNS_LABEL_RE, LABEL_VALUE_RE

PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")
# The wait checks right after the deletions, then after these pauses, then every poll interval.
FIRST_PAUSES = (0.25, 0.5)
PAGE_SIZE = 500
# Kubernetes' label syntax: an optional DNS-subdomain prefix and a name; values may be empty.
LABEL_NAME = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
API_VERSION = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?v[0-9]+((alpha|beta)[0-9]+)?$")
# What a path segment from the API server (a resource's or an object's name) may be; anything else is not followed.
SEGMENT = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9_.:]*$")


class DeleteError(Exception):
    """A call that failed, or objects still there at the timeout; ``result`` is what was done until then."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result or {}


def label_problems(labels):
    """The ``<variable>: got ...; allowed: ...`` lines of labels that cannot make a selector (none at all included)."""
    if not labels:
        return ["labels: got {}; allowed: at least one label (no selector would match every object of the kinds)"]
    problems = []
    for key, value in labels.items():
        if not LABEL_NAME.match(str(key)) or len(str(key).rsplit("/", maxsplit=1)[-1]) > 63:
            problems.append(f"labels: got key {key!r} ({type(key).__name__}); allowed: a label name, [prefix/]name of at most 63 characters")
        if not isinstance(value, str) or not LABEL_VALUE_RE.match(value):
            problems.append(f"labels.{key}: got {value!r} ({type(value).__name__}); allowed: a label value, "
                            "at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit")
    return problems


def selector(labels):
    """The label selector of all the labels: ``key=value,...`` in the given order."""
    return ",".join(f"{key}={value}" for key, value in labels.items())


def group_version_path(api_version):
    """``/api/v1`` for the core group, ``/apis/<group>/<version>`` for the others."""
    return "/api/v1" if api_version == "v1" else f"/apis/{api_version}"


def describe(kind):
    return f"{kind['kind']} ({kind['api_version']})"


def name_of(item):
    """``Kind namespace/name`` (or ``Kind name``) of an object of the result."""
    return f"{item['kind']} {item['namespace'] + '/' if item.get('namespace') else ''}{item['name']}"


class KubeObjects:
    """The calls of ``delete_labelled`` through a kubernetes ApiClient; counts them in ``calls``."""

    def __init__(self, api_client, page_size=PAGE_SIZE):
        self.api = api_client
        self.page_size = page_size
        self.calls = {"discover": 0, "list": 0, "delete": 0}
        self.served = {}

    def resource(self, api_version, kind):
        """``{name, namespaced}`` of the kind's resource as the API server serves it; None when it does not."""
        if api_version not in self.served:
            self.calls["discover"] += 1
            path = group_version_path(api_version)
            found = kube.call_json(f"read the resources of {api_version}", kube.path_call(self.api, "GET", path),
                                   missing_ok=True, error=DeleteError)
            self.served[api_version] = (found or {}).get("resources") or []
        for resource in self.served[api_version]:
            if resource.get("kind") == kind and "/" not in resource.get("name", "/"):
                return {"name": resource["name"], "namespaced": bool(resource.get("namespaced"))}
        return None

    def list(self, path, label_selector):
        """The objects at the collection ``path`` with all the labels (none when the kind went away)."""
        items = []
        for page in kube.list_pages(f"list {path}", kube.path_call(self.api, "GET", path), self.page_size,
                                    error=DeleteError, missing_ok=True, label_selector=label_selector):
            self.calls["list"] += 1
            items.extend(page)
        return items

    def delete(self, path, uid, propagation):
        """Delete the object at ``path`` if it is still the one of ``uid``; False when it was already gone."""
        self.calls["delete"] += 1
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}}
        if propagation:
            body["propagationPolicy"] = propagation
        try:
            return kube.call_json(f"delete {path}", kube.path_call(self.api, "DELETE", path, body),
                                  missing_ok=True, error=DeleteError) is not None
        except DeleteError as e:
            # 409: the uid precondition failed - the object listed is gone (another one took its name).
            if getattr(e.__cause__, "status", None) == 409:
                return False
            raise


def resolve(client, kinds, namespace):
    """Each kind's collection path, and the problems of the kinds given (one not served is one)."""
    resolved, problems = [], []
    for index, kind in enumerate(kinds):
        if not API_VERSION.match(str(kind["api_version"])):
            problems.append(f"kinds[{index}].api_version: got {kind['api_version']!r}; allowed: v1 or <group>/<version>")
            continue
        resource = client.resource(kind["api_version"], kind["kind"])
        # As kubernetes.core.k8s did: a kind the API server does not serve is an error, not nothing to delete.
        if resource is None or not SEGMENT.match(resource["name"]):
            problems.append(f"kinds[{index}]: got {describe(kind)}; allowed: a kind the API server serves")
            continue
        namespaced = kind.get("namespaced", True)
        if resource["namespaced"] != namespaced:
            problems.append(f"kinds[{index}].namespaced: got {namespaced} ({type(namespaced).__name__}) for {describe(kind)}; "
                            f"allowed: {resource['namespaced']}, as the API server serves it")
        elif namespaced and not DNS_LABEL_RE.match(str(namespace or "")):
            problems.append(f"namespace: got {namespace!r}; allowed: the namespace (a DNS label) of the namespaced kind {describe(kind)}")
        else:
            base = group_version_path(kind["api_version"])
            resolved.append(f"{base}/namespaces/{namespace}/{resource['name']}" if namespaced else f"{base}/{resource['name']}")
    return resolved, problems


def delete_labelled(client, kinds, labels, namespace=None, propagation=None, timeout=300, poll_interval=1.0,
                    sequential=True, check_mode=False, clock=time.monotonic, sleep=time.sleep):
    """Delete the objects of ``kinds`` (in their order) that carry all ``labels``, and wait until they are gone.

    With ``sequential`` a kind's objects are deleted once those of the kinds
    before it are gone (as one delete-and-wait task per kind did); otherwise
    all kinds are deleted first and waited for together. Each check lists
    each kind still waited for once. ``timeout`` bounds the whole wait.
    Returns ``{changed, deleted}``; raises DeleteError (a kind the API server does not serve is one).
    """
    label_selector = selector(labels)
    paths, problems = resolve(client, kinds, namespace)
    if problems:
        raise DeleteError("\n".join(problems))
    result = {"changed": False, "deleted": []}
    deadline = clock() + timeout
    waiting = []  # (kind, path, {uid: item}) still to be gone
    for index, (kind, path) in enumerate(zip(kinds, paths)):
        found = {}
        for obj in client.list(path, label_selector):
            meta = obj.get("metadata") or {}
            item = {"api_version": kind["api_version"], "kind": kind["kind"], "name": meta.get("name")}
            if meta.get("namespace"):
                item["namespace"] = meta["namespace"]
            if not SEGMENT.match(str(meta.get("name") or "")):
                raise DeleteError(f"the API server listed an object of {path} named {meta.get('name')!r}: not deleted")
            if check_mode or client.delete(f"{path}/{meta.get('name')}", meta.get("uid"), propagation):
                found[meta.get("uid")] = item
                result["deleted"].append(item)
        if found:
            result["changed"] = True
            waiting.append((kind, path, found))
        if sequential and not check_mode:
            wait_gone(client, waiting, label_selector, deadline, poll_interval, clock, sleep, result,
                      [k for k, p in zip(kinds[index + 1:], paths[index + 1:]) if p])
            waiting = []
    if not check_mode:
        wait_gone(client, waiting, label_selector, deadline, poll_interval, clock, sleep, result, [])
    return result


def wait_gone(client, waiting, label_selector, deadline, poll_interval, clock, sleep, result, not_yet):
    """Poll until no object of ``waiting`` is left: right away, then after FIRST_PAUSES, then every ``poll_interval``."""
    pauses = iter(FIRST_PAUSES)
    while waiting:
        left = []
        for kind, path, objects in waiting:
            listed = {(obj.get("metadata") or {}).get("uid"): obj.get("metadata") or {} for obj in client.list(path, label_selector)}
            still = {uid: dict(item, finalizers=listed[uid].get("finalizers") or []) for uid, item in objects.items() if uid in listed}
            if still:
                left.append((kind, path, still))
        waiting = left
        if not waiting:
            return
        remaining = deadline - clock()
        if remaining <= 0:
            names = [name_of(item) + (f" (finalizers: {', '.join(item['finalizers'])})" if item["finalizers"] else "")
                     for _kind, _path, objects in waiting for item in objects.values()]
            message = f"timed out waiting for the deletion of {len(names)} object(s): {', '.join(names)}"
            if not_yet:
                message += f"; not deleted yet (after them in the order): {', '.join(describe(k) for k in not_yet)}"
            raise DeleteError(message, result)
        sleep(min(next(pauses, poll_interval), poll_interval, remaining))
