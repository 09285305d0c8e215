# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_file_set: the whole message of each bad entry, both sides of each length limit, and what the steps mean."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _file_set as fs

SHA = 'a' * 40
MODE = 'a quoted octal string of 3 or 4 digits 0-7 such as "0644" or "0755"'


def file_entry(**extra):
    return dict({'dest': '/etc/x', 'checksum': SHA, 'mode': '0644'}, **extra)


def message(entries, **kwargs):
    with pytest.raises(ValueError) as err:
        fs.validate_entries(entries, **kwargs)
    return str(err.value)


@pytest.mark.parametrize('entries, text', [
    (None, 'files is None, expected a non-empty list of entries, each a dict with at least dest'),
    ([{'dest': '/etc/a\nb', 'state': 'absent'}],
     "files[0]: dest is '/etc/a\\nb', expected an absolute path without NUL, newline or other control characters"),
    ([{'dest': '/proc', 'state': 'absent'}],
     "files[0] (/proc): dest is '/proc', expected a path on a real file system, not under /proc (a kernel file system that cannot hold files)"),
    ([{'dest': '/sys/x', 'state': 'absent'}],
     "files[0] (/sys/x): dest is '/sys/x', expected a path on a real file system, not under /sys (a kernel file system that cannot hold files)"),
    ([{'dest': '/etc/../x', 'state': 'absent'}], "files[0] (/etc/../x): dest is '/etc/../x', expected a normalised absolute path (no \"..\", \".\" or \"//\")"),
    ([{'dest': '/etc/..', 'state': 'absent'}], "files[0] (/etc/..): dest is '/etc/..', expected a normalised absolute path (no \"..\", \".\" or \"//\")"),
    ([{'dest': '/etc/.', 'state': 'absent'}], "files[0] (/etc/.): dest is '/etc/.', expected a normalised absolute path (no \"..\", \".\" or \"//\")"),
    ([{'dest': 5, 'state': 'absent'}], 'files[0]: dest is 5, expected an absolute path such as "/etc/slurm/x.conf"'),
    ([{'dest': '//', 'state': 'absent'}], "files[0] (//): dest is '//', expected an absolute path below / (not / itself)"),
    ([{'dest': '/etc/x', 'state': 'absent', 'mode': '0644'}],
     'files[0] (/etc/x): mode is set, expected only dest, state, restarts with state absent'),
    ([{'dest': '/d', 'state': 'directory', 'mode': '0755', 'secret': True, 'checksum': SHA}],
     'files[0] (/d): checksum, secret are set, expected only dest, state, mode, owner, group with state directory'),
    ([file_entry(), {'dest': '/etc/x/y', 'state': 'absent'}],
     "files[1] (/etc/x/y): dest is '/etc/x/y', expected a path whose parents are directories, but files[0] makes /etc/x a file"),
    ([{'dest': '/gone', 'state': 'absent'}, file_entry(dest='/gone/x')],
     "files[1] (/gone/x): dest is '/gone/x', expected a path whose parents are directories, but files[0] makes /gone absent"),
    ([file_entry(dest='/etc/xy'), file_entry(dest='/etc/x')], None),
    ([{'dest': '/etc/x', 'checksum': SHA}], 'files[0] (/etc/x): mode is not set, expected %s for a file' % MODE),
    ([file_entry(mode=644)], 'files[0] (/etc/x): mode is 644, expected %s, not a number (YAML reads an unquoted 0644 as the number 420)' % MODE),
    ([file_entry(mode=True)], 'files[0] (/etc/x): mode is True, expected %s' % MODE),
    ([file_entry(mode='00644')], None),
    ([file_entry(owner='root:root')], "files[0] (/etc/x): owner is 'root:root', expected a user name (no spaces, \":\" or \"/\", not starting with \"-\")"),
    ([file_entry(group='-g')], "files[0] (/etc/x): group is '-g', expected a group name (no spaces, \":\" or \"/\", not starting with \"-\")"),
    ([file_entry(secret='maybe')], "files[0] (/etc/x): secret is 'maybe', expected true or false"),
    ([file_entry(checksum=SHA.upper())], "files[0] (/etc/x): checksum is '%s', expected the SHA-1 of the content in hex (40 characters 0-9a-f)" % SHA.upper()),
    ([{'dest': '/l', 'state': 'link', 'target': 'a\nb'}],
     "files[0] (/l): target is 'a\\nb', expected the path the link points to (non-empty text without control characters)"),
    ([{'dest': '/l', 'state': 'link', 'target': 5}],
     'files[0] (/l): target is 5, expected the path the link points to (non-empty text without control characters)'),
])
def test_whole_messages(entries, text):
    if text is None:
        assert [entry['dest'] for entry in fs.validate_entries(entries)] == [entry['dest'] for entry in entries]
    else:
        assert message(entries) == text


