# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""AWX job template survey specs, checked the way AWX checks them.

AWX checks a survey spec twice, and the two checks differ:

- when the spec is saved (``POST .../survey_spec/``, the API view
  ``JobTemplateSurveySpec._validate_spec_data``): the shape of the spec, the
  question types, the type of each default, that ``min``/``max`` are integers
  and that choice defaults are among the choices. The first problem is
  returned as HTTP 400 with one message; ``validate_spec`` raises
  ``ValueError`` with that same message.
- when a job is launched (``SurveyJobTemplateMixin._survey_element_validation``):
  each answer against its question (length of text, range of numbers,
  membership of choices). A question's *default* goes through this check too,
  and AWX silently leaves out a default that fails it: the playbook then runs
  without the variable. ``answer_errors`` returns AWX's messages for one
  answer; ``check_defaults`` raises ``ValueError`` naming each default AWX
  would leave out.

Pure functions, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

# AWX's SURVEY_TYPE_MAPPING (awx/main/constants.py): question type -> type of its default.
SURVEY_TYPES = (
    ('text', str),
    ('textarea', str),
    ('password', str),
    ('multiplechoice', str),
    ('multiselect', str),
    ('integer', int),
    ('float', (float, int)),
)
_TYPE_OF = dict(SURVEY_TYPES)
_REQUIRED_FIELDS = ('type', 'question_name', 'variable', 'required')
ENCRYPTED = '$encrypted$'


def _nonblank_lines(text):
    return [line for line in text.splitlines() if line.strip() != '']


def _choice_list(choices):
    """The choices of a question as a list (AWX also accepts a newline-separated string)."""
    if isinstance(choices, str):
        return _nonblank_lines(choices)
    return list(choices)


def validate_spec(spec, old_spec=None):
    """Check ``spec`` as AWX does when it is saved; return the spec as AWX stores it.

    Raises ``ValueError`` with AWX's message for the first problem found.
    ``old_spec`` is the spec stored before, which only matters for password
    defaults given as ``$encrypted$`` (keep the stored one).
    """
    if not isinstance(spec, dict):
        raise ValueError('Expected a survey spec object (name, description, spec), received {0} type.'.format(type(spec).__name__))
    error = None
    for field, expect_type, type_label in (('name', str, 'string'), ('description', str, 'string'), ('spec', list, 'list of items')):
        if field not in spec:
            error = "Field '{0}' is missing from survey spec.".format(field)
        elif not isinstance(spec[field], expect_type):
            error = "Expected {0} for field '{1}', received {2} type.".format(type_label, field, type(spec[field]).__name__)
    if isinstance(spec.get('spec'), list) and len(spec['spec']) < 1:
        error = "'spec' doesn't contain any items."
    if error:
        raise ValueError(error)

    stored = copy.deepcopy(spec)
    old_by_variable = dict((q.get('variable'), q) for q in (old_spec or {}).get('spec', []) if isinstance(q, dict))
    variables = set()
    for idx, item in enumerate(stored['spec']):
        if not isinstance(item, dict):
            raise ValueError('Survey question %s is not a json object.' % idx)
        for field in _REQUIRED_FIELDS:
            if field not in item:
                raise ValueError("'{0}' missing from survey question {1}".format(field, idx))
            expected, label = (bool, 'boolean') if field == 'required' else (str, 'string')
            if not isinstance(item[field], expected):
                raise ValueError("'{0}' in survey question {1} expected to be {2}.".format(field, idx, label))
        if item['variable'] in variables:
            raise ValueError("'variable' '%s' duplicated in survey question %s." % (item['variable'], idx))
        variables.add(item['variable'])

        qtype = item['type']
        if qtype not in _TYPE_OF:
            raise ValueError("'{0}' in survey question {1} is not one of '{2}' allowed question types.".format(
                qtype, idx, ', '.join(name for name, dummy in SURVEY_TYPES)))
        if 'default' in item and item['default'] != '' and not isinstance(item['default'], _TYPE_OF[qtype]):
            label = qtype if qtype in ('integer', 'float') else 'string'
            raise ValueError('Default value {0} in survey question {1} expected to be {2}.'.format(item['default'], idx, label))
        for key in ('min', 'max'):
            if key in item and item[key] is not None and not isinstance(item[key], int):
                raise ValueError('The {0} limit in survey question {1} expected to be integer.'.format(key, idx))
        if qtype in ('multiselect', 'multiplechoice'):
            if 'choices' not in item:
                raise ValueError('Survey question {0} of type {1} must specify choices.'.format(idx, qtype))
            if isinstance(item['choices'], str):
                item['choices'] = '\n'.join(_nonblank_lines(item['choices']))
            if 'default' in item:
                if isinstance(item['default'], str):
                    item['default'] = '\n'.join(_nonblank_lines(item['default']))
                    defaults = item['default'].splitlines()
                else:
                    defaults = item['default']
                if qtype == 'multiplechoice' and len(defaults) > 1:
                    raise ValueError('Multiple Choice (Single Select) can only have one default value.')
                # AWX tests "in" against the choices as stored: with newline-separated
                # choices that is a substring test (check_defaults catches what it lets through).
                if any(default not in item['choices'] for default in defaults):
                    raise ValueError('Default choice must be answered from the choices listed.')
        if isinstance(item.get('default'), str) and item['default'].startswith(ENCRYPTED):
            if qtype != 'password':
                raise ValueError('$encrypted$ is a reserved keyword for password question defaults, survey question {0} is type {1}.'.format(idx, qtype))
            old_default = old_by_variable.get(item['variable'], {}).get('default')
            if not (isinstance(old_default, str) and (old_default.startswith(ENCRYPTED) or old_default == '')):
                raise ValueError('$encrypted$ is a reserved keyword, may not be used for new default in position {0}.'.format(idx))
            item['default'] = old_default
    return stored


