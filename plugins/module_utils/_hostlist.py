# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm hostlist expressions and integer range lists.

Slurm writes lists of names as hostlist expressions: ``gpu[01-04,10]`` is
``gpu01 gpu02 gpu03 gpu04 gpu10`` and ``/dev/nvidia-caps/nvidia-cap[337,346]``
is two device files.  CPU and core lists are plain range lists (``0-15,32``).

Pure functions, standard library only.  Bad input raises ``ValueError`` with a
message that names the bad value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_DIGITS_AT_END = re.compile(r'^(.*?)(\d+)$')
_BRACKET_BODY = re.compile(r'^[0-9,\-]+$')


def parse_int_ranges(text):
    """Parse ``"0-3,8,10-11"`` into ``[0, 1, 2, 3, 8, 10, 11]`` (order kept)."""
    if text is None:
        raise ValueError('range list is missing; expected something like "0-3,8"')
    text = text.strip()
    if not text:
        raise ValueError('range list is empty; expected something like "0-3,8"')
    result = []
    for part in text.split(','):
        part = part.strip()
        match = re.match(r'^(\d+)(?:-(\d+))?$', part)
        if not match:
            raise ValueError('range list "%s": "%s" is not a number or a range like "4-7"' % (text, part))
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) is not None else low
        if high < low:
            raise ValueError('range list "%s": range "%s" runs backwards' % (text, part))
        result.extend(range(low, high + 1))
    return result


def format_int_ranges(values):
    """Format integers as a range list, ``[0, 1, 2, 3, 8]`` -> ``"0-3,8"``.

    The values are sorted and de-duplicated first (a range list is a set).
    """
    numbers = sorted(set(int(v) for v in values))
    if not numbers:
        raise ValueError('cannot format an empty list of numbers as a range list')
    if numbers[0] < 0:
        raise ValueError('range lists hold non-negative numbers, got %d' % numbers[0])
    return _compress_numbers(numbers, 0)


def _range_text(start, end, width):
    if start == end:
        return '%0*d' % (width, start)
    return '%0*d-%0*d' % (width, start, width, end)


def _split_top_level(expression):
    """Split on commas that are not inside brackets."""
    items = []
    depth = 0
    current = []
    for char in expression:
        if char == '[':
            depth += 1
            if depth > 1:
                raise ValueError('hostlist "%s" has nested "[" brackets' % expression)
        elif char == ']':
            depth -= 1
            if depth < 0:
                raise ValueError('hostlist "%s" has a "]" without a matching "["' % expression)
        if char == ',' and depth == 0:
            items.append(''.join(current))
            current = []
            continue
        current.append(char)
    if depth != 0:
        raise ValueError('hostlist "%s" has a "[" without a matching "]"' % expression)
    items.append(''.join(current))
    return items


def _expand_bracket(expression, body):
    """Expand ``01-03,10`` into ``['01', '02', '03', '10']`` keeping zero padding."""
    if not _BRACKET_BODY.match(body):
        raise ValueError('hostlist "%s": "[%s]" may hold only numbers, "-" and ","' % (expression, body))
    values = []
    for part in body.split(','):
        match = re.match(r'^(\d+)(?:-(\d+))?$', part)
        if not match:
            raise ValueError('hostlist "%s": "%s" in "[%s]" is not a number or a range like "01-04"' % (expression, part, body))
        low_text = match.group(1)
        high_text = match.group(2) if match.group(2) is not None else low_text
        low, high = int(low_text), int(high_text)
        if high < low:
            raise ValueError('hostlist "%s": range "%s" runs backwards' % (expression, part))
        width = _width_of(low_text)
        values.extend('%0*d' % (width, number) for number in range(low, high + 1))
    return values


def expand(expression):
    """Expand a Slurm hostlist expression into the list of names, in order.

    ``gpu[01-04,10]`` -> ``['gpu01', 'gpu02', 'gpu03', 'gpu04', 'gpu10']``;
    several comma-separated items and several bracket groups in one item
    (``rack[1-2]-n[1-2]``) are accepted.
    """
    if expression is None or not expression.strip():
        raise ValueError('hostlist is empty; expected something like "gpu[01-04,10]"')
    expression = expression.strip()
    names = []
    for item in _split_top_level(expression):
        if not item:
            raise ValueError('hostlist "%s" has an empty item (two commas in a row or a comma at an end)' % expression)
        pieces = re.split(r'(\[[^\]]*\])', item)
        combos = ['']
        for piece in pieces:
            if piece.startswith('['):
                body = piece[1:-1]
                if not body:
                    raise ValueError('hostlist "%s" has empty brackets "[]"' % expression)
                options = _expand_bracket(expression, body)
            else:
                # no "]" here: _split_top_level refused any "]" without its "[", and the split took every "[...]"
                options = [piece]
            combos = [prefix + option for prefix in combos for option in options]
        names.extend(combos)
    return names


def _split_name(name):
    """``gpu01`` -> (``gpu``, ``01``); ``login`` -> (``login``, None)."""
    match = _DIGITS_AT_END.match(name)
    if not match:
        return name, None
    return match.group(1), match.group(2)


def _width_of(digits):
    return len(digits) if digits.startswith('0') and len(digits) > 1 else 0


def _fits(run_width, digits):
    """Can ``digits`` join a bracket whose numbers are printed with ``run_width``?"""
    if run_width == 0:
        return _width_of(digits) == 0
    return len(digits) == run_width


def compress(names):
    """Compress names into a hostlist expression, keeping their order.

    Neighbouring names that share a prefix and a numeric suffix go into one
    bracket; ascending runs become ranges: ``['gpu01', 'gpu02', 'gpu10']`` ->
    ``gpu[01-02,10]``.  Order is never changed, so ``expand(compress(x)) == x``
    for any list ``x`` (Slurm keeps the listed order too, and for ``File=``
    that order is the GRES index order).
    """
    names = list(names)
    if not names:
        raise ValueError('cannot compress an empty list of names')
    for name in names:
        if not name or any(char in name for char in ',[] \t\n'):
            raise ValueError('name "%s" cannot go into a hostlist (empty, or contains a comma, bracket or space)' % name)
    groups = []  # [prefix, width, [digit strings]] or [name, None, None]
    for name in names:
        prefix, digits = _split_name(name)
        if digits is None:
            groups.append([name, None, None])
            continue
        last = groups[-1] if groups else None
        if last is not None and last[2] is not None and last[0] == prefix and _fits(last[1], digits):
            last[2].append(digits)
            continue
        groups.append([prefix, _width_of(digits), [digits]])
    items = []
    for prefix, width, numbers in groups:
        if numbers is None:
            items.append(prefix)
        elif len(numbers) == 1:
            items.append(prefix + numbers[0])
        else:
            items.append('%s[%s]' % (prefix, _compress_numbers([int(n) for n in numbers], width)))
    return ','.join(items)


def _compress_numbers(numbers, width):
    """Sorted distinct numbers as ``a-b,c`` (each printed ``width`` digits wide, 0: as they are)."""
    parts = []
    start = prev = numbers[0]
    for number in numbers[1:]:
        if number == prev + 1:
            prev = number
            continue
        parts.append(_range_text(start, prev, width))
        start = prev = number
    parts.append(_range_text(start, prev, width))
    return ','.join(parts)


def natural_key(name):
    """Sort key of a host name in natural order (gpu-2 before gpu-10)."""
    return [(0, int(part), '') if part.isdigit() else (1, 0, part) for part in re.split(r'([0-9]+)', str(name))]
