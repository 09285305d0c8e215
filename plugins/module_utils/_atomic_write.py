# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node's one way of replacing a file whole: a temporary file beside it, synced, its mode and owner set, renamed over it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile


def write_atomic(path, data, mode, uid=-1, gid=-1):
    """Write ``data`` (bytes) to ``path`` with ``mode`` (and ``uid``/``gid`` unless -1); a reader sees the old file or the new.

    On any failure the temporary file is removed and ``path`` is as it was.
    """
    handle, temp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=os.path.dirname(path))
    try:
        with os.fdopen(handle, 'wb') as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        if uid != -1 or gid != -1:
            os.chown(temp, uid, gid)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
