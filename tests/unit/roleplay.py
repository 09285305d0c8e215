"""What a role says when one of its inputs is bad.

Each role's first task is the collection's preflight for the role's own inputs
(``gpucluster.bringup.preflight`` with ``inventory: false``, rules in
``plugins/module_utils/preflight/_roles.py``): its failure counts the problems and
gives one line per problem, naming the host and the role.
"""


def preflight_failure(host, role, *problems):
    """The message of that task for ``problems`` (each as ``preflight._roles``'s rule words it) on ``host``."""
    lines = ['%s: %s (role gpucluster.bringup.%s)' % (host, problem, role) for problem in problems]
    return 'the inventory has %d problem%s, nothing was changed:\n%s' % (len(lines), '' if len(lines) == 1 else 's', '\n'.join(lines))
