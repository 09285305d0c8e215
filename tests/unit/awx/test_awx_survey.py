"""tests/unit/awx/awx_survey.py: AWX's survey spec rules, with AWX's messages."""
import copy

import pytest

from ansible_collections.gpucluster.bringup.tests.unit.awx.awx_survey import (
    answer_errors,
    check_defaults,
    launch_defaults,
    validate_spec,
)


def q(**fields):
    question = {'question_name': 'Q', 'variable': 'v', 'type': 'text', 'required': False}
    question.update(fields)
    return question


def spec(*questions):
    return {'name': 'S', 'description': 'D', 'spec': list(questions)}


VALID = [
    ('text', spec(q(default='abc', min=0, max=10))),
    ('text without default', spec(q())),
    ('textarea', spec(q(type='textarea', default='a\nb'))),
    ('password', spec(q(type='password', default='secret'))),
    ('integer', spec(q(type='integer', default=3, min=1, max=5))),
    ('integer empty default', spec(q(type='integer', default=''))),
    ('float int default', spec(q(type='float', default=2, min=0, max=None))),
    ('float', spec(q(type='float', default=2.5))),
    ('multiplechoice list', spec(q(type='multiplechoice', choices=['a', 'b'], default='b'))),
    ('multiplechoice newline string', spec(q(type='multiplechoice', choices='a\n\nb\n', default='a\n'))),
    ('multiplechoice no default', spec(q(type='multiplechoice', choices=['a'], default=''))),
    ('multiselect', spec(q(type='multiselect', choices=['a', 'b', 'c'], default='a\nc'))),
    ('two questions', spec(q(variable='x'), q(variable='y', type='integer', required=True))),
]


@pytest.mark.parametrize('name, survey', VALID, ids=[v[0] for v in VALID])
def test_valid_specs_pass(name, survey):
    before = copy.deepcopy(survey)
    stored = validate_spec(survey)
    assert survey == before, 'the input is not changed'
    assert [s['variable'] for s in stored['spec']] == [s['variable'] for s in survey['spec']]


def test_choices_and_defaults_stored_as_awx_stores_them():
    stored = validate_spec(spec(q(type='multiplechoice', choices='a\n\n b\n', default='\na\n')))
    assert stored['spec'][0]['choices'] == 'a\n b'
    assert stored['spec'][0]['default'] == 'a'


INVALID = [
    ('not an object', ['S'], 'Expected a survey spec object (name, description, spec), received list type.'),
    ('name missing', {'description': 'D', 'spec': [q()]}, "Field 'name' is missing from survey spec."),
    ('description missing', {'name': 'S', 'spec': [q()]}, "Field 'description' is missing from survey spec."),
    ('spec missing', {'name': 'S', 'description': 'D'}, "Field 'spec' is missing from survey spec."),
    ('name not a string', {'name': 1, 'description': 'D', 'spec': [q()]}, "Expected string for field 'name', received int type."),
    ('spec not a list', {'name': 'S', 'description': 'D', 'spec': {}}, "Expected list of items for field 'spec', received dict type."),
    ('spec empty', spec(), "'spec' doesn't contain any items."),
    ('last schema error wins', {'description': 1, 'spec': 'x'}, "Expected list of items for field 'spec', received str type."),
    ('question not an object', spec('text'), 'Survey question 0 is not a json object.'),
    ('type missing', spec({'question_name': 'Q', 'variable': 'v', 'required': True}), "'type' missing from survey question 0"),
    ('question_name missing', spec({'type': 'text', 'variable': 'v', 'required': True}), "'question_name' missing from survey question 0"),
    ('variable missing', spec(q(), {'type': 'text', 'question_name': 'Q', 'required': True}), "'variable' missing from survey question 1"),
    ('required missing', spec({'type': 'text', 'question_name': 'Q', 'variable': 'v'}), "'required' missing from survey question 0"),
    ('variable not a string', spec(q(variable=3)), "'variable' in survey question 0 expected to be string."),
    ('required not a boolean', spec(q(required='yes')), "'required' in survey question 0 expected to be boolean."),
    ('duplicated variable', spec(q(), q(variable='w'), q()), "'variable' 'v' duplicated in survey question 2."),
    ('unknown type', spec(q(type='boolean')),
     "'boolean' in survey question 0 is not one of 'text, textarea, password, multiplechoice, multiselect, integer, float' allowed question types."),
    ('integer default a string', spec(q(type='integer', default='3')), 'Default value 3 in survey question 0 expected to be integer.'),
    ('float default a string', spec(q(type='float', default='2.5')), 'Default value 2.5 in survey question 0 expected to be float.'),
    ('text default a number', spec(q(default=5)), 'Default value 5 in survey question 0 expected to be string.'),
    ('multiplechoice default a list', spec(q(type='multiplechoice', choices=['a'], default=['a'])),
     "Default value ['a'] in survey question 0 expected to be string."),
    ('min not an integer', spec(q(min='1')), 'The min limit in survey question 0 expected to be integer.'),
    ('max a float', spec(q(type='float', max=2.5)), 'The max limit in survey question 0 expected to be integer.'),
    ('choices missing', spec(q(type='multiselect')), 'Survey question 0 of type multiselect must specify choices.'),
    ('two defaults for single select', spec(q(type='multiplechoice', choices=['a', 'b'], default='a\nb')),
     'Multiple Choice (Single Select) can only have one default value.'),
    ('default not a choice', spec(q(type='multiplechoice', choices=['a', 'b'], default='c')), 'Default choice must be answered from the choices listed.'),
    ('multiselect default not a choice', spec(q(type='multiselect', choices='a\nb', default='a\nz')),
     'Default choice must be answered from the choices listed.'),
    ('$encrypted$ on a text question', spec(q(default='$encrypted$')),
     '$encrypted$ is a reserved keyword for password question defaults, survey question 0 is type text.'),
    ('$encrypted$ for a new password', spec(q(variable='x'), q(type='password', default='$encrypted$')),
     '$encrypted$ is a reserved keyword, may not be used for new default in position 1.'),
]


