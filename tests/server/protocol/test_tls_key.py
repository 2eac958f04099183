"""The TLS private key's permissions, checked as PostgreSQL checks them: 0600 or less if the
key is owned by the server's user, 0640 or less if owned by root; never a non-regular file.

The tests run as whoever runs them; a key they make is owned by that user, so when that is
root the root rule applies (0640 allowed), and otherwise the database-user rule (0600)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from penstock.server.protocol.tls_files import PERMISSIONS_DETAIL, check_key_file

AS_ROOT = os.geteuid() == 0


def key_file(tmp_path: Path, mode: int) -> str:
    path = tmp_path / "server.key"
    path.write_text("-----BEGIN PRIVATE KEY-----\n")
    path.chmod(mode)
    return str(path)


def test_owner_only_key_is_accepted(tmp_path: Path) -> None:
    check_key_file(key_file(tmp_path, 0o600))
    check_key_file(key_file(tmp_path, 0o400))


@pytest.mark.parametrize("mode", [0o644, 0o604, 0o660, 0o606, 0o650])
def test_world_or_group_writable_key_is_refused_by_any_owner(tmp_path: Path, mode: int) -> None:
    path = key_file(tmp_path, mode)
    with pytest.raises(ValueError) as info:
        check_key_file(path)
    assert str(info.value).startswith(f'private key file "{path}" has group or world access')
    assert PERMISSIONS_DETAIL in str(info.value)


def test_group_readable_key_is_for_root_owned_files_only(tmp_path: Path) -> None:
    path = key_file(tmp_path, 0o640)
    owned_by_root = os.stat(path).st_uid == 0
    assert owned_by_root == AS_ROOT
    if owned_by_root:
        check_key_file(path)  # root-owned: u=rw,g=r (0640) or less
    else:
        with pytest.raises(ValueError, match="has group or world access"):
            check_key_file(path)


def test_a_directory_is_not_a_key_file(tmp_path: Path) -> None:
    (tmp_path / "keydir").mkdir(mode=0o700)
    with pytest.raises(ValueError, match=r'private key file ".*keydir" is not a regular file'):
        check_key_file(str(tmp_path / "keydir"))


def test_a_missing_key_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r'could not access private key file ".*nokey": No such file'):
        check_key_file(str(tmp_path / "nokey"))


@pytest.mark.skipif(not AS_ROOT, reason="giving a file to another user needs root")
def test_key_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    path = key_file(tmp_path, 0o600)
    os.chown(path, 65534, 65534)  # nobody: neither the server's user (root here) nor root
    with pytest.raises(ValueError, match=r'private key file ".*" must be owned by the database user or root'):
        check_key_file(path)
