"""The project as a whole: import layers, the test suite's own rules, packaging, the notebook, doctests, interop."""
