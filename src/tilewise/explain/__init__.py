"""Reports that walk a concrete problem from warps to tile sizes (text and JSON)."""