@pytest.mark.parametrize('entry, text', [
    ({'dest': '/etc/x', 'mode': '0600'}, 'files[0] (/etc/x): neither src nor content is set, expected exactly one of them for a file'),
    ({'dest': '/etc/x', 'mode': '0600', 'src': 'a', 'content': 'b'}, 'files[0] (/etc/x): src and content are both set, expected exactly one of them'),
    ({'dest': '/etc/x', 'mode': '0600', 'src': '  '},
     "files[0] (/etc/x): src is '  ', expected the path of a file on the controller (looked up in the role's files/ first)"),
    ({'dest': '/etc/x', 'mode': '0600', 'src': 'a\tb'},
     "files[0] (/etc/x): src is 'a\\tb', expected the path of a file on the controller (looked up in the role's files/ first)"),
    ({'dest': '/etc/x', 'mode': '0600', 'content': None}, 'files[0] (/etc/x): content is None, expected text (a string; use src for a file on the controller)'),
    ({'dest': '/etc/x', 'mode': '0600', 'content': 'x', 'checksum': SHA},
     'files[0] (/etc/x): checksum is set, expected only dest, state, src, content, mode, owner, group, secret, restarts with state file'),
])
def test_whole_messages_of_the_action_form(entry, text):
    assert message([entry], checksums=False, sources=True) == text


def test_the_action_form_takes_src_or_content():
    assert fs.validate_entries([{'dest': '/etc/x', 'mode': '0600', 'src': 'x.conf'}], checksums=False, sources=True) == [
        {'dest': '/etc/x', 'state': 'file', 'mode': 0o600, 'src': 'x.conf'}]
    assert fs.validate_entries([{'dest': '/etc/x', 'mode': '0600', 'content': ''}], checksums=False, sources=True)[0]['content'] == ''
    # without checksums a file needs none, and a bad one is not looked at
    assert fs.validate_entries([file_entry(checksum='bad')], checksums=False)[0]['checksum'] == 'bad'


def test_a_secret_is_kept_as_a_bool():
    assert fs.validate_entries([file_entry(secret='no')])[0]['secret'] is False


@pytest.mark.parametrize('length, shown', [(200, True), (201, False)])
def test_where_shows_a_dest_of_up_to_200_characters(length, shown):
    dest = '/' + 'd' * (length - 1)
    assert fs.where(3, dest) == ('files[3] (%s)' % dest if shown else 'files[3]')
    assert fs.where(0) == 'files[0]'
    assert fs.where(1, '') == 'files[1]'
    assert fs.where(1, '/a\x7f') == 'files[1]'


@pytest.mark.parametrize('dest, ok', [
    ('/' + 'n' * 255, True), ('/' + 'n' * 256, False),
    ('/' + '/'.join(['n' * 255] * 15) + '/' + 'n' * 254, True),   # 4095 bytes
    ('/' + '/'.join(['n' * 255] * 15) + '/' + 'n' * 255, False),  # 4096 bytes
    ('/' + '\u00e9' * 127, True), ('/' + '\u00e9' * 128, False),  # bytes, not characters
])
def test_dest_length_limits(dest, ok):
    if ok:
        assert fs.check_dest('p', dest) == dest
    else:
        assert message([{'dest': dest, 'state': 'absent'}]).endswith(
            ', expected a path of at most 4095 bytes whose names have at most 255 bytes')


@pytest.mark.parametrize('target, ok', [('t' * 4095, True), ('t' * 4096, False), ('\u00e9' * 2047, True), ('\u00e9' * 2048, False)])
def test_link_target_length_limit(target, ok):
    entries = [{'dest': '/l', 'state': 'link', 'target': target}]
    if ok:
        assert fs.validate_entries(entries)[0]['target'] == target
    else:
        assert message(entries).endswith(', expected the path the link points to (non-empty text without control characters)')


@pytest.mark.parametrize('name, ok', [('u' * 256, True), ('u' * 257, False), ('a-b.c_d$', True), ('a,b', False), ('a\x7f', False)])
def test_owner_name_limits(name, ok):
    if ok:
        assert fs.check_name('p', 'owner', name) == name
    else:
        with pytest.raises(ValueError):
            fs.check_name('p', 'owner', name)


