"""End-to-end tests in headless Chromium against a real server (the e2e mark, tests/conftest.py): a page or a flow a file."""
