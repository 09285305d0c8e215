# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One node type, declared once: the inventory variable ``gpucluster_node_type`` of a host or group.

``{name: dgx-h100, gpu_model: H100, gpu_count: 8, hcas: [mlx5_0, ...], nvlink_domain: ''}``: the hardware every node
of the group has.  The health check (its expected GPU count and models), the validation (node_check's ``expect``) and
the preflight (MIG layouts and a hand-set ``Gres`` against the declared GPUs) read it, the health check its
``hcas`` (each declared InfiniBand device must have a port on the node) and the slurm role's block topology its
``nvlink_domain`` (the block's name, checked against NVML's); none of them has a variable of its own for it.

* ``gpu_model``: part of a GPU name the catalogue (``catalogue._gpus``) knows, case ignored (``H100``,
  ``A100-SXM4-40GB``, ``L40S``), or a name the inventory adds with ``preflight_gpu_models``; ``''`` only with
  ``gpu_count: 0``;
* ``gpu_count``: the GPUs NVML must see, a whole number, 0 or more (required; ``'8'`` is 8, as the argument spec reads it);
* ``hcas``: the InfiniBand devices (``mlx5_0``; ``'mlx5_0,mlx5_1'`` is two), default ``[]``; ``nvlink_domain``: the
  multi-node NVLink domain (an NVL72 rack: one group, one node type, per rack), the name of its Slurm block with
  ``slurm_topology: block``, default ``''`` (none declared); ``name``: a label for reports, default ``''``.

:func:`problems` lists every mistake (one line each, naming ``gpucluster_node_type.<key>``, the value and what is
valid), :func:`normalise` returns the dict with its defaults or raises :class:`NodeTypeError` with the first mistake,
:func:`expectations` gives what the checks compare the node with.  Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _gpus

VARIABLE = 'gpucluster_node_type'
DEFAULTS = {'name': '', 'gpu_model': '', 'gpu_count': None, 'hcas': [], 'nvlink_domain': ''}
KEYS = tuple(sorted(DEFAULTS))


class NodeTypeError(ValueError):
    """A mistake in ``gpucluster_node_type``; the message names the host, the key, the value and what is valid."""


def _show(value):
    text = repr(value) if not isinstance(value, bool) else ('true' if value else 'false')
    return text if len(text) <= 80 else text[:77] + '...'


def _count(value):
    """``gpu_count`` as a whole number, as the argument spec converts it (``8``, ``'8'``, ``8.0``), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r'^\s*-?\d+\s*$', value):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _hcas(value):
    """``hcas`` as a list, as the argument spec converts it (``'mlx5_0,mlx5_1'`` is two), or None."""
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return value.split(',') if value else []
    return None


def model_names():
    """The GPU names the catalogue knows, without NVML's ``NVIDIA `` prefix (what ``gpu_model`` may be a part of)."""
    names = []
    for model in _gpus.MODELS:
        for name in model.names:
            short = name[len('NVIDIA '):] if name.startswith('NVIDIA ') else name
            if short not in names:
                names.append(short)
    return names


def known_model(text, extra=()):
    """Whether ``text`` is part of a GPU name the catalogue knows (or of one of ``extra``), case ignored."""
    wanted = text.strip().lower()
    if not wanted:
        return False
    if _gpus.models_matching(wanted):
        return True
    return any(isinstance(name, str) and wanted in name.lower() for name in extra or ())


def _model_problems(path, model, count, extra):
    if not isinstance(model, str):
        return ['%s.gpu_model is %s; expected part of a GPU name, such as H100' % (path, _show(model))]
    if not model.strip():
        if count is not None and count > 0:
            return ["%s.gpu_model is %s but gpu_count is %d; expected the GPUs' model (part of a GPU name the catalogue knows: %s)"
                    % (path, _show(model), count, ', '.join(model_names()))]
        return []
    if extra is not None and not known_model(model, extra):
        return ['%s.gpu_model is %s, which is part of no GPU name the catalogue knows; expected part of one of: %s '
                '(or add the name NVML reports to preflight_gpu_models)' % (path, _show(model), ', '.join(model_names()))]
    return []


def problems(value, extra=(), path=VARIABLE):
    """Every mistake of a node type ``value``, one line each; [] for a good one or None (no node type declared).

    ``extra``: GPU names the inventory adds (``preflight_gpu_models``); None does not check ``gpu_model`` against the
    catalogue (the role's own check, which has not the inventory's names).
    """
    if value is None:
        return []
    if not isinstance(value, dict):
        return ['%s is %s; expected a dictionary {name, gpu_model, gpu_count, hcas, nvlink_domain}' % (path, _show(value))]
    found = []
    unknown = sorted(str(key) for key in value if key not in DEFAULTS)
    if unknown:
        found.append('%s has the unknown key%s %s; valid keys: %s'
                     % (path, 's' if len(unknown) > 1 else '', ', '.join(repr(k) for k in unknown), ', '.join(KEYS)))
    count = _count(value.get('gpu_count'))
    if value.get('gpu_count') is None:
        found.append('%s lacks gpu_count; expected the number of GPUs of this node type (a whole number, 0 or more)' % path)
    elif count is None or count < 0:
        found.append('%s.gpu_count is %s; expected the number of GPUs of this node type (a whole number, 0 or more)'
                     % (path, _show(value['gpu_count'])))
    found.extend(_model_problems(path, value.get('gpu_model', ''), count, extra))
    hcas = _hcas(value.get('hcas', []))
    if hcas is None:
        found.append('%s.hcas is %s; expected a list of InfiniBand device names, such as [mlx5_0, mlx5_1]' % (path, _show(value['hcas'])))
    else:
        for index, hca in enumerate(hcas):
            if not isinstance(hca, str) or not hca.strip() or any(c.isspace() or c == '/' for c in hca):
                found.append('%s.hcas[%d] is %s; expected an InfiniBand device name, such as mlx5_0' % (path, index, _show(hca)))
    for key in ('name', 'nvlink_domain'):
        if not isinstance(value.get(key, ''), str):
            found.append('%s.%s is %s; expected a string' % (path, key, _show(value[key])))
    domain = value.get('nvlink_domain', '')
    # the name of a Slurm block (BlockName=): checked here, before any node changes, not first by slurm_topology
    if isinstance(domain, str) and domain and not re.match(r'[A-Za-z0-9._-]+\Z', domain):
        found.append('%s.nvlink_domain is %s; expected a block name of letters, digits, ".", "_" or "-", such as rack-a07, '
                     'or "" for none' % (path, _show(domain)))
    return found


def normalise(value, host=None, extra=()):
    """The node type with its defaults (``hcas`` a new list), or None when none is declared; raises
    :class:`NodeTypeError` with the first mistake (prefixed ``<host>: `` when ``host`` is given)."""
    found = problems(value, extra)
    if found:
        raise NodeTypeError('%s%s' % ('%s: ' % host if host else '', found[0]))
    if value is None:
        return None
    result = dict(DEFAULTS)
    result.update(value)
    result['hcas'] = list(_hcas(result['hcas']))
    result['gpu_count'] = _count(result['gpu_count'])
    return result


def block_domain(value, detected):
    """A node's NVLink domain for the block topology (``_topology.block_topology``): ``detected`` (what NVML reports,
    ``{cluster_uuid, clique_id}`` or None) with ``declared``, the node type's ``nvlink_domain``, where it declares one.
    The node type was checked by the preflight; a value that is no node type declares nothing here."""
    name = value.get('nvlink_domain') if isinstance(value, dict) else None
    if not isinstance(name, str) or not name:
        return detected
    return dict(detected or {}, declared=name)


def expectations(value, host=None, extra=()):
    """What the checks compare a node with: ``{'gpu_count': int or None, 'gpu_models': [model] or [] or None,
    'hcas': [device] or None}``.

    None (no node type): all None (the health check records what the node has, the validation checks neither);
    ``gpu_model: ''`` (a node without GPUs): ``gpu_models`` [] (any model); no ``hcas`` declared: None (the
    health check does not look for named InfiniBand devices).
    """
    node_type = normalise(value, host, extra)
    if node_type is None:
        return {'gpu_count': None, 'gpu_models': None, 'hcas': None}
    model = node_type['gpu_model'].strip()
    return {'gpu_count': node_type['gpu_count'], 'gpu_models': [model] if model else [],
            'hcas': list(node_type['hcas']) or None}  # (a device name with a blank is one of problems())


def gres_count_problem(value, entries, host=None):
    """A GPU node whose GPUs (the GRES entries ``slurm_gres_facts`` read from NVML) are not the declared count: the
    problem, one line, or ``''`` (no node type, or the count holds).

    The GPUs counted are the distinct ``gpu_index`` of the ``gpu`` entries (a whole GPU is one entry, a GPU in MIG mode
    one per instance).  The slurm role stops on it before gres.conf changes: slurmd would register fewer GPUs than the
    node type has.
    """
    node_type = normalise(value, host, extra=None)
    if node_type is None:  # (a node type lacking gpu_count raised NodeTypeError: the count is required)
        return ''
    seen = sorted(set(entry['gpu_index'] for entry in entries or ()
                      if isinstance(entry, dict) and entry.get('name') == 'gpu' and isinstance(entry.get('gpu_index'), int)))
    declared = node_type['gpu_count']
    if len(seen) == declared:
        return ''
    return ('%sNVML shows %d GPU%s (%s) but %s.gpu_count is %d; gres.conf and slurm.conf are left as they are (slurmd would '
            'register %d GPU%s); expected the declared GPUs: look for a GPU NVML lost (nvidia-smi, Xid 79, reseat), or correct '
            '%s for this node' % ('%s: ' % host if host else '', len(seen), '' if len(seen) == 1 else 's',
                                  'indices %s' % ', '.join(str(i) for i in seen) if seen else 'none', VARIABLE, declared,
                                  len(seen), '' if len(seen) == 1 else 's', VARIABLE))
