"""The TLS private key file's ownership and permissions, checked before the key is loaded.

A key that others can read is a key others may have copied: PostgreSQL refuses to start
with one (be-secure-common.c, check_ssl_key_file_permissions), and so does penstock, with
PostgreSQL's messages so that an administrator's habits and documentation carry over. The
file must be a regular file (not a directory, FIFO or device) owned by the server's user,
with no group or world permissions, or owned by root and at most u=rw,g=r (0640), the usual
arrangement for a system-wide key readable through the ssl-cert group.

A root-owned key follows the root rule even when the server itself runs as root, as libpq's
client-side check does (PostgreSQL's server never runs as root, so its check need not say).
"""

from __future__ import annotations

import os
import stat

ROOT_UID = 0
PERMISSIONS_DETAIL = ("File must have permissions u=rw (0600) or less if owned by the database user, "
                      "or permissions u=rw,g=r (0640) or less if owned by root.")


def check_key_file(path: str) -> None:
    """Raise ValueError, with PostgreSQL's message (and its detail, for permissions), unless
    `path` is a private key file the server may use. The link, if `path` is one, is followed,
    as PostgreSQL's stat() does: the file that will be read is the one checked."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise ValueError(f'could not access private key file "{path}": {e.strerror}') from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f'private key file "{path}" is not a regular file')
    euid = os.geteuid()
    if st.st_uid not in (euid, ROOT_UID):
        raise ValueError(f'private key file "{path}" must be owned by the database user or root')
    if st.st_uid == ROOT_UID:
        forbidden = stat.S_IWGRP | stat.S_IXGRP | stat.S_IRWXO  # at most 0640
    else:
        forbidden = stat.S_IRWXG | stat.S_IRWXO  # at most 0600
    if st.st_mode & forbidden:
        raise ValueError(f'private key file "{path}" has group or world access\nDETAIL:  {PERMISSIONS_DETAIL}')
