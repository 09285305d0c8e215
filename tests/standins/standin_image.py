# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""STAND-IN container image for the enroot tests: NOT a real distribution image.

Builds a tiny OCI image layout (one gzip layer with a few text files, a config with a
history entry, a manifest, ``index.json``) by hand, with the standard library only, so
that ``skopeo copy oci:DIR:TAG docker://127.0.0.1:PORT/...`` can push it into a real
registry (Debian's ``docker-registry``) as a Docker v2 schema 2 or an OCI manifest.  It
stands in for images such as ``nvcr.io/nvidia/pytorch`` that cannot be downloaded here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gzip
import hashlib
import io
import json
import os
import tarfile


def _blob(root, data):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(root, 'blobs', 'sha256', digest), 'wb') as handle:
        handle.write(data)
    return 'sha256:' + digest, len(data)


def build_layout(root, tag, files):
    """Write an OCI image layout at ``root`` holding one image tagged ``tag`` with ``files`` ({path: bytes})."""
    os.makedirs(os.path.join(root, 'blobs', 'sha256'), exist_ok=True)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode='w', format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(files[name]))
    layer = raw.getvalue()
    layer_digest, layer_size = _blob(root, gzip.compress(layer, mtime=0))
    config = json.dumps({
        'architecture': 'amd64', 'os': 'linux', 'created': '1970-01-01T00:00:00Z',
        'config': {'Env': ['PATH=/usr/bin:/bin'], 'Cmd': ['/bin/sh']},
        'rootfs': {'type': 'layers', 'diff_ids': ['sha256:' + hashlib.sha256(layer).hexdigest()]},
        'history': [{'created': '1970-01-01T00:00:00Z', 'created_by': 'gpucluster.bringup stand-in test image'}],
    }, sort_keys=True).encode()
    config_digest, config_size = _blob(root, config)
    manifest = json.dumps({
        'schemaVersion': 2, 'mediaType': 'application/vnd.oci.image.manifest.v1+json',
        'config': {'mediaType': 'application/vnd.oci.image.config.v1+json', 'digest': config_digest, 'size': config_size},
        'layers': [{'mediaType': 'application/vnd.oci.image.layer.v1.tar+gzip', 'digest': layer_digest, 'size': layer_size}],
    }, sort_keys=True).encode()
    manifest_digest, manifest_size = _blob(root, manifest)
    index_path = os.path.join(root, 'index.json')
    index = {'schemaVersion': 2, 'manifests': []}
    if os.path.exists(index_path):
        with open(index_path) as handle:
            index = json.load(handle)
    index['manifests'] = [m for m in index['manifests'] if m.get('annotations', {}).get('org.opencontainers.image.ref.name') != tag]
    index['manifests'].append({'mediaType': 'application/vnd.oci.image.manifest.v1+json', 'digest': manifest_digest,
                               'size': manifest_size, 'annotations': {'org.opencontainers.image.ref.name': tag}})
    with open(index_path, 'w') as handle:
        json.dump(index, handle)
    with open(os.path.join(root, 'oci-layout'), 'w') as handle:
        json.dump({'imageLayoutVersion': '1.0.0'}, handle)
    return manifest_digest
