"""Write src/onechip/catalog/vllm_architectures.json: the first and the last vLLM release whose model registry
names each architecture (config.json `architectures`), read from the sources of every release given, and what the
newest release says of one its registry dropped.

The registry is the module-level dict vLLM looks architectures up in: `_VLLM_MODELS` (0.6.x on,
vllm/model_executor/models/registry.py: the union of the text-generation, embedding, multimodal, speculative
and Transformers-backend dicts, resolved through their `**name` unpacking), else `_MODELS` (0.3 - 0.6,
vllm/model_executor/models/__init__.py), else `_MODEL_REGISTRY` (0.1 - 0.2, vllm/model_executor/model_loader.py).
`_PREVIOUSLY_SUPPORTED_MODELS` (architectures vLLM refuses) is not part of it.

For each architecture the table keeps `first_in`, the oldest release read that names it, and `absent_in`, the
newest release read before it that does not (null when the oldest release read already names it: then its real
first release is not known, only that it is no later). `releases_not_read` lists the releases on PyPI whose
sources were not read (no sdist, or its metadata could not be prepared here) with why, so the planner can tell
whether `first_in` is exact (every release between `absent_in` and `first_in` read) or only a bound.

For an architecture the newest release read no longer names, `last_in` is the newest release read that does and
`gone_in` the release read after it (null for one the newest release still names). Leaving the registry is not
removal: vLLM tries its Transformers backend for an architecture it has no class for
(ModelRegistry.inspect_model_cls, model_impl 'auto'), and only then raises. Nor is one vLLM finds under another
suffix (ModelRegistry._normalize_arch over config/model.py _SUFFIX_TO_DEFAULTS: Qwen2ForSequenceClassification ->
Qwen2ForCausalLM, converted): the table marks it `served_as`, from the newest release read. Otherwise it adds
`refused` where the newest release's `_PREVIOUSLY_SUPPORTED_MODELS` names it (vLLM's 'Model architecture X was
supported in vLLM until vY, and is not supported anymore'; `since`: the first release read whose list names it) and
`plugin` where its `_OOT_SUPPORTED_MODELS` does ('not supported in-tree anymore. Please install the plugin at URL').
A rename or a move to another dict is no removal: every dict `_VLLM_MODELS` unpacks is read (the speculative-
decoding and `_TRANSFORMERS_SUPPORTED_MODELS` ones included).

Sources: a vLLM sdist (vllm-X.tar.gz) or wheel (vllm-X-*.whl), read without unpacking, or a directory holding
the `vllm` package (its version from vllm/_version.py). The sdists were fetched with pip from PyPI (`pip download
<sdist url> --no-deps --no-build-isolation`, VLLM_TARGET_DEVICE=empty; the URL form, because the prepared metadata
then names the version X+empty); releases before 0.5.5, whose metadata needs CUDA to prepare, as their wheels
(`pip download vllm==X --no-deps --only-binary :all: --platform manylinux1_x86_64 ...`).
tests/unit/planner/test_vllm_architectures.py checks entries against the sources when they are present.

With no SOURCE it reads every release on PyPI from --since (0.1.4) as scripts/gen_vllm_registries.py does (the
sdist read without unpacking or preparing it, else the x86_64 wheel's registry files by HTTP range requests), so
both tables cover the same releases up to PyPI's newest.

Run: python scripts/gen_vllm_architectures.py [--since 0.1.4] [--not-read VERSION=WHY ...] [SOURCE ...]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tarfile
import zipfile
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "onechip" / "catalog" / "vllm_architectures.json"

# Where the registry lived, newest layout first (paths inside the vllm package).
REGISTRY_FILES = (
    "model_executor/models/registry.py",
    "model_executor/models/__init__.py",
    "model_executor/model_loader.py",
)
REGISTRY_NAMES = ("_VLLM_MODELS", "_MODELS", "_MODEL_REGISTRY")
# vllm/config/model.py _SUFFIX_TO_DEFAULTS: the suffixes ModelRegistry._normalize_arch swaps to find a registered
# base architecture ('Qwen2ForSequenceClassification' -> 'Qwen2ForCausalLM', converted to a classifier)
SUFFIX_FILE, SUFFIX_NAME = "config/model.py", "_SUFFIX_TO_DEFAULTS"
READ_FILES = (*REGISTRY_FILES, SUFFIX_FILE)
# vLLM's own word on an architecture its registry dropped (registry.py, 0.6.x on): `_PREVIOUSLY_SUPPORTED_MODELS`
# maps it to the last version that supported it ('Model architecture X was supported in vLLM until vY, and is not
# supported anymore'), `_OOT_SUPPORTED_MODELS` to the out-of-tree plugin that serves it now.
REFUSED_NAME, PLUGIN_NAME = "_PREVIOUSLY_SUPPORTED_MODELS", "_OOT_SUPPORTED_MODELS"
_VERSION = re.compile(r"version = '([^']+)'")


def release_key(version: str) -> tuple[int, ...]:
    """Sort key of a release string: '0.10.1.1' after '0.10.1', '0.6.1.post1' after '0.6.1'."""
    parts = re.findall(r"\d+", version.replace(".post", ".0."))
    return tuple(int(p) for p in parts)


def _dicts(tree: ast.Module) -> dict[str, ast.Dict]:
    """Module-level `NAME = {...}` and `NAME: T = {...}` dict literals by name (the last assignment wins)."""
    out: dict[str, ast.Dict] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and isinstance(value, ast.Dict):
                out[target.id] = value
    return out


def _keys(name: str, dicts: dict[str, ast.Dict], seen: frozenset[str] = frozenset()) -> set[str]:
    """The string keys of dict `name`, through `**other` unpacking of the file's other dicts."""
    keys: set[str] = set()
    for key, value in zip(dicts[name].keys, dicts[name].values, strict=True):
        if key is None:  # **other
            if isinstance(value, ast.Name) and value.id in dicts and value.id not in seen:
                keys |= _keys(value.id, dicts, seen | {name})
        elif isinstance(key, ast.Constant) and isinstance(key.value, str):
            keys.add(key.value)
    return keys


