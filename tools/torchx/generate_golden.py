# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write the golden Volcano Jobs of trainium.eks.neuron_job with TorchX 0.7.0's own Kubernetes scheduler.

    python3 -m venv /tmp/torchx-venv
    /tmp/torchx-venv/bin/pip install --no-deps torchx==0.7.0
    /tmp/torchx-venv/bin/pip install pyre-extensions docstring-parser importlib-metadata pyyaml docker \
        filelock fsspec 'urllib3<1.27' tabulate kubernetes==25.3.0
    /tmp/torchx-venv/bin/python tools/torchx/generate_golden.py [--out tests/golden/neuron_job]

Runs in a throwaway virtualenv, never in the collection's: TorchX pins
urllib3<1.27, which the collection's kubernetes client (37) does not accept.

For each case it builds the AppDef that the ``trn1_dist_ddp`` component of
aws-neuron/aws-neuron-eks-samples (dp_bert_hf_pretrain/lib/trn1_dist_ddp.py,
the version with ``instance_type``) builds - written here from that
component's facts with ``torchx.specs``: one role ``role1`` with a replica per
node, ``bash -c`` (or ``neuron_parallel_compile``) around
``python3 -m torch.distributed.run`` with etcd rendezvous at etcd-server:2379
and ``--rdzv_id`` the app id macro, the EFA/Neuron environment with the
per-replica compile cache, 16 Neuron devices and the type's EFA interfaces,
the instance-type capability, max_retries 3 with the APPLICATION retry policy
and the claim fsx-claim at /data - and asks TorchX's Kubernetes scheduler for
its dry run (``submit_dryrun`` with ``queue=test``), which calls
``app_to_resource``. The resource is written as TorchX serializes it, next to
the inputs of the case as trainium.eks.neuron_job options, so that the unit
test tests/unit/plugins/module_utils/test_trainium_neuron_job_golden.py can
render the same case with the collection's code and compare field by field.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shlex
import sys
import warnings

import yaml

import torchx
from torchx import specs
from torchx.schedulers.kubernetes_scheduler import KubernetesScheduler, sanitize_for_serialization

ROOT = pathlib.Path(__file__).resolve().parents[2]
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/bert-pretrain-neuron:bert_pretrain"
SCRIPT_ARGS = ["--batch_size", "16", "--grad_accum_usteps", "32",
               "--data_dir", "/data/bert_pretrain_wikicorpus_tokenized_hdf5_seqlen128", "--output_dir", "/data/output"]
# EFA interfaces per type, as the component knows them (it refuses other types).
EFA = {"trn1.32xlarge": 8, "trn1n.32xlarge": 16}

# The golden cases: file name -> the arguments of `torchx run ... trn1_dist_ddp.py:generateAppDef`.
CASES = {
    "trn1-32xl-2x32-bf16-bert-large": dict(nnodes=2, nproc_per_node=32, bf16=True, cacheset="bert-large", instance_type="trn1.32xlarge"),
    "trn1n-32xl-2x32-bf16-bert-large": dict(nnodes=2, nproc_per_node=32, bf16=True, cacheset="bert-large", instance_type="trn1n.32xlarge"),
    "trn1-32xl-2x32-bf16-bert-large-precompile": dict(nnodes=2, nproc_per_node=32, bf16=True, cacheset="bert-large",
                                                      instance_type="trn1.32xlarge", precompile=True),
}


