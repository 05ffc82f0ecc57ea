"""What onechip created in the cloud, recorded under onechip's home, and what its probes observed.

    <home>/cloud/resources/<project>/<zone>/<kind>/<name>.json   one CloudResource per resource `up` created
                                                                 (or reused): keyed by what the API keys it by,
                                                                 so a record is never overwritten by another
    <home>/cloud/resources/<name>.json                           the older layout (keyed by name alone): still
                                                                 read, and moved to the new one when saved
    <home>/cloud/zones-used.json                                 every (project, zone) onechip sent a create to:
                                                                 where status and down look for its resources
    <home>/cloud/zones-observed.json                             ZoneOffers from `onechip cloud probe`, newest first
                                                                 (these two are caches, with no schema_version:
                                                                 an entry this onechip cannot read is dropped)
    <home>/cloud/owner-id                                        this home's id, the onechip-owner label's value,
                                                                 and the real path of the home it was made for
    <home>/cloud/claims/<project>/<name>.lock                    flock held by the `up` (or `demo --cloud`) that
                                                                 claims that name, to its end, or by the `cloud
                                                                 down` that deletes it (`claimed`)
    <home>/cloud/claims/<project>/<name>.set.lock                the same, held by `cloud up --replicas N` for the
                                                                 whole set <name>-0 ... <name>-(N-1)

The cloud side carries labels too (`created-by: onechip`; `onechip-owner: ID`, the home that created it: owner_id,
so `up` never resumes or deletes another onechip's TPU of the same name; each TPU of a `cloud up --replicas N` set
also `onechip-replica-set: NAME`), and `down` deletes only what carries them: a record alone never makes onechip
delete something it did not create. Names, zones and projects are checked
against the API's shapes (schemas.cloud) before a path is made of them.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import TypeAdapter

from onechip import jsontext, procs
from onechip.errors import ConfigError, redact
from onechip.paths import exclusive, holder_pids, kind_of, onechip_home, read_home_file, write_text_atomic
from onechip.schemas.cloud import CloudResource, ZoneName, ZoneOffer, valid_names
from onechip.schemas.common import stored_by_newer, written_by_newer

LABELS = {"created-by": "onechip"}
SET_LABEL = "onechip-replica-set"  # on each TPU of a `cloud up --replicas N` set: the set's name
# on each TPU onechip creates: the id of the onechip home that created it (owner_id). created-by alone cannot tell this
# home's TPU from another user's onechip TPU of the same name in the same project, which `up` resumed as its own
OWNER_LABEL = "onechip-owner"
# owner-id's second line: the real path of the home the id was made for, so a copy of the file in another home is told
HOME_LINE = "home "
# what a claim found taken says was not done, and what to do (`claimed`): an up's, a down's; each as said when another
# process holds it, then when this one does (an MCP server's other tool call in flight: a Ctrl-C would stop the server)
UP_BUSY = (
    "nothing was sent; wait for it to end, or give another --name",
    "nothing was sent; let that call end, or give another name",
)
DOWN_BUSY = (
    "nothing was deleted; let it end, or stop it (Ctrl-C) and run `onechip cloud down` again",
    "nothing was deleted; let that call end, or cancel it, and run `cloud down` again",
)
BENCH_BUSY = (  # a `bench` of an engine on the TPU (api.measuring_on)
    "nothing was measured; let it end, or stop it (Ctrl-C), then run it again",
    "nothing was measured; let that call end, or cancel it, then call again",
)
# how much of a claim holder's command line `holders` shows: enough for `onechip cloud up --name N --project P`
# after the interpreter's path, short of a line the error's one-line limit would cut (errors.MAX_LINE_CHARS)
HOLDER_COMMAND_CHARS = 160
_ZONE = TypeAdapter(ZoneName)
_Entry = TypeVar("_Entry")  # one entry of a cache file (_cached)


def owner_id() -> str:
    """This onechip home's id, the value of OWNER_LABEL on the TPUs it creates: 32 lowercase hex digits (uuid4),
    made once, when <home>/cloud/owner-id does not exist, and kept there (a label value: lowercase letters, digits, '-'
    and '_', at most 63 characters: cloud.google.com/compute/docs/labeling-resources). Made by a link that fails when
    the file exists (two `up`s at once both keep the one made first), with the real path of this home (HOME_LINE).
    Raises ConfigError (one line, never the file's id) when the file holds no id or is not a file: a new id would make
    every TPU this home labelled with the old one read as another onechip's; and when it is plainly a copy of another
    home's (that home still holds the same id: _copied_from), which is never replaced either; OSError when the home
    cannot be written."""
    path = _dir() / "owner-id"
    for _ in range(2):  # made by another process since this one found none: read that one
        try:
            return _held_id(path)
        except FileNotFoundError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        home = os.path.realpath(onechip_home())
        made_for = f"{HOME_LINE}{home}\n" if "\n" not in home else ""  # the home it is made for: a copy is told
        try:
            made = write_text_atomic(
                path.with_name(f".owner-id.{uuid.uuid4().hex}.tmp"), f"{uuid.uuid4().hex}\n{made_for}"
            )
        except OSError as exc:  # named as the file it was making: the temporary name is onechip's own
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        try:
            os.link(made, path)  # never over an id: a link does not replace what is there
        except FileExistsError:
            pass
        finally:
            made.unlink(missing_ok=True)
    return _held_id(path)


def held_owner_id() -> str | None:
    """This home's owner id (owner_id) when it has one, None when <home>/cloud/owner-id does not exist (this home
    has labelled no TPU with one), without making it: what `status` and `down` compare a TPU's owner label with.
    Raises ConfigError as owner_id does for a file that holds no id or is a copy; OSError when it cannot be read."""
    try:
        return _held_id(_dir() / "owner-id")
    except FileNotFoundError:
        return None


def _held_id(path: Path) -> str:
    """The owner id `path` holds; FileNotFoundError when there is none, ConfigError when it holds no id, or when it is
    plainly a copy of another home's (_copied_from)."""
    why = (f"{path} holds no onechip owner id (32 hex digits): restore it, or remove it to make a new one (the TPUs "
           f"this home labelled {OWNER_LABEL}=<the old id> then read as another onechip's)")  # fmt: skip
    try:
        held, home = _parts(read_home_file(path))
    except (UnicodeDecodeError, ValueError):
        raise ConfigError(why) from None
    if home is not None and (original := _copied_from(held, home)) is not None:
        raise ConfigError(
            f"{path} is a copy of {original} (the same onechip owner id, made for the home {home}, which still holds "
            f"it): each home would take the other's TPUs for its own; remove {path} to give this home an id of its "
            f"own (the TPUs this home labelled {OWNER_LABEL}=<that id> then read as another onechip's)"
        )
    if home is None or not _same_file(home):
        _record_home(path, held)
    return held


