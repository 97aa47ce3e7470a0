#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: neuron_node_check
short_description: Check that the Trainium nodes of node pools are Ready with all their Neuron and EFA devices
version_added: 0.4.0
description:
  - Reads the nodes of the given pools (label C(trainium.eks/pool)) with one paginated list and the
    device-plugin pods with one more, and reports for each node its instance type, zone, Ready
    condition, taints, and allocatable C(aws.amazon.com/neuron), C(aws.amazon.com/neuroncore) and
    C(vpc.amazonaws.com/efa) against what its instance type has, and whether the Neuron and EFA
    device-plugin pods on it are Ready.
  - Fails with a table of the nodes that are not healthy, and with the pools that have fewer Ready
    nodes than their count (with O(exact_count=true), also more nodes than their count).
  - With O(remediate=true) it first cordons each node that lost devices and taints it
    C(trainium.eks/neuron-unhealthy=<what was lost>:NoSchedule), so that no new pod lands there;
    nodes that are only NotReady are left to Kubernetes.
author:
  - trainium.eks developers (@trainium-eks)
options:
  pools:
    description:
      - The node pools to check, for example C(preflight_facts.node_pools). Each item needs C(name);
        with C(count), a pool with fewer Ready nodes is a problem too; with C(logical_nc_config), its nodes should
        advertise the NeuronCores of that Logical NeuronCore configuration (unset, the type's default - 2 on trn2).
        Other keys are ignored.
    type: list
    elements: dict
    required: true
  exact_count:
    description:
      - A pool with more nodes than its C(count), Ready or not, is a problem too, for example while a node group
        that shrank still has the nodes Auto Scaling is taking away (C(playbooks/scale.yml) waits for that).
    type: bool
    default: false
    version_added: 0.4.0
  instance_types:
    description:
      - What each instance type has, by type - C(neuron_devices), C(neuron_cores) and
        C(max_efa_interfaces), as in C(preflight_facts.instance_types).
    type: dict
    required: true
  device_plugin_namespace:
    description:
      - Namespace of the device-plugin pods (label C(app.kubernetes.io/name) V(neuron-device-plugin)
        or V(efa-device-plugin)).
    type: str
    default: kube-system
  require_device_plugins:
    description:
      - Count a node whose device-plugin pods are missing or not Ready as not healthy
        (the EFA one only on types with EFA interfaces).
    type: bool
    default: true
  remediate:
    description:
      - Cordon and taint the nodes that lost Neuron or EFA devices.
    type: bool
    default: false
  fail_on_unhealthy:
    description:
      - Fail when a node or pool is not healthy. V(false) reports it and succeeds.
    type: bool
    default: true
  page_size:
    description:
      - Objects per list page. With the default, 1,000 nodes and their 2,000 device-plugin pods take
        two list calls (the API server may add a call when a page comes out exactly full).
    type: int
    default: 2500
notes:
  - Needs Kubernetes RBAC to list nodes and the pods of O(device_plugin_namespace), and with
    O(remediate=true) to patch nodes.
  - Supports check mode (remediation reports what it would do) and diff mode is not supported.
requirements:
  - kubernetes (Python)
extends_documentation_fragment:
  - trainium.eks.kubeconfig
"""

EXAMPLES = r"""
- name: Check the Trainium nodes after the device plugins are installed
  trainium.eks.neuron_node_check:
    pools: "{{ preflight_facts.node_pools }}"
    instance_types: "{{ preflight_facts.instance_types }}"
    kubeconfig: "{{ eks_cluster_facts.kubeconfig }}"

- name: Cordon and taint the nodes that lost devices, and go on
  trainium.eks.neuron_node_check:
    pools: "{{ preflight_facts.node_pools }}"
    instance_types: "{{ preflight_facts.instance_types }}"
    remediate: true
    fail_on_unhealthy: false
  register: neuron_nodes
"""

RETURN = r"""
healthy:
  description: Whether every node and pool is healthy.
  returned: always
  type: bool
nodes:
  description: One report per node, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
    pool:
      description: Its pool (label C(trainium.eks/pool)).
      type: str
    instance_type:
      description: Its instance type.
      type: str
    zone:
      description: Its zone.
      type: str
    ready:
      description: Whether its Ready condition is True.
      type: bool
    cordoned:
      description: Whether it is unschedulable.
      type: bool
    neuron:
      description: Allocatable C(aws.amazon.com/neuron).
      type: int
    neuroncore:
      description: Allocatable C(aws.amazon.com/neuroncore).
      type: int
    efa:
      description: Allocatable C(vpc.amazonaws.com/efa).
      type: int
    expected:
      description: What its instance type has - C(neuron), C(neuroncore) and C(efa).
      type: dict
    device_plugins:
      description: The state of each device-plugin pod on it - V(Ready), V(not Ready) or V(missing).
      type: dict
    taints:
      description: Its taints as C(key=value:Effect).
      type: list
      elements: str
    problems:
      description: What is wrong, one phrase each; empty when the node is healthy.
      type: list
      elements: str
  sample:
    - {name: trn1-0, pool: trn1, instance_type: trn1.32xlarge, zone: us-west-2b, ready: true, cordoned: false,
       neuron: 16, neuroncore: 0, efa: 8, expected: {neuron: 16, neuroncore: 32, efa: 8},
       device_plugins: {neuron-device-plugin: Ready, efa-device-plugin: Ready}, taints: [],
       problems: ["aws.amazon.com/neuroncore 0 of 32"]}
bad_nodes:
  description: Names of the nodes with problems.
  returned: always
  type: list
  elements: str
pool_problems:
  description: Pools with fewer Ready nodes than their count (with O(exact_count), or more nodes).
  returned: always
  type: list
  elements: str
  sample: ["pool trn1: 1 Ready node(s) of 2"]
table:
  description: The nodes with problems as a text table, one line each after a header.
  returned: always
  type: list
  elements: str
remediated:
  description: The nodes cordoned and tainted (or that would be, in check mode), with the taint.
  returned: always
  type: list
  elements: dict
  sample: [{name: trn1-0, taint: "trainium.eks/neuron-unhealthy=neuroncore-0-of-32:NoSchedule"}]
api_calls:
  description: Kubernetes API calls made, by kind (C(list_nodes), C(list_pods), C(patch_node)).
  returned: always
  type: dict
  sample: {list_nodes: 1, list_pods: 1, patch_node: 0}
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.trainium.eks.plugins.module_utils import trainium_kube as kube
from ansible_collections.trainium.eks.plugins.module_utils import trainium_node_check as node_check


def pool_problems(pools):
    problems = []
    for index, pool in enumerate(pools):
        if not isinstance(pool, dict) or not pool.get("name"):
            problems.append(f"pools[{index}]: got {pool!r}; allowed: a mapping with the pool's name (and optionally count)")
        elif pool.get("count") is not None and not str(pool["count"]).isdigit():
            problems.append(f"pools[{index}].count: got {pool['count']!r}; allowed: a whole number of nodes")
    return problems


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pools=dict(type="list", elements="dict", required=True),
            instance_types=dict(type="dict", required=True),
            device_plugin_namespace=dict(type="str", default="kube-system"),
            require_device_plugins=dict(type="bool", default=True),
            remediate=dict(type="bool", default=False),
            fail_on_unhealthy=dict(type="bool", default=True),
            exact_count=dict(type="bool", default=False),
            kubeconfig=dict(type="path"),
            context=dict(type="str"),
            page_size=dict(type="int", default=2500),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problems = pool_problems(params["pools"])
    if params["page_size"] < 1:
        problems.append(f"page_size: got {params['page_size']}; allowed: 1 or more")
    if not kube.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    elif problems:
        module.fail_json(msg="\n".join(problems))
    else:
        try:
            reader = node_check.KubeReader(kube.api_client(params["kubeconfig"], params["context"]), page_size=params["page_size"])
            result = node_check.check(
                reader, params["pools"], params["instance_types"], namespace=params["device_plugin_namespace"],
                remediate=params["remediate"], require_device_plugins=params["require_device_plugins"], check_mode=module.check_mode,
                exact_count=params["exact_count"],
            )
        except kube.CONNECTION_ERRORS + (node_check.NodeCheckError,) as e:
            module.fail_json(msg=f"kubeconfig/cluster: {e}")
        else:
            if params["fail_on_unhealthy"] and not result["healthy"]:
                lines = result["pool_problems"] + result["table"]
                bad = len(result["bad_nodes"])
                module.fail_json(msg=f"{bad} of {len(result['nodes'])} Trainium node(s) not healthy"
                                     + (f", {len(result['pool_problems'])} pool(s) short" if result["pool_problems"] else "")
                                     + ":\n" + "\n".join(lines), **result)
            else:
                module.exit_json(**result)


if __name__ == "__main__":
    main()
