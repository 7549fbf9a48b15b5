"""AppTest tests of the pages, a page a file (test_<page>.py); and the app in shared mode."""