def _same_file(home: str) -> bool:
    """Whether the owner-id file of the home at `home` is this home's (it is this home, or reached by another path:
    a bind mount)."""
    try:
        return (Path(home) / "cloud" / "owner-id").samefile(_dir() / "owner-id")
    except OSError:
        return False


def _record_home(path: Path, held: str) -> None:
    """Write this home's real path as `path`'s HOME_LINE beside `held`, the id this home keeps: the file of an onechip
    before stop 65 (the id alone), or of a home since moved (the path it names is gone, or holds another id), named
    no home, or one that is not it, so a copy of it in another home was never told (_copied_from). Atomic (the id is
    never lost); a home that cannot be written keeps its file as it is (its id still reads)."""
    home = os.path.realpath(onechip_home())
    if "\n" in home:  # as owner_id: a path no line can hold is not recorded
        return
    try:
        write_text_atomic(path, f"{held}\n{HOME_LINE}{home}\n")
    except OSError:
        return


def _parts(text: str) -> tuple[str, str | None]:
    """The id an owner-id file's text holds and the home it was made for (None: an onechip before stop 65 wrote the
    id alone). Raises ValueError when the text is not one: 32 lowercase hex digits on its first line, then at most a
    HOME_LINE."""
    first, *rest = text.splitlines() or [""]
    rest = [line for line in rest if line.strip()]
    held = first.strip()
    if len(held) != 32 or any(c not in "0123456789abcdef" for c in held):
        raise ValueError("no owner id")
    if not rest:
        return held, None
    if len(rest) == 1 and rest[0].startswith(HOME_LINE + "/"):
        return held, rest[0].removeprefix(HOME_LINE)
    raise ValueError("not an owner-id file")


def _copied_from(held: str, home: str) -> Path | None:
    """The owner-id file this home's (holding `held`, made for the home at real path `home`) is plainly a copy of: the
    home it was made for is not this one and its owner-id file, another file (not this one reached by a second path:
    a bind mount), still holds `held`. None when it was made here, or that home holds it no more (this home was
    moved, or that one made another id): the id is this home's."""
    if home == os.path.realpath(onechip_home()):
        return None
    original = Path(home) / "cloud" / "owner-id"
    try:
        copy = not original.samefile(_dir() / "owner-id")
        return original if copy and _parts(read_home_file(original))[0] == held else None
    except (OSError, ValueError, ConfigError):
        return None


