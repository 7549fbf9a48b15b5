"""The test suite (README.md, "Tests"): a package, so that test files of the same name in two folders do not collide."""
