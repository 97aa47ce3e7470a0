# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The test suite's strategy: Ansible's ``linear`` run through Mitogen for Ansible.

Mitogen (``mitogen`` on PyPI, pinned in requirements.txt) keeps one Python
interpreter per host and runs each module in it, instead of starting a Python
process, unpacking the module and importing boto3 or the Kubernetes client
again for every task. The plays and tasks are the same (module-level state
may carry over between tasks in the one interpreter, which is why the runs
users make keep Ansible's strategy and are tested with it: docs/testing.md);
a run costs about two thirds of the CPU (docs/benchmarks.md), which on two
cores is most of the test suite's time.

The suite's playbook runs (tests/conftest.py) and Molecule scenarios
(.config/molecule/config.yml) name this file through ANSIBLE_STRATEGY_PLUGINS
and ANSIBLE_STRATEGY; ``TRAINIUM_TEST_STRATEGY=linear`` runs them with
Ansible's own strategy instead. Nothing else uses it: ansible.cfg, the
README's commands, the AWX job templates and the runs through ansible-runner
keep Ansible's linear strategy, because ansible-core 2.19 deprecates
strategies from outside ansible.builtin (each run prints that) and
Mitogen's background jobs do not honour ``ansible_async_dir``. The
collection's two background jobs run through Ansible's own local connection
for that reason, whatever the strategy (fsx_lustre, training_image).

Where Mitogen is not installed the run is Ansible's linear strategy, unchanged
(``-v`` says so).

ansible-core prints its deprecation of outside strategies right after loading
this file; the file drops that one notice (and only it), so that the suite's
runs print no notice a user's run would not, and its checks for deprecation lines
(tests/integration/test_ecr.py, test_trn_nodegroup.py) see the collection's
alone.
"""

from __future__ import annotations

from ansible.utils.display import Display

# The start of ansible-core 2.19's notice (plugins/loader.py), printed when it loads a strategy from outside ansible.builtin.
HARNESS_NOTICE = "Use of strategy plugins not included in ansible.builtin"
DISPLAY = Display()
ANSIBLE_DEPRECATED = DISPLAY.deprecated


def deprecated_unless_the_harness_notice(msg, *args, **kwargs):
    """Display.deprecated, except for the notice about this file itself."""
    if str(msg).startswith(HARNESS_NOTICE):
        return None
    return ANSIBLE_DEPRECATED(msg, *args, **kwargs)


# Display is one object per process (ansible.utils.singleton): the loader's display is this one.
DISPLAY.deprecated = deprecated_unless_the_harness_notice

try:
    import ansible_mitogen.loaders
    import ansible_mitogen.strategy
except ImportError as missing:
    from ansible.plugins.strategy.linear import StrategyModule as LinearStrategy

    MISSING = str(missing)

    class StrategyModule(LinearStrategy):
        """Ansible's linear strategy, Mitogen being absent."""

        def __init__(self, tqm):
            super().__init__(tqm)
            DISPLAY.verbose(f"mitogen_linear: Mitogen for Ansible is not installed ({MISSING}): Ansible's linear strategy runs the play")
else:
    class StrategyModule(ansible_mitogen.strategy.StrategyMixin, ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)):
        """Ansible's linear strategy with Mitogen's connection and module runner."""
