#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: labelled_objects_absent
short_description: Delete the Kubernetes objects of several kinds that carry all the given labels, and wait until they are gone
version_added: 0.5.0
description:
  - Deletes, in one task, every object of each kind of O(kinds) that carries all of O(labels), the kinds in
    their order, and waits until the objects it deleted are gone. One C(kubernetes.core.k8s) task per kind with
    O(kinds) as its loop did the same at the cost of a module run and a wait per kind.
  - Each kind's resource is read from the API server's discovery (one call per API version). A kind the API
    server does not serve fails the task before anything is deleted, as M(kubernetes.core.k8s) does.
  - Objects are deleted by name with a precondition on their uid, so an object made again under the same name
    after the list is left alone.
  - With O(sequential=true) (the default) a kind's objects are deleted once those of the kinds before it are
    gone, for example the ServiceAccount and RBAC of a DaemonSet only once its pods are (with O(propagation=Foreground)).
  - The wait lists each kind it still waits for once per check - right after the deletions, after 0.25 and 0.5
    seconds, then every O(poll_interval) seconds - and fails at O(timeout) naming the objects still there and
    their finalizers.
author:
  - trainium.eks developers (@trainium-eks)
options:
  kinds:
    description:
      - The kinds to delete, in the order to delete them.
    type: list
    elements: dict
    required: true
    suboptions:
      api_version:
        description:
          - The kind's API version, V(v1) for the core group, else V(<group>/<version>), for example V(apps/v1).
        type: str
        required: true
      kind:
        description:
          - The kind, for example V(DaemonSet).
        type: str
        required: true
      namespaced:
        description:
          - Whether the kind lives in a namespace (then in O(namespace)). The task fails when the API server says
            otherwise, rather than delete in every namespace or none.
        type: bool
        default: true
  labels:
    description:
      - The labels, all of which an object must carry to be deleted (a label selector C(key=value,...)).
        At least one.
    type: dict
    required: true
  namespace:
    description:
      - The namespace of the namespaced kinds. Required when a kind is namespaced.
    type: str
  propagation:
    description:
      - The propagation policy of the deletions. V(Foreground) removes an object only once its dependents
        (the pods of a DaemonSet, Deployment or Job) are gone; unset, the API server's default (V(Background)
        for these kinds).
    type: str
    choices: [Foreground, Background, Orphan]
  sequential:
    description:
      - Delete a kind's objects only once those of the kinds before it are gone. V(false) deletes every kind
        first, then waits for all of them together.
    type: bool
    default: true
  timeout:
    description:
      - Seconds the whole task waits for the deleted objects to be gone, all kinds together.
    type: int
    default: 300
  poll_interval:
    description:
      - Seconds between two checks of the wait, after the first three.
    type: float
    default: 1.0
notes:
  - Needs Kubernetes RBAC to list and delete the kinds (in O(namespace) for the namespaced ones).
  - Supports check mode (reports what it would delete, deletes nothing) and diff mode (the objects before, none after).
requirements:
  - kubernetes (Python)
extends_documentation_fragment:
  - trainium.eks.kubeconfig
seealso:
  - module: kubernetes.core.k8s
"""

EXAMPLES = r"""
- name: Delete the Neuron device plugin's objects, found by their labels; the DaemonSet's pods before its RBAC
  trainium.eks.labelled_objects_absent:
    kinds:
      - {api_version: apps/v1, kind: DaemonSet}
      - {api_version: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, namespaced: false}
      - {api_version: rbac.authorization.k8s.io/v1, kind: ClusterRole, namespaced: false}
      - {api_version: v1, kind: ServiceAccount}
    labels:
      app.kubernetes.io/name: neuron-device-plugin
      app.kubernetes.io/managed-by: trainium.eks
    namespace: kube-system
    propagation: Foreground
    timeout: 300
    kubeconfig: ~/.kube/trainium.yaml

- name: Delete TensorBoard's objects, all kinds at once, then wait
  trainium.eks.labelled_objects_absent:
    kinds:
      - {api_version: apps/v1, kind: Deployment}
      - {api_version: v1, kind: Service}
    labels: {app.kubernetes.io/name: tensorboard}
    namespace: training
    sequential: false
  register: tensorboard_deleted
"""

RETURN = r"""
deleted:
  description:
    - The objects deleted (in check mode, that would be), in the order of O(kinds).
  returned: always
  type: list
  elements: dict
  contains:
    api_version:
      description: Its API version.
      type: str
    kind:
      description: Its kind.
      type: str
    namespace:
      description: Its namespace; absent for a cluster-scoped object.
      type: str
    name:
      description: Its name.
      type: str
  sample:
    - {api_version: apps/v1, kind: DaemonSet, namespace: kube-system, name: neuron-device-plugin}
    - {api_version: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: neuron-device-plugin}
api_calls:
  description: Kubernetes API calls made, by kind (C(discover), C(list) - one per page, C(delete)).
  returned: always
  type: dict
  sample: {discover: 3, list: 9, delete: 6}
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.trainium.eks.plugins.module_utils import trainium_kube as kube
from ansible_collections.trainium.eks.plugins.module_utils import trainium_labelled_absent as absent


def option_problems(params):
    problems = absent.label_problems(params["labels"])
    if params["timeout"] < 0:
        problems.append(f"timeout: got {params['timeout']} (int); allowed: 0 or more seconds")
    if params["poll_interval"] <= 0:
        problems.append(f"poll_interval: got {params['poll_interval']} (float); allowed: more than 0 seconds")
    if not params["kinds"]:
        problems.append("kinds: got []; allowed: at least one {api_version, kind, namespaced}")
    return problems


def main():
    module = AnsibleModule(
        argument_spec=dict(
            kinds=dict(type="list", elements="dict", required=True, options=dict(
                api_version=dict(type="str", required=True),
                kind=dict(type="str", required=True),
                namespaced=dict(type="bool", default=True),
            )),
            labels=dict(type="dict", required=True),
            namespace=dict(type="str"),
            propagation=dict(type="str", choices=list(absent.PROPAGATION_POLICIES)),
            sequential=dict(type="bool", default=True),
            timeout=dict(type="int", default=300),
            poll_interval=dict(type="float", default=1.0),
            kubeconfig=dict(type="path"),
            context=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problems = option_problems(params)
    if not kube.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    if problems:
        module.fail_json(msg="\n".join(problems))
    client = None
    try:
        client = absent.KubeObjects(kube.api_client(params["kubeconfig"], params["context"]))
        result = absent.delete_labelled(
            client, params["kinds"], params["labels"], namespace=params["namespace"], propagation=params["propagation"],
            timeout=params["timeout"], poll_interval=params["poll_interval"], sequential=params["sequential"],
            check_mode=module.check_mode,
        )
    except kube.CONNECTION_ERRORS + (absent.DeleteError,) as e:
        if not isinstance(e, absent.DeleteError):
            module.fail_json(msg=f"kubeconfig/cluster: {e}")
        done = getattr(e, "result", {})
        module.fail_json(msg=str(e), changed=bool(done.get("deleted")), deleted=done.get("deleted", []),
                         api_calls=client.calls if client else {})
    else:
        if module._diff:
            result["diff"] = {"before": "".join(absent.name_of(item) + "\n" for item in result["deleted"]), "after": ""}
        module.exit_json(api_calls=client.calls, **result)


if __name__ == "__main__":
    main()
