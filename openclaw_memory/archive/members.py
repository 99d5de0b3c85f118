"""An archive read from its start, member by member, against its manifest; anything else refused.

The manifest must come first (at most :data:`~.manifest.MANIFEST_LIMIT` bytes). Every member after
it must be a regular file (no link, hard link, device, FIFO, folder or sparse file), named as
an export names members and listed in the manifest once, with the size its manifest gives (which
the limits have bounded already); its bytes are counted as they stream and hashed, and must hash
to what the manifest says. Every listed member must be there. A gzip, bzip2 or xz stream is read
as tarfile reads it (``r|*``); a stream that is not one, or is cut or garbled, is a refusal too.

Nothing is ever extracted by tarfile: a consumer gets each member's blocks and decides where they
go; the hash is known only after its last block, so a consumer commits nothing before
:func:`walk` returns.
"""

from __future__ import annotations

import contextlib
import os
import tarfile
import zlib
from collections.abc import Callable, Iterator
from typing import IO

import xxhash

from .manifest import MANIFEST, MANIFEST_LIMIT, ArchiveManifest, Member, Refusal, check_member_name, parse

BLOCK = 1 << 20
Consumer = Callable[[Member, Iterator[bytes]], None]
# An extended header (pax ``x``/``g``, GNU long name ``L``/``K``) tarfile would read whole into memory
# before a member is seen, and pax's parse is quadratic in it on Pythons without the CVE-2024-6232 fix
# (3.11.7: 64 KiB of digits takes 9 s, 128 KiB 33 s): refused past this, before it is read. What an
# export writes holds a member's name, at most 4,096 bytes (PATH_MAX) plus its part's prefix, in one
# record of a few bytes' overhead; 8 KiB is twice that, and parses in under 0.2 s at worst.
EXTENDED_LIMIT = 8 << 10
# Extended headers in a row before a member (a global pax header and an extended one, a long name
# and a long link name, are the most a tar holds); each later one is a member of its own.
EXTENDED_CHAIN = 2


def walk(fd: int, consume: Consumer | None = None, expected: ArchiveManifest | None = None) -> ArchiveManifest:
    """Read the archive open on ``fd`` from its start; return its manifest. ``consume`` gets each
    member with its blocks (it may stop early: the rest is read and hashed all the same).
    ``expected``: the manifest an earlier walk read (the archive must not have changed since)."""
    os.lseek(fd, 0, os.SEEK_SET)
    with _reader(fd) as raw, _read_errors(), tarfile.open(fileobj=raw, mode="r|*", tarinfo=_Bounded) as tar:
        first = tar.next()
        if first is None:
            raise Refusal("it holds nothing (not even a manifest)")
        _regular(first)
        if first.name != MANIFEST:
            raise Refusal(f"its first member is not {MANIFEST}", first.name)
        if first.size > MANIFEST_LIMIT:
            raise Refusal(f"its manifest is {first.size:,} bytes, past the limit of {MANIFEST_LIMIT:,}", MANIFEST)
        manifest = parse(b"".join(_blocks(tar, first)))
        if expected is not None and manifest != expected:
            raise Refusal("it changed while it was read")
        listed = {m.name: m for m in manifest.members}
        seen: set[str] = set()
        while (info := tar.next()) is not None:
            _regular(info)
            check_member_name(info.name)
            member = listed.get(info.name)
            if member is None or info.name in seen:
                raise Refusal("its manifest does not list this member" if member is None else "it holds this member twice",
                              info.name)
            if info.size != member.size:
                raise Refusal(f"its header says {info.size:,} bytes, its manifest {member.size:,}", info.name)
            digest = xxhash.xxh3_128()
            blocks = _hashed(_blocks(tar, info), digest)
            if consume is not None:
                consume(member, blocks)
            for _ in blocks:  # what the consumer left: hashed all the same
                pass
            if digest.hexdigest() != member.hash:
                raise Refusal("its bytes do not hash to what its manifest says", info.name)
            seen.add(info.name)
        missing = sorted(set(listed) - seen)
        if missing:
            raise Refusal(f"{len(missing)} member(s) its manifest lists are missing", missing[0])
    return manifest


