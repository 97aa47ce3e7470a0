# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""An action plugin of the collection with a stand-in task, for the unit tests of the action plugins."""

from __future__ import annotations

from unittest import mock


def stub_action(plugin, args, check_mode=False, answers=None):
    """``plugin.ActionModule`` for a task with ``args``; with ``answers``, ``_execute_module`` returns them in turn."""
    task = mock.MagicMock()
    task.args = args
    task.check_mode = check_mode
    task.async_val = 0
    action = plugin.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=mock.MagicMock(), shared_loader_obj=None)
    if answers is not None:
        action._execute_module = mock.MagicMock(side_effect=answers)
    return action
