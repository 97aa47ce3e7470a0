# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage a pre-training dataset onto the shared volume, once.

    stage_dataset.py --source synthetic --dest /data/<name> [--seq_len 128 ...]
    stage_dataset.py --source s3://bucket/key.tar --dest /data/<name>

synthetic: writes shards with make_synthetic_shards.py (next to this file).
s3://: downloads the public object anonymously over HTTPS
(https://<bucket>.s3.amazonaws.com/<key>), streamed straight into the tar
reader, and extracts regular files and directories only: no absolute paths, no
"..", no links or devices. A tar whose entries all sit under one top-level
directory is extracted without that directory, so the shards land in --dest.

Extraction goes to a staging directory inside --dest first; the files are
moved into place when everything arrived, then the marker
<dest>/.trainium-eks-staged (JSON: source, seq_len, files, time) is written.
With a marker for the same source present it prints
``already staged: <dest> (<n> files)`` and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request

MARKER = ".trainium-eks-staged"
DEFAULT_URL_TEMPLATE = "https://{bucket}.s3.amazonaws.com/{key}"


class StageError(Exception):
    pass


def say(message):
    print(message, flush=True)


def s3_url(source: str, template: str) -> str:
    parsed = urllib.parse.urlparse(source)
    bucket, key = parsed.netloc, parsed.path.lstrip("/")
    if parsed.scheme != "s3" or not bucket or not key:
        raise StageError("source %r is not s3://bucket/key" % source)
    return template.format(bucket=bucket, key=urllib.parse.quote(key))


def _safe_name(name: str) -> str:
    """The member's path relative to the extraction root, or StageError."""
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise StageError("refusing absolute path in archive: %r" % name)
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise StageError("refusing path with '..' in archive: %r" % name)
    return posixpath.join(*parts) if parts else ""


def extract_stream(fileobj, root: str) -> list:
    """Extracts a tar stream (any compression) into root; returns the relative file paths."""
    written = []
    with tarfile.open(fileobj=fileobj, mode="r|*") as archive:
        for member in archive:
            rel = _safe_name(member.name)
            if not rel:
                continue
            target = os.path.join(root, rel)
            if member.isdir():
                os.makedirs(target, exist_ok=True)
                continue
            if not member.isfile():
                raise StageError("refusing %s entry in archive: %r" % (
                    "link" if member.issym() or member.islnk() else "special", member.name))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            source = archive.extractfile(member)
            with open(target, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
            os.chmod(target, 0o644)
            written.append(rel)
    return written


def download_and_extract(url: str, root: str, timeout: float) -> list:
    say("downloading %s" % url)
    request = urllib.request.Request(url, headers={"User-Agent": "trainium-eks-stage-dataset"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # nosec B310
            size = response.headers.get("Content-Length")
            if size:
                say("size %.1f MiB" % (int(size) / 1048576.0))
            return extract_stream(response, root)
    except urllib.error.HTTPError as err:
        raise StageError("download of %s failed: HTTP %d %s" % (url, err.code, err.reason)) from err
    except urllib.error.URLError as err:
        raise StageError("download of %s failed: %s" % (url, err.reason)) from err
    except tarfile.TarError as err:
        raise StageError("%s is not a readable tar archive: %s" % (url, err)) from err


def _strip_single_top(staging: str) -> str:
    entries = os.listdir(staging)
    if len(entries) == 1 and os.path.isdir(os.path.join(staging, entries[0])):
        return os.path.join(staging, entries[0])
    return staging


def move_into(src_root: str, dest: str) -> list:
    """Moves every file under src_root to the same relative path under dest."""
    moved = []
    for dirpath, _dirs, names in os.walk(src_root):
        for name in names:
            src = os.path.join(dirpath, name)
            rel = os.path.relpath(src, src_root)
            target = os.path.join(dest, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.replace(src, target)
            moved.append(rel)
    return sorted(moved)


def read_marker(dest: str):
    try:
        with open(os.path.join(dest, MARKER), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def write_marker(dest: str, source: str, seq_len: int, files: list):
    marker = {"source": source, "seq_len": seq_len, "files": files,
              "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    tmp = os.path.join(dest, MARKER + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(marker, handle, indent=1)
    os.replace(tmp, os.path.join(dest, MARKER))


def stage(args) -> int:
    dest = os.path.abspath(args.dest)
    marker = read_marker(dest)
    if marker and marker.get("source") == args.source and (
            args.source != "synthetic" or marker.get("seq_len") == args.seq_len):
        say("already staged: %s (%d files)" % (dest, len(marker.get("files", []))))
        return 0
    if marker:
        say("marker in %s is for %s (seq_len %s); staging %s again"
            % (dest, marker.get("source"), marker.get("seq_len"), args.source))
        os.remove(os.path.join(dest, MARKER))
    os.makedirs(dest, exist_ok=True)
    staging = os.path.join(dest, ".staging-%d" % os.getpid())
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    started = time.time()
    try:
        if args.source == "synthetic":
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import make_synthetic_shards  # pylint: disable=import-outside-toplevel
            say("generating %d synthetic shards x %d samples, seq_len %d"
                % (args.num_shards, args.samples_per_shard, args.seq_len))
            make_synthetic_shards.write_shards(staging, args.num_shards, args.samples_per_shard,
                                               args.seq_len, args.vocab_size, args.seed)
            root = staging
        elif args.source.startswith("s3://"):
            url = s3_url(args.source, args.url_template)
            download_and_extract(url, staging, args.timeout)
            root = _strip_single_top(staging)
        else:
            raise StageError("unknown --source %r (synthetic or s3://bucket/key.tar)" % args.source)
        files = move_into(root, dest)
        if not files:
            raise StageError("nothing was staged from %s" % args.source)
    except (StageError, OSError, ValueError) as err:
        print("error: staging %s into %s failed: %s" % (args.source, dest, err),
              file=sys.stderr, flush=True)
        return 1
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    write_marker(dest, args.source, args.seq_len, files)
    say("staged %s: %s (%d files) in %.1f s" % (args.source, dest, len(files), time.time() - started))
    return 0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Stage a BERT pre-training dataset once.")
    parser.add_argument("--source", required=True, help="synthetic or s3://bucket/key.tar")
    parser.add_argument("--dest", required=True, help="target directory, e.g. /data/<name>")
    parser.add_argument("--seq_len", type=int, default=128)
    parser.add_argument("--num_shards", type=int, default=4, help="synthetic only")
    parser.add_argument("--samples_per_shard", type=int, default=512, help="synthetic only")
    parser.add_argument("--vocab_size", type=int, default=30522, help="synthetic only")
    parser.add_argument("--seed", type=int, default=12345, help="synthetic only")
    parser.add_argument("--url_template", default=os.environ.get(
        "TRAINIUM_S3_PUBLIC_URL_TEMPLATE", DEFAULT_URL_TEMPLATE),
        help="HTTPS address of a public S3 object; {bucket} and {key} are filled in")
    parser.add_argument("--timeout", type=float, default=120.0, help="network timeout in seconds")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    return stage(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
