"""Tests of attention_core, a module (or a topic of one) a file: test_<module>[_<topic>].py."""
