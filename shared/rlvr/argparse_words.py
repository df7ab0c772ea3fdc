"""argparse's own words that a user of `python -m rlvr` reads, marked for extraction into the package's catalogue.

argparse translates them with gettext at run time; `rlvr.options.argparse_in_language` points it at the package's
catalogue. Each text is argparse's own, character for character (tests/test_i18n.py checks them against the
argparse of the running Python; 'optional arguments' is Python 3.9's and 3.10's heading, 'options' the newer one).
"""

from rlvr.i18n import NN_, N_

WORDS = (
    N_("usage: "),
    N_("positional arguments"),
    N_("options"),
    N_("optional arguments"),
    N_("show this help message and exit"),
    N_("%(prog)s: error: %(message)s\n"),
    N_("argument %(argument_name)s: %(message)s"),
    N_("unrecognized arguments: %s"),
    N_("the following arguments are required: %s"),
    N_("one of the arguments %s is required"),
    N_("not allowed with argument %s"),
    N_("expected one argument"),
    N_("expected at most one argument"),
    N_("expected at least one argument"),
    N_("ambiguous option: %(option)s could match %(matches)s"),
    N_("invalid %(type)s value: %(value)r"),
    N_("invalid choice: %(value)r (choose from %(choices)s)"),
    N_("ignored explicit argument %r"),
)
PLURALS = (NN_("expected %s argument", "expected %s arguments"),)  # argparse's ngettext pairs
