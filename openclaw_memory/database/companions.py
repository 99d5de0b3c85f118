"""What ``state.db`` is at its path, and its two companions, read without SQLite.

SQLite trusts the files beside the database as much as the database: the ``-wal`` holds the
committed transactions not yet copied into the file, the ``-shm`` is the index of the WAL that
every process with the database open shares (mapped in memory). Zeroed, truncated, deleted or
replaced under a running process, SQLite does not notice: a reader gets "malformed" pages, a
process dies of SIGBUS on a shorter ``-shm``, and the checkpoint at the last close copies the
zeroed frames over the good pages of the file. So:

- :func:`not_a_file` says what ``state.db`` is when it is not a regular file (a FIFO would block
  the open forever): nothing opens it, doctor names it; :func:`odd_companions` says the same of
  the ``-wal`` and ``-shm``.
- :func:`wal_damage` compares the WAL with what its index says was committed (size, header,
  salts, the checksum chain of every committed frame, verified once per frame and in full before
  a checkpointing close): a WAL that lost committed frames is damage, said before
  SQLite opens the file (the first process to open it rebuilds the index from what the WAL
  still holds and the evidence is gone).
- :class:`Companions` is the identity and size of the companions a connection opened; a
  connection looks at them again before each use (:func:`changed`).

The formats are SQLite's (https://www.sqlite.org/walformat.html): the WAL header and frame
headers are big-endian, the index header is in the machine's byte order, checksums run over
32-bit words in the order the WAL header's magic names.
"""

from __future__ import annotations

import os
import stat
import struct
import sys
import threading
from dataclasses import dataclass

from ..fsutil.private import closed_to_me
from .walsum import checksum, frames_sound

WAL_MAGIC = (0x377F0682, 0x377F0683)  # the low bit: checksums over big-endian words
WAL_HEADER = 32
FRAME_HEADER = 24
INDEX_HEADER = 48  # one copy; the index starts with two, then the checkpoint info
INDEX_INFO = 136  # both copies and the checkpoint info: what an index must hold to be read
SQLITE_MAGIC = b"SQLite format 3\0"

_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFDIR: "a folder", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


def not_a_file(path: str) -> str | None:
    """What ``path`` is when SQLite must not open it (anything but a regular file); None for a
    regular file, or nothing at all.

    A symbolic link is never opened, even to a database: SQLite keeps the ``-wal`` and ``-shm``
    beside the file the link names, outside the owner-only data dir and away from the ones this
    module checks, so the committed transactions in that WAL would go unchecked."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"something that cannot be looked at ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError as exc:
            return f"a symbolic link that cannot be read ({exc.strerror or exc})"
        try:
            os.stat(path)
        except FileNotFoundError:
            return f"a symbolic link to {target}, which does not exist"
        except OSError as exc:
            return f"a symbolic link to {target}, which cannot be followed ({exc.strerror or exc})"
        return f"a symbolic link to {target}"
    if stat.S_ISREG(st.st_mode):
        return None
    return _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")


def closed_to_us(path: str) -> list[tuple[str, int, int]]:
    """(path, mode, owner) of the database at ``path`` and its companions that this process can
    neither read nor write (a chmod 000, a restore that lost the modes or the owner): SQLite only
    says "unable to open database file". A command gives this user's own files 0600 back
    (:func:`.connection._owner_only`); another user's are for ``chown``."""
    found = []
    for each in (path, path + "-wal", path + "-shm"):
        try:
            st = os.lstat(each)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and closed_to_me(st):
            found.append((each, stat.S_IMODE(st.st_mode), st.st_uid))
    return found


def odd_companions(path: str) -> list[tuple[str, str]]:
    """(companion, what it is) for each of the ``-wal`` and ``-shm`` beside ``path`` that is not a
    regular file: SQLite would fail on it with "disk I/O error" at every open (or block on a FIFO,
    or read and write the file a link names)."""
    found = []
    for suffix in ("-wal", "-shm"):
        what = not_a_file(path + suffix)
        if what is not None:
            found.append((path + suffix, what))
    return found


# While this process has connections to a database (``hold``), the descriptors it reads that
# database's companions through are kept open, by (device, inode), until its last connection
# closes (``release``): closing any descriptor of a file drops every POSIX lock this process
# holds on it, SQLite's included (its readers' and writers' locks live on the ``-shm``), and
# another process would then rebuild the index under this process's connections.
_held: set[str] = set()
_kept: dict[tuple[int, int], tuple[str, int]] = {}
_kept_lock = threading.Lock()


def hold(path: str) -> None:
    _held.add(path)


def held(path: str) -> bool:
    """Whether this process has connections to the database at ``path``."""
    return path in _held


