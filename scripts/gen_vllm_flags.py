"""Write src/onechip/catalog/vllm_flags.json: for every `vllm serve` flag onechip can write (the rows of
onechip.vllm.flag_table.FLAGS, the flags of catalog/serve_families.json launch rules and families), the first and the
last vLLM release whose serve parser accepts it, read from the sources of every release given.

A release's serve parser is read from its sources without running them (vLLM needs torch to import):
- every `add_argument(...)` call of vllm/engine/arg_utils.py (EngineArgs.add_cli_args) and of the front end's files
  (vllm/entrypoints/**/cli_args.py, entrypoints/openai/api_server.py, entrypoints/cli/serve.py): its '--flag'
  string constants;
- the front-end argument dataclasses (a class named *Args in those files) that a release registers field by field
  (`add_argument(*extra_flags, f"--{key.replace('_', '-')}", **value)`, BaseFrontendArgs.add_cli_args of 0.34.0):
  each annotated field as --field-name;
- the negative of a switch argparse.BooleanOptionalAction declares (--no-X beside --X): where the call names the
  action, or where its kwargs are get_kwargs()'s for a config field annotated bool (without str: `bool | str | None`
  takes a value instead) in a release whose get_kwargs gives bool fields that action, or a front-end field so typed;
- a flag argparse reads as an abbreviation (allow_abbrev, which vLLM's FlexibleArgumentParser keeps): the unique
  accepted flag it is a prefix of ('--kv-cache-memory' for --kv-cache-memory-bytes; vLLM's own log hint writes it so).
A release whose sources name none of those files (or an unreadable sdist) is not read and is listed with why.

For each flag: `first_in`, the oldest release read that accepts it, `absent_in`, the newest release read before it
that does not (null: the oldest release read already does), `last_in` and `gone_in` (null: the newest release read
accepts it), `missing_in` (releases read between first_in and last_in that do not), and `spelled`, the flag the
releases accept it as where that is an abbreviation. And `switches`: every flag of the newest release's serve parser
that takes no value (switches()), so a pasted command line is read as argparse reads it (onechip.vllm.bootlog).

Sources: vLLM sdists (vllm-X.tar.gz, fetched from PyPI as scripts/gen_vllm_architectures.py says) or directories
holding an unpacked release (vllm-X/vllm/...). tests/unit/planner/test_vllm_flags.py checks the table against the
0.32.0 and 0.34.0 trees when they are on the machine.

Run: PYTHONPATH=src python scripts/gen_vllm_flags.py SOURCE ...
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tarfile
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_vllm_architectures import release_key  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "onechip" / "catalog" / "vllm_flags.json"
_PER_FIELD = re.compile(r"""f["']--\{\w+\.replace\(["']_["'], ["']-["']\)\}["']""")


def wanted(inner: str) -> bool:
    """A file (path inside the vllm package) that declares serve arguments or the config fields they come from."""
    front = inner.startswith("entrypoints/") and (
        inner.endswith("cli_args.py") or inner in ("entrypoints/openai/api_server.py", "entrypoints/cli/serve.py")
    )
    config = inner == "config.py" or (inner.startswith("config/") and inner.endswith(".py"))
    return inner == "engine/arg_utils.py" or front or config


def _bool_only(annotation: ast.expr | None) -> bool:
    """A field argparse gets as a switch: annotated bool (or bool | None), not also str."""
    words = set(re.findall(r"\w+", ast.unparse(annotation))) if annotation is not None else set()
    return "bool" in words and "str" not in words


def _fields(tree: ast.Module, only_args: bool = False) -> dict[str, ast.expr]:
    """Annotated class fields by name (the first class naming one wins); `only_args`: classes named *Args."""
    out: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and (not only_args or node.name.endswith("Args")):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    out.setdefault(item.target.id, item.annotation)
    return out


def _parsed(files: dict[str, str]) -> tuple[dict[str, ast.Module], dict[str, ast.expr], bool]:
    """One release's files (path -> text) parsed: their trees, the config fields' annotations by name, and whether
    get_kwargs makes a bool field's flag an argparse.BooleanOptionalAction."""
    trees = {path: ast.parse(text) for path, text in files.items()}
    config_fields: dict[str, ast.expr] = {}
    for path, tree in trees.items():
        if path.startswith("config") or path == "engine/arg_utils.py":
            for name, annotation in _fields(tree).items():
                config_fields.setdefault(name, annotation)
    engine = files.get("engine/arg_utils.py", "")
    kwargs_switch = 'kwargs[name]["action"] = argparse.BooleanOptionalAction' in engine.replace("'", '"')
    return trees, config_fields, kwargs_switch


