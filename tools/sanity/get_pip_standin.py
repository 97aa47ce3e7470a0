# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-in for the get-pip bootstrap script ansible-test would download.

ansible-test creates its sanity virtualenvs without pip and fetches a
get-pip script from a host outside the package registries; it documents
saving the script to ~/.ansible/test/cache/ by hand instead. This does the
same job with what Python ships: ensurepip installs the bundled pip, which
then installs the pip version (and packages) ansible-test asks for from PyPI.
"""

from __future__ import annotations

import subprocess
import sys

# Options only get-pip understands.
GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}

# In a child process: ensurepip clears the PIP_* settings of the process it
# runs in (the system pip.conf's CA bundle among them).
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *args]))
