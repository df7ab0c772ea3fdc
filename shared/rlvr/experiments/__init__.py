"""Experiment functions shared by the notebooks and `python -m rlvr reproduce` (so a figure cannot differ)."""
