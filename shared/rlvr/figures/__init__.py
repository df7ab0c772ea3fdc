"""Figures and panels of the rlvr package (matplotlib and ipywidgets): one module per notebook topic, drawing what
`rlvr.experiments` computes. Nothing under `rlvr.experiments` imports from here."""
