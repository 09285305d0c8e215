# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for _validate_input: each check returns the (converted) value or names the option, the value and what is valid."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _validate_input as vi


@pytest.mark.parametrize('call, expected', [
    (lambda: vi.require_int('n', 5, minimum=1), 5),
    (lambda: vi.require_int('n', '7', minimum=0), 7),
    (lambda: vi.require_int('n', 0, minimum=0), 0),
    (lambda: vi.require_int('n', 3.0), 3),
    (lambda: vi.require_int('n', None, allow_none=True), None),
    (lambda: vi.require_int('n', 10, minimum=1, maximum=10), 10),
    (lambda: vi.require_number('x', 0.5, above=0), 0.5),
    (lambda: vi.require_number('x', '2.5', minimum=0), 2.5),
    (lambda: vi.require_number('x', None, allow_none=True), None),
    (lambda: vi.require_bool('b', 'yes'), True),
    (lambda: vi.require_bool('b', 'off'), False),
    (lambda: vi.require_bool('b', 0), False),
    (lambda: vi.require_str('s', 'a'), 'a'),
    (lambda: vi.require_str('s', '', allow_empty=True), ''),
    (lambda: vi.require_choice('c', 'b', ('a', 'b')), 'b'),
    (lambda: vi.require_match('m', 'ab1', r'[a-z]+\d', 'letters then a digit'), 'ab1'),
    (lambda: vi.require_match('m', '', r'[a-z]+', 'letters', allow_empty=True), ''),
    (lambda: vi.require_list('l', ('a', 'b'), element=vi.require_str), ['a', 'b']),
    (lambda: vi.require_keys('d', {'a': 1}, ('a', 'b'), required=('a',)), {'a': 1}),
    (lambda: vi.require_dict('d', {'a': 1}, allowed=('a',)), {'a': 1}),
    (lambda: vi.require_word('w', 'slurm-hooks'), 'slurm-hooks'),
    (lambda: vi.require_bool('b', 1), True),
    (lambda: vi.require_number('x', 5, allow_none=True), 5),
    (lambda: vi.require_number('x', 0, minimum=0), 0),
    (lambda: vi.require_number('x', 4, maximum=4), 4),
    (lambda: vi.require_dict('d', None, allow_none=True), None),
    (lambda: vi.require_dict('d', {'a': 1}, allow_none=True), {'a': 1}),
    (lambda: vi.require_word('w', '', allow_empty=True), ''),
])
def test_valid_values(call, expected):
    assert call() == expected


