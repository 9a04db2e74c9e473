"""How long the probes' facts are waited for: long enough for a cluster whose nodes all start
their workers slowly at once, short for one node that lags behind answering peers."""

from __future__ import annotations

import pytest

from rldoctor.cluster.fleet import (PROBE_TIMEOUT_LONG_S, PROBE_TIMEOUT_S, STRAGGLER_MIN_S,
                                    probe_wait_s, wait_end)
from rldoctor.cluster.session import Budget


def test_with_fewer_than_half_answered_the_wait_runs_to_its_deadline():
    # 20 nodes on two cores: no probe has answered after 8 s, all of them answer by 12 s
    assert wait_end(0.0, 20.0, answered=0, asked=20, last_answer=None) == 20.0
    assert wait_end(0.0, 20.0, answered=1, asked=20, last_answer=0.9) == 20.0


def test_once_half_answered_the_rest_get_a_multiple_of_their_time():
    assert wait_end(0.0, 20.0, answered=2, asked=3, last_answer=1.2) == STRAGGLER_MIN_S
    assert wait_end(0.0, 20.0, answered=10, asked=20, last_answer=3.0) == pytest.approx(7.5)
    assert wait_end(0.0, 20.0, answered=10, asked=20, last_answer=12.0) == 20.0  # the deadline holds
    assert wait_end(5.0, 30.0, answered=1, asked=2, last_answer=6.0) == 5.0 + STRAGGLER_MIN_S


def test_the_long_wait_needs_room_left_for_the_sections_after_the_probes():
    assert probe_wait_s(Budget(30)) == pytest.approx(PROBE_TIMEOUT_LONG_S, abs=0.05)
    assert probe_wait_s(Budget(22)) == pytest.approx(14, abs=0.05)
    assert probe_wait_s(Budget(10)) == pytest.approx(PROBE_TIMEOUT_S, abs=0.05)  # as before
    assert probe_wait_s(Budget(3)) == pytest.approx(3, abs=0.05)  # never past the run's budget
