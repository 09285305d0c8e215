"""catalogue/_mig_layouts: the shipped named MIG layouts, a site's merged over them, and the gpucluster.bringup.mig_layouts filter."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.filter.mig import FilterModule
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _gpus
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _mig_layouts as mig_layouts
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig import _mig_plan

FILTERS = FilterModule().filters()
H100 = 'NVIDIA H100 80GB HBM3'
A100_40 = 'NVIDIA A100-SXM4-40GB'

# The names mig-parted users know, as the mig role shipped them in roles/mig/defaults/main.yml (now this table)
SHIPPED = ['all-disabled', 'all-enabled', 'all-balanced', 'all-1g', 'all-2g', 'all-3g', 'all-4g', 'all-7g', 'all-1g.5gb',
           'all-1g.10gb', 'all-1g.18gb', 'all-2g.10gb', 'all-2g.20gb', 'all-3g.20gb', 'all-3g.40gb', 'all-7g.40gb', 'all-7g.80gb']


def test_the_shipped_layouts_are_the_mig_parted_names_in_order():
    assert list(mig_layouts.LAYOUTS) == SHIPPED


@pytest.mark.parametrize('name, entries', [
    ('all-disabled', [{'gpu': 'all', 'mig': False}]),
    ('all-enabled', [{'gpu': 'all', 'mig': True, 'instances': []}]),
    ('all-balanced', [{'gpu': 'all', 'shape': 'balanced'}]),
    ('all-7g', [{'gpu': 'all', 'shape': '7g'}]),
    ('all-1g.10gb', [{'gpu': 'all', 'shape': '1g.10gb'}]),
])
def test_a_shipped_layout_is_one_entry_for_every_gpu(name, entries):
    assert mig_layouts.LAYOUTS[name] == entries


@pytest.mark.parametrize('name', SHIPPED)
def test_every_shipped_layout_is_a_request_the_planner_takes(name):
    _mig_plan.check_request(mig_layouts.LAYOUTS[name])


@pytest.mark.parametrize('name, gpu, instances', [
    ('all-1g', H100, 7), ('all-balanced', H100, 4), ('all-7g', H100, 1), ('all-1g.10gb', A100_40, 4), ('all-1g.10gb', H100, 7),
])
def test_a_shipped_shape_gives_instances_on_the_catalogues_gpus(name, gpu, instances):
    shape = mig_layouts.LAYOUTS[name][0]['shape']
    found = _gpus.shape_instances(_gpus.mig_profiles(gpu), shape)
    assert sum(entry.get('count', 1) for entry in found) == instances


@pytest.mark.parametrize('custom, name, expected, source', [
    (None, 'all-1g', [{'gpu': 'all', 'shape': '1g'}], mig_layouts.SHIPPED),
    ({}, 'all-1g', [{'gpu': 'all', 'shape': '1g'}], mig_layouts.SHIPPED),
    ({'site': [{'gpu': 0, 'mig': False}]}, 'site', [{'gpu': 0, 'mig': False}], 'mig_layouts_custom'),
    # the site's layout of a shipped name wins
    ({'all-1g': [{'gpu': 'all', 'shape': '2g'}]}, 'all-1g', [{'gpu': 'all', 'shape': '2g'}], 'mig_layouts_custom'),
])
def test_the_sites_layouts_are_merged_over_the_shipped_ones(custom, name, expected, source):
    merged = mig_layouts.layouts(custom)
    assert merged[name] == expected and set(SHIPPED) <= set(merged)
    assert mig_layouts.source(name, custom) == source
    assert FILTERS['mig_layouts'](custom) == merged and FILTERS['mig_layout_source'](name, custom) == source


def test_the_merge_is_a_copy():
    custom = {'site': [{'gpu': 0}]}
    merged = mig_layouts.layouts(custom)
    merged['all-1g'][0]['shape'] = 'changed'
    merged['site'].append({'gpu': 1})
    assert mig_layouts.LAYOUTS['all-1g'] == [{'gpu': 'all', 'shape': '1g'}] and custom == {'site': [{'gpu': 0}]}


@pytest.mark.parametrize('custom', [[], 'all-1g', 3])
def test_site_layouts_that_are_no_dictionary_are_named(custom):
    with pytest.raises(ValueError, match='mig_layouts_custom is'):
        mig_layouts.layouts(custom)
    with pytest.raises(AnsibleFilterError, match='mig_layouts_custom is'):
        FILTERS['mig_layouts'](custom)


@pytest.mark.parametrize('custom, shown', [([], '[]'), ('all-1g', "'all-1g'"), (3, '3')])
def test_site_layouts_that_are_no_dictionary_are_refused_with_the_whole_message(custom, shown):
    with pytest.raises(ValueError) as found:
        mig_layouts.layouts(custom)
    assert str(found.value) == ('mig_layouts_custom is %s; expected a dictionary of layout name to a list of GPU entries'
                                % shown)


@pytest.mark.parametrize('custom', [['site'], 'site', None])
def test_the_source_of_a_layout_when_the_sites_layouts_are_no_dictionary(custom):
    # only a dictionary of the site's layouts names mig_layouts_custom, even where the name is "in" the value
    assert mig_layouts.source('site', custom) == 'gpucluster.bringup.mig_layouts'
