"""Clocks: the epoch-seconds reader follows whichever clock it is given."""

from __future__ import annotations

import datetime
import time

from kplane._util import clock


def test_epoch_seconds_of_a_fake_clock_moves_with_it() -> None:
    fake = clock.FakeClock(datetime.datetime(2026, 3, 1, tzinfo=datetime.UTC))
    read = clock.epoch_seconds(fake)
    start = datetime.datetime(2026, 3, 1, tzinfo=datetime.UTC).timestamp()
    assert read() == start
    fake.step(2.5)
    assert read() == start + 2.5


def test_epoch_seconds_of_the_real_clock_is_the_system_time() -> None:
    read = clock.epoch_seconds(clock.RealClock())
    before = time.time()
    assert before <= read() <= time.time()
