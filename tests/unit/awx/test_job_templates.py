"""awx/job_templates.yml, awx/surveys/*.json and playbooks/awx_setup.yml against AWX's rules and the collection they drive."""
import glob
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _mig_layouts as mig_layouts
from ansible_collections.gpucluster.bringup.tests.unit.awx.awx_survey import check_defaults, validate_spec

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
VENV_BIN = os.path.dirname(sys.executable)
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')
SURVEY_DIR = os.path.join(ROOT, 'awx', 'surveys')
RENDER = os.path.join(os.path.dirname(__file__), 'render_awx_setup.py')

with open(os.path.join(ROOT, 'awx', 'job_templates.yml')) as _f:
    SETUP_VARS = yaml.safe_load(_f)
TEMPLATES = SETUP_VARS['awx_setup_job_templates']
TEMPLATE_IDS = [t['name'] for t in TEMPLATES]
SURVEY_FILES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(SURVEY_DIR, '*.json')))
BOOL_CHOICES = {'true', 'false'}


def load(path):
    with open(os.path.join(ROOT, path)) as handle:
        return yaml.safe_load(handle)


def survey(name):
    with open(os.path.join(SURVEY_DIR, name)) as handle:
        return json.load(handle)


def role_options(role):
    """Every option of every entry point of a role's argument spec: name -> spec."""
    options = {}
    for entry in load('roles/%s/meta/argument_specs.yml' % role)['argument_specs'].values():
        options.update(entry.get('options') or {})
    return options


def playbook_closure(playbook):
    """The playbook files a playbook runs (itself and its import_playbook targets) and the collection roles they use."""
    files, roles, todo = [], set(), [playbook]
    while todo:
        path = todo.pop()
        if path in files:
            continue
        files.append(path)
        text = open(os.path.join(ROOT, path)).read()
        roles.update(re.findall(r'gpucluster\.bringup\.(\w+)', text))
        for play in yaml.safe_load(text):
            target = play.get('ansible.builtin.import_playbook') or play.get('import_playbook')
            if target:
                todo.append(os.path.join(os.path.dirname(path), target))
    roles = set(r for r in roles if os.path.isdir(os.path.join(ROOT, 'roles', r)))
    return files, roles


def role_text_files(role):
    paths = []
    for sub in ('tasks', 'handlers', 'templates', 'vars'):
        paths += glob.glob(os.path.join(ROOT, 'roles', role, sub, '**', '*'), recursive=True)
    return [p for p in paths if os.path.isfile(p)]


# --- the survey files ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('name', SURVEY_FILES)
def test_survey_passes_awx_validation_and_keeps_its_defaults(name):
    stored = validate_spec(survey(name))
    check_defaults(stored)


def test_every_survey_file_is_used_and_every_used_one_exists():
    used = sorted(set(t['survey'] for t in TEMPLATES if t.get('survey')))
    assert used == SURVEY_FILES


def test_mig_layout_choices_are_the_mig_roles_layouts():
    layouts = list(mig_layouts.LAYOUTS)
    question = next(s for s in survey('mig_change.json')['spec'] if s['variable'] == 'mig_layout')
    assert question['type'] == 'multiplechoice' and question['required'] is True
    assert question['choices'] == layouts


# --- the job templates -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize('template', TEMPLATES, ids=TEMPLATE_IDS)
def test_template_settings(template):
    assert os.path.isfile(os.path.join(ROOT, template['playbook'])), template['playbook']
    assert template['job_type'] in ('run', 'check')
    assert template['verbosity'] in (0, 1)
    assert isinstance(template['forks'], int) and template['forks'] > 0
    assert isinstance(template['timeout'], int) and template['timeout'] > 0
    assert template['allow_simultaneous'] is False, 'two runs of one template would fight over the same nodes'
    assert template['description'].strip()


@pytest.mark.parametrize('playbook', ['playbooks/site.yml', 'playbooks/mig_change.yml'])
def test_node_limit_prompted_where_it_makes_sense(playbook):
    templates = [t for t in TEMPLATES if t['playbook'] == playbook]
    assert templates and all(t['ask_limit_on_launch'] is True for t in templates)


def test_deploy_description_names_every_stage_tag_of_site_yml():
    tags = set()
    for play in load('playbooks/site.yml'):
        tags.update(t for t in play.get('tags', []) if t != 'always')
    deploy = next(t for t in TEMPLATES if t['playbook'] == 'playbooks/site.yml')
    assert deploy['ask_tags_on_launch'] is True
    words = set(re.findall(r'[\w-]+', deploy['description']))
    assert tags - words == set(), 'stage tags of site.yml missing from the deploy template description'


SURVEY_QUESTIONS = [(t, s) for t in TEMPLATES if t.get('survey') for s in survey(t['survey'])['spec']]


