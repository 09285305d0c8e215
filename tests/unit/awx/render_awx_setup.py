"""Render the awx.awx tasks of playbooks/awx_setup.yml and check them against the modules' own argument specs.

Run as a separate process (it installs Ansible's collection loader, which the
unit-test process must not get):

    python render_awx_setup.py REPO_ROOT COLLECTIONS_PATH [EXTRA_VARS_JSON]

For every awx.awx task whose ``when`` holds, and every item of its loop, the
task's arguments are templated with Ansible's own templar from the play's
vars_files, the task's vars and the extra vars, merged with the play's
module_defaults for group/awx.awx.controller, and validated with
``ArgumentSpecValidator`` against the argument spec the awx.awx module really
builds (its ``main()`` is run up to the point where it creates the module
object). Prints a JSON list of {module, item, params, errors}.
"""
import importlib
import json
import os
import sys


class _Captured(Exception):
    pass


def module_argument_spec(module_name):
    """The argument spec of awx.awx.<module_name>, as its main() builds it, plus the controller auth options."""
    module = importlib.import_module('ansible_collections.awx.awx.plugins.modules.' + module_name)
    from ansible_collections.awx.awx.plugins.module_utils.controller_api import ControllerModule

    def capture(argument_spec=None, **kwargs):
        raise _Captured(argument_spec)

    real = module.ControllerAPIModule
    module.ControllerAPIModule = capture
    spec = None
    try:
        module.main()
    except _Captured as captured:
        spec = captured.args[0]
    finally:
        module.ControllerAPIModule = real
    if spec is None:
        raise RuntimeError('awx.awx.%s main() did not create its module object' % module_name)
    full = dict(ControllerModule.AUTH_ARGSPEC)
    full.update(spec)
    return full


def main():
    root, collections_path = sys.argv[1], sys.argv[2]
    extra_vars = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
    _AnsibleCollectionFinder(paths=[collections_path])._install()
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    playbook_dir = os.path.join(root, 'playbooks')
    loader = DataLoader()
    loader.set_basedir(playbook_dir)
    play = loader.load_from_file(os.path.join(playbook_dir, 'awx_setup.yml'), trusted_as_template=True)[0]
    play_vars = {'playbook_dir': playbook_dir}
    for name in play.get('vars_files', []):
        play_vars.update(loader.load_from_file(os.path.join(playbook_dir, name), trusted_as_template=True))
    extras = extra_vars
    play_vars.update(extras)
    defaults = play.get('module_defaults', {}).get('group/awx.awx.controller', {})

    results = []
    specs = {}
    for task in play['tasks']:
        module = next((key for key in task if key.startswith('awx.awx.')), None)
        if module is None:
            continue
        short = module.split('.')[-1]
        if short not in specs:
            specs[short] = module_argument_spec(short)
        base = dict(play_vars)
        items = Templar(loader=loader, variables=base).template(task['loop']) if 'loop' in task else [None]
        for item in items:
            variables = dict(base)
            if item is not None:
                variables['item'] = item
            variables.update(task.get('vars', {}))
            variables.update(extras)
            templar = Templar(loader=loader, variables=variables)
            if 'when' in task and not templar.evaluate_conditional(trust_as_template(task['when'])):
                continue
            params = dict(templar.template(defaults))
            params.update(templar.template(task[module]))
            result = ArgumentSpecValidator(specs[short]).validate(params)
            results.append({
                'module': module,
                'item': item.get('name') if isinstance(item, dict) else item,
                'params': params,
                'errors': [str(error) for error in result.error_messages],
            })
    json.dump(results, sys.stdout, default=str)


if __name__ == '__main__':
    main()
