"""What several test modules share: AppTest and browser drivers, tiny data sets, the seed documents' numbers, small jobs."""