@pytest.mark.parametrize('call, message', [
    (lambda: vi.require_int('hook_log_lines', -5, minimum=1), 'hook_log_lines is -5, expected a whole number of at least 1'),
    (lambda: vi.require_int('t', 0, minimum=1, unit='seconds'), 't is 0, expected a whole number of seconds of at least 1'),
    (lambda: vi.require_int('t', 11, minimum=1, maximum=10), 't is 11, expected a whole number between 1 and 10'),
    (lambda: vi.require_int('t', 11, maximum=10), 't is 11, expected a whole number of at most 10'),
    (lambda: vi.require_int('t', True), 't is True, expected a whole number'),
    (lambda: vi.require_int('t', '5x'), "t is '5x', expected a whole number"),
    (lambda: vi.require_int('t', 2.5), 't is 2.5, expected a whole number'),
    (lambda: vi.require_int('t', None), 't is None, expected a whole number'),
    (lambda: vi.require_str('user', 'ro\x00ot'), "user is 'ro\\x00ot', expected text without a NUL byte"),
    (lambda: vi.require_int('t', [1]), 't is [1], expected a whole number'),
    (lambda: vi.require_number('x', 0, above=0), 'x is 0, expected a number above 0'),
    (lambda: vi.require_number('x', -1, minimum=0), 'x is -1, expected a number of at least 0'),
    (lambda: vi.require_number('x', float('nan')), 'x is nan, expected a number'),
    (lambda: vi.require_number('x', 'fast'), "x is 'fast', expected a number"),
    (lambda: vi.require_number('x', False), 'x is False, expected a number'),
    (lambda: vi.require_number('x', 5, maximum=4), 'x is 5, expected a number of at most 4'),
    (lambda: vi.require_bool('b', 'maybe'), "b is 'maybe', expected true or false"),
    (lambda: vi.require_bool('b', 2), 'b is 2, expected true or false'),
    (lambda: vi.require_str('s', ''), "s is '', expected a non-empty string"),
    (lambda: vi.require_str('s', '  '), "s is '  ', expected a non-empty string"),
    (lambda: vi.require_str('s', 5, allow_empty=True), 's is 5, expected a string'),
    (lambda: vi.require_choice('c', 'x', ('a', 'b')), "c is 'x', expected one of a, b"),
    (lambda: vi.require_match('reservation', 'a b', r'\w+', 'a word'), "reservation is 'a b', expected a word"),
    (lambda: vi.require_match('m', None, r'\w+', 'a word'), 'm is None, expected a word'),
    (lambda: vi.require_list('l', 'abc'), "l is 'abc', expected a list"),
    (lambda: vi.require_list('l', [], min_items=1), 'l is [], expected a list of at least 1 item(s)'),
    (lambda: vi.require_list('l', ['a', 5], element=vi.require_str), 'l[1] is 5, expected a non-empty string'),
    (lambda: vi.require_keys('expect', {'topology': 1, 'bogus': 2}, ('topology', 'nics')),
     'expect has unknown key(s) bogus; valid keys: topology, nics'),
    (lambda: vi.require_keys('d', {}, ('a', 'b'), required=('a',)), 'd lacks the key(s) a (required: a)'),
    (lambda: vi.require_dict('checks["n1"]', 'notadict'), 'checks["n1"] is \'notadict\', expected a dict'),
    (lambda: vi.require_dict('d', [], allowed=('a',)), 'd is [], expected a dict with keys a'),
    (lambda: vi.require_dict('d', {'z': 1}, allowed=('a',)), 'd has unknown key(s) z; valid keys: a'),
    (lambda: vi.require_word('ident', '-n'), "ident is '-n', expected one word"),
    (lambda: vi.require_word('ident', 'two words'), "ident is 'two words', expected one word"),
])
def test_bad_values(call, message):
    with pytest.raises(vi.InputError) as err:
        call()
    assert str(err.value).startswith(message), str(err.value)


def test_long_values_are_clipped():
    assert vi.show('x' * 500).endswith('...') and len(vi.show('x' * 500)) == 120


@pytest.mark.parametrize('call, message', [
    (lambda: vi.require_int('t', True), 't is True, expected a whole number'),
    (lambda: vi.require_number('x', 'fast'), "x is 'fast', expected a number"),
    (lambda: vi.require_number('x', None), 'x is None, expected a number'),
    (lambda: vi.require_number('x', 0, above=0, maximum=5), 'x is 0, expected a number above 0 and of at most 5'),
    (lambda: vi.require_list('l', 'abc'), "l is 'abc', expected a list"),
    (lambda: vi.require_list('l', None), 'l is None, expected a list'),
    (lambda: vi.require_dict('d', None), 'd is None, expected a dict'),
    (lambda: vi.require_dict('d', 'x'), "d is 'x', expected a dict"),
    (lambda: vi.require_dict('d', [], allowed=('a', 'b')), 'd is [], expected a dict with keys a, b'),
    (lambda: vi.require_dict('d', {}, allowed=('a', 'b'), required=('a',)), 'd lacks the key(s) a (required: a)'),
    (lambda: vi.require_keys('d', {'x': 1, 'y': 2}, ('a', 'b')), 'd has unknown key(s) x, y; valid keys: a, b'),
    (lambda: vi.require_keys('d', {}, ('a', 'b', 'c'), required=('a', 'b')), 'd lacks the key(s) a, b (required: a, b)'),
])
def test_bad_value_messages_in_full(call, message):
    with pytest.raises(vi.InputError) as err:
        call()
    assert str(err.value) == message


@pytest.mark.parametrize('value, shown', [
    ('x' * 118, "'" + 'x' * 118 + "'"),  # 120 characters: shown whole
    ('x' * 119, "'" + 'x' * 116 + '...'),
])
def test_show_clips_only_what_is_longer_than_the_limit(value, shown):
    assert vi.show(value) == shown


@pytest.fixture
def tree(tmp_path):
    (tmp_path / 'afile').write_text('x')
    (tmp_path / 'adir').mkdir()
    (tmp_path / 'adir' / 'report.json').write_text('{}')
    return tmp_path