@pytest.mark.parametrize('template, question', SURVEY_QUESTIONS, ids=['%s:%s' % (t['name'], s['variable']) for t, s in SURVEY_QUESTIONS])
def test_survey_variable_is_read_by_the_playbook_and_typed_to_match(template, question):
    files, roles = playbook_closure(template['playbook'])
    variable = question['variable']
    options = {}
    for role in roles:
        options.update(role_options(role))
    playbook_text = ''.join(open(os.path.join(ROOT, f)).read() for f in files)
    in_playbook = re.search(r'\{\{[^}]*\b%s\b' % re.escape(variable), playbook_text) is not None
    assert variable in options or in_playbook, '%s is read by neither %s nor roles %s' % (variable, files, sorted(roles))

    kind = options.get(variable, {}).get('type')
    if question['type'] == 'integer':
        assert kind in ('int', None), '%s: integer answer for a %s option' % (variable, kind)
        assert question.get('min') is not None, 'an integer question needs a min'
    elif question['type'] == 'multiplechoice' and set(question['choices']) <= BOOL_CHOICES:
        # AWX answers with the strings "true"/"false"; "false" is truthy unless the role pipes it through bool.
        assert kind == 'bool'
        uses = 0
        for role in roles:
            for path in role_text_files(role):
                for match in re.finditer(r'\b%s\b(?!_)' % re.escape(variable), open(path).read()):
                    uses += 1
                    rest = open(path).read()[match.end():match.end() + 12]
                    assert re.match(r'\s*\|\s*bool\b', rest), '%s used without | bool in %s' % (variable, path)
        assert uses > 0
    elif question['type'] == 'multiplechoice':
        assert kind == 'str'
    elif question['type'] in ('text', 'textarea'):
        assert kind in ('str', 'list')
        if kind == 'list':
            # A comma-separated string becomes a list only where a module option of type list receives it whole,
            # and "" would become [""]: the answer must be non-empty and every use must be a whole "{{ var }}".
            assert question['required'] is True and question.get('min', 0) >= 1
            for role in roles:
                for path in role_text_files(role):
                    text = open(path).read()
                    for match in re.finditer(r'\b%s\b(?!_)' % re.escape(variable), text):
                        line = text[text.rfind('\n', 0, match.start()) + 1:text.find('\n', match.end())]
                        assert re.match(r'^\s+\w+: "\{\{ %s \}\}"$' % re.escape(variable), line), '%s: %s' % (path, line)


def test_text_answer_becomes_the_list_the_module_gets():
    from ansible.module_utils.common.validation import check_type_list
    assert check_type_list('gpu-01,gpu-02') == ['gpu-01', 'gpu-02']


# --- playbooks/awx_setup.yml -----------------------------------------------------------------------------------------