def named(resource: CloudResource, name: str | None) -> bool:
    """Does `--name name` select `resource`: no name, its own name, or the set (`cloud up --replicas N`) it is
    one of?"""
    return not name or name in (resource.name, resource.replica_set)


def _dir() -> Path:
    return onechip_home() / "cloud"


def claimed(
    project: str, name: str, of_set: bool = False, then: tuple[str, str] = UP_BUSY
) -> AbstractContextManager[None]:
    """Hold this home's claim on the TPU name `name` in `project` for the block (a flock: it goes with the process).
    Two `up`s of one home at once, one name: the second read the first's TPU, labelled with this home's owner id, as
    its own to resume, and would delete it as its own when its wait ended; the owner label tells homes apart, not
    processes. `of_set`: the name of a `cloud up --replicas N` set, claimed for the whole set (<name>.set.lock; each
    TPU's own claim lasts only its `up`: a second set resumed the first's TPU 0 and, finding TPU 1 claimed, deleted
    it as its own partial set's). A `cloud down` holds the claims of what it deletes too (DOWN_BUSY), a `bench` those
    of the TPUs under the engine it measures (BENCH_BUSY). Raises BusyError
    (one line, exit 8: the holder's pid, paths.holder_pids, and `then`, what was not done and what to do when another
    process holds it, or this one: an MCP server's other tool call, a flock of another descriptor) when a process of
    this home holds it, ConfigError for a project or name not in the API's shapes (a path is made of
    them)."""
    what = f"the set of TPUs {name}-0 ... (`cloud up --replicas`)" if of_set else f"TPU {name}"
    path = claim_path(project, name, of_set)

    def busy() -> str:  # asked when the lock is found taken: who has it then
        pids = holder_pids(path)
        doing = f"is creating, resuming, deleting or benchmarking {what} in project {project}"
        if os.getpid() in pids:  # flock conflicts between two descriptors of one process too
            return (f"this onechip process (pid {os.getpid()}) holds it: another tool call in flight (a `cloud up`, "
                    f"`demo --cloud`, `cloud down` or `bench` of this MCP server) {doing}: {then[1]}")  # fmt: skip
        who = ", ".join(f"pid {pid}" for pid in pids) or "its pid not readable"
        return (f"another onechip of this home ({who}: a `cloud up`, `demo --cloud`, `cloud down` or `bench`) "
                f"{doing}: {then[0]}")  # fmt: skip

    return exclusive(path, busy)


def holders(project: str, name: str, of_set: bool = False) -> str:
    """Who holds this home's claim (`claimed`) on `name` in `project` (a set's: `of_set`), in words: 'pid N (its
    command line, redacted, cut at HOLDER_COMMAND_CHARS)' each (paths.holder_pids), this process said as such (an MCP
    server's other tool call), or that no pid is readable."""

    def command(pid: int) -> str:
        if pid == os.getpid():
            return "this onechip process: another of its tool calls"
        words = redact(procs.command_line(pid) or "its command not readable")
        cut = len(words) > HOLDER_COMMAND_CHARS
        return words[: HOLDER_COMMAND_CHARS - 3] + "..." if cut else words

    pids = holder_pids(claim_path(project, name, of_set))
    return ", ".join(f"pid {pid} ({command(pid)})" for pid in pids) or "another process (its pid not readable)"


def claim_path(project: str, name: str, of_set: bool = False) -> Path:
    """The lock file of this home's claim (`claimed`) on the TPU name `name` (a set's: `of_set`) in `project`. Raises
    ConfigError for a project or name not in the API's shapes (a path is made of them)."""
    if not valid_names(project, "us-west4-a", name):  # any zone: only the project and the name make the path
        raise ConfigError(f"claim of {name[:80]!r} in {project[:80]!r}: not a TPU resource name and project")
    return _dir() / "claims" / project / f"{name}{'.set' if of_set else ''}.lock"  # a TPU name has no '.'


def _path(resource: CloudResource) -> Path:
    if not valid_names(resource.project, resource.zone, resource.name):
        raise ConfigError(f"record of {resource.name[:80]!r}: not a TPU resource name, zone and project")
    return _dir() / "resources" / resource.project / resource.zone / resource.kind / f"{resource.name}.json"


