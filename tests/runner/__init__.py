"""Tests of runner (training jobs, the queue, the job registry): test_<module>.py."""
