"""`atomstudio-worker --queue` start-up refusals (the queue itself runs against a real Redis and
real services in packages/server/test/workflow-faults.test.ts)."""

import pytest

from atomstudio_worker.queue_worker import available_calculators, queue_main


@pytest.mark.parametrize(
    "argv, env, message",
    [
        (["--queue"], {}, "set ATOMSTUDIO_REDIS_URL"),
        (["--queue", "--redis-url", "redis://127.0.0.1:9", "--calculators", "nope"], {}, "not available here: nope"),
    ],
)
def test_refuses_to_start(argv, env, message, monkeypatch, capsys):
    monkeypatch.delenv("ATOMSTUDIO_REDIS_URL", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert queue_main(argv) == 2
    assert message in capsys.readouterr().err


def test_advertises_only_calculators_it_can_run():
    calcs = available_calculators()
    assert "emt" in calcs
    assert "uff" not in calcs  # computed by the studio, never by a worker
