# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The example workload (roles/training_image/files/workload/) really trains on CPU.

The tests run in the collection's venv; the workload runs as subprocesses of
the rehearsal's training venv (tools/rehearsal/train-venv.sh: PyPI's torch,
h5py, python-etcd). Covered: the synthetic shards' layout, a single-process
tiny BERT whose loss falls over 60 steps (log lines, TensorBoard event files
read back by a reader written here, checkpoints), resume from a checkpoint,
two torchrun launchers (standing in for two nodes) meeting through the shared
rehearsal's rendezvous etcd, and dataset staging (synthetic, marker, and a
tar over loopback HTTP with an unsafe member).
"""

from __future__ import annotations

import functools
import http.server
import io
import json
import os
import pathlib
import re
import struct
import subprocess
import sys
import tarfile
import threading
import time
import uuid

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKLOAD = ROOT / "roles" / "training_image" / "files" / "workload"
TRAIN_VENV_SH = ROOT / "tools" / "rehearsal" / "train-venv.sh"

LOG_LINE = re.compile(
    r"^LOG (?P<date>.+?) - \((?P<epoch>\d+), (?P<step>\d+)\) step_loss : (?P<loss>[0-9.]+) "
    r"learning_rate : (?P<lr>[0-9.e+-]+) throughput : (?P<tput>[0-9.]+)$")


@pytest.fixture(scope="session")
def train_venv():
    """The training venv (built on first use, ~3 GB); its path is the script's last stdout line."""
    done = subprocess.run([str(TRAIN_VENV_SH)], capture_output=True, text=True, check=False, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    venv = pathlib.Path(done.stdout.strip().splitlines()[-1])
    assert (venv / "bin" / "python").is_file() and (venv / "bin" / "torchrun").is_file()
    return venv


def _env(venv, **extra):
    env = dict(os.environ)
    env["PATH"] = "%s:%s" % (venv / "bin", env.get("PATH", ""))
    env.update({"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "TRAINIUM_EKS_DEVICE": "cpu"})
    env.update(extra)
    return env


def _run(venv, args, timeout=300, **extra):
    started = time.time()
    done = subprocess.run(args, capture_output=True, text=True, env=_env(venv, **extra),
                          check=False, timeout=timeout)
    done.seconds = time.time() - started
    return done


@pytest.fixture(scope="session")
def shards(train_venv, tmp_path_factory):
    out = tmp_path_factory.mktemp("shards")
    done = _run(train_venv, [str(train_venv / "bin" / "python"), str(WORKLOAD / "make_synthetic_shards.py"),
                             "--output_dir", str(out), "--num_shards", "2", "--samples_per_shard", "256",
                             "--seq_len", "128", "--seed", "7"])
    assert done.returncode == 0, done.stderr
    assert "wrote 2 shards x 256 samples" in done.stdout
    return out


def _train(venv, data_dir, output_dir, *args, timeout=300):
    return _run(venv, [str(venv / "bin" / "python"), str(WORKLOAD / "train_bert.py"),
                       "--data_dir", str(data_dir), "--output_dir", str(output_dir),
                       "--model_config", "tiny", "--batch_size", "8", "--grad_accum_usteps", "1",
                       "--lr", "2e-3", "--warmup_steps", "5", "--seed", "3", *args], timeout=timeout)


def _steps(stdout):
    return [LOG_LINE.match(line) for line in stdout.splitlines() if LOG_LINE.match(line)]


# ---------------------------------------------------------------- an independent event-file reader

def _crc32c_bitwise(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _bit in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 * (crc & 1))
    return crc ^ 0xFFFFFFFF


def _masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(buf, pos):
    shift = value = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(buf):
    """(field number, wire type, value) of a protobuf message."""
    pos, out = 0, []
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        else:
            raise AssertionError("unexpected wire type %d" % wire)
        out.append((field, wire, value))
    return out


def read_events(path):
    """Records of a TFRecord file (CRCs checked) decoded as Event protos."""
    data, pos, events = pathlib.Path(path).read_bytes(), 0, []
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        assert header_crc == _masked(_crc32c_bitwise(header)), "length CRC of record at %d" % pos
        body = data[pos + 12:pos + 12 + length]
        (body_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        assert body_crc == _masked(_crc32c_bitwise(body)), "data CRC of record at %d" % pos
        pos += 16 + length
        event = {"step": 0, "values": {}}
        for field, _wire, value in _fields(body):
            if field == 1:
                event["wall_time"] = struct.unpack("<d", value)[0]
            elif field == 2:
                event["step"] = value
            elif field == 3:
                event["file_version"] = value.decode()
            elif field == 5:
                for sfield, _w, item in _fields(value):
                    assert sfield == 1
                    parts = {f: v for f, _w2, v in _fields(item)}
                    event["values"][parts[1].decode()] = struct.unpack("<f", parts[2])[0]
        events.append(event)
    return events


def test_crc32c_reader_check_value():
    # The standard CRC-32C check value, so the reader's CRC is right independently of the writer.
    assert _crc32c_bitwise(b"123456789") == 0xE3069283


# ---------------------------------------------------------------- tests

def test_synthetic_shards_layout(train_venv, shards):
    probe = r"""
import glob, json, sys
import h5py, numpy as np
out = {}
for path in sorted(glob.glob(sys.argv[1] + "/*")):
    with h5py.File(path, "r") as f:
        d = {k: f[k][:] for k in f}
        ids, mask, seg = d["input_ids"], d["input_mask"], d["segment_ids"]
        pos, lm, nsp = d["masked_lm_positions"], d["masked_lm_ids"], d["next_sentence_labels"]
        real = pos > 0
        rows = np.nonzero(real)[0]
        out[path.rsplit("/", 1)[1]] = {
            "fields": {k: [str(v.dtype), list(v.shape)] for k, v in d.items()},
            "compression": f["input_ids"].compression,
            "cls_first": bool((ids[:, 0] == 101).all()),
            "mask_matches_tokens": bool(((ids != 0) == (mask == 1)).all()),
            "segments_01": sorted(np.unique(seg).tolist()),
            "segment_only_on_tokens": bool(((seg == 1) <= (mask == 1)).all()),
            "nsp_values": sorted(np.unique(nsp).tolist()),
            "padding_zero": bool((lm[~real] == 0).all()),
            "positions_padded_at_end": bool(all((np.diff(r.astype(int)) <= 0).all() for r in real)),
            "positions_in_tokens": bool((mask[rows, pos[real]] == 1).all()),
            "masked_fraction": float(real.sum() / (mask.sum() - 3 * len(mask))),
            "mask_token_share": float((ids[rows, pos[real]] == 103).mean()),
            "max_per_seq": int(real.sum(axis=1).max()),
            "original_is_word": bool((lm[real] >= 1000).all()),
        }
print(json.dumps(out))
"""
    done = _run(train_venv, [str(train_venv / "bin" / "python"), "-c", probe, str(shards)])
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert sorted(report) == ["synthetic_seqlen128_training_0.hdf5", "synthetic_seqlen128_training_1.hdf5"]
    for name, shard in report.items():
        assert shard["fields"] == {
            "input_ids": ["int32", [256, 128]],
            "input_mask": ["int8", [256, 128]],
            "segment_ids": ["int8", [256, 128]],
            "masked_lm_positions": ["int32", [256, 20]],
            "masked_lm_ids": ["int32", [256, 20]],
            "next_sentence_labels": ["int8", [256]],
        }, name
        assert shard["compression"] == "gzip"
        assert shard["cls_first"] and shard["mask_matches_tokens"] and shard["segment_only_on_tokens"]
        assert shard["segments_01"] == [0, 1] and shard["nsp_values"] == [0, 1]
        assert shard["padding_zero"] and shard["positions_padded_at_end"] and shard["positions_in_tokens"]
        assert 0.13 < shard["masked_fraction"] < 0.17, shard
        assert 0.7 < shard["mask_token_share"] < 0.9, shard
        # 15% of the words, at most max_predictions_per_seq (20 at seq_len 128).
        assert 18 <= shard["max_per_seq"] <= 20 and shard["original_is_word"]


def test_tiny_bert_trains_single_process(train_venv, shards, tmp_path):
    out = tmp_path / "out"
    done = _train(train_venv, shards, out, "--max_steps", "60", "--checkpoint_steps", "25",
                  "--num_ckpts_to_keep", "2")
    print("single-process run: %.1f s" % done.seconds)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "world_size 1" in done.stdout
    steps = _steps(done.stdout)
    assert [int(m["step"]) for m in steps] == list(range(1, 61)), done.stdout[-2000:]
    losses = [float(m["loss"]) for m in steps]
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < 0.8 * first, "loss did not fall: first 5 %.3f, last 5 %.3f" % (first, last)
    # Warmup to the peak at step 5, then linear decay towards 0 at max_steps.
    lrs = [float(m["lr"]) for m in steps]
    assert lrs[0] == pytest.approx(2e-3 / 5, rel=1e-2) and lrs[4] == pytest.approx(2e-3, rel=1e-2)
    assert lrs[-1] < lrs[30] < lrs[5]
    time.strptime(steps[0]["date"], "%a %b %d %H:%M:%S %Y")

    files = sorted((out / "tensorboard").glob("events.out.tfevents.*"))
    assert len(files) == 1 and re.match(r"events\.out\.tfevents\.\d+\..+\.\d+\.0$", files[0].name)
    events = read_events(files[0])
    assert events[0]["file_version"] == "brain.Event:2"
    series = {}
    for event in events[1:]:
        for tag, value in event["values"].items():
            series.setdefault(tag, []).append((event["step"], value))
    assert sorted(series) == ["train/learning_rate", "train/loss", "train/throughput"]
    assert [s for s, _value in series["train/loss"]] == list(range(1, 61))
    assert [round(v, 4) for _step, v in series["train/loss"]] == pytest.approx(losses, abs=1e-4)
    assert all(v > 0 for _step, v in series["train/throughput"])

    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["ckpt_50.pt", "ckpt_60.pt"]


def test_resume_from_checkpoint(train_venv, shards, tmp_path):
    out = tmp_path / "out"
    first = _train(train_venv, shards, out, "--max_steps", "40", "--steps_this_run", "20",
                   "--checkpoint_steps", "100")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "resuming" not in first.stdout
    assert int(_steps(first.stdout)[-1]["step"]) == 20
    assert (out / "checkpoints" / "ckpt_20.pt").is_file()

    second = _train(train_venv, shards, out, "--max_steps", "40", "--steps_this_run", "20",
                    "--checkpoint_steps", "100")
    print("resume runs: %.1f s + %.1f s" % (first.seconds, second.seconds))
    assert second.returncode == 0, second.stderr[-3000:]
    expected = "LOG resuming from %s at step 20" % (out / "checkpoints" / "ckpt_20.pt")
    assert expected in second.stdout.splitlines(), second.stdout[:2000]
    steps = [int(m["step"]) for m in _steps(second.stdout)]
    assert steps == list(range(21, 41))
    # The learning rate continues the schedule instead of warming up again.
    assert float(_steps(second.stdout)[0]["lr"]) < float(_steps(first.stdout)[-1]["lr"])
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["ckpt_40.pt"]
    assert len(list((out / "tensorboard").glob("events.out.tfevents.*"))) == 2


def test_native_track_without_a_neuron_device_runs_on_the_cpu_and_refuses_when_the_device_is_required(train_venv, shards, tmp_path):
    """TRAINIUM_EKS_FRAMEWORK=native (the job's variable on trn2) tries TorchNeuron's neuron device: without it (no
    torch_neuronx here) the run says so and trains on the CPU, checkpoint included; TRAINIUM_EKS_DEVICE=neuron refuses."""
    args = [str(train_venv / "bin" / "python"), str(WORKLOAD / "train_bert.py"), "--data_dir", str(shards),
            "--output_dir", str(tmp_path / "out"), "--model_config", "tiny", "--batch_size", "2", "--grad_accum_usteps", "1",
            "--max_steps", "3", "--checkpoint_steps", "3"]
    done = _run(train_venv, args, TRAINIUM_EKS_DEVICE="auto", TRAINIUM_EKS_FRAMEWORK="native", TRAINIUM_EKS_BF16="1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert any(line.startswith("LOG no neuron device (") and line.endswith("): running on the CPU")
               for line in done.stdout.splitlines()), done.stdout[:2000]
    assert "device cpu backend none" in done.stdout
    assert [int(m["step"]) for m in _steps(done.stdout)] == [1, 2, 3]
    assert (tmp_path / "out" / "checkpoints" / "ckpt_3.pt").is_file()
    required = _run(train_venv, args, TRAINIUM_EKS_DEVICE="neuron")
    assert required.returncode != 0
    assert "RuntimeError: TRAINIUM_EKS_DEVICE=neuron but no neuron device: " in required.stderr, required.stderr[-2000:]


def test_graph_extraction_saves_nothing(train_venv, shards, tmp_path):
    """Under neuron_parallel_compile (NEURON_EXTRACT_GRAPHS_ONLY) no checkpoint is written or resumed."""
    out = tmp_path / "out"
    (out / "checkpoints").mkdir(parents=True)
    done = _run(train_venv, [str(train_venv / "bin" / "python"), str(WORKLOAD / "train_bert.py"),
                             "--data_dir", str(shards), "--output_dir", str(out), "--model_config", "tiny",
                             "--batch_size", "2", "--grad_accum_usteps", "1", "--max_steps", "100",
                             "--steps_this_run", "3", "--checkpoint_steps", "1"],
                NEURON_EXTRACT_GRAPHS_ONLY="1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "graph extraction only" in done.stdout
    assert [int(m["step"]) for m in _steps(done.stdout)] == [1, 2, 3]
    assert not list((out / "checkpoints").iterdir())
    assert not (out / "tensorboard").exists()


def test_two_launchers_rendezvous_through_etcd(train_venv, shards, tmp_path, shared_rehearsal):
    """Two torchrun launchers, 2 processes each, stand in for two nodes of the training job."""
    endpoint = shared_rehearsal["TRAINIUM_RDZV_ENDPOINT"]
    out = tmp_path / "out"
    rdzv_id = "workload-test-%s" % uuid.uuid4().hex[:12]
    command = [str(train_venv / "bin" / "torchrun"), "--nnodes", "2", "--nproc_per_node", "2",
               "--rdzv_backend", "etcd", "--rdzv_endpoint", endpoint, "--rdzv_id", rdzv_id,
               "--max_restarts", "0",
               str(WORKLOAD / "train_bert.py"), "--data_dir", str(shards), "--output_dir", str(out),
               "--model_config", "tiny", "--batch_size", "4", "--grad_accum_usteps", "2",
               "--max_steps", "8", "--warmup_steps", "2", "--lr", "1e-3", "--checkpoint_steps", "4"]
    started = time.time()
    launchers = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env=_env(train_venv), cwd=str(tmp_path)) for _node in range(2)]
    outputs = []
    try:
        for launcher in launchers:
            outputs.append(launcher.communicate(timeout=240)[0])
    finally:
        for launcher in launchers:
            if launcher.poll() is None:
                launcher.kill()
    print("two launchers: %.1f s" % (time.time() - started))
    print(" ".join(command))
    codes = [launcher.returncode for launcher in launchers]
    assert codes == [0, 0], "\n----\n".join(o[-3000:] for o in outputs)
    root = [o for o in outputs if "world_size 4" in o]
    assert len(root) == 1, "\n----\n".join(o[-3000:] for o in outputs)
    assert "backend gloo world_size 4" in root[0]
    steps = [int(m["step"]) for m in _steps(root[0])]
    assert steps == list(range(1, 9))
    # Global batch: 4 per process x 2 micro-steps x 4 processes.
    assert "global_batch 32" in root[0]
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["ckpt_8.pt"]


def test_stage_synthetic_twice(train_venv, tmp_path):
    dest = tmp_path / "data" / "synthetic"
    command = [str(train_venv / "bin" / "python"), str(WORKLOAD / "stage_dataset.py"),
               "--source", "synthetic", "--dest", str(dest), "--seq_len", "128",
               "--num_shards", "3", "--samples_per_shard", "16"]
    first = _run(train_venv, command)
    assert first.returncode == 0, first.stderr
    assert "staged synthetic: %s (3 files)" % dest in first.stdout
    marker = json.loads((dest / ".trainium-eks-staged").read_text())
    assert marker["source"] == "synthetic" and marker["seq_len"] == 128
    assert marker["files"] == ["synthetic_seqlen128_training_%d.hdf5" % i for i in range(3)]
    assert time.strptime(marker["time"], "%Y-%m-%dT%H:%M:%SZ")
    assert sorted(p.name for p in dest.iterdir()) == [".trainium-eks-staged"] + marker["files"]
    before = {p.name: p.stat().st_mtime_ns for p in dest.iterdir()}

    second = _run(train_venv, command)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip().splitlines()[-1] == "already staged: %s (3 files)" % dest
    assert {p.name: p.stat().st_mtime_ns for p in dest.iterdir()} == before


def _tar(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def loopback_bucket(tmp_path):
    """A loopback HTTP server standing in for public S3 objects: {bucket}/{key} under a directory."""
    root = tmp_path / "bucket-root"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # pylint: disable=arguments-differ
            pass

    handler = functools.partial(Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, "http://127.0.0.1:%d/{bucket}/{key}" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_stage_s3_tar_safely(loopback_bucket, tmp_path):
    # Standard library only: runs with the collection's python.
    root, template = loopback_bucket
    (root / "bkt" / "sets").mkdir(parents=True)
    (root / "bkt" / "sets" / "good.tar").write_bytes(
        _tar([("seqlen128/a_training_0.hdf5", b"one"), ("seqlen128/sub/b.hdf5", b"two")]))
    (root / "bkt" / "sets" / "evil.tar").write_bytes(
        _tar([("seqlen128/ok.hdf5", b"x"), ("seqlen128/../../escaped.txt", b"gotcha")]))
    script = str(WORKLOAD / "stage_dataset.py")

    dest = tmp_path / "data" / "good"
    command = [sys.executable, script, "--source", "s3://bkt/sets/good.tar", "--dest", str(dest),
               "--url_template", template]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (dest / "a_training_0.hdf5").read_bytes() == b"one"
    assert (dest / "sub" / "b.hdf5").read_bytes() == b"two"
    assert json.loads((dest / ".trainium-eks-staged").read_text())["files"] == ["a_training_0.hdf5", "sub/b.hdf5"]
    again = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    assert again.stdout.strip().splitlines()[-1] == "already staged: %s (2 files)" % dest

    evil = tmp_path / "data" / "evil"
    done = subprocess.run([sys.executable, script, "--source", "s3://bkt/sets/evil.tar", "--dest", str(evil),
                           "--url_template", template], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 1
    assert "refusing path with '..' in archive" in done.stderr
    assert not list(tmp_path.rglob("escaped.txt"))
    assert not (evil / ".trainium-eks-staged").exists()

    missing = subprocess.run([sys.executable, script, "--source", "s3://bkt/sets/none.tar", "--dest",
                              str(tmp_path / "data" / "none"), "--url_template", template],
                             capture_output=True, text=True, check=False, timeout=60)
    assert missing.returncode == 1 and "HTTP 404" in missing.stderr
