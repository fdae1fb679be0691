"""`tilewise advise`: the time model's top-k configurations for a kernel and a problem."""