def test_under():
    assert fs.under('/etc', '/etc') and fs.under('/etc/x', '/etc') and fs.under('/etc/x', '/etc/')
    assert not fs.under('/etcx', '/etc') and not fs.under('/et', '/etc')


@pytest.mark.parametrize('want, now, text', [
    ({'dest': '/p', 'state': 'absent'}, {'type': 'directory'},
     "state is 'absent', but /p is a directory; expected a file, a link or nothing there (state absent removes files and links, never a directory)"),
    ({'dest': '/p', 'state': 'link', 'target': 'x'}, {'type': 'directory'},
     "state is 'link', but /p is a directory; expected a link or nothing there (move the directory away first, it is not removed)"),
    ({'dest': '/p', 'state': 'directory', 'mode': 0o755}, {'type': 'other'},
     "state is 'directory', but /p is a other; expected a directory or nothing there (remove the other first, it is not replaced)"),
])
def test_plan_entry_whole_messages(want, now, text):
    with pytest.raises(ValueError) as err:
        fs.plan_entry(want, now)
    assert str(err.value) == text


def test_plan_entry_of_a_file_without_checksum_change_but_owner():
    want = {'dest': '/p', 'state': 'file', 'checksum': SHA, 'mode': 0o644, 'owner': 'root'}
    assert fs.plan_entry(want, {'type': 'file', 'checksum': SHA, 'mode': 0o644}) == [('owner', 'root')]
    assert fs.plan_entry(dict(want, state='directory'), {'type': 'directory', 'checksum': None, 'mode': 0o644, 'owner': 'root'}) == []


@pytest.mark.parametrize('steps, changed', [
    ([], False), ([('content', None)], True), ([('remove', 'link')], True), ([('create', 'file')], True),
    ([('create', 'link')], True), ([('create', 'directory')], False), ([('mode', 0o644), ('owner', 'x'), ('group', 'y')], False),
    ([('create', 'directory'), ('mode', 0o755)], False), ([('mode', 0o755), ('content', None)], True),
])
def test_changes_what_is_read(steps, changed):
    assert fs.changes_what_is_read(steps) is changed


def test_describe_every_step():
    assert fs.describe([('remove', 'other'), ('create', 'link'), ('content', None), ('mode', 0o2755), ('owner', 'a'), ('group', 'b')]) == (
        'remove the other there, create link, content, mode 2755, owner a, group b')
    assert fs.describe([('mode', 0o44)]) == 'mode 0044'


def test_a_path_that_is_not_utf8_counts_its_bytes():
    # a name read from a non-UTF-8 file system: each undecodable byte is one surrogate, one byte on disk
    dest = '/etc/' + '\udcff' * 255
    assert fs.check_dest('p', dest) == dest
    assert message([{'dest': dest + 'x', 'state': 'absent'}]).endswith('names have at most 255 bytes')
    assert fs.validate_entries([{'dest': '/l', 'state': 'link', 'target': '\udcff' * 4095}])[0]['target'] == '\udcff' * 4095


def test_restarts_are_checked_and_completed():
    done = fs.validate_entries([file_entry(restarts=['slurmd']), {'dest': '/l', 'state': 'link', 'target': 'x',
                                                                  'restarts': [{'daemon': 'slurmctld', 'action': 'reconfigure'}]}])
    assert [entry['restarts'] for entry in done] == [[{'daemon': 'slurmd', 'action': 'restart', 'reason': ''}],
                                                     [{'daemon': 'slurmctld', 'action': 'reconfigure', 'reason': ''}]]
    assert message([file_entry(restarts='slurmd')]) == (
        "files[0] (/etc/x): restarts is 'slurmd', expected a list of {daemon: a systemd unit such as \"slurmd\", action: restart or reconfigure}")


def test_dest_keeps_what_ends_it_but_slashes():
    assert [entry['dest'] for entry in fs.validate_entries([{'dest': '/etc/XX', 'state': 'absent'}, {'dest': '/srv/', 'state': 'absent'}])] == [
        '/etc/XX', '/srv']


def test_the_whole_message_of_a_name_too_long():
    dest = '/' + 'n' * 256
    assert message([{'dest': dest, 'state': 'absent'}]) == (
        'files[0]: dest is %s..., expected a path of at most 4095 bytes whose names have at most 255 bytes' % repr(dest)[:117])
    dest = '/' + 'n' * 150 + '/' + 'm' * 40
    assert fs.check_dest('p', dest) == dest