@pytest.mark.parametrize('path, directory, message', [
    ('{tmp}/afile/sub', True, "dest is '{tmp}/afile/sub', but {tmp}/afile is a file, not a directory, so the directory cannot be created"),
    ('{tmp}/afile/a/b/c', True, 'but {tmp}/afile is a file, not a directory'),
    ('{tmp}/afile', True, "dest is '{tmp}/afile', which exists and is not a directory; expected a directory"),
    ('{tmp}/adir', False, "dest is '{tmp}/adir', which is a directory; expected a file path"),
    ('/proc/x', True, "dest is '/proc/x', which is under /proc, a kernel file system that cannot hold files"),
    ('/proc', True, "dest is '/proc', which is under /proc"),
    ('/sys/kernel/report', True, "dest is '/sys/kernel/report', which is under /sys"),
    ('{tmp}/elsewhere/x', True, 'which is under {tmp}/elsewhere, a kernel file system'),
    ('', True, "dest is '', expected a path to a directory"),
    ('   ', False, "dest is '   ', expected a path to a file"),
    ('{tmp}/a\x00b', False, "dest is '{tmp}/a\\x00b', expected a path to a file"),
])
def test_check_writable_dest_refuses(tree, path, directory, message):
    before = sorted(os.listdir(str(tree)))
    with pytest.raises(vi.InputError) as err:
        vi.check_writable_dest('dest', path.format(tmp=tree), directory=directory, pseudo_roots=('/proc', '/sys', str(tree / 'elsewhere')))
    assert message.format(tmp=tree) in str(err.value), str(err.value)
    assert sorted(os.listdir(str(tree))) == before


@pytest.mark.parametrize('path, directory', [
    ('{tmp}/adir', True),
    ('{tmp}/new/deeper/still', True),
    ('{tmp}/adir/report.json', False),
    ('{tmp}/adir/new.json', False),
])
def test_check_writable_dest_accepts_and_creates_nothing(tree, path, directory):
    before = sorted(os.listdir(str(tree)))
    assert vi.check_writable_dest('dest', path.format(tmp=tree), directory=directory) == path.format(tmp=tree)
    assert sorted(os.listdir(str(tree))) == before


@pytest.mark.parametrize('path, directory, message', [
    ('{tmp}/afile/sub', True, "dest is '{tmp}/afile/sub', but {tmp}/afile is a file, not a directory, so the directory cannot be created;"
                              " expected a path whose parents are directories"),
    ('{tmp}/afile/new.json', False, "dest is '{tmp}/afile/new.json', but {tmp}/afile is a file, not a directory, so the file cannot be created;"
                                    " expected a path whose parents are directories"),
    ('{tmp}/afile', True, "dest is '{tmp}/afile', which exists and is not a directory; expected a directory (or a path to create one)"),
    ('{tmp}/adir', False, "dest is '{tmp}/adir', which is a directory; expected a file path"),
    ('/proc/x', True, "dest is '/proc/x', which is under /proc, a kernel file system that cannot hold files; expected a path on a real file system"),
])
def test_check_writable_dest_messages(tree, path, directory, message):
    with pytest.raises(vi.InputError) as err:
        vi.check_writable_dest('dest', path.format(tmp=tree), directory=directory)
    assert str(err.value) == message.format(tmp=tree)


@pytest.mark.parametrize('root, path, refused', [
    ('/proc/', '/proc/x', True),  # a root written with a trailing "/"
    ('{tmp}/rootX', '{tmp}/rootX/y', True),
    ('{tmp}/rootX/', '{tmp}/rootX/y', True),
    ('{tmp}/root', '{tmp}/rootX/y', False),
    ('{tmp}/rootX', '{tmp}/rootXY', False),
])
def test_check_writable_dest_pseudo_roots(tree, root, path, refused):
    root, path = root.format(tmp=tree), path.format(tmp=tree)
    if refused:
        with pytest.raises(vi.InputError) as err:
            vi.check_writable_dest('dest', path, pseudo_roots=(root,))
        assert 'which is under %s, a kernel file system' % root in str(err.value)
    else:
        assert vi.check_writable_dest('dest', path, pseudo_roots=(root,)) == path


@pytest.mark.parametrize('granted, refused', [
    (os.R_OK | os.X_OK, True),  # no write permission
    (os.R_OK | os.W_OK, True),  # no search permission
    (os.R_OK | os.W_OK | os.X_OK, False),
])
def test_check_writable_dest_needs_write_and_search_permission(tree, monkeypatch, granted, refused):
    # root may write anywhere, so os.access is answered by a stand-in for a directory with the permissions `granted`
    monkeypatch.setattr(vi.os, 'access', lambda path, mode: mode & ~granted == 0)
    if refused:
        with pytest.raises(vi.InputError) as err:
            vi.check_writable_dest('dest', str(tree / 'new'))
        assert str(err.value) == "dest is '%s', but this user may not create files in %s; expected a writable location" % (tree / 'new', tree)
    else:
        assert vi.check_writable_dest('dest', str(tree / 'new')) == str(tree / 'new')