def _too_small(variable, value, limit):
    return "'%s' value %s is too small (must be at least %s)." % (variable, value, limit)


def _too_large(variable, value, limit):
    return "'%s' value %s is too large (must be no more than %s)." % (variable, value, limit)


def _limit(question, key):
    value = question.get(key)
    return None if value in ('', None) else value


def answer_errors(question, data, validate_required=True):
    """AWX's launch-time messages for the answers ``data`` (variable -> value) to one question; [] when accepted."""
    variable = question['variable']
    qtype = question['type']
    errors = []
    if qtype == 'password' and data.get(variable) == ENCRYPTED:
        if question.get('default') is None and question['required'] and validate_required:
            errors.append("'%s' value missing" % variable)
        return errors
    if variable not in data:
        if question['required'] and validate_required:
            errors.append("'%s' value missing" % variable)
        return errors
    value = data[variable]
    low, high = _limit(question, 'min'), _limit(question, 'max')
    if qtype in ('text', 'textarea', 'password'):
        if not isinstance(value, str):
            return ["Value %s for '%s' expected to be a string." % (value, variable)]
        if low is not None and len(value) < int(low):
            errors.append("'%s' value %s is too small (length is %s must be at least %s)." % (variable, value, len(value), low))
        if high is not None and len(value) > int(high):
            errors.append(_too_large(variable, value, high))
    elif qtype == 'integer':
        if isinstance(value, bool) or not isinstance(value, int):
            return ["Value %s for '%s' expected to be an integer." % (value, variable)]
        if low is not None and value < int(low):
            errors.append(_too_small(variable, value, low))
        if high is not None and value > int(high):
            errors.append(_too_large(variable, value, high))
    elif qtype == 'float':
        if isinstance(value, bool) or not isinstance(value, (float, int)):
            return ["Value %s for '%s' expected to be a numeric type." % (value, variable)]
        if low is not None and value < float(low):
            errors.append(_too_small(variable, value, low))
        if high is not None and value > float(high):
            errors.append(_too_large(variable, value, high))
    elif qtype == 'multiselect':
        if not isinstance(value, list):
            return ["'%s' value is expected to be a list." % variable]
        choices = _choice_list(question['choices'])
        errors.extend("Value %s for '%s' expected to be one of %s." % (one, variable, choices) for one in value if one not in choices)
    elif qtype == 'multiplechoice':
        choices = _choice_list(question['choices'])
        if value not in choices:
            errors.append("Value %s for '%s' expected to be one of %s." % (value, variable, choices))
    return errors


def launch_defaults(spec):
    """The survey defaults AWX puts into a job's extra vars: variable -> default, for the defaults that pass ``answer_errors``."""
    applied = {}
    for question in spec['spec']:
        default = question.get('default')
        if default is not None and not answer_errors(question, {question['variable']: default}):
            applied[question['variable']] = default
    return applied


def check_defaults(spec):
    """Raise ``ValueError`` naming every default of ``spec`` (a spec ``validate_spec`` accepts) that AWX leaves out at launch."""
    problems = []
    for idx, question in enumerate(spec['spec']):
        default = question.get('default')
        if default is None or default == '':
            continue  # '' is how the AWX UI stores "no default"
        errors = answer_errors(question, {question['variable']: default})
        if errors:
            problems.append('survey question {0} ({1}): default {2!r} is left out at launch because {3}'.format(
                idx, question['variable'], default, ' '.join(errors)))
    if problems:
        raise ValueError('AWX would run without these defaults: ' + '; '.join(problems))
