"""Tests of ui modules, without a page or with AppTest where the module needs one: test_<module>[_<topic>].py."""