def _legacy(resource: CloudResource) -> Path | None:
    """The older record file of `resource` (resources/<name>.json) when it holds this very resource."""
    path = _dir() / "resources" / f"{resource.name}.json"
    try:
        old = CloudResource.model_validate_json(read_home_file(path))
    except (OSError, ValueError, ConfigError):
        return None
    return path if (old.project, old.zone, old.kind) == (resource.project, resource.zone, resource.kind) else None


def save(resource: CloudResource) -> Path:
    """Record `resource` (before its create is sent) and the zone it is in; it is `recorded` from then on."""
    path = _path(resource)
    resource.recorded = True
    path.parent.mkdir(parents=True, exist_ok=True)
    use_zone(resource.project, resource.zone)
    written = write_text_atomic(path, resource.model_dump_json(indent=2))
    if (old := _legacy(resource)) is not None:
        old.unlink(missing_ok=True)
    return written


def _records() -> list[Path]:
    root = _dir() / "resources"
    return sorted([*root.glob("*/*/*/*.json"), *root.glob("*.json")])


def _read(path: Path) -> CloudResource | str:
    """The record in `path`, or why it cannot be used: the OS's reason, that it is not a record, or that the names
    it holds are not the API's shapes (never the file's contents, nor the parser's message quoting them: a record
    may hold what a secret looks like)."""
    try:
        resource = CloudResource.model_validate_json(read_home_file(path))
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    except ConfigError:  # a FIFO, a directory: named, never waited on
        return f"is {kind_of(path)}, not a file onechip wrote"
    except ValueError:  # a newer onechip's (its version is digits and dots: stored_by_newer), or damaged
        if (newer := stored_by_newer(path)) is not None:
            return written_by_newer(newer)
        return "is not a cloud record (damaged or cut short)"
    if not valid_names(resource.project, resource.zone, resource.name):
        return "names a project, zone or resource name the TPU API does not take"
    return resource


@dataclass(frozen=True)
class Unreadable:
    """A record file that cannot be used (_read says why), and what its path still says of the resource (project,
    zone, kind and name in the current layout: enough to find it in the API and delete it; only the name in the
    older one)."""

    path: Path
    why: str
    name: str
    key: tuple[str, str, str] | None  # (project, zone, kind), None for the older layout

    def line(self) -> str:
        """One line naming the file and what is done about it (never its contents)."""
        if self.key is None:
            return (f"cloud record {self.path} {self.why}: {self.name} is looked for only where --zone names "
                    "(`onechip cloud status --zone ZONE`); remove the file once it is gone")  # fmt: skip
        project, zone, kind = self.key
        return (f"cloud record {self.path} {self.why}: {kind} {self.name} in {zone} (project {project}) is "
                "looked up in the API from the file's path instead")  # fmt: skip


@dataclass(frozen=True)
class Saved:
    """Every record file, read once: the resources they record (one per (project, zone, kind, name), both
    layouts) and the files that cannot be used (Unreadable)."""

    resources: list[CloudResource]
    unreadable: list[Unreadable]


def read_all() -> Saved:
    """Every record file, each read once (status and down pass the result down rather than read them again). A
    file that cannot be used is left out of `resources` and named in `unreadable`: what its path says is looked up
    in the API instead (a record is a hint, the API is the truth)."""
    root = _dir() / "resources"
    found: dict[tuple[str, str, str, str], CloudResource] = {}
    bad = []
    for path in _records():
        resource = _read(path)
        if isinstance(resource, CloudResource):
            found.setdefault((resource.project, resource.zone, resource.kind, resource.name), resource)
            continue
        parts = path.relative_to(root).parts
        key = (parts[0], parts[1], parts[2]) if len(parts) == 4 else None
        usable = key is not None and key[2] in ("node", "queued-resource") and valid_names(key[0], key[1], path.stem)
        bad.append(Unreadable(path=path, why=resource, name=path.stem, key=key if usable else None))
    return Saved(resources=list(found.values()), unreadable=bad)


def load_all() -> list[CloudResource]:
    """Every recorded resource that can be read (read_all().resources)."""
    return read_all().resources


def forget(resource: CloudResource) -> None:
    """Drop the record of `resource` (it is gone, or it was never created). A directory in the record's place is
    left: onechip never wrote it (read_all names it), and failing on it after a delete would stop the
    deletes after it and exit non-zero for what was done."""
    path = _path(resource)
    if not path.is_dir():
        path.unlink(missing_ok=True)
    if (old := _legacy(resource)) is not None:
        old.unlink(missing_ok=True)


