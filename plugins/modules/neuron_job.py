#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: neuron_job
short_description: Run a distributed training job on Trainium nodes as a Volcano Job, the way TorchX renders it
version_added: 0.4.0
description:
  - Renders the Volcano Job that TorchX 0.7.0's C(kubernetes) scheduler renders for the C(trn1_dist_ddp) component of
    aws-neuron-eks-samples, field for field - one task and pod per node (C(role1-<i>)) running
    C(python3 -m torch.distributed.run) (torchrun) with O(rdzv_backend) rendezvous at O(rdzv_endpoint), O(nnodes) and
    O(nproc_per_node); all Neuron devices and EFA interfaces of the node as limits; the instance-type nodeSelector;
    C(/dev/shm) as a memory emptyDir; the claim O(claim_name) at O(mount_path); the EFA and Neuron environment with a
    compile cache directory per node C(<cache_root>/<cacheset>_<replica>) and the bf16 switch; O(max_retry) with
    PodEvicted and PodFailed restarting the job.
  - Additions on top of TorchX - the Job is named O(name) (no random suffix) and C(--rdzv_id) is the job name, 8 hex
    digits of its spec hash, the Job's PodGroup C(<job>-<uid>) and C(-v<attempt>), from the pod's annotations
    C(scheduling.k8s.io/group-name) and C(volcano.sh/job-version) (env C(TRAINIUM_JOB_GROUP), C(TRAINIUM_JOB_VERSION)),
    so that each attempt after a RestartJob, and a Job created again with the same spec, has a rendezvous of its own;
    labels O(labels) and C(trainium.eks/workload) (V(training) or V(precompile)) on the Job and its pods;
    the annotation C(trainium.eks/spec-hash); C(minAvailable) = O(nnodes) (Volcano's own default);
    resource requests equal to the limits (what the API server sets for extended resources); no service account
    token, no Service links, the RuntimeDefault seccomp profile and no privilege escalation.
  - A Job that would weigh more than 1 MiB in that shape (about 450 nodes and more; one etcd request holds at most 1.5 MiB)
    is rendered compact - one task C(role1) of O(nnodes) replicas, pods C(<job>-role1-<i>) - and each pod takes its
    replica from Volcano's C(volcano.sh/task-index) label (env C(TRAINIUM_REPLICA), the compile cache directory
    C(<cache_root>/<cacheset>_$(TRAINIUM_REPLICA))); it has no C(torchx.pytorch.org/replica-id) label and no
    C(TORCHX_RANK0_HOST).
  - O(state=present) creates the Job; with the same spec hash it changes nothing while the Job runs or after it
    completed; a Job that failed for good (Failed, Aborted, Terminated) is deleted and created again, and resumes from
    its checkpoints; with another hash it deletes the Job, waits until it and its pods are gone and creates it
    again.
  - O(mode=precompile) wraps the command in C(neuron_parallel_compile), appends C(--steps_this_run) and names the Job
    C(<name>-precompile). It is skipped when the ConfigMap C(trainium-eks-compile-cache) of the namespace records, for
    O(cacheset), the fingerprint of these options (image, script, script arguments without the run-length ones, nodes,
    processes per node, bf16, instance type); the module writes that record when it sees the precompile Job Completed.
  - With O(wait=true) (the action plugin) it then polls the Job and prints a progress line at least every
    O(report_every) seconds - phase, running and pending pods, the last C(LOG) line of global rank 0 - and fails at once when the
    pods stay Pending with a scheduler reason for O(pending_timeout) seconds, or when the Job fails (with the failing
    pod's name, exit code and last O(log_lines) log lines).
  - O(state=status) reports the phase, the pods, the last C(LOG) line of global rank 0 (looked for in the pod of
    replica 0 first, then in up to 15 more; etcd rendezvous gives node rank 0 to whichever agent arrives first) and
    the scheduler's reason for Pending
    pods. O(state=absent) deletes the Job and waits until it is gone.
author:
  - trainium.eks developers (@trainium-eks)
options:
  state:
    description:
      - V(present) creates or replaces the Job, V(absent) deletes it, V(status) only reads.
    type: str
    choices: [present, absent, status]
    default: present
  name:
    description:
      - Name of the application; the Job's name in O(mode=train).
    type: str
    required: true
  job_name:
    description:
      - Name of the Volcano Job; default O(name), or C(<name>-precompile) with O(mode=precompile).
    type: str
  namespace:
    description:
      - Namespace of the Job.
    type: str
    default: training
  queue:
    description:
      - Volcano queue.
    type: str
    default: test
  image:
    description:
      - Container image of the pods (required with O(state=present)).
    type: str
  script:
    description:
      - Path of the training script in the image, for example V(/opt/trainium-eks/train_bert.py).
    type: str
  script_args:
    description:
      - Arguments of the script.
    type: list
    elements: str
    default: []
  nnodes:
    description:
      - Nodes, one pod each.
    type: int
    default: 2
  nproc_per_node:
    description:
      - Processes per node, the NeuronCores the job uses on each (32 on a trn1.32xlarge).
    type: int
    default: 32
  instance_type:
    description:
      - Instance type of the nodes (nodeSelector C(node.kubernetes.io/instance-type)).
    type: str
    default: trn1.32xlarge
  logical_nc_config:
    description:
      - Logical NeuronCore configuration of the nodes (the pool's C(logical_nc_config)). On a type that supports more
        than one (trn2), the pods get C(NEURON_LOGICAL_NC_CONFIG) with it and it is part of the precompile fingerprint
        (the compiler's C(--logical-nc-config) must match the runtime's); on trn1, which supports only 1, nothing is added.
        Unset, the type's default (2 on trn2).
    type: int
    choices: [1, 2]
    version_added: 0.5.0
  neuron_devices:
    description:
      - C(aws.amazon.com/neuron) per pod; default from O(instance_type) - trn1.2xlarge 1, trn1.32xlarge, trn1n.32xlarge
        and trn2.48xlarge 16.
    type: int
  efa_interfaces:
    description:
      - C(vpc.amazonaws.com/efa) per pod; default from O(instance_type) - trn1.2xlarge 0, trn1.32xlarge 8, trn1n.32xlarge
        and trn2.48xlarge 16. With 0 the pods ask for none.
    type: int
  rdzv_backend:
    description:
      - Rendezvous backend of torchrun.
    type: str
    choices: [etcd, etcd-v2, c10d]
    default: etcd
  rdzv_endpoint:
    description:
      - Rendezvous endpoint; default V(etcd-server:2379), and with V(c10d) rank 0's pod C(<job>-role1-0-0.<job>:29500).
    type: str
  framework:
    description:
      - The training track. V(xla) - PyTorch/XLA (torch-neuronx 2.9, the last for training is Neuron 2.29), the
        Job exactly as TorchX renders the reference; V(native) - TorchNeuron (Neuron 2.33 or later, trn2 and trn3),
        no XLA variables, C(TRAINIUM_EKS_FRAMEWORK=native), and no precompile (O(mode=precompile) is refused).
    type: str
    choices: [xla, native]
    default: xla
    version_added: 0.5.0
  bf16:
    description:
      - bf16 training. On the V(xla) track C(XLA_DOWNCAST_BF16=1); on V(native) C(NEURON_RT_STOCHASTIC_ROUNDING_EN=1)
        and C(TRAINIUM_EKS_BF16=1) (the script runs under C(torch.autocast) in bfloat16).
    type: bool
    default: false
  cacheset:
    description:
      - Name of the compile cache set; each node uses C(<cache_root>/<cacheset>_<replica>). Letters, digits, C(-), C(_).
    type: str
    default: default
  claim_name:
    description:
      - PersistentVolumeClaim of the shared volume.
    type: str
    default: fsx-claim
  mount_path:
    description:
      - Where the shared volume is mounted in the pods.
    type: str
    default: /data
  cache_root:
    description:
      - Root of the Neuron compile cache; default C(<mount_path>/neuron_cache).
    type: str
  max_retry:
    description:
      - Job restarts on PodEvicted or PodFailed. V(0) sets no restart policy (as TorchX does).
    type: int
    default: 3
  mode:
    description:
      - V(train), or V(precompile) (C(neuron_parallel_compile) for O(steps_this_run) steps).
    type: str
    choices: [train, precompile]
    default: train
  steps_this_run:
    description:
      - Steps of the precompile run (required with O(mode=precompile)).
    type: int
  labels:
    description:
      - Labels added to the Job and its pods (the collection's labels); they win over TorchX's values.
    type: dict
    default: {}
  tolerations:
    description:
      - Tolerations of the pods (Kubernetes form).
    type: list
    elements: dict
    default: []
  node_selector:
    description:
      - nodeSelector entries added to the instance type's.
    type: dict
    default: {}
  env:
    description:
      - Environment variables added to the pods' (a name already set is replaced).
    type: dict
    default: {}
  priority_class_name:
    description:
      - priorityClassName of the Job.
    type: str
  service_account_name:
    description:
      - ServiceAccount of the pods (the pods mount no token of it either way).
    type: str
  cpu:
    description:
      - CPU limit and request of each worker pod (a Kubernetes quantity). Empty gives the instance type's vCPUs less
        1/32 of them (at least 1) for the kubelet and the daemonsets, such as V(124) on a trn1.32xlarge.
    type: str
  memory:
    description:
      - Memory limit and request of each worker pod (a Kubernetes quantity). Empty gives the instance type's memory
        less 1/8 of it (at least 6 GiB) for what the kernel, the kubelet and the daemonsets keep, such as V(448Gi) on a
        trn1.32xlarge.
    type: str
  read_only_root_filesystem:
    description:
      - Run the worker containers with a read-only root filesystem and an emptyDir at C(/tmp).
      - V(false) for a script that writes elsewhere in the image (its home directory, C(/var/tmp)).
    type: bool
    default: true
  run_as_user:
    description:
      - User and group id the workers run as (C(runAsNonRoot)). Unset keeps the image's user (root in the Neuron
        training images). The user needs write access to what it writes on the shared volume.
    type: int
  add_capabilities:
    description:
      - Linux capabilities added back after dropping C(ALL), among those Pod Security's baseline level admits
        (C(AUDIT_WRITE), C(CHOWN), C(DAC_OVERRIDE), C(FOWNER), C(FSETID), C(KILL), C(MKNOD), C(NET_BIND_SERVICE),
        C(SETFCAP), C(SETGID), C(SETPCAP), C(SETUID), C(SYS_CHROOT)), such as V(DAC_OVERRIDE) for a root that must write
        files of other users on the shared volume.
    type: list
    elements: str
    default: []
  propagation_policy:
    description:
      - How O(state=absent) deletes the Job's pods.
    type: str
    choices: [Foreground, Background]
    default: Foreground
  delete_timeout:
    description:
      - Seconds to wait until a deleted Job and its pods are gone.
    type: int
    default: 300
  wait:
    description:
      - After O(state=present), wait for O(wait_for) (the action plugin polls O(state=status)).
    type: bool
    default: true
  wait_for:
    description:
      - V(running) (every pod Running) or V(completed).
    type: str
    choices: [running, completed]
    default: completed
  wait_timeout:
    description:
      - Seconds to wait.
    type: int
    default: 3600
  report_every:
    description:
      - Seconds between progress lines while nothing changes, at most 30.
    type: float
    default: 30
  pending_timeout:
    description:
      - Seconds the pods may stay Pending with a scheduler reason before the wait fails with that reason.
    type: float
    default: 60
  log_lines:
    description:
      - Log lines of a failed pod in the failure message.
    type: int
    default: 20
  progress_regex:
    description:
      - A Python regular expression for the progress lines of a workload of your own; the last line of rank 0's log
        tail it finds something in (its first 2048 characters) is the progress line (C(status.last_log)), from where
        the match starts. torchrun's C(--tee) puts C([default<rank>]:) before each line - do not anchor with C(^).
        Unset, the last line with C(LOG ), as the built-in workload prints them.
    type: str
    version_added: 0.5.0
notes:
  - Needs RBAC to get, create and delete C(jobs.batch.volcano.sh), list pods, events and C(podgroups.scheduling.volcano.sh),
    read C(pods/log), and get, create and patch ConfigMaps in O(namespace).
  - Rank 0's log is read through C(pods/log); when the API refuses it, the result says V(log unavailable) and why.
  - Supports check mode (returns the manifest and what it would do, creates nothing); diff mode is not supported.
requirements:
  - kubernetes (Python)
extends_documentation_fragment:
  - trainium.eks.kubeconfig
attributes:
  check_mode:
    support: full
    description: Returns the manifest and RV(would); changes nothing.
  diff_mode:
    support: none
    description: The manifest is returned instead.
  platform:
    support: full
    platforms: all
    description: An action plugin around the module; the module talks to the Kubernetes API.
"""

EXAMPLES = r"""
- name: Precompile the graphs of the BERT job (skipped when the cache set is complete)
  trainium.eks.neuron_job:
    name: bert-pretrain
    mode: precompile
    steps_this_run: 10
    image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/bert-pretrain-neuron:0.1.0
    script: /opt/trainium-eks/train_bert.py
    script_args: [--data_dir, /data/bert_pretrain_wikicorpus_tokenized_hdf5_seqlen128, --output_dir, /data/output/bert-pretrain]
    nnodes: 2
    nproc_per_node: 32
    bf16: true
    cacheset: bert-large
    labels:
      app.kubernetes.io/name: training-job
      app.kubernetes.io/part-of: trainium-eks
      app.kubernetes.io/managed-by: trainium.eks
      trainium.eks/cluster: trn-prod

- name: Train, and wait until the job is Completed
  trainium.eks.neuron_job:
    name: bert-pretrain
    image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/bert-pretrain-neuron:0.1.0
    script: /opt/trainium-eks/train_bert.py
    script_args: [--data_dir, /data/bert_pretrain_wikicorpus_tokenized_hdf5_seqlen128, --output_dir, /data/output/bert-pretrain]
    bf16: true
    cacheset: bert-large
    wait_for: completed
    wait_timeout: 7200

- name: How is it going
  trainium.eks.neuron_job:
    name: bert-pretrain
    state: status
  register: bert_job
"""

RETURN = r"""
job:
  description: Name and namespace of the Volcano Job.
  returned: always
  type: dict
  sample: {name: bert-pretrain, namespace: training}
would:
  description: What O(state=present) does or did - V(create), V(replace) or V(nothing) (V(delete) or V(nothing) for absent).
  returned: with state present or absent
  type: str
manifest:
  description: The rendered Volcano Job.
  returned: with state present
  type: dict
spec_hash:
  description: The annotation C(trainium.eks/spec-hash) of the rendered Job.
  returned: with state present
  type: str
fingerprint:
  description: The compile-cache fingerprint of a precompile run.
  returned: with mode precompile and state present
  type: str
skipped_precompile:
  description: Whether the precompile run was skipped because its cache set is complete.
  returned: when it was
  type: bool
status:
  description: The Job's state.
  returned: with state status, and with state present when the Job was there already or after the wait
  type: dict
  contains:
    exists:
      description: Whether the Job exists.
      type: bool
    phase:
      description: The Volcano Job's phase (Pending, Running, Restarting, Completed, Failed, Aborted, ...).
      type: str
    pods:
      description: Pods by phase - pending, running, succeeded, failed, terminating.
      type: dict
    last_log:
      description: The last C(LOG ...) line of global rank 0's log.
      type: str
    last_step_log:
      description:
        - The last C(LOG ...) line of global rank 0's log with a step's figures (C(step_loss)), in the 200 lines read;
          null when there is none (the figures, parsed - P(trainium.eks.log_figures#filter)).
      type: str
    log_error:
      description: V(log unavailable) and why, when the API refused the pods' logs.
      type: str
    pending_reason:
      description: The scheduler's reason for Pending pods, for example V(0/4 nodes are unavailable... Insufficient aws.amazon.com/neuron).
      type: str
    failed_pods:
      description: Failed pods - name, exit_code, reason, message, and for the first one log (its last O(log_lines) lines) and log_error.
      type: list
      elements: dict
    failed_for_good:
      description: Whether the Job failed, or a pod failed that no restart will replace.
      type: bool
    retry_count:
      description: The Job's restarts so far.
      type: int
    cache_recorded:
      description: With mode precompile and a Completed Job, whether the cache set's record matches.
      type: bool
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.trainium.eks.plugins.module_utils import trainium_kube as kube
from ansible_collections.trainium.eks.plugins.module_utils import trainium_neuron_job as neuron_job

ARGUMENT_SPEC = dict(
    state=dict(type="str", choices=["present", "absent", "status"], default="present"),
    name=dict(type="str", required=True),
    job_name=dict(type="str"),
    namespace=dict(type="str", default="training"),
    queue=dict(type="str", default="test"),
    image=dict(type="str"),
    script=dict(type="str"),
    script_args=dict(type="list", elements="str", default=[]),
    nnodes=dict(type="int", default=2),
    nproc_per_node=dict(type="int", default=32),
    instance_type=dict(type="str", default="trn1.32xlarge"),
    logical_nc_config=dict(type="int", choices=[1, 2]),
    neuron_devices=dict(type="int"),
    efa_interfaces=dict(type="int"),
    rdzv_backend=dict(type="str", choices=["etcd", "etcd-v2", "c10d"], default="etcd"),
    rdzv_endpoint=dict(type="str"),
    framework=dict(type="str", choices=["xla", "native"], default="xla"),
    bf16=dict(type="bool", default=False),
    cacheset=dict(type="str", default="default"),
    claim_name=dict(type="str", default="fsx-claim"),
    mount_path=dict(type="str", default="/data"),
    cache_root=dict(type="str"),
    max_retry=dict(type="int", default=3),
    mode=dict(type="str", choices=["train", "precompile"], default="train"),
    steps_this_run=dict(type="int"),
    labels=dict(type="dict", default={}),
    tolerations=dict(type="list", elements="dict", default=[]),
    node_selector=dict(type="dict", default={}),
    env=dict(type="dict", default={}),
    priority_class_name=dict(type="str"),
    service_account_name=dict(type="str"),
    cpu=dict(type="str"),
    memory=dict(type="str"),
    read_only_root_filesystem=dict(type="bool", default=True),
    run_as_user=dict(type="int"),
    add_capabilities=dict(type="list", elements="str", default=[]),
    propagation_policy=dict(type="str", choices=["Foreground", "Background"], default="Foreground"),
    delete_timeout=dict(type="int", default=300),
    wait=dict(type="bool", default=True),
    wait_for=dict(type="str", choices=["running", "completed"], default="completed"),
    wait_timeout=dict(type="int", default=3600),
    report_every=dict(type="float", default=30),
    pending_timeout=dict(type="float", default=60),
    log_lines=dict(type="int", default=20),
    progress_regex=dict(type="str"),
    kubeconfig=dict(type="path"),
    context=dict(type="str"),
)


def make_api(params):
    """The Kubernetes calls (replaced by a stub in the unit tests)."""
    return neuron_job.KubeJobApi(kube.api_client(params["kubeconfig"], params["context"]))


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_if=[("state", "present", ("image", "script"))],
        supports_check_mode=True,
    )
    params = module.params
    problems = neuron_job.problems(params)
    if not kube.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    if problems:
        module.fail_json(msg="\n".join(problems))
    try:
        api = make_api(params)
        if params["state"] == "present":
            result = neuron_job.present(api, params, module.check_mode, params["delete_timeout"])
        elif params["state"] == "absent":
            result = neuron_job.absent(api, params, module.check_mode, params["delete_timeout"])
        else:
            result = {"changed": False, "job": {"name": neuron_job.job_name(params), "namespace": params["namespace"]},
                      "status": neuron_job.status(api, params, module.check_mode)}
            result["changed"] = bool(result["status"].get("cache_record_written"))
    except kube.CONNECTION_ERRORS + (neuron_job.JobError,) as e:
        module.fail_json(msg=f"kubeconfig/cluster: {e}")
    else:
        module.exit_json(**result)


if __name__ == "__main__":
    main()