def release(path: str) -> None:
    """This process's last connection to the database at ``path`` has closed (SQLite holds no lock
    on its companions any more): the descriptors kept for them are closed."""
    _held.discard(path)
    _sound.pop(path, None)
    _chains.pop(path, None)
    with _kept_lock:
        for key, (owner, fd) in list(_kept.items()):
            if owner == path:
                del _kept[key]
                os.close(fd)


def _read(path: str, size: int, offset: int = 0) -> bytes | None:
    """Up to ``size`` bytes at ``offset`` (pread: never through a mapping, which a shorter file
    would answer with SIGBUS); None when the file is not there."""
    database = path.removesuffix("-wal").removesuffix("-shm")
    try:
        if database in _held:
            fd = _kept_descriptor(path, database)
            return None if fd is None else os.pread(fd, size, offset)
        fd = os.open(path, os.O_RDONLY | _FLAGS)
        try:
            return os.pread(fd, size, offset)
        finally:
            os.close(fd)
    except FileNotFoundError:
        return None
    except OSError:
        return b""


_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)

# SQLite's 100-byte file header: its magic, then bytes 21-23, which every database holds as 64, 32, 32.
_HEADER_BYTES = 100
_FIXED = (slice(21, 24), b"\x40\x20\x20")


def header_damage(path: str, opened: bool = False) -> str | None:
    """Why the database file at ``path`` no longer starts with SQLite's header (something wrote over
    it), or None: it does, or it cannot be looked at (its absence or replacement is a connection's
    identity check). ``opened``: a connection of this process has it open, so a file shorter than a
    header was cut under it (before an open, that is ``connection.emptied``'s to tell).

    SQLite reads page 1 from the WAL where the WAL holds a newer copy of it: an open connection read
    on and wrote on (the history of a note it replaced committed into a file no process could open
    again), and a new one opened it while the file's own header was gone (review)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    if size < _HEADER_BYTES:
        return f"it was cut to {size} byte{'s' if size != 1 else ''}, less than a database's header" if opened else None
    head = _read(path, _HEADER_BYTES)
    if head is None or len(head) < _HEADER_BYTES:
        return None  # unreadable now, or cut between the two looks: the next use says so
    if head[:len(SQLITE_MAGIC)] != SQLITE_MAGIC or head[_FIXED[0]] != _FIXED[1]:
        return "its header is not SQLite's any more (something wrote over the file)"
    return None


def _kept_descriptor(path: str, database: str, write: bool = False) -> int | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    with _kept_lock:
        kept = _kept.get((st.st_dev, st.st_ino))
        if kept is not None:
            return kept[1]
        fd = os.open(path, (os.O_RDWR if write or os.access(path, os.W_OK) else os.O_RDONLY) | _FLAGS)
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) in _kept:  # replaced meanwhile: this one is kept too, never closed here
            return fd
        _kept[(opened.st_dev, opened.st_ino)] = (database, fd)
        return fd


@dataclass(frozen=True)
class WalHeader:
    big_endian: bool  # the checksums' word order
    page_size: int
    salts: bytes  # as the frames and the index carry them
    checksum: tuple[int, int]


def wal_header(data: bytes | None) -> WalHeader | None:
    """The WAL header in ``data``, or None when it is not one (zeroed, cut or overwritten)."""
    if data is None or len(data) < WAL_HEADER:
        return None
    magic, _version, page_size, _seq = struct.unpack(">4I", data[:16])
    if magic not in WAL_MAGIC:
        return None
    big = bool(magic & 1)
    stored = struct.unpack(">2I", data[24:32])
    if checksum(data[:24], big) != stored:
        return None
    return WalHeader(big, page_size, data[16:24], stored)


@dataclass(frozen=True)
class WalIndex:
    """The ``-shm`` header: what the processes with the database open agree is in the WAL."""

    raw: bytes  # both copies and the checkpoint info: compared to see whether it moved meanwhile
    page_size: int
    frames: int  # committed frames (mxFrame)
    backfilled: int  # frames already copied into the database (nBackfill)
    salts: bytes
    last_checksum: tuple[int, int]


def _parse_index(data: bytes | None) -> WalIndex | None:
    if not data or len(data) < INDEX_INFO or data[:INDEX_HEADER] != data[INDEX_HEADER:2 * INDEX_HEADER]:
        return None
    fields = struct.unpack("=3I2BH8I", data[:INDEX_HEADER])
    is_init, size_code, frames, c0, c1, ck0, ck1 = fields[3], fields[5], fields[6], fields[8], fields[9], fields[12], fields[13]
    if is_init != 1 or checksum(data[:40], sys.byteorder == "big") != (ck0, ck1):
        return None
    (backfilled,) = struct.unpack("=I", data[96:100])
    page_size = (size_code & 0xFE00) + ((size_code & 1) << 16)
    return WalIndex(data, page_size, frames, backfilled, data[32:40], (c0, c1))


# Per database, the index header and the WAL's stat when they were last found sound: looked at
# before every use of a connection, the WAL is read again only when one of them changed.
_sound: dict[str, tuple] = {}


def wal_damage(path: str, full: bool = False) -> str | None:
    """Why the WAL beside the database at ``path`` no longer holds what its index says was
    committed, or None. Only reads, without SQLite; looked at again when the index moved meanwhile
    (another process wrote: what it sees is sound). ``full``: every frame's checksum verified
    again, not only those new since this process last looked."""
    for _ in range(3):
        raw = _read(path + "-shm", INDEX_INFO)
        seen = (raw, _stat_key(path + "-wal"))
        if not full and _sound.get(path) == seen:
            return None
        found = _wal_against(path, _parse_index(raw), full)
        if _read(path + "-shm", INDEX_INFO) == raw:
            if found is None:
                _sound[path] = seen
            return found
    return None


def _stat_key(path: str) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _wal_against(path: str, index: WalIndex | None, full: bool = False) -> str | None:
    wal = path + "-wal"
    try:
        size = os.stat(wal).st_size
    except FileNotFoundError:
        if index is not None and index.frames > index.backfilled:
            return (f"its write-ahead log ({wal}) is gone while its index says {index.frames - index.backfilled} "
                    "committed frame(s) in it were not yet copied into the database")
        return None
    except OSError as exc:
        return f"its write-ahead log ({wal}) cannot be looked at ({exc.strerror or exc})"
    if size == 0 or (index is not None and index.frames == 0):
        return None  # nothing committed to it (an index rebuilt from a damaged log says so too)
    head = wal_header(_read(wal, WAL_HEADER))
    if head is None:
        return f"its write-ahead log ({wal}) does not begin with a valid header (zeroed, cut short or overwritten)"
    frame = FRAME_HEADER + head.page_size
    held = max(0, (size - WAL_HEADER) // frame)
    if index is None:
        return _unindexed_damage(wal, head, held)
    if head.salts != index.salts:
        return None  # a new log begun since the index was read
    if held < index.frames:
        return f"its write-ahead log ({wal}) holds {held} of the {index.frames} frames committed to it (it was cut short)"
    identity = (_stat_key(wal) or (0, 0))[:2]
    start = _chains.get(path) if not full else None
    if start is None or start[0] != identity or start[1] != head.salts or start[2] > index.frames:
        start = (identity, head.salts, 0, head.checksum, False)
    sound, sums, commit = _walk(wal, head, start[2], start[3], index.frames, start[4])
    if sound < index.frames or not commit or sums != index.last_checksum:
        _chains.pop(path, None)
        which = "the last frame" if sound >= index.frames - 1 else f"frame {sound + 1} of the {index.frames} frames"
        if sound < index.frames and _unsealed_to_the_end(wal, frame, sound, index.frames):
            return Unsealed(f"{which} committed to its write-ahead log ({wal}) was written by SQLite without its "
                            "checksum (a savepoint rolled back in the transaction that wrote it): SQLite reads it "
                            "through its index, but would drop it, and every frame after it, if it rebuilt that index")
        return f"{which} committed to its write-ahead log ({wal}) no longer reads back (zeroed or overwritten)"
    _chains[path] = (identity, head.salts, sound, sums, commit)
    return None


class Unsealed(str):
    """What :func:`wal_damage` says of committed frames SQLite itself wrote without salts and
    checksums (:func:`unsealed`): the WAL holds what was committed, only a rebuilt index would lose
    it. A process that has the database open copies them into the file at once (a checkpoint,
    :meth:`.handles.Handle.alive`); found with nobody holding the index, SQLite's rebuild drops them
    at the next open, which is loss, said as damage."""


def unsealed(header: bytes | None) -> bool:
    """Whether ``header`` (a frame's 24 bytes) is one SQLite wrote with its checksum still owed: a
    page number, then salts and checksums all zero. SQLite writes every frame so while it owes the
    transaction a checksum pass at commit (a page of it written twice), and SQLite 3.40 keeps owing
    it across a ``ROLLBACK TO`` that undid those frames, so a transaction's frames, its commit
    included, can stay so (see :meth:`openclaw_memory.history.objects.ObjectStore.put_blocks`).
    Damage that zeroes a frame from its start zeroes its page number too; damage that keeps it is
    told by the frames around it (:func:`_unsealed_to_the_end`)."""
    return (header is not None and len(header) == FRAME_HEADER and header[:4] != b"\0\0\0\0"
            and header[8:24] == bytes(16))


_PAGE_START = 64  # bytes at a page's start that a zeroed block reaching back into its frame's salts zeroes too


def _unsealed_to_the_end(wal: str, frame: int, first: int, frames: int) -> bool:
    """Whether the committed frames from ``first`` (0-based) up to ``frames`` are what SQLite writes
    while it owes a transaction its checksums, never damage: every one of them :func:`unsealed`
    (SQLite seals no frame after one it left unsealed in the transaction, and the last committed
    frame is that transaction's commit), only the last a commit frame (its database size non-zero),
    and no page beginning with zeros (a zeroed block that begins within a frame's header, after its
    page number, zeroes the start of its page too). A sealed frame after it, or a run that does not
    end at a commit, is damage that only kept the page number (copying it in would corrupt the
    database file)."""
    for n in range(first, frames):
        data = _read(wal, FRAME_HEADER + _PAGE_START, WAL_HEADER + n * frame)
        if not data or len(data) < FRAME_HEADER + _PAGE_START or not unsealed(data[:FRAME_HEADER]):
            return False
        if (data[4:8] != b"\0\0\0\0") != (n == frames - 1) or data[FRAME_HEADER:] == bytes(_PAGE_START):
            return False
    return True


# Per database, how far this process has verified its WAL's checksum chain: (the WAL's device and
# inode, its salts, frames verified, the running checksum after them, whether the last is a commit).
# SQLite's checksum is cumulative (each frame's continues from the one before), so a frame zeroed in
# the middle breaks every one after it; carried on, each use reads only the frames new since the
# last. A checkpointing close and a new process verify from the first frame (``full``).
_chains: dict[str, tuple] = {}
_BATCH = 64  # frames read per pread


def _walk(wal: str, head: WalHeader, done: int, sums: tuple[int, int], stop: int,
          commit: bool = False) -> tuple[int, tuple[int, int], bool]:
    """Frames ``done + 1`` up to ``stop`` checked in turn against the chain (salts, then checksum
    continuing from ``sums``): how many verify in all, the checksum after the last that does, and
    whether that one ends a commit."""
    frame = FRAME_HEADER + head.page_size
    while done < stop:
        count = min(_BATCH, stop - done)
        data = _read(wal, count * frame, WAL_HEADER + done * frame) or b""
        read = min(len(data) // frame, count)
        sound, sums, last = frames_sound(data, read, frame, head.salts, head.big_endian, sums, ahead=stop - done - read)
        done, commit = done + sound, commit if last is None else last
        if sound < read or len(data) < count * frame:
            break
    return done, sums, commit


def _unindexed_damage(wal: str, head: WalHeader, held: int) -> str | None:
    """With no index to say what was committed (none, or one SQLite would rebuild), SQLite keeps
    the frames up to the first one whose checksum breaks the chain: a commit with the log's salts
    still there after that break was committed, and is damage (frames of a transaction that never
    committed, or of an earlier log, are not)."""
    sound, _sums, _commit = _walk(wal, head, 0, head.checksum, held)
    frame = FRAME_HEADER + head.page_size
    for n in range(sound + 1, held):
        one = _read(wal, FRAME_HEADER, WAL_HEADER + n * frame) or b""
        if len(one) == FRAME_HEADER and one[8:16] == head.salts and struct.unpack(">I", one[4:8])[0] != 0:
            return (f"frame {sound + 1} of its write-ahead log ({wal}) no longer reads back (zeroed or overwritten), "
                    f"and frames committed after it are still there")
    return None


@dataclass(frozen=True)
class Companions:
    """The ``-wal`` and ``-shm`` a connection opened: (device, inode), and the ``-shm``'s size."""

    wal: tuple[int, int] | None
    shm: tuple[int, int] | None
    shm_size: int


def companions(path: str) -> Companions:
    found: list[os.stat_result | None] = []
    for suffix in ("-wal", "-shm"):
        try:
            found.append(os.stat(path + suffix))
        except OSError:
            found.append(None)
    wal, shm = found
    return Companions(None if wal is None else (wal.st_dev, wal.st_ino), None if shm is None else (shm.st_dev, shm.st_ino),
                      0 if shm is None else shm.st_size)


def clear_index(path: str, size: int) -> None:
    """The ``-shm`` beside ``path`` given back ``size`` bytes and its header zeroed: every process
    that has it mapped reads again (no SIGBUS past a cut), and the first to look rebuilds the index
    from what the WAL really holds, as SQLite does with an index it cannot trust."""
    fd = _kept_descriptor(path + "-shm", path, write=True)
    if fd is None:
        return
    if os.fstat(fd).st_size < size:
        os.ftruncate(fd, size)
    os.pwrite(fd, b"\0" * (2 * INDEX_HEADER), 0)
