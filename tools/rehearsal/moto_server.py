# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Start moto server with the rehearsal's extensions (see moto_ext.py).

Usage: python tools/rehearsal/moto_server.py HOST PORT
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import moto_ext  # noqa: E402  pylint: disable=wrong-import-position
from moto.server import main  # noqa: E402  pylint: disable=wrong-import-position

if __name__ == "__main__":
    moto_ext.install()
    main(["-H", sys.argv[1], "-p", sys.argv[2]])
