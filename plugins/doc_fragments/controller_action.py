# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The attributes of an action plugin that does its work on the controller and shows no diff
    # (run_timeline, validate_variables); each module documents its own check_mode.
    DOCUMENTATION = r"""
attributes:
  diff_mode:
    support: none
    description: Nothing to show.
  platform:
    support: full
    platforms: all
    description: Runs on the controller.
"""
