# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""BERT phase-1 pre-training (masked LM + next sentence prediction) over HDF5 shards.

Data-parallel over every process torchrun starts (or one process without
torchrun). On the xla track (torch-xla importable and an XLA device present)
it runs on the XLA device: gradients are all-reduced by ``xm.reduce_gradients``,
graphs are cut with ``xm.mark_step`` and bf16 comes from the
``XLA_DOWNCAST_BF16`` environment variable the job sets. On the native track
(``TRAINIUM_EKS_FRAMEWORK=native``, TorchNeuron importable) it runs eagerly on
the ``neuron`` device with the ``neuron`` process group, and in bf16 under
``torch.autocast`` when ``TRAINIUM_EKS_BF16=1``. Elsewhere (no such device,
as on the rehearsal) it runs plain PyTorch on CPU with a gloo process group.

Rank 0 prints the reference log line every --log_steps steps::

    LOG <asctime> - (<epoch>, <step>) step_loss : <loss> learning_rate : <lr> throughput : <seq/s>

and writes TensorBoard scalars train/loss, train/learning_rate and
train/throughput to <output_dir>/tensorboard/. Checkpoints (model, optimizer,
scheduler, step, data position) go to <output_dir>/checkpoints/ckpt_<step>.pt;
a run resumes from the newest one.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import glob
import json
import math
import os
import re
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tb_events import EventWriter  # noqa: E402  pylint: disable=wrong-import-position

DATA_KEYS = ("input_ids", "segment_ids", "input_mask", "masked_lm_positions",
             "masked_lm_ids", "next_sentence_labels")

MODEL_CONFIGS = {
    # Trains on one CPU core in seconds.
    "tiny": dict(vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=256, max_position_embeddings=512, type_vocab_size=2,
                 hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1),
    "base": dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2,
                 hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1),
    "large": dict(vocab_size=30522, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                  intermediate_size=4096, max_position_embeddings=512, type_vocab_size=2,
                  hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1),
}


# --------------------------------------------------------------------------- model

