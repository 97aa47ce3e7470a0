# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The whole pipeline with AWS's creation times emulated: first run, no-op rerun, overlap.

    .venv/bin/python tools/bench/pipeline.py [--scale 0.0333] [--keep] [--out DIR]

On the running shared rehearsal (make rehearsal-up; the EKS token
authenticator only knows the shared moto's clusters), from an empty account:

1. ``site.yml --tags teardown`` (the account and the cluster start empty),
   then what a new account would not have either: the images the stand-in
   registry kept after the inventory's ECR repository was deleted, and the
   job namespace's data in the stand-in of the file system (so the first run
   builds the image and stages the data set, as on AWS);
2. writes the scale factor to ``$TRAINIUM_REHEARSAL_DIR/aws-time-scale``
   (tools/rehearsal/moto_ext_timing.py): a cluster then takes 600 s x scale,
   a node group 300 s x scale, a file system 480 s x scale (default 1/30:
   20 s, 10 s, 16 s, the issue's example), and the training image's build
   600 s x scale more than it takes here (a Neuron image's build and push on
   AWS: the buildah stand-in tools/rehearsal/timing/buildah, first on the
   runs' PATH);
3. ``site.yml`` (the first run, a tiny real training run included), then
   ``site.yml`` again (the no-op rerun: it must report changed=0);
4. removes the scale file and, unless --keep, tears the deployment down.

It prints the wall time and each stage's time of both runs from their run
timelines, and the overlap: the sum of the stage times (stages that are not a
part of another) over the wall time. With every stage waiting for the one
before, the overlap is 1.0. It writes ``pipeline.json`` and ``pipeline.html``
(a timeline chart of both runs) to --out (default .cache/bench/pipeline/).
Speed targets are read from these figures, never asserted by a test.
"""

from __future__ import annotations

import argparse
import base64
import html
import importlib.util
import json
import os
import pathlib
import re
import shlex
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECAP = re.compile(r"^localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.M)
# A task's line; a long name runs on over the next lines: its first line is enough.
TASK = re.compile(r"^TASK \[([^\]\n]*)", re.M)
COLOURS = {"preflight": "#8c8c8c", "infrastructure": "#4c72b0", "cluster": "#6b8fd6", "node groups": "#9bb3e6",
           "image": "#dd8452", "fsx": "#55a868", "platform": "#8172b3", "training": "#c44e52"}


def rehearsal_env():
    """The shared rehearsal's environment (env.sh), or exit with what to do."""
    state = pathlib.Path(os.environ.get("TRAINIUM_REHEARSAL_DIR", ROOT / ".rehearsal"))
    status = subprocess.run([str(ROOT / "tools/rehearsal/rehearsal.sh"), "status"], capture_output=True, text=True, check=False)
    if status.returncode != 0 or not (state / "env.sh").is_file():
        sys.exit("the rehearsal is not running: make rehearsal-up (or tools/rehearsal/rehearsal.sh up)")
    dumped = subprocess.run(["bash", "-c", f"source {shlex.quote(str(state / 'env.sh'))} && env -0"], capture_output=True, check=True)
    env = dict(item.split("=", 1) for item in dumped.stdout.decode().split("\0") if "=" in item)
    # timing/buildah first: the training image's build takes AWS's time at the scale factor (the file moto reads) too.
    env.update(PATH=f"{ROOT / 'tools/rehearsal/timing'}:{ROOT / '.venv/bin'}:{env.get('PATH', '')}",
               TRAINIUM_REHEARSAL_AWS_TIME_SCALE_FILE=str(state / "aws-time-scale"), ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0")
    return state, env


def run_site(env, log, *extra):
    """One ansible-playbook site.yml run: (seconds, recap counts); exits when it fails."""
    command = ["ansible-playbook", "site.yml", "-i", "inventories/local", *extra]
    print(f"  $ {' '.join(command)}  (log: {log})", flush=True)
    started = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        with subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT) as process:
            try:
                # A first run at AWS's own times (--scale 1) takes about 20 minutes: every 30 s, the task it is at.
                while True:
                    try:
                        returncode = process.wait(timeout=30)
                        break
                    except subprocess.TimeoutExpired:
                        tasks = TASK.findall(pathlib.Path(log).read_text(encoding="utf-8", errors="replace"))
                        print(f"    {time.monotonic() - started:6.0f} s, task {len(tasks)}: {tasks[-1] if tasks else '(starting)'}", flush=True)
            except BaseException:
                process.terminate()  # an interrupted benchmark leaves no playbook running (Ctrl-C reaches it too)
                raise
    seconds = time.monotonic() - started
    text = pathlib.Path(log).read_text(encoding="utf-8", errors="replace")
    recap = RECAP.findall(text)
    if returncode != 0 or not recap:
        sys.exit(f"site.yml {' '.join(extra)} failed (rc {returncode}); see {log}:\n{text[-3000:]}")
    ok, changed, dummy, failed, skipped = (int(n) for n in recap[-1])
    return seconds, {"ok": ok, "changed": changed, "failed": failed, "skipped": skipped}


def registry_request(env, method, path):
    """One request to the rehearsal registry (env.sh's URL, CA and login): (status, headers, body)."""
    context = ssl.create_default_context(cafile=env["TRAINIUM_REGISTRY_CA_FILE"])
    login = base64.b64encode(f"{env['TRAINIUM_REGISTRY_USERNAME']}:{env['TRAINIUM_REGISTRY_PASSWORD']}".encode()).decode()
    accept = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"
    request = urllib.request.Request(env["TRAINIUM_REGISTRY_URL"] + path, method=method,
                                     headers={"Authorization": f"Basic {login}", "Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, b""


def inventory_names():
    """The training image's repository and the job's namespace of inventories/local (the runs' inventory)."""
    # The rehearsal's own reader of an inventory's group_vars (tools/rehearsal/nodes.py).
    spec = importlib.util.spec_from_file_location("rehearsal_nodes", ROOT / "tools/rehearsal/nodes.py")
    nodes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nodes)
    variables = nodes.load_variables(ROOT / "inventories/local")
    return (variables.get("trainium_image") or {}).get("repository"), (variables.get("trainium_job") or {}).get("namespace")


def empty_the_new_account(env):
    """What teardown leaves on the rehearsal of this deployment but a new AWS account would not have: the images
    of its deleted ECR repository (the stand-in registry keeps them) and its job's data on the file system
    (the stand-in volume is a directory that outlives the file system). Only the inventory's repository and
    namespace: the base image and whatever else the shared rehearsal holds stay."""
    repository, namespace = inventory_names()
    removed = 0
    dummy, dummy, listed = registry_request(env, "GET", f"/v2/{repository}/tags/list") if repository else (0, {}, b"")
    for tag in json.loads(listed or b"{}").get("tags") or []:
        found, headers, dummy = registry_request(env, "HEAD", f"/v2/{repository}/manifests/{tag}")
        digest = headers.get("Docker-Content-Digest") if found == 200 else None
        if digest and registry_request(env, "DELETE", f"/v2/{repository}/manifests/{digest}")[0] == 202:
            removed += 1
    data = pathlib.Path(env.get("TRAINIUM_REHEARSAL_SHARED_DIR") or ROOT / ".rehearsal/shared") / (namespace or "")
    if namespace and data.is_dir() and not data.is_symlink():
        shutil.rmtree(data)
    print(f"  a new account: {removed} tag(s) of {repository} taken out of the stand-in registry; {data} removed", flush=True)


def overlap_figures(timeline):
    """Per-stage seconds, wall, sum of the top-level stages and their ratio, from a run timeline."""
    stages = timeline["stages"]
    top = [s for s in stages if not s.get("within")]
    start = min(s["start"] for s in stages)
    wall = max(s["end"] for s in stages) - start
    total = sum(s["end"] - s["start"] for s in top)
    return {"stages": stages, "origin": start, "wall": round(wall, 1), "sum": round(total, 1),
            "overlap": round(total / wall, 2) if wall else 1.0}


def print_table(runs):
    names = []
    for figures in runs.values():
        names += [s["stage"] for s in figures["timeline"]["stages"] if s["stage"] not in names]
    print(f"\n{'stage':<32}" + "".join(f"{label:>16}" for label in runs))
    for name in names:
        cells = []
        for figures in runs.values():
            entry = next((s for s in figures["timeline"]["stages"] if s["stage"] == name), None)
            cells.append(f"{entry['end'] - entry['start']:>14.1f} s" if entry else f"{'-':>16}")
        within = next((s.get("within") for f in runs.values() for s in f["timeline"]["stages"] if s["stage"] == name), None)
        print(f"{(name + (' (in ' + within + ')' if within else '')):<32}" + "".join(cells))
    for label, key in (("sum of stages", "sum"), ("wall (timeline)", "wall")):
        print(f"{label:<32}" + "".join(f"{f['timeline'][key]:>14.1f} s" for f in runs.values()))
    print(f"{'overlap (sum / wall)':<32}" + "".join(f"{f['timeline']['overlap']:>16.2f}" for f in runs.values()))
    print(f"{'ansible-playbook':<32}" + "".join(f"{f['seconds']:>14.1f} s" for f in runs.values()))
    print(f"{'changed':<32}" + "".join(f"{f['recap']['changed']:>16}" for f in runs.values()))


def chart(runs, scale):
    """An HTML page with one timeline chart (SVG bars) per run."""
    width, row, left = 760, 22, 150
    parts = ["<!doctype html><meta charset='utf-8'><title>trainium.eks pipeline benchmark</title>",
             "<style>body{font:14px sans-serif;margin:2em}text{font:12px sans-serif}</style>",
             f"<h1>Pipeline timeline on the rehearsal</h1><p>AWS creation times emulated at scale {scale:g} "
             f"(cluster {600 * scale:.0f} s, node group {300 * scale:.0f} s, FSx {480 * scale:.0f} s, "
             f"training image build {600 * scale:.0f} s more). "
             "Overlap = sum of the stage times / wall time.</p>"]
    for label, figures in runs.items():
        timeline = figures["timeline"]
        span = max(timeline["wall"], 1.0)
        stages = timeline["stages"]
        height = row * (len(stages) + 1) + 10
        parts.append(f"<h2>{html.escape(label)}: wall {timeline['wall']:.1f} s, sum of stages {timeline['sum']:.1f} s, "
                     f"overlap {timeline['overlap']:.2f}, changed={figures['recap']['changed']}</h2>")
        parts.append(f"<svg width='{left + width + 60}' height='{height}' role='img'>")
        for index, stage in enumerate(stages):
            x0 = left + (stage["start"] - timeline["origin"]) / span * width
            x1 = left + (stage["end"] - timeline["origin"]) / span * width
            y = 5 + index * row
            name = stage["stage"] + ("  (in " + stage["within"] + ")" if stage.get("within") else "")
            parts.append(f"<text x='4' y='{y + 14}'>{html.escape(name)}</text>")
            parts.append(f"<rect x='{x0:.1f}' y='{y}' width='{max(x1 - x0, 1):.1f}' height='{row - 6}' "
                         f"fill='{COLOURS.get(stage['stage'], '#999')}'><title>{stage['end'] - stage['start']:.1f} s</title></rect>")
            parts.append(f"<text x='{x1 + 4:.1f}' y='{y + 14}'>{stage['end'] - stage['start']:.1f} s</text>")
        axis_y = 5 + len(stages) * row + 12
        for tick in range(0, int(span) + 1, max(int(span / 8) // 10 * 10, 10)):
            x = left + tick / span * width
            parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='5' y2='{axis_y - 10}' stroke='#ddd'/>"
                         f"<text x='{x:.1f}' y='{axis_y}' text-anchor='middle'>{tick} s</text>")
        parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    os.umask(0o077)  # the logs and figures are the operator's, like the run timelines (0600)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--scale", type=float, default=1 / 30, help="AWS creation times x this (default 1/30: cluster 20 s)")
    parser.add_argument("--keep", action="store_true", help="leave the deployment in place (no teardown at the end)")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / ".cache/bench/pipeline")
    args = parser.parse_args()
    if not 0 < args.scale <= 1:
        parser.error(f"--scale: got {args.scale}; allowed: a number above 0 and at most 1")
    state, env = rehearsal_env()
    args.out = args.out.resolve()  # site.yml takes an absolute trainium_timeline_dir only
    args.out.mkdir(parents=True, exist_ok=True)
    scale_file = state / "aws-time-scale"
    runs = {}
    print("pipeline benchmark: emptying the rehearsal account (site.yml --tags teardown)", flush=True)
    run_site(env, args.out / "teardown-before.log", "--tags", "teardown")
    empty_the_new_account(env)
    scale_file.write_text(f"{args.scale}\n", encoding="utf-8")
    try:
        for label in ("first run", "no-op rerun"):
            print(f"pipeline benchmark: {label} (AWS times x {args.scale:g})", flush=True)
            timelines = args.out / label.replace(" ", "-")
            seconds, recap = run_site(env, args.out / f"{label.replace(' ', '-')}.log", "-e", json.dumps({"trainium_timeline_dir": str(timelines)}))
            timeline = json.loads((timelines / "timeline-latest.json").read_text(encoding="utf-8"))
            runs[label] = {"seconds": round(seconds, 1), "recap": recap, "timeline": overlap_figures(timeline)}
            print(f"  {seconds:.1f} s, changed={recap['changed']}, overlap {runs[label]['timeline']['overlap']:.2f}", flush=True)
    finally:
        scale_file.unlink(missing_ok=True)
    if not args.keep:
        print("pipeline benchmark: teardown", flush=True)
        teardown_seconds, dummy = run_site(env, args.out / "teardown-after.log", "--tags", "teardown")
        print(f"  {teardown_seconds:.1f} s", flush=True)
    print_table(runs)
    (args.out / "pipeline.json").write_text(json.dumps({"scale": args.scale, "runs": runs}, indent=2) + "\n", encoding="utf-8")
    (args.out / "pipeline.html").write_text(chart(runs, args.scale), encoding="utf-8")
    print(f"\nfigures: {args.out / 'pipeline.json'}; chart: {args.out / 'pipeline.html'}")
    if runs["no-op rerun"]["recap"]["changed"]:
        print(f"the rerun changed {runs['no-op rerun']['recap']['changed']} things: not a no-op", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
