# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin of trainium.eks.run_timeline: sums up and records the run timeline on the controller, in one step."""

from __future__ import annotations

import os
import stat

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.trainium.eks.plugins.module_utils.trainium_problems import plain
from ansible_collections.trainium.eks.plugins.module_utils.trainium_timeline import summarize, timeline_document, timeline_file_names


def _open_private_directory(directory):
    """Make ``directory`` (mode 0700) when it is missing and open it without following a link.

    Refused: a link, something else than a directory, a directory of another user or one that others may
    write to (they could swap the files written there). Returns the directory's descriptor.
    """
    try:
        os.makedirs(os.path.dirname(directory) or ".", mode=0o700, exist_ok=True)
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    found = os.fstat(descriptor)
    problem = None
    if found.st_uid != os.geteuid():
        problem = f"it belongs to user {found.st_uid}, not to the user of this run ({os.geteuid()})"
    elif found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = f"others may write to it (mode {stat.S_IMODE(found.st_mode):04o})"
    if problem:
        os.close(descriptor)
        raise PermissionError(problem)
    os.fchmod(descriptor, 0o700)
    return descriptor


def _write_private(descriptor, name, content):
    """Replace ``name`` in the open directory with ``content`` (mode 0600) atomically: a reader never sees
    half a timeline, and a link planted at the name is replaced, not followed."""
    partial = f".{name}.{os.getpid()}.partial"
    handle = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=descriptor)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, name, src_dir_fd=descriptor, dst_dir_fd=descriptor)
    except BaseException:
        try:
            os.unlink(partial, dir_fd=descriptor)
        except FileNotFoundError:
            pass
        raise


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("entries", "cluster", "dir", "write"))
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = plain(self._task.args)
        entries = args.get("entries") or []
        if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
            return dict(result, failed=True, msg=f"entries: got {entries!r}; allowed: the list trainium_timeline (stage, event, time, within)")
        try:
            summary = summarize(entries)
        except (KeyError, TypeError, ValueError) as e:
            return dict(result, failed=True, msg=f"entries: {e}")
        # A record of the run, not a change to the deployment: never "changed", written in check mode too.
        result.update(summary, changed=False, files=[])
        try:
            write = boolean(args.get("write", True), strict=True)
        except TypeError:
            return dict(result, failed=True, msg=f"write: got {args.get('write')!r}; allowed: true or false")
        if not summary["stages"] or not write:
            return result
        # normpath: a trailing slash would make the kernel follow a link where O_NOFOLLOW should refuse it.
        directory = os.path.normpath(os.path.expanduser(str(args.get("dir")))) if args.get("dir") else ""
        if not directory:
            return dict(result, failed=True, msg="dir: got nothing; allowed: the directory the run timelines go to")
        try:
            descriptor = _open_private_directory(directory)
        except OSError as e:
            return dict(result, failed=True, msg=f"trainium_timeline_dir: got {directory}, which cannot hold the run timeline ({e}); "
                                                 "allowed: a directory of your own that only you can write to (made when missing)")
        try:
            content = timeline_document(args.get("cluster"), self._task.check_mode, summary)
            for name in timeline_file_names(summary):
                _write_private(descriptor, name, content)
                result["files"].append(os.path.join(directory, name))
        except OSError as e:
            return dict(result, failed=True, msg=f"trainium_timeline_dir: cannot write the run timeline to {directory}: {e}")
        finally:
            os.close(descriptor)
        return result
