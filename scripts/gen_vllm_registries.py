"""Write src/onechip/catalog/vllm_registries.json: the first and the last vLLM release whose sources register each
tool-call parser (`--tool-call-parser NAME`), each reasoning parser (`--reasoning-parser NAME`) and each
quantization method (`--quantization NAME`, a checkpoint's quantization_config.quant_method), read from every
release on PyPI from 0.5.0 on.

A release refuses a parser it does not register: `vllm serve` checks the name before it starts
(vllm/entrypoints/openai/cli_args.py validate_parsed_serve_args, 0.6.3 on: 'invalid tool call parser: X
(chose from { ... })'; 0.6.0 - 0.6.2: argparse `choices=["mistral", "hermes"]`), and the same for reasoning
parsers. So a plan for an older release must not write a parser that came later.

Where the names are registered, by layout:
- `@ToolParserManager.register_module("name")` / `(["a", "b"])` in vllm/entrypoints/openai/tool_parsers/*.py
  (0.6.3 on), and the lazy `_TOOL_PARSERS_TO_REGISTER = {"name": (module, class), ...}` of vllm/tool_parsers/
  __init__.py in later releases; before 0.6.3, the `--tool-call-parser` choices of entrypoints/openai/cli_args.py;
- `@ReasoningParserManager.register_module(...)` in vllm/reasoning/*.py (0.7.1 on), and the lazy
  `_REASONING_PARSERS_TO_REGISTER` of vllm/reasoning/__init__.py later.
A release where none is found has no such flag (tool calling came in 0.6.0, reasoning parsers in 0.7.1).
- quantization methods: vllm/model_executor/layers/quantization/__init__.py, the keys of the
  `QUANTIZATION_METHODS = {"awq": AWQConfig, ...}` dict (0.5 - 0.6.x), the `QUANTIZATION_METHODS = [...]` list
  (later, imports made lazy) or the strings of `QuantizationMethods = Literal[...]` (0.8.5 on, from which
  QUANTIZATION_METHODS is built). vLLM refuses any other
  name at start (ModelConfig._verify_quantization: 'Unknown quantization method: X. Must be one of [...]').
- deprecated quantization methods: the `DEPRECATED_QUANTIZATION_METHODS = [...]` list of the same file (0.14.0 on).
  vLLM refuses a method it lists unless --allow-deprecated-quantization is given (ModelConfig._verify_quantization:
  'The quantization method X is deprecated and will be removed in future versions of vLLM. To bypass, set
  `--allow-deprecated-quantization`.'; with the flag it only warns), on the method the checkpoint resolves to.

Each release is read from its sdist on PyPI, or, where PyPI has none (0.15.0, 0.15.1), from the x86_64 wheel's
registry files only (HTTP range requests: the zip's directory and those members, not the 500 MB). Local sdists,
wheels or unpacked `vllm-X/` trees can be given instead.
tests/unit/vllm/test_registry_releases.py checks the table against the vLLM installed beside onechip.

Run: python scripts/gen_vllm_registries.py [--since 0.5.0] [SOURCE ...]   (no SOURCE: every release on PyPI)
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
import tarfile
import zipfile
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_vllm_architectures import release_key  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "onechip" / "catalog" / "vllm_registries.json"
SIMPLE = "https://pypi.org/simple/vllm/"

MANAGERS = {"tool_call_parsers": "ToolParserManager", "reasoning_parsers": "ReasoningParserManager"}
TABLES = (*MANAGERS, "quantization_methods", "deprecated_quantization_methods")
QUANT_FILE = "vllm/model_executor/layers/quantization/__init__.py"
LAZY = {"tool_call_parsers": "_TOOL_PARSERS_TO_REGISTER", "reasoning_parsers": "_REASONING_PARSERS_TO_REGISTER"}


def wanted(inner: str) -> bool:
    """A file of the vllm package that can name a parser or quantization method (path from the package's parent)."""
    named = "tool_parser" in inner or "reasoning" in inner or inner.endswith("openai/cli_args.py")
    return inner.startswith("vllm/") and inner.endswith(".py") and (named or inner == QUANT_FILE)


def _strings(node: ast.AST | None) -> set[str]:
    """The string constants of a literal: 'a' or ['a', 'b'] (a docstring's example is no node: not read)."""
    items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
    return {item.value for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str)}