def accepted(files: dict[str, str]) -> dict[str, str]:
    """{flag: where it is declared} for one release's serve parser (abbreviations aside), from its files (path ->
    text)."""
    trees, config_fields, kwargs_switch = _parsed(files)
    flags: dict[str, str] = {}
    for path, tree in sorted(trees.items()):
        if path.startswith("config"):
            continue
        if _PER_FIELD.search(files[path]):
            for name, annotation in _fields(tree, only_args=True).items():
                flag = "--" + name.replace("_", "-")
                flags.setdefault(flag, f"vllm/{path} {name} (a front-end *Args field, registered as {flag})")
                if _bool_only(annotation) and kwargs_switch:
                    flags.setdefault("--no-" + flag[2:], f"vllm/{path} {name}: bool, argparse.BooleanOptionalAction")
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument"):
                continue
            names = [a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")]
            switch = None
            for keyword in node.keywords:
                if keyword.arg == "action" and "BooleanOptionalAction" in ast.unparse(keyword.value):
                    switch = "argparse.BooleanOptionalAction"
                elif keyword.arg is None and kwargs_switch:
                    for sub in ast.walk(keyword.value):
                        field = (
                            str(sub.slice.value)
                            if isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant)
                            else None
                        )
                        if field is not None and _bool_only(config_fields.get(field)):
                            switch = f"get_kwargs: {field} is a bool field, argparse.BooleanOptionalAction"
            for name in names:
                flags.setdefault(name, f"vllm/{path} add_argument({name!r})")
                if switch:
                    flags.setdefault("--no-" + name[2:], f"vllm/{path} add_argument({name!r}), {switch}")
    return flags


# add_argument actions that take no value (argparse: store_true, store_false, store_const, count, help, version)
_NO_VALUE_ACTIONS = {"store_true", "store_false", "store_const", "count", "help", "version"}


def switches(files: dict[str, str]) -> list[str]:
    """The flags of one release's serve parser that take no value, from its files (path -> text), read as accepted()
    reads them: an add_argument call whose action is one of _NO_VALUE_ACTIONS or argparse.BooleanOptionalAction (with
    its --no-X), or whose kwargs are get_kwargs()'s for a config field annotated bool, and a front-end *Args field
    annotated bool; every other flag takes one (argparse's add_argument without an action stores one value)."""
    trees, config_fields, kwargs_switch = _parsed(files)
    out: set[str] = set()
    for path, tree in trees.items():
        if path.startswith("config"):
            continue
        if _PER_FIELD.search(files[path]) and kwargs_switch:
            for name, annotation in _fields(tree, only_args=True).items():
                if _bool_only(annotation):
                    flag = "--" + name.replace("_", "-")
                    out |= {flag, "--no-" + flag[2:]}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument"):
                continue
            names = [a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("-")]
            bare = negated = False
            for keyword in node.keywords:
                if keyword.arg == "action":
                    action = keyword.value.value if isinstance(keyword.value, ast.Constant) else ""
                    negated = "BooleanOptionalAction" in ast.unparse(keyword.value)
                    bare = negated or action in _NO_VALUE_ACTIONS
                elif keyword.arg is None and kwargs_switch:
                    for sub in ast.walk(keyword.value):
                        if isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant):
                            if _bool_only(config_fields.get(str(sub.slice.value))):
                                bare = negated = True
            if bare:
                out |= set(names) | ({"--no-" + n[2:] for n in names if n.startswith("--")} if negated else set())
    return sorted(out)


def accepts(flags: dict[str, str], flag: str) -> str | None:
    """The flag `flag` is read as: itself, the one accepted flag it abbreviates, or None (refused)."""
    if flag in flags:
        return flag
    longer = [f for f in flags if f.startswith(flag)]
    return longer[0] if len(longer) == 1 else None


def read_source(path: Path) -> tuple[str, dict[str, str]]:
    """(release, {path inside the vllm package: text}) of an sdist or an unpacked release directory."""
    files: dict[str, str] = {}
    if path.is_file():
        match = re.fullmatch(r"vllm-(.+)\.tar\.gz", path.name)
        if not match:
            raise SystemExit(f"{path}: not a vllm-X.tar.gz sdist")
        with tarfile.open(path) as tar:
            for member in tar:
                inner = member.name.split("/", 1)[-1]
                if inner.startswith("vllm/") and wanted(inner.removeprefix("vllm/")) and member.isfile():
                    handle = tar.extractfile(member)
                    if handle is not None:
                        files[inner.removeprefix("vllm/")] = handle.read().decode()
        return match.group(1), files
    match = re.fullmatch(r"vllm-(.+)", path.name)
    if not match or not (path / "vllm").is_dir():
        raise SystemExit(f"{path}: not an unpacked vllm-X release")
    for file in (path / "vllm").rglob("*.py"):
        inner = file.relative_to(path / "vllm").as_posix()
        if wanted(inner):
            files[inner] = file.read_text()
    return match.group(1), files


