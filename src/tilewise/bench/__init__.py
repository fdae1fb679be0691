"""Side-by-side benchmarks: ours and the peer in one run, with the model's prediction in each row."""
