# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""One spelling of a problem with a variable: ``<variable>: got <value> (<type>); allowed: <what>``.

Every check of user input in the collection (deployment model, role
variables, network plan) reports through :class:`Problems`, so that the
validation pass prints one line per problem in one format.
"""

from __future__ import annotations

PLAIN_TYPES = (bool, int, float, str, list, dict)


def type_name(value):
    """The plain type name; ansible-core 2.19 hands plugins tagged subclasses of str, int, ..."""
    if value is None:
        return "null"
    for kind in PLAIN_TYPES:
        if isinstance(value, kind):
            return kind.__name__
    return type(value).__name__


def plain(value):
    """The value with plain Python types (for repr), recursively."""
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def describe(value):
    """``'10.0.0.0/8' (str)``, ``2 (int)``, ``None (null)``: the value and its type."""
    shown = repr(plain(value))
    if len(shown) > 200:
        shown = shown[:197] + "..."
    return f"{shown} ({type_name(value)})"


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


class Problems(list):
    """A list of problem lines; ``add`` formats one."""

    def add(self, name, value, allowed):
        self.append(f"{name}: got {describe(value)}; allowed: {allowed}")

    def check_int(self, name, value, low, high):
        if not is_int(value) or not low <= value <= high:
            self.add(name, value, f"an integer from {low} to {high}")
            return False
        return True

    def check_choice(self, name, value, choices):
        # 128.0 == 128 and True == 1 in Python: integer choices take integers only.
        numeric = all(is_int(c) for c in choices)
        if (numeric and not is_int(value)) or value not in choices:
            self.add(name, value, "one of " + ", ".join(str(c) for c in choices))
            return False
        return True

    def check_re(self, name, value, regex, allowed):
        # fullmatch: a pattern's "$" would let a trailing newline through ("trn-bert\n").
        if not isinstance(value, str) or not regex.fullmatch(value):
            self.add(name, value, allowed)
            return False
        return True

    def check_mapping(self, name, value):
        if not isinstance(value, dict):
            self.add(name, value, "a mapping")
            return False
        return True


def unique(lines):
    """The lines in order, each once (several roles may report the same shared variable)."""
    seen = set()
    return [line for line in lines if not (line in seen or seen.add(line))]
