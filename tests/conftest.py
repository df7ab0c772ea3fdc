"""Test-wide settings: the package speaks English in tests and in the kernels they start (a Chinese locale on the
developer's machine must not change what the English notebooks and checkers print); the Chinese notebooks choose
their language themselves (`rlvr.set_language("zh_CN")`)."""

import os

os.environ["RLVR_LANG"] = "en"
