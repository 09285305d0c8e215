"""slurm/_distro_packages: the one table of the distributions' Slurm packages, and its filters."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.filter.slurm_distro import FilterModule
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _distro_packages as distro

FILTERS = FilterModule().filters()


@pytest.mark.parametrize('family, part, expected', [
    ('Debian', 'controller', ['slurmctld', 'slurm-client', 'libpmix-dev']),
    ('Debian', 'compute', ['slurmd', 'slurm-client', 'libpmix-dev']),
    ('Debian', 'login', ['slurm-client', 'libpmix-dev']),
    ('Debian', 'sackd', ['sackd']),
    ('Debian', 'slurmdbd', ['slurmdbd', 'slurm-client']),
    ('Debian', 'nvml', ['slurm-wlm-nvml-plugin']),
    ('Debian', 'mps', ['nvidia-cuda-mps']),
    ('RedHat', 'controller', ['slurm', 'slurm-slurmctld', 'pmix']),
    ('RedHat', 'compute', ['slurm', 'slurm-slurmd', 'pmix']),
    ('RedHat', 'login', ['slurm', 'pmix']),
    ('RedHat', 'sackd', ['slurm-sackd']),
    ('RedHat', 'slurmdbd', ['slurm-slurmdbd', 'slurm']),
    ('RedHat', 'nvml', []),
    ('RedHat', 'mps', []),
    ('Suse', 'controller', []),
])
def test_the_packages_of_each_part(family, part, expected):
    assert distro.packages(family, part) == expected
    assert FILTERS['slurm_distribution_packages'](family, part) == expected


@pytest.mark.parametrize('family, roles, configless, expected', [
    ('Debian', ['controller'], False, ['slurmctld', 'slurm-client', 'libpmix-dev']),
    ('Debian', ['compute'], True, ['slurmd', 'slurm-client', 'libpmix-dev']),
    ('Debian', ['controller', 'slurmdbd'], False, ['slurmctld', 'slurm-client', 'libpmix-dev', 'slurmdbd']),
    # the order is the roles' (controller, compute, slurmdbd, login), not the caller's; each package once
    ('Debian', ['slurmdbd', 'controller', 'compute'], False, ['slurmctld', 'slurm-client', 'libpmix-dev', 'slurmd', 'slurmdbd']),
    ('Debian', ['login'], False, ['slurm-client', 'libpmix-dev']),
    ('Debian', ['login'], True, ['slurm-client', 'libpmix-dev', 'sackd']),
    ('RedHat', ['login'], True, ['slurm', 'pmix', 'slurm-sackd']),
    ('RedHat', ['controller', 'slurmdbd'], False, ['slurm', 'slurm-slurmctld', 'pmix', 'slurm-slurmdbd']),
    ('Debian', [], True, []),
    ('Suse', ['controller'], False, []),
])
def test_a_hosts_packages(family, roles, configless, expected):
    assert distro.host_packages(family, roles, configless) == expected
    assert FILTERS['slurm_host_packages'](family, roles, configless) == expected


def test_bad_parts_and_roles_are_named():
    with pytest.raises(ValueError, match="part is 'gpu', expected one of: controller"):
        distro.packages('Debian', 'gpu')
    with pytest.raises(AnsibleFilterError, match="slurm_distribution_packages: part is 'gpu'"):
        FILTERS['slurm_distribution_packages']('Debian', 'gpu')
    with pytest.raises(AnsibleFilterError, match="slurm_host_packages: roles has 'gpu', expected some of: controller, compute"):
        FILTERS['slurm_host_packages']('Debian', ['compute', 'gpu'])


@pytest.mark.parametrize('family, pattern', [('Debian', '*.deb'), ('RedHat', '*.rpm'), ('Suse', '*.deb')])
def test_the_local_package_pattern(family, pattern):
    assert distro.local_package_pattern(family) == pattern == FILTERS['slurm_local_package_pattern'](family)


def test_the_whole_messages_and_the_default_of_configless():
    with pytest.raises(ValueError) as err:
        distro.packages('Debian', 'gpu')
    assert str(err.value) == "part is 'gpu', expected one of: controller, compute, login, sackd, slurmdbd, nvml, mps"
    with pytest.raises(ValueError) as err:
        distro.host_packages('Debian', ['compute', 'gpu', 'sackd'])
    assert str(err.value) == "roles has 'gpu', 'sackd', expected some of: controller, compute, slurmdbd, login"
    assert distro.host_packages('Debian', ('login',)) == ['slurm-client', 'libpmix-dev']
    assert distro.PARTS == ('controller', 'compute', 'login', 'sackd', 'slurmdbd', 'nvml', 'mps')