class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg["num_attention_heads"]
        self.head_dim = cfg["hidden_size"] // self.heads
        self.qkv = nn.Linear(cfg["hidden_size"], 3 * cfg["hidden_size"])
        self.out = nn.Linear(cfg["hidden_size"], cfg["hidden_size"])
        self.dropout = nn.Dropout(cfg["attention_probs_dropout_prob"])

    def forward(self, x, additive_mask):
        batch, seq, hidden = x.shape
        qkv = self.qkv(x).view(batch, seq, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        query, key, value = qkv[0], qkv[1], qkv[2]
        scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = self.dropout(torch.softmax(scores + additive_mask, dim=-1))
        context = torch.matmul(probs, value).transpose(1, 2).reshape(batch, seq, hidden)
        return self.out(context)


class EncoderLayer(nn.Module):
    """Post-LayerNorm transformer block as in BERT."""

    def __init__(self, cfg):
        super().__init__()
        self.attention = SelfAttention(cfg)
        self.attention_norm = nn.LayerNorm(cfg["hidden_size"], eps=1e-12)
        self.intermediate = nn.Linear(cfg["hidden_size"], cfg["intermediate_size"])
        self.output = nn.Linear(cfg["intermediate_size"], cfg["hidden_size"])
        self.output_norm = nn.LayerNorm(cfg["hidden_size"], eps=1e-12)
        self.dropout = nn.Dropout(cfg["hidden_dropout_prob"])

    def forward(self, x, additive_mask):
        x = self.attention_norm(x + self.dropout(self.attention(x, additive_mask)))
        hidden = self.output(F.gelu(self.intermediate(x)))
        return self.output_norm(x + self.dropout(hidden))


class BertForPreTraining(nn.Module):
    """BERT encoder with the masked-LM head (tied to the word embeddings) and the NSP head."""

    def __init__(self, cfg):
        super().__init__()
        hidden = cfg["hidden_size"]
        self.word_embeddings = nn.Embedding(cfg["vocab_size"], hidden)
        self.position_embeddings = nn.Embedding(cfg["max_position_embeddings"], hidden)
        self.token_type_embeddings = nn.Embedding(cfg["type_vocab_size"], hidden)
        self.embedding_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.embedding_dropout = nn.Dropout(cfg["hidden_dropout_prob"])
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _layer in range(cfg["num_hidden_layers"]))
        self.pooler = nn.Linear(hidden, hidden)
        self.mlm_transform = nn.Linear(hidden, hidden)
        self.mlm_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.mlm_bias = nn.Parameter(torch.zeros(cfg["vocab_size"]))
        self.nsp = nn.Linear(hidden, 2)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            module.bias.data.zero_()
        if isinstance(module, nn.LayerNorm):
            module.weight.data.fill_(1.0)
            module.bias.data.zero_()

    def forward(self, input_ids, segment_ids, input_mask, masked_lm_positions):
        seq = input_ids.shape[1]
        positions = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        x = (self.word_embeddings(input_ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(segment_ids))
        x = self.embedding_dropout(self.embedding_norm(x))
        additive_mask = (1.0 - input_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, additive_mask)
        # Only the masked positions go through the vocabulary projection (fixed shape).
        index = masked_lm_positions.unsqueeze(-1).expand(-1, -1, x.shape[-1])
        picked = torch.gather(x, 1, index)
        picked = self.mlm_norm(F.gelu(self.mlm_transform(picked)))
        mlm_logits = torch.matmul(picked, self.word_embeddings.weight.t()) + self.mlm_bias
        nsp_logits = self.nsp(torch.tanh(self.pooler(x[:, 0])))
        return mlm_logits, nsp_logits


def pretraining_loss(mlm_logits, nsp_logits, masked_lm_positions, masked_lm_ids, nsp_labels):
    """MLM loss over the real (non-padding) masked positions plus the NSP loss."""
    labels = torch.where(masked_lm_positions > 0, masked_lm_ids, torch.full_like(masked_lm_ids, -1))
    mlm = F.cross_entropy(mlm_logits.reshape(-1, mlm_logits.shape[-1]).float(),
                          labels.reshape(-1), ignore_index=-1)
    nsp = F.cross_entropy(nsp_logits.float(), nsp_labels.reshape(-1))
    return mlm + nsp


def load_model_config(name_or_path: str) -> dict:
    if name_or_path in MODEL_CONFIGS:
        return dict(MODEL_CONFIGS[name_or_path])
    with open(name_or_path, encoding="utf-8") as handle:
        given = json.load(handle)
    base = dict(MODEL_CONFIGS[given.pop("base", "large")])
    unknown = set(given) - set(base)
    if unknown:
        raise ValueError("unknown model config keys in %s: %s" % (name_or_path, sorted(unknown)))
    base.update(given)
    return base


# --------------------------------------------------------------------------- data

def list_shards(data_dir: str) -> list:
    files = sorted(f for f in glob.glob(os.path.join(data_dir, "*"))
                   if os.path.isfile(f) and f.endswith((".hdf5", ".h5")))
    return files


def read_shard(path: str, seq_len: int) -> dict:
    import h5py  # pylint: disable=import-outside-toplevel
    with h5py.File(path, "r") as shard:
        missing = [k for k in DATA_KEYS if k not in shard]
        if missing:
            raise ValueError("%s lacks %s" % (path, ", ".join(missing)))
        if shard["input_ids"].shape[1] != seq_len:
            raise ValueError("%s has sequences of %d tokens, --seq_len is %d"
                             % (path, shard["input_ids"].shape[1], seq_len))
        return {k: np.asarray(shard[k][:]).astype(np.int64) for k in DATA_KEYS}


class ShardStream:
    """Deterministic micro-batches for one rank: the file order is shuffled per
    epoch, each file's samples are shuffled and dealt out to the ranks (the
    same count to each, remainder dropped), then cut into batches (partial
    batch dropped). ``skip`` micro-batches of an epoch are passed over without
    reading their files, which is how a resumed run continues."""

    def __init__(self, files, batch_size, rank, world, seed, seq_len):
        self.files, self.batch_size, self.seq_len = files, batch_size, seq_len
        self.rank, self.world, self.seed = rank, world, seed
        self._sizes = {}

    def _size(self, path):
        if path not in self._sizes:
            import h5py  # pylint: disable=import-outside-toplevel
            with h5py.File(path, "r") as shard:
                self._sizes[path] = int(shard["input_ids"].shape[0])
        return self._sizes[path]

    def epoch(self, epoch: int, skip: int = 0):
        order = np.random.default_rng(self.seed + epoch).permutation(len(self.files))
        for file_no, index in enumerate(order):
            path = self.files[index]
            per_rank = self._size(path) // self.world
            batches = per_rank // self.batch_size
            if batches == 0:
                continue
            if skip >= batches:
                skip -= batches
                continue
            rng = np.random.default_rng([self.seed, epoch, file_no])
            mine = rng.permutation(per_rank * self.world)[self.rank::self.world][:per_rank]
            data = read_shard(path, self.seq_len)
            for batch in range(skip, batches):
                rows = np.sort(mine[batch * self.batch_size:(batch + 1) * self.batch_size])
                yield {k: torch.from_numpy(v[rows]) for k, v in data.items()}
            skip = 0


# --------------------------------------------------------------------------- runtime

class Runtime:
    """Device, ranks and collectives: torch-xla (the xla track), TorchNeuron's ``neuron`` device (the native
    track, TRAINIUM_EKS_FRAMEWORK=native), or the CPU with gloo when the track's device is not there."""

    def __init__(self, force=None):
        self.xla = False
        self.xm = None
        self.native = False
        self.autocast_bf16 = False
        wanted = force or os.environ.get("TRAINIUM_EKS_DEVICE", "auto")
        native_track = os.environ.get("TRAINIUM_EKS_FRAMEWORK", "xla") == "native"
        if wanted == "neuron" or (wanted == "auto" and native_track):
            self._try_neuron(required=wanted == "neuron")
        elif wanted in ("auto", "xla"):
            self._try_xla(required=wanted == "xla")
        if self.xla:
            return
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if not self.native:
            self.device = torch.device("cpu")
        self.backend = "none"
        if self.world > 1:
            # TorchNeuron's process group is "neuron" (torchrun's env:// variables); on the CPU, gloo.
            backend = "neuron" if self.native else "gloo"
            dist.init_process_group(backend, init_method="env://", timeout=datetime.timedelta(minutes=30))
            self.world, self.rank = dist.get_world_size(), dist.get_rank()
            self.backend = backend

    def _try_neuron(self, required):
        """TorchNeuron (torch-neuronx 2.13+): importing it registers the neuron device and process group."""
        try:
            import torch_neuronx  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
            count = torch.neuron.device_count() if hasattr(torch, "neuron") else 0
            if not count:
                raise RuntimeError("no NeuronCore visible to this process")
        except Exception as err:  # pylint: disable=broad-except
            if required:
                raise RuntimeError("TRAINIUM_EKS_DEVICE=neuron but no neuron device: %s" % err) from err
            if int(os.environ.get("RANK", "0")) == 0:
                print("LOG no neuron device (%s): running on the CPU" % err, flush=True)
            return
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.native = True
        self.device = torch.device("neuron", local_rank if count > local_rank else 0)
        self.autocast_bf16 = os.environ.get("TRAINIUM_EKS_BF16", "") == "1"

    def autocast(self):
        """bf16 on the native track (TRAINIUM_EKS_BF16=1): torch.autocast on the neuron device; else nothing."""
        if self.native and self.autocast_bf16:
            return torch.autocast(device_type="neuron", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _try_xla(self, required):
        try:
            import torch_xla  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
            import torch_xla.core.xla_model as xm  # pylint: disable=import-outside-toplevel
            import torch_xla.runtime as xr  # pylint: disable=import-outside-toplevel
            device_type = xr.device_type()
            if device_type in (None, "CPU") and not required:
                return
            device = torch_xla.device() if hasattr(torch_xla, "device") else xm.xla_device()
        except Exception as err:  # pylint: disable=broad-except
            if required:
                raise RuntimeError("TRAINIUM_EKS_DEVICE=xla but no XLA device: %s" % err) from err
            return
        self.xla, self.xm, self.device = True, xm, device
        # As the reference script does: let the Neuron compiler know the model type.
        flags = os.environ.get("NEURON_CC_FLAGS", "")
        if "--model-type" not in flags:
            os.environ["NEURON_CC_FLAGS"] = (flags + " --model-type=transformer").strip()
        self.backend = "xla (%s)" % device_type
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            import torch_xla.distributed.xla_backend  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
            dist.init_process_group("xla", init_method="xla://")
        self.world = xr.world_size()
        self.rank = xr.global_ordinal()
        self.local_rank = xr.local_ordinal()

    @property
    def is_root(self):
        return self.rank == 0

    def broadcast_parameters(self, model):
        if not self.xla and self.world > 1:
            for tensor in list(model.parameters()) + list(model.buffers()):
                dist.broadcast(tensor.data, src=0)

    def average_gradients(self, optimizer, params):
        """Mean of the gradients over all ranks: xm.reduce_gradients on XLA, on CPU
        one gloo all-reduce over all gradients flattened together."""
        if self.world == 1:
            return
        if self.xla:
            self.xm.reduce_gradients(optimizer)
            return
        grads = [p.grad for p in params if p.grad is not None]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        flat /= self.world
        offset = 0
        for grad in grads:
            grad.copy_(flat[offset:offset + grad.numel()].view_as(grad))
            offset += grad.numel()

    def mean_across_ranks(self, value):
        if self.world == 1:
            return value
        if self.xla:
            return self.xm.all_reduce(self.xm.REDUCE_SUM, value) / self.world
        dist.all_reduce(value)
        return value / self.world

    def mark_step(self):
        if self.xla:
            self.xm.mark_step()

    def barrier(self, name):
        if self.xla:
            self.xm.rendezvous(name)
        elif self.world > 1:
            dist.barrier()

    def save(self, state, path):
        """Write path atomically (temporary name, then rename) from rank 0."""
        tmp = path + ".tmp"
        if self.xla:
            self.xm.save(state, tmp, master_only=True, global_master=True)
        elif self.is_root:
            # TorchNeuron's tensors go to the file from host memory, as CPU tensors load anywhere.
            torch.save(to_cpu(state) if self.native else state, tmp)
        if self.is_root:
            os.replace(tmp, path)
        self.barrier("checkpoint")

    def shutdown(self):
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()


# --------------------------------------------------------------------------- checkpoints

CKPT_RE = re.compile(r"^ckpt_(\d+)\.pt$")


def checkpoints(directory: str) -> list:
    """(step, path) of the complete checkpoints, oldest first."""
    found = []
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            match = CKPT_RE.match(name)
            if match:
                found.append((int(match.group(1)), os.path.join(directory, name)))
    return sorted(found)


def prune_checkpoints(directory: str, keep: int):
    for _step, path in checkpoints(directory)[:-keep] if keep > 0 else []:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def linear_warmup_decay(warmup_steps: int, max_steps: int):
    def factor(step):
        if warmup_steps > 0 and step < warmup_steps:
            return float(step + 1) / float(warmup_steps)
        remaining = max_steps - step
        return max(0.0, float(remaining) / float(max(1, max_steps - warmup_steps)))
    return factor


# --------------------------------------------------------------------------- main

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="BERT phase-1 pre-training (MLM + NSP) on HDF5 shards")
    parser.add_argument("--data_dir", default=os.path.expanduser(
        "~/examples_datasets/bert_pretrain_wikicorpus_tokenized_hdf5_seqlen128/"))
    parser.add_argument("--output_dir", default="./output")
    parser.add_argument("--batch_size", type=int, default=8, help="micro-batch per process")
    parser.add_argument("--grad_accum_usteps", type=int, default=64,
                        help="micro-steps per optimizer step")
    parser.add_argument("--max_steps", type=int, default=28125, help="total optimizer steps")
    parser.add_argument("--steps_this_run", type=int, default=-1,
                        help="stop after this many steps in this run (-1: until --max_steps)")
    parser.add_argument("--lr", type=float, default=4e-4)
    parser.add_argument("--warmup_steps", type=int, default=2000)
    parser.add_argument("--seq_len", type=int, default=128)
    parser.add_argument("--seed", type=int, default=12349)
    parser.add_argument("--model_config", default="large",
                        help="tiny, base, large or a JSON file (keys of a config, optional 'base')")
    parser.add_argument("--checkpoint_steps", type=int, default=100)
    parser.add_argument("--num_ckpts_to_keep", type=int, default=1)
    parser.add_argument("--log_steps", type=int, default=1)
    parser.add_argument("--weight_decay", type=float, default=0.01)
    return parser.parse_args(argv)


def to_cpu(value):
    """A copy of nested dicts, lists and tuples with every tensor moved to the CPU."""
    if torch.is_tensor(value):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: to_cpu(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_cpu(item) for item in value)
    return value


def log(runtime, message):
    if runtime.is_root:
        print("LOG %s" % message, flush=True)


def main(argv=None) -> int:  # pylint: disable=too-many-locals,too-many-statements,too-many-branches
    args = parse_args(argv)
    for name in ("batch_size", "grad_accum_usteps", "max_steps", "checkpoint_steps", "log_steps"):
        if getattr(args, name) < 1:
            print("error: --%s must be at least 1" % name, file=sys.stderr)
            return 2
    files = list_shards(args.data_dir)
    if not files:
        print("error: no .hdf5/.h5 shards in --data_dir %s" % args.data_dir, file=sys.stderr)
        return 2
    try:
        cfg = load_model_config(args.model_config)
    except (OSError, ValueError) as err:
        print("error: --model_config %s: %s" % (args.model_config, err), file=sys.stderr)
        return 2
    if args.seq_len > cfg["max_position_embeddings"]:
        print("error: --seq_len %d exceeds max_position_embeddings %d"
              % (args.seq_len, cfg["max_position_embeddings"]), file=sys.stderr)
        return 2

    runtime = Runtime()
    # neuron_parallel_compile runs the script with NEURON_EXTRACT_GRAPHS_ONLY set:
    # graphs are traced, nothing real is computed, so nothing is saved or resumed.
    graphs_only = os.environ.get("NEURON_EXTRACT_GRAPHS_ONLY", "") not in ("", "0")
    torch.manual_seed(args.seed)
    ckpt_dir = os.path.join(args.output_dir, "checkpoints")
    if runtime.is_root:
        os.makedirs(ckpt_dir, exist_ok=True)

    model = BertForPreTraining(cfg)
    model.to(runtime.device)
    runtime.broadcast_parameters(model)
    no_decay = ("bias", "norm")
    params = list(model.named_parameters())
    groups = [
        {"params": [p for n, p in params if not any(t in n for t in no_decay)],
         "weight_decay": args.weight_decay},
        {"params": [p for n, p in params if any(t in n for t in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=args.lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, linear_warmup_decay(args.warmup_steps, args.max_steps))

    step, epoch, epoch_ustep = 0, 0, 0
    found = [] if graphs_only else checkpoints(ckpt_dir)
    if found:
        ckpt_step, path = found[-1]
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step, epoch = int(state["step"]), int(state.get("epoch", 0))
        epoch_ustep = int(state.get("epoch_ustep", 0))
        if state.get("world_size", runtime.world) != runtime.world:
            # Another world size sees other data per rank: restart the epoch's data.
            epoch_ustep = 0
        log(runtime, "resuming from %s at step %d" % (path, ckpt_step))

    n_params = sum(p.numel() for p in model.parameters())
    global_batch = args.batch_size * args.grad_accum_usteps * runtime.world
    log(runtime, "start: device %s backend %s world_size %d model %s (%.1fM parameters) "
        "seq_len %d global_batch %d shards %d step %d max_steps %d steps_this_run %d"
        % (runtime.device, runtime.backend, runtime.world, args.model_config, n_params / 1e6,
           args.seq_len, global_batch, len(files), step, args.max_steps, args.steps_this_run))

    if graphs_only:
        log(runtime, "graph extraction only (NEURON_EXTRACT_GRAPHS_ONLY): no checkpoints, no TensorBoard")
    writer = None
    if runtime.is_root and not graphs_only:
        writer = EventWriter(os.path.join(args.output_dir, "tensorboard"))
    stream = ShardStream(files, args.batch_size, runtime.rank, runtime.world, args.seed,
                         args.seq_len)
    last_saved = step
    start_step = step
    run_limit = args.steps_this_run if args.steps_this_run >= 0 else None

    def done():
        return step >= args.max_steps or (run_limit is not None and step - start_step >= run_limit)

    def save():
        if graphs_only:
            return
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "scheduler": scheduler.state_dict(), "step": step, "epoch": epoch,
                 "epoch_ustep": epoch_ustep, "world_size": runtime.world,
                 "model_config": cfg, "args": vars(args)}
        runtime.save(state, os.path.join(ckpt_dir, "ckpt_%d.pt" % step))
        if runtime.is_root:
            prune_checkpoints(ckpt_dir, args.num_ckpts_to_keep)

    model.train()
    window_start, window_steps = time.time(), 0
    running_loss = torch.zeros((), device=runtime.device)
    ustep = 0
    empty_epochs = 0
    while not done():
        got_batch = False
        for batch in stream.epoch(epoch, skip=epoch_ustep):
            got_batch = True
            batch = {k: v.to(runtime.device) for k, v in batch.items()}
            with runtime.autocast():
                mlm_logits, nsp_logits = model(batch["input_ids"], batch["segment_ids"],
                                               batch["input_mask"], batch["masked_lm_positions"])
                loss = pretraining_loss(mlm_logits, nsp_logits, batch["masked_lm_positions"],
                                        batch["masked_lm_ids"], batch["next_sentence_labels"])
            (loss / args.grad_accum_usteps).backward()
            running_loss += loss.detach() / args.grad_accum_usteps
            ustep += 1
            epoch_ustep += 1
            if ustep % args.grad_accum_usteps:
                runtime.mark_step()
                continue
            runtime.average_gradients(optimizer, list(model.parameters()))
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            lr = scheduler.get_last_lr()[0]
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
            step += 1
            window_steps += 1
            step_loss = runtime.mean_across_ranks(running_loss.clone())
            running_loss.zero_()
            runtime.mark_step()
            if step % args.log_steps == 0 or done():
                loss_value = float(step_loss.item())
                elapsed = max(time.time() - window_start, 1e-9)
                throughput = window_steps * global_batch / elapsed
                window_start, window_steps = time.time(), 0
                log(runtime, "%s - (%d, %d) step_loss : %.4f learning_rate : %.2e throughput : %.2f"
                    % (time.asctime(), epoch, step, loss_value, lr, throughput))
                if writer:
                    writer.add_scalar("train/loss", loss_value, step)
                    writer.add_scalar("train/learning_rate", lr, step)
                    writer.add_scalar("train/throughput", throughput, step)
            if step % args.checkpoint_steps == 0:
                save()
                last_saved = step
            if done():
                break
        if done():
            break
        if not got_batch:
            empty_epochs += 1
            if empty_epochs > 1:
                print("error: no full batch of %d per rank in %d shards (world size %d)"
                      % (args.batch_size, len(files), runtime.world), file=sys.stderr)
                return 2
        epoch += 1
        epoch_ustep = 0
    if step != last_saved:
        save()
    log(runtime, "done: step %d of %d%s" % (
        step, args.max_steps,
        "" if graphs_only else ", checkpoint " + os.path.join(ckpt_dir, "ckpt_%d.pt" % step)))
    if writer:
        writer.close()
    runtime.barrier("done")
    runtime.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
