"""Confining the paths users name to the data roots, and away from the server's own files.

A user names paths in CREATE EXTERNAL TABLE ... LOCATION. Every such path is resolved
(symlinks included) before it is checked, and so is every file it stands for (a glob's
matches, a directory's files), so a link inside a root cannot lead out of it. The server's
own state -- the catalog, CREATE TABLE AS files, the users file, the TLS key and
certificate, the spill and kernel-cache directories -- is reserved: no location may be one
of those paths, lie inside one, or (a directory) hold one, even where it lies inside a data
root. The check runs when a table is created and again each time the server registers
it at start-up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from penstock.errors import QueryError

INSUFFICIENT_PRIVILEGE = "42501"
INVALID_PARAMETER_VALUE = "22023"
GLOB_CHARACTERS = "*?["


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


@dataclass(frozen=True)
class Locations:
    base: Path  # relative locations are relative to it (the data directory)
    roots: tuple[Path, ...]  # where tables' files may lie
    reserved: tuple[Path, ...]  # the server's own files and directories
    reserved_prefixes: tuple[Path, ...] = ()  # files named like these (a catalog being written)

    @staticmethod
    def make(base: str | os.PathLike[str], roots: Iterable[str | os.PathLike[str]],
             reserved: Iterable[str | os.PathLike[str] | None], reserved_prefixes: Iterable[Path] = ()) -> Locations:
        resolved_base = Path(base).resolve()
        all_roots = (resolved_base,) + tuple(Path(r).resolve() for r in roots)
        kept = tuple(Path(r).resolve() for r in reserved if r)
        return Locations(resolved_base, all_roots, kept, tuple(reserved_prefixes))

    def is_reserved(self, path: Path) -> bool:
        if any(_inside(path, r) for r in self.reserved):
            return True
        return any(path.parent == p.parent and path.name.startswith(p.name) for p in self.reserved_prefixes)

    def inside_roots(self, path: str | os.PathLike[str]) -> bool:
        resolved = Path(path).resolve()
        return any(_inside(resolved, r) for r in self.roots)

    def resolve(self, location: str) -> str:
        """The absolute location (its part before any wildcard resolved), or a 42501 error
        when it is outside the data roots or the server's own; files are checked by
        `check_files` once listed."""
        if "\0" in location:
            raise QueryError("a location may not contain a NUL byte", INVALID_PARAMETER_VALUE)
        raw = Path(location)
        absolute = raw if raw.is_absolute() else self.base / raw
        text = str(absolute)
        cut = min([text.index(c) for c in GLOB_CHARACTERS if c in text] or [len(text)])
        head, tail = text[:cut], text[cut:]
        if tail:
            folder, _, partial = head.rpartition("/")
            base = Path(folder or "/").resolve()
            resolved = f"{base}/{partial}{tail}"
            if ".." in Path(tail).parts:
                raise QueryError(f'location "{location}" may not contain ".." after a wildcard',
                                 INSUFFICIENT_PRIVILEGE)
        else:
            base = Path(head).resolve()
            resolved = str(base)
        self._check_path(base, location)
        if not tail and base.is_dir() and any(r != base and base in r.parents for r in self.reserved):
            raise QueryError(f'location "{location}" holds the server\'s own files: name a directory or glob '
                             "of data files", INSUFFICIENT_PRIVILEGE)
        return resolved

    def check_files(self, location: str, files: Iterable[Path]) -> None:
        """Every file a location stands for, resolved, lies in a root and is not the server's."""
        for f in files:
            self._check_path(Path(f).resolve(), location, f)

    def _check_path(self, path: Path, location: str, file: Path | None = None) -> None:
        what = f'location "{location}"' + (f" (its file {file})" if file is not None else "")
        if not any(_inside(path, r) for r in self.roots):
            roots = ", ".join(str(r) for r in self.roots)
            raise QueryError(f"{what} is outside the data roots ({roots})", INSUFFICIENT_PRIVILEGE)
        if self.is_reserved(path):
            raise QueryError(f"{what} is one of the server's own files (catalog, users, TLS, spill or cache)",
                             INSUFFICIENT_PRIVILEGE)
