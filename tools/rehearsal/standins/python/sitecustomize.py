# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service names of the rehearsal for the Python of a pod the rehearsal's pod runner runs.

The pod runner puts this directory first on PYTHONPATH, so Python imports it at
start-up. It reads TRAINIUM_REHEARSAL_HOST_ALIASES, entries separated by
spaces or commas:

    NAME=ADDRESS               e.g. etcd-server=127.0.0.1
    NAME:PORT=ADDRESS:PORT     e.g. etcd-server:2379=127.0.0.1:2379

and answers socket.getaddrinfo / gethostbyname / gethostbyname_ex for those
names with the address (and, for NAME:PORT entries, the port), as cluster DNS
and the Service would; every other name resolves as usual. The pod runner
fills it with the job namespace's etcd-server Service names (the rehearsal's
rendezvous etcd, TRAINIUM_RDZV_ENDPOINT) and the pod host names Volcano's svc
plugin lists in VC_*_HOSTS (127.0.0.1); an entry in the runner's own
environment variable of that name is added first.
"""

import os
import socket


def _table(text):
    names, ports = {}, {}
    for entry in text.replace(",", " ").split():
        name, sep, target = entry.partition("=")
        if not sep or not name or not target:
            continue
        name = name.lower().rstrip(".")
        if ":" in name:
            host, colon, port = name.rpartition(":")
            address, sep, target_port = target.rpartition(":") if ":" in target else (target, "", port)
            ports[(host, port)] = (address, target_port or port)
        else:
            names[name] = target
    return names, ports


_NAMES, _PORTS = _table(os.environ.get("TRAINIUM_REHEARSAL_HOST_ALIASES", ""))


def _install():
    original_getaddrinfo = socket.getaddrinfo
    original_gethostbyname = socket.gethostbyname
    original_gethostbyname_ex = socket.gethostbyname_ex

    def lookup(host):
        return _NAMES.get(host.lower().rstrip(".")) if isinstance(host, str) else None

    def getaddrinfo(host, port, *args, **kwargs):
        if isinstance(host, (str, bytes)):
            name = (host.decode() if isinstance(host, bytes) else host).lower().rstrip(".")
            mapped = _PORTS.get((name, str(port)))
            if mapped:
                return original_getaddrinfo(mapped[0], int(mapped[1]), *args, **kwargs)
            address = _NAMES.get(name)
            if address:
                return original_getaddrinfo(address, port, *args, **kwargs)
        return original_getaddrinfo(host, port, *args, **kwargs)

    def gethostbyname(host):
        return lookup(host) or original_gethostbyname(host)

    def gethostbyname_ex(host):
        address = lookup(host)
        return (host, [], [address]) if address else original_gethostbyname_ex(host)

    socket.getaddrinfo = getaddrinfo
    socket.gethostbyname = gethostbyname
    socket.gethostbyname_ex = gethostbyname_ex


if _NAMES or _PORTS:
    _install()