def app_def(name, script, image, script_args, nnodes, nproc_per_node, bf16, cacheset, instance_type, precompile=False):
    """The AppDef of trn1_dist_ddp for these arguments (script_args is the one string the component takes)."""
    if not re.match(r"^[A-Za-z0-9_-]+$", cacheset):
        raise ValueError(f"cacheset {cacheset!r}: letters, digits, dashes and underscores only")
    replica = specs.macros.replica_id
    launcher = ["python3", "-m", "torch.distributed.run", "--rdzv_backend", "etcd", "--rdzv_endpoint", "etcd-server:2379",
                "--rdzv_id", specs.macros.app_id, "--nnodes", str(nnodes), "--nproc_per_node", str(nproc_per_node),
                "--tee", "3", "--role", "", script]
    line = " ".join(shlex.quote(word) for word in launcher) + " " + script_args
    env = {
        "CCOM_SOCKET_IFNAME": "eth0",
        "FI_EFA_USE_DEVICE_RDMA": "1",
        "FI_PROVIDER": "efa",
        "FI_EFA_FORK_SAFE": "1",
        "NEURON_RT_RESET_CORES": "1",
        "XLA_TRANSFER_SEED_ASYNC": "1",
        "NEURON_CC_FLAGS": "--cache_dir=" + os.path.join("/data/", "neuron_cache", f"{cacheset}_{replica}"),
        "TRANSFORMERS_CACHE": os.path.join("/data/", "transformers_cache", f"{cacheset}_{replica}"),
    }
    if bf16:
        env["XLA_DOWNCAST_BF16"] = "1"
    resource = specs.Resource(cpu=0, gpu=0, memMB=0, capabilities={"node.kubernetes.io/instance-type": instance_type},
                              devices={"aws.amazon.com/neuron": 16, "vpc.amazonaws.com/efa": EFA[instance_type]})
    entrypoint, args = ("neuron_parallel_compile", [line]) if precompile else ("bash", ["-c", line])
    role = specs.Role(name="role1", image=image, entrypoint=entrypoint, args=args, num_replicas=nnodes, resource=resource,
                      env=env, max_retries=3, retry_policy=specs.RetryPolicy.APPLICATION,
                      mounts=[specs.VolumeMount(src="fsx-claim", dst_path="/data")])
    return specs.AppDef(name=name, roles=[role])


def golden(case, steps_this_run=10):
    """(inputs as trainium.eks.neuron_job options, TorchX's Volcano Job) of one case."""
    precompile = case.get("precompile", False)
    script_args = list(SCRIPT_ARGS) + (["--steps_this_run", str(steps_this_run)] if precompile else [])
    app = app_def("berttrain", "dp_bert_large_hf_pretrain_hdf5.py", IMAGE, shlex.join(script_args), **case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchX warns that Volcano 1.4 retries badly
        info = KubernetesScheduler(session_name="golden").submit_dryrun(app, {"queue": "test"})
    resource = sanitize_for_serialization(info.request.resource)
    inputs = {
        "name": "berttrain", "queue": "test", "image": IMAGE, "script": "dp_bert_large_hf_pretrain_hdf5.py",
        "script_args": list(SCRIPT_ARGS), "nnodes": case["nnodes"], "nproc_per_node": case["nproc_per_node"],
        "bf16": case["bf16"], "cacheset": case["cacheset"], "instance_type": case["instance_type"],
        "mode": "precompile" if precompile else "train",
    }
    if precompile:
        inputs["steps_this_run"] = steps_this_run
    return inputs, resource


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--out", default=str(ROOT / "tests" / "golden" / "neuron_job"))
    args = parser.parse_args()
    if torchx.__version__ != "0.7.0":
        sys.exit(f"generate_golden.py: TorchX {torchx.__version__} found; the golden files are TorchX 0.7.0's")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for file_name, case in CASES.items():
        inputs, resource = golden(case)
        header = (f"# Generated by tools/torchx/generate_golden.py with TorchX {torchx.__version__} (kubernetes scheduler dry run,\n"
                  "# queue test) for the trn1_dist_ddp component; do not edit. `inputs` are the same case as\n"
                  "# trainium.eks.neuron_job options, `torchx` is the Volcano Job TorchX renders (job name and\n"
                  "# --rdzv_id carry TorchX's random suffix).\n")
        text = header + yaml.safe_dump({"inputs": inputs, "torchx": resource}, sort_keys=False, width=200)
        (out / f"{file_name}.yaml").write_text(text)
        print(f"wrote {out / file_name}.yaml")


if __name__ == "__main__":
    main()