def names(files: dict[str, str]) -> dict[str, dict[str, str]]:
    """{kind: {name: the file that registers it}} of one release's files (kinds: TABLES)."""
    found: dict[str, dict[str, str]] = {kind: {} for kind in TABLES}
    choices: dict[str, str] = {}
    for path, text in sorted(files.items()):
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                kind = next((k for k, m in MANAGERS.items() if isinstance(owner, ast.Name) and owner.id == m), None)
                if kind and node.func.attr == "register_module":
                    name = (
                        node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
                    )
                    found[kind].update(dict.fromkeys(_strings(name), f"{path} {MANAGERS[kind]}.register_module"))
                elif node.func.attr == "add_argument" and _strings(node.args[0] if node.args else None) == {
                    "--tool-call-parser"
                }:
                    listed = _strings(next((k.value for k in node.keywords if k.arg == "choices"), None))
                    choices.update(dict.fromkeys(listed, f"{path} --tool-call-parser choices"))
            targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
            assigned = {t.id for t in targets if isinstance(t, ast.Name)}
            if path == QUANT_FILE and isinstance(node, (ast.Assign, ast.AnnAssign)):
                value = node.value
                if "QUANTIZATION_METHODS" in assigned and isinstance(value, (ast.Dict, ast.List)):
                    keys = set().union(*map(_strings, value.keys if isinstance(value, ast.Dict) else value.elts))
                    found["quantization_methods"].update(dict.fromkeys(keys, f"{path} QUANTIZATION_METHODS"))
                elif "DEPRECATED_QUANTIZATION_METHODS" in assigned and isinstance(value, ast.List):
                    deprecated = set().union(*map(_strings, value.elts))
                    found["deprecated_quantization_methods"].update(
                        dict.fromkeys(deprecated, f"{path} DEPRECATED_QUANTIZATION_METHODS")
                    )
                elif "QuantizationMethods" in assigned and isinstance(value, ast.Subscript):
                    literal = _strings(value.slice)
                    found["quantization_methods"].update(dict.fromkeys(literal, f"{path} QuantizationMethods"))
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
                for kind, lazy in LAZY.items():
                    if any(isinstance(t, ast.Name) and t.id == lazy for t in targets):
                        keys = set().union(*map(_strings, node.value.keys))
                        found[kind].update(dict.fromkeys(keys, f"{path} {lazy}"))
    if not found["tool_call_parsers"]:  # 0.6.0 - 0.6.2: argparse choices, no registry
        found["tool_call_parsers"] = choices
    return found


def from_tar(data: bytes, keep: Callable[[str], bool] = wanted) -> dict[str, str]:
    """{path from the package's parent: text} of the files `keep` takes in an sdist."""
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        out = {}
        for member in tar.getmembers():
            inner = member.name.split("/", 1)[-1]  # vllm-X/vllm/... -> vllm/...
            if keep(inner) and (handle := tar.extractfile(member)) is not None:
                out[inner] = handle.read().decode(errors="replace")
        return out


def from_zip(archive: zipfile.ZipFile, keep: Callable[[str], bool] = wanted) -> dict[str, str]:
    return {n: archive.read(n).decode(errors="replace") for n in archive.namelist() if keep(n)}


class _RangeFile(io.RawIOBase):
    """A remote file read by HTTP range requests, so zipfile reads a wheel's directory and a few members."""

    def __init__(self, client: httpx.Client, url: str) -> None:
        self.client, self.url, self.pos = client, url, 0
        self.size = int(client.head(url).headers["content-length"])

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = (0, self.pos, self.size)[whence] + offset
        return self.pos

    def readinto(self, buffer: Any) -> int:
        if self.pos >= self.size:
            return 0
        end = min(self.size, self.pos + len(buffer)) - 1
        data = self.client.get(self.url, headers={"Range": f"bytes={self.pos}-{end}"}).content
        buffer[: len(data)] = data
        self.pos += len(data)
        return len(data)


def from_pypi(since: str, keep: Callable[[str], bool] = wanted) -> dict[str, dict[str, str]]:
    """{release: files} of every release on PyPI from `since` on: its sdist, else its x86_64 wheel by range (the
    files `keep` takes; gen_vllm_architectures.py reads its registry files through it)."""
    with httpx.Client(timeout=300, follow_redirects=True) as client:
        index = client.get(SIMPLE, headers={"Accept": "application/vnd.pypi.simple.v1+json"}).json()
        chosen: dict[str, dict[str, Any]] = {}  # release -> its sdist, else one x86_64 wheel
        for entry in index["files"]:
            match = re.fullmatch(r"vllm-([0-9][^-]*?)(\.tar\.gz|-.*x86_64\.whl)", entry["filename"])
            # a yanked release is read too: pip still installs it when pinned (PEP 592), as 0.2.1 ('A bug in tensor
            # parallelism support') is
            if match and release_key(match.group(1)) >= release_key(since):
                if match.group(2) == ".tar.gz" or match.group(1) not in chosen:
                    chosen[match.group(1)] = entry
        by_release: dict[str, dict[str, str]] = {}
        for release, entry in chosen.items():
            if entry["filename"].endswith(".tar.gz"):
                by_release[release] = from_tar(client.get(entry["url"]).content, keep)
            else:
                with zipfile.ZipFile(io.BufferedReader(_RangeFile(client, entry["url"]), 1 << 20)) as wheel:
                    by_release[release] = from_zip(wheel, keep)
            print(f"read {entry['filename']}", file=sys.stderr)
        return by_release


