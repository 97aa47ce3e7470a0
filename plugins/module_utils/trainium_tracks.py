# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The two training tracks: which PyTorch on Neuron the training job runs, chosen by instance family.

``xla``: PyTorch/XLA (torch-neuronx 2.9 and earlier): the device ``xla``, graphs cut by ``mark_step``, the
``xla`` process group, ``neuron_parallel_compile`` to fill the compile cache before training. Neuron ended its
support for training on this track with Neuron 2.30 ("Starting with Neuron Release 2.30.0, PyTorch/XLA is no
longer supported for training workloads on Trainium. PyTorch 2.9 was the last version based on the PyTorch/XLA
backend for training", Neuron announcement of May 2026): the track's image is pinned to the last supported
release, Neuron 2.29.1.

``native``: TorchNeuron, the native PyTorch backend (torch-neuronx 2.13 and 2.14): the device ``neuron``, eager
mode and ``torch.compile``, DDP over the ``neuron`` process group (``init_method="env://"``, what torchrun
gives). Public beta from Neuron 2.33, "supported on Trainium 2 (trn2) and Trainium 3 (trn3) instances" (Neuron
documentation, "What is TorchNeuron"). Its graphs compile on first use: there is no precompile run.

Pure Python: the validation pass, the deployment model and ``neuron_job`` read the same rules.
"""

from __future__ import annotations

import re

from ansible_collections.trainium.eks.plugins.module_utils.trainium_limits import dotted, image_neuron_sdk, image_tag, instance_family

XLA = "xla"
NATIVE = "native"
FRAMEWORKS = (XLA, NATIVE)
# The tracks each instance family runs, its default first. PyTorch/XLA's training image lists "trn1,trn2,trn3"
# (aws-neuron/deep-learning-containers README, pytorch-training-neuronx); TorchNeuron runs on trn2 and trn3 only.
FAMILY_FRAMEWORKS = {"trn1": (XLA,), "trn1n": (XLA,), "trn2": (NATIVE, XLA), "trn3": (NATIVE, XLA)}
# The last Neuron SDK that supports PyTorch/XLA training, and the first with TorchNeuron's public beta.
XLA_LAST_SDK = (2, 29)
NATIVE_FIRST_SDK = (2, 33)
# TorchNeuron's PyTorch versions (torch-neuronx 2.13.3 and 2.14.3, Neuron 2.33); PyTorch/XLA's last is 2.9.
NATIVE_FIRST_TORCH = (2, 13)
# The XLA track's base image: the Neuron Deep Learning Container of Neuron 2.29.1 (torch-neuronx 2.9.0.2.13.26312,
# neuronx-cc 2.24.8799.0; aws/deep-learning-containers, pytorch-training-neuronx/2.9-neuronx-sdk2.29.1).
# The native track pins none: the tag of TorchNeuron's training container is not in any source the collection
# can cite yet, so trainium_image.base_image names it.
XLA_BASE_IMAGE = "public.ecr.aws/neuron/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.29.1-ubuntu24.04"
BASE_IMAGES = {XLA: XLA_BASE_IMAGE, NATIVE: None}
# The device the training script asks for on each track (TRAINIUM_EKS_DEVICE=auto falls back to the CPU when the
# track's device is not there, as on the rehearsal).
DEVICES = {XLA: "xla", NATIVE: "neuron"}
FRAMEWORK_ENV = "TRAINIUM_EKS_FRAMEWORK"
# A Neuron Deep Learning Container's tag: <torch version>-neuronx-py<python>-sdk<Neuron SDK>-<os>.
DLC_TORCH_RE = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)*-neuronx-")


def frameworks(instance_type):
    """The tracks an instance type's family runs, its default first (the XLA track alone for a family not listed)."""
    return FAMILY_FRAMEWORKS.get(instance_family(instance_type), (XLA,))


def job_framework(job, pools):
    """The job's track: ``trainium_job.framework``, else the default of its node pool's instance family."""
    job = job if isinstance(job, dict) else {}
    if job.get("framework"):
        return job["framework"]
    pool = next((p for p in pools or [] if isinstance(p, dict) and p.get("name") == job.get("node_pool")), {})
    return frameworks(pool.get("instance_type"))[0]


def framework_problem(framework, instance_type):
    """What ``trainium_job.framework`` may be on ``instance_type`` when ``framework`` is not one of them, else None."""
    allowed = frameworks(instance_type)
    if framework in allowed:
        return None
    why = ("TorchNeuron, the native track, runs on Trainium2 and Trainium3 only (Neuron documentation, 'What is TorchNeuron')"
           if framework == NATIVE else f"{instance_type} runs {' or '.join(allowed)}")
    return f"{' or '.join(allowed)} on {instance_type}, or unset for {allowed[0]}: {why}"


def image_torch(image):
    """(major, minor) of the PyTorch that a Neuron Deep Learning Container's tag names (2.9.0-neuronx-...), else None."""
    match = DLC_TORCH_RE.match(image_tag(image))
    return (int(match.group(1)), int(match.group(2))) if match else None


def image_framework(image):
    """The track a Neuron Deep Learning Container belongs to by its tag's PyTorch and Neuron SDK, None when its tag
    names neither (an image of your own, one pinned by digest alone): such an image is not checked."""
    torch, sdk = image_torch(image), image_neuron_sdk(image)
    if torch is None and sdk is None:
        return None
    if (torch is not None and torch >= NATIVE_FIRST_TORCH) or (torch is None and sdk >= NATIVE_FIRST_SDK):
        return NATIVE
    return XLA


def base_image(framework, image):
    """``trainium_image.base_image``, else the track's pinned image (None on the native track: it pins none)."""
    given = (image or {}).get("base_image") if isinstance(image, dict) else None
    return given or BASE_IMAGES.get(framework)


def base_image_problem(framework, image):
    """What ``trainium_image.base_image`` may be on ``framework`` when the image given (or its absence) does not
    fit, else None. ``image`` is the trainium_image mapping."""
    given = (image or {}).get("base_image") if isinstance(image, dict) else None
    if not given:
        if BASE_IMAGES.get(framework):
            return None
        return ("the training container of TorchNeuron (Neuron 2.33 or later, torch-neuronx 2.13 or later) pinned by tag or "
                f"digest; required with trainium_job.framework {framework}: the collection pins no image of this track")
    track, sdk, torch = image_framework(given), image_neuron_sdk(given), image_torch(given)
    if track is None:
        return None
    shown = ", ".join(part for part in (f"PyTorch {dotted(torch)}" if torch else "", f"Neuron SDK {dotted(sdk)}" if sdk else "") if part)
    if framework == XLA and track == NATIVE:
        return (f"an image of the xla track such as {XLA_BASE_IMAGE}; this one is TorchNeuron's ({shown}): "
                "set trainium_job.framework native to run it")
    if framework == XLA and sdk is not None and sdk > XLA_LAST_SDK:
        return (f"an image of Neuron SDK {dotted(XLA_LAST_SDK)} or earlier such as {XLA_BASE_IMAGE} ({shown} given): "
                "'Starting with Neuron Release 2.30.0, PyTorch/XLA is no longer supported for training' (Neuron announcement)")
    if framework == NATIVE and track == XLA:
        return (f"an image of TorchNeuron, the native track (Neuron SDK {dotted(NATIVE_FIRST_SDK)} or later, "
                f"PyTorch {dotted(NATIVE_FIRST_TORCH)} or later); this one is PyTorch/XLA's ({shown})")
    return None


def environment(framework, bf16):
    """The container variables of a track: (those before the compile cache's, those after), each a list of pairs.

    xla: exactly what AWS's EKS BERT tutorial sets (TorchX's trn1_dist_ddp): XLA_TRANSFER_SEED_ASYNC, and for bf16
    XLA_DOWNCAST_BF16 (deprecated in torch-neuronx 2.9, but about 11% faster than model.to(bfloat16) for BERT:
    Neuron's migration note). The script's TRAINIUM_EKS_DEVICE=auto tries the XLA device there.
    native: TRAINIUM_EKS_FRAMEWORK=native (the script then tries the neuron device), and for bf16 the runtime's
    stochastic rounding (NEURON_RT_STOCHASTIC_ROUNDING_EN) and TRAINIUM_EKS_BF16=1 (the script runs its forward
    pass under torch.autocast(bfloat16))."""
    if framework == NATIVE:
        late = [(FRAMEWORK_ENV, NATIVE)]
        if bf16:
            late.extend((("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1"), ("TRAINIUM_EKS_BF16", "1")))
        return [], late
    return [("XLA_TRANSFER_SEED_ASYNC", "1")], ([("XLA_DOWNCAST_BF16", "1")] if bf16 else [])


def precompiles(framework):
    """Whether the track has a precompile run (neuron_parallel_compile is PyTorch/XLA's tool)."""
    return framework == XLA