@pytest.mark.parametrize('name, survey, message', INVALID, ids=[v[0] for v in INVALID])
def test_invalid_specs_fail_with_awx_message(name, survey, message):
    with pytest.raises(ValueError) as exc:
        validate_spec(survey)
    assert str(exc.value) == message


def test_encrypted_password_default_keeps_the_stored_one():
    old = spec(q(type='password', default='$encrypted$UTF8$AESCBC$Z0FBQUFB'))
    stored = validate_spec(spec(q(type='password', default='$encrypted$')), old_spec=old)
    assert stored['spec'][0]['default'] == '$encrypted$UTF8$AESCBC$Z0FBQUFB'


ANSWERS = [
    ('required and missing', q(required=True), {}, ["'v' value missing"]),
    ('optional and missing', q(), {}, []),
    ('missing, required not checked', q(required=True), {}, []),
    ('text ok', q(min=2, max=3), {'v': 'ab'}, []),
    ('text too short', q(min=2), {'v': 'a'}, ["'v' value a is too small (length is 1 must be at least 2)."]),
    ('text too long', q(max=2), {'v': 'abc'}, ["'v' value abc is too large (must be no more than 2)."]),
    ('text not a string', q(), {'v': 5}, ["Value 5 for 'v' expected to be a string."]),
    ('integer ok', q(type='integer', min=1, max=64), {'v': 64}, []),
    ('integer a bool', q(type='integer'), {'v': True}, ["Value True for 'v' expected to be an integer."]),
    ('integer too small', q(type='integer', min=1), {'v': 0}, ["'v' value 0 is too small (must be at least 1)."]),
    ('integer too large', q(type='integer', max=64), {'v': 65}, ["'v' value 65 is too large (must be no more than 64)."]),
    ('float not a number', q(type='float'), {'v': '1'}, ["Value 1 for 'v' expected to be a numeric type."]),
    ('float too large', q(type='float', max=1), {'v': 1.5}, ["'v' value 1.5 is too large (must be no more than 1)."]),
    ('choice ok', q(type='multiplechoice', choices='a\nb'), {'v': 'b'}, []),
    ('choice not listed', q(type='multiplechoice', choices=['a', 'b']), {'v': 'c'}, ["Value c for 'v' expected to be one of ['a', 'b']."]),
    ('multiselect not a list', q(type='multiselect', choices=['a']), {'v': 'a'}, ["'v' value is expected to be a list."]),
    ('multiselect one bad', q(type='multiselect', choices=['a', 'b']), {'v': ['a', 'x']}, ["Value x for 'v' expected to be one of ['a', 'b']."]),
    ('password placeholder', q(type='password', required=True), {'v': '$encrypted$'}, ["'v' value missing"]),
]


@pytest.mark.parametrize('name, question, data, errors', ANSWERS, ids=[a[0] for a in ANSWERS])
def test_answers_checked_as_awx_checks_them_at_launch(name, question, data, errors):
    assert answer_errors(question, data, validate_required='not checked' not in name) == errors


def test_defaults_awx_leaves_out_at_launch():
    survey = spec(
        q(variable='ok', type='integer', default=1, min=1),
        q(variable='low', type='integer', default=0, min=1),
        # AWX accepts this when the spec is saved ("1g" is a substring of the newline-joined choices) but not at launch.
        q(variable='sub', type='multiplechoice', choices='all-1g\nall-2g', default='1g'),
        q(variable='none', type='multiplechoice', choices=['a'], default=''),
    )
    stored = validate_spec(survey)
    assert launch_defaults(stored) == {'ok': 1}
    with pytest.raises(ValueError) as exc:
        check_defaults(stored)
    assert str(exc.value) == (
        "AWX would run without these defaults: "
        "survey question 1 (low): default 0 is left out at launch because 'low' value 0 is too small (must be at least 1).; "
        "survey question 2 (sub): default '1g' is left out at launch because Value 1g for 'sub' expected to be one of ['all-1g', 'all-2g'].")


def test_check_defaults_accepts_good_defaults():
    check_defaults(validate_spec(spec(q(type='integer', default=1, min=1), q(variable='w', type='multiplechoice', choices=['a'], default='a'))))