def from_path(path: Path) -> tuple[str, dict[str, str]]:
    """(release, files) of a local vllm-X.tar.gz, vllm-X-*.whl or unpacked vllm-X/ tree."""
    match = re.match(r"vllm-([0-9][^-/]*?)(\.tar\.gz|-|$)", path.name)
    if not match:
        raise SystemExit(f"{path}: not named vllm-X.tar.gz, vllm-X-*.whl or vllm-X/")
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as wheel:
            return match.group(1), from_zip(wheel)
    if path.is_file():
        return match.group(1), from_tar(path.read_bytes())
    package = next(path.glob("**/vllm/__init__.py"), None) or next(path.glob("**/vllm"), path)
    top = package.parent if package.name == "__init__.py" else package
    files = {f"vllm/{p.relative_to(top).as_posix()}": p.read_text(errors="replace") for p in top.rglob("*.py")}
    return match.group(1), {k: v for k, v in files.items() if wanted(k)}


def build(by_release: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The vllm_registries.json document."""
    releases = sorted(by_release, key=release_key)
    read = {release: names(by_release[release]) for release in releases}
    doc: dict[str, Any] = {
        "schema_version": "1",
        "description": (
            "Generated by scripts/gen_vllm_registries.py from vLLM's sources: for each tool-call parser, reasoning "
            "parser and quantization method a release registers, the oldest release read that registers it "
            "(first_in), the newest release read before it that does not (absent_in; null: the oldest release read "
            "already does), the newest that does (last_in) and the release read after it (gone_in; null: the newest "
            "release read registers it). vLLM refuses to start with a name its release does not register, so a plan "
            "for a release outside [first_in, gone_in) leaves a family's parser out and says so, and refuses a "
            "quantization method. deprecated_quantization_methods: the same for the names a release lists in "
            "DEPRECATED_QUANTIZATION_METHODS, which vLLM refuses without --allow-deprecated-quantization. Do not "
            "edit by hand."
        ),
        "date": date.today().isoformat(),
        "source": (
            "each release's PyPI sdist (0.15.0 and 0.15.1: the x86_64 wheel's files): "
            "ToolParserManager / ReasoningParserManager.register_module names, the lazy _TOOL_PARSERS_TO_REGISTER / "
            "_REASONING_PARSERS_TO_REGISTER dicts, before 0.6.3 the --tool-call-parser choices of "
            "vllm/entrypoints/openai/cli_args.py; vllm/model_executor/layers/quantization/__init__.py "
            "QUANTIZATION_METHODS (a dict, later a list) or QuantizationMethods (a Literal, 0.8.5 on), and "
            "DEPRECATED_QUANTIZATION_METHODS (0.14.0 on)"
        ),
        "releases_read": releases,
    }
    for kind in TABLES:
        table: dict[str, dict[str, str | None]] = {}
        for i, release in enumerate(releases):
            for name, where in sorted(read[release][kind].items()):
                if name not in table:
                    before = releases[i - 1] if i else None
                    said = f"{where} of {release}" + (f"; not in {before}'s" if before else "")
                    table[name] = {"first_in": release, "absent_in": before, "source": said}
        for name, entry in table.items():
            holding = [r for r in releases if name in read[r][kind]]
            last = holding[-1]
            span = releases[releases.index(holding[0]) : releases.index(last) + 1]
            if holding != span:  # a gap is more likely a layout not read than a name dropped and re-added
                gaps = sorted(set(span) - set(holding), key=release_key)
                raise SystemExit(f"{kind} {name!r}: registered in {holding[0]} - {last} but not in {', '.join(gaps)}")
            entry["last_in"] = last
            entry["gone_in"] = releases[releases.index(last) + 1] if last != releases[-1] else None
        doc[kind] = dict(sorted(table.items()))
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", type=Path, help="local sdists, wheels or vllm-X/ trees (default: PyPI)")
    parser.add_argument("--since", default="0.5.0", help="oldest release to read from PyPI")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    by_release = dict(map(from_path, args.sources)) if args.sources else from_pypi(args.since)
    doc = build(by_release)
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    counts = ", ".join(f"{len(doc[kind])} {kind}" for kind in TABLES)
    print(f"{args.out}: {counts} over {len(doc['releases_read'])} releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
