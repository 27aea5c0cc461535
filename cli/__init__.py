"""The command-line programs (``cortexgraph``, ``cortexgraph-consolidate``,
``cortexgraph-maintenance``)."""

from cortexgraph.cli.help_format import hide_flag_types

hide_flag_types()  # before any help is drawn: flags show no "<bool>" (cli/help_format.py)