def registry(files: dict[str, str]) -> tuple[str, set[str]]:
    """('vllm/<file> <dict>', the architectures) of one release's registry, from its candidate files' text (path
    inside the vllm package -> source)."""
    for path in REGISTRY_FILES:
        if path not in files:
            continue
        dicts = _dicts(ast.parse(files[path]))
        for name in REGISTRY_NAMES:
            if name in dicts:
                return f"vllm/{path} {name}", _keys(name, dicts)
    raise SystemExit(f"no registry dict ({', '.join(REGISTRY_NAMES)}) in {', '.join(files) or 'no candidate file'}")


def refusals(files: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """({architecture: last version vLLM says supported it}, {architecture: plugin URL}): the release's
    _PREVIOUSLY_SUPPORTED_MODELS and _OOT_SUPPORTED_MODELS string dicts ({} where its registry has none)."""
    path = REGISTRY_FILES[0]
    dicts = _dicts(ast.parse(files[path])) if path in files else {}

    def strings(name: str) -> dict[str, str]:
        if name not in dicts:
            return {}
        pairs = zip(dicts[name].keys, dicts[name].values, strict=True)
        return {
            k.value: v.value
            for k, v in pairs
            if isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(v, ast.Constant)
            if isinstance(v.value, str)
        }

    return strings(REFUSED_NAME), strings(PLUGIN_NAME)


def suffixes(files: dict[str, str]) -> list[str]:
    """The architecture suffixes of the release's _SUFFIX_TO_DEFAULTS list, in order ([] where it has none)."""
    if SUFFIX_FILE not in files:
        return []
    for node in ast.parse(files[SUFFIX_FILE]).body:
        target = (
            node.target
            if isinstance(node, ast.AnnAssign)
            else node.targets[0]
            if isinstance(node, ast.Assign)
            else None
        )
        if isinstance(target, ast.Name) and target.id == SUFFIX_NAME and isinstance(node.value, ast.List):
            return [
                item.elts[0].value
                for item in node.value.elts
                if isinstance(item, ast.Tuple) and isinstance(item.elts[0], ast.Constant)
            ]
    return []


def normalized(arch: str, names: set[str], suffix_list: list[str]) -> str | None:
    """The registered architecture ModelRegistry._normalize_arch resolves `arch` to: its first suffix in the list
    (try_match_architecture_defaults) swapped for each suffix in turn, the first registered; None if none is."""
    match = next((suffix for suffix in suffix_list if arch.endswith(suffix)), None)
    if match is None:
        return None
    for repl in suffix_list:
        base = arch.replace(match, repl)
        if base != arch and base in names:
            return base
    return None


def read_source(path: Path) -> tuple[str, dict[str, str]]:
    """(release, {registry candidate path: text}) of an sdist, a wheel or a directory holding the vllm package."""
    if path.suffix == ".whl":
        wheel = re.fullmatch(r"vllm-([^-]+)-.+\.whl", path.name)
        if not wheel:
            raise SystemExit(f"{path}: not a vllm wheel")
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            found = {rel: archive.read(f"vllm/{rel}").decode() for rel in READ_FILES if f"vllm/{rel}" in names}
        return wheel.group(1), found
    if path.is_file():
        match = re.fullmatch(r"vllm-(.+)\.tar\.gz", path.name)
        if not match:
            raise SystemExit(f"{path}: not a vllm-X.tar.gz sdist")
        files: dict[str, str] = {}
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                inner = member.name.split("/", 1)[-1]  # vllm-X/vllm/... -> vllm/...
                if inner.startswith("vllm/") and inner.removeprefix("vllm/") in READ_FILES:
                    handle = tar.extractfile(member)
                    if handle is not None:
                        files[inner.removeprefix("vllm/")] = handle.read().decode()
        return match.group(1), files
    package = path / "vllm"
    found = _VERSION.search((package / "_version.py").read_text())
    if not found:
        raise SystemExit(f"{package}/_version.py names no version")
    files = {rel: (package / rel).read_text() for rel in READ_FILES if (package / rel).is_file()}
    return found.group(1), files


def read_pypi(since: str) -> dict[str, dict[str, str]]:
    """{release: {registry candidate path: text}} of every release on PyPI from `since` on, read as
    gen_vllm_registries.py reads its files: the sdist, else the x86_64 wheel's members by HTTP range requests."""
    from gen_vllm_registries import from_pypi  # it imports release_key from here

    def keep(inner: str) -> bool:
        return inner.removeprefix("vllm/") in READ_FILES and inner.startswith("vllm/")

    read = from_pypi(since, keep)
    return {release: {k.removeprefix("vllm/"): v for k, v in files.items()} for release, files in read.items()}


def build(sources: dict[str, dict[str, str]], not_read: dict[str, str]) -> dict[str, Any]:
    """The vllm_architectures.json document from each release's registry candidate files (read_source, read_pypi)."""
    by_release: dict[str, tuple[str, set[str]]] = {}
    said: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
    suffix_lists: dict[str, list[str]] = {}
    for release, files in sources.items():
        by_release[release] = registry(files)
        said[release] = refusals(files)
        suffix_lists[release] = suffixes(files)
    releases = sorted(by_release, key=release_key)
    newest = releases[-1]
    first: dict[str, dict[str, Any]] = {}
    for i, release in enumerate(releases):
        where, names = by_release[release]
        for arch in sorted(names):
            if arch not in first:
                before = releases[i - 1] if i else None
                first[arch] = {
                    "first_in": release,
                    "absent_in": before,
                    "source": f"{where} of {release}" + (f"; not in {before}'s" if before else ""),
                }
    for arch, entry in first.items():
        last = max((r for r in releases if arch in by_release[r][1]), key=release_key)
        gone = releases[releases.index(last) + 1] if last != newest else None
        entry["last_in"], entry["gone_in"] = last, gone
        if gone is None:
            continue
        entry["last_source"] = f"{by_release[last][0]} of {last}; not in {by_release[gone][0]} of {gone}"
        refused, plugins = said[newest]
        base = normalized(arch, by_release[newest][1], suffix_lists[newest])
        if base is not None:  # vLLM finds it under another suffix before it tries Transformers or refuses
            entry["served_as"] = {
                "architecture": base,
                "source": f"vllm/{SUFFIX_FILE} {SUFFIX_NAME} and ModelRegistry._normalize_arch of {newest}",
            }
        elif arch in refused:  # the first release whose list names it, so every release from then on refuses it
            since = min((r for r in releases if arch in said[r][0]), key=release_key)
            entry["refused"] = {
                "since": since,
                "supported_until": refused[arch],
                "source": f"vllm/{REGISTRY_FILES[0]} {REFUSED_NAME} of {newest}",
            }
        elif arch in plugins:
            entry["plugin"] = {"url": plugins[arch], "source": f"vllm/{REGISTRY_FILES[0]} {PLUGIN_NAME} of {newest}"}
    return {
        "schema_version": "1",
        "description": (
            "Generated by scripts/gen_vllm_architectures.py from vLLM's sources: for each architecture vLLM's model "
            "registry has named, the oldest release read that names it (first_in) and the newest release read before "
            "it that does not (absent_in; null: named by the oldest release read, so its first release is not known);"
            " the newest release read that names it (last_in) and the release read after it (gone_in; null: the "
            "newest release read names it); for one gone, `served_as` when the newest release resolves it to a "
            "registered architecture by swapping its suffix (config/model.py _SUFFIX_TO_DEFAULTS), else `refused` "
            "when the newest release's _PREVIOUSLY_SUPPORTED_MODELS names it (vLLM refuses it from `since` on, saying"
            " it was supported until `supported_until`), `plugin` when its _OOT_SUPPORTED_MODELS does. The planner "
            "refuses a plan for a release at or before absent_in, or at or after refused.since, says nothing for one "
            "served_as, warns for one at or after gone_in otherwise (the Transformers backend may still serve it), "
            "and says when it cannot tell. Do not edit by hand."
        ),
        "date": date.today().isoformat(),
        "registry_source": (
            "vllm/model_executor/models/registry.py _VLLM_MODELS (0.6.x on), vllm/model_executor/models/__init__.py "
            "_MODELS (0.3 - 0.6), vllm/model_executor/model_loader.py _MODEL_REGISTRY (0.1 - 0.2), of each release's "
            "PyPI sdist (or its unpacked vllm package); registry.py _PREVIOUSLY_SUPPORTED_MODELS and "
            "_OOT_SUPPORTED_MODELS of the newest release read"
        ),
        "releases_read": releases,
        "releases_not_read": dict(sorted(not_read.items(), key=lambda kv: release_key(kv[0]))),
        "architectures": dict(sorted(first.items())),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "sources",
        nargs="*",
        type=Path,
        help="vllm-X.tar.gz sdists, wheels or dirs holding the vllm package "
        "(default: every release on PyPI from --since)",
    )
    parser.add_argument("--since", default="0.1.4", help="oldest release to read from PyPI")
    parser.add_argument("--not-read", action="append", default=[], help="VERSION=WHY: a release not read")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    not_read = dict(item.split("=", 1) for item in args.not_read)
    sources = dict(map(read_source, args.sources)) if args.sources else read_pypi(args.since)
    doc = build(sources, not_read)
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"{args.out}: {len(doc['architectures'])} architectures over {len(doc['releases_read'])} releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
