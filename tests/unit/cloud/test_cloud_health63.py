"""A Node.health value this client does not know (the API adds enum values) is read as the field's default,
HEALTH_UNSPECIFIED ('Health status is unknown'), and said in one line: not as a failure."""

from __future__ import annotations

import pytest

from onechip import api
from onechip.errors import CloudError
from onechip.schemas.cloud import CloudNameRequest, CloudUpRequest

P = "proj-1"
OK = "us-west4-a"


def _health_is(fake, monkeypatch, health: str) -> None:
    real = fake._node_view  # noqa: SLF001

    def view(node):
        seen = real(node)
        if seen.get("state") == "READY":
            seen["health"] = health
        return seen

    monkeypatch.setattr(fake, "_node_view", view)


# Node.health's values (TPU API v2, google.cloud.tpu.v2.Node.Health): HEALTH_UNSPECIFIED 'Health status is unknown:
# not initialized or failed to retrieve', HEALTHY, TIMEOUT, UNHEALTHY_TENSORFLOW, UNHEALTHY_MAINTENANCE (v1 also
# DEPRECATED_UNHEALTHY). 'UNHEALTHY_SOMETHING_NEW' is none of them: an enum value newer than this client.
NEW = "HEALTH_NOT_YET_DOCUMENTED"


def test_up_reads_a_node_health_it_does_not_know_as_unknown_and_says_so_in_one_line(fast, monkeypatch):
    # was: any value outside HEALTHY/HEALTH_UNSPECIFIED counted as unhealthy: `up` waited its whole --timeout on a
    # READY node, then failed naming it, for an enum value the API added
    _health_is(fast, monkeypatch, NEW)
    lines: list[str] = []
    result = api.cloud_up(CloudUpRequest(project=P, zones=[OK], provisioning="spot", max_hours=1.0, timeout_s=5.0),
                          lambda event: lines.append(event.message))  # fmt: skip
    assert result.resource.state == "READY" and result.resource.health == NEW
    said = [line for line in lines if NEW in line and "not one" in line]
    assert len(said) == 1, lines  # said once, not every poll
    assert "HEALTH_UNSPECIFIED" in said[0], said
    api.cloud_down(CloudNameRequest(project=P))


def test_status_says_a_node_health_it_does_not_know_in_one_line_not_as_unhealthy(fast, monkeypatch):
    _health_is(fast, monkeypatch, NEW)
    api.cloud_up(CloudUpRequest(project=P, zones=[OK], provisioning="spot", no_limit=True, timeout_s=5.0))
    (st,) = api.cloud_status(CloudNameRequest(project=P))
    assert not any("unhealthy" in w for w in st.warnings), st.warnings
    (line,) = [w for w in st.warnings if NEW in w]
    assert "HEALTH_UNSPECIFIED" in line, line
    api.cloud_down(CloudNameRequest(project=P))


@pytest.mark.parametrize("health", ["TIMEOUT", "UNHEALTHY_TENSORFLOW", "UNHEALTHY_MAINTENANCE", "DEPRECATED_UNHEALTHY"])
def test_each_documented_unhealthy_value_still_warns(fast, monkeypatch, health):
    _health_is(fast, monkeypatch, health)
    with pytest.raises(CloudError) as info:
        api.cloud_up(CloudUpRequest(project=P, zones=[OK], provisioning="spot", no_limit=True, timeout_s=0.3))
    assert f"READY but {health} (Node.health)" in str(info.value)
    api.cloud_down(CloudNameRequest(project=P))