def _statvfs_raises(path):
    raise OSError(38, 'Function not implemented', path)


@pytest.mark.parametrize('f_flag, has_st_rdonly, refused', [
    (None, True, False),  # statvfs fails: the file system is taken as writable
    (1, False, True),  # a platform without os.ST_RDONLY: the POSIX value 1 is used
    (2, False, False),  # ST_NOSUID alone
])
def test_check_writable_dest_read_only_flag(tree, monkeypatch, f_flag, has_st_rdonly, refused):
    class Stat(object):
        pass
    Stat.f_flag = f_flag
    monkeypatch.setattr(vi.os, 'statvfs', _statvfs_raises if f_flag is None else lambda path: Stat())
    if not has_st_rdonly:
        monkeypatch.delattr(vi.os, 'ST_RDONLY')
    if refused:
        with pytest.raises(vi.InputError) as err:
            vi.check_writable_dest('dest', str(tree / 'adir'))
        assert str(err.value) == "dest is '%s', but %s is on a read-only file system; expected a writable location" % (tree / 'adir', tree / 'adir')
    else:
        assert vi.check_writable_dest('dest', str(tree / 'adir')) == str(tree / 'adir')


def test_check_writable_dest_refuses_an_unwritable_parent(tree, monkeypatch):
    # root may write anywhere, so the permission answer is given by a stand-in for os.access
    monkeypatch.setattr(vi.os, 'access', lambda path, mode: False)
    with pytest.raises(vi.InputError) as err:
        vi.check_writable_dest('dest', str(tree / 'new'))
    assert str(err.value) == "dest is '%s', but this user may not create files in %s; expected a writable location" % (tree / 'new', tree)


def test_check_writable_dest_refuses_a_read_only_file_system(tree, monkeypatch):
    class Ro(object):
        f_flag = vi.os.ST_RDONLY
    monkeypatch.setattr(vi.os, 'statvfs', lambda path: Ro())
    with pytest.raises(vi.InputError) as err:
        vi.check_writable_dest('dest', str(tree / 'adir'))
    assert str(err.value) == "dest is '%s', but %s is on a read-only file system; expected a writable location" % (tree / 'adir', tree / 'adir')


def test_nearest_existing(tree):
    assert vi.nearest_existing(str(tree / 'a' / 'b')) == (str(tree), ['a', 'b'])
    assert vi.nearest_existing(str(tree / 'adir')) == (str(tree / 'adir'), [])


@pytest.mark.parametrize('value, base', [
    ('slurmd', 'slurmd'), ('slurmd.service', 'slurmd'), ('getty@tty1', 'getty@tty1'), ('dbus-org.freedesktop.login1', 'dbus-org.freedesktop.login1'),
    ('systemd-fsck@dev-disk-by\\x2duuid-1', 'systemd-fsck@dev-disk-by\\x2duuid-1'), ('s' * 248, 's' * 248)])
def test_require_unit_gives_the_name_without_its_suffix(value, base):
    assert vi.require_unit('daemons[0]', value) == base


@pytest.mark.parametrize('value', ['-Hroot@host', '--user', '-', '', ' ', '.service', '@x', 'a b', 'x\n', 'a/b', 's' * 249, None, 5, ['slurmd']])
def test_require_unit_refuses_what_is_no_unit_name(value):
    with pytest.raises(vi.InputError, match=r'^daemons\[0\] is .*, expected a systemd unit name such as "slurmd" or "slurmd.service"'):
        vi.require_unit('daemons[0]', value)


@pytest.mark.parametrize('value, ok', [
    ('gpu-01', True), ('dgx-b200.rack7', True), ('n_01', True), ('x' * 64, True), ('x' * 65, False), ('-w', False),
    ('--uid=0', False), ('gpu 01', False), ('gpu-01,gpu-02', False), ('a=b', False), ('gpu-01\n', False), ('', False), (None, False), (5, False),
])
def test_is_slurm_name_and_slurm_name_agree(value, ok):
    assert vi.is_slurm_name(value) is ok
    if ok:
        assert vi.slurm_name('nodes[0]', value) == value
    else:
        with pytest.raises(vi.InputError, match=r'^nodes\[0\] is .*, expected a Slurm name: letters, digits'):
            vi.slurm_name('nodes[0]', value)


