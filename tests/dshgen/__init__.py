"""Test helpers that turn dsh's v0 session logs into their twins of later format versions."""