def _reader(fd: int) -> IO[bytes]:
    """The archive's bytes from its start, as tarfile reads them (a test counts what is read)."""
    return os.fdopen(os.dup(fd), "rb")


class _Bounded(tarfile.TarInfo):
    """A member's header as tarfile reads it, each extended header's size checked before tarfile
    reads it whole (tarfile's own hooks for those headers, in 3.11 to 3.13: ``_proc_gnulong``,
    ``_proc_pax``; ``_proc_sparse`` and the pax sparse maps read more blocks: an export holds no
    sparse member, so they are refused at once)."""

    def _proc_gnulong(self, tarfile):
        with _extended(self, tarfile):
            return super()._proc_gnulong(tarfile)

    def _proc_pax(self, tarfile):
        with _extended(self, tarfile):
            return super()._proc_pax(tarfile)

    def _proc_sparse(self, tarfile):
        raise Refusal("it is a sparse file, which an export never holds", self.name)

    def _proc_gnusparse_00(self, *_args):
        raise Refusal("it is a sparse file, which an export never holds", self.name)

    _proc_gnusparse_01 = _proc_gnusparse_10 = _proc_gnusparse_00


@contextlib.contextmanager
def _extended(info: tarfile.TarInfo, tar: tarfile.TarFile) -> Iterator[None]:
    """An extended header of ``info.size`` bytes about to be read: refused past
    :data:`EXTENDED_LIMIT`, or past :data:`EXTENDED_CHAIN` in a row (each read by the one before)."""
    if info.size > EXTENDED_LIMIT:
        raise Refusal(f"it holds an extended tar header of {info.size:,} bytes, past the {EXTENDED_LIMIT:,} a "
                      "member's name needs (an export's are far smaller)")
    depth = getattr(tar, "_extended_depth", 0)
    if depth >= EXTENDED_CHAIN:
        raise Refusal(f"it holds more than {EXTENDED_CHAIN} extended tar headers in a row (an export's members have one at most)")
    tar._extended_depth = depth + 1  # type: ignore[attr-defined]
    try:
        yield
    finally:
        tar._extended_depth = depth  # type: ignore[attr-defined]


@contextlib.contextmanager
def _read_errors() -> Iterator[None]:
    """tarfile's and the decompressors' failures as one refusal (a consumer's own errors pass)."""
    try:
        yield
    except (tarfile.TarError, EOFError, zlib.error, ValueError, OSError) as exc:
        if isinstance(exc, OSError) and not _is_read_error(exc):
            raise
        raise Refusal(f"it is not a tar archive, or it is cut short or damaged ({exc or type(exc).__name__})") from None


def _is_read_error(exc: OSError) -> bool:
    """A decompressor's complaint (gzip's BadGzipFile, lzma's, "unexpected end of data"), not the
    disk's or a consumer's (those have an errno)."""
    return exc.errno is None


def _regular(info: tarfile.TarInfo) -> None:
    if info.type not in (tarfile.REGTYPE, tarfile.AREGTYPE) or info.sparse is not None:
        kind = ("a symbolic link" if info.issym() else "a hard link" if info.islnk() else "a folder" if info.isdir()
                else "a device or FIFO" if info.isdev() else "not a plain file")
        raise Refusal(f"it is {kind}, which an export never holds", info.name)


def _blocks(tar: tarfile.TarFile, info: tarfile.TarInfo) -> Iterator[bytes]:
    data: IO[bytes] | None = tar.extractfile(info)
    assert data is not None  # a regular member
    left = info.size
    while left > 0:
        block = data.read(min(BLOCK, left))
        if not block:
            raise Refusal("it is cut short inside this member", info.name)
        left -= len(block)
        yield block


def _hashed(blocks: Iterator[bytes], digest) -> Iterator[bytes]:
    for block in blocks:
        digest.update(block)
        yield block
