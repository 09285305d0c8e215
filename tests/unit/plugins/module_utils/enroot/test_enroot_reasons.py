# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_enroot: the reason a reference no form reads is refused, for references that tell the parts apart, whole; and the
other edges: a Docker Hub warning of a deep path, a short mounts line, the default of caps."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot


def refused(uri):
    with pytest.raises(ValueError) as err:
        _enroot.parse_uri(uri)
    return str(err.value)


@pytest.mark.parametrize('uri, reason', [
    # a user enroot's class has no '"' for; no blank in it to split at
    ('docker://us"er@reg.io#img', 'the user "us"er" has characters enroot does not accept'),
    # the first part is a registry only when it has a "." or ":" itself, not when a later part has one
    ('docker://Foo/bar.baz:bad tag', 'the image "Foo/bar.baz" must be lower-case letters, digits, ".", "_", "-" and "/"'),
    ('docker://Foo/a.b/c:bad tag', 'the image "Foo/a.b/c" must be lower-case letters, digits, ".", "_", "-" and "/"'),
    ('docker://reg.io/Foo/a.b:bad tag', 'the image "Foo/a.b" must be lower-case letters, digits, ".", "_", "-" and "/"'),
    # the scheme ends at the first "://"
    ('docker://reg.io/x://y', 'the tag "//y" is not a valid tag'),
    # a head with two "@" whose last part is a digest: no user is split off
    ('docker://a@b@sha256:', 'the digest "b@sha256:" must be "sha256:" and 64 lower-case hexadecimal digits'),
    ('docker:///a', 'it is none of the forms enroot reads'),
])
def test_reason_of_a_reference_no_form_reads(uri, reason):
    assert refused(uri) == 'invalid image URI "%s": %s; valid forms are %s' % (uri, reason, _enroot.VALID_FORMS)


def test_a_reference_that_starts_with_a_dash():
    assert refused('-v') == ('invalid image URI "-v": it starts with "-", which enroot would read as one of its options, not an image; '
                             'valid forms are %s' % _enroot.VALID_FORMS)
    assert refused('~/x.sqsh') == ('invalid image URI "~/x.sqsh": it is a file path, not an image in a registry (a squashfs file needs '
                                   'no import: srun --container-image=~/x.sqsh uses it as it is); valid forms are %s' % _enroot.VALID_FORMS)


def test_localhost_warning_keeps_the_whole_path():
    assert _enroot.uri_warnings(_enroot.parse_uri('docker://localhost/a/b')) == [
        'docker://localhost/a/b names the Docker Hub repository localhost/a/b: enroot reads the first part as a registry only when '
        'it holds a "." or a ":port"; for a registry on this host write docker://localhost:PORT/a/b']


def test_filesystem_type_reads_a_line_of_three_fields():
    assert _enroot.filesystem_type('/mnt/x', 'dev /mnt ext4\nshort /mnt/x\n') == 'ext4'


def test_package_files_with_caps_by_default():
    assert _enroot.package_files('4.1.2', '1', 'aarch64') == ['enroot_4.1.2-1_arm64.deb', 'enroot+caps_4.1.2-1_arm64.deb']


def test_package_files_take_upper_case_in_a_version():
    assert _enroot.package_files('4.2.0RC1', '1', 'x86_64', caps=False) == ['enroot_4.2.0RC1-1_amd64.deb']


def test_default_output_name_of_a_ref_without_tag_or_digest():
    # parse_uri always sets one; an ImageRef made otherwise names the file as enroot does without a tag
    ref = _enroot.ImageRef('docker://reg.io/team/img', 'docker', 'team/img', registry='reg.io')
    assert _enroot.default_output_name(ref) == 'team+img+latest.sqsh'


@pytest.mark.parametrize('text, message', [
    ('  \n  /etc/ssl/site-ca.pem  \n', "is '/etc/ssl/site-ca.pem', expected the PEM text of one or more CA certificates (-----BEGIN "
                                       'CERTIFICATE----- ... -----END CERTIFICATE-----), e.g. what the ansible.builtin.file lookup reads '
                                       'from a site-ca.pem; a path on the nodes is not read'),
])
def test_ca_bundle_shows_the_first_line_that_is_not_blank(text, message):
    with pytest.raises(ValueError) as err:
        _enroot.ca_bundle(text)
    assert str(err.value) == message