def emitted() -> list[str]:
    """Every flag onechip can write, from its own table and catalog (not --set's, which are the user's)."""
    from onechip import catalog
    from onechip.vllm.flag_table import FLAGS

    families = catalog.serve_families()
    names = {row.name for row in FLAGS if not row.is_env}
    names |= {rule.flag for rule in families.launch_rules if rule.flag}
    names |= {extra.flag for family in families.families for extra in family.flags}
    return sorted(names)


def build(by_release: dict[str, dict[str, str]], flags: list[str]) -> dict[str, dict[str, Any]]:
    """The table's `flags` entries from each release's accepted flags."""
    releases = sorted(by_release, key=release_key)
    out: dict[str, dict[str, Any]] = {}
    for flag in flags:
        spelled = {r: accepts(by_release[r], flag) for r in releases}
        having = [r for r in releases if spelled[r]]
        if not having:
            out[flag] = {
                "first_in": None, "absent_in": releases[-1], "last_in": None, "gone_in": None,
                "source": "no release read declares it",
            }  # fmt: skip
            continue
        first, last = releases.index(having[0]), releases.index(having[-1])
        as_read = spelled[having[0]] or flag
        source = f"{having[0]}: {by_release[having[0]][as_read]}"
        if as_read != flag:
            source += f"; {flag} is argparse's unique-prefix abbreviation of {as_read} (allow_abbrev)"
        entry: dict[str, Any] = {
            "first_in": having[0],
            "absent_in": releases[first - 1] if first else None,
            "last_in": having[-1],
            "gone_in": releases[last + 1] if last + 1 < len(releases) else None,
            "source": source,
        }
        missing = [r for r in releases[first:last] if not spelled[r]]
        if missing:
            entry["missing_in"] = missing
        as_written = sorted({s for s in spelled.values() if s and s != flag})
        if as_written:
            entry["spelled"] = as_written
        out[flag] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="+", type=Path)
    parser.add_argument("--not-read", action="append", default=[], help="VERSION=WHY of a release with no source")
    args = parser.parse_args(argv)
    by_release: dict[str, dict[str, str]] = {}
    bare: dict[str, list[str]] = {}
    not_read = dict(item.split("=", 1) for item in args.not_read)
    for path in args.sources:
        release, files = read_source(path)
        if "engine/arg_utils.py" not in files:
            not_read[release] = "no vllm/engine/arg_utils.py in its sources"
            continue
        by_release[release] = accepted(files)
        bare[release] = switches(files)
        print(release, len(by_release[release]), file=sys.stderr)
    releases = sorted(by_release, key=release_key)
    table = {
        "schema_version": "1",
        "description": "Generated by scripts/gen_vllm_flags.py from vLLM's sources: for each serve flag onechip can "
        "write, the oldest release read whose serve parser accepts it (first_in), the newest release read before "
        "it that does not (absent_in; null: the oldest release read already does), the newest that does "
        "(last_in), the release read after it (gone_in; null: the newest release read accepts it), releases "
        "between that do not (missing_in) and the flag it is accepted as where that is an abbreviation (spelled). "
        "vLLM refuses an unrecognized argument, so a command for a release outside [first_in, gone_in) is said to "
        "fail, or leaves a family's optional flag out. Do not edit by hand.",
        "date": date.today().isoformat(),
        "source": "each release's PyPI sdist: the '--flag' constants of add_argument calls in "
        "vllm/engine/arg_utils.py and the front end's cli_args.py / openai/api_server.py / cli/serve.py, the "
        "front-end *Args dataclass fields registered as --field-name, argparse.BooleanOptionalAction negatives "
        "(--no-X), and argparse's unique-prefix abbreviations",
        "releases_read": releases,
        "releases_not_read": dict(sorted(not_read.items(), key=lambda kv: release_key(kv[0]))),
        "flags": build(by_release, emitted()),
        "switches_release": releases[-1],
        "switches": bare[releases[-1]],
    }
    OUT.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {OUT}: {len(table['flags'])} flags over {len(releases)} releases", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