def render(extra_vars):
    proc = subprocess.run([sys.executable, RENDER, ROOT, COLLECTIONS, json.dumps(extra_vars)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_awx_setup_arguments_match_the_awx_modules_argument_specs():
    results = render({'controller_host': 'https://awx.example.org', 'controller_oauthtoken': 'token', 'awx_setup_create_inventory': True,
                      'awx_setup_project_scm_url': 'https://git.example.org/gpucluster-bringup.git'})
    assert [r['errors'] for r in results if r['errors']] == []
    assert [r['module'] for r in results] == (['awx.awx.project', 'awx.awx.inventory'] + ['awx.awx.job_template'] * len(TEMPLATES)
                                              + ['awx.awx.schedule'] * len(SETUP_VARS['awx_setup_schedules']))
    by_name = dict((r['item'], r['params']) for r in results if r['module'] == 'awx.awx.job_template')
    assert sorted(by_name) == sorted(TEMPLATE_IDS)
    for template in TEMPLATES:
        params = by_name[template['name']]
        assert params['controller_oauthtoken'] == 'token'
        for key in ('playbook', 'job_type', 'verbosity', 'forks', 'timeout', 'allow_simultaneous', 'ask_limit_on_launch', 'become_enabled'):
            assert params[key] == template[key], key
        assert params['survey_enabled'] is bool(template.get('survey'))
        assert params['survey_spec'] == (survey(template['survey']) if template.get('survey') else {})
        assert params['credentials'] == [SETUP_VARS['awx_setup_credential_name']]


def test_awx_setup_without_inventory_creation_skips_it():
    assert 'awx.awx.inventory' not in [r['module'] for r in render({})]


def test_awx_setup_argument_check_can_fail():
    results = render({'awx_setup_job_templates': [{'name': 'bad', 'playbook': 'p.yml', 'verbosity': 9, 'forks': 'many'}]})
    errors = next(r['errors'] for r in results if r['item'] == 'bad')
    assert errors == ['argument \'forks\' is of type str and we were unable to convert to int: "\'many\'" cannot be converted to an int',
                      'value of verbosity must be one of: 0, 1, 2, 3, 4, 5, got: 9']


def test_controller_secrets_are_no_log_in_awx_awx():
    from ansible_collections.awx.awx.plugins.module_utils.controller_api import ControllerModule
    assert ControllerModule.AUTH_ARGSPEC['controller_oauthtoken']['no_log'] is True
    assert ControllerModule.AUTH_ARGSPEC['controller_password']['no_log'] is True


def _env():
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, HOME=os.path.join(ROOT, '.build', 'lint-home'),
                PATH=VENV_BIN + os.pathsep + os.environ.get('PATH', ''))


def test_awx_setup_syntax_check():
    proc = subprocess.run([os.path.join(VENV_BIN, 'ansible-playbook'), '--syntax-check', 'playbooks/awx_setup.yml'], cwd=ROOT, env=_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout


def test_awx_setup_stops_without_a_project_url():
    proc = subprocess.run([os.path.join(VENV_BIN, 'ansible-playbook'), 'playbooks/awx_setup.yml', '-e', 'controller_host=http://127.0.0.1:9'],
                          cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False, timeout=120)
    assert proc.returncode == 2
    assert ('awx_setup_project_scm_url is empty: set it to the git URL AWX clones this collection from '
            '(or awx_setup_project_scm_type=manual for a project directory on the AWX host)') in proc.stdout


def test_awx_setup_stops_on_a_missing_survey_file():
    extra = json.dumps({'awx_setup_project_scm_url': 'https://git.example.org/x.git',
                        'awx_setup_job_templates': [{'name': 'x', 'playbook': 'p.yml', 'job_type': 'run', 'survey': 'nope.json'}]})
    proc = subprocess.run([os.path.join(VENV_BIN, 'ansible-playbook'), 'playbooks/awx_setup.yml', '-e', extra],
                          cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False, timeout=120)
    assert proc.returncode == 2
    assert "job template 'x': job_type must be run or check (it is 'run') and survey must be null or a file of" in proc.stdout
    assert "(it is 'nope.json')" in proc.stdout


def test_awx_setup_stops_on_a_schedule_of_an_unknown_template():
    extra = json.dumps({'awx_setup_project_scm_url': 'https://git.example.org/x.git',
                        'awx_setup_schedules': [{'name': 'nightly', 'template': 'gpucluster - no such', 'rrule': 'x'}]})
    proc = subprocess.run([os.path.join(VENV_BIN, 'ansible-playbook'), 'playbooks/awx_setup.yml', '-e', extra],
                          cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False, timeout=120)
    assert proc.returncode == 2
    assert "schedule 'nightly': template 'gpucluster - no such' is not one of awx_setup_job_templates (gpucluster - deploy," in proc.stdout


@pytest.mark.parametrize('schedule', SETUP_VARS['awx_setup_schedules'], ids=[s['name'] for s in SETUP_VARS['awx_setup_schedules']])
def test_schedules_launch_a_template_with_an_awx_rrule(schedule):
    assert schedule['template'] in TEMPLATE_IDS
    # AWX takes one DTSTART with a time zone and RRULE lines (awx/main/models/schedules.py)
    assert re.match(r'^DTSTART;TZID=[A-Za-z_/]+:\d{8}T\d{6} RRULE:FREQ=(WEEKLY|DAILY|MONTHLY);INTERVAL=\d+(;BYDAY=[A-Z,]+)?$', schedule['rrule'])
    template = next(t for t in TEMPLATES if t['name'] == schedule['template'])
    # a scheduled run cannot answer a survey: every required question has a default
    if template.get('survey'):
        assert all('default' in q for q in survey(template['survey'])['spec'] if q['required'])


def test_awx_setup_renders_the_schedules():
    results = render({'controller_host': 'https://awx.example.org', 'controller_oauthtoken': 'token',
                      'awx_setup_project_scm_url': 'https://git.example.org/gpucluster-bringup.git'})
    schedules = [r for r in results if r['module'] == 'awx.awx.schedule']
    assert [r['errors'] for r in schedules if r['errors']] == [] and schedules
    assert [(r['params']['unified_job_template'], r['params']['enabled']) for r in schedules] == [
        (s['template'], s['enabled']) for s in SETUP_VARS['awx_setup_schedules']]


def test_awx_files_lint_clean():
    # as scripts/test.sh runs it (--offline: nothing is installed into the checkout's .ansible/)
    proc = subprocess.run([os.path.join(VENV_BIN, 'ansible-lint'), '--strict', '--offline', '--nocolor', 'playbooks/awx_setup.yml', 'awx/job_templates.yml'],
                          cwd=ROOT, env=_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