UNIT_RULES = ('(letters, digits, ":", "_", ".", "\\", "@" and "-", not starting with "-" or "@", at most 256 characters)')


@pytest.mark.parametrize('call, message', [
    (lambda: vi.require_word('ident', '-n'), "ident is '-n', expected one word (no spaces, not starting with \"-\")"),
    (lambda: vi.require_word('ident', 'a b', what='a tag'), "ident is 'a b', expected a tag"),
    (lambda: vi.require_word('ident', ''), "ident is '', expected one word (no spaces, not starting with \"-\")"),
    (lambda: vi.slurm_name('nodes[0]', 'a b'), "nodes[0] is 'a b', expected a Slurm name: " + vi.SLURM_NAME_TEXT),
    (lambda: vi.slurm_name('nodes[0]', '-w', what='a node name', allow_empty=True),
     "nodes[0] is '-w', expected a node name: " + vi.SLURM_NAME_TEXT + ', or empty'),
    (lambda: vi.slurm_name('nodes[0]', ''), "nodes[0] is '', expected a Slurm name: " + vi.SLURM_NAME_TEXT),
    (lambda: vi.require_unit('daemons[0]', 'a b'), "daemons[0] is 'a b', expected a systemd unit name such as \"slurmd\" or "
                                                   "\"slurmd.service\" " + UNIT_RULES),
    (lambda: vi.require_unit('d', '@x', example='munge'), "d is '@x', expected a systemd unit name such as \"munge\" or "
                                                          "\"munge.service\" " + UNIT_RULES),
    (lambda: vi.require_int('t', 0, minimum=1, maximum=9, unit='seconds'), 't is 0, expected a whole number of seconds between 1 and 9'),
    (lambda: vi.require_int('t', float('inf')), 't is inf, expected a whole number'),
    (lambda: vi.require_int('t', '1.0'), "t is '1.0', expected a whole number"),
    (lambda: vi.require_number('x', 1, above=1, minimum=0, maximum=5), 'x is 1, expected a number above 1 and of at least 0 and of at most 5'),
    (lambda: vi.require_number('x', 'inf'), "x is 'inf', expected a number"),
    (lambda: vi.require_number('x', [1]), 'x is [1], expected a number'),
    (lambda: vi.require_str('s', None), 's is None, expected a non-empty string'),
    (lambda: vi.require_str('s', None, allow_empty=True), 's is None, expected a string'),
    (lambda: vi.require_str('s', 'a\x00', allow_empty=True), "s is 'a\\x00', expected text without a NUL byte"),
    (lambda: vi.require_choice('c', 3, (1, 2)), 'c is 3, expected one of 1, 2'),
    (lambda: vi.require_match('m', None, r'\w+', 'a word', allow_empty=False), 'm is None, expected a word'),
    (lambda: vi.require_match('m', 'ab', r'a', 'an a'), "m is 'ab', expected an a"),
    (lambda: vi.require_match('m', 'x' + chr(10), r'x', 'an x'), "m is 'x\\n', expected an x"),
    (lambda: vi.require_list('l', None), 'l is None, expected a list'),
    (lambda: vi.require_list('l', ['a'], min_items=2), "l is ['a'], expected a list of at least 2 item(s)"),
    (lambda: vi.require_bool('b', None), 'b is None, expected true or false'),
    (lambda: vi.require_bool('b', -1), 'b is -1, expected true or false'),
    (lambda: vi.require_dict('d', {'a': 1}, allowed=()), 'd has unknown key(s) a; valid keys: '),
])
def test_whole_messages_of_the_other_checks(call, message):
    with pytest.raises(vi.InputError) as err:
        call()
    assert str(err.value) == message


