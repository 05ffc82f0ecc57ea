"""What onechip created in the cloud, recorded under onechip's home, and what its probes observed.

    <home>/cloud/resources/<name>.json   one CloudResource per resource `up` created (or reused)
    <home>/cloud/zones-observed.json     ZoneOffers from `onechip cloud probe`, newest first

The cloud side carries labels too (`created-by: onechip`), and `down` deletes only what carries them: a
record alone never makes onechip delete something it did not create.
"""

from __future__ import annotations

import json
from pathlib import Path

from onechip.paths import onechip_home, write_text_atomic
from onechip.schemas.cloud import CloudResource, ZoneOffer

LABELS = {"created-by": "onechip"}


def _dir() -> Path:
    return onechip_home() / "cloud"


def save(resource: CloudResource) -> Path:
    path = _dir() / "resources" / f"{resource.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(path, resource.model_dump_json(indent=2))


def load_all() -> list[CloudResource]:
    """Every recorded resource (unreadable files are skipped: a record is a hint, the API is the truth)."""
    out = []
    for path in sorted((_dir() / "resources").glob("*.json")):
        try:
            out.append(CloudResource.model_validate_json(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return out


def forget(name: str) -> None:
    (_dir() / "resources" / f"{name}.json").unlink(missing_ok=True)


def observed() -> list[ZoneOffer]:
    """Probe observations, newest first ([] when none)."""
    try:
        data = json.loads((_dir() / "zones-observed.json").read_text(encoding="utf-8"))
        return [ZoneOffer.model_validate(item) for item in data]
    except (OSError, ValueError, TypeError):
        return []


def observe(offer: ZoneOffer) -> None:
    """Add a probe's observation (replacing an older one of the same chip, zone and provisioning model)."""
    keep = [o for o in observed() if (o.chip, o.zone, o.provisioning) != (offer.chip, offer.zone, offer.provisioning)]
    path = _dir() / "zones-observed.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps([o.model_dump() for o in [offer, *keep]], indent=2))