def _cached(name: str, read: Callable[[object], _Entry]) -> list[_Entry]:
    """The entries of the cache `name` (zones-used.json, zones-observed.json: a JSON list) that `read` takes. These
    caches name no schema_version: what they hold is rebuilt by use (each create, each probe), so a file, or an entry,
    this onechip cannot read (not JSON, nested past the parser, not a list; an entry of a newer onechip's shape, where
    `read` raises ValueError or TypeError) is skipped, never a crash, and the rest still read. Raises ConfigError when
    the file is not a regular file (paths.read_home_file)."""
    return [entry for _, entry in _read_entries(_entries(name) or [], read) if entry is not None]


def _entries(name: str) -> list[object] | None:
    """The JSON list the cache `name` holds as stored ([] when there is none, or it is not JSON: damaged, nothing to
    keep), None when it is JSON but no list: another onechip's layout, never written over (_write_cache)."""
    try:
        data = jsontext.loads(read_home_file(_dir() / name))
    except (OSError, ValueError):
        return []
    return data if isinstance(data, list) else None


def _read_entries(raw: list[object], read: Callable[[object], _Entry]) -> list[tuple[object, _Entry | None]]:
    """Each stored entry beside what `read` makes of it (None: one this onechip cannot read, kept as it was)."""
    out: list[tuple[object, _Entry | None]] = []
    for item in raw:
        try:
            out.append((item, read(item)))
        except (ValueError, TypeError):
            out.append((item, None))
    return out


def _write_cache(name: str, entries: list[object], indent: int | None = None) -> None:
    """Write the cache `name` (its entries this onechip cannot read among `entries` as they were stored)."""
    path = _dir() / name
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(entries, indent=indent))


def _zone_pair(item: object) -> tuple[str, str]:
    """A zones-used.json entry, [project, zone]. Raises ValueError for anything else."""
    if not isinstance(item, list) or len(item) != 2:
        raise ValueError(f"not a [project, zone] pair: {item!r}")
    return str(item[0]), str(item[1])


def _zone_offer(item: object) -> ZoneOffer:
    """A zones-observed.json entry, its zone in the API's shape (a zone `up` will try). Raises ValueError otherwise."""
    offer = ZoneOffer.model_validate(item)
    _ZONE.validate_python(offer.zone)
    return offer


def zones_used(recorded: list[CloudResource] | None = None) -> list[tuple[str, str]]:
    """Every (project, zone) a create was sent to, oldest first: zones-used.json's (_cached: an entry it cannot read
    dropped), then those of `recorded` (read_all().resources; read here when not given). Raises ConfigError when
    zones-used.json is not a regular file (paths.read_home_file)."""
    pairs = _cached("zones-used.json", _zone_pair)
    pairs += [(r.project, r.zone) for r in (load_all() if recorded is None else recorded)]
    return [pair for i, pair in enumerate(pairs) if pair not in pairs[:i] and valid_names(*pair)]


def use_zone(project: str, zone: str) -> None:
    """Add (project, zone) to zones-used.json, with those of the recorded resources it lacks; the entries this onechip
    cannot read (a newer one's) are kept as they were, and a file that is no list is not written over (_entries)."""
    raw = _entries("zones-used.json")
    if raw is None:
        return
    stored = [pair for _, pair in _read_entries(raw, _zone_pair) if pair is not None]
    known = zones_used()
    if (project, zone) not in known:
        added = [list(pair) for pair in [*known, (project, zone)] if pair not in stored]
        _write_cache("zones-used.json", [*raw, *added])


def observed() -> list[ZoneOffer]:
    """Probe observations, newest first ([] when none; _cached: an entry it cannot read dropped). Raises ConfigError
    when zones-observed.json is not a regular file (paths.read_home_file)."""
    return _cached("zones-observed.json", _zone_offer)


def observe(offer: ZoneOffer) -> None:
    """Add a probe's observation first (replacing an older one of the same chip, zone and provisioning model). The
    entries this onechip cannot read (a newer one's) are kept as they were, and a file that is no list is not written
    over (_entries): observe() wrote the file anew from what it could read, a newer onechip's observations lost."""
    raw = _entries("zones-observed.json")
    if raw is None:
        return
    key = (offer.chip, offer.zone, offer.provisioning)
    keep = [item for item, o in _read_entries(raw, _zone_offer) if o is None or (o.chip, o.zone, o.provisioning) != key]
    _write_cache("zones-observed.json", [offer.model_dump(), *keep], indent=2)