@pytest.mark.parametrize('call, expected', [
    (lambda: vi.require_int('n', ' +5 '), 5),
    (lambda: vi.require_int('n', '-3', minimum=-3), -3),
    (lambda: vi.require_int('n', -3, maximum=-3), -3),
    (lambda: vi.require_int('n', '12', minimum=12, maximum=12), 12),
    (lambda: vi.require_number('x', ' 1.5 ', above=1.4, maximum=1.5), 1.5),
    (lambda: vi.require_number('x', 7), 7),
    (lambda: vi.require_bool('b', ' YES '), True),
    (lambda: vi.require_bool('b', 'On'), True),
    (lambda: vi.require_bool('b', '1'), True),
    (lambda: vi.require_bool('b', ' False'), False),
    (lambda: vi.require_bool('b', '0'), False),
    (lambda: vi.require_bool('b', False), False),
    (lambda: vi.require_str('s', None, allow_none=True), None),
    (lambda: vi.require_str('s', ' a '), ' a '),
    (lambda: vi.require_match('m', None, r'\w+', 'a word', allow_empty=True), None),
    (lambda: vi.require_list('l', None, allow_none=True), None),
    (lambda: vi.require_list('l', ['a', 'b'], min_items=2), ['a', 'b']),
    (lambda: vi.require_list('l', [' 2', 3], element=vi.require_int), [2, 3]),
    (lambda: vi.require_dict('d', {'z': 1}), {'z': 1}),
    (lambda: vi.require_keys('d', {'a': 1, 'b': 2}, ('a', 'b'), required=('a', 'b')), {'a': 1, 'b': 2}),
    (lambda: vi.require_unit('u', 'munge'), 'munge'),
    (lambda: vi.slurm_name('n', '', allow_empty=True), ''),
    (lambda: vi.slurm_name('n', None, allow_empty=True), None),
    (lambda: vi.show('abcdefgh', limit=6), "'ab..."),
    (lambda: vi.show('abcd', limit=6), "'abcd'"),
])
def test_more_valid_values_and_defaults(call, expected):
    assert call() == expected


def test_a_list_element_is_named_by_its_index():
    seen = []
    assert vi.require_list('jobs', ('a', 'b'), element=lambda name, item: seen.append(name) or item.upper()) == ['A', 'B']
    assert seen == ['jobs[0]', 'jobs[1]']


def test_module_failure_keeps_its_message_and_result():
    failure = vi.ModuleFailure('it broke', rc=3, stderr='no')
    assert (str(failure), failure.msg, failure.result) == ('it broke', 'it broke', {'rc': 3, 'stderr': 'no'})
    assert vi.ModuleFailure('bare').result == {}
    assert issubclass(vi.InputError, ValueError)


def test_nearest_existing_of_a_relative_path(tree, monkeypatch):
    monkeypatch.chdir(str(tree))
    assert vi.nearest_existing('adir/x/y') == (str(tree / 'adir'), ['x', 'y'])
    assert vi.nearest_existing('/') == ('/', [])


def test_check_writable_dest_returns_the_absolute_path(tree, monkeypatch):
    monkeypatch.chdir(str(tree))
    assert vi.check_writable_dest('dest', 'adir/../new/x') == str(tree / 'new' / 'x')
    assert vi.check_writable_dest('dest', 'adir/report.json', directory=False) == str(tree / 'adir' / 'report.json')
    assert vi.PSEUDO_ROOTS == ('/proc', '/sys')


def test_check_writable_dest_asks_about_the_parent_of_a_file(tree, monkeypatch):
    asked = []
    monkeypatch.setattr(vi.os, 'access', lambda path, mode: asked.append((path, mode)) or True)
    vi.check_writable_dest('dest', str(tree / 'adir' / 'report.json'), directory=False)
    vi.check_writable_dest('dest', str(tree / 'adir'))
    vi.check_writable_dest('dest', str(tree / 'adir' / 'new' / 'x.json'), directory=False)
    assert asked == [(str(tree / 'adir'), os.W_OK | os.X_OK)] * 3


@pytest.mark.parametrize('call, message', [
    (lambda: vi.require_int('n', 0, minimum=1), 'n is 0, expected a whole number of at least 1'),
    (lambda: vi.require_int('n', 11, maximum=10), 'n is 11, expected a whole number of at most 10'),
    (lambda: vi.slurm_name('n', 'a b'), "n is 'a b', expected a Slurm name: letters, digits, \"_\", \"-\" and \".\" (no spaces, commas or "
                                        "\"=\"), starting with a letter or digit, at most 64 characters"),
    (lambda: vi.check_writable_dest('dest', ''), "dest is '', expected a path to a directory"),
    (lambda: vi.check_writable_dest('dest', None, directory=False), 'dest is None, expected a path to a file'),
])
def test_range_and_path_messages_in_full(call, message):
    with pytest.raises(vi.InputError) as err:
        call()
    assert str(err.value) == message
