"""The whole-run report's time left: measured on this machine as the report runs, never promised."""

from __future__ import annotations

from attention_core.faithfulness import Progress
from ui.faithfulness_views import ReportTimer, report_estimate


def test_the_time_left_is_each_steps_pace_so_far_extrapolated():
    now = [100.0]
    timer = ReportTimer(clock=lambda: now[0])
    now[0] = 102.0  # the first knock-out pass took 2 s
    assert timer.text(Progress("heads", 1, 25)) == ("1 of 25 knock-out passes over the sentences, about 48 s left for "
                                                    "them, then the sentences")
    now[0] = 150.0
    assert timer.text(Progress("heads", 25, 25)) == "25 of 25 knock-out passes over the sentences"
    now[0] = 180.0  # the first 32 sentences took 30 s: the sentences' step started when the passes ended
    assert timer.text(Progress("sentences", 32, 600)) == "32 of 600 sentences scored by every method, about 9 min left"
    now[0] = 181.0
    assert timer.text(Progress("sentences", 64, 600)) == "64 of 600 sentences scored by every method, about 4 min left"
    assert timer.seconds() == 81.0


def test_before_a_report_the_page_promises_only_what_this_server_measured():
    assert report_estimate(600, {}) == "The time it has left is shown as it runs, measured on this machine."
    said = report_estimate(300, {"sentences": 600.0, "seconds": 40.0})
    assert said == ("The last report on this server took 40 s for 600 sentences: about 20 s for 300, at the load the "
                    "machine had then.")
    assert "minute" not in said
